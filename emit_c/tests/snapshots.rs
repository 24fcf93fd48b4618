//! Snapshot tests of the emitted C (`float`) for every definition and derivation of
//! the pipeline, matmul, softmax and matvec examples (tiled and tail-split matmul included; the
//! softmax's max-reduction starts at `-INFINITY` and folds with `atl__vmax`), and of one
//! header. Review changes with `cargo insta review`; create them with
//! `INSTA_UPDATE=always`.

#[path = "../../lower/tests/support/mod.rs"]
mod support;

use atl_emit_c::{EmitOptions, emit};

fn emitted(example: &str) -> Vec<(String, atl_emit_c::CCode)> {
    let ex = support::load(&support::examples_dir().join(format!("{example}/{example}.atl")));
    ex.defs
        .iter()
        .map(|def| {
            let kernel = atl_lower::lower_def(&ex.program, &ex.shapes, def, &Default::default())
                .unwrap_or_else(|d| panic!("`{def}` does not lower: {d:?}"));
            let code = emit(&kernel, &EmitOptions::default()).expect("emits");
            (def.clone(), code)
        })
        .collect()
}

#[test]
fn pipeline_c() {
    for (def, code) in emitted("pipeline") {
        insta::assert_snapshot!(format!("pipeline__{def}"), code.source);
    }
}

#[test]
fn softmax_c() {
    for (def, code) in emitted("softmax") {
        assert!(code.source.contains("INFINITY") && code.source.contains("atl__vmax"));
        insta::assert_snapshot!(format!("softmax__{def}"), code.source);
    }
}

#[test]
fn matmul_c() {
    let all = emitted("matmul");
    assert!(
        all.iter().any(|(d, _)| d == "tiled"),
        "the tiled derivation is snapshotted"
    );
    for (def, code) in &all {
        insta::assert_snapshot!(format!("matmul__{def}"), code.source);
    }
    insta::assert_snapshot!("matmul__header", all[0].1.header);
}

/// The batched matrix-vector product: `fast` keeps its partial sums in an 8-element
/// stack array updated in an `omp simd` loop (`rfactor` + `vectorize`).
#[test]
fn matvec_c() {
    for (def, code) in emitted("matvec") {
        insta::assert_snapshot!(format!("matvec__{def}"), code.source);
    }
}
