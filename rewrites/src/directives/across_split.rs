//! `reorder` across the `trunc_r(flatten(…))` that `split` leaves between a loop and
//! the loops it made, in both directions, so that Halide's `split; split; reorder`
//! works here as written, not only `tile … into`.
//!
//! Into a split: `gen ii: [g] * trunc_r(k, flatten(gen jo: gen ji: e))` becomes
//! `… gen jo: gen ii: gen ji: …` (with transposes that keep the storage layout). Steps,
//! each an ordinary checked rule application: the guards between the two loops move
//! inside (`guard_and`, `guard_trunc_r`, `rw<- flatten_guard`, `rw<- guard_lift_gen`);
//! `gen_trunc_r` and `gen_flatten` move the outer loop inside both split loops;
//! `get_gen` resolves the reads `gen_flatten` leaves; `transpose_transpose` cancels the
//! pair of transposes; `gen_rename` gives the split loops back the names they had;
//! `gen_swap` puts the outer loop between them.
//!
//! Out of a split: `trunc_r(k, flatten(gen yo: gen yi: [g] * gen x: e))` becomes
//! `transpose(gen x: trunc_r(k, flatten(gen yo: gen yi: [g] * e)))`. Steps: the guards
//! between the `trunc_r` and the loop move inside it (`rw<- flatten_guard`, `guard_and`,
//! `rw<- guard_lift_gen`); `flatten_gen_out` takes the loop out of the flatten (reading
//! the flattened tensor at `[a][b][i]`), `get_gen` resolves those reads,
//! `trunc_r_transpose_gen` takes it out of the truncation, and `gen_rename` gives the
//! three loops back the names they had.

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
    guards_into_flatten(applier, &under_trunc, span)?;
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

/// The path below `path` through any guards (their bodies).
fn skip_guards(expr: &Expr, path: &[usize]) -> Vec<usize> {
    let mut p = path.to_vec();
    while is_guard(expr, &p) {
        p = child(&p);
    }
    p
}

fn is_gen_from_zero(expr: &Expr, path: &[usize]) -> bool {
    matches!(kind_at(expr, path), Some(ExprKind::Gen { lo, .. }) if lo.as_const() == Some(0))
}

/// Whether `first` is the first of a split's pair of loops (directly under the
/// `flatten` under a `trunc_r`, guards allowed between) and `inner` the `gen` directly
/// inside the second of them (guards allowed between): the shape
/// `exchange_out_of_split` handles. All three loops start at 0.
pub(super) fn is_out_of_split(expr: &Expr, first: &[usize], inner: &[usize]) -> bool {
    if !is_gen_from_zero(expr, first) || !inner.starts_with(first) {
        return false;
    }
    let second = skip_guards(expr, &child(first));
    if !is_gen_from_zero(expr, &second) || skip_guards(expr, &child(&second)) != inner {
        return false;
    }
    if !is_gen_from_zero(expr, inner) {
        return false;
    }
    // Up from `first`: guards, the `flatten`, guards, the `trunc_r`.
    let mut p = first.to_vec();
    let up = |p: &mut Vec<usize>| p.pop().is_some();
    loop {
        if !up(&mut p) {
            return false;
        }
        if !is_guard(expr, &p) {
            break;
        }
    }
    if !matches!(kind_at(expr, &p), Some(ExprKind::Flatten(_))) {
        return false;
    }
    loop {
        if !up(&mut p) {
            return false;
        }
        if !is_guard(expr, &p) {
            break;
        }
    }
    matches!(
        kind_at(expr, &p),
        Some(ExprKind::Amount {
            op: AmountOp::TruncR,
            ..
        })
    )
}

/// Moves the `gen` at `inner` out of the split whose first loop is at `first` (see
/// the module comment): it ends directly inside a `transpose` where the `trunc_r` was.
/// The caller checked [`is_out_of_split`].
pub(super) fn exchange_out_of_split(
    applier: &mut Applier<'_, '_>,
    first: &[usize],
    span: Span,
) -> Result<(), Diagnostic> {
    // The `trunc_r` above the `flatten` above the first loop (guards between).
    let expr = applier.expr.clone();
    let mut trunc = first.to_vec();
    while !matches!(kind_at(&expr, &trunc), Some(ExprKind::Flatten(_))) {
        trunc.pop();
    }
    trunc.pop();
    while is_guard(&expr, &trunc) {
        trunc.pop();
    }
    let names = |e: &Expr, p: &[usize]| match kind_at(e, p) {
        Some(ExprKind::Gen { var, .. }) => var.clone(),
        _ => unreachable!("is_out_of_split checked the three loops"),
    };
    let first_name = names(&expr, first);
    let second_path = skip_guards(&expr, &child(first));
    let second_name = names(&expr, &second_path);
    let inner_name = names(&expr, &skip_guards(&expr, &child(&second_path)));
    // 1. The guards between the `trunc_r` and the `flatten` go inside the flatten.
    let under_trunc = child(&trunc);
    guards_into_flatten(applier, &under_trunc, span)?;
    // 2. Every guard above one of the three loops goes inside it (made one with the
    //    guards already there first), so that the guards end in the moved loop's body.
    let flatten = under_trunc;
    for depth in 0..3 {
        let at = [flatten.as_slice(), &vec![0; depth + 1]].concat();
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
    // 3. transpose(gen i: flatten(gen a: gen b: v[a][b][i])) where the flatten was; the
    //    reads resolve, innermost first.
    applier.apply(rw("flatten_gen_out", false, flatten.clone(), vec![], span))?;
    let read = [flatten.as_slice(), &[0, 0, 0, 0, 0]].concat();
    applier.resolve_reads([read.as_slice(), &[0, 0, 0]].concat(), span)?;
    // 4. transpose(gen i: trunc_r(k, flatten(gen a: gen b: e))) where the trunc_r was.
    applier.apply(rw(
        "trunc_r_transpose_gen",
        false,
        trunc.clone(),
        vec![],
        span,
    ))?;
    // 5. The loops get the names they had.
    let moved = child(&trunc);
    let gen_a = [moved.as_slice(), &[0, 0, 0]].concat();
    let gen_b = child(&gen_a);
    for (path, name) in [
        (moved, inner_name),
        (gen_a, first_name),
        (gen_b, second_name),
    ] {
        applier.apply(rw(
            "gen_rename",
            false,
            path,
            vec![("j", name_index(&name, span))],
            span,
        ))?;
    }
    Ok(())
}

/// Moves the guards at `under_trunc` (between a split's `trunc_r` and its `flatten`)
/// inside the flatten, one at a time (a conjunction is split first).
fn guards_into_flatten(
    applier: &mut Applier<'_, '_>,
    under_trunc: &[usize],
    span: Span,
) -> Result<(), Diagnostic> {
    loop {
        let expr = applier.expr.clone();
        if !is_guard(&expr, under_trunc) {
            return Ok(());
        }
        let rule = if is_guard(&expr, &child(under_trunc)) {
            ("guard_and", false)
        } else {
            ("flatten_guard", true)
        };
        applier.apply(rw(rule.0, rule.1, under_trunc.to_vec(), vec![], span))?;
    }
}
