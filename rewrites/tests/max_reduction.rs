//! Max-reductions (`max k < m: e`) under rules, tactics and directives: nothing that
//! holds of a `sum` may be applied to a `max` (a `max` is not a sum, its empty value is
//! `-inf`, not 0, and the zero terms of a guard take part in it). Each derivation here
//! must be refused with the code given; the accepted ones (a stage with a max moved by
//! `compute_at`, a false guard inside a max simplified to the value 0) evaluate to
//! their specification's values.

mod common;

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_expr};

const HEAD: &str = "size n
input f : [n]
input g : [n, n]
";

/// The codes of the diagnostics of the derivation `d` of `HEAD + body`; the
/// derivation must be refused.
fn refused(body: &str) -> Vec<String> {
    let source = format!("{HEAD}{body}");
    let (_, derivations, diags) = common::derive(&source);
    assert!(derivations.is_empty(), "accepted:\n{source}");
    assert!(!diags.is_empty(), "no diagnostic:\n{source}");
    diags.into_iter().map(|d| d.code.to_string()).collect()
}

fn assert_refused(body: &str, code: &str) {
    let codes = refused(body);
    assert!(codes.iter().any(|c| c == code), "{codes:?} for\n{body}");
}

#[test]
fn sum_rules_do_not_apply_to_a_max() {
    // Exchanging two sums (graded `real`) is not an exchange of two maxima.
    assert_refused(
        "def d = max i < n: max j < n: g[i, j]
derive x from d {
  rw sum_swap
}
",
        "E0806",
    );
    // Narrowing a sum's range to where a guard holds drops zero terms; a max of a row
    // of negative values and those zeros is 0, not the row's maximum.
    assert_refused(
        "def d = max i < n: [i < 2] * f[i]
derive x from d {
  rw sum_guard_hi
}
",
        "E0806",
    );
    assert_refused(
        "def d = max i < n: [i < 2] * f[i]
derive x from d {
  rw guard_lift_sum
}
",
        "E0806",
    );
    // `2 * max` is not `max` of doubled values by the sum rule (true for 2, false for
    // -2; the rule is about sums anyway).
    assert_refused(
        "def d = 2 * max i < n: f[i]
derive x from d {
  rw mul_sum_l
}
",
        "E0806",
    );
    assert_refused(
        "def d = gen j < n: max i < n: g[i, j]
derive x from d {
  rw gen_sum
}
",
        "E0806",
    );
}

#[test]
fn directives_do_not_treat_a_max_as_a_loop_they_can_schedule() {
    // A max loop cannot be reordered, fused, parallelized or vectorized: it is not
    // among the loops those directives name.
    for step in [
        "parallel i",
        "vectorize i",
        "unroll i",
        "reorder j, i",
        "fuse j, i into t",
    ] {
        assert_refused(
            &format!(
                "def d = gen j < n: max i < n: g[j, i]
derive x from d {{
  {step}
}}
"
            ),
            "E0821",
        );
    }
    // It can be split, but only into full tiles (tests/max_schedule.rs): `n` is not
    // provably even, and a guard cannot pad a maximum.
    assert_refused(
        "def d = gen j < n: max i < n: g[j, i]
derive x from d {
  split i by 2 into io, ii
}
",
        "E0823",
    );
    // A gen whose body contains a max-reduction inside other code, or one whose body
    // has a loop, is not vectorized (a gen whose body is a max of straight-line code,
    // the partial maxima of `rfactor`, is: tests/max_schedule.rs).
    assert_refused(
        "def d = gen j < n: 1 + max i < n: g[j, i]
derive x from d {
  vectorize j
}
",
        "E0841",
    );
    assert_refused(
        "def d = gen j < n: max i < n: sum k < n: g[j, k] * g[k, i]
derive x from d {
  vectorize j
}
",
        "E0841",
    );
    // No rule lifts a stage out of a max-reduction's body.
    assert_refused(
        "def d = max i < n: let y = f[0] * 2 in y + f[i]
derive x from d {
  compute_root y
}
",
        "E0827",
    );
}

#[test]
fn a_user_rule_turning_a_max_into_a_sum_is_refused() {
    // Its example holds (a max and a sum of one zero are both 0), so it is the bounded
    // checker, evaluating both sides on random instances, that refuses it.
    let source = format!(
        "{HEAD}# max_as_sum: a maximum is a sum (wrong)
rule max_as_sum: max ?i < ?n: ?e => sum ?i < ?n: ?e
  if scalar: shape(?e) = []
  grade: exact
  example: max i < 1: 0 => sum i < 1: 0
def d = max i < n: f[i]
"
    );
    let (lib, diags) = atl_rewrites::Library::standard();
    assert!(diags.is_empty());
    let (checked, diags) = atl_lang::check_source(&source);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let solver = atl_solver::Solver::new();
    let (with_user, diags) = atl_rewrites::user_rules::library_with_user_rules(
        &lib,
        &checked.program,
        "max.atl",
        &solver,
    );
    let codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
    assert!(codes.contains(&"E0717"), "{codes:?}");
    assert_eq!(
        with_user.rules().len(),
        lib.rules().len(),
        "the rule was admitted"
    );
}

fn eval(checked: &atl_lang::Checked, e: &atl_lang::ir::Expr, n: i64, seed: u64) -> Vec<f64> {
    let sizes: BTreeMap<String, i64> = [("n".to_string(), n)].into_iter().collect();
    let inputs: BTreeMap<String, Tensor> = [
        ("f".to_string(), Tensor::random(vec![n as usize], seed)),
        (
            "g".to_string(),
            Tensor::random(vec![n as usize, n as usize], seed + 1),
        ),
    ]
    .into_iter()
    .collect();
    let out = eval_expr(
        &checked.program,
        e,
        &sizes,
        &inputs,
        &EvalOptions::default(),
    )
    .expect("evaluates");
    out.data
}

#[test]
fn accepted_steps_on_maxima_keep_the_values() {
    let source = format!(
        "{HEAD}def d = gen j < n: let m = max i < n: g[j, i] - 10 in let s = sum i < n: g[j, i] - m in gen k < n: ([k < 0] * f[k]) + s
def e = max i < n: [i < 0] * f[i] - 5
derive moved from d {{
  compute_at m at j
  compute_at s at j
}}
derive guards from e {{
  simpl_guard
}}
"
    );
    let (checked, derivations, diags) = common::derive(&source);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(derivations.len(), 2);
    for (d, spec) in derivations.iter().zip(["d", "e"]) {
        let spec = &checked.program.def(spec).expect("spec").body;
        for n in [1, 3, 5] {
            assert_eq!(
                eval(&checked, &d.result, n, 7),
                eval(&checked, spec, n, 7),
                "{} at n = {n}",
                d.name
            );
        }
    }
    // The false guard became the value 0, which the max still sees: every term is
    // 0 - 5, so the max is -5 (and the guard was not taken for a missing term).
    let e = &derivations[1].result;
    assert_eq!(eval(&checked, e, 4, 9), vec![-5.0]);
}
