//! The derivation driver: runs the `derive` blocks of a program step by step, expanding
//! directives ([`crate::directives`]) and running every other step with the primitive
//! step layer ([`crate::step`]), checks the loop hints of each derivation, and adds the
//! results to the program as definitions. It sits above both: neither calls back here.

use std::collections::BTreeMap;

use atl_lang::ast::{self, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::ir::{self, Expr, ExprKind, LoopHint, Program, StorageHint};
use atl_lang::shapes::{self, Shape, ShapeEnv};
use atl_lang::span::Span;

use crate::context::{Env, StepOutcome};
use crate::directives::hints::check_hints;
use crate::directives::vector_width::second_vector_width;
use crate::directives::{apply_directive, check_declared_exact, declared_exact, specialize};
use crate::record::StepRecord;
use crate::rule::Grade;
use crate::step::run_step;

/// The result of running a derivation.
#[derive(Clone, Debug)]
pub struct Derivation {
    pub name: String,
    pub from: String,
    pub initial: Expr,
    pub result: Expr,
    pub steps: Vec<StepRecord>,
}

impl Derivation {
    /// The loop hints of its annotation steps (`parallel x`, …), in order. A
    /// derivation's hints are its own: one `from` another derivation does not inherit
    /// the base's (its steps may rename or remove those loops).
    pub fn hints(&self) -> Vec<LoopHint> {
        crate::record::hints_of(&self.steps)
    }

    /// The SIMD width its `vector_width` step asks for, if it has one (a derivation has
    /// at most one: a second is refused).
    pub fn vector_width(&self) -> Option<u32> {
        self.steps.iter().find_map(|s| s.vector_width)
    }

    /// The stages its `store_root`/`store_at` steps store apart from their computation,
    /// in order. Like its hints, a derivation's own (not its base's).
    pub fn storage(&self) -> Vec<StorageHint> {
        self.steps
            .iter()
            .filter_map(|s| s.storage.clone())
            .collect()
    }

    /// The weakest grade of the derivation's steps.
    pub fn grade(&self) -> Grade {
        if self.steps.iter().any(|s| s.grade == Grade::Real) {
            Grade::Real
        } else {
            Grade::Exact
        }
    }
}

/// Runs one step, expanding scheduling directives into their rule steps (one outcome
/// per rule application).
pub fn run_step_expanded(
    env: &Env<'_>,
    expr: &Expr,
    step: &ast::Step,
    original_shape: &Shape,
    derived: &BTreeMap<String, Expr>,
) -> Result<Vec<StepOutcome>, Diagnostic> {
    if expr.as_case_split().is_some() && !matches!(step.kind, StepKind::Specialize { .. }) {
        // After `specialize`, the version a loop name means would be ambiguous.
        return Err(Diagnostic::error(
            "E0857",
            "the program is specialized: `specialize` is the last step of a derivation",
        )
        .at(step.span, "a step after `specialize`")
        .with_help("schedule the general version before `specialize` (both versions start from it, as in Halide) and the specialized one inside its block"));
    }
    expand_step(env, expr, step, original_shape, derived)
}

/// [`run_step_expanded`] without the refusal of steps after `specialize` (the steps
/// of its own block run here).
pub(crate) fn expand_step(
    env: &Env<'_>,
    expr: &Expr,
    step: &ast::Step,
    original_shape: &Shape,
    derived: &BTreeMap<String, Expr>,
) -> Result<Vec<StepOutcome>, Diagnostic> {
    match &step.kind {
        StepKind::Directive { name, args } => {
            apply_directive(env, expr, name, args, step.span, original_shape, derived)
        }
        StepKind::Specialize { cond, steps } => {
            specialize(env, expr, cond, steps, step.span, original_shape, derived)
        }
        _ => run_step(env, expr, step, original_shape, derived).map(|o| vec![o]),
    }
}

/// The `grade exact` rule over steps that have run, each with its expansion
/// (`steps[k]` expanded into `expansions[k]`, the first starting from `initial`): when
/// one of the steps declares `grade exact`, the first step whose expansion
/// reassociates is refused with E0855, the diagnostic [`run_derivations`] gives for it
/// (at that step, the declaration as a secondary label). For a driver that takes the
/// steps one at a time (the REPL): a declaration typed after a reassociating step
/// refuses that step, as a file with the declaration anywhere in its derivation does.
pub fn check_exact_steps(
    program: &Program,
    initial: &Expr,
    steps: &[ast::Step],
    expansions: &[&[StepOutcome]],
) -> Result<(), Diagnostic> {
    let Some(declaration) = declared_exact(steps) else {
        return Ok(());
    };
    let mut before = initial;
    for (step, outcomes) in steps.iter().zip(expansions) {
        check_declared_exact(program, before, step, outcomes, declaration)?;
        if let Some(last) = outcomes.last() {
            before = &last.expr;
        }
    }
    Ok(())
}

/// The written definitions `e` uses, directly or through other definitions (each
/// once).
fn used_definitions<'p>(program: &'p Program, e: &Expr) -> Vec<&'p ir::Def> {
    let mut out: Vec<&ir::Def> = Vec::new();
    let mut scanned = 0;
    let visit = |cur: &Expr, out: &mut Vec<&'p ir::Def>| {
        cur.walk(&mut |n| {
            if let ExprKind::DefRef(name) = &n.kind
                && let Some(def) = program.def(name)
                && !out.iter().any(|d| d.name == def.name)
            {
                out.push(def);
            }
        });
    };
    visit(e, &mut out);
    while scanned < out.len() {
        let body = &out[scanned].body;
        scanned += 1;
        visit(body, &mut out);
    }
    out
}

/// Runs every derivation of a program in order. Returns the derivations that succeeded
/// and one diagnostic per failing derivation (its first failing step).
pub fn run_derivations(env: &Env<'_>) -> (Vec<Derivation>, Vec<Diagnostic>) {
    let mut done: Vec<Derivation> = Vec::new();
    let mut derived: BTreeMap<String, Expr> = BTreeMap::new();
    let mut diags = Vec::new();
    for d in &env.program.derives {
        let initial = match derived
            .get(&d.from)
            .cloned()
            .or_else(|| env.program.def(&d.from).map(|x| x.body.clone()))
        {
            Some(e) => e,
            None => continue, // its base failed; already reported
        };
        let Ok(original_shape) = shapes::infer(env.shapes, &initial) else {
            continue;
        };
        // The starting point must itself be well-shaped (a written definition is
        // checked by the front end's caller too; this keeps the engine's promise on
        // its own).
        let starting_point = std::iter::once(&initial).chain(
            used_definitions(env.program, &initial)
                .into_iter()
                .map(|def| &def.body),
        );
        if let Some(diag) = starting_point
            .filter_map(|e| {
                crate::well_shaped::check_expr(env.program, env.shapes, env.solver, e).err()
            })
            .next()
        {
            diags.push(diag.with_secondary(d.name_span, format!("in derivation `{}`", d.name)));
            continue;
        }
        let mut expr = initial.clone();
        let mut steps: Vec<StepRecord> = Vec::new();
        let mut hints: Vec<LoopHint> = Vec::new();
        let mut failed = false;
        // `grade exact` anywhere in the derivation: no step of it may reassociate, and
        // neither may the derivations it starts from (bit-identical to the
        // specification, not only to its base).
        let exact = declared_exact(&d.steps);
        if let Some(declaration) = exact
            && let Some(base) = real_base(&done, &d.from)
        {
            diags.push(
                exact_from_real_base(&format!("derivation `{}`", d.name), &base, declaration)
                    .with_secondary(d.name_span, format!("in derivation `{}`", d.name)),
            );
            continue;
        }
        for step in &d.steps {
            let result = run_step_expanded(env, &expr, step, &original_shape, &derived).and_then(
                |outcomes| {
                    if let Some(declaration) = exact {
                        check_declared_exact(env.program, &expr, step, &outcomes, declaration)?;
                    }
                    // An annotation must also agree with the hints before it (one
                    // parallel loop per nest, compatible hints on one loop).
                    for o in &outcomes {
                        if crate::record::add_hints(&mut hints, &o.record) {
                            check_hints(env.shapes, &o.expr, &hints)?;
                        }
                        if o.record.vector_width.is_some()
                            && let Some(earlier) = steps.iter().find_map(|s| s.vector_width)
                        {
                            return Err(second_vector_width(earlier, step.span));
                        }
                    }
                    Ok(outcomes)
                },
            );
            match result {
                Ok(outcomes) => {
                    for outcome in outcomes {
                        expr = outcome.expr;
                        steps.push(outcome.record);
                    }
                }
                Err(diag) => {
                    diags.push(
                        diag.with_secondary(d.name_span, format!("in derivation `{}`", d.name)),
                    );
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            continue;
        }
        // Steps after an annotation may have removed or changed its loop: the hints
        // must still hold of the result, which is what lowering sees.
        if let Err(diag) = check_hints(env.shapes, &expr, &hints) {
            diags.push(
                diag.with_note("a step after the annotation changed its loop; annotate at the end of the derivation")
                    .with_secondary(d.name_span, format!("in derivation `{}`", d.name)),
            );
            continue;
        }
        derived.insert(d.name.clone(), expr.clone());
        done.push(Derivation {
            name: d.name.clone(),
            from: d.from.clone(),
            initial,
            result: expr,
            steps,
        });
    }
    (done, diags)
}

/// E0855 for a derivation declared `grade exact` (at `declaration`) that starts from
/// `base`, a derivation graded `real`: its result could not be bit-identical to the
/// specification. `derivation` names it for the user (`derivation `d``).
pub fn exact_from_real_base(derivation: &str, base: &str, declaration: Span) -> Diagnostic {
    Diagnostic::error(
        "E0855",
        format!(
            "{derivation} is declared `grade exact`, but it starts from `{base}`, which is graded `real`"
        ),
    )
    .at(declaration, "declared here")
    .with_help(format!(
        "start from an exact derivation or the specification, or declare `grade exact` in `{base}` too to find its reassociating step"
    ))
}

/// The first derivation graded `real` on the chain of bases from `from` (a derivation
/// `from` another starts from that one's result; `from` itself first).
pub fn real_base(done: &[Derivation], from: &str) -> Option<String> {
    let mut cur = from;
    // Each base was derived before the derivation that uses it: the chain is finite.
    for _ in 0..=done.len() {
        let base = done.iter().find(|x| x.name == cur)?;
        if base.grade() == Grade::Real {
            return Some(base.name.clone());
        }
        cur = &base.from;
    }
    None
}

/// The program with every successful derivation added as a definition (so that
/// `--def NAME` finds it) and the shape environment extended accordingly.
pub fn with_derived(
    program: &Program,
    shapes_env: &ShapeEnv,
    derivations: &[Derivation],
) -> (Program, ShapeEnv) {
    let mut p = program.clone();
    let mut env = shapes_env.clone();
    for d in derivations {
        let span = program
            .derive(&d.name)
            .map(|x| x.name_span)
            .unwrap_or_default();
        if let Ok(s) = shapes::infer(&env, &d.result) {
            env.globals.insert(d.name.clone(), s);
        }
        p.defs.push(ir::Def {
            name: d.name.clone(),
            name_span: span,
            body: d.result.clone(),
            span,
            hints: d.hints(),
            vector_width: d.vector_width(),
            storage: d.storage(),
        });
    }
    (p, env)
}
