//! Index arrays checked where they are read (`checked_where_read`, issue 31): the
//! validator proves such a kernel safe without the array's declaration. The CSR product
//! as lowering makes it validates; each way of weakening its check (removed, its
//! `else` dropped, a bound dropped or widened) is rejected by the obligation that
//! says why, and so is a check stricter than the declaration (a valid call would
//! fail) and the flag on a `sorted` array.

use atl_loopir::parse::parse_kernel;
use atl_loopir::print::kernel_to_text;
use atl_solver::Verdict;
use atl_validate::obligations::ObligationKind;
use atl_validate::{KernelVerdict, Source, validate};

const CSR: &str = "size M, N, nnz
input pos : int[M + 1] in 0..nnz + 1 sorted
input crd : int[nnz] in 0..N
input vals : [nnz]
input x : [N]
def spmv = gen i < M: sum p in pos[i]..pos[i + 1]: vals[p] * x[crd[p]]
";

struct Lowered {
    program: atl_lang::ir::Program,
    shapes: atl_lang::shapes::ShapeEnv,
    text: String,
}

fn lowered() -> Lowered {
    let (checked, diags) = atl_lang::check_source(CSR);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let kernel = atl_lower::lower_def_with(
        &checked.program,
        &checked.shapes,
        "spmv",
        &atl_solver::Solver::new(),
        &Default::default(),
    )
    .expect("lowers");
    Lowered {
        program: checked.program,
        shapes: checked.shapes,
        text: kernel_to_text(&kernel),
    }
}

/// The verdict on the kernel text `text`, and the kinds of its refuted or unknown
/// obligations.
fn verdict(l: &Lowered, text: &str) -> (KernelVerdict, Vec<ObligationKind>) {
    let kernel = parse_kernel(text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let source = Source {
        program: &l.program,
        shapes: &l.shapes,
        def: "spmv",
    };
    let report = validate(&kernel, Some(&source), &atl_solver::Solver::new());
    let failed = report
        .obligations
        .iter()
        .filter(|o| o.verdict != Verdict::Proved)
        .map(|o| o.obligation.kind.clone())
        .collect();
    (report.verdict, failed)
}

fn edited(l: &Lowered, from: &str, to: &str) -> String {
    assert!(l.text.contains(from), "`{from}` not in\n{}", l.text);
    l.text.replacen(from, to, 1)
}

fn rejected_for(l: &Lowered, text: &str, wanted: &dyn Fn(&ObligationKind) -> bool) {
    let (verdict, failed) = verdict(l, text);
    assert!(
        matches!(verdict, KernelVerdict::Rejected { .. }),
        "not rejected: {verdict:?}\n{text}"
    );
    assert!(failed.iter().any(wanted), "{failed:?}\n{text}");
}

const CHECK: &str = "if 0 <= crd[p] && crd[p] < N {";

#[test]
fn the_lowered_product_checks_crd_where_it_reads_it_and_validates() {
    let l = lowered();
    assert!(
        l.text.contains("crd: int[nnz] in 0..N checked_where_read"),
        "{}",
        l.text
    );
    assert!(
        l.text.contains(CHECK) && l.text.contains("fail crd"),
        "{}",
        l.text
    );
    assert_eq!(verdict(&l, &l.text).0, KernelVerdict::Validated);
    // Checked on entry as well, the same body validates (its checks are dead).
    let on_entry = edited(&l, " checked_where_read", "");
    assert_eq!(verdict(&l, &on_entry).0, KernelVerdict::Validated);
}

#[test]
fn a_missing_or_weaker_check_is_rejected() {
    let l = lowered();
    let unchecked = |k: &ObligationKind| matches!(k, ObligationKind::CheckedWhereRead { .. });
    // The check always passes: `x[crd[p]]` may read outside `x`.
    rejected_for(&l, &edited(&l, CHECK, "if true {"), &|k| {
        unchecked(k) || matches!(k, ObligationKind::Bounds { .. })
    });
    // A bound dropped or one too wide.
    rejected_for(&l, &edited(&l, CHECK, "if crd[p] < N {"), &unchecked);
    rejected_for(&l, &edited(&l, CHECK, "if 0 <= crd[p] {"), &unchecked);
    rejected_for(
        &l,
        &edited(&l, CHECK, "if 0 <= crd[p] && crd[p] < N + 1 {"),
        &unchecked,
    );
    // Without its `else`, the `if` is no check: its condition uses `crd[p]` unchecked.
    let no_else = l
        .text
        .replacen("} else {\n        fail crd\n      }", "}", 1);
    assert_ne!(no_else, l.text, "{}", l.text);
    rejected_for(&l, &no_else, &unchecked);
}

#[test]
fn a_check_stricter_than_the_declaration_is_rejected() {
    let l = lowered();
    rejected_for(
        &l,
        &edited(&l, CHECK, "if 0 <= crd[p] && crd[p] < N - 1 {"),
        &|k| matches!(k, ObligationKind::CheckHolds { .. }),
    );
}

#[test]
fn only_an_unsorted_array_may_be_checked_where_read() {
    let l = lowered();
    let sorted = edited(&l, "sorted,", "sorted checked_where_read,");
    rejected_for(&l, &sorted, &|k| {
        matches!(k, ObligationKind::WellFormed { .. })
    });
}
