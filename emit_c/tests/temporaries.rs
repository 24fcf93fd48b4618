//! Heap temporaries (`let` buffers whose length is not a small constant) inside loops
//! are allocated once around those loops, and once per thread around a parallel loop,
//! not once per iteration (`lower/src/placement.rs`). These kernels reuse one buffer
//! across iterations, so they are compared with the reference interpreter with real
//! threads (OpenMP) at sizes where every thread runs several iterations: a buffer
//! shared between threads, or a zeroed buffer not zeroed again, gives a wrong result.
//! Under `ATL_SANITIZE=1` they run under AddressSanitizer and UBSan instead (a leak or
//! a double `free` is a failure). The C is pinned by snapshots.

use std::collections::BTreeMap;

mod common;

use atl_emit_c::{Dtype, EmitOptions, compile, emit};
use atl_lang::interp::{EvalOptions, Tensor, eval_def};
use common::{compile_options, sanitize};

const PROGRAM: &str = "\
size n, m, K
input f : [n, m]
input g : [K, m]

# A per-row temporary in a parallel loop: one buffer per thread.
def mirror = gen i < n: let t = gen j < m: 2 * f[i, j] in gen j < m: t[j] + t[m - 1 - j]

# Two temporaries in a collapsed pair of parallel loops.
def pairs = gen k < K, i < n:
  let a = gen j < m: f[i, j] * g[k, j] in
  let b = gen j < m: a[m - 1 - j] + a[j] in
  gen j < m: a[j] * b[j]

# A zeroed temporary (a tensor-valued sum accumulates into it), zeroed again for
# every row on the thread that reuses it.
def acc = gen i < n: let t = sum k < K: gen j < m: g[k, j] * f[i, j] in
  gen j < m: t[j] * t[m - 1 - j]

# A temporary in a sequential loop (a top-level sum): one buffer for the whole loop.
def seq = sum k < K: let t = gen j < m: g[k, j] * 2 in gen j < m: t[j] + t[m - 1 - j]
";

const DEFS: &[&str] = &["mirror", "pairs", "acc", "seq"];

fn checked() -> atl_lang::Checked {
    let (checked, diags) = atl_lang::check_source(PROGRAM);
    checked.unwrap_or_else(|| panic!("{diags:?}"))
}

fn kernel(checked: &atl_lang::Checked, def: &str) -> atl_lower::Kernel {
    atl_lower::lower_def(&checked.program, &checked.shapes, def, &Default::default())
        .unwrap_or_else(|d| panic!("`{def}` does not lower: {d:?}"))
}

#[test]
fn heap_temporaries_are_allocated_once_per_loop_or_thread() {
    let checked = checked();
    for def in DEFS {
        let code = emit(&kernel(&checked, def), &EmitOptions::default()).expect("emits");
        insta::assert_snapshot!(format!("temporaries__{def}"), code.source);
        // Every allocation is lazy, behind a test of the pointer declared outside
        // the loop: no `atl__alloc` runs unconditionally per iteration.
        let lines: Vec<&str> = code.source.lines().collect();
        let allocs: Vec<usize> = (1..lines.len())
            .filter(|&i| lines[i].contains("= atl__alloc("))
            .collect();
        assert!(!allocs.is_empty(), "`{def}` allocates:\n{}", code.source);
        for i in allocs {
            assert!(
                lines[i - 1].trim_start().starts_with("if (")
                    && lines[i - 1].ends_with(" == NULL)"),
                "`{def}`: allocation not behind a NULL test:\n{}",
                code.source
            );
        }
        let parallel_regions = code
            .source
            .matches("ATL__OMP(omp parallel num_threads(atl__threads()))\n")
            .count();
        let expected = if *def == "seq" { 0 } else { 1 };
        assert_eq!(parallel_regions, expected, "`{def}`:\n{}", code.source);
    }
}

#[test]
fn kernels_with_reused_temporaries_match_the_interpreter() {
    let checked = checked();
    let options = compile_options();
    let assignments: &[(i64, i64, i64)] = &[(1, 1, 1), (9, 5, 3), (17, 8, 2), (4, 13, 6)];
    // `double` too, with a tolerance that only rounding of the last bits passes;
    // under the sanitizers `float` only (memory safety does not depend on it).
    let dtypes: &[(Dtype, f64)] = if sanitize() {
        &[(Dtype::F32, 1e-4)]
    } else {
        &[(Dtype::F32, 1e-4), (Dtype::F64, 1e-10)]
    };
    for def in DEFS {
        let kernel = kernel(&checked, def);
        for &(dtype, tolerance) in dtypes {
            let emit = EmitOptions {
                dtype,
                symbol: None,
                fp: atl_emit_c::Fp::Fast,
            };
            let compiled = compile(&kernel, &emit, &options)
                .unwrap_or_else(|d| panic!("`{def}` ({dtype:?}) does not compile: {d:?}"));
            assert!(
                compiled.compiler_messages().trim().is_empty(),
                "`{def}`: {}",
                compiled.compiler_messages()
            );
            for (s, &(n, m, k)) in assignments.iter().enumerate() {
                let sizes = BTreeMap::from([
                    ("n".to_string(), n),
                    ("m".to_string(), m),
                    ("K".to_string(), k),
                ]);
                let inputs = BTreeMap::from([
                    (
                        "f".to_string(),
                        Tensor::random(vec![n as usize, m as usize], 11 + s as u64),
                    ),
                    (
                        "g".to_string(),
                        Tensor::random(vec![k as usize, m as usize], 23 + s as u64),
                    ),
                ]);
                let want = eval_def(
                    &checked.program,
                    def,
                    &sizes,
                    &inputs,
                    &EvalOptions::default(),
                )
                .expect("the interpreter evaluates it");
                let got = compiled
                    .run(&sizes, &inputs)
                    .unwrap_or_else(|d| panic!("`{def}` ({dtype:?}) at {sizes:?}: {d:?}"))
                    .output;
                assert_eq!(got.shape, want.shape);
                for (g, w) in got.data.iter().zip(&want.data) {
                    assert!(
                        (g - w).abs() <= tolerance * (1.0 + w.abs()),
                        "`{def}` ({dtype:?}) at {sizes:?}: {g} vs {w}\n{}",
                        compiled.code().source
                    );
                }
            }
        }
    }
}
