//! Differential test of lowering without a C compiler: every definition and every
//! derivation of `examples/*/*.atl` is lowered, run by the loop-IR interpreter (which
//! checks every access, every read of uninitialized memory and that the whole output
//! is written) at several size assignments, and compared with the reference
//! interpreter. Both compute in `f64` and differ at most in the order of additions.

mod support;

#[test]
fn loop_ir_matches_the_reference_interpreter_on_every_example() {
    let mut runs = 0;
    let mut failures = Vec::new();
    for path in support::example_files() {
        let ex = support::load(&path);
        assert!(
            ex.failed_derivations.is_empty(),
            "{}: derivations failed: {:?}",
            path.display(),
            ex.failed_derivations
        );
        for def in &ex.defs {
            let kernel =
                match atl_lower::lower_def(&ex.program, &ex.shapes, def, &Default::default()) {
                    Ok(k) => k,
                    Err(d) => {
                        failures.push(format!("{}: `{def}` does not lower: {d:?}", path.display()));
                        continue;
                    }
                };
            let assignments = support::size_assignments(&ex.program);
            assert!(
                assignments.len() >= 3,
                "{}: too few size assignments",
                path.display()
            );
            for (k, sizes) in assignments.iter().enumerate() {
                let inputs = support::inputs(&ex.program, sizes, k as u64 + 1);
                let want = support::reference(&ex.program, def, sizes, &inputs);
                match atl_lower::run_kernel(&kernel, sizes, &inputs) {
                    Ok(got) => {
                        let err = support::max_error(&got, &want);
                        if err > 1e-10 {
                            failures.push(format!(
                                "{}: `{def}` at {sizes:?}: error {err:e}\n{}",
                                path.display(),
                                atl_lower::kernel_to_string(&kernel)
                            ));
                        }
                    }
                    Err(d) => failures.push(format!(
                        "{}: `{def}` at {sizes:?}: {d:?}\n{}",
                        path.display(),
                        atl_lower::kernel_to_string(&kernel)
                    )),
                }
                runs += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(runs >= 50, "only {runs} runs");
}
