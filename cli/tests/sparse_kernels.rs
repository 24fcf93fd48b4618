//! The sparse examples beyond SpMV: `examples/sparse/spmm.atl` (a CSR matrix times a
//! dense one, which is also an embedding bag with per-sample weights). `atl eval` of
//! the specification and of the derivation on a matrix given as a dense `.npy` equals
//! the product computed here over the dense matrices, on random matrices with empty
//! rows and columns; the compiled kernel is validated and agrees with the interpreter.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::EXIT_OK;
use atl_lang::rng::SplitMix64;
use common::{atl, json_values as values, write_npy};

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/sparse")
        .join(name)
        .display()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("atl-sparse-kernels-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn spmm_is_the_dense_product() {
    let dir = scratch("spmm");
    let mut rng = SplitMix64::new(5);
    for (m, n, k, percent) in [(1, 1, 1, 100), (5, 7, 3, 30), (9, 4, 8, 15), (3, 12, 17, 5)] {
        let mut a: Vec<f64> = (0..m * n)
            .map(|_| {
                if rng.below(100) < percent {
                    rng.below(13) as f64 - 6.0
                } else {
                    0.0
                }
            })
            .collect();
        if a.iter().all(|v| *v == 0.0) {
            a[rng.below(m * n)] = 3.0;
        }
        let b: Vec<f64> = (0..n * k).map(|_| rng.below(11) as f64 - 5.0).collect();
        let mut want = vec![0.0; m * k];
        for i in 0..m {
            for j in 0..n {
                for c in 0..k {
                    want[i * k + c] += a[i * n + j] * b[j * k + c];
                }
            }
        }
        let a_file = format!("A={}", write_npy(&dir, "a.npy", &[m, n], &a));
        let b_file = format!("B={}", write_npy(&dir, "b.npy", &[n, k], &b));
        let sizes = format!("M={m},N={n},K={k}");
        for def in ["spmm", "csr"] {
            let (code, out, err) = atl(&[
                "eval",
                &example("spmm.atl"),
                "--def",
                def,
                "--sizes",
                &sizes,
                "--input",
                &a_file,
                "--input",
                &b_file,
                "--json",
            ]);
            assert_eq!(code, EXIT_OK, "{def}: {err}");
            assert_eq!(values(&out), want, "{def} at {m} x {n} x {k}");
        }
        let (code, out, err) = atl(&[
            "run",
            &example("spmm.atl"),
            "--def",
            "csr",
            "--sizes",
            &sizes,
            "--input",
            &a_file,
            "--input",
            &b_file,
            "--json",
        ]);
        assert_eq!(code, EXIT_OK, "{err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
        assert_eq!(v["mismatches"], 0, "{v}");
    }
    let (code, _, err) = atl(&["validate", &example("spmm.atl"), "--def", "csr"]);
    assert_eq!(code, EXIT_OK, "not validated: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}
