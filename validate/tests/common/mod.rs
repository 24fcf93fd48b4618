//! Shared by the validator's tests: the example programs (through the loader the
//! lowering's own differential tests use) and their kernels, lowered as `atl emit`
//! lowers them (`Solver::new()`, the default options).

#![allow(dead_code)]

#[path = "../../../lower/tests/support/mod.rs"]
pub mod support;

use std::path::Path;

use atl_lang::index::IndexExpr;
use atl_loopir::ir::{BufferDecl, Ix, Kernel, Stmt};
use atl_validate::{KernelVerdict, NOT_CHECKED_YET, Refutation, Report, validate};

/// Every kernel of one example file: (definition, kernel).
pub fn kernels_of(path: &Path) -> Vec<(String, Kernel)> {
    support::kernels_of(path)
}

/// The kernel of definition `def` in `examples/<file>`.
pub fn example_kernel(file: &str, def: &str) -> Kernel {
    let path = support::examples_dir().join(file);
    kernels_of(&path)
        .into_iter()
        .find(|(d, _)| d == def)
        .map(|(_, k)| k)
        .unwrap_or_else(|| panic!("no definition `{def}` in {file}"))
}

// ---- shared by the mutant tests -------------------------------------------------

pub fn report(kernel: &Kernel) -> Report {
    validate(kernel, &atl_solver::Solver::new())
}

/// The refutations of a rejected kernel (panics, with the report, otherwise).
pub fn refutations(kernel: &Kernel) -> Vec<Refutation> {
    let report = report(kernel);
    match report.verdict {
        KernelVerdict::Rejected { refuted } => refuted,
        _ => panic!("the mutant was not rejected:\n{report}"),
    }
}

/// Asserts the kernel is accepted on what this increment checks.
pub fn assert_accepted(kernel: &Kernel) {
    let report = report(kernel);
    assert_eq!(
        report.verdict,
        KernelVerdict::NotValidated {
            reasons: vec![NOT_CHECKED_YET.to_string()]
        },
        "{report}"
    );
    assert!(!report.obligations.is_empty());
}

/// The refutation whose obligation satisfies `wanted`, with a readable failure.
/// Applies `f` to every statement list of the body, outermost first.
pub fn edit_blocks(stmts: &mut Vec<Stmt>, f: &mut dyn FnMut(&mut Vec<Stmt>)) {
    f(stmts);
    for s in stmts.iter_mut() {
        match s {
            Stmt::For(l) => edit_blocks(&mut l.body, f),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                edit_blocks(then_branch, f);
                edit_blocks(else_branch, f);
            }
            Stmt::Alloc { body, .. } => edit_blocks(body, f),
            _ => {}
        }
    }
}

pub fn var(name: &str) -> Ix {
    Ix::Var(name.to_string())
}

pub fn ivar(name: &str) -> IndexExpr {
    IndexExpr::var(name)
}

// ---- mutants of lowered kernels ------------------------------------------------

pub fn decl(name: &str, shape: Vec<IndexExpr>) -> BufferDecl {
    BufferDecl {
        name: name.to_string(),
        shape,
    }
}
