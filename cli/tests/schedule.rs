//! `atl schedule`: a real (small, short) search whose result `atl check` replays and
//! `atl verify` checks, its JSON document, and its refusals.

mod common;

use atl_cli::{EXIT_ARGS, EXIT_OK, EXIT_USER};
use common::atl;

const MATMUL: &str = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
    def matmul = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]\n";

#[test]
fn a_searched_schedule_replays_and_verifies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("mm.atl");
    std::fs::write(&spec, MATMUL).expect("write");
    let out_file = dir.path().join("out.atl");
    std::fs::write(&out_file, MATMUL).expect("write");
    let (code, out, err) = atl(&[
        "schedule",
        spec.to_str().expect("utf-8"),
        "--sizes",
        "M=70,N=90,K=40",
        "--budget",
        "20",
        "-o",
        out_file.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, EXIT_OK, "{out}\n{err}");
    assert!(out.is_empty(), "the block goes to the file: {out}");
    assert!(err.contains("machine: "), "{err}");
    assert!(err.contains("best: "), "{err}");
    let written = std::fs::read_to_string(&out_file).expect("read");
    assert!(written.starts_with(MATMUL), "{written}");
    assert!(
        written.contains("derive matmul_scheduled from matmul {"),
        "{written}"
    );
    assert!(
        written.contains("# Found by `atl schedule` on "),
        "{written}"
    );
    // The result is an ordinary derivation: replayed and checked, with a certificate
    // the independent checker accepts, and a kernel that agrees with the interpreter.
    let out_path = out_file.to_str().expect("utf-8");
    let (code, out, err) = atl(&["check", out_path]);
    assert_eq!(code, EXIT_OK, "{out}\n{err}");
    let cert = dir.path().join("cert.json");
    let (code, out, err) = atl(&[
        "derive",
        out_path,
        "--def",
        "matmul_scheduled",
        "--cert",
        cert.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, EXIT_OK, "{out}\n{err}");
    let (code, out, err) = atl(&["verify", cert.to_str().expect("utf-8")]);
    assert_eq!(code, EXIT_OK, "{out}\n{err}");
    let (code, out, err) = atl(&[
        "run",
        out_path,
        "--def",
        "matmul_scheduled",
        "--sizes",
        "M=13,N=37,K=9",
        "--dtype",
        "f64",
    ]);
    assert_eq!(code, EXIT_OK, "{out}\n{err}");
}

#[test]
fn the_json_document_lists_the_candidates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("mm.atl");
    std::fs::write(&spec, MATMUL).expect("write");
    let (code, out, err) = atl(&[
        "schedule",
        spec.to_str().expect("utf-8"),
        "--sizes",
        "M=40,N=40,K=40",
        "--budget",
        "8",
        "--json",
    ]);
    assert_eq!(code, EXIT_OK, "{out}\n{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(doc["command"], "schedule");
    assert_eq!(doc["def"], "matmul");
    assert!(
        doc["machine"]["vector_bits"]
            .as_u64()
            .is_some_and(|b| b >= 64),
        "{doc}"
    );
    let tried = doc["tried"].as_array().expect("tried");
    assert!(!tried.is_empty());
    assert!(tried.iter().any(|t| t["verdict"] == "timed"), "{doc}");
    // The best is the fastest of the leaders timed again interleaved, or, with one
    // candidate timed, that one.
    let best = doc["best_median_ms"].as_f64().expect("a best time");
    let rematch = doc["rematch"].as_array().expect("rematch");
    let pool: Vec<f64> = if rematch.is_empty() {
        tried
            .iter()
            .filter_map(|t| t["median_ms"].as_f64())
            .collect()
    } else {
        assert!(rematch.len() >= 2 && rematch.len() <= 3, "{doc}");
        rematch
            .iter()
            .filter_map(|t| t["median_ms"].as_f64())
            .collect()
    };
    let fastest = pool.into_iter().fold(f64::INFINITY, f64::min);
    assert_eq!(best, fastest, "the best is the fastest: {doc}");
    assert!(
        doc["derive"]
            .as_str()
            .is_some_and(|d| d.contains("derive matmul_scheduled"))
    );
}

#[test]
fn schedule_refuses_what_it_cannot_search() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A maximum (not a nest the search tiles), in a stage of its own that inlining
    // would recompute per element, read by a nest: nothing to search.
    let staged = dir.path().join("staged.atl");
    std::fs::write(
        &staged,
        "size n\ninput f : [n]\ndef g = let t = gen i < n: max j < n: f[j] * f[i] in t[0]\n",
    )
    .expect("write");
    let (code, _, err) = atl(&[
        "schedule",
        staged.to_str().expect("utf-8"),
        "--sizes",
        "n=64",
        "--budget",
        "5",
    ]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("E0960") && err.contains("`g`"), "{err}");
    let spec = dir.path().join("mm.atl");
    std::fs::write(&spec, MATMUL).expect("write");
    let spec = spec.to_str().expect("utf-8");
    // A missing size is the sizes' usual error.
    let (code, _, err) = atl(&["schedule", spec, "--sizes", "M=4,N=4", "--budget", "5"]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("E0601"), "{err}");
    // An output file that is not text is refused before anything is searched, and left
    // as it was.
    let binary = dir.path().join("binary.atl");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x80]).expect("write");
    let (code, _, err) = atl(&[
        "schedule",
        spec,
        "--sizes",
        "M=8,N=8,K=8",
        "--budget",
        "2",
        "-o",
        binary.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, EXIT_ARGS, "{err}");
    assert!(err.contains("cannot read"), "{err}");
    assert_eq!(
        std::fs::read(&binary).expect("read"),
        [0xff, 0xfe, 0x00, 0x80]
    );
    // Bad budgets and thread counts are argument errors.
    for bad in [
        &["--budget", "0"][..],
        &["--budget", "nan"],
        &["--budget", "-3"],
        &["--threads", "0"],
    ] {
        let mut args = vec!["schedule", spec, "--sizes", "M=4,N=4,K=4"];
        args.extend(bad);
        let (code, _, err) = atl(&args);
        assert_eq!(code, EXIT_ARGS, "{bad:?}: {err}");
    }
}

/// A definition that reads a sparse matrix is not a dense nest the search can tile:
/// E0960 says what to do, derive over the stored values (the dense specification) or
/// schedule by hand (the derived scatter), naming the matrix.
#[test]
fn schedule_says_how_to_schedule_a_sparse_product() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/spmv/spmv_csc.atl")
        .display()
        .to_string();
    for (def, says) in [
        (
            "spmv_dense",
            "reads the sparse matrix `A` as a dense one: derive it",
        ),
        (
            "spmv",
            "iterates over the stored values of the sparse matrix `A`",
        ),
    ] {
        let (code, _, err) = atl(&[
            "schedule",
            &example,
            "--def",
            def,
            "--sizes",
            "n=64,m=64,nnz=200",
            "--budget",
            "5",
        ]);
        assert_eq!(code, EXIT_USER, "{err}");
        assert!(err.contains("E0960") && err.contains(says), "{def}: {err}");
    }
}
