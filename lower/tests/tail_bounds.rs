//! A guard that bounds the innermost loop of an accumulation from above — the last,
//! partial tile of a split — becomes the loop's bound where it would otherwise select
//! around loads (`acc += j < N ? A * B : 0` does not vectorize: the load may not be
//! evaluated past the bound). Checked on the loop IR (the bound is a `min`, the
//! select is gone) and on values against the interpreter, at sizes with and without a
//! tail, for the guard written as `<`, `<=`, `>` and `>=`. The same for a guard below
//! inner `gen`s (a last row tile's, bounding the rows) and for a sum's own
//! guard (the last block of a split reduction). A last column tile's lanes past the
//! extent, which its copy never stores, are summed without their guard.

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_def};

mod support;
use support::derived_kernel;

/// A batched product whose columns are tiled by 8 (no `pack`: the reads of `B` past
/// the last column are out of bounds, so the tail tile's guard cannot be a blend).
fn program(guard: &str) -> String {
    format!(
        "size NB, M, N, K\ninput A : [NB, M, K]\ninput B : [NB, K, N]\n\
         def bmm = gen b < NB, i < M, jt < cdiv(N, 8): sum k < K: gen jr < 8: \
         [{guard}] * (A[b, i, k] * B[b, k, jt * 8 + jr])\n"
    )
}

fn inputs(sizes: &BTreeMap<String, i64>) -> BTreeMap<String, Tensor> {
    let s = |n: &str| sizes[n] as usize;
    BTreeMap::from([
        (
            "A".to_string(),
            Tensor::random(vec![s("NB"), s("M"), s("K")], 1),
        ),
        (
            "B".to_string(),
            Tensor::random(vec![s("NB"), s("K"), s("N")], 2),
        ),
    ])
}

/// The program with `guard`, checked, its kernel, and the kernel's text.
fn lowered(guard: &str) -> (atl_lang::Checked, atl_lower::Kernel, String) {
    let (checked, diags) = atl_lang::check_source(&program(guard));
    let checked = checked.unwrap_or_else(|| panic!("{guard}: {diags:?}"));
    let kernel = atl_lower::lower_def(
        &checked.program,
        &checked.shapes,
        "bmm",
        &Default::default(),
    )
    .unwrap_or_else(|d| panic!("{guard}: {d:?}"));
    let text = atl_loopir::kernel_to_string(&kernel);
    (checked, kernel, text)
}

#[test]
fn the_tail_tiles_guard_is_the_loops_bound() {
    for guard in [
        "jt * 8 + jr < N",
        "jt * 8 + jr <= N - 1",
        "N > jt * 8 + jr",
        "N - 1 >= jr + 8 * jt",
    ] {
        let (checked, kernel, text) = lowered(guard);
        assert!(
            text.contains("min("),
            "{guard}: no bound from the guard:\n{text}"
        );
        assert!(!text.contains(" ? "), "{guard}: a select is left:\n{text}");
        for (nb, m, n, k) in [(2, 3, 16, 5), (2, 3, 13, 5), (1, 2, 1, 3), (1, 1, 7, 4)] {
            let sizes = BTreeMap::from([
                ("NB".to_string(), nb),
                ("M".to_string(), m),
                ("N".to_string(), n),
                ("K".to_string(), k),
            ]);
            let inputs = inputs(&sizes);
            let want = eval_def(
                &checked.program,
                "bmm",
                &sizes,
                &inputs,
                &EvalOptions::default(),
            )
            .expect("evaluates");
            let got = atl_lower::run_kernel(&kernel, &sizes, &inputs).expect("runs");
            assert_eq!(got.shape, want.shape);
            assert_eq!(got.data, want.data, "{guard} at N={n}");
        }
    }
}

#[test]
fn a_guard_on_another_loop_or_a_lower_bound_stays_a_guard() {
    // `jr >= 2` bounds `jr` from below and `i < N - 1` another loop: neither is the
    // innermost loop's upper bound, so nothing changes.
    for guard in ["jr >= 2", "i < N - 1", "jr * 2 < N"] {
        let (_, _, text) = lowered(guard);
        assert!(!text.contains("min("), "{guard}:\n{text}");
    }
}

/// `program`'s kernel checked against the interpreter at `cases` (NB, M, N, K).
fn assert_values(source: &str, def: &str, cases: &[(i64, i64, i64, i64)]) -> String {
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let kernel = atl_lower::lower_def(&checked.program, &checked.shapes, def, &Default::default())
        .unwrap_or_else(|d| panic!("{d:?}"));
    for &(nb, m, n, k) in cases {
        let sizes = BTreeMap::from([
            ("NB".to_string(), nb),
            ("M".to_string(), m),
            ("N".to_string(), n),
            ("K".to_string(), k),
        ]);
        let inputs = inputs(&sizes);
        let want = eval_def(
            &checked.program,
            def,
            &sizes,
            &inputs,
            &EvalOptions::default(),
        )
        .expect("evaluates");
        let got = atl_lower::run_kernel(&kernel, &sizes, &inputs).expect("runs");
        // Nested sums accumulate in place (lowering's default grouping), so the
        // roundings may differ from the interpreter's grouping by a few ulps.
        assert_eq!(got.shape, want.shape);
        for (g, w) in got.data.iter().zip(&want.data) {
            assert!(
                (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                "at M={m}, N={n}, K={k}: {g} vs {w}"
            );
        }
    }
    atl_loopir::kernel_to_string(&kernel)
}

#[test]
fn a_row_tiles_guard_below_its_columns_bounds_the_rows() {
    // The last row tile: the guard on the rows sits below the column loop, which it
    // does not mention; the rows are bounded and the columns keep no select. (The
    // rows kept at their constant trip count, unrolled with each row under an `if`,
    // were no faster: a batched matmul at 64 x 16 x 256 x 256, 6-row tiles, the last
    // of 4 rows, 2.03 ms against 1.98 ms, Intel Xeon, one thread.)
    let source = "size NB, M, N, K\ninput A : [NB, M, K]\ninput B : [NB, K, N]\n\
        def bmm = gen b < NB, it < cdiv(M, 4): sum k < K: gen ir < 4, j < N: \
        [it * 4 + ir < M] * (A[b, it * 4 + ir, k] * B[b, k, j])\n";
    let text = assert_values(source, "bmm", &[(2, 8, 5, 3), (2, 7, 5, 3), (1, 1, 2, 2)]);
    assert!(text.contains("for ir in 0..min(4, M - 4 * it) {"), "{text}");
    assert!(!text.contains(" ? "), "a select is left:\n{text}");
}

#[test]
fn a_last_column_tiles_lanes_past_the_extent_are_summed_without_their_guard() {
    // `B` packed (zero past the last column, so every read is in bounds) and tiled
    // 2 x 8: the last column tile's guard only zeroes lanes its copy never stores
    // (truncated away), so they are summed whole; the values are the definition's.
    let source = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
        def mm = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]\n\
        derive fast from mm {\n  pack B by 8 into Bp\n  tile i, j by 2, 8 into it, jt, ir, jr\n  \
        simpl\n  reorder it, jt, k, ir, jr\n  partition it\n  partition jt\n}\n";
    let (program, kernel, text) = derived_kernel(source, "fast");
    assert!(
        !text.contains("blend("),
        "a guard is left in a tile:\n{text}"
    );
    for (m, n, k) in [(4, 16, 3), (5, 13, 3), (1, 1, 2), (3, 9, 1)] {
        let sizes = BTreeMap::from([
            ("M".to_string(), m),
            ("N".to_string(), n),
            ("K".to_string(), k),
        ]);
        let inputs = BTreeMap::from([
            (
                "A".to_string(),
                Tensor::random(vec![m as usize, k as usize], 1),
            ),
            (
                "B".to_string(),
                Tensor::random(vec![k as usize, n as usize], 2),
            ),
        ]);
        let want = eval_def(&program, "fast", &sizes, &inputs, &EvalOptions::default())
            .expect("evaluates");
        let got = atl_lower::run_kernel(&kernel, &sizes, &inputs).expect("runs");
        assert_eq!(got.shape, want.shape);
        for (g, w) in got.data.iter().zip(&want.data) {
            assert!(
                (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                "at {m}x{n}x{k}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn a_last_reduction_blocks_guard_bounds_the_block() {
    // A reduction split in blocks of 8, the last one cut at K.
    let source = "size NB, M, N, K\ninput A : [NB, M, K]\ninput B : [NB, K, N]\n\
        def bmm = gen b < NB, i < M, j < N: sum ko < cdiv(K, 8): sum ki < 8: \
        [ko * 8 + ki < K] * (A[b, i, ko * 8 + ki] * B[b, ko * 8 + ki, j])\n";
    let text = assert_values(source, "bmm", &[(1, 2, 3, 16), (1, 2, 3, 13), (2, 1, 1, 1)]);
    assert!(text.contains("for ki in 0..min(8, K - 8 * ko) {"), "{text}");
    assert!(!text.contains(" ? "), "a select is left:\n{text}");
}

/// A split `gen` with a guarded tail (issue 32): the inner loop once ran to the factor
/// with the guard inside (`for ii in 0..K { if ii + K * io < n … }`), so a factor of
/// 4611686018427387903 ran that many iterations at `n = 3`. The guard on the loop's
/// own variable is now its bound, `min(K, n - K * io)`, and the kernel runs at once.
#[test]
fn a_split_gens_tail_guard_stops_the_loop_at_the_extent() {
    for factor in ["4611686018427387903", "8"] {
        let source = format!(
            "size n\ninput f : [n]\ndef g = gen i < n: f[i] * 2.0\n\
             derive h from g {{\n  split i by {factor} into io, ii\n}}\n"
        );
        let (_, kernel, text) = derived_kernel(&source, "h");
        // Checked before running: with the guard inside, the run would not finish.
        assert!(
            text.contains(&format!("for ii in 0..min({factor}, n - {factor} * io)"))
                && !text.contains(" if "),
            "{text}"
        );
        for n in [1, 3, 8, 13] {
            let sizes = BTreeMap::from([("n".to_string(), n)]);
            let f = Tensor::random(vec![n as usize], 3);
            let want: Vec<f64> = f.data.iter().map(|x| x * 2.0).collect();
            let inputs = BTreeMap::from([("f".to_string(), f)]);
            let got = atl_lower::run_kernel(&kernel, &sizes, &inputs).expect("runs");
            assert_eq!(got.data, want, "factor {factor}, n = {n}");
        }
    }
}
