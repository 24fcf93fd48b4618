//! Index arrays from the command line: a compressed-row product evaluates on `.npy`
//! files of 32-bit integers (as numpy saves `indptr`/`indices`) to the product
//! computed here by hand; a derivation over loads is certified and verified, the
//! certificate's claim naming the arrays' declarations; a declaration too weak to
//! keep `vals[p]` in bounds is refused by access safety; an array that breaks its
//! declaration is E0610; the kernel is validated (its reads of index arrays proved
//! inside them) and runs; `atl emit --python` writes its module, which maps the
//! kernel's entry statuses to the arrays the header lists (the module is run by
//! `integration_python.rs`).

mod common;

use std::path::{Path, PathBuf};

use atl_cli::{EXIT_OK, EXIT_USER};
use common::{atl, json_values as values, write_npy};

const PROGRAM: &str = "size n, m, nnz
input pos : int[n + 1] in 0..nnz + 1 sorted
input crd : int[nnz] in 0..m
input vals : [nnz]
input v : [m]
def spmv = gen i < n: sum p in pos[i]..pos[i + 1]: vals[p] * v[crd[p]]
def via_dense = gen i < n: sum j < m: (sum p in pos[i]..pos[i + 1]: [crd[p] == j] * vals[p]) * v[j]
derive swapped from via_dense {
  rw mul_sum_r
  rw sum_swap
  rw guard_mul_l
}
";

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-index-arrays-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// An `.npy` file of little-endian `int32` values.
fn write_int32(dir: &Path, name: &str, data: &[i32]) -> String {
    let mut header = format!(
        "{{'descr': '<i4', 'fortran_order': False, 'shape': ({},), }}",
        data.len()
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in data {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("written");
    path.display().to_string()
}

struct Files {
    program: String,
    inputs: Vec<String>,
}

/// [[1 0 2] [0 3 0]] in compressed rows, and v = [1 10 100].
fn files(dir: &Path, pos: &[i32]) -> Files {
    std::fs::create_dir_all(dir).expect("temp dir");
    let program = dir.join("spmv.atl");
    std::fs::write(&program, PROGRAM).expect("written");
    Files {
        program: program.display().to_string(),
        inputs: vec![
            format!("pos={}", write_int32(dir, "pos.npy", pos)),
            format!("crd={}", write_int32(dir, "crd.npy", &[0, 2, 1])),
            format!(
                "vals={}",
                write_npy(dir, "vals.npy", &[3], &[1.0, 2.0, 3.0])
            ),
            format!("v={}", write_npy(dir, "v.npy", &[3], &[1.0, 10.0, 100.0])),
        ],
    }
}

fn eval(f: &Files, def: &str) -> (i32, String, String) {
    let mut args = vec![
        "eval",
        f.program.as_str(),
        "--def",
        def,
        "--sizes",
        "n=2,m=3,nnz=3",
        "--json",
    ];
    for i in &f.inputs {
        args.extend(["--input", i.as_str()]);
    }
    atl(&args)
}

#[test]
fn a_compressed_row_product_evaluates_on_integer_npy_files() {
    let dir = scratch().join("eval");
    let f = files(&dir, &[0, 2, 3]);
    for def in ["spmv", "via_dense", "swapped"] {
        let (code, out, err) = eval(&f, def);
        assert_eq!(code, EXIT_OK, "{def}: {err}");
        // [1*1 + 2*100, 3*10].
        assert_eq!(values(&out), vec![201.0, 30.0], "{def}");
    }
    // A decreasing `pos` breaks `sorted`.
    let f = files(&dir, &[0, 3, 2]);
    let (code, _, err) = eval(&f, "spmv");
    assert_eq!(code, EXIT_USER);
    assert!(
        err.contains("E0610") && err.contains("less than element 1"),
        "{err}"
    );
}

#[test]
fn a_derivation_over_loads_is_certified_under_the_arrays_declarations() {
    let dir = scratch().join("cert");
    let f = files(&dir, &[0, 2, 3]);
    let cert = dir.join("swapped.json").display().to_string();
    let (code, _, err) = atl(&["derive", &f.program, "--def", "swapped", "--cert", &cert]);
    assert_eq!(code, EXIT_OK, "{err}");
    let (code, out, err) = atl(&["verify", &cert, "--json"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["verdict"], "accepted");
    assert_eq!(
        v["index_arrays"],
        serde_json::json!([
            "input pos : int[n + 1] in 0..nnz + 1 sorted",
            "input crd : int[nnz] in 0..m"
        ])
    );
}

#[test]
fn a_declaration_too_weak_for_the_accesses_is_refused() {
    let dir = scratch().join("weak");
    std::fs::create_dir_all(&dir).expect("dir");
    // With `pos` up to nnz + 1, p can reach nnz; with `crd` up to m, crd[p] can be m.
    for (from, to) in [
        ("in 0..nnz + 1 sorted", "in 0..nnz + 2 sorted"),
        ("in 0..m\n", "in 0..m + 1\n"),
    ] {
        let program = dir.join("weak.atl");
        std::fs::write(&program, PROGRAM.replace(from, to)).expect("written");
        let (code, _, err) = atl(&["check", &program.display().to_string()]);
        assert_eq!(code, EXIT_USER, "{to}");
        assert!(err.contains("E0903"), "{to}: {err}");
    }
}

#[test]
fn the_kernel_is_validated_and_runs_and_the_python_module_passes_its_index_arrays() {
    let dir = scratch().join("lower");
    let f = files(&dir, &[0, 2, 3]);
    let (code, out, err) = atl(&["validate", &f.program, "--def", "spmv"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("verdict: validated"), "{out}");
    assert!(
        out.contains("read `crd[p]` inside its index array"),
        "{out}"
    );
    let mut args = vec![
        "run",
        f.program.as_str(),
        "--def",
        "spmv",
        "--sizes",
        "n=2,m=3,nnz=3",
        "--json",
    ];
    for i in &f.inputs {
        args.extend(["--input", i.as_str()]);
    }
    let (code, out, err) = atl(&args);
    assert_eq!(code, EXIT_OK, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    // The kernel agrees with the interpreter, whose value is [201, 30] (above).
    assert_eq!(v["verdict"], "agrees", "{v}");
    assert_eq!(v["mismatches"], 0, "{v}");
    assert_eq!(v["worst"]["kernel"], 201.0, "{v}");
    let py = dir.join("py").display().to_string();
    let (code, _, err) = atl(&["emit", &f.program, "--def", "spmv", "--python", &py]);
    assert_eq!(code, EXIT_OK, "{err}");
    // The module turns each status the header lists for an index array into an error
    // naming the array with the header's text.
    let module = std::fs::read_to_string(dir.join("py/spmv.py")).expect("the module");
    for variant in ["f32", "f64"] {
        let header =
            std::fs::read_to_string(dir.join(format!("py/spmv_{variant}.h"))).expect("header");
        // `crd` is checked where the kernel reads it (`lower/src/checks_at_use.rs`).
        for (status, array, declaration, how) in [
            (4, "pos", "0 <= pos[k] < nnz + 1, non-decreasing", ""),
            (5, "crd", "0 <= crd[k] < m", ", checked where read"),
        ] {
            let listed = format!("{status}  {declaration}  (index array{how})");
            assert!(header.contains(&listed), "{listed} in {header}");
            let mapped = format!("{status}: (\"{array}\", \"{declaration}\")");
            assert!(module.contains(&mapped), "{mapped} in {module}");
        }
        let c = std::fs::read_to_string(dir.join(format!("py/spmv_{variant}.c"))).expect("C");
        assert!(c.contains("const int32_t *restrict crd"), "{c}");
    }
    assert!(
        module.contains("crd = _atl_index(\"crd\", crd, \"[nnz]\")"),
        "{module}"
    );
}

/// A guarded gather whose index array is read past its end where the guard is false:
/// lowering once evaluated the whole term whatever the guard (a blend), so the kernel
/// read `crd[n]`; the validator refuted it (E0951) and `atl emit` refused it. The read
/// of `crd` now stays under the guard, and the kernel is validated and runs.
#[test]
fn a_guarded_gather_reads_its_index_array_only_under_the_guard() {
    let dir = scratch().join("guarded");
    std::fs::create_dir_all(&dir).expect("dir");
    let program = dir.join("guarded.atl");
    std::fs::write(
        &program,
        "size n\ninput f : [n]\ninput crd : int[n] in 0..n\n\
         def a = sum i < n + 1: [i < n] * f[crd[i]]\n",
    )
    .expect("write");
    let program = program.display().to_string();
    let (code, out, err) = atl(&["validate", &program, "--def", "a"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("verdict: validated"), "{out}");
    let f = write_npy(&dir, "f.npy", &[3], &[1.0, 10.0, 100.0]);
    let crd = write_int32(&dir, "crd.npy", &[2, 2, 0]);
    let (code, out, err) = atl(&[
        "run",
        &program,
        "--def",
        "a",
        "--sizes",
        "n=3",
        "--json",
        "--input",
        &format!("f={f}"),
        "--input",
        &format!("crd={crd}"),
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    // f[2] + f[2] + f[0] = 201.
    assert_eq!(v["verdict"], "agrees", "{v}");
    assert_eq!(v["worst"]["kernel"], 201.0, "{v}");
}

/// A guard may read an index array anywhere: outside, ATL reads 0
/// (`[crd[p + 1] == i]` compares 0 with `i` at the last `p`). Lowering emitted the
/// read as written, past the array, and the validator refuted it (E0951); the
/// condition now reads `crd[p + 1]` only under `p + 1 < nnz`. The scatter form (a
/// one-hot generator whose target may be outside) is then lowered as the loop, so
/// that the out-of-range case adds into element 0 as ATL says. A tensor read at such
/// a coordinate, `vals[crd[p + 1]]`, is `vals[0]` there (it was a zero: not
/// validated), and a sum to `crd[i + 1]` an empty sum. All validate and run to the
/// values computed here by hand.
#[test]
fn a_guard_reading_past_an_index_array_reads_zero_and_nothing_past_it() {
    let dir = scratch().join("past");
    std::fs::create_dir_all(&dir).expect("dir");
    let program = dir.join("past.atl");
    // n = nnz, so that vals[crd[…]] is inside vals.
    std::fs::write(
        &program,
        "size n, nnz\nassume n == nnz\ninput crd : int[nnz] in 0..n\ninput vals : [nnz]\n\
         def scatter = sum p < nnz: gen i < n: [crd[p + 1] == i] * vals[p]\n\
         def gather = gen i < n: sum p < nnz: [crd[p + 1] == i] * vals[p]\n\
         def read = gen i < n: sum p < nnz: [i == 0] * (vals[p] * vals[crd[p + 1]])\n\
         def spelled = gen i < n: sum p < nnz: [i == 0] * (vals[p] * vals[crd[min(p + 1, nnz)]])\n\
         def bound = gen i < n: sum j < crd[i + 1]: vals[j]\n",
    )
    .expect("write");
    let program = program.display().to_string();
    let vals = write_npy(&dir, "vals.npy", &[3], &[1.0, 10.0, 100.0]);
    let crd = write_int32(&dir, "crd.npy", &[2, 1, 2]);
    for (def, want) in [
        // vals[0] at crd[1] = 1, vals[1] at crd[2] = 2, vals[2] at 0 (past the array).
        ("scatter", [100.0, 1.0, 10.0]),
        ("gather", [100.0, 1.0, 10.0]),
        // vals[0] vals[crd[1]] + vals[1] vals[crd[2]] + vals[2] vals[0] (crd[3] is
        // past the array: 0) = 10 + 1000 + 100.
        ("read", [1110.0, 0.0, 0.0]),
        // The same read spelled otherwise than its normalized form (`min(nnz, p +
        // 1)`): lowering replaced the read in the indices as written, found nothing,
        // and recursed until the stack overflowed (soundness fuzzer, seed 36, case
        // 580).
        ("spelled", [1110.0, 0.0, 0.0]),
        // A sum's bound read past the array: the loop to `crd[i + 1]` ran to the
        // value past it at i = 2 (soundness fuzzer, seed 48, case 1167: the validator
        // refuted it, E0951); it is now split on the read being inside, an empty sum
        // outside. vals[0], vals[0] + vals[1], and the sum to crd[3] = 0.
        ("bound", [1.0, 11.0, 0.0]),
    ] {
        let (code, out, err) = atl(&["validate", &program, "--def", def]);
        assert_eq!(code, EXIT_OK, "{def}: {err}");
        assert!(out.contains("verdict: validated"), "{def}: {out}");
        let (vals, crd) = (format!("vals={vals}"), format!("crd={crd}"));
        let call = |command: &str| {
            atl(&[
                command,
                &program,
                "--def",
                def,
                "--sizes",
                "n=3,nnz=3",
                "--json",
                "--input",
                &vals,
                "--input",
                &crd,
            ])
        };
        let (code, out, err) = call("run");
        assert_eq!(code, EXIT_OK, "{def}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
        assert_eq!(v["verdict"], "agrees", "{def}: {v}");
        let (code, out, err) = call("eval");
        assert_eq!(code, EXIT_OK, "{def}: {err}");
        assert_eq!(values(&out), want, "{def}");
    }
}

/// The certificate of a derivation from a `sparse` matrix's product records the
/// matrix's item with its definition: `atl verify` re-derives the body from the
/// format and names the item in its claim; a body or a format edited is refused.
#[test]
fn a_sparse_matrix_is_recorded_with_its_format_and_checked_against_it() {
    let dir = scratch().join("sparse-cert");
    std::fs::create_dir_all(&dir).expect("dir");
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/spmv/spmv.atl")
        .display()
        .to_string();
    let cert = dir.join("spmv.json");
    let cert_path = cert.display().to_string();
    let (code, _, err) = atl(&["derive", &example, "--def", "spmv", "--cert", &cert_path]);
    assert_eq!(code, EXIT_OK, "{err}");
    let (code, out, err) = atl(&["verify", &cert_path, "--json"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["verdict"], "accepted");
    assert_eq!(
        v["sparse"],
        serde_json::json!(["sparse A : [n, m] as csr(pos, crd, vals)"])
    );
    let text = std::fs::read_to_string(&cert).expect("certificate");
    let edits = [
        // The values doubled in the body, then the format changed under the body.
        ("* vals[p]", "* (2 * vals[p])"),
        ("as csr(pos", "as csc(pos"),
    ];
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        let edited = dir.join("edited.json");
        std::fs::write(&edited, text.replacen(from, to, 1)).expect("written");
        let (code, _, err) = atl(&["verify", &edited.display().to_string()]);
        assert_eq!(code, EXIT_USER, "{to}: {err}");
        assert!(
            err.contains("E1002") && err.contains("is not the matrix that `sparse A"),
            "{to}: {err}"
        );
    }
}
