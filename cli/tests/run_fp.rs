//! `atl run`'s comparison of floating-point results (issue 28): non-finite values that
//! both sides compute agree, one side only does not; errors are over finite elements.

mod common;

use std::path::PathBuf;

use atl_cli::{EXIT_OK, EXIT_USER};
use atl_driver::compare::compare_outputs;
use atl_lang::interp::Tensor;
use common::{atl, write_npy};

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-run-fp-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Writes `text` as `dir/name` and returns the path.
fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let file = dir.join(name);
    std::fs::write(&file, text).expect("write");
    file.display().to_string()
}

const SQRT: &str = "size n\ninput f : [n]\ndef h = gen i < n: sqrt(f[i])\n";
const EXP: &str = "size n\ninput f : [n]\ndef h = gen i < n: exp(1000 * f[i])\n";

#[test]
fn nan_against_nan_and_inf_against_inf_agree_and_are_counted() {
    let dir = scratch("agree");
    let f = write_npy(&dir, "f.npy", &[4], &[-1.0, 1.0, 4.0, 9.0]);
    for dtype in ["f32", "f64"] {
        let sqrt = write(&dir, "sqrt.atl", SQRT);
        let (code, out, err) = atl(&[
            "run",
            &sqrt,
            "--sizes",
            "n=4",
            "--input",
            &format!("f={f}"),
            "--dtype",
            dtype,
        ]);
        assert_eq!(code, EXIT_OK, "{out}{err}");
        assert!(
            out.contains("non-finite on both sides: 1 of 4 elements"),
            "{out}"
        );
        assert!(
            out.contains("max error vs interpreter: 0.000e0 absolute"),
            "{out}"
        );
        assert!(
            !out.contains("inf absolute") && !out.contains("NaN absolute"),
            "{out}"
        );
        // exp(1000), exp(4000), exp(9000) are +inf on both sides, exp(-1000) is 0.
        let exp = write(&dir, "exp.atl", EXP);
        let (code, out, err) = atl(&[
            "run",
            &exp,
            "--sizes",
            "n=4",
            "--input",
            &format!("f={f}"),
            "--dtype",
            dtype,
        ]);
        assert_eq!(code, EXIT_OK, "{out}{err}");
        assert!(
            out.contains("non-finite on both sides: 3 of 4 elements"),
            "{out}"
        );
        assert!(
            out.contains("max error vs interpreter: 0.000e0 absolute"),
            "{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel (an edited loop IR, run with `--no-validate`) computing `sqrt(f[i] - 2)`
/// where the definition is `sqrt(f[i])`: NaN where the interpreter gives a number.
#[test]
fn a_nan_on_one_side_only_fails_naming_the_element() {
    let dir = scratch("one-side");
    let sqrt = write(&dir, "sqrt.atl", SQRT);
    let (code, ir, err) = atl(&["emit", &sqrt, "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let edited = ir.replace("sqrt(f[i @ (i)])", "sqrt(f[i @ (i)] - 2)");
    assert_ne!(edited, ir, "the kernel's statement: {ir}");
    let bad = write(&dir, "bad.ir", &edited);
    let f = write_npy(&dir, "f.npy", &[4], &[5.0, 1.0, 4.0, 9.0]);
    let (code, out, err) = atl(&[
        "run",
        &sqrt,
        "--sizes",
        "n=4",
        "--input",
        &format!("f={f}"),
        "--ir",
        &bad,
        "--no-validate",
        "--tolerance",
        "1e9",
    ]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(err.contains("E0939"), "{err}");
    assert!(
        err.contains("at [1] the kernel computes NaN where the interpreter gives 1"),
        "{err}"
    );
    assert!(
        out.contains("non-finite on one side only: 1 of 4 elements"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_comparison_counts_non_finite_pairs_and_measures_finite_ones() {
    let t = |data: &[f64]| Tensor {
        shape: vec![data.len()],
        data: data.to_vec(),
    };
    let inf = f64::INFINITY;
    let c = compare_outputs(
        &t(&[f64::NAN, inf, -inf, 2.0, 3.5]),
        &t(&[f64::NAN, inf, -inf, 2.0, 3.0]),
    );
    assert_eq!((c.finite, c.non_finite, c.mismatches), (2, 3, 0));
    assert_eq!(c.max_abs_error, 0.5);
    assert_eq!(c.scale, 3.0, "the scale is over finite references");
    assert_eq!(c.worst.map(|w| w.coordinates), Some(vec![4]));
    assert_eq!(c.bit_differences, 1);
    // One side only, and infinities of opposite signs.
    for (got, want) in [
        (f64::NAN, 1.0),
        (1.0, f64::NAN),
        (inf, 1.0),
        (1.0, -inf),
        (inf, -inf),
        (f64::NAN, inf),
    ] {
        let c = compare_outputs(&t(&[0.0, got]), &t(&[0.0, want]));
        assert_eq!(c.mismatches, 1, "{got} against {want}");
        let w = c.first_mismatch.expect("named");
        assert_eq!(w.coordinates, vec![1]);
        assert!(c.max_abs_error.is_finite() && c.max_scaled_error.is_finite());
    }
    // +0 and -0 are equal values with different bits.
    let c = compare_outputs(&t(&[0.0]), &t(&[-0.0]));
    assert_eq!((c.max_abs_error, c.bit_differences), (0.0, 1));
}

/// A derivation graded `exact`, on inputs where a fused multiply-add differs from the
/// interpreter's two roundings (1 + 2^-30, 1 - 2^-30, -1: `emit_c/tests/contraction.rs`):
/// `atl run --fp strict --dtype f64` checks the kernel bit for bit (against the loop
/// IR's evaluation, and reports the interpreter's bits: all identical).
const FUSED: &str = "size n\ninput f : [n]\ninput g : [n]\ninput h : [n]\n\
                     def fused = gen i < n: f[i] * g[i] + h[i]\n\
                     derive exact from fused {\n  grade exact\n}\n";

#[test]
fn run_fp_strict_checks_an_exact_derivation_bit_for_bit() {
    let dir = scratch("strict");
    let file = write(&dir, "fused.atl", FUSED);
    let n = 16;
    let f = write_npy(&dir, "f.npy", &[n], &vec![1.0 + 2f64.powi(-30); n]);
    let g = write_npy(&dir, "g.npy", &[n], &vec![1.0 - 2f64.powi(-30); n]);
    let h = write_npy(&dir, "h.npy", &[n], &vec![-1.0; n]);
    let base = [
        "run",
        &file,
        "--def",
        "exact",
        "--sizes",
        "n=16",
        "--input",
        &format!("f={f}"),
        "--input",
        &format!("g={g}"),
        "--input",
        &format!("h={h}"),
    ];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        atl(&args)
    };
    let (code, out, err) = run(&["--fp", "strict", "--dtype", "f64"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(
        out.contains(
            "--fp strict: 16 of 16 finite element(s) bit-identical to the loop IR's evaluation"
        ),
        "{out}"
    );
    assert!(
        out.contains("--fp strict: 16 of 16 finite element(s) bit-identical to the interpreter\n"),
        "{out}"
    );
    // In f32 the bits are not compared (the interpreters compute in f64), and under
    // fast nothing is said about bits.
    let (code, out, err) = run(&["--fp", "strict"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("--fp strict: bits not compared"), "{out}");
    let (code, out, err) = run(&["--dtype", "f64"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(!out.contains("--fp strict"), "{out}");
    let (code, _, err) = run(&["--fp", "exact"]);
    assert_eq!(code, atl_cli::EXIT_ARGS, "{err}");
    // The emitted header states the mode.
    let (code, c, err) = atl(&["emit", &file, "--def", "exact", "--fp", "strict"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(c.contains("compile with -ffp-contract=off"), "{c}");
    let _ = std::fs::remove_dir_all(&dir);
}
