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

use crate::ir::{Cond, Coord, For, Ix, IxOp, Load, LoopOrigin, Stmt, Val};
use crate::prove::Prover;

/// Merges the runs of mergeable parallel loops in `body` and in every block inside it.
pub(crate) fn merge_parallel_loops(body: &mut Vec<Stmt>, prover: &mut Prover) {
    for s in body.iter_mut() {
        match s {
            Stmt::For(l) => {
                let range = (index_of(&l.lo), index_of(&l.hi));
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
        index_of(&first.lo),
        index_of(&first.hi),
        index_of(&second.hi),
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
    rename_in_block(&mut tail, &second.var, &first.var);
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

/// An [`Ix`] as the index expression it computes (`None` for none: every operator has
/// a counterpart; C's `/` and `%` are used only where they are floor division).
fn index_of(ix: &Ix) -> Option<IndexExpr> {
    Some(match ix {
        Ix::Const(c) => IndexExpr::Const(*c),
        Ix::Var(v) => IndexExpr::Var(v.clone()),
        Ix::Neg(a) => IndexExpr::Neg(Box::new(index_of(a)?)),
        Ix::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(index_of(a)?)),
        Ix::Bin(op, a, b) => {
            let op = match op {
                IxOp::Add => IndexOp::Add,
                IxOp::Sub => IndexOp::Sub,
                IxOp::Mul => IndexOp::Mul,
                IxOp::DivNat | IxOp::FloorDiv => IndexOp::Div,
                IxOp::ModNat | IxOp::FloorMod => IndexOp::Mod,
                IxOp::CeilDiv => IndexOp::CDiv,
                IxOp::Min => IndexOp::Min,
                IxOp::Max => IndexOp::Max,
            };
            IndexExpr::bin(op, index_of(a)?, index_of(b)?)
        }
    })
}

fn rename_in_block(block: &mut [Stmt], from: &str, to: &str) {
    for s in block {
        rename_in_stmt(s, from, to);
    }
}

fn rename_in_stmt(s: &mut Stmt, from: &str, to: &str) {
    match s {
        Stmt::For(l) => {
            rename_ix(&mut l.lo, from, to);
            rename_ix(&mut l.hi, from, to);
            rename_in_block(&mut l.body, from, to);
        }
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => {
            rename_cond(cond, from, to);
            rename_in_block(then_branch, from, to);
            rename_in_block(else_branch, from, to);
        }
        Stmt::Alloc {
            shape, len, body, ..
        } => {
            for d in shape.iter_mut() {
                *d = d.rename(from, to);
            }
            rename_ix(len, from, to);
            rename_in_block(body, from, to);
        }
        Stmt::Decl { init, .. } => {
            if let Some(v) = init {
                rename_val(v, from, to);
            }
        }
        Stmt::SetScalar { value, .. } => rename_val(value, from, to),
        Stmt::Store {
            index,
            coords,
            value,
            ..
        } => {
            rename_ix(index, from, to);
            rename_coords(coords, from, to);
            rename_val(value, from, to);
        }
        Stmt::Fill { len, .. } => rename_ix(len, from, to),
        Stmt::Fail { .. } => {}
    }
}

fn rename_coords(coords: &mut [Coord], from: &str, to: &str) {
    for c in coords {
        c.index = c.index.rename(from, to);
        c.extent = c.extent.rename(from, to);
    }
}

fn rename_val(v: &mut Val, from: &str, to: &str) {
    match v {
        Val::Lit(_) | Val::Scalar(_) => {}
        Val::Coord(ix) => rename_ix(ix, from, to),
        Val::Load(Load { index, coords, .. }) => {
            rename_ix(index, from, to);
            rename_coords(coords, from, to);
        }
        Val::Neg(a) => rename_val(a, from, to),
        Val::Bin(_, a, b) => {
            rename_val(a, from, to);
            rename_val(b, from, to);
        }
        Val::Call(_, args) => args.iter_mut().for_each(|a| rename_val(a, from, to)),
        Val::Select(c, a) | Val::Blend(c, a) => {
            rename_cond(c, from, to);
            rename_val(a, from, to);
        }
    }
}

fn rename_cond(c: &mut Cond, from: &str, to: &str) {
    match c {
        Cond::Bool(_) => {}
        Cond::Cmp(_, a, b) => {
            rename_ix(a, from, to);
            rename_ix(b, from, to);
        }
        Cond::And(a, b) | Cond::Or(a, b) => {
            rename_cond(a, from, to);
            rename_cond(b, from, to);
        }
        Cond::Not(a) => rename_cond(a, from, to),
    }
}

fn rename_ix(ix: &mut Ix, from: &str, to: &str) {
    match ix {
        Ix::Const(_) => {}
        Ix::Var(v) => {
            if v == from {
                *v = to.to_string();
            }
        }
        Ix::Neg(a) | Ix::Load(_, a) => rename_ix(a, from, to),
        Ix::Bin(_, a, b) => {
            rename_ix(a, from, to);
            rename_ix(b, from, to);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::StoreOp;

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
