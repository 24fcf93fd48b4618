//! Differential test of the whole back end: every definition and derivation of
//! `examples/*/*.atl` is lowered, emitted as C (`float` and `double`), compiled, run
//! at several size assignments (including 1 and sizes that are not multiples of the
//! tile sizes) and compared with the reference interpreter — and so is the loop-IR
//! interpreter. Tolerances are relative to `1 + |reference|`: 1e-4 for `float`
//! kernels (single-precision rounding of sums of a few dozen terms), 1e-10 for
//! `double` and the loop IR.
//!
//! With `ATL_SANITIZE=1` in the environment, the `float` kernels are built as harness
//! executables with `-fsanitize=address,undefined` instead (any report fails the
//! test); `.ci/run` enables it.

#[path = "../../lower/tests/support/mod.rs"]
mod support;

mod common;

use atl_emit_c::{Dtype, EmitOptions};
use common::{compile_options as options, sanitize};

/// Runs one example file; returns the number of runs and the failures.
fn check_file(path: &std::path::Path) -> (usize, Vec<String>) {
    let ex = support::load(path);
    let mut failures = Vec::new();
    let mut runs = 0;
    if !ex.failed_derivations.is_empty() {
        failures.push(format!(
            "{}: derivations failed: {:?}",
            path.display(),
            ex.failed_derivations
        ));
    }
    for def in &ex.defs {
        let kernel = match atl_lower::lower_def(&ex.program, &ex.shapes, def, &Default::default()) {
            Ok(k) => k,
            Err(d) => {
                failures.push(format!("{}: `{def}` does not lower: {d:?}", path.display()));
                continue;
            }
        };
        let assignments = support::size_assignments(&ex.program);
        // Under the sanitizers, `float` only: memory safety does not depend on the
        // element type, and sanitized builds are slow.
        let dtypes: &[Dtype] = if sanitize() {
            &[Dtype::F32]
        } else {
            &[Dtype::F32, Dtype::F64]
        };
        for &dtype in dtypes {
            let emit = EmitOptions {
                dtype,
                symbol: None,
                fp: atl_emit_c::Fp::Fast,
            };
            let compiled = match atl_emit_c::compile(&kernel, &emit, &options()) {
                Ok(c) => c,
                Err(d) => {
                    failures.push(format!(
                        "{}: `{def}` ({dtype:?}) does not compile: {d:?}",
                        path.display()
                    ));
                    continue;
                }
            };
            if !compiled.compiler_messages().trim().is_empty() {
                failures.push(format!(
                    "{}: `{def}` ({dtype:?}) compiles with messages:\n{}\n{}",
                    path.display(),
                    compiled.compiler_messages(),
                    compiled.code().source
                ));
            }
            let tolerance = if dtype == Dtype::F32 { 1e-4 } else { 1e-10 };
            for (k, sizes) in assignments.iter().enumerate() {
                let inputs = support::inputs(&ex.program, sizes, k as u64 + 7);
                let want = support::reference(&ex.program, def, sizes, &inputs);
                if dtype == Dtype::F64 {
                    match atl_lower::run_kernel(&kernel, sizes, &inputs) {
                        Ok(got) if support::max_error(&got, &want) <= 1e-10 => {}
                        Ok(got) => failures.push(format!(
                            "{}: loop IR of `{def}` at {sizes:?}: error {:e}",
                            path.display(),
                            support::max_error(&got, &want)
                        )),
                        Err(d) => failures.push(format!(
                            "{}: loop IR of `{def}` at {sizes:?}: {d:?}",
                            path.display()
                        )),
                    }
                }
                match compiled.run(sizes, &inputs) {
                    Ok(got) => {
                        let err = support::max_error(&got.output, &want);
                        if err > tolerance {
                            failures.push(format!(
                                "{}: `{def}` ({dtype:?}) at {sizes:?}: error {err:e}\n{}",
                                path.display(),
                                compiled.code().source
                            ));
                        }
                    }
                    Err(d) => failures.push(format!(
                        "{}: `{def}` ({dtype:?}) at {sizes:?}: {d:?}",
                        path.display()
                    )),
                }
                runs += 1;
            }
        }
    }
    (runs, failures)
}

#[test]
fn compiled_kernels_match_the_reference_interpreter_on_every_example() {
    let files = support::example_files();
    // Two workers: compiling dominates and the machine is small.
    let results: Vec<(usize, Vec<String>)> = std::thread::scope(|s| {
        let chunks: Vec<Vec<std::path::PathBuf>> = vec![
            files.iter().step_by(2).cloned().collect(),
            files.iter().skip(1).step_by(2).cloned().collect(),
        ];
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    let mut runs = 0;
                    let mut failures = Vec::new();
                    for f in chunk {
                        let (r, fs) = check_file(&f);
                        runs += r;
                        failures.extend(fs);
                    }
                    (runs, failures)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect()
    });
    let runs: usize = results.iter().map(|r| r.0).sum();
    let failures: Vec<String> = results.into_iter().flat_map(|r| r.1).collect();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(runs >= 100, "only {runs} runs");
}
