//! The Halide papers' schedules (`examples/halide/halide.atl`) counted: how many values
//! of each stage a lowered kernel computes, from the loop-IR interpreter's store
//! counts (issue 32). The expectations are the papers' own:
//!
//! - "Formal Semantics for the Halide Language" §2, `g(x) = x * x`, `f(x) = g(x) +
//!   g(x + 1)` on [0, 6): `g` computed at the root is computed on [0, 7), 7 values;
//!   `f` split by 3 with `g` computed at the tile loop computes 4 values of `g` per
//!   tile (the tile and one more), 8 in all; split by 4 with guarded tails, 5 per
//!   tile, 10 in all.
//! - "A Brief Introduction to the Lowering Process of Halide", `f(x) = x * x`, `g(x) =
//!   f(x) + f(x - 1)`, `g` split by 10 with `f` computed at the tile loop: 11 values of
//!   `f` per tile (the tile and the element to its left).
//!
//!   With `f.store_root()` (the sliding window), 11 values in the first tile and 10 in
//!   each later one.
//! - `specialize` (Halide's): one version runs, the one whose condition holds.
//!
//! Each kernel's output is also compared with the reference interpreter.

mod support;

use std::collections::BTreeMap;

use support::{inputs, load, max_error, reference};

/// The stores into each buffer of `def`'s kernel at `sizes`, after checking its values.
fn counts(def: &str, sizes: &[(&str, i64)]) -> BTreeMap<String, u64> {
    let path = support::examples_dir().join("halide/halide.atl");
    let ex = load(&path);
    assert!(
        ex.failed_derivations.is_empty(),
        "{:?}",
        ex.failed_derivations
    );
    let kernel = atl_lower::lower_def(&ex.program, &ex.shapes, def, &Default::default())
        .unwrap_or_else(|d| panic!("{def}: {d:?}"));
    let sizes: BTreeMap<String, i64> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let inputs = inputs(&ex.program, &sizes, 3);
    let want = reference(&ex.program, def, &sizes, &inputs);
    let (got, counts) = atl_lower::interp::run_kernel_counting(&kernel, &sizes, &inputs)
        .unwrap_or_else(|d| panic!("{def}: {d:?}"));
    assert!(max_error(&got, &want) < 1e-12, "{def} at {sizes:?}");
    counts
}

/// The stores into the buffer of stage `stage` (its name, or a name lowering made
/// from it: `g1`), and into the output.
fn stage_and_output(counts: &BTreeMap<String, u64>, stage: &str) -> (u64, u64) {
    let of_stage: Vec<u64> = counts
        .iter()
        .filter(|(b, _)| b.trim_end_matches(|c: char| c.is_ascii_digit()) == stage)
        .map(|(_, n)| *n)
        .collect();
    (
        of_stage.iter().sum(),
        counts.get("out").copied().unwrap_or(0),
    )
}

#[test]
fn formal_semantics_paper_counts() {
    let n6 = [("n", 6), ("m", 1)];
    for def in ["formal", "formal_paper"] {
        assert_eq!(stage_and_output(&counts(def, &n6), "g"), (7, 6), "{def}");
    }
    for def in ["f_split3", "f_split3_paper"] {
        assert_eq!(stage_and_output(&counts(def, &n6), "g"), (8, 6), "{def}");
    }
    assert_eq!(stage_and_output(&counts("f_split4", &n6), "g"), (10, 6));
    assert_eq!(stage_and_output(&counts("f_root", &n6), "g"), (7, 6));
}

/// `f.specialize(n % 4 == 0)`: the kernel runs the specialized version (`g` per tile
/// of 4, 5 values each) where the condition holds, and the general one (`g` at the
/// root on [0, n + 1)) elsewhere.
#[test]
fn specialize_runs_one_version() {
    let n8 = [("n", 8), ("m", 1)];
    assert_eq!(stage_and_output(&counts("f_spec4", &n8), "g"), (10, 8));
    let n6 = [("n", 6), ("m", 1)];
    assert_eq!(stage_and_output(&counts("f_spec4", &n6), "g"), (7, 6));
    let n12 = [("n", 12), ("m", 1)];
    assert_eq!(stage_and_output(&counts("f_spec4", &n12), "g"), (15, 12));
}

#[test]
fn lowering_intro_counts() {
    let n30 = [("n", 30), ("m", 1)];
    for def in ["g_split", "g_split_paper"] {
        assert_eq!(stage_and_output(&counts(def, &n30), "f"), (33, 30), "{def}");
    }
    assert_eq!(stage_and_output(&counts("intro", &n30), "f"), (30, 30));
    // Inlined: no value of `f` is stored.
    assert_eq!(stage_and_output(&counts("g_inline", &n30), "f"), (0, 30));
}

/// `f.store_root().compute_at(g, x)`, the paper's own schedule: with the sliding window
/// the first tile computes its 11 values of `f` and each later tile the 10 the earlier
/// ones did not, `n + 1` in all (33 at n = 30 without it); at a ragged size the last
/// tile still computes 10 (its guarded tail reads them as zeros, as without sliding).
/// Computed at every point: one new value per iteration after the first, `n + 1`
/// against `2 n`.
#[test]
fn sliding_window_counts() {
    for def in ["g_slide", "g_slide_paper", "g_slide_fold"] {
        assert_eq!(
            stage_and_output(&counts(def, &[("n", 30), ("m", 1)]), "f"),
            (31, 30),
            "{def}"
        );
        assert_eq!(
            stage_and_output(&counts(def, &[("n", 23), ("m", 1)]), "f"),
            (31, 23),
            "{def}"
        );
        assert_eq!(
            stage_and_output(&counts(def, &[("n", 1), ("m", 1)]), "f"),
            (11, 1),
            "{def}"
        );
    }
    assert_eq!(
        stage_and_output(&counts("g_point", &[("n", 30), ("m", 1)]), "f"),
        (60, 30)
    );
    assert_eq!(
        stage_and_output(&counts("g_point_slide", &[("n", 30), ("m", 1)]), "f"),
        (31, 30)
    );
    assert_eq!(
        stage_and_output(&counts("g_point_slide", &[("n", 1), ("m", 1)]), "f"),
        (2, 1)
    );
}
