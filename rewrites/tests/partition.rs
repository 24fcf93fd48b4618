//! `partition x` on a loop with boundary guards (Halide's loop partitioning): the loop
//! is split into a prologue, a steady state in which every guard linear in `x` provably
//! holds (so `simpl_guard` removes it) and an epilogue, at split points clamped so that
//! the derivation holds for every size. Checked against the specification's values at
//! sizes where the prologue, the steady state or the epilogue are empty or overlap.

mod common;

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_expr};
use atl_lang::ir::{Expr, ExprKind};

const PROGRAM: &str = "size H, W
input A : [H, W]
def s = gen y < H, x < W:
  [2 <= x] * A[y, x - 2] + A[y, x] + [x + 3 < W && 1 <= y] * A[y - 1, x + 3]
  + [x + 1 < W] * A[y, x + 1]
derive px from s {
  partition x
}
derive py from s {
  partition y
}
derive both from s {
  partition y
  partition x1
}
derive none from s {
  partition x
  partition x1
}
";

/// Whether a guard under `e` mentions the index variable `v`.
fn guards_on(e: &Expr, v: &str) -> bool {
    let mut found = false;
    e.walk(&mut |n| {
        if let ExprKind::Guard { pred, .. } = &n.kind {
            found |= pred.mentions(v);
        }
    });
    found
}

/// The parts of `a ++ b`.
fn parts(e: &Expr) -> (&Expr, &Expr) {
    match &e.kind {
        ExprKind::Concat(a, b) => (a, b),
        _ => panic!("not a concatenation: {e:?}"),
    }
}

/// The body of `gen v: body`, and `v`.
fn gen_body(e: &Expr) -> (&str, &Expr) {
    match &e.kind {
        ExprKind::Gen { var, body, .. } => (var, body),
        _ => panic!("not a gen: {e:?}"),
    }
}

#[test]
fn the_steady_state_has_no_boundary_guard_and_the_values_are_the_specifications() {
    let (checked, derivations, diags) = common::derive(PROGRAM);
    let by_name: BTreeMap<&str, &Expr> = derivations
        .iter()
        .map(|d| (d.name.as_str(), &d.result))
        .collect();
    // `partition x` inside `gen y`: prologue ++ (steady ++ epilogue).
    let (_, row) = gen_body(by_name["px"]);
    let (prologue, rest) = parts(row);
    let (steady, epilogue) = parts(rest);
    let (x, steady_body) = gen_body(steady);
    assert!(!guards_on(steady_body, x), "{steady_body:?}");
    // The guard on `y` of the conjunction stays; those on x stay at the borders.
    assert!(guards_on(steady_body, "y"));
    assert!(guards_on(prologue, gen_body(prologue).0));
    assert!(guards_on(epilogue, gen_body(epilogue).0));
    // `partition y`: only a lower bound (1 <= y), so no epilogue.
    let (_, steady_rows) = parts(by_name["py"]);
    let (y, rows_body) = gen_body(steady_rows);
    assert!(!guards_on(rows_body, y));
    // Both: the rows' steady state, then its columns.
    let (_, rows) = parts(by_name["both"]);
    let (y, row) = gen_body(rows);
    let (_, rest) = parts(row);
    let (x, body) = gen_body(parts(rest).0);
    assert!(!guards_on(body, y) && !guards_on(body, x), "{body:?}");
    assert!(
        !by_name.contains_key("none"),
        "partition of a loop without guards on it is refused"
    );
    let refused = diags.iter().find(|d| d.code == "E0820").expect("E0820");
    assert!(
        refused
            .message
            .contains("`partition x1`: no guard in the loop `x1` bounds `x1`"),
        "{refused:?}"
    );

    let spec = &checked.program.def("s").unwrap().body;
    let options = EvalOptions::default();
    for (h, w) in [
        (1, 1),
        (1, 2),
        (2, 1),
        (1, 5),
        (3, 4),
        (4, 5),
        (5, 6),
        (6, 11),
    ] {
        let sizes: BTreeMap<String, i64> = [("H".to_string(), h), ("W".to_string(), w)]
            .into_iter()
            .collect();
        let inputs: BTreeMap<String, Tensor> = [(
            "A".to_string(),
            Tensor::random(vec![h as usize, w as usize], 3),
        )]
        .into_iter()
        .collect();
        let want = eval_expr(&checked.program, spec, &sizes, &inputs, &options).unwrap();
        for name in ["px", "py", "both"] {
            let got =
                eval_expr(&checked.program, by_name[name], &sizes, &inputs, &options).unwrap();
            assert_eq!(got, want, "{name} at H={h}, W={w}");
        }
    }
}

#[test]
fn partition_refuses_loops_whose_guards_already_hold_or_are_not_bounds() {
    let source = "size W
input A : [W]
def s = gen x < W: [x < W] * A[x]
def t = gen x < W: [x * x < W] * A[x]
derive squared from t {
  partition x
}
def tri = gen y < W, x < W: [x < y] * A[x]
derive held from s {
  partition x
}
derive triangle from tri {
  partition x
}
";
    let (_, derivations, diags) = common::derive(source);
    assert!(derivations.is_empty(), "{derivations:?}");
    let messages: Vec<String> = diags
        .iter()
        .map(|d| format!("{} {} {:?}", d.code, d.message, d.notes))
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("E0820") && m.contains("already hold in the whole loop")),
        "{messages:?}"
    );
    // A guard not linear in `x` is not a bound this directive computes.
    assert!(
        messages
            .iter()
            .any(|m| m.contains("E0820") && m.contains("x * x < W")),
        "{messages:?}"
    );
    // Nor is a bound depending on another loop's variable (the parts' extents would
    // vary with `y`).
    assert!(
        messages
            .iter()
            .any(|m| m.contains("E0820") && m.contains(": x < y")),
        "{messages:?}"
    );
}

/// The blur's `fast` (directives only) and `fast_rules` (rule level) compute the
/// specification's values, at sizes where the interior is empty (1 x 1, 1 x W, H x 1,
/// 2 x 2) and where it is not.
#[test]
fn the_blurs_directive_and_rule_level_fast_schedules_agree_with_the_specification() {
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/blur/blur.atl"),
    )
    .expect("readable");
    let (checked, derivations, diags) = common::derive(&source);
    assert!(diags.is_empty(), "{diags:?}");
    let get = |n: &str| {
        &derivations
            .iter()
            .find(|d| d.name == n)
            .unwrap_or_else(|| panic!("{n}"))
            .result
    };
    let spec = &checked.program.def("blur").unwrap().body;
    let options = EvalOptions::default();
    for (h, w) in [(1, 1), (1, 6), (6, 1), (2, 2), (3, 3), (5, 8), (13, 7)] {
        let sizes: BTreeMap<String, i64> = [("H".to_string(), h), ("W".to_string(), w)]
            .into_iter()
            .collect();
        let inputs: BTreeMap<String, Tensor> = [(
            "img".to_string(),
            Tensor::random(vec![h as usize, w as usize], 11),
        )]
        .into_iter()
        .collect();
        let want = eval_expr(&checked.program, spec, &sizes, &inputs, &options).unwrap();
        for name in ["fast", "fast_rules"] {
            let got = eval_expr(&checked.program, get(name), &sizes, &inputs, &options).unwrap();
            assert_eq!(got, want, "{name} at H={h}, W={w}");
        }
    }
}

/// A tiled 3 x 3 stencil (the depthwise convolution's shape): the guards mention the
/// tile loops with coefficient 2 and 4 and the loops inside them (`2 * yt + yr + ry - 1`),
/// whose ranges are constants. After the tails are split off, `partition xt` and
/// `partition yt` find the tiles where every guard holds for every inner iteration,
/// and the interior tiles run without any guard. The values are the specification's at
/// sizes where the interior is empty and where it is not.
#[test]
fn a_tiled_stencils_interior_tiles_have_no_guard() {
    let source = "size H, W
input A : [H, W]
input w : [3, 3]
def s = gen y < H, x < W: sum ry < 3, rx < 3:
  w[ry, rx] * [0 <= y + ry - 1 && y + ry - 1 < H && 0 <= x + rx - 1 && x + rx - 1 < W] * A[y + ry - 1, x + rx - 1]
derive tiled from s {
  tile y, x by 2, 4 into yt, xt, yr, xr
  simpl
  reorder yt, xt, ry, rx, yr, xr
  partition yt
  partition xt
  partition xt
  partition yt
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let tiled = &derivations[0].result;
    // Some tile (a `sum ry` with everything inside it) has no guard left.
    let mut guard_free_tiles = 0;
    let mut tiles = 0;
    tiled.walk(&mut |n| {
        if let ExprKind::Sum { var, .. } = &n.kind
            && var.starts_with("ry")
        {
            tiles += 1;
            let mut guards = 0;
            n.walk(&mut |m| guards += usize::from(matches!(m.kind, ExprKind::Guard { .. })));
            guard_free_tiles += usize::from(guards == 0);
        }
    });
    assert_eq!(
        guard_free_tiles, 1,
        "one interior copy of the tile, of {tiles}"
    );
    assert!(
        tiles >= 5,
        "the border tiles keep their guards: {tiles} copies"
    );

    let spec = &checked.program.def("s").unwrap().body;
    let options = EvalOptions::default();
    for (h, w) in [
        (1, 1),
        (1, 9),
        (2, 4),
        (3, 5),
        (4, 8),
        (5, 9),
        (7, 13),
        (8, 16),
    ] {
        let sizes: BTreeMap<String, i64> = [("H".to_string(), h), ("W".to_string(), w)]
            .into_iter()
            .collect();
        let inputs: BTreeMap<String, Tensor> = [
            (
                "A".to_string(),
                Tensor::random(vec![h as usize, w as usize], 5),
            ),
            ("w".to_string(), Tensor::random(vec![3, 3], 6)),
        ]
        .into_iter()
        .collect();
        let want = eval_expr(&checked.program, spec, &sizes, &inputs, &options).unwrap();
        let got = eval_expr(&checked.program, tiled, &sizes, &inputs, &options).unwrap();
        assert_eq!(got, want, "at H={h}, W={w}");
    }
}
