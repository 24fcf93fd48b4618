//! Kernels that read index arrays (issue 31): a compressed-row product is lowered,
//! compiled (under the sanitizers with `ATL_SANITIZE=1`) and run, and
//! agrees with the product computed here from the dense matrix; its index arrays are
//! `int32_t` parameters; and the compiled C itself refuses, before writing anything,
//! arrays that break their declarations (called directly, below the Rust-side check),
//! with the status the header documents.

mod common;

use std::collections::BTreeMap;

use atl_emit_c::{EmitOptions, Tensor, compile, emit};

const SPMV: &str = "size n, m, nnz
input pos : int[n + 1] in 0..nnz + 1 sorted
input crd : int[nnz] in 0..m
input vals : [nnz]
input v : [m]
def spmv = gen i < n: sum p in pos[i]..pos[i + 1]: vals[p] * v[crd[p]]
";

/// The product lowered with lowering's fast solver: it cannot prove `p < nnz`, so the
/// loads are guarded and `crd` is checked on entry.
fn lowered() -> atl_lower::Kernel {
    lowered_with(&atl_lower::fast_solver())
}

/// The product lowered with z3 (as `atl` lowers): the loads are unguarded and `crd`
/// is checked where it is read.
fn lowered_checked_where_read() -> atl_lower::Kernel {
    let kernel = lowered_with(&atl_solver::Solver::default());
    let crd = kernel.inputs.iter().find(|b| b.name == "crd").expect("crd");
    assert!(
        crd.checked_where_read,
        "{}",
        atl_lower::kernel_to_string(&kernel)
    );
    kernel
}

fn lowered_with(solver: &atl_solver::Solver) -> atl_lower::Kernel {
    let (checked, diags) = atl_lang::check_source(SPMV);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    atl_lower::lower_def_with(
        &checked.program,
        &checked.shapes,
        "spmv",
        solver,
        &Default::default(),
    )
    .expect("lowers")
}

fn vector(values: &[f64]) -> Tensor {
    Tensor::new(vec![values.len()], values.to_vec()).expect("a vector")
}

#[test]
fn a_compressed_row_product_is_validated_compiled_and_right() {
    let kernel = lowered();
    let code = emit(&kernel, &EmitOptions::default()).expect("emits");
    for param in ["const int32_t *restrict pos", "const int32_t *restrict crd"] {
        assert!(code.source.contains(param), "{param}");
    }
    // [[1 0 2 0] [0 0 0 0] [0 3 0 4]] in compressed rows; row 1 is empty.
    let a = [[1.0, 0.0, 2.0, 0.0], [0.0; 4], [0.0, 3.0, 0.0, 4.0]];
    let v = [1.0, 10.0, 100.0, 1000.0];
    let expected: Vec<f64> = a
        .iter()
        .map(|row| row.iter().zip(&v).map(|(x, y)| x * y).sum())
        .collect();
    let sizes = BTreeMap::from([
        ("n".to_string(), 3),
        ("m".to_string(), 4),
        ("nnz".to_string(), 4),
    ]);
    let inputs = BTreeMap::from([
        ("pos".to_string(), vector(&[0.0, 2.0, 2.0, 4.0])),
        ("crd".to_string(), vector(&[0.0, 2.0, 1.0, 3.0])),
        ("vals".to_string(), vector(&[1.0, 2.0, 3.0, 4.0])),
        ("v".to_string(), vector(&v)),
    ]);
    let compiled =
        compile(&kernel, &EmitOptions::default(), &common::compile_options()).expect("compiles");
    let out = compiled.run(&sizes, &inputs).expect("runs");
    assert_eq!(out.output.data, expected);
    // The Rust-side check refuses a column out of range before the call.
    let mut bad = inputs.clone();
    bad.insert("crd".to_string(), vector(&[0.0, 2.0, 4.0, 3.0]));
    let err = compiled.run(&sizes, &bad).expect_err("refused");
    assert_eq!(err.code, "E0610", "{err:?}");
}

/// Calls the kernel from C with `pos` and `crd` as given (n = 3, m = 4, nnz = 4) and
/// returns its status and whether it left the output untouched.
fn status_of(pos: [i32; 4], crd: [i32; 4]) -> (i32, bool) {
    status_of_kernel(&lowered(), pos, crd)
}

fn status_of_kernel(kernel: &atl_lower::Kernel, pos: [i32; 4], crd: [i32; 4]) -> (i32, bool) {
    status_of_kernel_with(kernel, pos, crd, false)
}

/// As [`status_of_kernel`], compiled with OpenMP when `openmp` (two threads: each
/// records its status into its own copy, `reduction(max: atl__status)`).
fn status_of_kernel_with(
    kernel: &atl_lower::Kernel,
    pos: [i32; 4],
    crd: [i32; 4],
    openmp: bool,
) -> (i32, bool) {
    let code = emit(kernel, &EmitOptions::default()).expect("emits");
    let threads = if openmp {
        format!("{}_set_threads(2);\n  ", code.symbol)
    } else {
        String::new()
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let main = format!(
        "{}\n#include <stdio.h>\nint main(void) {{\n  \
         int32_t pos[4] = {{{}}};\n  int32_t crd[4] = {{{}}};\n  \
         float vals[4] = {{1, 2, 3, 4}};\n  float v[4] = {{1, 10, 100, 1000}};\n  \
         float out[3] = {{-7, -7, -7}};\n  \
         {threads}int s = {sym}(3, 4, 4, pos, crd, vals, v, out);\n  \
         printf(\"%d %d\\n\", s, out[0] == -7 && out[1] == -7 && out[2] == -7);\n  \
         return 0;\n}}\n",
        code.source,
        pos.map(|x| x.to_string()).join(", "),
        crd.map(|x| x.to_string()).join(", "),
        sym = code.symbol
    );
    let src = dir.path().join("k.c");
    std::fs::write(&src, main).expect("write");
    let exe = dir.path().join("k");
    let mut cc = std::process::Command::new("cc");
    cc.arg("-std=c99").arg("-o").arg(&exe).arg(&src);
    if openmp {
        cc.arg("-fopenmp");
    }
    if common::sanitize() {
        cc.args([
            "-O1",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
        ]);
    } else {
        cc.arg("-O2");
    }
    assert!(cc.status().expect("cc runs").success(), "compiles");
    let out = std::process::Command::new(&exe).output().expect("runs");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace();
    let status = words.next().and_then(|w| w.parse().ok()).expect("status");
    let untouched = words.next() == Some("1");
    (status, untouched)
}

#[test]
fn the_compiled_kernel_checks_its_index_arrays_on_entry() {
    // Preconditions 1-3 are the sizes; 4 is `pos`, 5 is `crd` (as the header says).
    let kernel = lowered();
    let header = emit(&kernel, &EmitOptions::default())
        .expect("emits")
        .source;
    assert!(header.contains("4  0 <= pos[k] < nnz + 1, non-decreasing  (index array)"));
    assert!(header.contains("5  0 <= crd[k] < m  (index array)"));
    assert_eq!(status_of([0, 2, 2, 4], [0, 2, 1, 3]), (0, false));
    // `pos` past the values, decreasing, negative; `crd` past the columns, negative.
    assert_eq!(status_of([0, 2, 2, 5], [0, 2, 1, 3]), (4, true));
    assert_eq!(status_of([0, 3, 2, 4], [0, 2, 1, 3]), (4, true));
    assert_eq!(status_of([-1, 2, 2, 4], [0, 2, 1, 3]), (4, true));
    assert_eq!(status_of([0, 2, 2, 4], [0, 4, 1, 3]), (5, true));
    assert_eq!(status_of([0, 2, 2, 4], [0, 2, -1, 3]), (5, true));
}

#[test]
fn a_kernel_checking_crd_where_it_reads_it_uses_no_broken_value() {
    // Under the sanitizers (`ATL_SANITIZE=1`) a broken `crd` read through would be a
    // report of an out-of-bounds read of `v`, and the call would fail.
    let kernel = lowered_checked_where_read();
    let code = emit(&kernel, &EmitOptions::default())
        .expect("emits")
        .source;
    assert!(code.contains("4  0 <= pos[k] < nnz + 1, non-decreasing  (index array)"));
    assert!(code.contains("5  0 <= crd[k] < m  (index array, checked where read)"));
    assert!(
        !code.contains("Index array `crd`"),
        "no entry pass over `crd`"
    );
    assert_eq!(
        status_of_kernel(&kernel, [0, 2, 2, 4], [0, 2, 1, 3]),
        (0, false)
    );
    // `pos` is still checked on entry, writing nothing.
    assert_eq!(
        status_of_kernel(&kernel, [0, 2, 2, 5], [0, 2, 1, 3]),
        (4, true)
    );
    // A broken `crd` value in the first or the last row, past the columns or
    // negative, far outside: status 5 (the output is unspecified then).
    for crd in [
        [0, 4, 1, 3],
        [0, 2, -1, 3],
        [0, 2, 1, 1 << 30],
        [i32::MIN, 2, 1, 3],
    ] {
        for openmp in [false, true] {
            assert_eq!(
                status_of_kernel_with(&kernel, [0, 2, 2, 4], crd, openmp).0,
                5,
                "{crd:?}, OpenMP {openmp}"
            );
        }
    }
    // With OpenMP, the loop over the rows records the status in each thread's copy.
    assert!(code.contains("reduction(max: atl__status)"), "{code}");
    assert_eq!(
        status_of_kernel_with(&kernel, [0, 2, 2, 4], [0, 2, 1, 3], true),
        (0, false)
    );
    // A value no row reads (past `pos[n]`) is not checked.
    assert_eq!(
        status_of_kernel(&kernel, [0, 2, 2, 3], [0, 2, 1, 99]),
        (0, false)
    );
}
