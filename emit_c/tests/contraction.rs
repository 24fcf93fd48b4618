//! Kernels are compiled with fused multiply-adds: `-std=c99` alone turns GCC's
//! contraction of `a * b + c` off, which halved the speed of every compute-bound
//! kernel under `atl bench` (the transposed matmul's `fast`: 3.4 ms against 1.8 ms).
//! The test picks inputs where the fused result differs from the unfused one, so it
//! sees which was computed, on a machine with FMA instructions (`-march=native`).

use std::collections::BTreeMap;

use atl_emit_c::{CompileOptions, Dtype, EmitOptions, compile};
use atl_lang::interp::Tensor;

const FUSED: &str = "size n\ninput f : [n]\ninput g : [n]\ninput h : [n]\n\
                     def fused = gen i < n: f[i] * g[i] + h[i]\n";

#[test]
fn multiply_adds_are_fused_when_the_machine_has_fma() {
    #[cfg(target_arch = "x86_64")]
    let has_fma = std::arch::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    let has_fma = false;
    if !has_fma {
        return;
    }
    let (checked, diags) = atl_lang::check_source(FUSED);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let kernel = atl_lower::lower_def(
        &checked.program,
        &checked.shapes,
        "fused",
        &Default::default(),
    )
    .expect("lowers");
    let options = CompileOptions {
        opt_level: 3,
        flags: vec!["-march=native".to_string()],
        ..CompileOptions::default()
    };
    let emit = EmitOptions {
        dtype: Dtype::F64,
        symbol: None,
        fp: atl_emit_c::Fp::Fast,
    };
    let compiled = compile(&kernel, &emit, &options).expect("compiles");
    // (1 + 2^-30) * (1 - 2^-30) = 1 - 2^-60 rounds to 1 in double precision: unfused,
    // the sum with -1 is 0; fused, it is exactly -2^-60. Sixteen elements, so that a
    // vectorized loop computes them (the scalar tail too, with n = 19).
    let a = 1.0 + 2f64.powi(-30);
    let b = 1.0 - 2f64.powi(-30);
    for n in [16usize, 19] {
        let sizes = BTreeMap::from([("n".to_string(), n as i64)]);
        let tensor = |v: f64| Tensor {
            shape: vec![n],
            data: vec![v; n],
        };
        let inputs = BTreeMap::from([
            ("f".to_string(), tensor(a)),
            ("g".to_string(), tensor(b)),
            ("h".to_string(), tensor(-1.0)),
        ]);
        let out = compiled.run(&sizes, &inputs).expect("runs").output;
        let fused = a.mul_add(b, -1.0);
        assert_eq!(fused, -(2f64.powi(-60)));
        assert_eq!(a * b - 1.0, 0.0, "the inputs must tell the two apart");
        assert!(
            out.data.iter().all(|&x| x == fused),
            "n = {n}: {:?} (unfused would be 0)",
            out.data
        );
    }
}

/// `Fp::Strict` compiles with `-ffp-contract=off`: on the inputs above, where the fused
/// result differs from the interpreter's, the strict kernel is bit for bit the
/// interpreter's (the unfused 0), even with `-march=native`.
#[test]
fn strict_kernels_round_as_the_interpreter_even_with_fma() {
    #[cfg(target_arch = "x86_64")]
    let has_fma = std::arch::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    let has_fma = false;
    if !has_fma {
        return;
    }
    let (checked, diags) = atl_lang::check_source(FUSED);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let kernel = atl_lower::lower_def(
        &checked.program,
        &checked.shapes,
        "fused",
        &Default::default(),
    )
    .expect("lowers");
    let options = CompileOptions {
        opt_level: 3,
        flags: vec!["-march=native".to_string()],
        ..CompileOptions::default()
    };
    let emit = EmitOptions {
        dtype: Dtype::F64,
        symbol: None,
        fp: atl_emit_c::Fp::Strict,
    };
    let compiled = compile(&kernel, &emit, &options).expect("compiles");
    assert!(
        compiled
            .code()
            .header
            .contains("compile with -ffp-contract=off"),
        "{}",
        compiled.code().header
    );
    let a = 1.0 + 2f64.powi(-30);
    let b = 1.0 - 2f64.powi(-30);
    for n in [16usize, 19] {
        let sizes = BTreeMap::from([("n".to_string(), n as i64)]);
        let tensor = |v: f64| Tensor {
            shape: vec![n],
            data: vec![v; n],
        };
        let inputs = BTreeMap::from([
            ("f".to_string(), tensor(a)),
            ("g".to_string(), tensor(b)),
            ("h".to_string(), tensor(-1.0)),
        ]);
        let out = compiled.run(&sizes, &inputs).expect("runs").output;
        let want = atl_lang::interp::eval_def(
            &checked.program,
            "fused",
            &sizes,
            &inputs,
            &Default::default(),
        )
        .expect("evaluates");
        assert_eq!(want.data[0], 0.0, "the interpreter rounds twice");
        assert!(
            out.data
                .iter()
                .zip(&want.data)
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "n = {n}: {:?} (the interpreter: {:?})",
            out.data,
            want.data
        );
    }
}
