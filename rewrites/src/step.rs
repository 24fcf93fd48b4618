//! The primitive step layer: one step that is not a directive (a rule application, a
//! tactic or `window`), run and then checked the way every step is checked: the
//! program stays below [`MAX_TERM_SIZE`](crate::context::MAX_TERM_SIZE) nodes, keeps
//! the shape discipline (`well_shaped.rs`) and keeps its shape. The directives expand
//! into steps of this layer; the derivation driver ([`crate::derivation`]) sits above
//! both.

use std::collections::BTreeMap;

use atl_lang::ast::{self, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, Pred};
use atl_lang::ir::Expr;
use atl_lang::poly;
use atl_lang::shapes::{self, Shape, show_shape};
use atl_solver::Verdict;

use crate::context::{Context, Env, MAX_TERM_SIZE, StepOutcome, context_at, node_at, term_size};
use crate::rewrite::{Direction, RewriteRequest, rewrite};
use crate::tactics::{check, inline, simpl, simpl_guard, unfold};
use crate::window::window;

/// The step's word as the user wrote it (`rw split_gen`, `simpl`, …), for messages.
fn step_word(step: &ast::Step) -> String {
    match &step.kind {
        StepKind::Rewrite { backward, rule, .. } => {
            format!("{} {}", if *backward { "rw<-" } else { "rw" }, rule.name)
        }
        StepKind::Unfold { name, storage } => match storage {
            Some(f) => format!("unfold {} as {}", name.name, f.name),
            None => format!("unfold {}", name.name),
        },
        StepKind::Inline(n) => format!("inline {}", n.name),
        StepKind::Simpl => "simpl".into(),
        StepKind::SimplGuard => "simpl_guard".into(),
        StepKind::Window { var, .. } => format!("window {}", var.name),
        StepKind::Check => "check".into(),
        StepKind::Directive { name, .. } => name.name.clone(),
        StepKind::Specialize { .. } => "specialize".into(),
    }
}
/// Executes one derivation step on `expr`.
pub fn run_step(
    env: &Env<'_>,
    expr: &Expr,
    step: &ast::Step,
    original_shape: &Shape,
    derived: &BTreeMap<String, Expr>,
) -> Result<StepOutcome, Diagnostic> {
    let outcome = match &step.kind {
        StepKind::Rewrite {
            backward,
            rule,
            site,
            with,
        } => rewrite(
            env,
            expr,
            &RewriteRequest {
                rule,
                direction: Direction::from_backward(*backward),
                site,
                with,
                span: step.span,
            },
        )?,
        StepKind::Unfold { name, storage } => unfold(env, expr, name, storage.as_ref(), derived)?,
        StepKind::Inline(name) => inline(env, expr, name)?,
        StepKind::Simpl => simpl(env, expr),
        StepKind::SimplGuard => simpl_guard(env, expr),
        StepKind::Window { var, dims } => window(env, expr, var, dims, step.span)?,
        StepKind::Check => check(expr),
        StepKind::Directive { name, .. } => {
            return Err(Diagnostic::error(
                "E0815",
                format!(
                    "`{}` expands into several steps; run it with `run_step_expanded`",
                    name.name
                ),
            )
            .at(name.span, "directive"));
        }
        StepKind::Specialize { .. } => {
            return Err(Diagnostic::error(
                "E0815",
                "`specialize` expands into several steps; run it with `run_step_expanded`",
            )
            .at(step.span, "directive"));
        }
    };
    // Terms stay small enough that every later pass (and the checker) is quick: a
    // derivation that duplicates a term again and again is stopped here.
    let size = term_size(&outcome.expr);
    if size > MAX_TERM_SIZE {
        return Err(Diagnostic::error(
            "E0848",
            format!("the step would make the program {size} nodes large (the limit is {MAX_TERM_SIZE})"),
        )
        .at(step.span, "this step")
        .with_note("steps that duplicate terms (`unfold_let` of a value used many times, `inline`) can grow a program exponentially")
        .with_help("bind the duplicated value with a `let` instead of inlining it"));
    }
    // The shape discipline: the result is well-shaped under the declarations alone,
    // and the rewritten term keeps its shape (for `simpl`, every node does).
    let step_name = step_word(step);
    let mut known = std::collections::HashSet::new();
    let site = match &step.kind {
        StepKind::Rewrite { .. } => Some((outcome.record.path.clone(), false)),
        StepKind::Simpl | StepKind::SimplGuard => Some((Vec::new(), true)),
        _ => None,
    };
    if let Some((path, deep)) = site {
        let ctx = context_at(env.shapes, expr, &path);
        if let (Some(before), Some(after)) = (node_at(expr, &path), node_at(&outcome.expr, &path)) {
            crate::well_shaped::check_preserved(
                env.program,
                env.shapes,
                env.solver,
                &ctx.lets,
                before,
                after,
                deep,
                step.span,
                &step_name,
            )?;
        }
    }
    crate::well_shaped::check_step(
        env.program,
        env.shapes,
        env.solver,
        &outcome.expr,
        step.span,
        &step_name,
        &mut known,
    )?;
    // Every step must preserve the shape (a cheap, independent sanity check).
    let shape = shapes::infer(env.shapes, &outcome.expr).map_err(|d| {
        Diagnostic::error("E0816", "the step produced an ill-shaped program")
            .at(step.span, "this step")
            .with_note(d.message)
    })?;
    if shape.len() != original_shape.len()
        || !shape
            .iter()
            .zip(original_shape)
            .all(|(a, b)| poly::same(a, b))
    {
        let facts = env.facts(&Context::default());
        let all_proved = shape.len() == original_shape.len()
            && shape.iter().zip(original_shape).all(|(a, b)| {
                env.solver
                    .prove(&facts, &Pred::cmp(CmpOp::Eq, a.clone(), b.clone()))
                    == Verdict::Proved
            });
        if !all_proved {
            return Err(
                Diagnostic::error("E0817", "the step changed the shape of the program")
                    .at(step.span, "this step")
                    .with_note(format!(
                        "before: {}, after: {}",
                        show_shape(original_shape),
                        show_shape(&shape)
                    )),
            );
        }
    }
    Ok(outcome)
}
