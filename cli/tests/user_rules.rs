//! User rules (`rule` items of a program file) through the command line and the REPL:
//! a good rule is checked, used and certified (and `atl verify` says it is assumed); a
//! wrong one stops `atl check`/`atl derive`/`:load` with its counterexample; `atl
//! rules --file PROGRAM.atl` lists and checks them; `atl fmt` keeps them verbatim.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::repl::{Session, run_script};
use atl_cli::{EXIT_OK, EXIT_USER};
use common::atl;

fn path(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel)
        .display()
        .to_string()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-user-rules-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

const PEEL: &str = "examples/peel/peel.atl";
const WRONG: &str = "rewrites/test_data/err_user_rules/wrong_rule.atl";

#[test]
fn a_user_rule_is_checked_used_certified_and_reported_as_assumed() {
    let (code, out, err) = atl(&["check", &path(PEEL)]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("derive peeled from dot"), "{out}");
    let dir = temp_dir("cert");
    let cert = dir.join("peeled.json").display().to_string();
    let (code, out, err) = atl(&["derive", &path(PEEL), "--cert", &cert]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.contains("(sum j < n - 1: f[j] * w[j]) + f[n - 1] * w[n - 1]"),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cert).expect("written")).expect("JSON");
    assert_eq!(json["user_rules"][0]["name"], "sum_peel_last");
    assert!(
        json["user_rules"][0]["source"]
            .as_str()
            .expect("text")
            .starts_with("# sum_peel_last: ")
    );
    let (code, out, err) = atl(&["verify", &cert]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.starts_with("certificate accepted"), "{out}");
    assert!(
        out.contains("user rule(s) `sum_peel_last`") && out.contains("not proved"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wrong_user_rule_stops_check_and_derive_with_its_counterexample() {
    for cmd in ["check", "derive"] {
        let (code, out, err) = atl(&[cmd, &path(WRONG)]);
        assert_eq!(code, EXIT_USER, "{cmd}: {out}");
        assert!(err.contains("[E0717]"), "{cmd}: {err}");
        assert!(err.contains("get_gen_anywhere"), "{err}");
        assert!(err.contains("instance: (gen "), "{err}");
        assert!(err.contains("at sizes n="), "{err}");
        assert!(err.contains("Help:"), "{err}");
        // Nothing was derived.
        assert!(!out.contains("def wrong"), "{out}");
    }
}

#[test]
fn rules_file_lists_and_checks_user_rules() {
    let (code, out, err) = atl(&["rules", "--file", &path(PEEL)]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.starts_with("sum_peel_last  [real, user rule]  sum ?i in ?lo..?hi: ?e =>"),
        "{out}"
    );
    assert!(out.contains("if nonempty: ?lo < ?hi"), "{out}");
    let (code, out, err) = atl(&["rules", "--check", "--file", &path(PEEL)]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.contains("ok      sum_peel_last") && out.contains("not proved"),
        "{out}"
    );
    let (code, out, err) = atl(&["rules", "--check", "--file", &path(WRONG)]);
    assert_eq!(code, EXIT_USER);
    assert!(out.contains("REFUSED get_gen_anywhere"), "{out}");
    assert!(err.contains("[E0717]"), "{err}");
    // A malformed rule is reported by listing too, pointing into the file.
    let bad = path("rewrites/test_data/err_user_rules/malformed_header.atl");
    let (code, _, err) = atl(&["rules", "--file", &bad]);
    assert_eq!(code, EXIT_USER);
    assert!(
        err.contains("[E0705]") && err.contains("malformed_header.atl:6:6"),
        "{err}"
    );
    // A program without user rules.
    let (code, _, err) = atl(&["rules", "--file", &path("examples/pipeline/pipeline.atl")]);
    assert_eq!(code, EXIT_USER);
    assert!(err.contains("no user rule"), "{err}");
}

#[test]
fn fmt_keeps_rule_items_verbatim_and_in_place() {
    let dir = temp_dir("fmt");
    let file = dir.join("messy.atl");
    let source = "size n input f:[n]\n# swap_mul: multiplication commutes.\nrule swap_mul: ?a * ?b   =>   ?b * ?a\n    grade: exact\n  # a comment inside the rule\n    example: f[0] * s => s * f[0]\ndef a=gen i<n:f[i]*2\n";
    std::fs::write(&file, source).expect("write");
    let name = file.display().to_string();
    let (code, out, err) = atl(&["fmt", &name]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(
        out,
        "size n\ninput f : [n]\n\n# swap_mul: multiplication commutes.\nrule swap_mul: ?a * ?b   =>   ?b * ?a\n    grade: exact\n  # a comment inside the rule\n    example: f[0] * s => s * f[0]\n\ndef a =\n  gen i < n: f[i] * 2\n"
    );
    std::fs::write(&file, &out).expect("write");
    let (code, _, err) = atl(&["fmt", "--check", &name]);
    assert_eq!(code, EXIT_OK, "{err}");
    // The formatted file still checks, rule included.
    let (code, _, err) = atl(&["check", &name]);
    assert_eq!(code, EXIT_OK, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn repl_load_checks_user_rules_before_they_can_be_used() {
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(Path::new(&path(PEEL)), &mut out));
    let mut out = Vec::new();
    run_script(
        &mut session,
        ":focus dot\nrw unfold_let\nrw get_gen\nrw sum_peel_last\n",
        &mut out,
    );
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(
        text.contains("(sum j < n - 1: f[j] * w[j]) + f[n - 1] * w[n - 1]"),
        "{text}"
    );
    let mut out = Vec::new();
    assert!(!session.load(Path::new(&path(WRONG)), &mut out));
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(text.contains("E0717"), "{text}");
}
