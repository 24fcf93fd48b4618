//! Tampered and unsound certificates are rejected, at the right step, for the right
//! reason.

mod common;

use atl_proofs::{VerifyError, verify, verify_with};
use atl_rewrites::Library;
use atl_rewrites::library::RULE_FILES;
use atl_solver::Solver;
use serde_json::{Value, json};

fn cert(dir: &str, name: &str) -> Value {
    serde_json::from_str(&common::example_certificate(dir, name)).expect("JSON")
}

fn check(v: &Value) -> Result<atl_proofs::VerifyReport, VerifyError> {
    verify(&v.to_string())
}

/// Asserts a rejection with `code` at `step` (1-based; `None`: the whole certificate)
/// whose message or notes mention `mention`.
fn rejected(v: &Value, code: &str, step: Option<usize>, mention: &str) -> VerifyError {
    let e = check(v).expect_err("the mutant must be rejected");
    assert_eq!((e.code, e.step), (code, step), "unexpected rejection: {e}");
    assert!(e.to_string().contains(mention), "`{mention}` not in: {e}");
    e
}

#[test]
fn originals_are_accepted() {
    for (dir, name) in [
        ("pipeline", "fused"),
        ("pipeline", "tiled"),
        ("blur", "strips_staged"),
    ] {
        let report = check(&cert(dir, name)).expect("accepted");
        assert_eq!(report.derivation, name);
    }
}

#[test]
fn wrong_path_is_rejected() {
    // Step 2 of `fused` pointed at the other get_gen redex: a valid site, but not the
    // recorded subterm.
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["path"] = json!([0, 1]);
    rejected(
        &c,
        "E1004",
        Some(2),
        "does not contain the recorded subterm",
    );
    // A path that leads nowhere.
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["path"] = json!([0, 0, 0, 0, 0, 0, 0]);
    rejected(&c, "E1004", Some(2), "leads nowhere");
}

#[test]
fn wrong_instantiation_is_rejected() {
    // A matched index metavariable.
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["instantiation"]["?k"] = json!("i");
    rejected(&c, "E1005", Some(2), "instantiation of `?k`");
    // A binder metavariable.
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["instantiation"]["?i"] = json!("j1");
    rejected(&c, "E1005", Some(2), "instantiation of `?i`");
    // An expression metavariable.
    let mut c = cert("pipeline", "fused");
    c["steps"][0]["instantiation"]["?v"] = json!("gen j < n: f[0]");
    rejected(&c, "E1005", Some(1), "instantiation of `?v`");
    // A parameter (`with k := 8`) changed without the rest: its side condition and the
    // rewritten subterm no longer agree with the record.
    let mut c = cert("pipeline", "tiled");
    c["steps"][0]["instantiation"]["?k"] = json!("4");
    rejected(&c, "E1007", Some(1), "positive: 1 <= 4");
    // A parameter changed consistently in its condition too: the program gives it away.
    let mut c = cert("pipeline", "tiled");
    c["steps"][0]["instantiation"]["?k"] = json!("4");
    c["steps"][0]["conditions"][0]["goal"] = json!("1 <= 4");
    rejected(&c, "E1008", Some(1), "after_site");
    // A parameter that mentions a name out of scope.
    let mut c = cert("pipeline", "tiled");
    c["steps"][0]["instantiation"]["?k"] = json!("i");
    rejected(&c, "E1005", Some(1), "not in scope");
}

#[test]
fn dropped_or_altered_side_condition_is_rejected() {
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["conditions"]
        .as_array_mut()
        .expect("list")
        .remove(1);
    rejected(&c, "E1007", Some(2), "upper: i - 1 < n` is missing");
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["conditions"][1]["goal"] = json!("i - 1 <= n");
    rejected(&c, "E1007", Some(2), "is missing");
    // The context it was proved under matters too.
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["conditions"][0]["context"]
        .as_array_mut()
        .expect("list")
        .push(json!("false"));
    rejected(&c, "E1007", Some(2), "lower: 0 <= i - 1` is missing");
    // A verdict other than `proved`.
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["conditions"][0]["verdict"] = json!("unknown: timeout");
    rejected(&c, "E1007", Some(2), "recorded as");
    // An extra, invented condition.
    let mut c = cert("pipeline", "fused");
    let extra = c["steps"][1]["conditions"][0].clone();
    c["steps"][1]["conditions"]
        .as_array_mut()
        .expect("list")
        .push(extra);
    rejected(&c, "E1007", Some(2), "which this step does not have");
    // `simpl_guard` lists one condition per removed guard.
    let mut c = cert("matmul", "tiled_tails");
    c["steps"][1]["conditions"] = json!([]);
    rejected(&c, "E1007", Some(2), "guard_true");
}

#[test]
fn swapped_rule_name_is_rejected() {
    // The name alone: the recorded statement is not that rule's.
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["rule"] = json!("get_gen_guard");
    rejected(
        &c,
        "E1003",
        Some(2),
        "not the rule this certificate was made with",
    );
    // Name, statement and command swapped together: the subterm is no instance.
    let (library, _) = Library::standard();
    let other = library.get("guard_true").expect("rule");
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["rule"] = json!("guard_true");
    c["steps"][1]["command"] = json!("rw guard_true");
    c["steps"][1]["rule_statement"] = json!(other.statement());
    rejected(
        &c,
        "E1005",
        Some(2),
        "not an instance of the rule's left side",
    );
    // An unknown rule.
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["rule"] = json!("no_such_rule");
    rejected(&c, "E1003", Some(2), "no rule `no_such_rule`");
    // The direction flipped.
    let mut c = cert("pipeline", "fused");
    c["steps"][1]["direction"] = json!("backward");
    rejected(&c, "E1010", Some(2), "rw<- get_gen");
}

#[test]
fn edited_programs_are_rejected() {
    // An intermediate program.
    let mut c = cert("pipeline", "fused");
    let after = c["steps"][0]["after"].as_str().expect("text").to_string();
    c["steps"][0]["after"] = json!(after.replace("f[j1]", "f[0]"));
    rejected(&c, "E1008", Some(1), "does not give the recorded program");
    // The final program.
    let mut c = cert("pipeline", "fused");
    c["result"] = json!("gen i < n: f[i]");
    rejected(&c, "E1008", None, "not the certificate's `result`");
    // The last step's program and the result edited together.
    let mut c = cert("pipeline", "fused");
    let edited = "gen i < n: [0 <= i - 1] * f[i - 1] + f[i] + f[i]";
    c["steps"][2]["after"] = json!(edited);
    c["result"] = json!(edited);
    rejected(&c, "E1008", Some(3), "does not give the recorded program");
    // The recorded subterm of a rule step.
    let mut c = cert("pipeline", "fused");
    c["steps"][2]["before"] = json!("(gen j1 < n: f[j1 + 1])[i]");
    rejected(&c, "E1004", Some(3), "recorded subterm");
    // The recorded result of the rule at the site.
    let mut c = cert("pipeline", "fused");
    c["steps"][2]["after_site"] = json!("f[i + 1]");
    rejected(&c, "E1008", Some(3), "after_site");
    // The initial program (then the first step no longer finds its subterm).
    let mut c = cert("pipeline", "tiled");
    c["initial"] = json!("gen i < n: f[i]");
    rejected(&c, "E1004", Some(1), "recorded subterm");
    // A `simpl` that changes an index into an unequal one.
    let mut c = cert("blur", "strips_staged");
    let after = c["steps"][7]["after"].as_str().expect("text").to_string();
    c["steps"][7]["after"] = json!(after.replace("bx[yi + 2, x1]", "bx[yi + 3, x1]"));
    c["steps"][7]["after_site"] = c["steps"][7]["after"].clone();
    rejected(&c, "E1006", Some(8), "counterexample");
    // The declarations.
    let mut c = cert("pipeline", "fused");
    c["declarations"] = json!("size n\ninput f : [n]\n");
    rejected(&c, "E1007", Some(2), "is missing");
}

#[test]
fn changed_rule_statement_is_rejected() {
    // `get_gen` loosened after the certificate was made.
    let files = RULE_FILES.iter().map(|(n, s)| {
        let s = s.replace("  if upper: ?k < ?n\n", "  if upper: ?k <= ?n\n");
        (n.to_string(), s)
    });
    let (library, diags) = Library::from_sources(files);
    assert!(diags.is_empty(), "{diags:?}");
    let c = common::example_certificate("pipeline", "fused");
    let e = verify_with(&c, &library, &Solver::new()).expect_err("rejected");
    assert_eq!((e.code, e.step), ("E1003", Some(2)), "{e}");
    assert!(e.to_string().contains("?k <= ?n"), "{e}");
    // A rule that is gone.
    let files = RULE_FILES
        .iter()
        .map(|(n, s)| (n.to_string(), s.replace("get_gen:", "get_gen_renamed:")));
    let (library, _) = Library::from_sources(files);
    let e = verify_with(&c, &library, &Solver::new()).expect_err("rejected");
    assert_eq!((e.code, e.step), ("E1003", Some(2)), "{e}");
}

/// A certificate that is internally consistent but claims a false side condition:
/// `(gen j < n: f[0])[i + 1]` is `0` at `i = n - 1`, not `f[0]`.
fn unsound() -> Value {
    json!({
        "format": "atl-certificate/1",
        "derivation": "bad",
        "from": "p",
        "declarations": "size n\ninput f : [n]\n",
        "initial": "gen i < n: (gen j < n: f[0])[i + 1]",
        "steps": [{
            "command": "rw get_gen",
            "rule": "get_gen",
            "rule_statement": "get_gen: (gen ?i < ?n: ?e)[?k] => ?e[?i := ?k] if lower: 0 <= ?k if upper: ?k < ?n grade: exact",
            "direction": "forward",
            "path": [0],
            "instantiation": {"?e": "f[0]", "?i": "j", "?k": "i + 1", "?n": "n"},
            "conditions": [
                {"name": "lower", "goal": "0 <= i + 1", "context": ["n >= 1", "0 <= i && i < n"], "verdict": "proved"},
                {"name": "upper", "goal": "i + 1 < n", "context": ["n >= 1", "0 <= i && i < n"], "verdict": "proved"}
            ],
            "grade": "exact",
            "before": "(gen j < n: f[0])[i + 1]",
            "after_site": "f[0]",
            "after": "gen i < n: f[0]"
        }],
        "result": "gen i < n: f[0]",
        "grade": "exact"
    })
}

#[test]
fn false_side_condition_is_rejected_despite_its_verdict() {
    let e = rejected(
        &unsound(),
        "E1006",
        Some(1),
        "side condition `upper` is false",
    );
    assert!(e.to_string().contains("goal: i + 1 < n"), "{e}");
    assert!(e.to_string().contains("counterexample:"), "{e}");
}

#[test]
fn scoping_violation_is_rejected() {
    // sum_swap where the inner bound depends on the outer binder.
    let mut c = unsound();
    c["initial"] = json!("gen i < n: sum j < n: sum k in 0..j: f[k]");
    let step = &mut c["steps"][0];
    step["command"] = json!("rw sum_swap");
    step["rule"] = json!("sum_swap");
    let (library, _) = Library::standard();
    step["rule_statement"] = json!(library.get("sum_swap").expect("rule").statement());
    step["grade"] = json!("real");
    step["before"] = json!("sum j < n: sum k in 0..j: f[k]");
    step["instantiation"] = json!({});
    step["conditions"] = json!([]);
    rejected(&c, "E1005", Some(1), "scoping: `?d` would capture `j`");
}

#[test]
fn inline_is_checked_and_unknown_steps_are_not() {
    let source = "size n\ninput f : [n]\n\
                  def p = let x = gen i < n: f[i] in gen j < n: x[j]\n\
                  derive q from p {\n  inline x\n  check\n}\n";
    let certs = common::certificates_of_source(source);
    let q: Value = serde_json::from_str(&certs[0].1).expect("JSON");
    check(&q).expect("inline and check are checked");
    // An unknown step.
    let mut q2 = q.clone();
    q2["steps"][1]["command"] = json!("interleave i");
    rejected(&q2, "E1009", Some(2), "not checkable");
    // `inline` whose result is not the substitution.
    let mut q3 = q.clone();
    q3["steps"][0]["after"] = json!("gen j < n: f[0]");
    q3["steps"][0]["after_site"] = json!("gen j < n: f[0]");
    rejected(&q3, "E1008", Some(1), "does not give the recorded program");
}

#[test]
fn annotation_steps_must_leave_the_program_unchanged() {
    // `fast_annotated`: `parallel y`, then `vectorize x3`, each recorded with the whole
    // program before and after.
    let c = cert("blur", "fast_annotated");
    let report = check(&c).expect("accepted");
    assert_eq!((report.steps, report.tactic_steps), (2, 2));
    assert_eq!(c["steps"][0]["command"], json!("parallel y"));
    assert_eq!(c["steps"][0]["origin"], json!("parallel y"));
    // An "annotation" that changes the program, consistently with every later record
    // and the result: only the annotation's own check can catch it.
    let before = c["steps"][0]["before"].as_str().expect("text").to_string();
    let changed = before.replacen("img[y, x3]", "img[y, x3] * 2", 1);
    assert_ne!(changed, before);
    let mut m = c.clone();
    for k in [0, 1] {
        if k == 1 {
            m["steps"][k]["before"] = json!(changed);
        }
        m["steps"][k]["after"] = json!(changed);
        m["steps"][k]["after_site"] = json!(changed);
    }
    m["result"] = json!(changed);
    rejected(&m, "E1008", Some(1), "must leave the program unchanged");
    // An annotation of a loop the program does not have.
    let mut m = c.clone();
    m["steps"][1]["command"] = json!("vectorize q");
    rejected(&m, "E1004", Some(2), "no loop of the program binds `q`");
    // An annotation with a side condition it never had.
    let mut m = c.clone();
    m["steps"][0]["conditions"] = json!([{
        "name": "extra", "goal": "1 <= H", "context": ["H >= 1"], "verdict": "proved"
    }]);
    check(&m).expect_err("a condition the step does not produce");
}

#[test]
fn parallel_annotation_of_a_sum_is_rejected() {
    let source = "size n
input f : [n, 4]
                  def s = gen i < n: sum k < 4: f[i, k]
                  derive t from s {
  unroll k
}
";
    let certs = common::certificates_of_source(source);
    let t: Value = serde_json::from_str(&certs[0].1).expect("JSON");
    check(&t).expect("`unroll` of a sum is a valid annotation");
    let mut m = t.clone();
    m["steps"][0]["command"] = json!("parallel k");
    rejected(&m, "E1004", Some(1), "names a `sum`");
}

/// `b` refers to `a` twice and `a` to `base`: unfolding `a` replaces both references,
/// unfolding `base` then needs the definition `a`'s body brought in.
const UNFOLDS: &str = "size n\ninput f : [n]\n\
    def base = gen i < n: f[i] * 2\n\
    def a = gen i < n: base[i] + 1\n\
    def b = gen j < n: a[j] + a[0]\n\
    derive c from b {\n  unfold a\n  unfold base\n  rw get_gen\n}\n";

fn unfolds() -> Value {
    let certs = common::certificates_of_source(UNFOLDS);
    serde_json::from_str(&certs[0].1).expect("JSON")
}

#[test]
fn unfold_is_checked_against_the_recorded_definitions() {
    let c = unfolds();
    // What the certificate records: both definitions, the one used first.
    assert_eq!(
        c["definitions"],
        json!([
            {"name": "base", "body": "gen i < n: f[i] * 2"},
            {"name": "a", "body": "gen i < n: base[i] + 1"}
        ])
    );
    assert_eq!(c["initial"], json!("gen j < n: a[j] + a[0]"));
    let step = &c["steps"][0];
    assert_eq!(step["command"], json!("unfold a"));
    assert_eq!(step["path"], json!([0, 0, 0]));
    assert_eq!(step["before"], json!("a"));
    assert_eq!(step["after_site"], json!("gen i < n: base[i] + 1"));
    let report = check(&c).expect("accepted");
    assert_eq!(
        (report.steps, report.tactic_steps, report.rule_steps),
        (3, 2, 1)
    );
    assert_eq!(report.definitions, 2);
    assert!(report.user_rules.is_empty());
}

#[test]
fn tampered_unfold_steps_are_rejected() {
    // The recorded body altered.
    let mut c = unfolds();
    c["steps"][0]["after_site"] = json!("gen i < n: base[i] + 2");
    rejected(
        &c,
        "E1008",
        Some(1),
        "not the certificate's definition of `a`",
    );
    // The definition altered: the recorded body no longer is it.
    let mut c = unfolds();
    c["definitions"][1]["body"] = json!("gen i < n: base[i] + 2");
    rejected(
        &c,
        "E1008",
        Some(1),
        "not the certificate's definition of `a`",
    );
    // Both altered together: the program after the step gives it away.
    c["steps"][0]["after_site"] = json!("gen i < n: base[i] + 2");
    rejected(&c, "E1008", Some(1), "does not give the recorded program");
    // The path leads to the second reference, or to no reference at all.
    let mut c = unfolds();
    c["steps"][0]["path"] = json!([0, 1, 0]);
    rejected(&c, "E1004", Some(1), "first reference to `a`");
    let mut c = unfolds();
    c["steps"][0]["path"] = json!([0, 0]);
    rejected(&c, "E1004", Some(1), "first reference at [0, 0, 0]");
    let mut c = unfolds();
    c["steps"][0]["path"] = json!([0, 0, 0, 0]);
    rejected(&c, "E1004", Some(1), "leads nowhere");
    // The recorded subterm is not the reference.
    let mut c = unfolds();
    c["steps"][0]["before"] = json!("base");
    rejected(&c, "E1004", Some(1), "recorded subterm is `base`");
    // Only one of the two references replaced.
    let mut c = unfolds();
    let after = "gen j < n: (gen i < n: base[i] + 1)[j] + a[0]";
    c["steps"][0]["after"] = json!(after);
    rejected(&c, "E1008", Some(1), "does not give the recorded program");
    // An unfold of a definition the certificate does not record.
    let mut c = unfolds();
    c["steps"][1]["command"] = json!("unfold other");
    rejected(
        &c,
        "E1009",
        Some(2),
        "does not record the definition of `other`",
    );
    // Unfolding the wrong name at the right place.
    let mut c = unfolds();
    c["steps"][0]["command"] = json!("unfold base");
    rejected(
        &c,
        "E1008",
        Some(1),
        "not the certificate's definition of `base`",
    );
}

#[test]
fn malformed_definitions_are_rejected() {
    // Out of order: `a` uses `base` before its definition.
    let mut c = unfolds();
    let defs = c["definitions"].as_array().expect("list").clone();
    c["definitions"] = json!([defs[1], defs[0]]);
    rejected(&c, "E1002", None, "recorded definitions do not check");
    // A body that smuggles in another item.
    let mut c = unfolds();
    c["definitions"][0]["body"] = json!("gen i < n: f[i] * 2\ndef extra = f");
    rejected(&c, "E1002", None, "more than one expression");
    // A definition missing: the initial program mentions an unknown name.
    let mut c = unfolds();
    c["definitions"] = json!([c["definitions"][0]]);
    rejected(
        &c,
        "E1009",
        Some(1),
        "does not record the definition of `a`",
    );
}

fn peel() -> Value {
    cert("peel", "peeled")
}

#[test]
fn user_rules_are_read_from_the_certificate_and_reported() {
    let c = peel();
    assert_eq!(c["user_rules"][0]["name"], json!("sum_peel_last"));
    let report = check(&c).expect("accepted");
    assert_eq!(report.user_rules, vec!["sum_peel_last".to_string()]);
    // Without the record the rule is unknown: the library does not have it.
    let mut c = peel();
    c["user_rules"] = json!([]);
    rejected(&c, "E1003", Some(3), "no rule `sum_peel_last`");
}

#[test]
fn tampered_user_rules_are_rejected() {
    let source = |c: &Value| {
        c["user_rules"][0]["source"]
            .as_str()
            .expect("text")
            .to_string()
    };
    // A condition dropped from the recorded text: not the rule the step was made with.
    let mut c = peel();
    let text = source(&c).replace("  if nonempty: ?lo < ?hi\n", "");
    c["user_rules"][0]["source"] = json!(text);
    rejected(
        &c,
        "E1003",
        Some(3),
        "not the rule this certificate was made with",
    );
    // A text that does not load.
    let mut c = peel();
    c["user_rules"][0]["source"] = json!(source(&c).replace(" => ", " "));
    rejected(&c, "E1011", None, "does not load");
    // A text that defines another rule, or two.
    let mut c = peel();
    c["user_rules"][0]["name"] = json!("other");
    rejected(&c, "E1011", None, "defines `sum_peel_last`");
    let mut c = peel();
    let twice = format!(
        "{}\n{}",
        source(&c),
        source(&c).replace("sum_peel_last", "again")
    );
    c["user_rules"][0]["source"] = json!(twice);
    rejected(&c, "E1011", None, "holds 2 rules");
    // The same rule recorded twice.
    let mut c = peel();
    let entry = c["user_rules"][0].clone();
    c["user_rules"] = json!([entry.clone(), entry]);
    rejected(&c, "E1011", None, "recorded twice");
    // A user rule in place of a library rule: `get_gen` redefined without its bounds
    // (and the step's statement to match) may not stand in for the library's.
    let mut c = cert("pipeline", "fused");
    let wrong = "# get_gen: no bounds.\nget_gen: (gen ?i < ?n: ?e)[?k] => ?e[?i := ?k]\n  grade: exact\n  example: f => f\n";
    c["user_rules"] = json!([{"name": "get_gen", "source": wrong, "checked": "bounded"}]);
    rejected(&c, "E1011", None, "has the name of a library rule");
}

#[test]
fn window_outside_the_reads_is_rejected() {
    let mut c = cert("blur", "strips_staged");
    assert!(
        c["steps"][6]["command"]
            .as_str()
            .expect("text")
            .starts_with("window")
    );
    c["steps"][6]["command"] = json!("window bx in yo * 64..yo * 64 + 66");
    rejected(&c, "E1006", Some(7), "read_in_window");
}

/// The two-dimensional window of the staged 64 x 64 tiles: a column range that misses
/// the tile's first column is refused on the read, and a 1-D command in place of the
/// 2-D one does not give the recorded step.
#[test]
fn two_dimensional_window_outside_the_reads_is_rejected() {
    let c = cert("blur", "tiled_staged");
    let steps = c["steps"].as_array().expect("steps");
    let k = steps
        .iter()
        .position(|s| {
            s["command"]
                .as_str()
                .is_some_and(|t| t.starts_with("window"))
        })
        .expect("a window step");
    assert_eq!(
        steps[k]["command"],
        json!("window bx in yo * 64 - 1..yo * 64 + 65, xo * 64..xo * 64 + 64")
    );
    let mut shifted = c.clone();
    shifted["steps"][k]["command"] =
        json!("window bx in yo * 64 - 1..yo * 64 + 65, xo * 64 + 1..xo * 64 + 65");
    let e = rejected(&shifted, "E1006", Some(k + 1), "read_in_window");
    assert!(e.to_string().contains("xo * 64 + 1"), "{e}");
    let mut one_dim = c.clone();
    one_dim["steps"][k]["command"] = json!("window bx in yo * 64 - 1..yo * 64 + 65");
    // The rebuilt 1-D step has no conditions for the columns the certificate records.
    rejected(
        &one_dim,
        "E1007",
        Some(k + 1),
        "which this step does not have",
    );
}

#[test]
fn not_a_certificate_is_unreadable() {
    assert!(verify("{").expect_err("rejected").is_unreadable());
    let e = verify(r#"{"format": "other/1"}"#).expect_err("rejected");
    assert!(e.is_unreadable(), "{e}");
}

#[test]
fn contradictory_declarations_are_rejected() {
    let mut c = cert("pipeline", "fused");
    c["declarations"] = json!("size n\nassume n < 1\ninput f : [n]\n");
    rejected(&c, "E1002", None, "contradictory");
}

#[test]
fn a_coordinate_changed_by_a_step_is_rejected() {
    // `simpl` may rewrite `float(x + 0)` into `float(x)`, not into `float(x + 1)`: the
    // coordinate's index is the node's own data, compared like an access's.
    let source = "size n
input a : [n]
def f = gen x < n: a[x] * float(x + 0)
derive f2 from f {
  simpl
}
";
    let certs = common::certificates_of_source(source);
    let original: Value = serde_json::from_str(&certs[0].1).expect("JSON");
    assert_eq!(
        original["steps"][0]["after"],
        json!("gen x < n: a[x] * float(x)")
    );
    check(&original).expect("the original is accepted");
    let mut c = original.clone();
    for key in ["after_site", "after"] {
        c["steps"][0][key] = json!("gen x < n: a[x] * float(x + 1)");
    }
    c["result"] = json!("gen x < n: a[x] * float(x + 1)");
    rejected(&c, "E1006", Some(1), "`simpl` rewrote `x + 0` into `x + 1`");
    // A rule step may not change it either: `float(x)` made `float(0)` by a step that
    // records nothing there.
    let mut c = original;
    for key in ["after_site", "after"] {
        c["steps"][0][key] = json!("gen x < n: a[x] * float(0)");
    }
    c["result"] = json!("gen x < n: a[x] * float(0)");
    check(&c).expect_err("a changed coordinate is rejected");
}
