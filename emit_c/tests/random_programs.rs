//! A sample of random well-shaped programs (`lower/tests/support/random.rs`) compiled
//! to C (`double`) and run at several sizes, compared with the reference interpreter.
//! With `ATL_SANITIZE=1`, built as sanitized harness executables (`float`).

use std::collections::BTreeMap;

use atl_emit_c::{Dtype, EmitOptions, compile};
use atl_lang::interp::{EvalOptions, Tensor};

mod common;
#[path = "../../lower/tests/support/random.rs"]
mod random;

use common::{compile_options, sanitize};

#[test]
fn random_programs_compile_and_match_the_interpreter() {
    let options = compile_options();
    let (dtype, tolerance) = if sanitize() {
        (Dtype::F32, 1e-4)
    } else {
        (Dtype::F64, 1e-10)
    };
    let mut compiled_programs = 0;
    let mut overflow_refusals = 0;
    let mut failures = Vec::new();
    // Every third seed, until enough programs check: compiling dominates.
    let mut seed = 0u64;
    while compiled_programs < 40 && seed < 3000 {
        seed += 3;
        let source = random::program(seed);
        let (Some(checked), _) = atl_lang::check_source(&source) else {
            continue;
        };
        let kernel =
            match atl_lower::lower_def(&checked.program, &checked.shapes, "p", &Default::default())
            {
                Ok(k) => k,
                // Refused because its index arithmetic may overflow at ordinary sizes
                // (issue 28): counted and bounded below.
                Err(d) if d.code == "E0938" => {
                    overflow_refusals += 1;
                    continue;
                }
                Err(d) => panic!("seed {seed}: does not lower: {d:?}\n{source}"),
            };
        let emit = EmitOptions {
            dtype,
            symbol: None,
            fp: atl_emit_c::Fp::Fast,
        };
        let compiled = compile(&kernel, &emit, &options)
            .unwrap_or_else(|d| panic!("seed {seed}: does not compile: {d:?}\n{source}"));
        assert!(
            compiled.compiler_messages().trim().is_empty(),
            "seed {seed}: compiler messages:\n{}\n{}",
            compiled.compiler_messages(),
            compiled.code().source
        );
        compiled_programs += 1;
        for (n, m) in [(1, 1), (2, 3), (5, 2)] {
            let sizes = BTreeMap::from([("n".to_string(), n), ("m".to_string(), m)]);
            let eval = EvalOptions {
                parallel: false,
                max_elements: 1 << 16,
                ..EvalOptions::default()
            };
            let Ok(shapes) = atl_lang::interp::input_shapes(&checked.program, &sizes, &eval) else {
                continue;
            };
            let inputs: BTreeMap<String, Tensor> = shapes
                .into_iter()
                .enumerate()
                .map(|(k, (name, shape))| (name, Tensor::random(shape, seed * 5 + k as u64)))
                .collect();
            let Ok(want) =
                atl_lang::interp::eval_def(&checked.program, "p", &sizes, &inputs, &eval)
            else {
                continue;
            };
            match compiled.run(&sizes, &inputs) {
                Ok(got) => {
                    let bad = got.output.shape != want.shape
                        || got.output.data.iter().zip(&want.data).any(|(g, w)| {
                            !((g - w).abs() <= tolerance * (1.0 + w.abs())
                                || (g.is_nan() && w.is_nan()))
                        });
                    if bad {
                        failures.push(format!(
                            "seed {seed} at n={n}, m={m}: got {:?}, want {:?}\n{source}\n{}",
                            got.output.data,
                            want.data,
                            compiled.code().source
                        ));
                    }
                }
                Err(d) => failures.push(format!("seed {seed} at n={n}, m={m}: {d:?}\n{source}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(compiled_programs >= 40, "only {compiled_programs} programs");
    assert!(
        overflow_refusals * 10 <= compiled_programs,
        "{overflow_refusals} programs refused with E0938 for {compiled_programs} compiled"
    );
}
