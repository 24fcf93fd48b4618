//! Random well-shaped programs, lowered and run by the loop-IR interpreter, compared
//! with the reference interpreter: the lowering must be right for every program the
//! interpreter accepts, not only the examples (see `support/random.rs` for what the
//! programs contain). A failure prints the program's source and seed.

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor};

#[path = "support/random.rs"]
mod random;

#[test]
fn random_programs_lower_correctly() {
    let mut checked_programs = 0;
    let mut runs = 0;
    let mut failures = Vec::new();
    let mut overflow_refusals = 0;
    for seed in 0..1500u64 {
        let source = random::program(seed);
        let (Some(checked), _) = atl_lang::check_source(&source) else {
            continue;
        };
        checked_programs += 1;
        let kernel =
            match atl_lower::lower_def(&checked.program, &checked.shapes, "p", &Default::default())
            {
                Ok(k) => k,
                // A kernel whose index arithmetic the overflow analysis cannot keep
                // within 64 bits at ordinary sizes is refused (issue 28): counted, and
                // bounded below, not a failure.
                Err(d) if d.code == "E0938" => {
                    overflow_refusals += 1;
                    continue;
                }
                Err(d) => {
                    failures.push(format!("seed {seed}: does not lower: {d:?}\n{source}"));
                    continue;
                }
            };
        // Normalization alone is an equivalence: the interpreter agrees on its result.
        let normalized = atl_lower::normalize_def(&checked.program, &checked.shapes, "p")
            .unwrap_or_else(|d| panic!("seed {seed}: does not normalize: {d:?}\n{source}"));
        for (n, m) in [(1, 1), (2, 3), (5, 2), (4, 4)] {
            let sizes = BTreeMap::from([("n".to_string(), n), ("m".to_string(), m)]);
            let options = EvalOptions {
                parallel: false,
                max_elements: 1 << 16,
                ..EvalOptions::default()
            };
            let Ok(shapes) = atl_lang::interp::input_shapes(&checked.program, &sizes, &options)
            else {
                continue;
            };
            let inputs: BTreeMap<String, Tensor> = shapes
                .into_iter()
                .enumerate()
                .map(|(k, (name, shape))| (name, Tensor::random(shape, seed * 7 + k as u64)))
                .collect();
            // Sizes at which the interpreter refuses the program (an invalid amount, a
            // run-time shape mismatch, a division by zero) are not the lowering's to
            // match.
            let Ok(want) =
                atl_lang::interp::eval_def(&checked.program, "p", &sizes, &inputs, &options)
            else {
                continue;
            };
            runs += 1;
            match atl_lang::interp::eval_expr(&checked.program, &normalized, &sizes, &inputs, &options) {
                Ok(t)
                    if t.shape == want.shape
                        && t.data.iter().zip(&want.data).all(|(a, b)| {
                            (a - b).abs() <= 1e-12 * (1.0 + b.abs()) || (a.is_nan() && b.is_nan())
                        }) => {}
                other => failures.push(format!(
                    "seed {seed} at n={n}, m={m}: normalized program evaluates to {other:?}, want {want:?}\n{source}\n{}",
                    atl_lang::pretty::expr_to_string(&normalized, Default::default())
                )),
            }
            match atl_lower::run_kernel(&kernel, &sizes, &inputs) {
                Ok(got) => {
                    let bad = got.shape != want.shape
                        || got.data.iter().zip(&want.data).any(|(g, w)| {
                            !((g - w).abs() <= 1e-9 * (1.0 + w.abs()) || (g.is_nan() && w.is_nan()))
                        });
                    if bad {
                        failures.push(format!(
                            "seed {seed} at n={n}, m={m}: got {:?} {:?}, want {:?} {:?}\n{source}\n{}",
                            got.shape,
                            got.data,
                            want.shape,
                            want.data,
                            atl_lower::kernel_to_string(&kernel)
                        ));
                    }
                }
                Err(d) => failures.push(format!(
                    "seed {seed} at n={n}, m={m}: {d:?}\n{source}\n{}",
                    atl_lower::kernel_to_string(&kernel)
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures (of {runs} runs), first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    // The fast-path-only lowering of these tests leaves index expressions unsimplified,
    // which the analysis bounds less tightly than the CLI's (about 3 in 100 programs,
    // mostly concatenations whose flattened index sums several products of sizes).
    assert!(
        overflow_refusals * 20 <= checked_programs,
        "{overflow_refusals} of {checked_programs} programs refused with E0938"
    );
    assert!(
        checked_programs >= 700,
        "only {checked_programs} generated programs check"
    );
    assert!(runs >= 2000, "only {runs} runs");
}
