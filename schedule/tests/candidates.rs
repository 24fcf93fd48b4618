//! The directives candidates write, replayed by the derivation engine as `atl check`
//! would: a stencil's tile loop partitioned at its guards (the interior tiles run
//! without a boundary test on it), an element-wise map's untiled rows, and a
//! contraction's operand read along its first dimension staged transposed. Each derived
//! program is compared with the specification by the interpreter.

mod common;

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_expr};
use atl_lang::ir::{Expr, ExprKind};
use atl_rewrites::{Env, Library, run_derivations};
use atl_schedule::candidate::Slot;
use atl_schedule::nest::analyze;
use atl_schedule::variants::{Ranked, ranked};
use atl_solver::Solver;

const STENCIL: &str = "size C, H, W
input inp : [C, H, W]
input w : [C, 3, 3]
def dwconv = gen c < C, y < H, x < W: sum ry < 3, rx < 3:
  w[c, ry, rx] * [0 <= y + ry - 1 && y + ry - 1 < H && 0 <= x + rx - 1 && x + rx - 1 < W] * inp[c, y + ry - 1, x + rx - 1]
";

const ADD: &str = "size A, B, C, D
input t1 : [A, B, C, D]
input t2 : [A, B, C, D]
def add = gen i < A, j < B, k < C, l < D: t1[i, j, k, l] + t2[i, j, k, l]
";

const TTM: &str = "size I, J, K, R
input T : [I, J, K]
input U : [R, K]
def ttm = gen i < I, j < J, r < R: sum k < K: T[i, j, k] * U[r, k]
";

const MATVEC: &str = "size M, N
input A : [M, N]
input x : [N]
def mv = gen i < M: sum j < N: A[i, j] * x[j]
";

const MATMUL: &str = "size M, N, K
input A : [M, K]
input B : [K, N]
def mm = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]
";

const COLUMN_MAJOR: &str = "size M, N, K
input A : [M, K] layout (M, K):(1, M)
input B : [K, N]
def mm = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]
";

fn sizes(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
}

/// The candidates of `def` in `source` at `at`, on the fixed test machine.
fn candidates(source: &str, def: &str, at: &[(&str, i64)], threads: usize) -> Vec<Ranked> {
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let nest = analyze(&checked.program, def, &sizes(at)).expect("a nest");
    ranked(&nest, &common::avx512_machine(), 4, threads).0
}

/// `source` with the candidate's steps as `derive scheduled from def`, replayed; the
/// derived program, or the engine's diagnostics.
fn derive(source: &str, def: &str, steps: &[String]) -> (atl_lang::Checked, Expr) {
    let text = format!(
        "{source}derive scheduled from {def} {{\n  {}\n}}\n",
        steps.join("\n  ")
    );
    let (library, diags) = Library::standard();
    assert!(diags.is_empty());
    let (checked, diags) = atl_lang::check_source(&text);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}\n{text}"));
    let solver = Solver::new();
    let env = Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver: &solver,
    };
    let (derivations, diags) = run_derivations(&env);
    assert!(diags.is_empty(), "{diags:?}\n{text}");
    let result = derivations[0].result.clone();
    (checked, result)
}

/// Copies of the loop nest under a `sum` over `tap` (its name or a renamed copy's), and
/// how many of them have no guard mentioning one of `vars` (or a renamed copy).
fn copies_without_guards_on(e: &Expr, tap: &str, vars: &[&str]) -> (usize, usize) {
    let (mut copies, mut free) = (0, 0);
    e.walk(&mut |n| {
        if let ExprKind::Sum { var: v, .. } = &n.kind
            && v.starts_with(tap)
        {
            copies += 1;
            let mut guards = 0;
            n.walk(&mut |m| {
                if let ExprKind::Guard { pred, .. } = &m.kind {
                    guards += usize::from(
                        pred.vars()
                            .iter()
                            .any(|v| vars.iter().any(|p| v.starts_with(p))),
                    );
                }
            });
            free += usize::from(guards == 0);
        }
    });
    (copies, free)
}

fn assert_same_values(
    checked: &atl_lang::Checked,
    def: &str,
    derived: &Expr,
    cases: &[Vec<(&str, i64)>],
) {
    assert_values_within(checked, def, derived, cases, 0.0);
}

/// The derived program's values are the specification's at every case: equal, or with
/// `tolerance` > 0 within that relative error (a reassociation: partial sums).
fn assert_values_within(
    checked: &atl_lang::Checked,
    def: &str,
    derived: &Expr,
    cases: &[Vec<(&str, i64)>],
    tolerance: f64,
) {
    let spec = &checked.program.def(def).expect("spec").body;
    for (n, case) in cases.iter().enumerate() {
        let at = sizes(case);
        let env = |name: &str| at.get(name).copied();
        let inputs: BTreeMap<String, Tensor> = checked
            .program
            .inputs
            .iter()
            .enumerate()
            .map(|(k, input)| {
                let shape = input
                    .shape
                    .iter()
                    .map(|d| d.eval(&env).expect("size") as usize)
                    .collect();
                (
                    input.name.clone(),
                    Tensor::random(shape, (10 * n + k) as u64),
                )
            })
            .collect();
        let options = EvalOptions::default();
        let want = eval_expr(&checked.program, spec, &at, &inputs, &options).unwrap();
        let got = eval_expr(&checked.program, derived, &at, &inputs, &options).unwrap();
        if tolerance == 0.0 {
            assert_eq!(got, want, "at {case:?}");
            continue;
        }
        assert_eq!(got.shape, want.shape);
        for (g, w) in got.data.iter().zip(&want.data) {
            assert!(
                (g - w).abs() <= tolerance * w.abs().max(1.0),
                "at {case:?}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn a_stencil_tile_partitioned_at_its_guards_has_a_guard_free_interior() {
    let all = candidates(STENCIL, "dwconv", &[("C", 64), ("H", 112), ("W", 112)], 1);
    let with = all
        .iter()
        .find(|r| r.candidate.partition_guards)
        .expect("a partitioned tile");
    // The model counts no selects in the interior: the partitioned twin of a tile is
    // estimated cheaper than the tile with its guards.
    let twin = all
        .iter()
        .find(|r| {
            !r.candidate.partition_guards
                && r.candidate.tile == with.candidate.tile
                && r.candidate.boundary.is_none()
        })
        .expect("the unpartitioned twin");
    assert!(
        with.estimate < twin.estimate,
        "{} vs {}",
        with.estimate,
        twin.estimate
    );

    // A tile partitioned in both loops is copied 36 times (tails and borders), each
    // copy unrolled over its rows and a row of taps: 2 x 16 compiles in a few seconds,
    // 4 x 32 would take gcc more than the 10 s a candidate's compile gets, so the
    // search proposes the first and not the second.
    let partitioned = |rows: i64, cols: i64| {
        all.iter().any(|r| {
            let t = &r.candidate.tile;
            r.candidate.partition_guards
                && t.row.as_deref() == Some("y")
                && (t.rows, t.cols) == (rows, cols)
        })
    };
    assert!(partitioned(2, 16));
    assert!(!partitioned(4, 32));
    let nest = {
        let (checked, _) = atl_lang::check_source(STENCIL);
        analyze(
            &checked.unwrap().program,
            "dwconv",
            &sizes(&[("C", 64), ("H", 112), ("W", 112)]),
        )
        .unwrap()
    };
    let steps = with.candidate.steps(&nest);
    let partitions = steps.iter().filter(|s| s.starts_with("partition")).count();
    assert!(
        (3..=4).contains(&partitions),
        "the tails, then the guards: {steps:?}"
    );
    let (checked, derived) = derive(STENCIL, "dwconv", &steps);
    // The tile loops partitioned at the guards: `xt`, and `yt` when `y` is tiled.
    let partitioned_loops: Vec<&str> = if with.candidate.tile.row.as_deref() == Some("y") {
        vec!["xt", "yt"]
    } else {
        vec!["xt"]
    };
    let (copies, free) = copies_without_guards_on(&derived, "rx", &partitioned_loops);
    assert_eq!(free, 1, "one interior copy of {copies}: {steps:?}");
    assert!(
        copies >= 3,
        "the border copies keep their guards: {steps:?}"
    );
    let cases: Vec<Vec<(&str, i64)>> = [(1, 1), (2, 5), (3, 17), (9, 40)]
        .iter()
        .map(|&(h, w)| vec![("C", 2), ("H", h), ("W", w)])
        .collect();
    assert_same_values(&checked, "dwconv", &derived, &cases);
}

#[test]
fn an_element_wise_map_keeps_its_rows_whole_and_its_written_order() {
    let at = [("A", 64), ("B", 64), ("C", 64), ("D", 64)];
    let all = candidates(ADD, "add", &at, 2);
    // The loops as written come first, whatever the model says of the tiles (they
    // are the baseline a memory-bound map's search must match).
    let whole = &all[0];
    assert!(whole.candidate.tile.whole && !whole.candidate.partition_guards);
    let nest = {
        let (checked, _) = atl_lang::check_source(ADD);
        analyze(&checked.unwrap().program, "add", &sizes(&at)).unwrap()
    };
    assert_eq!(
        whole.candidate.steps(&nest),
        ["parallel i", "vectorize l"],
        "Halide's parallel and vectorize, without a split"
    );
    // No candidate walks the outer loops against the written order (`j` around `i`):
    // past the last-level cache the prefetchers lose the stream.
    for r in &all {
        let steps = r.candidate.steps(&nest);
        assert!(
            !steps.iter().any(|s| s.starts_with("reorder j, i")),
            "{steps:?}"
        );
    }
    let (checked, derived) = derive(ADD, "add", &whole.candidate.steps(&nest));
    assert_same_values(
        &checked,
        "add",
        &derived,
        &[vec![("A", 1), ("B", 2), ("C", 3), ("D", 5)]],
    );
}

#[test]
fn a_contractions_operand_read_across_its_rows_is_staged_transposed() {
    let at = [("I", 128), ("J", 128), ("K", 128), ("R", 32)];
    let all = candidates(TTM, "ttm", &at, 1);
    // `U[r, k]` with the vector lanes on `r`: a gather, one load per lane, unless `U`
    // is read through its transposed copy. Every tile is proposed both ways, and the
    // copy is the cheaper of each pair. (The partial sums of `k`, a dot product along
    // `T`'s rows, come first, unranked.)
    let best = all
        .iter()
        .find(|r| r.candidate.partial_sums.is_none())
        .expect("a tile");
    assert_eq!(
        best.candidate.stage.as_deref(),
        Some("U"),
        "{}",
        best.candidate.summary()
    );
    let twin = all
        .iter()
        .find(|r| r.candidate.stage.is_none() && r.candidate.tile == best.candidate.tile)
        .expect("the same tile without the copy");
    assert!(best.estimate < twin.estimate);
    // `T[i, j, k]` is read along the reduction, not the columns: never staged.
    assert!(
        all.iter()
            .all(|r| r.candidate.stage.as_deref() != Some("T"))
    );
    let nest = {
        let (checked, _) = atl_lang::check_source(TTM);
        analyze(&checked.unwrap().program, "ttm", &sizes(&at)).unwrap()
    };
    let steps = best.candidate.steps(&nest);
    assert_eq!(steps[0], "stage U into Ut order 1, 0", "{steps:?}");
    let (checked, derived) = derive(TTM, "ttm", &steps);
    let shown = atl_lang::pretty::expr_to_string(&derived, Default::default());
    assert!(!shown.contains("U[r"), "{shown}");
    let cases: Vec<Vec<(&str, i64)>> = [(1, 1, 1, 1), (2, 9, 5, 33), (1, 17, 3, 70)]
        .iter()
        .map(|&(i, j, k, r)| vec![("I", i), ("J", j), ("K", k), ("R", r)])
        .collect();
    assert_same_values(&checked, "ttm", &derived, &cases);
}

#[test]
fn dot_products_along_contiguous_rows_are_vectorized_as_partial_sums() {
    let at = [("M", 2048), ("N", 2048)];
    let all = candidates(MATVEC, "mv", &at, 2);
    // A matrix-vector product: a tile over `i` would gather `A[i, j]` across rows; the
    // partial sums of `j` (1, 2 and 4 vectors of 16 lanes) come first.
    let widths: Vec<i64> = all
        .iter()
        .filter_map(|r| r.candidate.partial_sums)
        .collect();
    assert_eq!(widths, [16, 32, 64]);
    assert!(all[..3].iter().all(|r| r.candidate.partial_sums.is_some()));
    let nest = {
        let (checked, _) = atl_lang::check_source(MATVEC);
        analyze(&checked.unwrap().program, "mv", &sizes(&at)).unwrap()
    };
    let steps = all[1].candidate.steps(&nest);
    assert_eq!(
        steps,
        [
            "split j by 32 into jo, ji",
            "rfactor ji into l as part",
            "reorder jo, l",
            "vectorize l",
            "parallel i"
        ]
    );
    let (checked, derived) = derive(MATVEC, "mv", &steps);
    let cases: Vec<Vec<(&str, i64)>> = [(1, 1), (3, 31), (2, 70), (5, 64)]
        .iter()
        .map(|&(m, n)| vec![("M", m), ("N", n)])
        .collect();
    // Partial sums regroup the additions (graded `real`): equal up to rounding.
    let spec = &checked.program.def("mv").expect("spec").body;
    for case in &cases {
        let at = sizes(case);
        let inputs: BTreeMap<String, Tensor> = [
            (
                "A".to_string(),
                Tensor::random(vec![case[0].1 as usize, case[1].1 as usize], 1),
            ),
            ("x".to_string(), Tensor::random(vec![case[1].1 as usize], 2)),
        ]
        .into();
        let options = EvalOptions::default();
        let want = eval_expr(&checked.program, spec, &at, &inputs, &options).unwrap();
        let got = eval_expr(&checked.program, &derived, &at, &inputs, &options).unwrap();
        for (g, w) in got.data.iter().zip(&want.data) {
            assert!(
                (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                "{case:?}: {g} vs {w}"
            );
        }
    }
    // A matmul reads `B[k, j]` along the output's columns: tiles, no partial sums.
    let matmul = candidates(MATMUL, "mm", &[("M", 512), ("N", 512), ("K", 512)], 1);
    assert!(matmul.iter().all(|r| r.candidate.partial_sums.is_none()));
}

const BLUR: &str = "size H, W
input img : [H, W]
def blur =
  let bx =
      gen y < H, x < W:
        [0 <= x - 1] * img[y, x - 1] + img[y, x] + [x + 1 < W] * img[y, x + 1] in
  gen y < H, x < W: [0 <= y - 1] * bx[y - 1, x] + bx[y, x] + [y + 1 < H] * bx[y + 1, x]
";

const ROW_SOFTMAX: &str = "size N, M
input X : [N, M]
def softmax =
  let total = gen i < N: sum j < M: exp(X[i, j]) in
  gen i < N, j < M: exp(X[i, j]) / total[i]
";

#[test]
fn a_two_stage_stencil_is_searched_as_the_nest_its_stage_inlines_into() {
    let at = [("H", 64), ("W", 64)];
    let (checked, _) = atl_lang::check_source(BLUR);
    let program = checked.unwrap().program;
    let nest = atl_schedule::stages::nest_of(BLUR, &program, "blur", &sizes(&at))
        .expect("the inlined nest");
    assert_eq!(
        nest.def, "blur",
        "the derivation starts from the specification"
    );
    assert_eq!(nest.prefix, ["compute_inline bx"]);
    // Nine reads of the input (three taps of three taps), every one under a guard.
    assert_eq!(nest.reads.len(), 9, "{:?}", nest.reads);
    assert!(nest.reads.iter().all(|r| r.input == "img"));
    assert_eq!(nest.gens.len(), 2);
    let all = ranked(&nest, &common::avx512_machine(), 4, 1).0;
    let partitioned = all
        .iter()
        .find(|r| r.candidate.partition_guards && r.candidate.tile.row.is_some())
        .expect("a tile partitioned at the guards");
    let steps = partitioned.candidate.steps(&nest);
    assert_eq!(steps[0], "compute_inline bx", "{steps:?}");
    let (checked, derived) = derive(BLUR, "blur", &steps);
    let cases: Vec<Vec<(&str, i64)>> = [(1, 1), (2, 3), (5, 17), (9, 40)]
        .iter()
        .map(|&(h, w)| vec![("H", h), ("W", w)])
        .collect();
    assert_same_values(&checked, "blur", &derived, &cases);
}

#[test]
fn a_stage_that_is_a_reduction_is_not_inlined_into_every_element() {
    let (checked, _) = atl_lang::check_source(ROW_SOFTMAX);
    let program = checked.unwrap().program;
    let why = atl_schedule::stages::nest_of(
        ROW_SOFTMAX,
        &program,
        "softmax",
        &sizes(&[("N", 64), ("M", 64)]),
    )
    .expect_err("a row sum inlined leaves a loop in the body");
    assert!(why.contains("compute_inline total"), "{why}");
    assert!(why.contains("a loop inside the body"), "{why}");
}

const SOFTMAX_ROWS: &str = "size n, m
assume m % 16 == 0
input x : [n, m]
def softmax =
  gen i < n, j < m:
    let mx = max k < m: x[i, k] in
    let s = sum k < m: exp(x[i, k] - mx) in exp(x[i, j] - mx) / s
";

/// A matmul under a bias (E0960 before: a loop under the body's `+`) is searched as two
/// stages after a preamble that stages its reduction (`let_intro`, then `compute_root`,
/// which hoists it out of the loops): the matmul, searched as any nest, and the
/// element-wise epilogue reading it. The preamble replays and keeps the values.
#[test]
fn a_reduction_under_an_epilogue_is_staged_then_searched_as_two_nests() {
    const BIAS: &str = "size M, N, K
input A : [M, K]
input B : [K, N]
input c : [N]
def mmb = gen i < M, j < N: (sum k < K: A[i, k] * B[k, j]) + 2 * c[j]
";
    let at = [("M", 64), ("N", 64), ("K", 64)];
    let (checked, _) = atl_lang::check_source(BIAS);
    let program = checked.unwrap().program;
    let plan = atl_schedule::stages::plan(BIAS, &program, "mmb", &sizes(&at), 16, 1).unwrap();
    let atl_schedule::stages::Plan::Stages { stages, preamble } = plan else {
        panic!("a reduction under a bias is not one nest")
    };
    assert_eq!(
        preamble,
        [
            "rw let_intro around (sum k < K: ?) with x := acc",
            "compute_root acc"
        ]
    );
    assert_eq!(stages.len(), 2);
    let (acc, own) = (stages[0].nest(), stages[1].nest());
    assert_eq!((acc.gens.len(), acc.sums.len()), (2, 1));
    assert!(own.sums.is_empty());
    assert!(
        own.reads.iter().any(|r| r.input == "acc"),
        "{:?}",
        own.reads
    );
    let (checked, derived) = derive(BIAS, "mmb", &preamble);
    assert_same_values(
        &checked,
        "mmb",
        &derived,
        &[
            vec![("M", 3), ("N", 5), ("K", 4)],
            vec![("M", 1), ("N", 1), ("K", 7)],
        ],
    );
    // The stage's name avoids the definition's loops too (a `gen` named `acc` that
    // the body does not read).
    let source = BIAS
        .replace("gen i < M", "gen acc < M")
        .replace("A[i, k]", "A[0, k]");
    let (checked, _) = atl_lang::check_source(&source);
    let program = checked.unwrap().program;
    let d = program.def("mmb").unwrap();
    let steps = atl_schedule::stages::epilogue_staging(&program, &d.body).expect("staged");
    assert!(
        steps[1].starts_with("compute_root acc") && steps[1] != "compute_root acc",
        "{steps:?}"
    );
    let (checked, derived) = derive(&source, "mmb", &steps);
    assert_same_values(
        &checked,
        "mmb",
        &derived,
        &[vec![("M", 2), ("N", 3), ("K", 4)]],
    );
    // Two reductions, or one under a loop, are not staged so.
    for body in [
        "gen i < M, j < N: (sum k < K: A[i, k] * B[k, j]) + (sum k < K: A[i, k])",
        "gen i < M, j < N: sum k < K: A[i, k] * B[k, j] + c[j]",
    ] {
        let source = format!(
            "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\ninput c : [N]\ndef d = {body}\n"
        );
        let (checked, _) = atl_lang::check_source(&source);
        let program = checked.unwrap().program;
        let d = program.def("d").unwrap();
        assert_eq!(
            atl_schedule::stages::epilogue_staging(&program, &d.body),
            None,
            "{body}"
        );
    }
}

#[test]
fn stages_that_are_nests_are_searched_one_after_the_other() {
    let at = [("N", 64), ("M", 64)];
    let (checked, _) = atl_lang::check_source(ROW_SOFTMAX);
    let program = checked.unwrap().program;
    let plan =
        atl_schedule::stages::plan(ROW_SOFTMAX, &program, "softmax", &sizes(&at), 16, 1).unwrap();
    let atl_schedule::stages::Plan::Stages { stages, .. } = plan else {
        panic!("a row sum does not inline into one nest")
    };
    // The row sum, then the definition's own nest, which reads it like an input.
    assert_eq!(stages.len(), 2);
    let (total, own) = (stages[0].nest(), stages[1].nest());
    assert_eq!(total.sums.len(), 1);
    assert!(own.reads.iter().any(|r| r.input == "total"));
    assert!(
        own.input_shapes.contains(&("total".to_string(), vec![64])),
        "{:?}",
        own.input_shapes
    );
}

#[test]
fn a_stage_with_stages_per_row_gets_them_computed_once_per_row() {
    let at = [("n", 32), ("m", 64)];
    let (checked, _) = atl_lang::check_source(SOFTMAX_ROWS);
    let program = checked.unwrap().program;
    let plan =
        atl_schedule::stages::plan(SOFTMAX_ROWS, &program, "softmax", &sizes(&at), 16, 2).unwrap();
    let atl_schedule::stages::Plan::Stages { stages, .. } = plan else {
        panic!("stages per row are not one nest")
    };
    let [atl_schedule::stages::Stage::Fixed { nest, variants }] = stages.as_slice() else {
        panic!("{stages:?}")
    };
    // Placed per row; then the sum's, then both reductions as 16 partial results.
    assert_eq!(variants.len(), 3, "{variants:?}");
    for (summary, steps) in variants {
        assert!(
            steps.contains(&"compute_at mx at i".to_string()),
            "{steps:?}"
        );
        assert!(
            steps.contains(&"compute_at s at i".to_string()),
            "{steps:?}"
        );
        assert_eq!(
            steps.last().map(String::as_str),
            Some("vectorize j"),
            "{summary}"
        );
        assert!(steps.contains(&"parallel i".to_string()), "{steps:?}");
        let candidate = atl_schedule::candidate::Candidate::written(summary, steps);
        let (checked, derived) = derive(SOFTMAX_ROWS, "softmax", &candidate.steps(nest));
        let cases: Vec<Vec<(&str, i64)>> = [(1, 16), (3, 32), (5, 48)]
            .iter()
            .map(|&(n, m)| vec![("n", n), ("m", m)])
            .collect();
        assert_values_within(&checked, "softmax", &derived, &cases, 1e-12);
    }
    // The row maximum's loop is named with its stage: both loops were written `k`.
    assert!(
        variants[2]
            .1
            .iter()
            .any(|s| s.starts_with("split mx.k by 16"))
    );
}

const CONV1D: &str = "size B, C, K, W, R
input x : [B, C, W]
input w : [K, C, R]
def conv = gen n < B, k < K, p < W: sum c < C, r < R: w[k, c, r] * [p + r < W] * x[n, c, p + r]
";

#[test]
fn a_bordered_input_is_also_copied_per_column_tile_where_each_window_serves_every_row_tile() {
    let at = [("B", 8), ("C", 64), ("K", 64), ("W", 1024), ("R", 3)];
    let all = candidates(CONV1D, "conv", &at, 1);
    let local: Vec<&Ranked> = all.iter().filter(|r| r.candidate.local_copy).collect();
    assert!(!local.is_empty(), "no candidate copies `x` per tile");
    for r in &local {
        let c = &r.candidate;
        // Only a bordered copy, with the columns' tile loop outside the rows' and no
        // loop outside the tiles that the window does not move with (`k`).
        assert_eq!(c.boundary.as_deref(), Some("x"), "{}", c.summary());
        assert!(c.tile.row.is_none() || c.tile.col_outer, "{}", c.summary());
        let outside: Vec<&Slot> = c.order.iter().take_while(|s| **s != Slot::Tiles).collect();
        assert_eq!(outside, [&Slot::Loop("n".into())], "{}", c.summary());
        // Its twin with the copy before the nest is a candidate too, estimated dearer.
        let twin = all
            .iter()
            .find(|o| {
                !o.candidate.local_copy
                    && o.candidate.tile == c.tile
                    && o.candidate.boundary == c.boundary
                    && o.candidate.order == c.order
            })
            .unwrap_or_else(|| panic!("no twin of {}", c.summary()));
        assert!(r.estimate < twin.estimate, "{}", c.summary());
    }
    // No local copy where the rows' tile loop is outside the columns' one.
    assert!(
        all.iter()
            .filter(|r| r.candidate.tile.row.is_some() && !r.candidate.tile.col_outer)
            .all(|r| !r.candidate.local_copy)
    );
    let best = local
        .iter()
        .find(|r| r.candidate.tile.row.is_some())
        .expect("a local copy under a 2-D tile");
    let nest = {
        let (checked, _) = atl_lang::check_source(CONV1D);
        analyze(&checked.unwrap().program, "conv", &sizes(&at)).unwrap()
    };
    let steps = best.candidate.steps(&nest);
    assert!(
        steps.iter().any(|s| s == "compute_at xb at pt"),
        "{steps:?}"
    );
    let (checked, derived) = derive(CONV1D, "conv", &steps);
    let cases: Vec<Vec<(&str, i64)>> = [(1, 1, 1, 1, 1), (2, 3, 7, 37, 3), (1, 2, 9, 70, 4)]
        .iter()
        .map(|&(b, c, k, w, r)| vec![("B", b), ("C", c), ("K", k), ("W", w), ("R", r)])
        .collect();
    assert_same_values(&checked, "conv", &derived, &cases);
}

const SCORES: &str = "size N, D
input Q : [N, D]
input K : [N, D]
def S = gen i < N, j < N: (sum d < D: Q[i, d] * K[j, d]) * 0.125
";

#[test]
fn attentions_scores_are_tiled_over_the_transposed_keys_first() {
    // `K[j, d]` with the vector lanes on `j`: each lane a load a row apart. On Zen 4
    // the tiles reading it so measured 7 to 10 times slower than the same tiles over
    // the transposed copy; the 2-D tiles of the model's top ten all read the copy.
    let all = candidates(SCORES, "S", &[("N", 512), ("D", 64)], 1);
    let tiles: Vec<&Ranked> = all
        .iter()
        .filter(|r| r.candidate.partial_sums.is_none() && r.candidate.tile.row.is_some())
        .take(10)
        .collect();
    assert_eq!(tiles.len(), 10);
    for r in tiles {
        assert_eq!(
            r.candidate.stage.as_deref(),
            Some("K"),
            "{}",
            r.candidate.summary()
        );
    }
}

#[test]
fn made_up_names_avoid_the_names_other_stages_schedules_took() {
    let at = [("M", 64), ("N", 64), ("K", 64)];
    let (checked, _) = atl_lang::check_source(MATMUL);
    let mut nest = analyze(&checked.unwrap().program, "mm", &sizes(&at)).unwrap();
    let best = &candidates(MATMUL, "mm", &at, 1)
        .into_iter()
        .find(|r| r.candidate.tile.row.is_some())
        .expect("a tile")
        .candidate;
    assert!(
        best.steps(&nest).iter().any(|s| s.contains(" it,")),
        "{:?}",
        best.steps(&nest)
    );
    // Another stage's schedule introduced `it` and `jt` (as search_stages records).
    nest.reserved.extend(["it".to_string(), "jt".to_string()]);
    let steps = best.steps(&nest);
    assert!(
        steps
            .iter()
            .all(|s| !s.contains(" it,") && !s.contains(" jt,")),
        "{steps:?}"
    );
    assert!(steps.iter().any(|s| s.contains("it2")), "{steps:?}");
}

#[test]
fn a_column_major_operand_is_modelled_in_storage_order_and_copied_row_major() {
    let at = [("M", 1024), ("N", 1024), ("K", 1024)];
    let nest = {
        let (checked, _) = atl_lang::check_source(COLUMN_MAJOR);
        analyze(&checked.unwrap().program, "mm", &sizes(&at)).unwrap()
    };
    assert_eq!(nest.layouts.get("A"), Some(&vec![1, 0]));
    let all = candidates(COLUMN_MAJOR, "mm", &at, 1);
    // Read in place, each `k` of the tile reads a new column of `A`, a page after the
    // last (4 KiB at M = 1024): every tile is cheaper on the row-major copy.
    let best = all
        .iter()
        .find(|r| r.candidate.partial_sums.is_none())
        .expect("a tile");
    assert_eq!(
        best.candidate.relaid.as_deref(),
        Some("A"),
        "{}",
        best.candidate.summary()
    );
    let twin = all
        .iter()
        .find(|r| {
            r.candidate.relaid.is_none()
                && r.candidate.tile == best.candidate.tile
                && r.candidate.pack == best.candidate.pack
        })
        .expect("the same tile reading A in place");
    assert!(
        best.estimate < twin.estimate,
        "{} {}",
        best.estimate,
        twin.estimate
    );
    // The same program with `A` row-major has no such candidate.
    assert!(
        candidates(MATMUL, "mm", &at, 1)
            .iter()
            .all(|r| r.candidate.relaid.is_none())
    );
    let steps = best.candidate.steps(&nest);
    assert_eq!(steps[0], "stage A into Ar order 0, 1", "{steps:?}");
    let (checked, derived) = derive(COLUMN_MAJOR, "mm", &steps);
    let cases: Vec<Vec<(&str, i64)>> = [(1, 1, 1), (7, 19, 5), (13, 33, 2)]
        .iter()
        .map(|&(m, n, k)| vec![("M", m), ("N", n), ("K", k)])
        .collect();
    assert_same_values(&checked, "mm", &derived, &cases);
}
