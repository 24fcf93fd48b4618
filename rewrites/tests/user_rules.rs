//! User rules (`rule` items of a program file): a wrong, malformed, untestable or
//! shadowing rule is refused with a diagnostic pointing into the program file (the
//! programs of `test_data/err_user_rules/`, rendered diagnostics as snapshots), and a
//! good one is admitted, used by a derivation, and recorded in its certificate in a
//! form the rule loader reads back to the same rule.

use atl_lang::diag::render_to_string;
use atl_rewrites::cert::Certificate;
use atl_rewrites::rule::load_rules;
use atl_rewrites::user_rules::{library_with_user_rules, rule_file_text};
use atl_rewrites::{Env, Library, run_derivations, with_derived};
use atl_solver::Solver;

fn standard() -> Library {
    let (lib, diags) = Library::standard();
    assert!(diags.is_empty());
    lib
}

#[test]
fn bad_user_rules_are_refused_with_diagnostics_into_the_file() {
    let lib = standard();
    let solver = Solver::new();
    insta::glob!("../test_data/err_user_rules", "*.atl", |path| {
        let source = std::fs::read_to_string(path).expect("readable");
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let (checked, diags) = atl_lang::check_source(&source);
        let checked =
            checked.unwrap_or_else(|| panic!("{name} must pass the front end: {diags:?}"));
        assert!(!checked.program.rules.is_empty(), "{name}: no rule item");
        let (with_user, diags) = library_with_user_rules(&lib, &checked.program, name, &solver);
        assert!(!diags.is_empty(), "{name}: no diagnostic");
        assert!(diags.iter().all(|d| d.is_error()), "{name}: {diags:?}");
        // Every diagnostic points into this file, inside a rule item.
        for d in &diags {
            let span = d.primary.as_ref().expect("a position").span;
            assert!(
                checked
                    .program
                    .rules
                    .iter()
                    .any(|r| r.span.start <= span.start && span.end <= r.span.end),
                "{name}: {d:?} is outside every rule item"
            );
        }
        // A refused rule is not in the library.
        assert!(
            with_user.rules().len() < lib.rules().len() + checked.program.rules.len(),
            "{name}: every rule was admitted"
        );
        insta::assert_snapshot!(render_to_string(&diags, name, &source));
    });
}

#[test]
fn loader_diagnostics_point_at_the_offending_text() {
    let source = include_str!("../test_data/err_user_rules/bad_pattern.atl");
    let (checked, _) = atl_lang::check_source(source);
    let checked = checked.expect("front end");
    let (_, diags) = library_with_user_rules(&standard(), &checked.program, "f", &Solver::new());
    let span = diags[0].primary.as_ref().expect("position").span;
    assert_eq!(&source[span.range()], "*", "{diags:?}");

    // In a side condition, after metavariables (the loader parses conditions with
    // `?k` spelled differently; spans are mapped back).
    let source = include_str!("../test_data/err_user_rules/bad_condition.atl");
    let (checked, _) = atl_lang::check_source(source);
    let checked = checked.expect("front end");
    let (_, diags) = library_with_user_rules(&standard(), &checked.program, "f", &Solver::new());
    let span = diags[0].primary.as_ref().expect("position").span;
    let line_start = source[..span.start].rfind('\n').map_or(0, |k| k + 1);
    assert_eq!(
        &source[line_start..span.start],
        "  if upper: ?k < ",
        "{diags:?}"
    );
    assert_eq!(&source[span.range()], "<", "{diags:?}");

    let source = include_str!("../test_data/err_user_rules/wrong_rule.atl");
    let (checked, _) = atl_lang::check_source(source);
    let checked = checked.expect("front end");
    let (lib, diags) = library_with_user_rules(&standard(), &checked.program, "f", &Solver::new());
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, "E0717");
    assert!(
        source[diags[0].primary.as_ref().expect("span").span.range()]
            .starts_with("rule get_gen_anywhere:")
    );
    // The counterexample: both sides and the sizes where they differ.
    let notes = diags[0].notes.join("\n");
    assert!(notes.contains("instance: (gen "), "{notes}");
    assert!(notes.contains("at sizes n="), "{notes}");
    // The refused rule cannot be used: the derivation fails as for an unknown rule.
    assert!(lib.get("get_gen_anywhere").is_none());
}

const PEEL: &str = include_str!("../../examples/peel/peel.atl");

#[test]
fn a_good_user_rule_is_admitted_used_and_certified() {
    let (checked, diags) = atl_lang::check_source(PEEL);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let solver = Solver::new();
    let std_lib = standard();
    let (lib, diags) = library_with_user_rules(&std_lib, &checked.program, "peel.atl", &solver);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(lib.rules().len(), std_lib.rules().len() + 1);
    let rule = lib.get("sum_peel_last").expect("admitted");
    assert_eq!(rule.origin, "peel.atl:19");
    assert!(std_lib.user_source("get_gen").is_none());

    // The derivation uses it.
    let env = Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &lib,
        solver: &solver,
    };
    let (derivations, diags) = run_derivations(&env);
    assert!(diags.is_empty(), "{diags:?}");
    let peeled = &derivations[0];
    assert_eq!(
        atl_lang::pretty::expr_to_string(&peeled.result, Default::default()),
        "(sum j < n - 1: f[j] * w[j]) + f[n - 1] * w[n - 1]"
    );

    // Its certificate carries the rule's text, which loads back to the same statement.
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    let cert = Certificate::new(peeled, &program, &lib);
    assert_eq!(cert.user_rules.len(), 1);
    let record = &cert.user_rules[0];
    assert_eq!(record.name, "sum_peel_last");
    assert!(record.checked.contains("not proved"));
    let (reloaded, diags) = load_rules(&record.source, "certificate");
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(reloaded.len(), 1);
    assert_eq!(reloaded[0].statement(), rule.statement());
    assert_eq!(record.source, rule_file_text(&checked.program.rules[0]));
    // Library rules are not recorded: the verifier has them.
    assert!(
        cert.steps
            .iter()
            .any(|s| s.rule.as_deref() == Some("get_gen"))
    );
    assert!(!cert.user_rules.iter().any(|r| r.name == "get_gen"));
}

#[test]
fn rule_text_is_normalized_to_rule_file_syntax() {
    // Lines of a rule item need no indentation in a program file (the item ends at the
    // next item), and comment lines inside it are left out of the recorded text.
    let source = "size n\ninput f : [n]\n\n\
        # twice_add: e + e is 2 * e.\n\
        rule twice_add: ?e + ?e => 2 * ?e\n  if scalar: shape(?e) = []\n# over the reals only\ngrade: real\n\n  example: f[0] + f[0] => 2 * f[0]\n\n\
        def a =\n  gen i < n: f[i]\n";
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    assert_eq!(checked.program.rules.len(), 1);
    assert_eq!(
        rule_file_text(&checked.program.rules[0]),
        "# twice_add: e + e is 2 * e.\ntwice_add: ?e + ?e => 2 * ?e\n  if scalar: shape(?e) = []\n  grade: real\n  example: f[0] + f[0] => 2 * f[0]\n"
    );
    let (lib, diags) =
        library_with_user_rules(&standard(), &checked.program, "t.atl", &Solver::new());
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(lib.get("twice_add").expect("admitted").origin, "t.atl:5");
}
