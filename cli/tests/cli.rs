//! End-to-end tests of the `atl` command line through [`atl_cli::run`] (in-process,
//! with captured output) and, for exit statuses, through the real binary.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::{EXIT_ARGS, EXIT_OK, EXIT_USER};
use atl_lang::interp::Tensor;
use common::atl;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn path(rel: &str) -> String {
    root().join(rel).display().to_string()
}

fn parse_json(text: &str) -> (Vec<usize>, Vec<f64>) {
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("valid JSON");
    let shape = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let data = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|d| d.as_f64().expect("number"))
        .collect();
    (shape, data)
}

#[test]
fn matmul_demo_prints_the_product() {
    let (code, out, err) = atl(&[
        "eval",
        &path("examples/matmul/matmul.atl"),
        "--sizes",
        "M=3,N=4,K=5",
        "--input",
        "A=random:1",
        "--input",
        "B=random:2",
        "--json",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.trim_start().starts_with("{\"shape\":[3,4],\"data\":["),
        "{out}"
    );
    let (shape, data) = parse_json(&out);
    assert_eq!(shape, vec![3, 4]);
    // An independent matmul of the same deterministic inputs.
    let a = Tensor::random(vec![3, 5], 1);
    let b = Tensor::random(vec![5, 4], 2);
    for i in 0..3 {
        for j in 0..4 {
            let mut acc = 0.0;
            for k in 0..5 {
                acc += a.data[i * 5 + k] * b.data[k * 4 + j];
            }
            let got = data[i * 4 + j];
            assert!(
                (got - acc).abs() <= 1e-12 * acc.abs().max(1.0),
                "C[{i},{j}] = {got}, expected {acc}"
            );
        }
    }
}

/// The transposed-A matmul's directive-only `fast` schedule: the interpreter's values
/// of the derived program against plain loops (at sizes with partial tiles in both
/// dimensions and sizes below the tile), and its compiled kernel against the
/// interpreter, exactly in f64 (the same sums in the same order).
#[test]
fn matmul_at_fast_computes_the_transposed_product() {
    let file = path("examples/matmul_at/matmul_at.atl");
    for (m, n, k) in [(1, 1, 1), (9, 35, 5), (16, 64, 3), (3, 70, 4)] {
        let sizes = format!("M={m},N={n},K={k}");
        let (code, out, err) = atl(&[
            "eval",
            &file,
            "--def",
            "fast",
            "--sizes",
            &sizes,
            "--input",
            "A=random:1",
            "--input",
            "B=random:2",
            "--json",
        ]);
        assert_eq!(code, EXIT_OK, "{err}");
        let (shape, data) = parse_json(&out);
        assert_eq!(shape, vec![m, n]);
        let a = Tensor::random(vec![k, m], 1);
        let b = Tensor::random(vec![k, n], 2);
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0;
                for kk in 0..k {
                    acc += a.data[kk * m + i] * b.data[kk * n + j];
                }
                let got = data[i * n + j];
                assert!(
                    (got - acc).abs() <= 1e-12 * acc.abs().max(1.0),
                    "{sizes}: C[{i},{j}] = {got}, expected {acc}"
                );
            }
        }
        let (code, out, err) = atl(&[
            "run",
            &file,
            "--def",
            "fast",
            "--sizes",
            &sizes,
            "--dtype",
            "f64",
            "--tolerance",
            "0",
        ]);
        assert_eq!(code, EXIT_OK, "{sizes}: {out}{err}");
    }
}

#[test]
fn random_inputs_are_in_range_and_deterministic() {
    let t = Tensor::random(vec![1000], 7);
    assert!(t.data.iter().all(|v| (-1.0..1.0).contains(v)));
    assert_eq!(t, Tensor::random(vec![1000], 7));
    assert_ne!(t, Tensor::random(vec![1000], 8));
}

#[test]
fn every_malformed_program_exits_1_with_a_located_diagnostic() {
    let dir = root().join("lang/test_data/err");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus exists") {
        let p = entry.expect("entry").path();
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_string();
        let (code, out, err) = atl(&["check", &p.display().to_string()]);
        assert_eq!(code, EXIT_USER, "{name}: {out}{err}");
        assert!(
            err.contains("Error: ") && err.contains("[E0"),
            "{name}: {err}"
        );
        // ariadne's header names the file with line and column.
        assert!(err.contains(&format!("{name}:")), "{name}: {err}");
        count += 1;
    }
    assert!(count >= 30, "only {count} malformed programs");
}

#[test]
fn bad_arguments_exit_2() {
    let pipeline = path("examples/pipeline/pipeline.atl");
    for args in [
        vec!["eval"],
        vec!["frobnicate"],
        vec!["eval", &pipeline, "--sizes", "n"],
        vec!["eval", &pipeline, "--sizes", "n=x"],
        vec!["eval", &pipeline, "--sizes", "n=3,n=4"],
        vec!["eval", &pipeline, "--sizes", "zz=3"],
        vec!["eval", &pipeline, "--sizes", "n=3", "--input", "f=nonsense"],
        vec![
            "eval",
            &pipeline,
            "--sizes",
            "n=3",
            "--input",
            "nope=random:1",
        ],
        vec![
            "eval",
            &pipeline,
            "--sizes",
            "n=3",
            "--input",
            "f=random:-1",
        ],
        vec![
            "eval",
            &pipeline,
            "--sizes",
            "n=3",
            "--input",
            "f=/does/not/exist.npy",
        ],
        vec!["check", "/does/not/exist.atl"],
        vec!["fmt", &pipeline, "--check", "--write"],
    ] {
        let (code, _, err) = atl(&args);
        assert_eq!(code, EXIT_ARGS, "{args:?}: {err}");
        assert!(!err.is_empty(), "{args:?} printed no message");
    }
}

#[test]
fn user_errors_at_evaluation_exit_1() {
    let pipeline = path("examples/pipeline/pipeline.atl");
    for (args, code) in [
        (vec!["eval", &pipeline, "--input", "f=random:1"], "E0601"),
        (
            vec!["eval", &pipeline, "--sizes", "n=1", "--input", "f=random:1"],
            "E0603",
        ),
        (
            vec!["eval", &pipeline, "--sizes", "n=0", "--input", "f=random:1"],
            "E0602",
        ),
        (vec!["eval", &pipeline, "--sizes", "n=3"], "E0604"),
        (
            vec!["eval", &pipeline, "--sizes", "n=3", "--def", "nothing"],
            "E0606",
        ),
    ] {
        let (status, _, err) = atl(&args);
        assert_eq!(status, EXIT_USER, "{args:?}: {err}");
        assert!(err.contains(code), "{args:?}: expected {code} in {err}");
    }
}

#[test]
fn help_and_version_exit_0() {
    let (code, out, _) = atl(&["--help"]);
    assert_eq!(code, EXIT_OK);
    assert!(out.contains("eval") && out.contains("fmt") && out.contains("check"));
    let (code, out, _) = atl(&["--version"]);
    assert_eq!(code, EXIT_OK);
    assert!(out.starts_with("atl "));
}

#[test]
fn npy_inputs_and_outputs_round_trip() {
    let dir = std::env::temp_dir().join(format!("atl-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("f.npy");
    let mut buf = Vec::new();
    atl_driver::npy::write_f64(&mut buf, &[4], &[1.0, 2.0, 3.0, 4.0]).expect("write");
    std::fs::write(&input, &buf).expect("write npy");
    let output = dir.join("out.npy");
    let (code, out, err) = atl(&[
        "eval",
        &path("examples/pipeline/pipeline.atl"),
        "--sizes",
        "n=4",
        "--input",
        &format!("f={}", input.display()),
        "--json",
        "--out",
        &output.display().to_string(),
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    // pipeline: out[i] = f[i-1] (zero at i = 0) + f[i].
    let expected = vec![1.0, 3.0, 5.0, 7.0];
    assert_eq!(parse_json(&out), (vec![4], expected.clone()));
    let written = atl_driver::npy::parse(&std::fs::read(&output).expect("out.npy written"))
        .expect("valid npy");
    assert_eq!((written.shape, written.data), (vec![4], expected));
    // A wrongly shaped input is a user error naming both shapes.
    let mut small = Vec::new();
    atl_driver::npy::write_f64(&mut small, &[2], &[1.0, 2.0]).expect("write");
    std::fs::write(&input, &small).expect("write npy");
    let (code, _, err) = atl(&[
        "eval",
        &path("examples/pipeline/pipeline.atl"),
        "--sizes",
        "n=4",
        "--input",
        &format!("f={}", input.display()),
    ]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("E0605"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn examples_are_formatted_and_check() {
    let mut count = 0;
    for entry in std::fs::read_dir(root().join("examples")).expect("examples/") {
        let dir = entry.expect("entry").path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).expect("example dir") {
            let p = f.expect("entry").path();
            if p.extension().is_some_and(|e| e == "atl") {
                let file = p.display().to_string();
                let (code, _, err) = atl(&["check", &file]);
                assert_eq!(code, EXIT_OK, "{file}: {err}");
                let (code, _, err) = atl(&["fmt", "--check", &file]);
                assert_eq!(code, EXIT_OK, "{file} is not in canonical form: {err}");
                count += 1;
            }
        }
    }
    assert!(count >= 8, "only {count} examples");
}

/// docs/scheduling.md's programs pass `atl check`: their derivations are replayed by
/// the engine and re-checked by the independent checker (the engine-only test of the
/// guide, in atl-rewrites, cannot run the checker).
#[test]
fn the_scheduling_guides_programs_pass_the_checker() {
    let guide = std::fs::read_to_string(root().join("docs/scheduling.md")).expect("guide");
    let dir = std::env::temp_dir().join(format!("atl-guide-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut count = 0;
    for block in guide.split("```atl\n").skip(1) {
        let program = block.split("```").next().unwrap_or("");
        let file = dir.join(format!("block_{count}.atl"));
        std::fs::write(&file, program).expect("write");
        let (code, _, err) = atl(&["check", &file.display().to_string()]);
        assert_eq!(code, EXIT_OK, "block {}:\n{program}\n{err}", count + 1);
        count += 1;
    }
    assert!(count >= 5, "only {count} blocks");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fmt_check_reports_unformatted_files() {
    let dir = std::env::temp_dir().join(format!("atl-fmt-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("messy.atl");
    std::fs::write(&file, "size n input f:[n] def a=gen i<n:f[i]+f[i]").expect("write");
    let name = file.display().to_string();
    let (code, _, err) = atl(&["fmt", "--check", &name]);
    assert_eq!(code, EXIT_USER);
    assert!(err.contains("not formatted"), "{err}");
    let (code, out, _) = atl(&["fmt", &name]);
    assert_eq!(code, EXIT_OK);
    assert_eq!(
        out,
        "size n\ninput f : [n]\n\ndef a =\n  gen i < n: f[i] + f[i]\n"
    );
    let (code, _, _) = atl(&["fmt", "--write", &name]);
    assert_eq!(code, EXIT_OK);
    let (code, _, _) = atl(&["fmt", "--check", &name]);
    assert_eq!(code, EXIT_OK);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_binary_exits_with_the_documented_statuses() {
    let exe = env!("CARGO_BIN_EXE_atl");
    let status = |args: &[&str]| {
        std::process::Command::new(exe)
            .args(args)
            .output()
            .expect("atl runs")
            .status
            .code()
    };
    assert_eq!(
        status(&["check", &path("examples/pipeline/pipeline.atl")]),
        Some(0)
    );
    assert_eq!(
        status(&["check", &path("lang/test_data/err/name_unknown.atl")]),
        Some(1)
    );
    assert_eq!(status(&["check"]), Some(2));
}

#[test]
fn emit_prints_c_and_refuses_programs_that_fail_the_gate() {
    let (code, out, err) = atl(&[
        "emit",
        &path("examples/pipeline/pipeline.atl"),
        "--def",
        "fused",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("int fused(int64_t n,"), "{out}");
    assert!(out.contains("const float *restrict f"), "{out}");
    let (code, out, _) = atl(&[
        "emit",
        &path("examples/pipeline/pipeline.atl"),
        "--def",
        "fused",
        "--dtype",
        "f64",
    ]);
    assert_eq!(code, EXIT_OK);
    assert!(out.contains("const double *restrict f"), "{out}");
    let (code, out, _) = atl(&[
        "emit",
        &path("examples/pipeline/pipeline.atl"),
        "--def",
        "fused",
        "--ir",
    ]);
    assert_eq!(code, EXIT_OK);
    assert!(out.contains("kernel fused"), "{out}");
    let (code, _, err) = atl(&[
        "emit",
        &path("examples/pipeline/pipeline.atl"),
        "--dtype",
        "f16",
    ]);
    assert_eq!(code, EXIT_ARGS, "{err}");
    // An unsafe truncation: refused with the gate's diagnostic, nothing emitted.
    let dir = std::env::temp_dir().join(format!("atl-emit-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.atl");
    std::fs::write(
        &bad,
        "size n\ninput f : [n]\ndef a = gen i < n: trunc_r(1, gen j < n: f[j])[i]\n",
    )
    .expect("write");
    let out_c = dir.join("a.c");
    let (code, out, err) = atl(&[
        "emit",
        &bad.display().to_string(),
        "-o",
        &out_c.display().to_string(),
    ]);
    assert_eq!(code, EXIT_USER);
    assert!(
        out.is_empty() && err.contains("E0901") && err.contains("nothing was emitted"),
        "{err}"
    );
    assert!(!out_c.exists(), "a refused program must not be written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_compiles_and_matches_the_interpreter() {
    let (code, out, err) = atl(&[
        "run",
        &path("examples/matmul/matmul.atl"),
        "--def",
        "tiled_tails",
        "--sizes",
        "M=19,N=11,K=5",
        "--dtype",
        "f64",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("output shape [19, 11]"), "{out}");
    // f64 kernel vs the f64 interpreter: the reported error must be tiny.
    let line = out
        .lines()
        .find(|l| l.starts_with("max error"))
        .expect("error line");
    let abs: f64 = line
        .split_whitespace()
        .nth(4)
        .expect("number")
        .parse()
        .expect("float");
    assert!(abs < 1e-12, "{line}");
}

#[test]
fn derive_certificate_verifies_and_a_tampered_one_is_rejected() {
    let dir = std::env::temp_dir().join(format!("atl-cert-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cert = dir.join("c.json");
    let cert_s = cert.display().to_string();
    let (code, _, err) = atl(&[
        "derive",
        &path("examples/matmul/matmul.atl"),
        "--def",
        "tiled",
        "--cert",
        &cert_s,
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    let (code, out, err) = atl(&["verify", &cert_s]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("certificate accepted"), "{out}");
    // Loosen a recorded side condition: rejected.
    let text = std::fs::read_to_string(&cert).expect("certificate");
    std::fs::write(
        &cert,
        text.replacen("\"goal\": \"", "\"goal\": \"0 <= 0 && ", 1),
    )
    .expect("write");
    let (code, _, err) = atl(&["verify", &cert_s]);
    assert_eq!(code, EXIT_USER, "{err}");
    let (code, _, _) = atl(&["verify", "/does/not/exist.json"]);
    assert_eq!(code, EXIT_ARGS);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn derive_trace_shows_rules_sites_and_conditions() {
    let (code, out, err) = atl(&[
        "derive",
        "--trace",
        &path("examples/pipeline/pipeline.atl"),
        "--def",
        "fused",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("step 2: rw get_gen  (at [0, 0, 0])"), "{out}");
    assert!(out.contains("lower: 0 <= i - 1 -- proved"), "{out}");
    assert!(out.contains("grade: exact"), "{out}");
    assert!(
        out.trim_end()
            .ends_with("gen i < n: [0 <= i - 1] * f[i - 1] + f[i]"),
        "{out}"
    );
}

#[test]
fn prove_answers_proved_refuted_and_exits_accordingly() {
    let (code, out, _) = atl(&[
        "prove",
        "--size",
        "n",
        "--assume",
        "0 <= i && i < cdiv(n, 8)",
        "--assume",
        "0 <= ii && ii < 8",
        "i * 8 + ii < cdiv(n, 8) * 8",
    ]);
    assert_eq!((code, out.trim()), (EXIT_OK, "proved"));
    let (code, out, _) = atl(&["prove", "--size", "n", "n - 1 >= 1"]);
    assert_eq!((code, out.trim()), (EXIT_USER, "refuted: n=1"));
}

#[test]
fn loop_annotations_are_traced_certified_verified_and_emitted() {
    let blur = path("examples/blur/blur.atl");
    let (code, out, err) = atl(&["derive", "--trace", &blur, "--def", "fast_annotated"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.contains("step 1: parallel y  (at [])  [from `parallel y`]"),
        "{out}"
    );
    assert!(
        out.contains("step 2: vectorize x3  (at [])  [from `vectorize x3`]"),
        "{out}"
    );
    let dir = std::env::temp_dir().join(format!("atl-annot-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cert = dir.join("c.json").display().to_string();
    let (code, _, err) = atl(&["derive", &blur, "--def", "fast_annotated", "--cert", &cert]);
    assert_eq!(code, EXIT_OK, "{err}");
    let (code, out, err) = atl(&["verify", &cert]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("certificate accepted"), "{out}");
    // The C has the requested pragmas on the requested loops.
    let (code, c, err) = atl(&["emit", &blur, "--def", "fast_annotated"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // (pragma, variable of the loop it annotates), in order.
    let lines: Vec<&str> = c.lines().map(str::trim).collect();
    let pragmas: Vec<(&str, &str)> = lines
        .windows(2)
        .filter(|w| {
            w[0].starts_with("ATL__OMP(") || w[0].starts_with("ATL__UNROLL(") || w[0] == "ATL__SIMD"
        })
        .map(|w| {
            let var = w[1]
                .strip_prefix("for (int64_t ")
                .and_then(|r| r.split(' ').next())
                .unwrap_or("?");
            (w[0], var)
        })
        .collect();
    assert!(
        pragmas.contains(&(
            "ATL__OMP(omp parallel for num_threads(atl__threads()) schedule(guided))",
            "y"
        )),
        "{pragmas:?}"
    );
    assert!(pragmas.contains(&("ATL__SIMD", "x3")), "{pragmas:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `atl explain` prints the registry's text for a code (the same text as the row of
/// `docs/errors.md`), accepts a lower-case `e`, and refuses an unknown code with exit 2.
#[test]
fn explain_prints_a_code_from_the_registry() {
    let (code, out, err) = atl(&["explain", "E0903"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.starts_with("E0903: an access index that can be out of bounds"),
        "{out}"
    );
    assert!(out.contains("What to do: guard the access"), "{out}");
    // The text is the documentation's: every word of the docs' row is in the output.
    let docs = std::fs::read_to_string(root().join("docs/errors.md")).unwrap();
    let row = docs
        .lines()
        .find(|l| l.starts_with("| E0903 |"))
        .expect("E0903 documented");
    for word in row.split(|c: char| c.is_whitespace() || c == '|') {
        if !word.is_empty() && word != "E0903" {
            assert!(
                out.contains(word),
                "`{word}` of the docs' row is missing from:\n{out}"
            );
        }
    }
    let (code, lower, _) = atl(&["explain", "e0903"]);
    assert_eq!((code, lower.as_str()), (EXIT_OK, out.as_str()));
    // Spelled so the registry's source scan (lang/tests/error_codes.rs) does not take
    // it for a code in use.
    let unknown = format!("E{}", 9999);
    let (code, out, err) = atl(&["explain", &unknown]);
    assert_eq!(code, EXIT_ARGS);
    assert!(out.is_empty());
    assert!(err.contains("`E9999` is not a diagnostic code"), "{err}");
}

/// `atl run` fails (exit 1, E0939 naming the worst element) when the kernel disagrees
/// with the interpreter beyond the tolerance: in `f32` the kernel rounds, so a zero
/// tolerance must fail, while the default (8·ε·(1 + K) for a sum of K terms) accepts it.
#[test]
fn run_fails_when_the_kernel_disagrees_beyond_the_tolerance() {
    let file = path("examples/matmul/matmul.atl");
    let base = ["run", &file, "--def", "fast", "--sizes", "M=5,N=7,K=33"];
    let (code, out, err) = atl(&base);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    let mut strict = base.to_vec();
    strict.extend(["--tolerance", "0"]);
    let (code, out, err) = atl(&strict);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(
        out.contains("max error vs interpreter"),
        "the report is still printed: {out}"
    );
    assert!(err.contains("E0939"), "{err}");
    assert!(err.contains("the kernel computes"), "{err}");
    assert!(err.contains("K=33,M=5,N=7"), "{err}");
    // The worst element named is one of the output: two coordinates within [5, 7].
    let at = err
        .split("at [")
        .nth(1)
        .expect("coordinates")
        .split(']')
        .next()
        .unwrap();
    let coords: Vec<usize> = at
        .split(", ")
        .map(|c| c.parse().expect("a coordinate"))
        .collect();
    assert!(coords.len() == 2 && coords[0] < 5 && coords[1] < 7, "{err}");
    // f64 computes the same sums in the same order as the interpreter: exact.
    let mut exact = strict.clone();
    exact.extend(["--dtype", "f64"]);
    let (code, out, err) = atl(&exact);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    let mut bad = base.to_vec();
    bad.extend(["--tolerance", "-1"]);
    assert_eq!(atl(&bad).0, EXIT_ARGS);
}

/// The summation length behind the default tolerance: a matmul's sum has K terms, a
/// triangular sum at most n, a let buffer's terms add to its reader's.
#[test]
fn summation_length_counts_the_longest_accumulation() {
    use atl_cli::commands::run::summation_length;
    let source = "size n, K\ninput A : [n, K]\ninput B : [K, n]\n\
        def mm = gen i < n: gen j < n: sum k < K: A[i, k] * B[k, j]\n\
        def tri = gen i < n: sum k in 0..i + 1: A[i, 0]\n\
        def staged = let t = gen i < n: sum k < K: A[i, k] in gen i < n: sum j < n: t[j]\n";
    let (checked, diags) = atl_lang::check_source(source);
    assert!(diags.is_empty(), "{diags:?}");
    let checked = checked.expect("the program checks");
    let sizes: std::collections::BTreeMap<String, i64> =
        [("n".to_string(), 6), ("K".to_string(), 40)].into();
    let length = |name: &str| {
        let def = checked
            .program
            .defs
            .iter()
            .find(|d| d.name == name)
            .unwrap();
        summation_length(&def.body, &sizes)
    };
    assert_eq!(length("mm"), 40);
    assert_eq!(length("tri"), 6);
    assert_eq!(length("staged"), 40 + 6);
}

/// `atl run` and `atl bench` choose the C symbol themselves (issue 21): a definition
/// named `main` (which `atl emit` refuses as a C function name, E0931) runs and is
/// timed, compared with the interpreter.
#[test]
fn run_and_bench_work_on_a_definition_named_main() {
    let dir = std::env::temp_dir().join(format!("atl-main-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("main.atl");
    std::fs::write(
        &file,
        "size n\ninput f : [n]\ndef twice = gen i < n: 2 * f[i]\ndef main = gen i < n: twice[i] + 1\n",
    )
    .unwrap();
    let file = file.display().to_string();
    let (code, out, err) = atl(&["run", &file, "--def", "main", "--sizes", "n=7"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("main (float): output shape [7]"), "{out}");
    let (code, out, err) = atl(&[
        "bench", &file, "--def", "main", "--vs", "twice", "--sizes", "n=100", "--runs", "2",
    ]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("ratio twice / main"), "{out}");
    // `atl emit` still refuses the name for a function others link.
    let (code, _, err) = atl(&["emit", &file, "--def", "main"]);
    assert_eq!(code, EXIT_USER);
    assert!(err.contains("E0931"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
