//! Shared by the validator's tests: the example programs (through the loader the
//! lowering's own differential tests use) and their kernels, lowered as `atl emit`
//! lowers them (`Solver::new()`, the default options).

#![allow(dead_code)]

#[path = "../../../lower/tests/support/mod.rs"]
pub mod support;

use std::path::Path;

use atl_lang::index::IndexExpr;
use atl_loopir::ir::{BufferDecl, Ix, Kernel, Stmt};
use atl_validate::{KernelVerdict, NO_SOURCE, Refutation, Report, validate};

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
    validate(kernel, None, &atl_solver::Solver::new())
}

/// The refutations of a rejected kernel (panics, with the report, otherwise).
pub fn refutations(kernel: &Kernel) -> Vec<Refutation> {
    let report = report(kernel);
    match report.verdict {
        KernelVerdict::Rejected { refuted, .. } => refuted,
        _ => panic!("the mutant was not rejected:\n{report}"),
    }
}

/// Asserts the kernel is accepted on what this increment checks.
pub fn assert_accepted(kernel: &Kernel) {
    let report = report(kernel);
    assert_eq!(
        report.verdict,
        KernelVerdict::NotValidated {
            reasons: vec![NO_SOURCE.to_string()]
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
        index_array: None,
        order: None,
        checked_where_read: false,
    }
}

// ---- the value check ----------------------------------------------------------------

/// A program from its text (which must check), with its shapes.
pub fn program(text: &str) -> (atl_lang::ir::Program, atl_lang::shapes::ShapeEnv) {
    let (checked, diags) = atl_lang::check_source(text);
    let checked = checked.unwrap_or_else(|| panic!("the program does not check: {diags:?}"));
    (checked.program, checked.shapes)
}

/// The report on `kernel` as a kernel of definition `def` of the program `text`.
pub fn report_against(kernel: &Kernel, text: &str, def: &str) -> Report {
    let (program, shapes) = program(text);
    let source = atl_validate::Source {
        program: &program,
        shapes: &shapes,
        def,
    };
    validate(kernel, Some(&source), &atl_solver::Solver::new())
}

/// The report on `kernel` as the kernel of `def` in `examples/<file>`.
pub fn report_against_example(kernel: &Kernel, file: &str, def: &str) -> Report {
    let example = support::load(&support::examples_dir().join(file));
    let source = atl_validate::Source {
        program: &example.program,
        shapes: &example.shapes,
        def,
    };
    validate(kernel, Some(&source), &atl_solver::Solver::new())
}
