//! The `window` tactic: a let-bound tensor stored only on the rows (and columns, …) its
//! body reads, every read proved inside the window. The storage half of Halide's
//! `compute_at`, used by the `compute_at` directive.

use atl_lang::ast;
use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{self, Expr, ExprKind};
use atl_lang::poly;
use atl_lang::shapes::{self, Shape};
use atl_lang::span::Span;
use atl_solver::{Facts, Verdict};

use crate::context::{
    Env, StepOutcome, child_context, node_at, replace_at, reserved_names, show, sites,
};
use crate::matcher;
use crate::record::{ConditionRecord, StepRecord};
use crate::rewrite::conditions::verdict_to_result;

/// `window x in LO..HI[, LO2..HI2, …]`: stores only rows `LO..HI` of the let-bound
/// tensor `x` (and, with more ranges, only columns `LO2..HI2` of those rows, and so on:
/// one range per leading dimension).
///
/// Every read `x[i1]…[id]` in the let's body (d the number of ranges) must provably
/// satisfy `LOk <= ik < HIk` in its context for every k, and `x` may not be used other
/// than through such reads; then `let x = v in b` becomes
/// `let x = gen w1 < HI1 - LO1: … gen wd < HId - LOd: [in range] * v[w1 + LO1]…[wd + LOd]
/// in b'`, where `in range` is `0 <= wk + LOk && wk + LOk < |v|k` for every k and `b'`
/// reads `x[i1 - LO1]…[id - LOd]`. The guard keeps elements outside `v` zero, as reads of
/// `v` there were, so every read of the new buffer has the value the old read had. Each
/// `HIk - LOk` must be fixed by the sizes (the new buffer's extents). This is the storage
/// half of Halide's `compute_at`: the buffer shrinks to the window a tile reads (its halo
/// included).
pub fn window(
    env: &Env<'_>,
    root: &Expr,
    var: &ast::Ident,
    dims: &[(ast::SIndex, ast::SIndex)],
    step_span: Span,
) -> Result<StepOutcome, Diagnostic> {
    let mut bounds: Vec<(IndexExpr, IndexExpr)> = Vec::new();
    for (lo, hi) in dims {
        bounds.push((
            atl_lang::resolve::lower_index_free(lo)?,
            atl_lang::resolve::lower_index_free(hi)?,
        ));
    }
    if bounds.is_empty() {
        return Err(
            Diagnostic::error("E0819", "a window needs at least one range")
                .at(step_span, "no range"),
        );
    }
    let d = bounds.len();
    let all = sites(env.shapes, root);
    let site = all
        .iter()
        .find(|s| matches!(&s.expr.kind, ExprKind::Let { var: v, .. } if *v == var.name))
        .ok_or_else(|| {
            Diagnostic::error("E0818", format!("no `let {}` in the program", var.name))
                .at(var.span, "nothing to window")
                .with_help("binder names are shown by `atl derive --trace` and the REPL's `:show`")
        })?;
    let ExprKind::Let { value, body, .. } = &site.expr.kind else {
        unreachable!("found a let above")
    };
    // The bounds may mention sizes and the binders around the let only.
    for v in bounds
        .iter()
        .flat_map(|(lo, hi)| lo.vars().into_iter().chain(hi.vars()))
    {
        if !env.program.is_size(&v) && !site.ctx.bound.contains(&v) {
            return Err(Diagnostic::error(
                "E0819",
                format!(
                    "the window bound mentions `{v}`, which is not in scope at `let {}`",
                    var.name
                ),
            )
            .at(step_span, "bound out of scope")
            .with_help(
                "window bounds are built from sizes and the loop variables around the let",
            ));
        }
    }
    let mut extents = Vec::new();
    for (lo, hi) in &bounds {
        let extent = poly::normalize(&IndexExpr::sub(hi.clone(), lo.clone()));
        if let Some(v) = extent.vars().into_iter().find(|v| !env.program.is_size(v)) {
            return Err(Diagnostic::error("E0819", format!("the window's length `{extent}` depends on `{v}`"))
                .at(step_span, "the buffer would be jagged")
                .with_help("choose bounds whose difference is fixed by the sizes, e.g. `yo * 64 - 1..yo * 64 + 65`"));
        }
        extents.push(extent);
    }
    let mut lets = site.ctx.lets.clone();
    let value_shape = shapes::infer_with_lets(env.shapes, &mut lets, value)?;
    if value_shape.len() < d {
        return Err(Diagnostic::error(
            "E0819",
            if value_shape.is_empty() {
                format!("`{}` is a scalar; there is nothing to window", var.name)
            } else {
                format!(
                    "`{}` has {} dimension(s), and the window gives {d} ranges",
                    var.name,
                    value_shape.len()
                )
            },
        )
        .at(var.span, "too few dimensions"));
    }
    let let_facts = env.facts(&site.ctx);
    let mut records = Vec::new();
    for (lo, hi) in &bounds {
        let nonneg = Pred::cmp(CmpOp::Le, lo.clone(), hi.clone());
        let verdict = env.solver.prove(&let_facts, &nonneg);
        records.push(ConditionRecord::new(
            "window_order",
            &nonneg,
            &let_facts,
            &verdict,
        ));
        check_window_verdict(&verdict, "window_order", &nonneg, &let_facts, step_span)?;
    }

    // Every use of the variable in the body must be a read of d indices inside the
    // window.
    let body_ctx = child_context(env.shapes, site.expr, 1, &site.ctx);
    for s in sites(env.shapes, body) {
        let ExprKind::Var(v) = &s.expr.kind else {
            continue;
        };
        if *v != var.name {
            continue;
        }
        // The chain of accesses around the use, innermost first.
        let mut indices = Vec::new();
        let mut read_path = s.path.clone();
        while indices.len() < d && all_parent_is_access(body, &read_path) {
            read_path.pop();
            let Some(ExprKind::Access { index, .. }) = node_at(body, &read_path).map(|n| &n.kind)
            else {
                unreachable!("the parent is an access")
            };
            indices.push(index.clone());
        }
        if indices.len() < d {
            let user = node_at(body, &read_path).unwrap_or(s.expr);
            return Err(Diagnostic::error(
                "E0819",
                if indices.is_empty() {
                    format!("`{}` is used as a whole tensor, not only read by index", var.name)
                } else {
                    format!(
                        "`{}` is read with {} index(es), and the window has {d} ranges: the read takes a part of the buffer that the window would change",
                        var.name,
                        indices.len()
                    )
                },
            )
            .at(step_span, "cannot window")
            .with_note(format!("use: {}", show(user))));
        }
        // The context of the read: that of its outermost access.
        let read_ctx = all
            .iter()
            .find(|t| {
                let mut full = site.path.clone();
                full.push(1);
                full.extend(read_path.iter().copied());
                t.path == full
            })
            .map(|t| t.ctx.clone())
            .unwrap_or_else(|| {
                let mut ctx = body_ctx.clone();
                ctx.facts.extend(s.ctx.facts.iter().cloned());
                ctx
            });
        let facts = env.facts(&read_ctx);
        let read = node_at(body, &read_path).unwrap_or(s.expr);
        for (k, ((lo, hi), index)) in bounds.iter().zip(&indices).enumerate() {
            let goal = Pred::and(
                Pred::cmp(CmpOp::Le, lo.clone(), index.clone()),
                Pred::cmp(CmpOp::Lt, index.clone(), hi.clone()),
            );
            let verdict = env.solver.prove(&facts, &goal);
            records.push(ConditionRecord::new(
                "read_in_window",
                &goal,
                &facts,
                &verdict,
            ));
            check_window_verdict(&verdict, "read_in_window", &goal, &facts, step_span).map_err(
                |e| {
                    e.with_note(format!(
                        "the read `{}` is not provably inside dimension {} of the window, {lo}..{hi}",
                        show(read),
                        k + 1
                    ))
                },
            )?;
        }
    }

    // Build the windowed let.
    let mut supply = ir::NameSupply::new(
        ir::all_names(root)
            .into_iter()
            .chain(reserved_names(env.program)),
    );
    let ws: Vec<String> = (0..d).map(|_| supply.fresh("w")).collect();
    let shifted: Vec<IndexExpr> = ws
        .iter()
        .zip(&bounds)
        .map(|(w, (lo, _))| IndexExpr::add(IndexExpr::var(w.clone()), lo.clone()))
        .collect();
    let in_range = window_guard(&shifted, &value_shape);
    let mut element = (**value).clone();
    for s in &shifted {
        element = Expr::access(element, s.clone());
    }
    let mut new_value = Expr::guard(in_range, element);
    for (w, extent) in ws.iter().zip(&extents).rev() {
        new_value = Expr::gen_(w.clone(), IndexExpr::Const(0), extent.clone(), new_value);
    }
    let los: Vec<IndexExpr> = bounds.iter().map(|(lo, _)| lo.clone()).collect();
    let new_body = shift_reads(body, &var.name, &los);
    let mut new_let = site.expr.clone();
    new_let.kind = ExprKind::Let {
        var: var.name.clone(),
        value: Box::new(new_value),
        body: Box::new(new_body),
    };
    let replaced = replace_at(root, &site.path, new_let.clone()).expect("the site exists");
    let expr = matcher::uniquify(&replaced, &reserved_names(env.program));
    let ranges: Vec<String> = bounds
        .iter()
        .map(|(lo, hi)| format!("{lo}..{hi}"))
        .collect();
    let mut record = StepRecord::tactic(
        format!("window {} in {}", var.name, ranges.join(", ")),
        site.path.clone(),
        show(site.expr),
        show(&expr),
    );
    record.after_site = show(&new_let);
    record.conditions = records;
    Ok(StepOutcome { expr, record })
}

/// The guard of a windowed buffer: every shifted index `s` within its dimension of the
/// original, `0 <= s && s < extent`.
fn window_guard(shifted: &[IndexExpr], shape: &Shape) -> Pred {
    // Left-nested (`((a && b) && c) && d`), the way the parser reads a chain back.
    let mut out: Option<Pred> = None;
    for (s, extent) in shifted.iter().zip(shape) {
        for atom in [
            Pred::cmp(CmpOp::Le, IndexExpr::Const(0), s.clone()),
            Pred::cmp(CmpOp::Lt, s.clone(), extent.clone()),
        ] {
            out = Some(match out {
                None => atom,
                Some(q) => Pred::and(q, atom),
            });
        }
    }
    out.unwrap_or(Pred::Bool(true))
}

/// Re-indexes every read `x[i1]…[id]` (d = `los.len()`) as `x[i1 - lo1]…[id - lod]`.
fn shift_reads(e: &Expr, name: &str, los: &[IndexExpr]) -> Expr {
    // The access chain of a read, outermost first: peel `d` accesses and check that the
    // innermost tensor is `name`.
    fn chain(e: &Expr, d: usize, name: &str) -> bool {
        match (&e.kind, d) {
            (ExprKind::Var(v), 0) => v == name,
            (ExprKind::Access { tensor, .. }, d) if d > 0 => chain(tensor, d - 1, name),
            _ => false,
        }
    }
    fn rebuild(e: &Expr, los: &[IndexExpr]) -> Expr {
        // `e` is the access of the last dimension.
        let Some((lo, rest)) = los.split_last() else {
            return e.clone();
        };
        let ExprKind::Access { tensor, index } = &e.kind else {
            return e.clone();
        };
        let mut out = e.clone();
        out.kind = ExprKind::Access {
            tensor: Box::new(rebuild(tensor, rest)),
            index: IndexExpr::sub(index.clone(), lo.clone()),
        };
        out
    }
    if chain(e, los.len(), name) {
        return rebuild(e, los);
    }
    let mut out = e.clone();
    for c in out.children_mut() {
        *c = shift_reads(c, name, los);
    }
    out
}

/// Whether the node at `path` (relative to `root`) is the tensor of an access.
fn all_parent_is_access(root: &Expr, path: &[usize]) -> bool {
    match path.split_last() {
        Some((last, parent)) => {
            *last == 0
                && matches!(
                    node_at(root, parent).map(|p| &p.kind),
                    Some(ExprKind::Access { .. })
                )
        }
        None => false,
    }
}

fn check_window_verdict(
    verdict: &Verdict,
    name: &str,
    goal: &Pred,
    facts: &Facts,
    span: Span,
) -> Result<(), Diagnostic> {
    verdict_to_result(
        verdict,
        &format!("`window` condition `{name}`"),
        goal,
        facts,
        span,
        "widen the window so that every read of the buffer falls inside it",
    )
}
