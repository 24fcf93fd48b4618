//! The bounded semantic check refutes deliberately wrong rules: every rule of
//! `test_data/wrong.rules` must be reported wrong, with the instance and sizes where
//! its two sides differ (a rule the check cannot refute would ship unnoticed).

use atl_rewrites::Library;
use atl_rewrites::check::{RuleCheck, check_rule};
use atl_solver::Solver;

#[test]
fn every_wrong_rule_is_refuted_with_a_counterexample() {
    let text = include_str!("../test_data/wrong.rules");
    let (wrong, diags) = Library::from_sources([("wrong.rules".to_string(), text.to_string())]);
    assert!(diags.is_empty(), "{diags:?}");
    assert!(wrong.rules().len() >= 10);
    // The engine applies the wrong rules from their own library.
    let solver = Solver::new();
    let mut not_refuted = Vec::new();
    for (k, rule) in wrong.rules().iter().enumerate() {
        match check_rule(rule, &wrong, &solver, 300, 17 + k as u64) {
            RuleCheck::Failed { sizes, detail, .. } => {
                assert!(!sizes.is_empty() && !detail.is_empty());
            }
            other => not_refuted.push(format!("{}: {other:?}", rule.name)),
        }
    }
    assert!(
        not_refuted.is_empty(),
        "not refuted:\n{}",
        not_refuted.join("\n")
    );
}

/// The necessity check: `get_gen` needs both its bounds (dropping either gives a
/// counterexample), while a condition that excludes nothing relevant is reported.
#[test]
fn necessity_check_tells_needed_from_unneeded_conditions() {
    use atl_rewrites::check::unnecessary_conditions;
    let (lib, _) = Library::standard();
    let solver = Solver::new();
    let get_gen = lib.get("get_gen").expect("library rule");
    assert_eq!(
        unnecessary_conditions(get_gen, &solver, 300, 3),
        Vec::<String>::new()
    );
    let text = "# add_comm_guarded: addition commutes (the condition is irrelevant).\nadd_comm_guarded: ?a + ?b => ?b + ?a\n  if silly: 0 <= 1\n  grade: exact\n  example: f => f\n";
    let (extra, diags) = Library::from_sources([("extra.rules".to_string(), text.to_string())]);
    assert!(diags.is_empty(), "{diags:?}");
    let rule = extra.get("add_comm_guarded").expect("loaded");
    assert_eq!(
        unnecessary_conditions(rule, &solver, 300, 3),
        vec!["silly".to_string()]
    );
}

/// A compound condition that mentions the equation's predicate metavariable
/// (`pad_halo1`'s `covers: !(0 <= ?a && ?a < ?n1) || ?p`) is parsed as written and is
/// needed: without it the rule drops guards that are stronger than the read's bounds,
/// which the bounded check refutes. The amounts and the bounds of the new read are not
/// needed for the equation (they keep the read inside the copy).
#[test]
fn a_condition_on_a_predicate_metavariable_is_needed() {
    use atl_rewrites::check::unnecessary_conditions;
    let (lib, _) = Library::standard();
    let solver = Solver::new();
    let rule = lib.get("pad_halo1").expect("library rule");
    let covers = rule
        .conditions
        .iter()
        .find(|c| c.name() == "covers")
        .expect("covers");
    assert_eq!(covers.text(), "!(0 <= ?a && ?a < ?n1) || ?p");
    assert_eq!(
        unnecessary_conditions(rule, &solver, 300, 3),
        ["before1", "after1", "lower1", "upper1"]
    );
}
