//! A precondition's statement is checked against the condition the C checks (issue
//! 28, item 6): the header, the Python module and the Rust bindings check and show
//! the statement (`Precondition::pred`), the C kernel its condition
//! (`Precondition::cond`), so a kernel whose two disagree refuses sizes the program
//! allows (or lets through sizes it refuses) in one of them.

mod common;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_validate::{KernelVerdict, ObligationKind};

fn fast_max() -> atl_loopir::ir::Kernel {
    common::example_kernel("softmax/softmax_rows16.atl", "fast_max")
}

/// `m % 16 == r`.
fn m_mod_16_is(r: i64) -> Pred {
    Pred::cmp(
        CmpOp::Eq,
        IndexExpr::bin(IndexOp::Mod, IndexExpr::var("m"), IndexExpr::Const(16)),
        IndexExpr::Const(r),
    )
}

#[test]
fn the_example_validates_with_its_statements() {
    let report =
        common::report_against_example(&fast_max(), "softmax/softmax_rows16.atl", "fast_max");
    assert_eq!(report.verdict, KernelVerdict::Validated, "{report}");
    assert!(
        report
            .obligations
            .iter()
            .any(|c| matches!(c.obligation.kind, ObligationKind::PreconditionText { .. })),
        "{report}"
    );
}

#[test]
fn a_statement_that_is_not_the_condition_is_rejected() {
    let mut k = fast_max();
    let pre = k
        .preconditions
        .iter_mut()
        .find(|p| p.pred == m_mod_16_is(0))
        .expect("the kernel requires m % 16 == 0");
    pre.pred = m_mod_16_is(1);
    let report = common::report_against_example(&k, "softmax/softmax_rows16.atl", "fast_max");
    let KernelVerdict::Rejected { refuted, .. } = &report.verdict else {
        panic!("not rejected:\n{report}");
    };
    assert!(
        refuted
            .iter()
            .any(|r| matches!(&r.obligation.kind, ObligationKind::PreconditionText { pred, .. } if pred.contains("== 1"))),
        "{report}"
    );
}
