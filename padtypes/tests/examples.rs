//! Every definition and every derivation of every example passes the gate: pad types of
//! all truncations, access safety and reshape amounts. New examples and derivations are
//! picked up automatically.

use atl_lang::diag::render_to_string;
use atl_solver::Solver;

mod common;

#[test]
fn every_example_and_derivation_passes() {
    let solver = Solver::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in common::example_files() {
        let source = std::fs::read_to_string(&path).expect("readable example");
        let name = path.display().to_string();
        let Some(loaded) = common::load(&source, &solver) else {
            failures.push(format!("{name}: the front end rejects it"));
            continue;
        };
        // A derivation that fails in the rewrite engine leaves nothing to check: that
        // must not pass silently.
        for d in &loaded.program.derives {
            if !loaded.program.defs.iter().any(|x| x.name == d.name) {
                failures.push(format!(
                    "{name}: derivation `{}` fails in the rewrite engine, so its result cannot be checked:\n{}",
                    d.name,
                    render_to_string(&loaded.diags, &name, &source)
                ));
            }
        }
        let (diags, stats) =
            atl_padtypes::check_program_with_stats(&loaded.program, &loaded.shapes, &solver);
        checked += stats.definitions;
        if !diags.is_empty() {
            failures.push(render_to_string(&diags, &name, &source));
        }
    }
    assert!(checked >= 10, "only {checked} definitions checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The derived programs that truncate really exercise the pad-type check (not just
/// programs without reshapes).
#[test]
fn derived_programs_with_truncations_are_checked() {
    let solver = Solver::new();
    let mut truncations = 0;
    for path in common::example_files() {
        let source = std::fs::read_to_string(&path).expect("readable example");
        if let Some(loaded) = common::load(&source, &solver) {
            let (_, stats) =
                atl_padtypes::check_program_with_stats(&loaded.program, &loaded.shapes, &solver);
            truncations += stats.truncations;
        }
    }
    assert!(truncations >= 3, "only {truncations} truncations checked");
}
