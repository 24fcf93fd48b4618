//! Rule-file tests: every built-in index rule is proved sound by z3 under its
//! conditions and strictly decreases the documented reduction order; wrong rules are
//! caught; malformed files are reported with line numbers.

use atl_solver::rules::{self, RuleSet, parse_rules, prove_rule};
use atl_solver::{Solver, SolverConfig};

fn rule_prover() -> Solver {
    // Rule statements are non-linear in their metavariables: give z3 room.
    Solver::with_config(SolverConfig {
        rlimit: 1_000_000,
        ..SolverConfig::default()
    })
}

#[test]
fn builtin_rules_parse_and_round_trip() {
    let set = RuleSet::builtin();
    assert!(set.rules.len() >= 25, "{} rules", set.rules.len());
    // Printing a rule and parsing it again gives the same rule (minus position/doc).
    for r in &set.rules {
        let again = parse_rules(&r.to_string()).unwrap_or_else(|e| panic!("{r}: {e}"));
        let again = &again.rules[0];
        assert_eq!(
            (
                &again.lhs,
                &again.rhs,
                &again.folds,
                &again.conditions,
                &again.hints
            ),
            (&r.lhs, &r.rhs, &r.folds, &r.conditions, &r.hints),
            "{r}"
        );
    }
    assert!(set.get("div_mul_add").is_some_and(|r| !r.doc.is_empty()));
}

#[test]
fn every_rule_is_proved_by_z3() {
    let solver = rule_prover();
    let mut failures = Vec::new();
    for r in &RuleSet::builtin().rules {
        if let Err(e) = prove_rule(r, &solver) {
            failures.push(format!("{}: {e}", r.name));
        }
    }
    assert!(
        failures.is_empty(),
        "unproved rules:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_rule_decreases_the_reduction_order() {
    for r in &RuleSet::builtin().rules {
        r.check_orientation().unwrap_or_else(|e| panic!("{r}: {e}"));
        assert!(r.min_decrease() > 0, "{r}");
    }
}

#[test]
fn weight_is_the_documented_interpretation() {
    let w = |s: &str| rules::weight(&atl_solver::syntax::parse_index(s).unwrap());
    assert_eq!(w("x"), 1);
    assert_eq!(w("x + 1"), 3);
    assert_eq!(w("min(x, y)"), 3);
    assert_eq!(w("x / 8"), 4); // 2*1 + 1 + 1
    assert_eq!(w("(x * 8 + y) / 8"), 12);
    assert_eq!(w("x + y / 8"), 6);
}

#[test]
fn orientation_rejects_rules_that_could_loop_or_grow() {
    let set = parse_rules(
        "swap: ?x + ?y => ?y + ?x\n\
         dup: ?x * 2 => ?x + ?x\n\
         grow: ?x / ?y => (?x + 0) / ?y\n\
         ok: ?x * 1 => ?x\n",
    )
    .unwrap();
    assert!(set.get("swap").unwrap().check_orientation().is_err());
    let dup = set.get("dup").unwrap().check_orientation().unwrap_err();
    assert!(dup.contains("?x"), "{dup}");
    assert!(set.get("grow").unwrap().check_orientation().is_err());
    assert!(set.get("ok").unwrap().check_orientation().is_ok());
}

#[test]
fn wrong_rules_are_refuted() {
    // The wrong rules of the TRS paper (chapter 3), as rule-file entries.
    let set = parse_rules(
        "min_sub_wrong: min(?x - ?y, ?x - ?z) => ?x - min(?y, ?z)\n\
         round_wrong: (?x + ?c0) / ?c1 * ?c1 - ?x => ?x % ?c1  if ?c1 > 0, ?c0 + 1 == ?c1\n\
         round_fixed: (?x + 2) / 3 * 3 - ?x => -?x % 3\n\
         div_by_zero_wrong: (?x + ?y) / ?x => ?y / ?x + 1\n\
         unguarded: ?x * ?c0 / ?c1 => ?x / fold(?c1 / ?c0)\n",
    )
    .unwrap();
    let solver = rule_prover();
    for name in [
        "min_sub_wrong",
        "round_wrong",
        "div_by_zero_wrong",
        "unguarded",
    ] {
        let err = prove_rule(set.get(name).unwrap(), &solver).unwrap_err();
        assert!(err.contains("refuted"), "{name}: {err}");
    }
    assert!(prove_rule(set.get("round_fixed").unwrap(), &solver).is_ok());
}

#[test]
fn malformed_rule_files_are_reported_with_lines() {
    let cases = [
        ("ok: ?x / 1 => ?x\nbroken ?x => ?x\n", 2, "expected"),
        ("a: ?x + => ?x\n", 1, "left-hand side"),
        ("a: ?x / 2 => ?y\n", 1, "?y does not occur"),
        ("a: ?x / 2 => fold(?x)\n", 1, "constant metavariables"),
        ("a: x / 2 => 0\n", 1, "metavariables"),
        ("a: ?x / 1 => ?x\na: ?x % 1 => 0\n", 2, "duplicate"),
        ("  ?x\n", 1, "indented line"),
    ];
    for (src, line, msg) in cases {
        let e = parse_rules(src).unwrap_err();
        assert_eq!(e.line, line, "{src}: {e}");
        assert!(e.message.contains(msg), "{src}: {e}");
    }
    // Continuation lines and comments.
    let set =
        parse_rules("# doc line\nr: ?x / ?y => 0\n    if 0 <= ?x, ?x < ?y  # trailing\n").unwrap();
    let r = set.get("r").unwrap();
    assert_eq!(r.conditions.len(), 2);
    assert_eq!(r.doc, "doc line");
    assert_eq!(r.line, 2);
}
