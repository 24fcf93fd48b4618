//! The scalar-function examples (`examples/functions/functions.atl`, issue 20) against
//! an independent expectation: ReLU, the leaky ReLU, the layer norm, the L1 and L2
//! norms and the clamped logarithm written as plain Rust loops. The specifications and
//! the scheduled `layer_norm_fast` are evaluated by the interpreter (`atl eval
//! --json`); `layer_norm_fast`'s C kernel is validated, compiled and compared with the
//! interpreter (`atl run`); so is the clamped blur of docs/scheduling.md.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::EXIT_OK;
use common::atl;

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/functions/functions.atl")
        .display()
        .to_string()
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-functions-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `atl eval` of `def` at `n x m` with the inputs `x` and `w`: the flat data.
fn eval(def: &str, n: usize, m: usize, x: &str, w: &str) -> Vec<f64> {
    let (code, out, err) = atl(&[
        "eval",
        &example(),
        "--def",
        def,
        "--sizes",
        &format!("n={n},m={m}"),
        "--input",
        &format!("x={x}"),
        "--input",
        &format!("w={w}"),
        "--json",
    ]);
    assert_eq!(code, EXIT_OK, "eval {def}: {err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| d.as_f64().expect("finite values"))
        .collect()
}

/// Rows with positive, negative and zero values, and values both sides of the clamps.
fn input(n: usize, m: usize) -> Vec<f64> {
    (0..n * m)
        .map(|k| ((k as f64) * 0.9).sin() * 4.0 * (1.0 + (k % 5) as f64))
        .map(|v| if v.abs() < 0.5 { 0.0 } else { v })
        .collect()
}

fn assert_close(def: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{def}");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
            "{def}[{k}]: {g} vs {w}"
        );
    }
}

#[test]
fn the_scalar_function_examples_agree_with_plain_loops() {
    let (n, m) = (5, 7);
    let x = input(n, m);
    let w: Vec<f64> = (0..m).map(|j| 0.5 + j as f64 * 0.25).collect();
    let x_file = common::write_npy(&temp_dir(), "x.npy", &[n, m], &x);
    let w_file = common::write_npy(&temp_dir(), "w.npy", &[m], &w);
    let elementwise = |f: &dyn Fn(f64) -> f64| x.iter().map(|&v| f(v)).collect::<Vec<_>>();
    let relu = elementwise(&|v| if v > 0.0 { v } else { 0.0 });
    let leaky = elementwise(&|v| if v > 0.0 { v } else { 0.01 * v });
    let clamped_log = elementwise(&|v| v.abs().clamp(0.001, 10.0).ln());
    let mut layer_norm = vec![0.0; n * m];
    let mut l1 = vec![0.0; n];
    let mut l2 = vec![0.0; n];
    for i in 0..n {
        let row = &x[i * m..(i + 1) * m];
        let mean = row.iter().sum::<f64>() / m as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / m as f64;
        for j in 0..m {
            layer_norm[i * m + j] = w[j] * (row[j] - mean) / (var + 1e-5).sqrt();
        }
        l1[i] = row.iter().map(|v| v.abs()).sum();
        l2[i] = row.iter().map(|v| v * v).sum::<f64>().sqrt();
    }
    // The inputs reach both sides of every function's corner.
    assert!(x.iter().any(|&v| v < 0.0) && x.contains(&0.0));
    assert!(x.iter().any(|&v| v.abs() > 10.0));
    for (def, want) in [
        ("relu", &relu),
        ("relu_tiled", &relu),
        ("leaky", &leaky),
        ("clamped_log", &clamped_log),
        ("layer_norm", &layer_norm),
        ("layer_norm_fast", &layer_norm),
        ("l1", &l1),
        ("l2", &l2),
    ] {
        assert_close(def, &eval(def, n, m, &x_file, &w_file), want);
    }
}

#[test]
fn layer_norm_fasts_kernel_is_validated_and_agrees_with_the_interpreter() {
    for dtype in ["f64", "f32"] {
        let (code, out, err) = atl(&[
            "run",
            &example(),
            "--def",
            "layer_norm_fast",
            "--sizes",
            "n=6,m=37",
            "--dtype",
            dtype,
        ]);
        assert_eq!(code, EXIT_OK, "run layer_norm_fast ({dtype}): {out}{err}");
        assert!(out.contains("max error vs interpreter"), "{out}");
    }
}

/// docs/scheduling.md's `repeat_edge` block (clamped indices): the specification and
/// its schedule against the clamped blur of plain loops, and the kernel run.
#[test]
fn the_guides_clamped_blur_agrees_with_plain_loops() {
    let guide = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/scheduling.md"),
    )
    .expect("docs/scheduling.md");
    let block = guide
        .split("```atl\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains("def blur_edge"))
        .expect("the guide's blur_edge block");
    let file = temp_dir().join("blur_edge.atl");
    std::fs::write(&file, block).expect("write");
    let file = file.display().to_string();
    let (h, w) = (3usize, 21usize);
    let img: Vec<f64> = (0..h * w).map(|k| ((k * 7) % 11) as f64 - 3.0).collect();
    let img_file = common::write_npy(&temp_dir(), "img.npy", &[h, w], &img);
    let mut want = vec![0.0; h * w];
    for y in 0..h {
        for x in 0..w {
            let at = |xx: usize| img[y * w + xx];
            want[y * w + x] = (at(x.saturating_sub(1)) + at(x) + at((x + 1).min(w - 1))) / 3.0;
        }
    }
    for def in ["blur_edge", "fast"] {
        let (code, out, err) = atl(&[
            "eval",
            &file,
            "--def",
            def,
            "--sizes",
            &format!("H={h},W={w}"),
            "--input",
            &format!("img={img_file}"),
            "--json",
        ]);
        assert_eq!(code, EXIT_OK, "eval {def}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
        let got: Vec<f64> = v["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|d| d.as_f64().expect("finite"))
            .collect();
        assert_close(def, &got, &want);
    }
    let (code, out, err) = atl(&["run", &file, "--def", "fast", "--sizes", "H=5,W=37"]);
    assert_eq!(code, EXIT_OK, "run fast: {out}{err}");
}

/// `compute_at` of a stage in any argument of any scalar function derives through
/// `atl derive`, whose independent checker verifies each step (its matcher had no case
/// for calls: every such derivation was refused, E0847, while the engine's own tests
/// passed).
#[test]
fn stages_move_across_every_scalar_function_and_the_checker_agrees() {
    use atl_lang::functions::ScalarFn;
    let stage = "(let s = sum k < m: a[i, k] * a[i, k] in s)";
    let dir = temp_dir();
    let mut tried = 0;
    for func in ScalarFn::all() {
        for position in 0..func.arity() {
            let args: Vec<String> = (0..func.arity())
                .map(|p| {
                    if p == position {
                        stage.to_string()
                    } else {
                        format!("(a[i, j] + {p})")
                    }
                })
                .collect();
            let call = match func {
                ScalarFn::Select(op) => format!(
                    "select({} {} {}, {}, {})",
                    args[0],
                    op.symbol(),
                    args[1],
                    args[2],
                    args[3]
                ),
                f => format!("{}({})", f.name(), args.join(", ")),
            };
            let source = format!(
                "size n, m\ninput a : [n, m]\ndef spec = gen i < n, j < m: {call}\n\
                 derive staged from spec {{\n  compute_at s at i\n}}\n"
            );
            let file = dir.join(format!("stage_{tried}.atl"));
            std::fs::write(&file, &source).expect("write");
            let (code, out, err) = atl(&["derive", &file.display().to_string()]);
            assert_eq!(code, EXIT_OK, "{call}:\n{out}{err}");
            tried += 1;
        }
    }
    // abs, sqrt, exp, log (1 each), max, min (2 each), select with six comparisons (4
    // each).
    assert_eq!(tried, 4 + 4 + 24);
}
