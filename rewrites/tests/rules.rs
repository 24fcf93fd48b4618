//! The rule library's own tests: every rule file loads without diagnostics, and every
//! rule's examples apply (through the real engine, as a one-step derivation), give the
//! stated result up to alpha-equivalence, and agree with the start under the reference
//! interpreter — bit for bit for `exact` rules, within rounding for `real` ones.

use std::collections::BTreeMap;

use atl_lang::diag::render_to_string;
use atl_lang::interp::{EvalOptions, Tensor, eval_def};
use atl_lang::ir::alpha_eq;
use atl_rewrites::rule::{EXAMPLE_PRELUDE, Grade};
use atl_rewrites::{Env, Library, run_derivations, with_derived};
use atl_solver::Solver;

fn library() -> Library {
    let (lib, diags) = Library::standard();
    let shown: Vec<String> = diags
        .iter()
        .map(|(file, d)| {
            let src = atl_rewrites::library::RULE_FILES
                .iter()
                .find(|(n, _)| n == file)
                .map(|(_, s)| *s)
                .unwrap_or("");
            render_to_string(std::slice::from_ref(d), file, src)
        })
        .collect();
    assert!(
        diags.is_empty(),
        "rule files have errors:\n{}",
        shown.join("\n")
    );
    lib
}

#[test]
fn the_library_loads_cleanly_and_is_complete() {
    let lib = library();
    assert!(lib.rules().len() >= 60, "only {} rules", lib.rules().len());
    for r in lib.rules() {
        assert!(!r.doc.is_empty(), "{} has no equation comment", r.name);
        assert!(!r.examples.is_empty(), "{} has no example", r.name);
    }
}

fn inputs_for(
    program: &atl_lang::ir::Program,
    sizes: &BTreeMap<String, i64>,
    seed: u64,
) -> BTreeMap<String, Tensor> {
    let shapes = atl_lang::interp::input_shapes(program, sizes, &EvalOptions::default())
        .expect("input shapes");
    shapes
        .into_iter()
        .enumerate()
        .map(|(k, (name, shape))| {
            (
                name.clone(),
                atl_lang::interp::random_input_named(
                    program,
                    &name,
                    shape,
                    sizes,
                    seed * 31 + k as u64,
                ),
            )
        })
        .collect()
}

#[test]
fn every_example_applies_and_preserves_meaning() {
    let lib = library();
    let solver = Solver::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for rule in lib.rules() {
        for ex in &rule.examples {
            let with = if ex.with.is_empty() {
                String::new()
            } else {
                format!(
                    " with {}",
                    ex.with
                        .iter()
                        .map(|(k, v)| format!("{k} := {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let source = format!(
                "{EXAMPLE_PRELUDE}def start = {}\ndef expected = {}\nderive applied from start {{\n  rw {}{with}\n}}\n",
                ex.start, ex.result, rule.name
            );
            let (checked_prog, diags) = atl_lang::check_source(&source);
            let Some(c) = checked_prog else {
                failures.push(format!(
                    "{} (line {}): example does not check:\n{}",
                    rule.origin,
                    ex.line,
                    render_to_string(&diags, "example", &source)
                ));
                continue;
            };
            let env = Env {
                program: &c.program,
                shapes: &c.shapes,
                library: &lib,
                solver: &solver,
            };
            let (derivations, diags) = run_derivations(&env);
            if !diags.is_empty() {
                failures.push(format!(
                    "{} (line {}): rule does not apply:\n{}",
                    rule.origin,
                    ex.line,
                    render_to_string(&diags, "example", &source)
                ));
                continue;
            }
            let applied = &derivations[0].result;
            let expected = &c.program.def("expected").expect("expected def").body;
            if !alpha_eq(applied, expected) {
                failures.push(format!(
                    "{} (line {}): got\n  {}\nexpected\n  {}",
                    rule.origin,
                    ex.line,
                    atl_lang::pretty::expr_to_string(applied, Default::default()),
                    atl_lang::pretty::expr_to_string(expected, Default::default())
                ));
                continue;
            }
            let (program, _) = with_derived(&c.program, &c.shapes, &derivations);
            for (n, m) in [(1, 1), (2, 3), (5, 4), (8, 2)] {
                let sizes: BTreeMap<String, i64> =
                    [("n".to_string(), n), ("m".to_string(), m)].into();
                let inputs = inputs_for(&program, &sizes, (n * 10 + m) as u64);
                let options = EvalOptions::default();
                let a = eval_def(&program, "start", &sizes, &inputs, &options)
                    .expect("start evaluates");
                let b = eval_def(&program, "applied", &sizes, &inputs, &options)
                    .expect("result evaluates");
                let same = a.shape == b.shape
                    && match rule.grade {
                        Grade::Exact => a
                            .data
                            .iter()
                            .zip(&b.data)
                            .all(|(x, y)| x.to_bits() == y.to_bits()),
                        Grade::Real => a
                            .data
                            .iter()
                            .zip(&b.data)
                            .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + x.abs())),
                    };
                if !same {
                    failures.push(format!(
                        "{} (line {}): start and result differ at n={n}, m={m}: {:?} vs {:?}",
                        rule.origin, ex.line, a, b
                    ));
                    break;
                }
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(checked >= 60, "only {checked} examples checked");
}

/// Bounded semantic testing with random instances: every rule must agree on every
/// instance the engine accepts, and must have at least one accepted instance.
#[test]
fn every_rule_agrees_on_random_instances() {
    use atl_rewrites::check::{RuleCheck, check_rule};
    let lib = library();
    let solver = Solver::new();
    let mut failures = Vec::new();
    let mut report = Vec::new();
    // `ATL_RULE_CHECK_ATTEMPTS` and `ATL_RULE_CHECK_SEED` scale the search up for a
    // deeper run than CI's default.
    let attempts: usize = std::env::var("ATL_RULE_CHECK_ATTEMPTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let seed: u64 = std::env::var("ATL_RULE_CHECK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for (k, rule) in lib.rules().iter().enumerate() {
        match check_rule(rule, &lib, &solver, attempts, seed * 1000 + k as u64) {
            RuleCheck::Passed { instances, tried } => {
                report.push(format!("{}: {instances}/{tried}", rule.name))
            }
            RuleCheck::NoInstance { tried } => failures.push(format!(
                "{}: no accepted instance in {tried} tries",
                rule.name
            )),
            RuleCheck::Failed {
                lhs,
                rhs,
                sizes,
                detail,
            } => failures.push(format!(
                "{}: WRONG at {sizes}\n  {lhs}\n  => {rhs}\n  {detail}",
                rule.name
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\npassed: {}",
        failures.join("\n"),
        report.join(", ")
    );
}
