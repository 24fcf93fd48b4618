//! Shared by the integration tests: replaying a program's derivations with the standard
//! library, as `atl derive` does.

use atl_lang::Checked;
use atl_lang::diag::Diagnostic;
use atl_rewrites::{Derivation, Env, Library, run_derivations};
use atl_solver::Solver;

/// Checks `source` with the front end (panicking if it fails) and runs its derivations.
pub fn derive(source: &str) -> (Checked, Vec<Derivation>, Vec<Diagnostic>) {
    let (library, diags) = Library::standard();
    assert!(diags.is_empty(), "the standard library loads");
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("front end: {diags:?}\n{source}"));
    let solver = Solver::new();
    let env = Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver: &solver,
    };
    let (derivations, diags) = run_derivations(&env);
    (checked, derivations, diags)
}

/// Asserts that `result` evaluates to the same tensor as definition `spec` of the
/// checked program, at each `(M, N, K)` of `cases`, with random `A: [M, K]` and
/// `B: [K, N]` (the matmul programs of the directive tests).
#[allow(dead_code)]
pub fn assert_matmul_values(
    checked: &Checked,
    spec: &str,
    result: &atl_lang::ir::Expr,
    cases: &[(i64, i64, i64)],
) {
    use std::collections::BTreeMap;

    use atl_lang::interp::{EvalOptions, Tensor, eval_expr};
    let spec = &checked.program.def(spec).expect("the specification").body;
    let options = EvalOptions::default();
    for &(m, n, k) in cases {
        let sizes: BTreeMap<String, i64> = [("M", m), ("N", n), ("K", k)]
            .iter()
            .map(|(s, v)| (s.to_string(), *v))
            .collect();
        let inputs: BTreeMap<String, Tensor> = [
            (
                "A".to_string(),
                Tensor::random(vec![m as usize, k as usize], 3),
            ),
            (
                "B".to_string(),
                Tensor::random(vec![k as usize, n as usize], 4),
            ),
        ]
        .into_iter()
        .collect();
        let want = eval_expr(&checked.program, spec, &sizes, &inputs, &options).unwrap();
        let got = eval_expr(&checked.program, result, &sizes, &inputs, &options).unwrap();
        assert_eq!(got, want, "M={m}, N={n}, K={k}");
    }
}

/// Panics unless each derivation of `names` (every derivation of `source` when `names`
/// is empty), and every derivation it starts from, uses only directives, loop
/// annotations and the argument-free tactics (`simpl`, `simpl_guard`, `check`), and the
/// file declares no user rule. `what` names the source in messages.
#[allow(dead_code)]
pub fn assert_directive_only(what: &str, source: &str, names: &[&str]) {
    use atl_lang::ast::{Item, Step, StepKind};
    use std::collections::BTreeMap;
    let (parsed, diags) = atl_lang::parser::parse_file(source);
    assert!(diags.is_empty(), "{what}: {diags:?}");
    let mut derives: BTreeMap<&str, (&str, &[Step])> = BTreeMap::new();
    for item in &parsed.items {
        match item {
            Item::Derive {
                name, from, steps, ..
            } => {
                derives.insert(&name.name, (&from.name, steps));
            }
            Item::Rule(r) => panic!("{what}: declares the user rule `{}`", r.name.name),
            _ => {}
        }
    }
    let wanted: Vec<&str> = if names.is_empty() {
        derives.keys().copied().collect()
    } else {
        names.to_vec()
    };
    assert!(!wanted.is_empty(), "{what}: nothing to check");
    for name in wanted {
        let mut current = name;
        while let Some((from, steps)) = derives.get(current) {
            for step in *steps {
                let text = &source[step.span.range()];
                let allowed = matches!(
                    step.kind,
                    StepKind::Directive { .. }
                        | StepKind::Specialize { .. }
                        | StepKind::Simpl
                        | StepKind::SimplGuard
                        | StepKind::Check
                );
                assert!(
                    allowed,
                    "{what}: `{name}` (through `{current}`) has the step `{text}`, which is not a directive"
                );
            }
            current = from;
        }
        assert!(current != name, "{what}: no derivation named `{name}`");
    }
}

/// The names of the rules `derivation`'s steps applied, in order (directives' expansions
/// included).
#[allow(dead_code)]
pub fn rules_applied(derivation: &Derivation) -> Vec<&str> {
    derivation
        .steps
        .iter()
        .filter_map(|s| s.rule.as_deref())
        .collect()
}
