//! `reorder` across the `trunc_r(flatten(…))` that `split` leaves between a loop and
//! the loops it made: `gen ii: [g] * trunc_r(k, flatten(gen jo: gen ji: e))` becomes
//! `… gen jo: gen ii: gen ji: …` (with transposes that keep the storage layout), so
//! that Halide's `split; split; reorder` works here as written, not only `tile … into`.
//!
//! Steps, each an ordinary checked rule application: the guards between the two
//! loops move inside (`guard_and`, `guard_trunc_r`, `rw<- flatten_guard`,
//! `rw<- guard_lift_gen`); `gen_trunc_r` and `gen_flatten` move the outer loop inside
//! both split loops; `get_gen` resolves the reads `gen_flatten` leaves; `transpose_transpose`
//! cancels the pair of transposes; `gen_rename` gives the split loops back the names
//! they had; `gen_swap` puts the outer loop between them.

use atl_lang::diag::Diagnostic;
use atl_lang::ir::{AmountOp, Expr, ExprKind};
use atl_lang::span::Span;

use super::{Applier, name_index, rw};
use crate::context::node_at;

fn kind_at<'e>(expr: &'e Expr, path: &[usize]) -> Option<&'e ExprKind> {
    node_at(expr, path).map(|n| &n.kind)
}

fn is_guard(expr: &Expr, path: &[usize]) -> bool {
    matches!(kind_at(expr, path), Some(ExprKind::Guard { .. }))
}

fn child(path: &[usize]) -> Vec<usize> {
    let mut p = path.to_vec();
    p.push(0);
    p
}

/// Whether the loop at `inner` is the first of a split's pair of loops under the
/// `trunc_r(flatten(…))` directly inside the loop at `outer` (guards allowed between):
/// the shape `exchange_across_split` handles.
pub(super) fn is_across_split(expr: &Expr, outer: &[usize], inner: &[usize]) -> bool {
    if !inner.starts_with(outer) || !matches!(kind_at(expr, outer), Some(ExprKind::Gen { .. })) {
        return false;
    }
    let mut p = child(outer);
    while is_guard(expr, &p) {
        p = child(&p);
    }
    if !matches!(
        kind_at(expr, &p),
        Some(ExprKind::Amount {
            op: AmountOp::TruncR,
            ..
        })
    ) {
        return false;
    }
    p = child(&p);
    while is_guard(expr, &p) {
        p = child(&p);
    }
    if !matches!(kind_at(expr, &p), Some(ExprKind::Flatten(_))) {
        return false;
    }
    p = child(&p);
    while is_guard(expr, &p) {
        p = child(&p);
    }
    p == inner
        && matches!(kind_at(expr, &p), Some(ExprKind::Gen { lo, .. }) if lo.as_const() == Some(0))
        && {
            let mut q = child(&p);
            while is_guard(expr, &q) {
                q = child(&q);
            }
            matches!(kind_at(expr, &q), Some(ExprKind::Gen { lo, .. }) if lo.as_const() == Some(0))
        }
}

/// Moves the `gen` at `outer` inside the first of the two split loops below its
/// `trunc_r(flatten(…))` (see the module comment). The caller checked
/// [`is_across_split`].
pub(super) fn exchange_across_split(
    applier: &mut Applier<'_, '_>,
    outer: &[usize],
    span: Span,
) -> Result<(), Diagnostic> {
    // 1. The guards between the loop and the `trunc_r` go inside it.
    let guard_path = child(outer);
    loop {
        let expr = applier.expr.clone();
        if !is_guard(&expr, &guard_path) {
            break;
        }
        let rule = if is_guard(&expr, &child(&guard_path)) {
            "guard_and"
        } else {
            "guard_trunc_r"
        };
        applier.apply(rw(rule, false, guard_path.clone(), vec![], span))?;
    }
    // 2. Those between the `trunc_r` and the `flatten` go inside the flatten.
    let under_trunc = child(&guard_path);
    loop {
        let expr = applier.expr.clone();
        if !is_guard(&expr, &under_trunc) {
            break;
        }
        if is_guard(&expr, &child(&under_trunc)) {
            applier.apply(rw("guard_and", false, under_trunc.clone(), vec![], span))?;
        } else {
            applier.apply(rw("flatten_guard", true, under_trunc.clone(), vec![], span))?;
        }
    }
    // 3. Those inside the flatten go inside both split loops (so that the reads
    //    `gen_flatten` leaves resolve with `get_gen`).
    let under_flatten = child(&under_trunc);
    for depth in 0..2 {
        let at = [under_flatten.as_slice(), &vec![0; depth]].concat();
        loop {
            let expr = applier.expr.clone();
            if !is_guard(&expr, &at) {
                break;
            }
            if is_guard(&expr, &child(&at)) {
                applier.apply(rw("guard_and", false, at.clone(), vec![], span))?;
            } else {
                applier.apply(rw("guard_lift_gen", true, at.clone(), vec![], span))?;
            }
        }
    }
    let expr = applier.expr.clone();
    let names = |p: &[usize]| match kind_at(&expr, p) {
        Some(ExprKind::Gen { var, .. }) => Some(var.clone()),
        _ => None,
    };
    let (Some(first), Some(second)) = (names(&under_flatten), names(&child(&under_flatten))) else {
        unreachable!("is_across_split checked the two split loops")
    };
    // 4. The loop moves inside the truncation, then inside both split loops.
    applier.apply(rw("gen_trunc_r", false, outer.to_vec(), vec![], span))?;
    let moved = [outer, &[0, 0, 0]].concat();
    applier.apply(rw("gen_flatten", false, moved.clone(), vec![], span))?;
    // transpose(flatten(gen a: gen b: gen i: (gen first: gen second: e)[a][b]))
    let read_outer = [moved.as_slice(), &[0, 0, 0, 0, 0]].concat();
    applier.apply(rw("get_gen", false, child(&read_outer), vec![], span))?;
    applier.apply(rw("get_gen", false, read_outer, vec![], span))?;
    // 5. transpose(trunc_r(k, transpose(transpose(…)))): the inner pair cancels.
    let pair = [outer, &[0, 0]].concat();
    applier.apply(rw("transpose_transpose", false, pair.clone(), vec![], span))?;
    // Now transpose(trunc_r(k, flatten(gen a: gen b: gen i: e))) at `outer`.
    let gen_a = [outer, &[0, 0, 0]].concat();
    let gen_b = child(&gen_a);
    applier.apply(rw(
        "gen_rename",
        false,
        gen_a,
        vec![("j", name_index(&first, span))],
        span,
    ))?;
    applier.apply(rw(
        "gen_rename",
        false,
        gen_b.clone(),
        vec![("j", name_index(&second, span))],
        span,
    ))?;
    // 6. The moved loop goes outside the second split loop: first, moved, second.
    applier.apply(rw("gen_swap", false, gen_b, vec![], span))
}
