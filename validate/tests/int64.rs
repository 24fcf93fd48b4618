//! (i) 64-bit arithmetic: a kernel whose `int64_t` index arithmetic can overflow at a
//! size its preconditions let through is never validated — also where the overflow
//! is in the flat index of a load a blend evaluates whatever its guard (issue 28,
//! item 1), in an addition near 2^63, in a division of an overflowing product, in a
//! product of several sizes, or because an entry bound was removed. The kernels are
//! loop-IR text (as `atl emit --ir` prints it), so no lowering decides anything.

mod common;

use atl_validate::{KernelVerdict, Method, ObligationKind, Report};

const PROGRAM: &str = "size n
input f : [n]
def g = gen i < n: [i < 2] * f[(i * 4611686018427387904) % n]
def h = gen i < n: f[(i * 4611686018427387904) % n]
def id = gen i < n: f[i]
";

fn kernel(def: &str, source: &str, preconditions: &str, body: &str) -> atl_loopir::ir::Kernel {
    let text = format!(
        "kernel {def}(n; f: [n]) -> out: [n]\n  requires n >= 1  # size: \"size `n` is at least 1\"\n\
         {preconditions}  source: {source}\n{{\n{body}\n}}\n"
    );
    atl_loopir::parse::parse_kernel(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"))
}

/// The overflow obligations refuted in `report` (the report shown otherwise).
fn refuted_overflows(report: &Report) -> Vec<String> {
    match &report.verdict {
        KernelVerdict::Rejected { refuted, .. } => refuted
            .iter()
            .filter(|r| matches!(r.obligation.kind, ObligationKind::Int64 { .. }))
            .map(|r| format!("{} at {}", r.obligation.kind, r.counterexample))
            .collect(),
        _ => Vec::new(),
    }
}

fn assert_overflow_refuted(report: &Report) {
    let found = refuted_overflows(report);
    assert!(!found.is_empty(), "no overflow refuted:\n{report}");
}

/// Not validated, with an overflow obligation not proved (refuted or undecided).
fn assert_overflow_not_validated(report: &Report) {
    assert_ne!(report.verdict, KernelVerdict::Validated, "{report}");
    assert!(
        report.obligations.iter().any(|c| matches!(
            c.obligation.kind,
            ObligationKind::Int64 { .. }
        ) && !c.verdict.is_proved()),
        "{report}"
    );
}

const GUARDED_SOURCE: &str = "gen i < n: [i < 2] * f[i * 4611686018427387904 % n]";

#[test]
fn a_blended_load_whose_index_overflows_is_rejected() {
    // The reproducer: the blend evaluates the load at every i, and i * 2^62
    // overflows at i = 2.
    let k = kernel(
        "g",
        GUARDED_SOURCE,
        "",
        "  for i in 0..n {  # gen\n    out[i] = blend(i < 2, f[4611686018427387904 * i % n @ (4611686018427387904 * i % n)])  @ (i)\n  }",
    );
    let report = common::report_against(&k, PROGRAM, "g");
    assert_overflow_refuted(&report);
    let found = refuted_overflows(&report).join("\n");
    assert!(found.contains("4611686018427387904"), "{found}");
}

#[test]
fn the_same_load_under_a_select_is_validated() {
    // A select evaluates the load only where i < 2: i * 2^62 <= 2^62 there.
    let k = kernel(
        "g",
        GUARDED_SOURCE,
        "",
        "  for i in 0..n {  # gen\n    out[i] = i < 2 ? f[4611686018427387904 * i % n @ (4611686018427387904 * i % n)] : 0  @ (i)\n  }",
    );
    let report = common::report_against(&k, PROGRAM, "g");
    assert_eq!(report.verdict, KernelVerdict::Validated, "{report}");
}

#[test]
fn an_unguarded_overflowing_index_is_rejected() {
    let k = kernel(
        "h",
        "gen i < n: f[i * 4611686018427387904 % n]",
        "",
        "  for i in 0..n {  # gen\n    out[i] = f[4611686018427387904 * i % n @ (4611686018427387904 * i % n)]  @ (i)\n  }",
    );
    assert_overflow_refuted(&common::report_against(&k, PROGRAM, "h"));
}

const ID_SOURCE: &str = "gen i < n: f[i]";

#[test]
fn an_addition_near_2_to_the_63_is_rejected() {
    // Equal to i over the integers (the flattening obligation holds), but the
    // intermediate i + (2^63 - 808) overflows from i = 808 on.
    let k = kernel(
        "id",
        ID_SOURCE,
        "",
        "  for i in 0..n {  # gen\n    out[i] = f[i + 9223372036854775000 - 9223372036854775000 @ (i)]  @ (i)\n  }",
    );
    assert_overflow_refuted(&common::report_against(&k, PROGRAM, "id"));
}

#[test]
fn a_division_of_an_overflowing_product_is_rejected() {
    let k = kernel(
        "id",
        ID_SOURCE,
        "",
        "  for i in 0..n {  # gen\n    out[i] = f[i * 4611686018427387904 / 4611686018427387904 @ (i)]  @ (i)\n  }",
    );
    assert_overflow_refuted(&common::report_against(&k, PROGRAM, "id"));
}

#[test]
fn an_overflowing_loop_bound_is_rejected() {
    // A loop that writes nothing past i < n, with a bound n^4: each n is at most
    // 2^61 by the ABI, n^4 is not.
    let k = kernel(
        "id",
        ID_SOURCE,
        "",
        "  for i in 0..n {  # gen\n    out[i] = f[i @ (i)]  @ (i)\n  }\n  for j in 0..n * n * n * n - n * n * n * n {  # gen\n    out[j] = f[j @ (j)]  @ (j)\n  }",
    );
    assert_overflow_refuted(&common::report_against(&k, PROGRAM, "id"));
}

#[test]
fn an_overflowing_entry_check_is_rejected() {
    // The check computes n * n * n * n before anything bounds n.
    let k = kernel(
        "id",
        ID_SOURCE,
        "  requires n * n * n * n >= 1  # assume: \"a needless check\"\n",
        "  for i in 0..n {  # gen\n    out[i] = f[i @ (i)]  @ (i)\n  }",
    );
    let report = common::report_against(&k, PROGRAM, "id");
    assert_overflow_not_validated(&report);
}

#[test]
fn an_entry_bound_makes_the_same_arithmetic_fit() {
    // With `n <= 1000` checked first, the same n^4 fits (by the analysis, no solver).
    let k = kernel(
        "id",
        ID_SOURCE,
        "  requires n <= 1000  # index_range: \"small\"\n  requires n * n * n * n >= 1  # assume: \"a needless check\"\n",
        "  for i in 0..n {  # gen\n    out[i] = f[i @ (i)]  @ (i)\n  }",
    );
    let report = common::report_against(&k, PROGRAM, "id");
    let overflow: Vec<_> = report
        .obligations
        .iter()
        .filter(|c| matches!(c.obligation.kind, ObligationKind::Int64 { .. }))
        .collect();
    assert!(!overflow.is_empty(), "{report}");
    assert!(
        overflow
            .iter()
            .all(|c| c.verdict.is_proved() && c.method == Method::Magnitude),
        "{report}"
    );
}

#[test]
fn a_product_of_several_sizes_is_rejected() {
    const THREE: &str = "size n
size m
size k
input f : [n]
input a : [m]
input b : [k]
def g = gen i < n: f[i]
";
    let text = "kernel g(n, m, k; f: [n], a: [m], b: [k]) -> out: [n]\n\
        requires n >= 1  # size: \"size `n` is at least 1\"\n\
        requires m >= 1  # size: \"size `m` is at least 1\"\n\
        requires k >= 1  # size: \"size `k` is at least 1\"\n\
        source: gen i < n: f[i]\n{\n  for i in 0..n {  # gen\n    out[i] = f[i * m * k % n @ (i * m * k % n)] - f[i * m * k % n @ (i * m * k % n)] + f[i @ (i)]  @ (i)\n  }\n}\n";
    let k = atl_loopir::parse::parse_kernel(text).unwrap_or_else(|d| panic!("{d:?}"));
    let report = common::report_against(&k, THREE, "g");
    assert_overflow_not_validated(&report);
}

#[test]
fn every_example_kernel_fits_by_the_analysis() {
    // Lowering proposes its entry bounds with the same analysis, so every
    // expression of an example's kernel fits without the solver.
    let mut checked = 0;
    for path in common::support::example_files() {
        for (def, k) in common::kernels_of(&path) {
            let report = common::report(&k);
            for c in &report.obligations {
                if matches!(c.obligation.kind, ObligationKind::Int64 { .. }) {
                    assert!(
                        c.verdict.is_proved() && c.method == Method::Magnitude,
                        "{}: {def}: {}",
                        path.display(),
                        c.obligation
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} overflow obligations");
}
