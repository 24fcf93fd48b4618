//! Steps that must be refused: each program in `test_data/err/` has a derivation whose
//! step is unsound or malformed at that site (an index not provably in range, dependent
//! sum bounds, wrong reshape amounts, a `with` that breaks a side condition, …). The
//! engine must refuse it with a diagnostic; the rendered diagnostics are snapshots.

use atl_lang::diag::render_to_string;
use atl_rewrites::{Env, Library, run_derivations};
use atl_solver::Solver;

#[test]
fn unsound_or_malformed_steps_are_refused() {
    let (lib, diags) = Library::standard();
    assert!(diags.is_empty());
    let solver = Solver::new();
    insta::glob!("../test_data/err", "*.atl", |path| {
        let source = std::fs::read_to_string(path).expect("readable");
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let (checked, diags) = atl_lang::check_source(&source);
        let checked =
            checked.unwrap_or_else(|| panic!("{name} must pass the front end: {diags:?}"));
        let env = Env {
            program: &checked.program,
            shapes: &checked.shapes,
            library: &lib,
            solver: &solver,
        };
        let (derivations, diags) = run_derivations(&env);
        assert!(
            derivations.is_empty(),
            "{name}: the derivation was accepted"
        );
        assert!(!diags.is_empty(), "{name}: no diagnostic");
        let rendered = render_to_string(&diags, name, &source);
        // Someone who wrote a directive is answered in their words: no rule's
        // metavariable (`?i`) and no rule syntax in the message.
        if name.starts_with("directive_") {
            let bytes = rendered.as_bytes();
            let metavariable =
                (1..bytes.len()).find(|&k| bytes[k - 1] == b'?' && bytes[k].is_ascii_lowercase());
            assert!(
                metavariable.is_none(),
                "{name}: a rule metavariable in a directive's refusal:\n{rendered}"
            );
        }
        insta::assert_snapshot!(rendered);
    });
}
