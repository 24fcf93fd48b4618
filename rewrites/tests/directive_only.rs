//! The schedules that issue 20 asks to be written with directives alone: every
//! derivation of `examples/halide/halide.atl`, the kit's `fast` schedules and those of
//! the examples listed below. Each, and every derivation it starts from, uses only
//! directives, loop annotations and the argument-free tactics (`simpl`, `simpl_guard`,
//! `check`): no `rw` step, no numeric path, no `window`, `unfold` or `inline` by hand,
//! and its file declares no user rule. Each must also derive without a diagnostic.

use std::path::Path;

/// (example file under `examples/`, derivations that must be directive-only; empty:
/// every derivation of the file).
const DIRECTIVE_ONLY: &[(&str, &[&str])] = &[
    ("halide/halide.atl", &[]),
    (
        "matmul/matmul.atl",
        &["fast", "tiled_directive", "reordered_directive"],
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
        common::assert_directive_only(file, &source, names);
        // And they derive: no step is refused.
        let (_, derivations, diags) = common::derive(&source);
        assert!(diags.is_empty(), "{file}: {diags:?}");
        assert!(!derivations.is_empty());
    }
}

mod common;
