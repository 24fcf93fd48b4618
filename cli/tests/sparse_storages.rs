//! One sparse matrix in several storages (`sparse A : [M, N] as csr(…), csc(…), …`)
//! and `unfold A as FORMAT`: `examples/sparse/spmv.atl` (a fixed contract: the
//! specification `spmv` and the derivations `csr`, `csc`, `dcsr`, `coo`, `bcsr`) runs on one
//! file given for `A` with every definition, each compiled kernel validates and agrees
//! with the interpreter, and the values are the thesis's and those of a product
//! computed here over the dense matrix. The refusals: a storage the matrix does not
//! have, a definition that would read two storages of one matrix (engine and
//! certificate checker), two storages in one format or sharing an array.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::{EXIT_OK, EXIT_USER};
use atl_lang::rng::SplitMix64;
use common::{atl, json_values as values, write_npy};

const DEFS: [&str; 6] = ["spmv", "csr", "csc", "dcsr", "coo", "bcsr"];

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/sparse/spmv.atl")
        .display()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-storages-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `atl eval` of `def` on the dense matrix `a` (rows x cols) and vector `x`.
fn eval(dir: &Path, def: &str, rows: usize, cols: usize, a: &[f64], x: &[f64]) -> Vec<f64> {
    let a = write_npy(dir, "a.npy", &[rows, cols], a);
    let x = write_npy(dir, "x.npy", &[cols], x);
    let sizes = format!("M={rows},N={cols}");
    let (code, out, err) = atl(&[
        "eval",
        &example(),
        "--def",
        def,
        "--sizes",
        &sizes,
        "--input",
        &format!("A={a}"),
        "--input",
        &format!("x={x}"),
        "--json",
    ]);
    assert_eq!(code, EXIT_OK, "{def}: {err}");
    values(&out)
}

#[test]
fn every_storage_gives_the_theses_product() {
    let dir = scratch("thesis");
    // Thesis §7.1's matrix; y = A x with x = [1, 2, 3, 4, 5] is [11, 0, 18, 15].
    let a = [
        0., 3., 0., 0., 1., //
        0., 0., 0., 0., 0., //
        2., 0., 0., 4., 0., //
        0., 0., 5., 0., 0.,
    ];
    let x = [1., 2., 3., 4., 5.];
    for def in DEFS {
        assert_eq!(eval(&dir, def, 4, 5, &a, &x), [11., 0., 18., 15.], "{def}");
    }
    // Each derived kernel is validated (`atl validate` exits 0 only then) and, run on
    // the same file, agrees with the interpreter.
    let a = write_npy(&dir, "a.npy", &[4, 5], &a);
    let x = write_npy(&dir, "x.npy", &[5], &x);
    for def in &DEFS[1..] {
        let (code, _, err) = atl(&["validate", &example(), "--def", def]);
        assert_eq!(code, EXIT_OK, "{def} is not validated: {err}");
        let (code, out, err) = atl(&[
            "run",
            &example(),
            "--def",
            def,
            "--sizes",
            "M=4,N=5",
            "--input",
            &format!("A={a}"),
            "--input",
            &format!("x={x}"),
            "--json",
        ]);
        assert_eq!(code, EXIT_OK, "{def}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
        assert_eq!(v["mismatches"], 0, "{def}: {v}");
        assert_eq!(
            v["max_abs_error"], 0.0,
            "{def}: small integers are exact, {v}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Random matrices with empty rows and columns, a single value and none, against the
/// product computed here (small integers, so every order of additions is exact).
#[test]
fn every_storage_agrees_with_the_dense_product() {
    let dir = scratch("random");
    let mut rng = SplitMix64::new(31);
    let cases = [
        (1, 1, 100),
        (3, 7, 30),
        (8, 2, 50),
        (6, 6, 10),
        (9, 4, 5),
        (5, 3, 0),
    ];
    for (rows, cols, percent) in cases {
        let a: Vec<f64> = (0..rows * cols)
            .map(|_| {
                if rng.below(100) < percent {
                    rng.below(19) as f64 - 9.0
                } else {
                    0.0
                }
            })
            .collect();
        let x: Vec<f64> = (0..cols).map(|_| rng.below(9) as f64 - 4.0).collect();
        let expected: Vec<f64> = (0..rows)
            .map(|i| (0..cols).map(|j| a[i * cols + j] * x[j]).sum())
            .collect();
        for def in DEFS {
            assert_eq!(
                eval(&dir, def, rows, cols, &a, &x),
                expected,
                "{def} at {rows} x {cols}: {a:?}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

const TWO: &str = "size n, m, nnz
input pos : int[n + 1] in 0..nnz + 1 sorted
input crd : int[nnz] in 0..m
input vals : [nnz]
input cpos : int[m + 1] in 0..nnz + 1 sorted
input crow : int[nnz] in 0..n
input cvals : [nnz]
input v : [m]
";

fn check(dir: &Path, source: &str) -> (i32, String) {
    let file = dir.join("p.atl");
    std::fs::write(&file, source).expect("written");
    let (code, _, err) = atl(&["check", &file.display().to_string()]);
    (code, err)
}

#[test]
fn a_storage_must_exist_and_a_definition_reads_one_storage() {
    let dir = scratch("refusals");
    let sparse = "sparse A : [n, m] as csr(pos, crd, vals), csc(cpos, crow, cvals)\n";
    let spec = "def y = gen i < n: sum j < m: A[i, j] * v[j]\n";
    // The accepted form, so that the refusals below are about what they change.
    let ok = format!("{TWO}{sparse}{spec}derive z from y {{\n  unfold A as csc\n}}\n");
    assert_eq!(check(&dir, &ok).0, EXIT_OK);
    let (code, err) = check(
        &dir,
        &format!("{TWO}{sparse}{spec}derive z from y {{\n  unfold A as coo\n}}\n"),
    );
    assert_eq!(code, EXIT_USER);
    assert!(
        err.contains("E0813") && err.contains("`A` is not stored as `coo`"),
        "{err}"
    );
    assert!(
        err.contains("`csr`, `csc`"),
        "the storages are listed: {err}"
    );
    // The specification also reads the first storage's values directly.
    let mixed = "def y = gen i < n: sum j < m: A[i, j] * v[j] + vals[0]\n";
    let (code, err) = check(
        &dir,
        &format!("{TWO}{sparse}{mixed}derive z from y {{\n  unfold A as csc\n}}\n"),
    );
    assert_eq!(code, EXIT_USER);
    assert!(
        err.contains("E0813") && err.contains("would read `A` stored as `csr` and `csc`"),
        "{err}"
    );
    let (code, err) = check(
        &dir,
        &format!("{TWO}{spec}derive z from y {{\n  unfold v as csr\n}}\n")
            .replace("def y", "sparse A : [n, m] as csr(pos, crd, vals)\ndef y"),
    );
    assert_eq!(code, EXIT_USER);
    assert!(err.contains("`v` is not a sparse matrix"), "{err}");
    let (code, err) = check(
        &dir,
        &format!("{TWO}sparse A : [n, m] as csr(pos, crd, vals), csr(cpos, crow, cvals)\n"),
    );
    assert_eq!(code, EXIT_USER);
    assert!(
        err.contains("E0314") && err.contains("stored as `csr` twice"),
        "{err}"
    );
    let (code, err) = check(
        &dir,
        &format!("{TWO}sparse A : [n, m] as csr(pos, crd, vals), csc(cpos, crow, vals)\n"),
    );
    assert_eq!(code, EXIT_USER);
    assert!(
        err.contains("E0314") && err.contains("`vals` is given twice"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The certificate checker re-reads the storage from the recorded `sparse` item, and
/// refuses an edited certificate whose `unfold A as csc` step leaves the program
/// reading both storages.
#[test]
fn the_checker_reads_the_storage_and_refuses_two() {
    let dir = scratch("cert");
    let sparse = "sparse A : [n, m] as csr(pos, crd, vals), csc(cpos, crow, cvals)\n";
    let source = format!(
        "{TWO}{sparse}def y = gen i < n: sum j < m: A[i, j] * v[j]\n\
         derive z from y {{\n  unfold A as csc\n}}\n"
    );
    let file = dir.join("c.atl");
    std::fs::write(&file, &source).expect("written");
    let file = file.display().to_string();
    let cert = dir.join("z.json").display().to_string();
    let (code, _, err) = atl(&["derive", &file, "--def", "z", "--cert", &cert]);
    assert_eq!(code, EXIT_OK, "{err}");
    let (code, _, err) = atl(&["verify", &cert]);
    assert_eq!(code, EXIT_OK, "{err}");
    let text = std::fs::read_to_string(&cert).expect("certificate");
    // The storage the step reads is the recorded item's: naming another is refused.
    let other = text.replace("unfold A as csc", "unfold A as coo");
    assert_ne!(other, text);
    std::fs::write(&cert, &other).expect("written");
    let (code, out, err) = atl(&["verify", &cert]);
    assert_ne!(code, EXIT_OK, "{out}");
    assert!(err.contains("as `coo`"), "{err}");
    // The chain edited to read the first storage's values too, consistently (the
    // specification, the initial program, the step's result and its path): each
    // program is well formed, and the unfold leaves both storages read.
    let mut edited: serde_json::Value =
        serde_json::from_str(&text.replace("* v[j]\"", "* v[j] + vals[0]\"")).expect("JSON");
    edited["steps"][0]["path"] = serde_json::json!([0, 0, 0, 0, 0, 0]);
    std::fs::write(&cert, edited.to_string()).expect("written");
    let (code, out, err) = atl(&["verify", &cert]);
    assert_ne!(code, EXIT_OK, "{out}");
    assert!(
        err.contains("E1004") && err.contains("reads `A` stored as `csr` and `csc`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel derived through one storage takes that storage's arrays and sizes only:
/// the BCSR kernel's parameters are `M`, `N`, `nb`, its three arrays, `x` and the
/// output, not the other storages' `nnz` and `nr` (a caller holding a BCSR matrix has
/// no such numbers).
#[test]
fn a_kernel_takes_the_sizes_and_arrays_of_its_storage() {
    let dir = scratch("signature");
    let c = dir.join("bcsr.c").display().to_string();
    let (code, _, err) = atl(&["emit", &example(), "--def", "bcsr", "-o", &c]);
    assert_eq!(code, EXIT_OK, "{err}");
    let source = std::fs::read_to_string(&c).expect("C written");
    let start = source.find("int bcsr(").expect("the kernel's definition");
    let signature = &source[start..start + source[start..].find(')').expect("closed")];
    let parameters: Vec<&str> = signature["int bcsr(".len()..]
        .split(',')
        .map(|p| p.trim().rsplit([' ', '*']).next().unwrap_or(""))
        .collect();
    assert_eq!(
        parameters,
        [
            "M",
            "N",
            "nb",
            "bcsr_pos",
            "bcsr_crd",
            "bcsr_vals",
            "x",
            "out"
        ],
        "{signature}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
