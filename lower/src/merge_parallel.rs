//! Consecutive parallel loops over adjacent ranges become one parallel loop, whose
//! iterations the threads share together.
//!
//! `partition jt` of a parallel loop lowers to two loops, each a parallel region of its
//! own:
//!
//! ```text
//! parallel for jt in 0..N / 64 { full tile }
//! parallel for jt1 in N / 64..cdiv(N, 64) { last tile }
//! ```
//!
//! At two threads the last tile then runs on one thread while the other waits at the
//! end of its region (matmul at 1000³: 15 full column panels shared by two threads,
//! then the 16th, 40 columns wide, alone). Merged,
//!
//! ```text
//! parallel for jt in 0..cdiv(N, 64) { if jt < N / 64 { full tile } else { last tile [jt1 := jt] } }
//! ```
//!
//! the thread that finishes its share of the full tiles first takes the last one, and
//! the kernel opens one region instead of two. The merge is exact when the two ranges
//! are adjacent and ordered, `lo1 <= hi1 <= hi2`: the first loop's iterations are those
//! of the merged loop below `hi1`, the second's those from `hi1`. Lowering's prover must
//! prove both comparisons (under the enclosing loops' ranges); the second loop must
//! start at the first one's end, as the same index expression. Both must be parallel
//! `gen` loops, neither vectorized nor unrolled, so that nothing but the threads'
//! sharing of iterations changes.
//!
//! Not trusted: the validator proves the merged loop as any other (its iterations
//! race-free, the output covered, the values equal to the definition's).

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};

use crate::ir::{Cond, For, Ix, LoopOrigin, Stmt};
use crate::prove::Prover;

/// Merges the runs of mergeable parallel loops in `body` and in every block inside it.
pub(crate) fn merge_parallel_loops(body: &mut Vec<Stmt>, prover: &mut Prover) {
    for s in body.iter_mut() {
        match s {
            Stmt::For(l) => {
                let range = (
                    crate::substitute::index_of(&l.lo),
                    crate::substitute::index_of(&l.hi),
                );
                match range {
                    (Some(lo), Some(hi)) => {
                        prover.push_range(&l.var, &lo, &hi);
                        merge_parallel_loops(&mut l.body, prover);
                        prover.pop();
                    }
                    // A bound the prover cannot read: the loops inside are merged only
                    // where their own bounds prove it, without this loop's range.
                    _ => merge_parallel_loops(&mut l.body, prover),
                }
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                merge_parallel_loops(then_branch, prover);
                merge_parallel_loops(else_branch, prover);
            }
            Stmt::Alloc { body, .. } => merge_parallel_loops(body, prover),
            Stmt::Decl { .. }
            | Stmt::SetScalar { .. }
            | Stmt::Store { .. }
            | Stmt::Fill { .. }
            | Stmt::Fail { .. } => {}
        }
    }
    let mut k = 0;
    while k + 1 < body.len() {
        if let (Stmt::For(first), Stmt::For(second)) = (&body[k], &body[k + 1])
            && mergeable(first, second, prover)
        {
            let Stmt::For(second) = body.remove(k + 1) else {
                unreachable!("checked above")
            };
            let Stmt::For(first) = &mut body[k] else {
                unreachable!("checked above")
            };
            merge(first, second);
            // The merged loop may merge with the next one (a partition's prologue,
            // steady state and epilogue).
            continue;
        }
        k += 1;
    }
}

/// A parallel `gen` loop whose iterations nothing but the threads' sharing would
/// change: not vectorized, not unrolled, not one that shares its iterations with its
/// inner loop (`collapse(2)`, which already balances the threads' work and which a
/// merged loop's `if` would end).
fn shareable(l: &For) -> bool {
    l.parallel
        && !crate::annotate::collapsible(l)
        && l.origin == LoopOrigin::Gen
        && !l.vector
        && !l.unroll
        && !l.collapse
        && l.hoisted_buffers.is_empty()
}

fn mergeable(first: &For, second: &For, prover: &Prover) -> bool {
    if !shareable(first) || !shareable(second) || first.hi != second.lo {
        return false;
    }
    let (Some(lo1), Some(hi1), Some(hi2)) = (
        crate::substitute::index_of(&first.lo),
        crate::substitute::index_of(&first.hi),
        crate::substitute::index_of(&second.hi),
    ) else {
        return false;
    };
    at_most(&lo1, &hi1, prover) && at_most(&hi1, &hi2, prover)
}

/// Whether `a <= b` is proved, a `max` on the left and a `min` on the right taken
/// apart first (`max(1, H - 1) <= H` is `1 <= H` and `H - 1 <= H`, which the fast
/// path proves where it does not see through `max`).
fn at_most(a: &IndexExpr, b: &IndexExpr, prover: &Prover) -> bool {
    match (a, b) {
        (IndexExpr::Bin(IndexOp::Max, x, y), _) => at_most(x, b, prover) && at_most(y, b, prover),
        (_, IndexExpr::Bin(IndexOp::Min, x, y)) => at_most(a, x, prover) && at_most(a, y, prover),
        _ => prover.proves(&Pred::cmp(CmpOp::Le, a.clone(), b.clone())),
    }
}

/// `first` becomes the loop over both ranges; the second loop's body runs under the
/// `else` of `first.var < first.hi`, its variable renamed to `first`'s.
fn merge(first: &mut For, second: For) {
    let mut tail = second.body;
    crate::substitute::substitute_block(
        &mut tail,
        &second.var,
        &Ix::Var(first.var.clone()),
        &IndexExpr::var(first.var.clone()),
    );
    // After an earlier merge the head is itself `if v < h1 { … } else { … }`: the
    // ranges nest (`v < h1` implies `v < h2`).
    let head = std::mem::take(&mut first.body);
    first.body = vec![Stmt::If {
        cond: Cond::Cmp(CmpOp::Lt, Ix::Var(first.var.clone()), first.hi.clone()),
        then_branch: head,
        else_branch: tail,
    }];
    first.hi = second.hi;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Coord, IxOp, StoreOp, Val};

    fn prover_test(f: impl FnOnce(&mut Prover)) {
        let (checked, diags) = atl_lang::check_source("size H\ninput x : [H]\ndef f = x\n");
        let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
        let solver = crate::fast_solver();
        let mut prover = Prover::new(&checked.program, &solver);
        f(&mut prover);
    }

    fn ix(text: &str) -> Ix {
        match text {
            "H" | "i" | "j" => Ix::Var(text.to_string()),
            "H + 3" => Ix::bin(IxOp::Add, Ix::Var("H".into()), Ix::Const(3)),
            "H / 4" => Ix::bin(IxOp::DivNat, Ix::Var("H".into()), Ix::Const(4)),
            "cdiv(H, 4)" => Ix::bin(IxOp::CeilDiv, Ix::Var("H".into()), Ix::Const(4)),
            c => Ix::Const(c.parse().expect("a constant")),
        }
    }

    /// A parallel `gen` loop over `lo..hi` storing its variable into `out`.
    fn parallel_loop(var: &str, lo: &str, hi: &str) -> Stmt {
        Stmt::For(For {
            var: var.to_string(),
            lo: ix(lo),
            hi: ix(hi),
            body: vec![Stmt::Store {
                buf: "out".to_string(),
                index: Ix::Var(var.to_string()),
                coords: vec![Coord {
                    index: IndexExpr::var(var),
                    extent: IndexExpr::var("H"),
                }],
                op: StoreOp::Assign,
                value: Val::Coord(Ix::Var(var.to_string())),
            }],
            origin: LoopOrigin::Gen,
            parallel: true,
            vector: false,
            unroll: false,
            collapse: false,
            hoisted_buffers: Vec::new(),
        })
    }

    #[test]
    fn adjacent_ordered_parallel_loops_merge_and_the_second_reads_the_first_variable() {
        prover_test(|prover| {
            let mut body = vec![
                parallel_loop("i", "0", "H / 4"),
                parallel_loop("j", "H / 4", "cdiv(H, 4)"),
            ];
            merge_parallel_loops(&mut body, prover);
            let [Stmt::For(l)] = body.as_slice() else {
                panic!("not merged: {body:?}")
            };
            assert_eq!(
                (l.var.as_str(), &l.lo, &l.hi),
                ("i", &ix("0"), &ix("cdiv(H, 4)"))
            );
            let [
                Stmt::If {
                    cond,
                    then_branch,
                    else_branch,
                },
            ] = l.body.as_slice()
            else {
                panic!("no branch: {l:?}")
            };
            assert_eq!(cond, &Cond::Cmp(CmpOp::Lt, ix("i"), ix("H / 4")));
            assert_eq!(then_branch, &parallel_loop_body("i"));
            assert_eq!(else_branch, &parallel_loop_body("i"));
        });
    }

    fn parallel_loop_body(var: &str) -> Vec<Stmt> {
        let Stmt::For(l) = parallel_loop(var, "0", "H") else {
            unreachable!()
        };
        l.body
    }

    #[test]
    fn loops_whose_ranges_may_be_out_of_order_or_apart_stay_apart() {
        prover_test(|prover| {
            // 5..H is empty at H < 5, where H..H+3 would still run from H: the merged
            // range 5..H + 3 would skip H..5.
            for (first, second) in [
                (
                    parallel_loop("i", "5", "H"),
                    parallel_loop("j", "H", "H + 3"),
                ),
                // H + 3 > H: the merged loop would stop before the first one does.
                (
                    parallel_loop("i", "0", "H + 3"),
                    parallel_loop("j", "H + 3", "H"),
                ),
                // Not adjacent.
                (
                    parallel_loop("i", "0", "H / 4"),
                    parallel_loop("j", "H", "H + 3"),
                ),
            ] {
                let mut body = vec![first, second];
                let before = body.clone();
                merge_parallel_loops(&mut body, prover);
                assert_eq!(body, before);
            }
            // A sequential loop keeps its own.
            let mut body = vec![
                parallel_loop("i", "0", "H / 4"),
                parallel_loop("j", "H / 4", "H"),
            ];
            if let Stmt::For(l) = &mut body[1] {
                l.parallel = false;
            }
            let before = body.clone();
            merge_parallel_loops(&mut body, prover);
            assert_eq!(body, before);
        });
    }
}
