//! A partitioned parallel loop's parts lower to one parallel loop that branches on its
//! variable (`lower/src/merge_parallel.rs`), so that the threads share the last tile
//! with the full ones: checked on the loop IR (one parallel loop where there were two
//! or three, the parts' bodies under `if`/`else`) and on values against the
//! interpreter at sizes where a part is empty (no full tile, no last tile, a stencil's
//! steady state empty). Loops that are not parallel, or whose ranges may be out of
//! order, are left apart (the unit tests of `merge_parallel.rs`).

mod support;

use std::collections::BTreeMap;

use support::{derived_kernel, inputs, max_error, reference};

/// `source`'s `def` lowered: its text, after checking the values at each of `sizes`
/// (lists of (size, value)).
fn values_agree(source: &str, def: &str, sizes: &[&[(&str, i64)]]) -> String {
    let (program, kernel, text) = derived_kernel(source, def);
    for assignment in sizes {
        let sizes: BTreeMap<String, i64> = assignment
            .iter()
            .map(|(n, v)| (n.to_string(), *v))
            .collect();
        let inputs = inputs(&program, &sizes, 7);
        let want = reference(&program, def, &sizes, &inputs);
        let got = atl_lower::run_kernel(&kernel, &sizes, &inputs)
            .unwrap_or_else(|e| panic!("at {sizes:?}: {e:?}\n{text}"));
        let err = max_error(&got, &want);
        assert!(err < 1e-12, "at {sizes:?}: error {err}\n{text}");
    }
    text
}

fn parallel_loops(text: &str) -> usize {
    text.lines().filter(|l| l.contains("parallel")).count()
}

#[test]
fn a_partitioned_parallel_tile_loop_is_one_loop_with_the_last_tile_in_its_else() {
    let source = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
        def mm = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]\n\
        derive fast from mm {\n  pack B by 8 into Bp\n  reorder j, i\n  \
        tile j, i by 8, 2 into jt, it, jr, ir\n  simpl\n  reorder jt, it, k, ir, jr\n  \
        partition it\n  partition jt\n  parallel jt\n}\n";
    let text = values_agree(
        source,
        "fast",
        &[
            // Full and last column tiles; only the last one (N < 8); only full ones.
            &[("M", 5), ("N", 19), ("K", 3)],
            &[("M", 3), ("N", 5), ("K", 2)],
            &[("M", 4), ("N", 16), ("K", 1)],
            &[("M", 1), ("N", 1), ("K", 1)],
        ],
    );
    // The packing loop and the tile loop: the last column tile shares the tile loop.
    assert_eq!(parallel_loops(&text), 2, "{text}");
    assert!(text.contains("for jt in 0..(N + 7) / 8 {"), "{text}");
    assert!(text.contains("if jt < N / 8 {"), "{text}");
    assert!(
        !text.contains("jt1"),
        "the last tile's variable is left:\n{text}"
    );
}

#[test]
fn a_stencils_prologue_steady_state_and_epilogue_share_one_parallel_loop() {
    // The rows partitioned at the vertical border (three parts; the steady state is
    // empty at H <= 2) and parallel; the columns vectorized, as lowering annotates them.
    let source = "size H, W\ninput x : [H, W]\n\
        def blur = gen y < H, w < W: [0 <= y - 1] * x[y - 1, w] + x[y, w] + [y + 1 < H] * x[y + 1, w]\n\
        derive fast from blur {\n  partition y\n  parallel y\n}\n";
    let text = values_agree(
        source,
        "fast",
        &[
            &[("H", 1), ("W", 3)],
            &[("H", 2), ("W", 1)],
            &[("H", 3), ("W", 2)],
            &[("H", 10), ("W", 5)],
        ],
    );
    assert_eq!(parallel_loops(&text), 1, "{text}");
    assert_eq!(text.matches("} else {").count(), 2, "{text}");
}
