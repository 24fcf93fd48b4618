//! Every derivation in `examples/` replays without error, and the derived program
//! equals the program it was derived from under the reference interpreter, on several
//! size assignments (including sizes that are not multiples of the tile sizes, and 1):
//! bit for bit when every step is `exact`, within rounding otherwise.

use std::collections::BTreeMap;
use std::path::Path;

use atl_lang::diag::render_to_string;
use atl_lang::interp::{EvalOptions, Tensor, eval_def, input_shapes};
use atl_rewrites::rule::Grade;
use atl_rewrites::{Env, Library, run_derivations, with_derived};
use atl_solver::Solver;

fn example_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).expect("examples/") {
        let dir = dir.expect("entry").path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).expect("example dir") {
                let p = f.expect("entry").path();
                if p.extension().is_some_and(|e| e == "atl") {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// Size assignments: all equal to s for several s, and two mixed ones.
fn assignments(names: &[String]) -> Vec<BTreeMap<String, i64>> {
    let mut out = Vec::new();
    for s in [1, 2, 7, 9, 17] {
        out.push(names.iter().map(|n| (n.clone(), s)).collect());
    }
    for mix in [[5, 9, 2, 7, 3, 11], [13, 3, 8, 1, 6, 4]] {
        out.push(
            names
                .iter()
                .enumerate()
                .map(|(k, n)| (n.clone(), mix[k % mix.len()]))
                .collect(),
        );
    }
    // Several tiles of 8 or 64 with a partial last tile; only where evaluation stays
    // cheap (two-dimensional examples).
    if names.len() <= 2 {
        for mix in [[67, 131], [130, 65]] {
            out.push(
                names
                    .iter()
                    .enumerate()
                    .map(|(k, n)| (n.clone(), mix[k % 2]))
                    .collect(),
            );
        }
    }
    out
}

#[test]
fn every_derivation_replays_and_preserves_meaning() {
    let (lib, diags) = Library::standard();
    assert!(diags.is_empty(), "rule library has errors");
    let solver = Solver::new();
    let mut derivations_checked = 0;
    let mut failures = Vec::new();
    for file in example_files() {
        let source = std::fs::read_to_string(&file).expect("readable");
        let name = file.display().to_string();
        let (checked, diags) = atl_lang::check_source(&source);
        let checked =
            checked.unwrap_or_else(|| panic!("{}", render_to_string(&diags, &name, &source)));
        // The file's user rules, admitted as `atl check` admits them.
        let (lib, diags) = atl_rewrites::user_rules::library_with_user_rules(
            &lib,
            &checked.program,
            &name,
            &solver,
        );
        if !diags.is_empty() {
            failures.push(render_to_string(&diags, &name, &source));
            continue;
        }
        let env = Env {
            program: &checked.program,
            shapes: &checked.shapes,
            library: &lib,
            solver: &solver,
        };
        let (derivations, diags) = run_derivations(&env);
        if !diags.is_empty() {
            failures.push(render_to_string(&diags, &name, &source));
            continue;
        }
        let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
        let size_names: Vec<String> = program.sizes.iter().map(|s| s.name.clone()).collect();
        for d in &derivations {
            let mut compared = 0;
            for sizes in assignments(&size_names) {
                let options = EvalOptions::default();
                let Ok(shapes) = input_shapes(&program, &sizes, &options) else {
                    continue; // an `assume` excludes these sizes
                };
                let inputs: BTreeMap<String, Tensor> = shapes
                    .into_iter()
                    .enumerate()
                    .map(|(k, (n, s))| (n, Tensor::random(s, 100 + k as u64)))
                    .collect();
                let a = eval_def(&program, &d.from, &sizes, &inputs, &options)
                    .expect("original evaluates");
                let b = eval_def(&program, &d.name, &sizes, &inputs, &options)
                    .expect("derived evaluates");
                let same = a.shape == b.shape
                    && match d.grade() {
                        Grade::Exact => a
                            .data
                            .iter()
                            .zip(&b.data)
                            .all(|(x, y)| x.to_bits() == y.to_bits()),
                        Grade::Real => a
                            .data
                            .iter()
                            .zip(&b.data)
                            .all(|(x, y)| (x - y).abs() <= 1e-10 * (1.0 + x.abs())),
                    };
                if !same {
                    failures.push(format!(
                        "{name}: `{}` differs from `{}` at {sizes:?}",
                        d.name, d.from
                    ));
                    break;
                }
                compared += 1;
            }
            assert!(
                compared >= 3,
                "{name}: `{}` compared at only {compared} size assignments",
                d.name
            );
            derivations_checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        derivations_checked >= 5,
        "only {derivations_checked} derivations"
    );
}

/// Halide-style directives expand into exactly the rule steps of the hand-written
/// derivations they stand for.
#[test]
fn directives_expand_to_the_rule_level_derivations() {
    let (lib, _) = Library::standard();
    let solver = Solver::new();
    for (file, by_rules, by_directive) in [
        ("matmul/matmul.atl", "tiled", "tiled_directive"),
        ("blur/blur.atl", "tiled", "tiled_directive"),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples")
            .join(file);
        let source = std::fs::read_to_string(&path).expect("readable");
        let (checked, _) = atl_lang::check_source(&source);
        let checked = checked.expect("checks");
        let env = Env {
            program: &checked.program,
            shapes: &checked.shapes,
            library: &lib,
            solver: &solver,
        };
        let (derivations, diags) = run_derivations(&env);
        assert!(diags.is_empty(), "{file}");
        let get = |n: &str| {
            derivations
                .iter()
                .find(|d| d.name == n)
                .unwrap_or_else(|| panic!("{n}"))
        };
        let (a, b) = (get(by_rules), get(by_directive));
        assert!(
            atl_lang::ir::alpha_eq(&a.result, &b.result),
            "{file}: {by_directive} differs from {by_rules}"
        );
        let rules = |d: &atl_rewrites::Derivation| {
            d.steps
                .iter()
                .filter_map(|s| s.rule.clone())
                .collect::<Vec<_>>()
        };
        let expected: Vec<String> = rules(a).into_iter().filter(|r| r != "unfold_let").collect();
        assert_eq!(rules(b), expected, "{file}");
        assert!(b.steps.iter().all(|s| s.origin.is_some()));
    }
}
