//! Certificates for the tests, made by the rewrite engine exactly as `atl derive --cert`
//! makes them (`cli/src/commands/derive.rs`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use atl_rewrites::cert::Certificate;
use atl_rewrites::user_rules::library_with_user_rules;
use atl_rewrites::{Env, Library, run_derivations, with_derived};
use atl_solver::Solver;

/// Every `examples/*/*.atl` file, sorted.
pub fn example_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(root).expect("examples/ exists") {
        let dir = dir.expect("readable").path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).expect("readable") {
            let f = f.expect("readable").path();
            if f.extension().is_some_and(|e| e == "atl") {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

/// (derivation name, certificate JSON) for every derivation of an ATL source.
pub fn certificates_of_source(source: &str) -> Vec<(String, String)> {
    let (checked, diags) = atl_lang::check_source(source);
    assert!(checked.is_some(), "source does not check: {diags:?}");
    try_certificates_of_source(source).unwrap_or_else(|| panic!("derivations fail:\n{source}"))
}

/// Like [`certificates_of_source`]; `None` if the source, one of its user rules or a
/// derivation fails.
pub fn try_certificates_of_source(source: &str) -> Option<Vec<(String, String)>> {
    let (checked, _) = atl_lang::check_source(source);
    let checked = checked?;
    let (standard, _) = Library::standard();
    let solver = Solver::new();
    let (library, diags) =
        library_with_user_rules(&standard, &checked.program, "source.atl", &solver);
    if !diags.is_empty() {
        return None;
    }
    let env = Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver: &solver,
    };
    let (derivations, diags) = run_derivations(&env);
    if !diags.is_empty() {
        return None;
    }
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    let certs = derivations
        .iter()
        .map(|d| {
            let cert = Certificate::chained(d, &derivations, &program, &library);
            let json = serde_json::to_string_pretty(&cert).expect("serializable");
            (d.name.clone(), json)
        })
        .collect();
    Some(certs)
}

/// The certificate of derivation `name` in `examples/DIR/DIR.atl`.
pub fn example_certificate(dir: &str, name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/{dir}/{dir}.atl"));
    let source = std::fs::read_to_string(path).expect("example exists");
    certificates_of_source(&source)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, c)| c)
        .unwrap_or_else(|| panic!("no derivation {name} in {dir}"))
}
