//! `specialize COND { steps }` (issue 32, Halide's `specialize`) end to end: the
//! Halide example `f_spec4` (`examples/halide/halide.atl`) is validated with a store
//! in each version, computes the hand-computed values on both sides of its condition
//! (`atl eval`, `atl run`), its certificate is accepted and one whose general version
//! is guarded by another condition is refused; a loop annotation given before the
//! block holds of both versions; in the REPL a block is one step, saved and replayed,
//! and a step after it is refused.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::EXIT_OK;
use atl_cli::repl::{Session, run_script};
use common::atl;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn halide() -> String {
    root()
        .join("examples/halide/halide.atl")
        .display()
        .to_string()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-specialize-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn both_versions_are_validated_and_compute_the_specification() {
    let file = halide();
    let (code, out, err) = atl(&["validate", &file, "--def", "f_spec4"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("verdict: validated"), "{out}");
    // A store of each version, under the condition and under its negation.
    assert!(out.contains("[in if n % 4 == 0 > for xo"), "{out}");
    assert!(out.contains("[in else of if n % 4 == 0 >"), "{out}");
    // Hand-computed: out[x] = b[x]^2 + b[x + 1]^2, with b[x] = x + 1.
    let dir = temp_dir("values");
    for n in [8usize, 6, 1] {
        let b: Vec<f64> = (0..=n).map(|x| x as f64 + 1.0).collect();
        let input = common::write_npy(&dir, &format!("b{n}.npy"), &[n + 1], &b);
        let want: Vec<f64> = (0..n).map(|x| b[x] * b[x] + b[x + 1] * b[x + 1]).collect();
        let sizes = format!("n={n},m=1");
        let (code, out, err) = atl(&[
            "eval",
            &file,
            "--def",
            "f_spec4",
            "--sizes",
            &sizes,
            "--input",
            &format!("b={input}"),
            "--input",
            "a=random:1",
            "--input",
            "c=random:2",
            "--json",
        ]);
        assert_eq!(code, EXIT_OK, "{out}{err}");
        assert_eq!(common::json_values(&out), want, "n = {n}");
        // The kernel agrees with the interpreter on each side of the condition.
        let (code, out, err) = atl(&["run", &file, "--def", "f_spec4", "--sizes", &sizes]);
        assert_eq!(code, EXIT_OK, "n = {n}: {out}{err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_certificate_is_checked_and_a_wrong_case_split_is_refused() {
    let dir = temp_dir("cert");
    let cert = dir.join("f_spec4.json").display().to_string();
    let (code, out, err) = atl(&["derive", &halide(), "--def", "f_spec4", "--cert", &cert]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    let (code, out, err) = atl(&["verify", &cert]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("certificate accepted"), "{out}");
    // The general version guarded by another condition: the two parts no longer add
    // up to the program (at n = 5 neither would be computed).
    let text = std::fs::read_to_string(&cert).expect("certificate");
    let edited = text.replace("!(n % 4 == 0)", "!(n % 4 == 1)");
    assert_ne!(edited, text);
    let bad = dir.join("edited.json").display().to_string();
    std::fs::write(&bad, edited).expect("write");
    let (code, out, err) = atl(&["verify", &bad]);
    assert_ne!(code, EXIT_OK, "{out}{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn in_the_repl_a_block_is_one_step_and_ends_the_derivation() {
    let dir = temp_dir("repl");
    let file = dir.join("axpy.atl");
    std::fs::write(
        &file,
        "size n\ninput x : [n]\ndef a = gen i < n: 2.0 * x[i]\n",
    )
    .expect("write");
    let mut session = Session::new(false).expect("library loads");
    let mut out = Vec::new();
    assert!(session.load(&file, &mut out));
    let mut out = Vec::new();
    run_script(
        &mut session,
        ":focus a\nspecialize n % 8 == 0 { split i by 8 into io, ii tail round; vectorize ii }\nvectorize i1\n:c\n:save! a_fast\n",
        &mut out,
    );
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(text.contains("[E0857]"), "{text}");
    assert!(text.contains("if (n % 8 == 0) {"), "{text}");
    assert!(
        text.contains("for (int64_t ii = 0; ii < 8; ++ii)"),
        "{text}"
    );
    assert_eq!(session.step_texts().len(), 1, "{text}");
    let saved = std::fs::read_to_string(&file).expect("saved file");
    assert!(
        saved.contains("derive a_fast from a {\n  specialize n % 8 == 0 {"),
        "{saved}"
    );
    let (code, out, err) = atl(&["check", &file.display().to_string()]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `unroll ii` before `specialize`: both versions' `ii` loops are unrolled (lowering
/// would unroll neither by itself), the general version's under its renamed binder.
#[test]
fn an_annotation_before_the_block_holds_of_both_versions() {
    let dir = temp_dir("hints");
    let file = dir.join("unrolled.atl");
    std::fs::write(
        &file,
        "size n\ninput x : [n]\ndef a = gen i < n: 2.0 * x[i]\nderive a_s from a {\n  split i by 8 into io, ii\n  unroll ii\n  specialize n % 8 == 0 { simpl_guard }\n}\n",
    )
    .expect("write");
    let file = file.display().to_string();
    let (code, c, err) = atl(&["emit", &file, "--def", "a_s"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(c.matches("ATL__UNROLL(GCC unroll 8)").count(), 2, "{c}");
    assert!(c.contains("for (int64_t ii1 = 0; ii1 < 8; ++ii1)"), "{c}");
    let _ = std::fs::remove_dir_all(dir);
}
