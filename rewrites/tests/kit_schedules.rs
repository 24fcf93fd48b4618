//! The schedules the benchmark kit times (`bench/kit.sh`, definition `fast`) are written
//! with directives only (issue 20): no `rw` step, no numeric path, no rule of the file's
//! own, at most 12 steps, derived directly from a written definition (not from a
//! rule-level derivation), and each derives without a diagnostic.

mod common;

use std::path::Path;

use atl_lang::ast::StepKind;

/// The examples whose `fast` must be directive-only: the kit's four and the new
/// examples'.
const DIRECTIVE_ONLY: &[&str] = &[
    "blur/blur.atl",
    "matmul/matmul.atl",
    "tensor_add/tensor_add.atl",
    "conv1d_kit/conv1d_kit.atl",
    "matmul_at/matmul_at.atl",
    "conv2d/conv2d.atl",
];

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn the_kits_fast_schedules_are_directives_only() {
    let kit = std::fs::read_to_string(root().join("bench/kit.sh")).expect("bench/kit.sh");
    for file in DIRECTIVE_ONLY {
        let source = std::fs::read_to_string(root().join("examples").join(file)).expect(file);
        let (checked, derivations, diags) = common::derive(&source);
        assert!(diags.is_empty(), "{file}: {diags:?}");
        assert!(
            derivations.iter().any(|d| d.name == "fast"),
            "{file}: `fast` derives"
        );
        let p = &checked.program;
        let fast = p
            .derive("fast")
            .unwrap_or_else(|| panic!("{file}: no `fast`"));
        assert!(
            p.def(&fast.from).is_some(),
            "{file}: `fast` is derived from a definition, not from `{}`",
            fast.from
        );
        assert!(p.rules.is_empty(), "{file}: no rule of its own");
        assert!(fast.steps.len() <= 12, "{file}: {} steps", fast.steps.len());
        for step in &fast.steps {
            assert!(
                matches!(
                    step.kind,
                    StepKind::Directive { .. } | StepKind::Simpl | StepKind::SimplGuard
                ),
                "{file}: a rule-level step in `fast`: {:?}",
                step.kind
            );
        }
        // Only `.atl` files that exist in the kit's list are timed.
        let in_kit = kit.contains(&format!("examples/{file}|fast"));
        assert!(
            in_kit || ["matmul_at/matmul_at.atl", "conv2d/conv2d.atl"].contains(file),
            "{file}: bench/kit.sh times `fast`"
        );
    }
}
