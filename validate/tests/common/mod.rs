//! Shared by the validator's tests: the example programs (through the loader the
//! lowering's own differential tests use) and their kernels, lowered as `atl emit`
//! lowers them (`Solver::new()`, the default options).

#![allow(dead_code)]

#[path = "../../../lower/tests/support/mod.rs"]
pub mod support;

use std::path::Path;

use atl_loopir::ir::Kernel;

/// Every kernel of one example file: (definition, kernel).
pub fn kernels_of(path: &Path) -> Vec<(String, Kernel)> {
    let ex = support::load(path);
    assert!(
        ex.failed_derivations.is_empty(),
        "{}: derivations failed: {:?}",
        path.display(),
        ex.failed_derivations
    );
    ex.defs
        .iter()
        .map(|def| {
            let kernel = atl_lower::lower_def_with(
                &ex.program,
                &ex.shapes,
                def,
                &atl_solver::Solver::new(),
                &atl_lower::LowerOptions::default(),
            )
            .unwrap_or_else(|d| panic!("{}: `{def}` does not lower: {d:?}", path.display()));
            (def.clone(), kernel)
        })
        .collect()
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
