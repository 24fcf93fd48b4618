//! `specialize COND { steps }`: Halide's `specialize`. The program `P` becomes
//! `[c] * P + [!c] * P` for each comparison `c` of `COND` (rules `spec_lt`, `spec_le`,
//! `spec_eq`, `spec_ne` of rules/library/guard.rules, one equation each, the
//! comparison's operands as parameters), the first part nested in the last one's first
//! copy; then the block's steps run. The first copy is first in the program's
//! traversal, so it keeps every binder name (the renaming after a rewrite renames
//! later duplicates): the block's steps name its loops as the user knows them, with
//! `COND` a fact of their context (its guards). The general version, the second copy,
//! keeps the schedule written before the block; its binders are renamed, and the
//! records say which binder each copies, so that the loop hints given before the block
//! hold of both versions (`record::add_hints`). Lowering computes one part or the
//! other (`Expr::as_case_split`), and the validator proves both branches.
//!
//! A derivation has at most one `specialize`, and it is its last step: after it (or
//! inside its block, for a nested one), a loop name would be ambiguous between the
//! versions. A conjunction `c1 && c2` nests the second split in the first's copy.

use std::collections::BTreeMap;

use atl_lang::ast::{SPred, Step, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{Expr, Program};
use atl_lang::shapes::Shape;
use atl_lang::span::Span;

use super::{rw, to_sindex};
use crate::context::{Env, StepOutcome, node_at};
use crate::derivation::expand_step;

/// The case-split rules, `e = [c] * e + [!c] * e` for `c` = `a < b`, `a <= b`, `a ==
/// b`, `a != b` (`rules/library/guard.rules`): the steps `specialize` adds itself.
pub const CASE_SPLIT_RULES: [&str; 4] = ["spec_lt", "spec_le", "spec_eq", "spec_ne"];

/// Expands `specialize cond { steps }` on `expr`: the case splits, then the steps.
pub fn specialize(
    env: &Env<'_>,
    expr: &Expr,
    cond: &SPred,
    steps: &[Step],
    span: Span,
    shape: &Shape,
    derived: &BTreeMap<String, Expr>,
) -> Result<Vec<StepOutcome>, Diagnostic> {
    if expr.as_case_split().is_some() {
        return Err(Diagnostic::error(
            "E0857",
            "the program is already specialized: `specialize` is the last step of a derivation",
        )
        .at(span, "a second `specialize`")
        .with_help(
            "join the conditions with `&&` in one `specialize`, or write another derivation from the same specification for another fast path",
        ));
    }
    let comparisons = comparisons(env.program, cond, span)?;
    let mut outcomes: Vec<StepOutcome> = Vec::new();
    let mut current = expr.clone();
    let mut path: Vec<usize> = Vec::new();
    let origin = format!("specialize {}", atl_lang::resolve::lower_pred_free(cond)?);
    for (rule, a, b) in comparisons {
        let step = rw(
            rule,
            false,
            path.clone(),
            vec![("a", to_sindex(&a, span)), ("b", to_sindex(&b, span))],
            span,
        );
        let mut o = crate::step::run_step(env, &current, &step, shape, derived)
            .map_err(|d| d.with_note(format!("while expanding `{origin}`")))?;
        o.record.origin = Some(origin.clone());
        let special: Vec<usize> = path.iter().copied().chain([0, 0]).collect();
        let general: Vec<usize> = path.iter().copied().chain([1, 0]).collect();
        if let (Some(s), Some(g)) = (node_at(&o.expr, &special), node_at(&o.expr, &general)) {
            copied_binders(s, g, &mut o.record.copies);
        }
        current = o.expr.clone();
        outcomes.push(o);
        path = special;
    }
    for step in steps {
        let result = match &step.kind {
            StepKind::Specialize { .. } => Err(Diagnostic::error(
                "E0857",
                "`specialize` inside a block specializes the whole program again",
            )
            .at(step.span, "nested here")
            .with_help("join the conditions with `&&` in one `specialize`")),
            _ => expand_step(env, &current, step, shape, derived),
        };
        let step_outcomes =
            result.map_err(|d| d.with_secondary(span, "in the block of this `specialize`"))?;
        if let Some(last) = step_outcomes.last() {
            current = last.expr.clone();
        }
        outcomes.extend(step_outcomes);
    }
    Ok(outcomes)
}

/// The case splits of a condition: one `(rule, a, b)` per comparison of a conjunction.
fn comparisons(
    program: &Program,
    cond: &SPred,
    span: Span,
) -> Result<Vec<(&'static str, IndexExpr, IndexExpr)>, Diagnostic> {
    let pred = atl_lang::resolve::lower_pred_free(cond)?;
    let mut out = Vec::new();
    collect(program, &pred, false, cond.span, &mut out)?;
    if out.is_empty() {
        return Err(Diagnostic::error("E0857", "`specialize` needs a condition")
            .at(span, "no comparison")
            .with_help("for example `specialize n % 16 == 0 { … }`"));
    }
    Ok(out)
}

fn collect(
    program: &Program,
    p: &Pred,
    negated: bool,
    span: Span,
    out: &mut Vec<(&'static str, IndexExpr, IndexExpr)>,
) -> Result<(), Diagnostic> {
    match p {
        Pred::And(x, y) if !negated => {
            collect(program, x, false, span, out)?;
            collect(program, y, false, span, out)
        }
        Pred::Not(x) => collect(program, x, !negated, span, out),
        Pred::Cmp(op, a, b) => {
            for e in [a, b] {
                if let Some(v) = e.vars().into_iter().find(|v| !program.is_size(v)) {
                    return Err(Diagnostic::error(
                        "E0857",
                        format!("the condition of `specialize` mentions `{v}`, which is not a size"),
                    )
                    .at(span, "a condition on sizes")
                    .with_help("the condition is tested once, before the kernel runs: it may use only sizes (`n % 16 == 0`, `n <= 64`)"));
                }
                if e.has_load() {
                    return Err(Diagnostic::error(
                        "E0857",
                        "the condition of `specialize` reads an index array",
                    )
                    .at(span, "a condition on sizes")
                    .with_help("the condition may use only sizes"));
                }
            }
            let op = if negated { op.negate() } else { *op };
            let (a, b) = (a.clone(), b.clone());
            let [lt, le, eq, ne] = CASE_SPLIT_RULES;
            out.push(match op {
                CmpOp::Lt => (lt, a, b),
                CmpOp::Le => (le, a, b),
                CmpOp::Eq => (eq, a, b),
                CmpOp::Ne => (ne, a, b),
                CmpOp::Gt => (lt, b, a),
                CmpOp::Ge => (le, b, a),
            });
            Ok(())
        }
        Pred::Bool(_) => Err(Diagnostic::error(
            "E0857",
            "the condition of `specialize` is a constant",
        )
        .at(span, "always the same version")
        .with_help("specialize on a comparison of sizes, such as `n % 16 == 0`")),
        Pred::Or(..) | Pred::And(..) => Err(Diagnostic::error(
            "E0857",
            "the condition of `specialize` is not a conjunction of comparisons",
        )
        .at(span, "`||` (or `!` of `&&`)")
        .with_help(
            "join comparisons with `&&`; for either of two conditions, write a derivation for each",
        )),
    }
}

/// The binders of `general` that copy those of `special` (the two are equal up to
/// binder names, right after a case split), as (original, copy) pairs.
fn copied_binders(special: &Expr, general: &Expr, out: &mut Vec<(String, String)>) {
    if let (Some((s, _)), Some((g, _))) = (special.binder(), general.binder())
        && s != g
    {
        out.push((s.to_string(), g.to_string()));
    }
    for (s, g) in special.children().into_iter().zip(general.children()) {
        copied_binders(s, g, out);
    }
}
