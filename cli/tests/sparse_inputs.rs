//! A sparse matrix file given for a matrix input (`--input A=m.mtx`, `--input
//! A=m.npz` from `scipy.sparse.save_npz`) is read to its dense values, so the dense
//! specification of a sparse kernel runs on the files users have: `eval` and `run`
//! (compiled) give the matrix-vector product computed here by hand. A file whose
//! matrix does not have the input's shape, or that is malformed, is a user error
//! (E0608) naming the file and what is wrong. A file given for a `sparse` matrix
//! (`sparse A : [M, N] as csr(…)`) is stored in its format, so one command line runs
//! the dense specification and the derivation over the arrays, in every format.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::{EXIT_ARGS, EXIT_OK, EXIT_USER};
use common::{atl, json_values as values, write_npy};

const SPMV: &str = "size M, N\ninput A : [M, N]\ninput x : [N]\n\
                    def spmv = gen i < M: sum j < N: A[i, j] * x[j]\n";

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../driver/test_data/sparse")
        .join(name)
        .display()
        .to_string()
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-sparse-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn a_sparse_file_feeds_a_dense_matrix_input() {
    let dir = scratch();
    let file = dir.join("spmv.atl");
    std::fs::write(&file, SPMV).expect("written");
    let file = file.display().to_string();
    let x = write_npy(&dir, "x.npy", &[4], &[1.0, 2.0, 3.0, 4.0]);
    // [[1 0 2 0] [0 0 0 3] [4 5 0 0]] · [1 2 3 4] = [7 12 14].
    for matrix in [
        "m.mtx",
        "m_csr.npz",
        "m_csc.npz",
        "m_coo.npz",
        "m_array.mtx",
    ] {
        let a = format!("A={}", fixture(matrix));
        let xs = format!("x={x}");
        let (code, out, err) = atl(&[
            "eval", &file, "--sizes", "M=3,N=4", "--input", &a, "--input", &xs, "--json",
        ]);
        assert_eq!(code, EXIT_OK, "{matrix}: {err}");
        assert_eq!(values(&out), [7.0, 12.0, 14.0], "{matrix}");
    }
    let a = format!("A={}", fixture("m_csr.npz"));
    let xs = format!("x={x}");
    let (code, out, err) = atl(&[
        "run", &file, "--sizes", "M=3,N=4", "--input", &a, "--input", &xs, "--json",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["mismatches"], 0, "{v}");
    assert_eq!(
        v["max_abs_error"], 0.0,
        "small integers: the kernel is exact, {v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_of_another_shape_or_a_malformed_file_is_a_user_error() {
    let dir = scratch().join("bad");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("spmv.atl");
    std::fs::write(&file, SPMV).expect("written");
    let file = file.display().to_string();
    let a = format!("A={}", fixture("m.mtx"));
    let (code, _, err) = atl(&["eval", &file, "--sizes", "M=4,N=4", "--input", &a]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("E0608"), "{err}");
    assert!(
        err.contains("3 x 4 matrix") && err.contains("[4, 4]"),
        "{err}"
    );
    let broken = dir.join("broken.mtx");
    std::fs::write(
        &broken,
        "%%MatrixMarket matrix coordinate real general\n3 4 1\n4 1 1\n",
    )
    .expect("written");
    let a = format!("A={}", broken.display());
    let (code, _, err) = atl(&["eval", &file, "--sizes", "M=3,N=4", "--input", &a]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("row index `4` is not in 1..=3"), "{err}");
    let truncated = dir.join("truncated.npz");
    let bytes = std::fs::read(fixture("m_csr.npz")).expect("fixture");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).expect("written");
    let a = format!("A={}", truncated.display());
    let (code, _, err) = atl(&["eval", &file, "--sizes", "M=3,N=4", "--input", &a]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("E0608"), "{err}");
    // Another extension is a usage error that names the accepted ones.
    let (code, _, err) = atl(&["eval", &file, "--sizes", "M=3,N=4", "--input", "A=m.csv"]);
    assert_eq!(code, EXIT_ARGS, "{err}");
    assert!(err.contains(".mtx") && err.contains(".npz"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The program of a `sparse` matrix `A` in `format` (its arrays `a0`, `a1`, …, then
/// `vals`), its dense product with `x`, and that product derived over the arrays.
fn sparse_program(format: &str) -> String {
    let (sizes, arrays): (&str, &[&str]) = match format {
        "csr" => (
            "M, N, K",
            &["int[M + 1] in 0..K + 1 sorted", "int[K] in 0..N"],
        ),
        "csc" => (
            "M, N, K",
            &["int[N + 1] in 0..K + 1 sorted", "int[K] in 0..M"],
        ),
        // R stored rows (columns) of K values.
        "dcsr" | "dcsc" => {
            let (outer, inner) = if format == "dcsr" {
                ("M", "N")
            } else {
                ("N", "M")
            };
            return program_with(
                format,
                "M, N, R, K",
                &[
                    "int[2] in 0..R + 1 sorted".to_string(),
                    format!("int[R] in 0..{outer}"),
                    "int[R + 1] in 0..K + 1 sorted".to_string(),
                    format!("int[K] in 0..{inner}"),
                ],
            );
        }
        _ => ("M, N, K", &["int[K] in 0..M", "int[K] in 0..N"]),
    };
    let arrays: Vec<String> = arrays.iter().map(|a| a.to_string()).collect();
    program_with(format, sizes, &arrays)
}

fn program_with(format: &str, sizes: &str, index_arrays: &[String]) -> String {
    let mut s = format!("size {sizes}\n");
    let mut names = Vec::new();
    for (k, decl) in index_arrays.iter().enumerate() {
        s.push_str(&format!("input a{k} : {decl}\n"));
        names.push(format!("a{k}"));
    }
    names.push("vals".to_string());
    format!(
        "{s}input vals : [K]\ninput x : [N]\n\
         sparse A : [M, N] as {format}({})\n\
         def spec = gen i < M: sum j < N: A[i, j] * x[j]\n\
         derive derived from spec {{\n  unfold A\n  rw get_gen\n  rw get_gen\n}}\n",
        names.join(", ")
    )
}

/// A file given for a `sparse` matrix is stored in its format and given to its
/// arrays, the sizes it fixes taken from it: the specification (reading `A`) and the
/// derivation (reading the arrays) evaluate and run to the product computed by hand,
/// with one command line, from every kind of file, in every format.
#[test]
fn a_file_given_for_a_sparse_matrix_serves_the_specification_and_its_derivations() {
    // Not under `scratch()`, which another test removes.
    let dir = std::env::temp_dir().join(format!("atl-sparse-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let x = write_npy(&dir, "x.npy", &[4], &[1.0, 2.0, 3.0, 4.0]);
    // The fixtures' matrix, dense too.
    let dense = write_npy(
        &dir,
        "m.npy",
        &[3, 4],
        &[1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0, 5.0, 0.0, 0.0],
    );
    for format in ["csr", "csc", "dcsr", "dcsc", "coo"] {
        let file = dir.join(format!("{format}.atl"));
        std::fs::write(&file, sparse_program(format)).expect("written");
        let file = file.display().to_string();
        for matrix in [fixture("m.mtx"), fixture("m_csc.npz"), dense.clone()] {
            for (command, def) in [("eval", "spec"), ("eval", "derived"), ("run", "derived")] {
                let (code, out, err) = atl(&[
                    command,
                    &file,
                    "--def",
                    def,
                    "--input",
                    &format!("A={matrix}"),
                    "--input",
                    &format!("x={x}"),
                    "--json",
                ]);
                assert_eq!(code, EXIT_OK, "{format} {matrix} {command} {def}: {err}");
                if command == "eval" {
                    assert_eq!(values(&out), [7.0, 12.0, 14.0], "{format} {matrix} {def}");
                } else {
                    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
                    assert_eq!(v["mismatches"], 0, "{v}");
                }
            }
        }
    }
    // Sizes given must agree with the file; an array given twice is refused.
    let file = dir.join("csr.atl").display().to_string();
    let a = format!("A={}", fixture("m.mtx"));
    let (code, _, err) = atl(&[
        "eval",
        &file,
        "--sizes",
        "K=4",
        "--input",
        &a,
        "--input",
        &format!("x={x}"),
    ]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(
        err.contains("E0608")
            && err.contains(
                "stored in csr, its array `a1` holds 5 element(s), and its declaration gives it 4"
            ),
        "{err}"
    );
    let (code, _, err) = atl(&["eval", &file, "--input", &a, "--input", &format!("a0={x}")]);
    assert_eq!(code, EXIT_ARGS, "{err}");
    assert!(err.contains("`a0` is given twice"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel whose temporaries cannot fit in memory at the sizes a file fixes is refused
/// before the call (E0611), not left to abort the process: the dense specification of
/// a 10^6 x 10^6 sparse matrix's product stores the matrix (4 TB of floats), while
/// the CSR kernel derived from it runs.
#[test]
fn a_kernel_whose_temporaries_cannot_fit_is_refused_before_the_call() {
    let dir = std::env::temp_dir().join(format!("atl-sparse-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let matrix = dir.join("huge.mtx");
    std::fs::write(
        &matrix,
        "%%MatrixMarket matrix coordinate real general\n1000000 1000000 2\n1 1 2.0\n1000000 7 3.0\n",
    )
    .expect("written");
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/spmv/spmv.atl")
        .display()
        .to_string();
    let a = format!("A={}", matrix.display());
    let (code, _, err) = atl(&[
        "bench",
        &example,
        "--def",
        "spmv",
        "--vs",
        "spmv_dense",
        "--input",
        &a,
        "--runs",
        "1",
    ]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(
        err.contains("E0611") && err.contains("the kernel `spmv_dense`"),
        "{err}"
    );
    let (code, out, err) = atl(&[
        "bench", &example, "--def", "spmv", "--input", &a, "--runs", "1", "--json",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("\"nnz\": 2"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A dense 3-dimensional `.npy` given for a tensor stored as compressed sparse fibers
/// is compressed into its seven arrays, with the sizes it fixes (the stored slices,
/// rows and values) taken from it: the dense specification, the CSF derivation of
/// `examples/ttv_csf` (a scatter of each fiber's dot product) evaluated and run, all
/// give the product computed here by hand. A matrix file for it is refused (E0608).
#[test]
fn a_dense_npy_given_for_a_csf_tensor_serves_its_derivation() {
    let dir = std::env::temp_dir().join(format!("atl-sparse-csf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/ttv_csf/ttv_csf.atl")
        .display()
        .to_string();
    // T : [2, 3, 2] with slice 0 empty, values at (1, 0, 1) = 2, (1, 2, 0) = 3,
    // (1, 2, 1) = 5; v = [10, 100].
    let mut t = vec![0.0; 12];
    t[6 + 1] = 2.0;
    t[6 + 4] = 3.0;
    t[6 + 5] = 5.0;
    let t = write_npy(&dir, "t.npy", &[2, 3, 2], &t);
    let v = write_npy(&dir, "v.npy", &[2], &[10.0, 100.0]);
    let want = [0.0, 0.0, 0.0, 200.0, 0.0, 530.0];
    for (command, def) in [("eval", "ttv_dense"), ("eval", "ttv"), ("run", "ttv")] {
        let (code, out, err) = atl(&[
            command,
            &example,
            "--def",
            def,
            "--input",
            &format!("T={t}"),
            "--input",
            &format!("v={v}"),
            "--json",
        ]);
        assert_eq!(code, EXIT_OK, "{command} {def}: {err}");
        if command == "eval" {
            assert_eq!(values(&out), want, "{def}");
        } else {
            let r: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
            assert_eq!(r["mismatches"], 0, "{r}");
        }
    }
    let (code, _, err) = atl(&[
        "eval",
        &example,
        "--input",
        &format!("T={}", fixture("m.mtx")),
        "--input",
        &format!("v={v}"),
    ]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(
        err.contains("E0608") && err.contains("a tensor of 2 dimension(s) (3 x 4), and `T` has 3"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
