//! Every kernel of every example program (`examples/*/*.atl` and the lowering's
//! construct-coverage program, every definition and every derivation), lowered as
//! `atl emit` lowers it, has all its bounds, flattening and well-formedness
//! obligations proved — and is still only "not validated", since values, coverage,
//! races and temporaries are not checked yet.

mod common;

use std::time::Duration;

use atl_validate::{KernelVerdict, NOT_CHECKED_YET, validate};

#[test]
#[allow(clippy::print_stderr)] // the timings, for the figures (`--nocapture`)
fn every_example_kernel_has_its_bounds_and_flattening_proved() {
    let solver = atl_solver::Solver::new();
    let mut failures = Vec::new();
    let mut kernels = 0;
    let mut obligations = 0;
    let mut total = Duration::ZERO;
    let mut largest = (0, String::new(), Duration::ZERO);
    let mut slowest = (Duration::ZERO, String::new());
    for path in common::support::example_files() {
        for (def, kernel) in common::kernels_of(&path) {
            let report = validate(&kernel, &solver);
            let name = format!("{}: `{def}`", path.file_name().unwrap().to_string_lossy());
            kernels += 1;
            obligations += report.obligations.len();
            total += report.elapsed;
            if report.obligations.len() > largest.0 {
                largest = (report.obligations.len(), name.clone(), report.elapsed);
            }
            if report.elapsed > slowest.0 {
                slowest = (report.elapsed, name.clone());
            }
            let (_, refuted, unknown) = report.counts();
            let only_reason = matches!(
                &report.verdict,
                KernelVerdict::NotValidated { reasons } if reasons == &[NOT_CHECKED_YET.to_string()]
            );
            if refuted + unknown > 0 || !only_reason {
                failures.push(format!("{name}:\n{report}"));
            }
        }
    }
    eprintln!(
        "{kernels} kernels, {obligations} obligations, {:.2?} in total; largest: {} ({} obligations, {:.2?}); slowest: {} ({:.2?})",
        total, largest.1, largest.0, largest.2, slowest.1, slowest.0
    );
    assert!(kernels >= 100, "only {kernels} kernels found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
