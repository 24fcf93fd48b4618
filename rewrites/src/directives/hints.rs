//! The loop annotations `parallel x`, `vectorize x`, `unroll x` and `unroll x off`: each
//! is one step that leaves the program unchanged and carries a loop hint (binder and
//! kind), checked here against the program on its own and together with the
//! derivation's other hints; lowering applies the hints and checks them again on the
//! kernel.

use atl_lang::diag::Diagnostic;
use atl_lang::index::IndexExpr;
use atl_lang::ir::{Expr, ExprKind, HintKind, LoopHint};
use atl_lang::poly;
use atl_lang::pretty::{Style, expr_to_string};
use atl_lang::shapes::ShapeEnv;
use atl_lang::span::Span;

use super::{Applier, Call, construct, find_loop, loop_path};
use crate::context::{Env, StepOutcome, node_at, sites};
use crate::record::StepRecord;

/// `parallel x`, `vectorize x`, `unroll x`, `unroll x off`: one step, recorded as the
/// directive's only outcome.
pub(super) fn annotation_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let kind = match (call.name.name.as_str(), call.text.as_slice()) {
        ("parallel", [_]) => HintKind::Parallel,
        ("vectorize", [_]) => HintKind::Vector,
        ("unroll", [_]) => HintKind::Unroll,
        ("unroll", [_, "off"]) => HintKind::UnrollOff,
        _ => return Err(call.usage()),
    };
    let var = call.text[0];
    // The hint names the loop by its variable (`stage.var` and written names resolved).
    let (path, _) = find_loop(Some(applier.env.program), &applier.expr, var, call.span)?;
    let resolved = match node_at(&applier.expr, &path).map(|n| &n.kind) {
        Some(ExprKind::Gen { var, .. } | ExprKind::Sum { var, .. }) => var.clone(),
        _ => var.to_string(),
    };
    let outcome = annotation(
        applier.env,
        &applier.expr,
        kind,
        &resolved,
        call.span,
        &applier.origin,
    )?;
    applier.outcomes.push(outcome);
    Ok(())
}

/// Longest constant trip count `unroll` accepts: full unrolling of a longer loop only
/// bloats the code (split it by a small factor and unroll the inner loop instead).
pub const UNROLL_HINT_MAX: i64 = 64;

/// `parallel x`, `vectorize x`, `unroll x`, `unroll x off`: one step that leaves the
/// program unchanged and carries the loop hint (checked here against the current
/// program; the hints of a derivation are checked together by [`check_hints`], and
/// lowering checks them again on the kernel).
fn annotation(
    env: &Env<'_>,
    expr: &Expr,
    kind: HintKind,
    var: &str,
    span: Span,
    origin: &str,
) -> Result<StepOutcome, Diagnostic> {
    let hint = LoopHint {
        var: var.to_string(),
        kind,
        span,
    };
    check_hint(env.shapes, expr, &hint)?;
    let text = expr_to_string(expr, Style::default());
    let mut record = StepRecord::tactic(kind.step_text(var), Vec::new(), text.clone(), text);
    record.origin = Some(origin.to_string());
    record.hint = Some(hint);
    Ok(StepOutcome {
        expr: expr.clone(),
        record,
    })
}

/// The chain of loops directly nested in `e` (looking through guards), outermost
/// first: `sum ry < 3: sum rx < 3: [g] * …` gives `ry, rx`.
fn loops_directly_inside(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = e;
    loop {
        match &cur.kind {
            ExprKind::Gen { var, body, .. } | ExprKind::Sum { var, body, .. } => {
                out.push(var.clone());
                cur = body;
            }
            ExprKind::Guard { body, .. } => cur = body,
            _ => return out,
        }
    }
}

/// Whether one hint makes sense for its loop in `expr`:
///
/// - `parallel`: a `gen` (a `sum`'s iterations accumulate into the same elements, so
///   running them on different threads would race).
/// - `vectorize`: a `gen` whose body is scalar and contains no loop and no `let`: SIMD
///   lanes run consecutive iterations at once, so each must be straight-line code on
///   its own element (a per-iteration buffer or a nested loop has no lane-wise form,
///   and a `sum` vectorized would reassociate its additions). One exception: a body
///   that is itself a max-reduction of straight-line code (the partial maxima of
///   `rfactor`), which each lane folds on its own, in order.
/// - `unroll`: a `gen` or `sum` with constant bounds and a trip count in
///   `2..=UNROLL_HINT_MAX` (the unroll pragma takes the trip count); `unroll off`: any
///   `gen` or `sum` (no pragma is the loop as written).
fn check_hint(shapes: &ShapeEnv, expr: &Expr, hint: &LoopHint) -> Result<(), Diagnostic> {
    let (var, span) = (hint.var.as_str(), hint.span);
    let (path, is_gen) = loop_path(expr, var, span)?;
    let Some(node) = node_at(expr, &path) else {
        unreachable!("loop_path found the loop")
    };
    let (ExprKind::Gen { lo, hi, body, .. } | ExprKind::Sum { lo, hi, body, .. }) = &node.kind
    else {
        unreachable!("loop_path finds gens and sums")
    };
    match hint.kind {
        HintKind::Parallel if !is_gen => Err(Diagnostic::error(
            "E0840",
            format!("`{var}` is a reduction (`sum`): its iterations accumulate into the same elements"),
        )
        .at(span, "cannot run on several threads")
        .with_note("`omp parallel for` runs iterations at the same time; iterations of a `sum` all add into one element, so they would race")
        .with_help("parallelize a `gen` loop: an enclosing one, or one nested inside the sum")),
        HintKind::Parallel => Ok(()),
        HintKind::Vector => {
            let refuse = |why: String| {
                Diagnostic::error("E0841", format!("`{var}` cannot be vectorized: {why}"))
                    .at(span, "not an innermost, iteration-private loop")
                    .with_note("`omp simd` runs consecutive iterations in the lanes of one instruction: each iteration must be straight-line code computing its own element")
                    .with_help("vectorize the innermost `gen` of the nest (after `split`, the inner loop of the split)")
            };
            if !is_gen {
                return Err(refuse(
                    "it is a reduction (`sum`); in SIMD lanes its additions would be reassociated, which changes the floating-point result".to_string(),
                )
                .with_help(format!(
                    "to vectorize a reduction, make its lanes partial sums over a pure loop: `split {var} by 8 into {var}o, {var}i`, `rfactor {var}i into l`, `reorder {var}o, l`, `vectorize l` (graded `real`)"
                )));
            }
            // Every node of the body, with the lets around it (pre-order).
            let mut body_path = path.clone();
            body_path.push(0);
            let inside: Vec<_> = sites(shapes, expr)
                .into_iter()
                .filter(|s| s.path.starts_with(&body_path))
                .collect();
            for s in &inside {
                let why = match &s.expr.kind {
                    // A scalar `let` is a temporary of the iteration (a lane's register);
                    // a tensor one is a buffer written by a loop of its own.
                    ExprKind::Let { var, value, .. } => {
                        let mut lets = s.ctx.lets.clone();
                        match atl_lang::shapes::infer_with_lets(shapes, &mut lets, value) {
                            Ok(shape) if shape.is_empty() => continue,
                            _ => format!(
                                "its body computes the tensor `let {var}`, a buffer per iteration written by a loop of its own"
                            ),
                        }
                    }
                    ExprKind::Sum { var, .. } => format!(
                        "its body contains the reduction `sum {var}`, a loop of its own (it is not innermost)"
                    ),
                    // The body itself a max-reduction: each lane folds its own values,
                    // in the scalar order, into its own accumulator (the partial maxima
                    // of `rfactor`); `omp simd` vectorizes the outer loop. Loops inside
                    // the max's body are still refused below.
                    ExprKind::MaxRed { .. } if s.path == body_path => continue,
                    ExprKind::MaxRed { var, .. } => format!(
                        "its body contains the reduction `max {var}`, a loop of its own (it is not innermost)"
                    ),
                    ExprKind::Gen { .. } => format!(
                        "its body contains {}, a loop of its own (it is not innermost)",
                        construct(s.expr)
                    ),
                    _ => continue,
                };
                let mut d = refuse(why);
                // The loops directly inside (through guards), outermost first: moved out
                // of the vectorized loop, they leave it innermost.
                let inner = loops_directly_inside(body);
                if !inner.is_empty() {
                    d.help = Some(format!(
                        "move the loops inside `{var}` out of it, then vectorize it: `reorder {}, {var}` (a `sum` around a vectorized `gen` accumulates a vector of partial results, one per lane: the additions stay in order)",
                        inner.join(", ")
                    ));
                }
                return Err(d);
            }
            let mut lets = inside
                .first()
                .map(|s| s.ctx.lets.clone())
                .unwrap_or_default();
            match atl_lang::shapes::infer_with_lets(shapes, &mut lets, body) {
                Ok(s) if s.is_empty() => Ok(()),
                Ok(s) => Err(refuse(format!(
                    "its body is a tensor of shape {}, which lowering computes with loops of its own",
                    atl_lang::shapes::show_shape(&s)
                ))),
                Err(d) => Err(refuse(format!("its body has no shape ({})", d.message))),
            }
        }
        HintKind::UnrollOff => Ok(()),
        HintKind::Unroll => {
            let extent = poly::normalize(&IndexExpr::sub(hi.clone(), lo.clone()));
            let refuse = |why: String| {
                Diagnostic::error("E0842", format!("`{var}` cannot be unrolled: {why}"))
                    .at(span, "cannot unroll")
                    .with_help(format!(
                        "split the loop by a constant factor (at most {UNROLL_HINT_MAX}) and unroll the inner loop"
                    ))
            };
            match (poly::normalize(lo), extent) {
                (IndexExpr::Const(_), IndexExpr::Const(n)) if (2..=UNROLL_HINT_MAX).contains(&n) => {
                    Ok(())
                }
                (IndexExpr::Const(_), IndexExpr::Const(n)) => Err(refuse(format!(
                    "its trip count is {n}; unrolling needs 2 to {UNROLL_HINT_MAX} iterations"
                ))),
                (_, extent) => Err(refuse(format!(
                    "its bounds {lo}..{hi} are not constants (trip count {extent}); the unroll pragma needs the trip count when the kernel is compiled"
                ))),
            }
        }
    }
}

/// Checks the loop hints of a derivation against its program `expr`: each on its own
/// (see `check_hint`), then together: at most one hint of each kind per loop, `unroll`
/// not combined with `parallel` or `vectorize` on one loop (the C printer gives a loop
/// one pragma, `parallel for simd` being the one combination), and no `parallel` loop
/// inside another (OpenMP's nested parallelism is off: the inner loop would run on one
/// thread). Diagnostics point at the later hint.
pub fn check_hints(shapes: &ShapeEnv, expr: &Expr, hints: &[LoopHint]) -> Result<(), Diagnostic> {
    for (k, h) in hints.iter().enumerate() {
        check_hint(shapes, expr, h)?;
        for earlier in &hints[..k] {
            if earlier.var == h.var {
                // `unroll` combines with nothing (`unroll off` included); `unroll off`
                // with `parallel` or `vectorize`, whose pragmas it leaves alone.
                let clash = earlier.kind == h.kind
                    || earlier.kind == HintKind::Unroll
                    || h.kind == HintKind::Unroll;
                if clash {
                    return Err(Diagnostic::error(
                        "E0843",
                        format!(
                            "`{}` is already annotated by `{}`",
                            h.var,
                            earlier.kind.step_text(&earlier.var)
                        ),
                    )
                    .at(h.span, "conflicting annotation")
                    .with_secondary(earlier.span, "the earlier annotation")
                    .with_note("a loop gets one pragma: `parallel` and `vectorize` combine (`omp parallel for simd`), `unroll` combines with neither (nor with `unroll off`, which combines with both), and repeating one is a mistake"));
                }
            }
            if earlier.kind == HintKind::Parallel
                && h.kind == HintKind::Parallel
                && earlier.var != h.var
            {
                let (a, _) = loop_path(expr, &earlier.var, earlier.span)?;
                let (b, _) = loop_path(expr, &h.var, h.span)?;
                if a.starts_with(&b) || b.starts_with(&a) {
                    let (outer, inner) = if a.len() < b.len() {
                        (&earlier.var, &h.var)
                    } else {
                        (&h.var, &earlier.var)
                    };
                    return Err(Diagnostic::error(
                        "E0840",
                        format!("parallel loop `{inner}` is nested in parallel loop `{outer}`"),
                    )
                    .at(h.span, "nested parallel loops")
                    .with_secondary(earlier.span, "the other parallel loop")
                    .with_note("OpenMP's nested parallelism is off: the inner loop would run on one thread of the outer loop's team")
                    .with_help("parallelize one loop of the nest (`fuse` two loops to get more iterations)"));
                }
            }
        }
    }
    Ok(())
}
