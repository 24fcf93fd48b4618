//! The schedules that issue 20 asks to be written with directives alone: every
//! derivation of `examples/halide/halide.atl`, the kit's `fast` schedules and those of
//! the examples listed below. Each, and every derivation it starts from, uses only
//! directives, loop annotations and the argument-free tactics (`simpl`, `simpl_guard`,
//! `check`): no `rw` step, no numeric path, no `window`, `unfold` or `inline` by hand,
//! and its file declares no user rule. Each must also derive without a diagnostic.

use std::collections::BTreeMap;
use std::path::Path;

use atl_lang::ast::{Item, StepKind};

/// (example file under `examples/`, derivations that must be directive-only; empty:
/// every derivation of the file).
const DIRECTIVE_ONLY: &[(&str, &[&str])] = &[
    ("halide/halide.atl", &[]),
    (
        "matmul/matmul.atl",
        &["fast_directive", "tiled_directive", "reordered_directive"],
    ),
    (
        "blur/blur.atl",
        &[
            "two_stage_directive",
            "inline_directive",
            "tiled_schedule",
            "strips_directive",
            "tiled_staged_directive",
        ],
    ),
];

fn example(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples")
            .join(file),
    )
    .unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn listed_schedules_use_directives_only() {
    for (file, names) in DIRECTIVE_ONLY {
        let source = example(file);
        let (parsed, diags) = atl_lang::parser::parse_file(&source);
        assert!(diags.is_empty(), "{file}: {diags:?}");
        let mut derives: BTreeMap<&str, (&str, &[atl_lang::ast::Step])> = BTreeMap::new();
        for item in &parsed.items {
            match item {
                Item::Derive {
                    name, from, steps, ..
                } => {
                    derives.insert(&name.name, (&from.name, steps));
                }
                Item::Rule(r) => panic!("{file}: declares the user rule `{}`", r.name.name),
                _ => {}
            }
        }
        let wanted: Vec<&str> = if names.is_empty() {
            derives.keys().copied().collect()
        } else {
            names.to_vec()
        };
        assert!(!wanted.is_empty(), "{file}: nothing to check");
        for name in wanted {
            // The derivation and the chain of derivations it starts from.
            let mut current = name;
            while let Some((from, steps)) = derives.get(current) {
                for step in *steps {
                    let text = &source[step.span.range()];
                    let allowed = matches!(
                        step.kind,
                        StepKind::Directive { .. }
                            | StepKind::Simpl
                            | StepKind::SimplGuard
                            | StepKind::Check
                    );
                    assert!(
                        allowed,
                        "{file}: `{name}` (through `{current}`) has the step `{text}`, which is not a directive"
                    );
                }
                current = from;
            }
            assert!(current != name, "{file}: no derivation named `{name}`");
        }
        // And they derive: no step is refused.
        let (_, derivations, diags) = common::derive(&source);
        assert!(diags.is_empty(), "{file}: {diags:?}");
        assert!(!derivations.is_empty());
    }
}

mod common;
