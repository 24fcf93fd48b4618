//! Every kernel of every example program (`examples/*/*.atl` and the lowering's
//! construct-coverage program, every definition and every derivation), lowered as
//! `atl emit` lowers it, is validated against the definition it was lowered from:
//! every obligation proved — bounds, flattening, well-formedness, races, double
//! writes, coverage, reads after writes, shapes and values. The timings (debug build
//! here; `--release` for the figures) are printed with `--nocapture`.

mod common;

use std::time::Duration;

use atl_validate::{KernelVerdict, ObligationKind, Source, validate};

#[test]
#[allow(clippy::print_stderr)] // the timings, for the figures (`--nocapture`)
fn every_example_kernel_is_validated() {
    let solver = atl_solver::Solver::new();
    let mut failures = Vec::new();
    let mut kernels = 0;
    let mut obligations = 0;
    let mut values = 0;
    let mut times = Vec::new();
    let mut largest = (0, String::new(), Duration::ZERO);
    let mut slowest = (Duration::ZERO, String::new());
    for path in common::support::example_files() {
        let example = common::support::load(&path);
        for (def, kernel) in common::kernels_of(&path) {
            let source = Source {
                program: &example.program,
                shapes: &example.shapes,
                def: &def,
            };
            let report = validate(&kernel, Some(&source), &solver);
            let name = format!("{}: `{def}`", path.file_name().unwrap().to_string_lossy());
            kernels += 1;
            obligations += report.obligations.len();
            values += report
                .obligations
                .iter()
                .filter(|c| matches!(c.obligation.kind, ObligationKind::Value { .. }))
                .count();
            times.push(report.elapsed);
            if report.obligations.len() > largest.0 {
                largest = (report.obligations.len(), name.clone(), report.elapsed);
            }
            if report.elapsed > slowest.0 {
                slowest = (report.elapsed, name.clone());
            }
            if report.verdict != KernelVerdict::Validated {
                failures.push(format!("{name}:\n{report}"));
            }
        }
    }
    times.sort();
    let total: Duration = times.iter().sum();
    eprintln!(
        "{kernels} kernels, {obligations} obligations ({values} of values), {total:.2?} in total, \
         median {:.2?}; largest: {} ({} obligations, {:.2?}); slowest: {} ({:.2?})",
        times[times.len() / 2],
        largest.1,
        largest.0,
        largest.2,
        slowest.1,
        slowest.0
    );
    assert!(kernels >= 100, "only {kernels} kernels found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
