//! The shape discipline (ARCHITECTURE.md): every extent of every term is provably
//! `>= 0`, every reshape amount provably in range, under the declarations alone (sizes
//! `>= 1` and the `assume`s), never under a guard's or a binder's facts.
//!
//! Why the declarations alone: a shape is observed wherever its term is, even where
//! the term's value is not (a guarded zero and an empty sum have their body's shape,
//! and `concat` offsets by it). Facts that hold only inside a guard or a range say
//! nothing there. With every extent non-negative, the interpreter's and Rocq's
//! semantics agree (no clamp of a negative length ever happens) and `WS` of
//! `proofs/rocq/Semantics.v` holds of every subterm.
//!
//! Written definitions and inputs are checked once ([`check_program`]); the engine
//! checks every step's result and that the rewritten term keeps its shape
//! ([`check_step`]).

use std::collections::HashSet;

use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, Pred};
use atl_lang::ir::{Expr, Program};
use atl_lang::poly::same;
use atl_lang::shapes::{self, Shape, ShapeEnv, ShapeObligation, show_shape};
use atl_lang::span::Span;
use atl_solver::{Facts, IndexArrayFacts, Solver, Verdict};

/// The facts every point of a program may use: the sizes (each `>= 1`), the
/// `assume`s and the declarations of its index arrays. Nothing else may establish a
/// shape (and shapes never read an index array).
pub fn declaration_facts(program: &Program) -> Facts {
    Facts {
        sizes: program.sizes.iter().map(|s| s.name.clone()).collect(),
        facts: program.assumes.iter().map(|a| a.pred.clone()).collect(),
        arrays: IndexArrayFacts::of_program(program),
    }
}

/// The first obligation the solver does not prove under the declarations, with the
/// verdict. `known` holds obligations already proved (by their text), which are skipped.
fn first_unproved(
    facts: &Facts,
    obligations: &[ShapeObligation],
    solver: &Solver,
    known: &mut HashSet<String>,
) -> Option<(ShapeObligation, Verdict)> {
    for o in obligations {
        let key = o.pred.to_string();
        if known.contains(&key) {
            continue;
        }
        match solver.prove(facts, &o.pred) {
            Verdict::Proved => {
                known.insert(key);
            }
            v => return Some((o.clone(), v)),
        }
    }
    None
}

fn why(v: &Verdict) -> String {
    match v {
        Verdict::Refuted(cex) => format!("it fails at {cex}"),
        Verdict::Unknown(reason) => format!("the solver could not prove it ({reason})"),
        Verdict::Proved => String::new(),
    }
}

/// Checks the inputs' extents and every written definition; one diagnostic (E0413)
/// per failing declaration or definition.
pub fn check_program(program: &Program, env: &ShapeEnv, solver: &Solver) -> Vec<Diagnostic> {
    let facts = declaration_facts(program);
    let mut known = HashSet::new();
    let mut diags = Vec::new();
    for o in shapes::input_obligations(program) {
        if let Some((o, v)) = first_unproved(&facts, &[o], solver, &mut known) {
            diags.push(program_error(&o, &v));
        }
    }
    for def in &program.defs {
        let Ok((_, obligations)) = shapes::infer_with_obligations(env, &mut Vec::new(), &def.body)
        else {
            continue; // reported by shape inference
        };
        if let Some((o, v)) = first_unproved(&facts, &obligations, solver, &mut known) {
            diags.push(program_error(&o, &v));
        }
    }
    diags
}

/// Checks one program (a derivation's starting point) like a written definition:
/// E0413 for the first obligation that is not proved under the declarations.
pub fn check_expr(
    program: &Program,
    env: &ShapeEnv,
    solver: &Solver,
    expr: &Expr,
) -> Result<(), Diagnostic> {
    let (_, obligations) = shapes::infer_with_obligations(env, &mut Vec::new(), expr)?;
    let facts = declaration_facts(program);
    match first_unproved(&facts, &obligations, solver, &mut HashSet::new()) {
        Some((o, v)) => Err(program_error(&o, &v)),
        None => Ok(()),
    }
}

fn program_error(o: &ShapeObligation, v: &Verdict) -> Diagnostic {
    Diagnostic::error(
        "E0413",
        format!("{} may be negative or out of range: `{}` is not guaranteed", o.what, o.pred),
    )
    .at(o.span, "its shape needs this for every allowed size")
    .with_note(format!(
        "{}; shapes may use only the declarations (sizes are at least 1, and the `assume`s), \
         not guards or enclosing ranges, because a shape is observed even where its value is not",
        why(v)
    ))
    .with_help("state the bound with an `assume` (e.g. `assume n >= 5`), or write the range with `max(…, 0)`")
}

/// Whether two shapes are equal for every size allowed by the declarations: equal
/// normal forms, or each pair of extents proved equal under the declarations.
pub fn shapes_equal_under(facts: &Facts, a: &Shape, b: &Shape, solver: &Solver) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            same(x, y)
                || solver
                    .prove(facts, &Pred::cmp(CmpOp::Eq, x.clone(), y.clone()))
                    .is_proved()
        })
}

/// Checks that a step kept the shape of the term it rewrote (`before` and `after`,
/// with the `let` shapes around them), under the declarations (E0845). With `deep`,
/// corresponding nodes are compared all the way down as long as the two trees have
/// the same construct (for `simpl`, which changes only index expressions).
#[allow(clippy::too_many_arguments)]
pub fn check_preserved(
    program: &Program,
    env: &ShapeEnv,
    solver: &Solver,
    lets: &[(String, Shape)],
    before: &Expr,
    after: &Expr,
    deep: bool,
    span: Span,
    step: &str,
) -> Result<(), Diagnostic> {
    let facts = declaration_facts(program);
    let mut lets = lets.to_vec();
    preserved_in(
        env, solver, &facts, &mut lets, before, after, deep, span, step,
    )
}

#[allow(clippy::too_many_arguments)]
fn preserved_in(
    env: &ShapeEnv,
    solver: &Solver,
    facts: &Facts,
    lets: &mut Vec<(String, Shape)>,
    before: &Expr,
    after: &Expr,
    deep: bool,
    span: Span,
    step: &str,
) -> Result<(), Diagnostic> {
    if before == after {
        return Ok(());
    }
    let s1 = shapes::infer_with_lets(env, &mut lets.clone(), before)?;
    let s2 = shapes::infer_with_lets(env, &mut lets.clone(), after)?;
    if !shapes_equal_under(facts, &s1, &s2, solver) {
        return Err(Diagnostic::error(
            "E0845",
            format!(
                "`{step}` would change the shape of `{}` from {} to {}",
                atl_lang::pretty::expr_to_string(before, Default::default()),
                show_shape(&s1),
                show_shape(&s2)
            ),
        )
        .at(span, "this step")
        .with_note(
            "the two shapes are not equal for every size the declarations allow; \
             facts of guards or enclosing ranges do not count, because a shape is \
             observed even where its value is not",
        ));
    }
    if !deep || std::mem::discriminant(&before.kind) != std::mem::discriminant(&after.kind) {
        return Ok(());
    }
    let (bc, ac) = (before.children(), after.children());
    if bc.len() != ac.len() {
        return Ok(());
    }
    for (k, (b, a)) in bc.into_iter().zip(ac).enumerate() {
        let pushed = match &before.kind {
            atl_lang::ir::ExprKind::Let { var, value, .. } if k == 1 => {
                let vs = shapes::infer_with_lets(env, &mut lets.clone(), value)?;
                lets.push((var.clone(), vs));
                true
            }
            _ => false,
        };
        let r = preserved_in(env, solver, facts, lets, b, a, deep, span, step);
        if pushed {
            lets.pop();
        }
        r?;
    }
    Ok(())
}

/// Checks a step's result: every obligation of `after` holds under the declarations
/// (E0844). `known` caches proved obligations across calls.
pub fn check_step(
    program: &Program,
    env: &ShapeEnv,
    solver: &Solver,
    after: &Expr,
    span: Span,
    step: &str,
    known: &mut HashSet<String>,
) -> Result<(), Diagnostic> {
    let facts = declaration_facts(program);
    let (_, obligations) = shapes::infer_with_obligations(env, &mut Vec::new(), after)?;
    if let Some((o, v)) = first_unproved(&facts, &obligations, solver, known) {
        return Err(Diagnostic::error(
            "E0844",
            format!(
                "`{step}` would make {} possibly negative or out of range: `{}` is not guaranteed",
                o.what, o.pred
            ),
        )
        .at(span, "this step")
        .with_note(format!(
            "{}; every extent must hold for every size the declarations allow \
             (guards and enclosing ranges do not count)",
            why(&v)
        ))
        .with_help("choose values that keep every range non-negative, or add an `assume`"));
    }
    Ok(())
}
