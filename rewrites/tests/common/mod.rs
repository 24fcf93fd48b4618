//! Shared by the integration tests: replaying a program's derivations with the standard
//! library, as `atl derive` does.

use atl_lang::Checked;
use atl_lang::diag::Diagnostic;
use atl_rewrites::{Derivation, Env, Library, run_derivations};
use atl_solver::Solver;

/// Checks `source` with the front end (panicking if it fails) and runs its derivations.
pub fn derive(source: &str) -> (Checked, Vec<Derivation>, Vec<Diagnostic>) {
    let (library, diags) = Library::standard();
    assert!(diags.is_empty(), "the standard library loads");
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("front end: {diags:?}\n{source}"));
    let solver = Solver::new();
    let env = Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver: &solver,
    };
    let (derivations, diags) = run_derivations(&env);
    (checked, derivations, diags)
}
