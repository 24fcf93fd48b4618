//! Guards on a loop's own variable become its bound (issue 32, "guarded tails that stop
//! at the extent").
//!
//! A split with a guarded tail lowers to a loop that runs to the factor with the
//! guard inside:
//!
//! ```text
//! for ii in 0..K { if ii + K * io < n { … } }
//! ```
//!
//! With `K` huge (`split i by 4611686018427387903`) that loop does not finish at
//! `n = 3`, and with any `K` the last tile's iterations past the extent still run their
//! test. When a `gen` loop's whole body is one `if` without `else` one of whose conjuncts
//! is `v + r < b` (`v` the loop's variable, `r` and `b` free of it), the conjunct is
//! equivalent to `v < b - r`, so the loop becomes
//!
//! ```text
//! for ii in 0..min(K, n - K * io) { … }
//! ```
//!
//! and the other conjuncts stay an `if`. The bounds are evaluated once, before the
//! loop (`b` and `r` read only sizes and enclosing variables: a conjunct that reads
//! an index array stays in the `if`, since its read may rely on the conjuncts before
//! it). The pass runs after the loop annotations: a loop to be unrolled keeps its
//! constant trip count and its guard. Not trusted: the validator proves the rewritten kernel like any
//! other, its new bound's arithmetic included.

use atl_lang::index::CmpOp;

use crate::ir::{Cond, For, Ix, IxOp, LoopOrigin, Stmt};

/// Applies the rewrite to every loop of `body`, innermost first.
pub(crate) fn bound_guarded_loops(body: &mut [Stmt]) {
    for s in body {
        match s {
            Stmt::For(l) => {
                bound_guarded_loops(&mut l.body);
                bound_loop(l);
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                bound_guarded_loops(then_branch);
                bound_guarded_loops(else_branch);
            }
            Stmt::Alloc { body, .. } => bound_guarded_loops(body),
            Stmt::Decl { .. }
            | Stmt::SetScalar { .. }
            | Stmt::Store { .. }
            | Stmt::Fill { .. }
            | Stmt::Fail { .. } => {}
        }
    }
}

fn bound_loop(l: &mut For) {
    // A `gen`'s loop only: a reduction's guarded loops are bounded where lowering
    // accumulates them (its last block), in the forms the validator compares.
    if l.origin != LoopOrigin::Gen {
        return;
    }
    // Unrolling needs the constant trip count (`unroll ii` of a tile, a register
    // tile's rows): the guard stays, unrolled with the loop.
    if l.unroll {
        return;
    }
    let [
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        },
    ] = l.body.as_mut_slice()
    else {
        return;
    };
    if !else_branch.is_empty() {
        return;
    }
    let mut conjuncts = Vec::new();
    flatten_and(cond, &mut conjuncts);
    let Some((k, limit)) = conjuncts
        .iter()
        .enumerate()
        .find_map(|(k, c)| Some((k, limit_of(c, &l.var)?)))
    else {
        return;
    };
    conjuncts.remove(k);
    let then_branch = std::mem::take(then_branch);
    l.hi = Ix::bin(IxOp::Min, l.hi.clone(), limit);
    l.body = if conjuncts.is_empty() {
        then_branch
    } else {
        vec![Stmt::If {
            cond: Cond::all(conjuncts),
            then_branch,
            else_branch: Vec::new(),
        }]
    };
}

fn flatten_and(c: &Cond, out: &mut Vec<Cond>) {
    match c {
        Cond::And(a, b) => {
            flatten_and(a, out);
            flatten_and(b, out);
        }
        other => out.push(other.clone()),
    }
}

/// For a conjunct `v + r < b` (or `v < b`, `r + v < b`, `b > v + r`, and `<=`/`>=`
/// forms), the exclusive limit on `v` it states: `b - r` (plus one for `<=`).
fn limit_of(c: &Cond, v: &str) -> Option<Ix> {
    let Cond::Cmp(op, a, b) = c else {
        return None;
    };
    let (lhs, rhs, inclusive) = match op {
        CmpOp::Lt => (a, b, false),
        CmpOp::Le => (a, b, true),
        CmpOp::Gt => (b, a, false),
        CmpOp::Ge => (b, a, true),
        _ => return None,
    };
    // A load in the limit would be read before the loop, outside the guards of the
    // conjuncts before this one.
    if rhs.mentions(v) || has_load(rhs) || has_load(lhs) {
        return None;
    }
    let rest = offset_of(lhs, v)?;
    let mut limit = match rest {
        None => rhs.clone(),
        Some(r) => Ix::bin(IxOp::Sub, rhs.clone(), r),
    };
    if inclusive {
        limit = Ix::bin(IxOp::Add, limit, Ix::Const(1));
    }
    Some(limit)
}

/// `Some(None)` for `v` itself, `Some(Some(r))` for `v + r` or `r + v` with `r` free
/// of `v`; `None` otherwise.
fn offset_of(e: &Ix, v: &str) -> Option<Option<Ix>> {
    match e {
        Ix::Var(x) if x == v => Some(None),
        Ix::Bin(IxOp::Add, a, b) => match (a.as_ref(), b.as_ref()) {
            (Ix::Var(x), r) | (r, Ix::Var(x)) if x == v && !r.mentions(v) => Some(Some(r.clone())),
            _ => None,
        },
        _ => None,
    }
}

fn has_load(e: &Ix) -> bool {
    match e {
        Ix::Const(_) | Ix::Var(_) => false,
        Ix::Load(..) => true,
        Ix::Neg(a) => has_load(a),
        Ix::Bin(_, a, b) => has_load(a) || has_load(b),
    }
}
