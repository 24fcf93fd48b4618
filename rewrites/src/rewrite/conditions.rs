//! Conditions: a rule's shape conditions (which bind or check dimensions of matched
//! terms) and its index side conditions, proved by the solver under the site's context.
//! Only a `Proved` verdict passes: a refuted condition is E0811 (with the
//! counterexample), an unknown one E0812. Every verdict is recorded for the certificate.

use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::poly;
use atl_lang::shapes::{self, show_shape};
use atl_lang::span::Span;
use atl_solver::{Facts, Verdict};

use crate::context::{Env, Site, range_fact};
use crate::matcher::{self, Bindings};
use crate::record::ConditionRecord;
use crate::rule::{Condition, Rule};

/// Checks the rule's shape conditions at the matched site: each dimension the condition
/// names with an unbound metavariable binds it; every other must equal the dimension
/// of the matched term (proved under `facts` unless the two are the same polynomial).
pub fn shape_conditions(
    env: &Env<'_>,
    rule: &Rule,
    site: &Site<'_>,
    bindings: &mut Bindings,
    facts: &Facts,
    step_span: Span,
    records: &mut Vec<ConditionRecord>,
) -> Result<(), Diagnostic> {
    for c in &rule.conditions {
        let Condition::Shape {
            name,
            meta,
            dims,
            open,
        } = c
        else {
            continue;
        };
        let Some(term) = bindings.exprs.get(meta) else {
            return Err(step_error(
                "E0807",
                step_span,
                format!(
                    "condition `{name}` of `{}` needs `?{meta}`, which is not matched in this direction",
                    rule.name
                ),
            ));
        };
        let mut lets = site.ctx.lets.clone();
        let shape = shapes::infer_with_lets(env.shapes, &mut lets, term).map_err(|d| {
            step_error(
                "E0807",
                step_span,
                format!("cannot infer the shape of `?{meta}` for condition `{name}`"),
            )
            .with_note(d.message)
        })?;
        if shape.len() < dims.len() || (!open && shape.len() != dims.len()) {
            return Err(step_error(
                "E0808",
                step_span,
                format!("condition `{name}` of `{}` fails", rule.name),
            )
            .with_note(format!(
                "`?{meta}` has shape {}, which is not {}",
                show_shape(&shape),
                show_dims(dims, *open)
            )));
        }
        for (d, actual) in dims.iter().zip(&shape) {
            if let IndexExpr::Meta(m) = d
                && !bindings.indices.contains_key(m)
            {
                bindings.indices.insert(m.clone(), actual.clone());
                continue;
            }
            let expected = matcher::instantiate_index(d, bindings).ok_or_else(|| {
                step_error(
                    "E0807",
                    step_span,
                    format!("condition `{name}` mentions an unbound metavariable"),
                )
            })?;
            let goal = Pred::cmp(CmpOp::Eq, expected.clone(), actual.clone());
            let verdict = if poly::same(&expected, actual) {
                Verdict::Proved
            } else {
                env.solver.prove(facts, &goal)
            };
            records.push(ConditionRecord::new(name, &goal, facts, &verdict));
            check_verdict(&verdict, rule, name, &goal, facts, step_span)?;
        }
    }
    Ok(())
}

/// Proves the rule's index side conditions, instantiated with `bindings`, under the
/// site's `facts` and the ranges of the pattern's binders they mention.
pub fn index_conditions(
    env: &Env<'_>,
    rule: &Rule,
    bindings: &Bindings,
    facts: &Facts,
    step_span: Span,
    records: &mut Vec<ConditionRecord>,
) -> Result<(), Diagnostic> {
    for c in &rule.conditions {
        let Condition::Pred { name, pred } = c else {
            continue;
        };
        let goal = matcher::instantiate_pred(pred, bindings).ok_or_else(|| {
            step_error(
                "E0809",
                step_span,
                format!(
                    "condition `{name}` of `{}` mentions a metavariable without a value",
                    rule.name
                ),
            )
            .with_help("give it with `with NAME := …`")
        })?;
        // Conditions may mention binders matched inside the pattern (directly, or
        // through an index value captured in pattern names): add their ranges.
        let goal = rename_pattern_pred(&goal, bindings);
        let mut f = facts.clone();
        for (pv, (lo, hi)) in &bindings.ranges {
            if let Some(tv) = bindings.binders.get(pv)
                && goal.mentions(tv)
            {
                let lo = rename_pattern_vars(lo, bindings);
                let hi = rename_pattern_vars(hi, bindings);
                f.facts.push(range_fact(tv, &lo, &hi));
            }
        }
        let verdict = env.solver.prove(&f, &goal);
        records.push(ConditionRecord::new(name, &goal, &f, &verdict));
        check_verdict(&verdict, rule, name, &goal, &f, step_span)?;
    }
    Ok(())
}

/// The facts of a context as the messages list them.
fn show_facts(facts: &Facts) -> Vec<String> {
    let mut out: Vec<String> = facts.sizes.iter().map(|s| format!("{s} >= 1")).collect();
    out.extend(facts.facts.iter().map(|p| p.to_string()));
    out
}

/// A step's error, pointing at the step.
pub(crate) fn step_error(code: &'static str, span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(code, msg).at(span, "this step")
}

/// The dimensions a shape condition asks for (`[?n, ..]`).
fn show_dims(dims: &[IndexExpr], open: bool) -> String {
    let mut parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    if open {
        parts.push("..".to_string());
    }
    format!("[{}]", parts.join(", "))
}

/// Pattern binder names (`?i`) in an instantiated condition become the term's names.
fn rename_pattern_vars(e: &IndexExpr, b: &Bindings) -> IndexExpr {
    let mut out = e.clone();
    for (pv, tv) in &b.binders {
        out = out.subst(pv, &IndexExpr::var(tv.clone()));
    }
    out
}

/// [`rename_pattern_vars`] in every index of a predicate.
fn rename_pattern_pred(p: &Pred, b: &Bindings) -> Pred {
    p.map_index(&mut |i| rename_pattern_vars(i, b))
}

/// Turns a solver verdict on a step's condition into the step's outcome: only `Proved`
/// passes. `what` names the condition (``side condition `upper` of `get_gen` ``);
/// `help` says how to fix a refuted one.
pub(crate) fn verdict_to_result(
    verdict: &Verdict,
    what: &str,
    goal: &Pred,
    facts: &Facts,
    span: Span,
    help: &str,
) -> Result<(), Diagnostic> {
    let context = show_facts(facts).join(", ");
    let context = if context.is_empty() {
        "(none)".to_string()
    } else {
        context
    };
    match verdict {
        Verdict::Proved => Ok(()),
        Verdict::Refuted(cex) => Err(Diagnostic::error("E0811", format!("{what} is false here"))
            .at(span, format!("cannot prove {goal}"))
            .with_note(format!("goal: {goal}"))
            .with_note(format!("context: {context}"))
            .with_note(format!("counterexample: {cex}"))
            .with_help(help)),
        Verdict::Unknown(reason) => Err(Diagnostic::error("E0812", format!("{what} could not be proved"))
            .at(span, format!("unknown: {goal}"))
            .with_note(format!("goal: {goal}"))
            .with_note(format!("context: {context}"))
            .with_note(format!("the solver gave up: {reason}"))
            .with_help("an unproved condition is never accepted; simplify the indices (`simpl`) or add an `assume`")),
    }
}

/// [`verdict_to_result`] for a side condition of a rule.
fn check_verdict(
    verdict: &Verdict,
    rule: &Rule,
    name: &str,
    goal: &Pred,
    facts: &Facts,
    span: Span,
) -> Result<(), Diagnostic> {
    verdict_to_result(
        verdict,
        &format!("side condition `{name}` of `{}`", rule.name),
        goal,
        facts,
        span,
        "select another site (`at N`, `around (…)`), or first make the context imply the condition (a guard, a split)",
    )
}
