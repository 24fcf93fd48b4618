//! `exp` and `log` in SIMD loops under `--fp fast` call glibc's vector math library
//! (libmvec): the emitted C declares them with GCC's `simd` attribute, strict kernels do
//! not. The vector functions are not libm's scalar ones, so their accuracy is measured
//! here against the interpreter (Rust's `f64::exp`/`ln`, libm's): within 4 units in the
//! last place over the whole finite range of each function, in `float` and `double`,
//! and the same infinities, zeros and NaNs at the edges. docs/integration.md states the
//! bound; this test is what holds it.

use std::collections::BTreeMap;

mod common;

use atl_emit_c::{Dtype, EmitOptions, Fp, compile, emit};
use atl_lang::interp::{EvalOptions, Tensor, eval_def};
use common::compile_options;

const PROGRAM: &str = "\
size n
input x : [n]
def e = gen i < n: exp(x[i])
def l = gen i < n: log(x[i])
def both = gen i < n: exp(x[i]) + log(x[i])
";

/// The declarations' marker in the emitted C.
const SIMD_DECLARATION: &str = "__attribute__((__simd__(\"notinbranch\")))";

fn checked() -> atl_lang::Checked {
    let (checked, diags) = atl_lang::check_source(PROGRAM);
    checked.unwrap_or_else(|| panic!("{diags:?}"))
}

fn kernel(checked: &atl_lang::Checked, def: &str) -> atl_lower::Kernel {
    atl_lower::lower_def(&checked.program, &checked.shapes, def, &Default::default())
        .unwrap_or_else(|d| panic!("`{def}` does not lower: {d:?}"))
}

#[test]
fn fast_kernels_declare_the_vector_functions_and_strict_ones_do_not() {
    let checked = checked();
    for (def, f32_names, f64_names) in [
        ("e", &["expf"][..], &["exp"][..]),
        ("l", &["logf"], &["log"]),
        ("both", &["expf", "logf"], &["exp", "log"]),
    ] {
        let kernel = kernel(&checked, def);
        for (dtype, names) in [(Dtype::F32, f32_names), (Dtype::F64, f64_names)] {
            let source = |fp| {
                emit(
                    &kernel,
                    &EmitOptions {
                        dtype,
                        symbol: None,
                        fp,
                    },
                )
                .expect("emits")
                .source
            };
            let (fast, strict) = (source(Fp::Fast), source(Fp::Strict));
            let c_type = if dtype == Dtype::F32 {
                "float"
            } else {
                "double"
            };
            for name in names {
                let declaration = format!("{SIMD_DECLARATION} {c_type} {name}({c_type});");
                assert!(fast.contains(&declaration), "`{def}` {dtype:?}:\n{fast}");
            }
            assert_eq!(
                fast.matches(SIMD_DECLARATION).count(),
                names.len(),
                "{fast}"
            );
            assert!(!strict.contains(SIMD_DECLARATION), "{strict}");
        }
    }
    // No function of libmvec, no declaration.
    let (plain, diags) =
        atl_lang::check_source("size n\ninput x : [n]\ndef r = gen i < n: sqrt(abs(x[i]))\n");
    let plain = plain.unwrap_or_else(|| panic!("{diags:?}"));
    let source = emit(&kernel(&plain, "r"), &EmitOptions::default())
        .expect("emits")
        .source;
    assert!(!source.contains(SIMD_DECLARATION), "{source}");
}

/// Distance in units in the last place between two values of the kernel's type (0 for
/// equal values, including two NaNs and two equal infinities).
fn ulps(dtype: Dtype, got: f64, want: f64) -> u64 {
    if got == want || (got.is_nan() && want.is_nan()) {
        return 0;
    }
    if got.is_nan() || want.is_nan() || got.is_infinite() || want.is_infinite() {
        return u64::MAX;
    }
    // The ordered integer line of the representation: adjacent values differ by 1.
    let key = |v: f64| -> i64 {
        match dtype {
            Dtype::F32 => {
                let b = (v as f32).to_bits() as i32;
                i64::from(if b < 0 { i32::MIN - b } else { b })
            }
            Dtype::F64 => {
                let b = v.to_bits() as i64;
                if b < 0 { i64::MIN - b } else { b }
            }
        }
    };
    key(got).abs_diff(key(want))
}

/// Inputs exactly representable in `float`: a sweep of the function's finite range
/// (values where it neither overflows nor underflows to zero, and a few beyond), and
/// the edges.
fn inputs(def: &str, dtype: Dtype) -> Vec<f64> {
    let mut x: Vec<f64> = match (def, dtype) {
        ("e", Dtype::F32) => (-6400..=5700).map(|k| k as f64 / 64.0).collect(),
        ("e", Dtype::F64) => (-7500..=7200).map(|k| k as f64 / 10.0).collect(),
        // Positive values over many binades, and values near 1 where log is small.
        _ => (0..4000)
            .map(|k| 2f64.powi(k % 200 - 100) * (1.0 + (k / 200) as f64 / 32.0))
            .chain((-512..=512).map(|k| 1.0 + k as f64 / 4096.0))
            .collect(),
    };
    x.extend([
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e30,
        -1e30,
        f64::from(f32::MIN_POSITIVE),
    ]);
    x
}

#[test]
fn the_vector_functions_are_within_four_ulp_of_libm() {
    let checked = checked();
    let options = compile_options();
    for def in ["e", "l"] {
        let kernel = kernel(&checked, def);
        for dtype in [Dtype::F32, Dtype::F64] {
            let x = inputs(def, dtype);
            let n = x.len();
            let sizes = BTreeMap::from([("n".to_string(), n as i64)]);
            let tensor = Tensor {
                shape: vec![n],
                data: x.clone(),
            };
            let inputs = BTreeMap::from([("x".to_string(), tensor)]);
            let want = eval_def(
                &checked.program,
                def,
                &sizes,
                &inputs,
                &EvalOptions::default(),
            )
            .expect("the interpreter evaluates it");
            let emit = EmitOptions {
                dtype,
                symbol: None,
                fp: Fp::Fast,
            };
            let compiled = compile(&kernel, &emit, &options)
                .unwrap_or_else(|d| panic!("`{def}` ({dtype:?}) does not compile: {d:?}"));
            assert!(
                compiled.compiler_messages().trim().is_empty(),
                "{}",
                compiled.compiler_messages()
            );
            let got = compiled
                .run(&sizes, &inputs)
                .unwrap_or_else(|d| panic!("`{def}` ({dtype:?}): {d:?}"))
                .output;
            for ((&g, &w), &xi) in got.data.iter().zip(&want.data).zip(&x) {
                // The interpreter computes in f64; a float kernel is compared with
                // the f64 value rounded to float (overflowing to infinity as the
                // kernel's would).
                let w = if dtype == Dtype::F32 {
                    f64::from(w as f32)
                } else {
                    w
                };
                let d = ulps(dtype, g, w);
                assert!(
                    d <= 4,
                    "`{def}` ({dtype:?}) at {xi:e}: kernel {g:e}, interpreter {w:e} ({d} ulp apart)"
                );
            }
        }
    }
}
