//! Every kernel of every example program (`examples/*/*.atl` and the lowering's
//! construct-coverage program, every definition and every derivation), lowered as
//! `atl emit` lowers it, has all its bounds, flattening, well-formedness, race and
//! double-write obligations proved, its coverage proved or (only where the
//! witnesses do not reach) unknown, never refuted, and likewise its reads after writes
//! (initialisation of what is read, zeroing before `+=`) proved or unknown, never
//! refuted — and is still only "not validated", since values and temporaries are not
//! checked yet.

mod common;

use std::time::Duration;

use atl_solver::Verdict;
use atl_validate::{AccessKind, KernelVerdict, NOT_CHECKED_YET, ObligationKind, validate};

#[test]
#[allow(clippy::print_stderr)] // the timings, for the figures (`--nocapture`)
fn every_example_kernel_has_its_obligations_proved() {
    let solver = atl_solver::Solver::new();
    let mut failures = Vec::new();
    let mut kernels = 0;
    let mut obligations = 0;
    let mut total = Duration::ZERO;
    let mut largest = (0, String::new(), Duration::ZERO);
    let mut slowest = (Duration::ZERO, String::new());
    let mut covered = 0;
    let mut not_covered = Vec::new();
    let mut by_kind = std::collections::BTreeMap::<&str, usize>::new();
    // Reads after writes, per kernel: (a) every read initialised, (b) every `+=`
    // zeroed first — (kernels with such accesses, proved for all of them).
    let mut reads = (0, 0);
    let mut accumulations = (0, 0);
    let mut raw_unknown = Vec::new();
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
            for c in &report.obligations {
                let kind = match c.obligation.kind {
                    ObligationKind::Race { .. } => "race",
                    ObligationKind::DoubleWrite { .. } => "double write",
                    ObligationKind::Coverage { .. } => "coverage",
                    ObligationKind::Initialised { .. } => "initialised",
                    _ => "single access",
                };
                *by_kind.entry(kind).or_default() += 1;
            }
            let coverage: Vec<&Verdict> = report
                .obligations
                .iter()
                .filter(|c| matches!(c.obligation.kind, ObligationKind::Coverage { .. }))
                .map(|c| &c.verdict)
                .collect();
            assert_eq!(coverage.len(), 1, "{name}: one coverage obligation");
            let coverage_unknown = matches!(coverage[0], Verdict::Unknown(_));
            if coverage[0].is_proved() {
                covered += 1;
            } else if coverage_unknown {
                not_covered.push(name.clone());
            }
            let initialised = |wanted: &dyn Fn(AccessKind) -> bool| -> Vec<&Verdict> {
                report
                    .obligations
                    .iter()
                    .filter(|c| matches!(&c.obligation.kind, ObligationKind::Initialised { access } if wanted(access.kind)))
                    .map(|c| &c.verdict)
                    .collect()
            };
            let read_verdicts =
                initialised(&|k| matches!(k, AccessKind::Load | AccessKind::ScalarRead));
            let accumulate_verdicts =
                initialised(&|k| matches!(k, AccessKind::Store | AccessKind::ScalarWrite));
            for (verdicts, tally, what) in [
                (&read_verdicts, &mut reads, "read"),
                (&accumulate_verdicts, &mut accumulations, "+="),
            ] {
                if !verdicts.is_empty() {
                    tally.0 += 1;
                    if verdicts.iter().all(|v| v.is_proved()) {
                        tally.1 += 1;
                    } else {
                        raw_unknown.push(format!("{name} ({what})"));
                    }
                }
            }
            let initialised_unknown = read_verdicts
                .iter()
                .chain(&accumulate_verdicts)
                .filter(|v| matches!(v, Verdict::Unknown(_)))
                .count();
            let (_, refuted, unknown) = report.counts();
            let unknown = unknown - initialised_unknown;
            let expected_reasons = 1 + usize::from(coverage_unknown) + initialised_unknown;
            let reasons_ok = matches!(
                &report.verdict,
                KernelVerdict::NotValidated { reasons }
                    if reasons.len() == expected_reasons
                        && reasons.last() == Some(&NOT_CHECKED_YET.to_string())
            );
            if refuted > 0 || unknown > usize::from(coverage_unknown) || !reasons_ok {
                failures.push(format!("{name}:\n{report}"));
            }
        }
    }
    eprintln!(
        "{kernels} kernels, {obligations} obligations, {:.2?} in total; largest: {} ({} obligations, {:.2?}); slowest: {} ({:.2?})",
        total, largest.1, largest.0, largest.2, slowest.1, slowest.0
    );
    eprintln!(
        "obligations by kind: {by_kind:?}; coverage proved for {covered} of {kernels} kernels; unknown for: {}",
        not_covered.join(", ")
    );
    eprintln!(
        "reads after writes: (a) reads initialised proved in {} of {} kernels with reads of \
         temporaries, the output or scalars; (b) `+=` zeroed first proved in {} of {} kernels \
         with `+=`; unknown in: {}",
        reads.1,
        reads.0,
        accumulations.1,
        accumulations.0,
        raw_unknown.join(", ")
    );
    assert!(kernels >= 100, "only {kernels} kernels found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
