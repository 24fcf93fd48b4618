//! The softmax example (`examples/softmax/softmax.atl`, issue 20) against an
//! independent expectation: the numerically stable softmax written as plain Rust loops
//! (max, then the sum of `exp(x - max)`, then the quotient), on an input with an
//! ordinary row, a row of equal values, a negative row and a row of values near 1000
//! (where `exp(x)` overflows to `inf`, so the unstable form `exp(x) / sum exp(x)` of
//! `examples/functions/functions.atl` gives NaN there). The specification and the
//! scheduled `fast` are evaluated by the interpreter (`atl eval --json`), and `fast`'s
//! C kernel is validated, compiled and compared with the interpreter (`atl run`).

mod common;

use std::path::{Path, PathBuf};

use atl_cli::EXIT_OK;
use common::atl;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn example() -> String {
    root()
        .join("examples/softmax/softmax.atl")
        .display()
        .to_string()
}

/// `data` as a float64 `.npy` file of shape `[n, m]` in this test's directory.
fn write_npy(name: &str, n: usize, m: usize, data: &[f64]) -> String {
    let dir = std::env::temp_dir().join(format!("atl-softmax-test-{}", std::process::id()));
    common::write_npy(&dir, name, &[n, m], data)
}

/// The rows of the input: ordinary values, equal values, negative values, and values
/// near 1000.
fn input(m: usize) -> Vec<f64> {
    let mut x = Vec::new();
    for j in 0..m {
        x.push((j as f64 * 0.7).sin() * 3.0);
    }
    x.extend(std::iter::repeat_n(0.25, m));
    for j in 0..m {
        x.push(-5.0 - j as f64 * 0.5);
    }
    for j in 0..m {
        x.push(1000.0 - (j % 3) as f64 * 0.5);
    }
    x
}

/// The numerically stable softmax of each row, by plain loops.
fn expected(x: &[f64], n: usize, m: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * m];
    for i in 0..n {
        let row = &x[i * m..(i + 1) * m];
        let mut mx = f64::NEG_INFINITY;
        for &v in row {
            if v > mx {
                mx = v;
            }
        }
        let mut s = 0.0;
        for &v in row {
            s += (v - mx).exp();
        }
        for j in 0..m {
            out[i * m + j] = (row[j] - mx).exp() / s;
        }
    }
    out
}

/// `atl eval FILE --def DEF --json` with the input `x`: the flat data.
fn eval(file: &str, def: &str, sizes: &str, x: &str) -> Vec<f64> {
    let (code, out, err) = atl(&[
        "eval",
        file,
        "--def",
        def,
        "--sizes",
        sizes,
        "--input",
        &format!("x={x}"),
        "--json",
    ]);
    assert_eq!(code, EXIT_OK, "eval {def}: {err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    v["data"]
        .as_array()
        .expect("data")
        .iter()
        // JSON has no NaN: a non-number stands for a non-finite value.
        .map(|d| d.as_f64().unwrap_or(f64::NAN))
        .collect()
}

#[test]
fn the_specification_and_fast_agree_with_the_stable_softmax_of_plain_loops() {
    let (n, m) = (4, 7);
    let x = input(m);
    let file = write_npy("x.npy", n, m, &x);
    let want = expected(&x, n, m);
    let sizes = format!("n={n},m={m}");
    for def in ["softmax", "fast"] {
        let got = eval(&example(), def, &sizes, &file);
        assert_eq!(got.len(), want.len());
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12,
                "{def}[{}, {}] = {g}, expected {w}",
                k / m,
                k % m
            );
        }
        // Every row sums to 1, the row near 1000 included.
        for i in 0..n {
            let s: f64 = got[i * m..(i + 1) * m].iter().sum();
            assert!((s - 1.0).abs() < 1e-12, "{def}: row {i} sums to {s}");
        }
    }
    // The equal row is uniform.
    for j in 0..m {
        assert!((want[m + j] - 1.0 / m as f64).abs() < 1e-15);
    }
}

#[test]
fn the_unstable_softmax_overflows_where_the_stable_one_does_not() {
    let (n, m) = (4, 7);
    let x = input(m);
    let file = write_npy("x_unstable.npy", n, m, &x);
    let functions = root()
        .join("examples/functions/functions.atl")
        .display()
        .to_string();
    let got = eval(&functions, "softmax", &format!("n={n},m={m}"), &file);
    // exp(1000) is inf in f64, and inf / inf is NaN: the last row is lost.
    assert!(
        got[3 * m..].iter().all(|v| v.is_nan()),
        "{:?}",
        &got[3 * m..]
    );
    // The ordinary rows agree with the stable form.
    let want = expected(&x, n, m);
    for k in 0..3 * m {
        assert!((got[k] - want[k]).abs() < 1e-12);
    }
}

#[test]
fn fasts_kernel_is_validated_and_agrees_with_the_interpreter() {
    let (n, m) = (4, 7);
    let x = input(m);
    let file = write_npy("x_run.npy", n, m, &x);
    for dtype in ["f64", "f32"] {
        let (code, out, err) = atl(&[
            "run",
            &example(),
            "--def",
            "fast",
            "--sizes",
            &format!("n={n},m={m}"),
            "--input",
            &format!("x={file}"),
            "--dtype",
            dtype,
        ]);
        assert_eq!(code, EXIT_OK, "run fast ({dtype}): {out}{err}");
        assert!(out.contains("max error vs interpreter"), "{out}");
    }
}
