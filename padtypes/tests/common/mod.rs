//! Shared by the integration tests: load a source text, run its derivations with the
//! standard rule library and return the program with every derived definition added.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use atl_lang::diag::Diagnostic;
use atl_lang::ir::Program;
use atl_lang::shapes::ShapeEnv;
use atl_solver::Solver;

/// A checked program with its derivations applied.
pub struct Loaded {
    pub program: Program,
    pub shapes: ShapeEnv,
    /// Front-end and derivation diagnostics.
    pub diags: Vec<Diagnostic>,
}

/// Parses, checks and derives. `None` if the front end rejects the source.
pub fn load(source: &str, solver: &Solver) -> Option<Loaded> {
    let (checked, mut diags) = atl_lang::check_source(source);
    let checked = checked?;
    let (standard, lib_diags) = atl_rewrites::Library::standard();
    assert!(lib_diags.is_empty(), "the rule library must load");
    // The file's own rules, admitted as `atl check` admits them.
    let (library, rule_diags) = atl_rewrites::user_rules::library_with_user_rules(
        &standard,
        &checked.program,
        "example.atl",
        solver,
    );
    diags.extend(rule_diags);
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver,
    };
    let (derivations, derive_diags) = atl_rewrites::run_derivations(&env);
    diags.extend(derive_diags);
    let (program, shapes) =
        atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    Some(Loaded {
        program,
        shapes,
        diags,
    })
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives in the workspace")
        .to_path_buf()
}

/// Every `examples/*/*.atl`, sorted.
pub fn example_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dir = workspace_root().join("examples");
    for entry in std::fs::read_dir(&dir).expect("examples/ exists") {
        let path = entry.expect("readable entry").path();
        if path.is_dir() {
            for f in std::fs::read_dir(&path).expect("readable example dir") {
                let f = f.expect("readable entry").path();
                if f.extension().is_some_and(|e| e == "atl") {
                    out.push(f);
                }
            }
        }
    }
    out.sort();
    out
}
