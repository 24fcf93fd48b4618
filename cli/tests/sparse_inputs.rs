//! A sparse matrix file given for a matrix input (`--input A=m.mtx`, `--input
//! A=m.npz` from `scipy.sparse.save_npz`) is read to its dense values, so the dense
//! specification of a sparse kernel runs on the files users have: `eval` and `run`
//! (compiled) give the matrix-vector product computed here by hand. A file whose
//! matrix does not have the input's shape, or that is malformed, is a user error
//! (E0608) naming the file and what is wrong.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::{EXIT_ARGS, EXIT_OK, EXIT_USER};
use common::{atl, write_npy};

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

fn values(json: &str) -> Vec<f64> {
    let v: serde_json::Value = serde_json::from_str(json.trim()).expect("JSON");
    v["data"]
        .as_array()
        .or_else(|| v["output"]["data"].as_array())
        .unwrap_or_else(|| panic!("no data in {v}"))
        .iter()
        .map(|d| d.as_f64().expect("number"))
        .collect()
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
