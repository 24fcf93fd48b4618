//! Directives name loops as the user wrote them: a binder that name resolution renamed
//! (`x` written in a producer and in its consumer becomes `x` and `x1`) is found by its
//! written name when that is unambiguous, a name two stages share is refused (E0832)
//! with the loops it may mean, and `stage.var` names one loop of one stage (the
//! definition's own loops as `NAME.var`).

mod common;

use std::collections::BTreeMap;

use atl_lang::ir::{Expr, ExprKind};

const PROGRAM: &str = "size n
input f : [n]
def d = let t = gen x < n: f[x] * 2 in gen x < n: t[x] + 1
derive in_t from d {
  split t.x by 4 into xo, xi
}
derive in_d from d {
  split d.x by 4 into xo, xi
  parallel d.xo
}
derive printed from d {
  split x1 by 4 into xo, xi
}
";

/// The stage that holds a loop named `xo`: the let `t` (true) or the body (false).
fn split_in_stage(e: &Expr) -> bool {
    let ExprKind::Let { value, .. } = &e.kind else {
        panic!("{e:?}")
    };
    let mut found = false;
    value.walk(&mut |n| found |= matches!(&n.kind, ExprKind::Gen { var, .. } if var == "xo"));
    found
}

#[test]
fn qualified_and_printed_names_address_one_loop() {
    let (_, derivations, diags) = common::derive(PROGRAM);
    assert!(diags.is_empty(), "{diags:?}");
    let by_name: BTreeMap<&str, &Expr> = derivations
        .iter()
        .map(|d| (d.name.as_str(), &d.result))
        .collect();
    assert!(split_in_stage(by_name["in_t"]));
    assert!(!split_in_stage(by_name["in_d"]));
    assert!(!split_in_stage(by_name["printed"]));
    assert_eq!(by_name["in_d"], by_name["printed"]);
}

#[test]
fn a_name_two_stages_share_is_ambiguous() {
    let source = "size n
input f : [n]
def d = let t = gen x < n: f[x] * 2 in gen x < n: t[x] + 1
derive s from d {
  split x by 4 into xo, xi
}
";
    let (_, derivations, diags) = common::derive(source);
    assert!(derivations.is_empty());
    let d = diags.iter().find(|d| d.code == "E0832").expect("E0832");
    let notes = d.notes.join(" ");
    assert!(notes.contains("`t.x` (the loop of stage `t`)"), "{notes}");
    assert!(
        notes.contains("`x1` (the definition's own loop, written `x`)"),
        "{notes}"
    );
    // The help offers exactly the spellings that name one loop each.
    let help = d.help.as_deref().unwrap_or("");
    assert!(help.contains("`t.x` or `x1`"), "{help}");
    for spelling in ["t.x", "x1", "d.x"] {
        let fixed = source.replace("split x by", &format!("split {spelling} by"));
        let (_, derivations, diags) = common::derive(&fixed);
        assert!(
            diags.is_empty() && derivations.len() == 1,
            "{spelling}: {diags:?}"
        );
    }
}

#[test]
fn the_list_of_loops_shows_the_names_written() {
    let source = "size n
input f : [n]
def d = let t = gen x < n: f[x] * 2 in gen x < n: t[x] + 1
derive s from d {
  split q by 4 into xo, xi
}
";
    let (_, _, diags) = common::derive(source);
    let d = diags.iter().find(|d| d.code == "E0821").expect("E0821");
    let notes = d.notes.join("\n");
    assert!(
        notes.contains("gen x1 < n  [stage (the definition)]  (written `x`)"),
        "{notes}"
    );
    assert!(notes.contains("gen x < n  [stage t]\n"), "{notes}");
}
