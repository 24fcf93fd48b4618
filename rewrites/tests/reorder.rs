//! `reorder` of any number of nested loops: the loops end in the order given,
//! outermost first, by exchanges of neighbours that are each a checked step, and the
//! result computes the same tensor as the specification.

mod common;

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_expr};
use atl_lang::ir::{Expr, ExprKind};

const MATMUL: &str = "size M, N, K
input A : [M, K]
input B : [K, N]
def matmul = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]
derive kij from matmul {
  reorder k, i, j
}
derive jki from matmul {
  reorder j, k, i
}
derive same from matmul {
  reorder i, j, k
}
";

/// The binder variables of the loops from the root down the first child.
fn loop_order(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = e;
    loop {
        match &cur.kind {
            ExprKind::Gen { var, body, .. } | ExprKind::Sum { var, body, .. } => {
                out.push(var.clone());
                cur = body;
            }
            _ => match cur.children().first() {
                Some(c) => cur = c,
                None => return out,
            },
        }
    }
}

#[test]
fn three_loops_are_put_in_the_order_given() {
    let (checked, derivations, diags) = common::derive(MATMUL);
    assert!(diags.is_empty(), "{diags:?}");
    let by_name: BTreeMap<&str, &Expr> = derivations
        .iter()
        .map(|d| (d.name.as_str(), &d.result))
        .collect();
    assert_eq!(loop_order(by_name["kij"]), ["k", "i", "j"]);
    assert_eq!(loop_order(by_name["jki"]), ["j", "k", "i"]);
    assert_eq!(loop_order(by_name["same"]), ["i", "j", "k"]);
    // The same values as the specification (the checker proved it; the interpreter
    // agrees on an instance).
    let sizes: BTreeMap<String, i64> = [("M", 3), ("N", 4), ("K", 5)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let inputs: BTreeMap<String, Tensor> = [
        ("A".to_string(), Tensor::random(vec![3, 5], 1)),
        ("B".to_string(), Tensor::random(vec![5, 4], 2)),
    ]
    .into_iter()
    .collect();
    let options = EvalOptions::default();
    let spec = &checked.program.def("matmul").unwrap().body;
    let want = eval_expr(&checked.program, spec, &sizes, &inputs, &options).unwrap();
    for name in ["kij", "jki"] {
        let got = eval_expr(&checked.program, by_name[name], &sizes, &inputs, &options).unwrap();
        assert_eq!(got.shape, want.shape);
        for (g, w) in got.data.iter().zip(&want.data) {
            assert!(
                (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                "{name}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn a_loop_named_twice_or_not_at_all_is_refused_with_the_list_of_loops() {
    for (steps, code, wanted) in [
        ("reorder k, i, k", "E0820", "names the loop `k` twice"),
        ("reorder k, i, jj", "E0821", "did you mean `j`?"),
    ] {
        let source = format!("{MATMUL}derive bad from matmul {{\n  {steps}\n}}\n");
        let (_, _, diags) = common::derive(&source);
        let d = diags
            .iter()
            .find(|d| d.code == code)
            .unwrap_or_else(|| panic!("{steps}: no {code} in {diags:?}"));
        let text = format!("{} {:?} {:?}", d.message, d.help, d.notes);
        assert!(text.contains(wanted), "{steps}: {text}");
        if code == "E0821" {
            assert!(
                d.notes
                    .iter()
                    .any(|n| n.contains("gen i < M") && n.contains("sum k < K")),
                "{:?}",
                d.notes
            );
        }
    }
}

#[test]
fn tile_into_gives_halides_order() {
    let source = format!(
        "{MATMUL}derive halide from matmul {{\n  tile i, j by 8, 4 into io, jo, ii, ji\n}}\n"
    );
    let (checked, derivations, diags) = common::derive(&source);
    assert!(diags.is_empty(), "{diags:?}");
    let halide = &derivations
        .iter()
        .find(|d| d.name == "halide")
        .unwrap()
        .result;
    assert_eq!(loop_order(halide), ["io", "jo", "ii", "ji", "k"]);
    common::assert_matmul_values(
        &checked,
        "matmul",
        halide,
        &[(1, 1, 1), (9, 5, 3), (16, 8, 2), (13, 11, 4)],
    );
}

/// Halide's `split; split; reorder` as written: the loop order is the one asked for
/// although each split left a `trunc_r(flatten(…))` between its loops and the loops
/// inside (the exchange goes across it), the values are the specification's bit for
/// bit, at sizes that are multiples of the factors, that are not, and smaller ones (as
/// `tile … into`'s).
#[test]
fn split_split_reorder_goes_across_the_splits() {
    let source = "size M, N, K
input A : [M, K]
input B : [K, N]
def matmul = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]
derive halide from matmul {
  split i by 4 into io, ii
  split j by 8 into jo, ji
  reorder io, jo, ii, ji
}
derive tiled from matmul {
  tile i, j by 4, 8 into io, jo, ii, ji
}
derive three from matmul {
  split i by 4 into io, ii
  split j by 8 into jo, ji
  reorder io, jo, k, ii, ji
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let by_name: BTreeMap<&str, &Expr> = derivations
        .iter()
        .map(|d| (d.name.as_str(), &d.result))
        .collect();
    assert_eq!(loop_order(by_name["halide"]), ["io", "jo", "ii", "ji", "k"]);
    assert_eq!(loop_order(by_name["three"]), ["io", "jo", "k", "ii", "ji"]);
    let rules: Vec<&str> = derivations[0]
        .steps
        .iter()
        .filter_map(|s| s.rule.as_deref())
        .collect();
    for r in [
        "gen_trunc_r",
        "gen_flatten",
        "gen_rename",
        "transpose_transpose",
    ] {
        assert!(rules.contains(&r), "{r} not in {rules:?}");
    }
    let cases = [(8, 16, 3), (13, 21, 2), (3, 5, 1), (1, 1, 1), (4, 9, 4)];
    for name in ["halide", "tiled", "three"] {
        common::assert_matmul_values(&checked, "matmul", by_name[name], &cases);
    }
}

/// A rows-by-columns definition split on its rows, and the reorders that move the
/// column loop out of the split (`x, yo, yi`, and `x, yo` where `yi` follows), or
/// between the split's loops (`yo, x, yi`).
const ROWS: &str = "size n, m
input A : [n, m]
def s = gen y < n, x < m: A[y, x] * 2
derive outside from s {
  split y by 8 into yo, yi
  reorder x, yo, yi
}
derive outside_of_first from s {
  split y by 8 into yo, yi
  reorder x, yo
}
derive between from s {
  split y by 8 into yo, yi
  reorder yo, x, yi
}
";

/// Evaluates `result` and definition `spec` of `checked` with the sizes and random
/// inputs of the given shapes; panics unless they are equal bit for bit.
fn assert_same_values(
    checked: &atl_lang::Checked,
    spec: &str,
    result: &Expr,
    sizes: &[(&str, i64)],
    inputs: &[(&str, Vec<usize>)],
) {
    let sizes: BTreeMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let inputs: BTreeMap<String, Tensor> = inputs
        .iter()
        .enumerate()
        .map(|(k, (name, shape))| {
            (
                name.to_string(),
                Tensor::random(shape.clone(), k as u64 + 5),
            )
        })
        .collect();
    let options = EvalOptions::default();
    let spec = &checked.program.def(spec).unwrap().body;
    let want = eval_expr(&checked.program, spec, &sizes, &inputs, &options).unwrap();
    let got = eval_expr(&checked.program, result, &sizes, &inputs, &options).unwrap();
    assert_eq!(got.shape, want.shape, "{sizes:?}");
    let bits = |t: &Tensor| t.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want), "{sizes:?}");
}

/// The inverse of `split_split_reorder_goes_across_the_splits`: a loop inside a split's
/// two loops moves out of both (`flatten_gen_out`, `trunc_r_transpose_gen`), keeps its
/// name, and the values are the specification's bit for bit whether or not `n` is a
/// multiple of the factor.
#[test]
fn a_loop_inside_a_split_moves_out_of_it() {
    let (checked, derivations, diags) = common::derive(ROWS);
    assert!(diags.is_empty(), "{diags:?}");
    let by_name: BTreeMap<&str, &Expr> = derivations
        .iter()
        .map(|d| (d.name.as_str(), &d.result))
        .collect();
    assert_eq!(loop_order(by_name["outside"]), ["x", "yo", "yi"]);
    assert_eq!(loop_order(by_name["outside_of_first"]), ["x", "yo", "yi"]);
    assert_eq!(loop_order(by_name["between"]), ["yo", "x", "yi"]);
    // The loop left the split: its body is the `trunc_r(flatten(…))`.
    let ExprKind::Transpose(moved) = &by_name["outside"].kind else {
        panic!("{:?}", by_name["outside"].kind)
    };
    let ExprKind::Gen { var, body, .. } = &moved.kind else {
        panic!("{:?}", moved.kind)
    };
    assert_eq!(var, "x");
    assert!(
        matches!(body.kind, ExprKind::Amount { .. }),
        "{:?}",
        body.kind
    );
    let rules: Vec<&str> = derivations[0]
        .steps
        .iter()
        .filter_map(|s| s.rule.as_deref())
        .collect();
    for r in ["flatten_gen_out", "trunc_r_transpose_gen", "gen_rename"] {
        assert!(rules.contains(&r), "{r} not in {rules:?}");
    }
    for name in ["outside", "outside_of_first", "between"] {
        for n in [1, 8, 13] {
            for m in [1, 5] {
                assert_same_values(
                    &checked,
                    "s",
                    by_name[name],
                    &[("n", n), ("m", m)],
                    &[("A", vec![n as usize, m as usize])],
                );
            }
        }
    }
}

/// Three loops: the innermost leaves the split of the middle one (and stays inside the
/// outer loop), or the outer one goes into it (the other direction).
#[test]
fn three_loops_a_split_in_the_middle() {
    let source = "size p, n, m
input A : [p, n, m]
def s = gen z < p, y < n, x < m: A[z, y, x] + A[z, y, x] * 3
derive out from s {
  split y by 8 into yo, yi
  reorder x, yo, yi
}
derive all from s {
  split y by 8 into yo, yi
  reorder z, x, yo, yi
}
derive into from s {
  split y by 8 into yo, yi
  reorder yo, z, yi
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let by_name: BTreeMap<&str, &Expr> = derivations
        .iter()
        .map(|d| (d.name.as_str(), &d.result))
        .collect();
    assert_eq!(loop_order(by_name["out"]), ["z", "x", "yo", "yi"]);
    assert_eq!(loop_order(by_name["all"]), ["z", "x", "yo", "yi"]);
    assert_eq!(loop_order(by_name["into"]), ["yo", "z", "yi", "x"]);
    for name in ["out", "all", "into"] {
        for (p, n, m) in [(1, 1, 1), (3, 8, 5), (2, 13, 1), (2, 13, 5)] {
            assert_same_values(
                &checked,
                "s",
                by_name[name],
                &[("p", p), ("n", n), ("m", m)],
                &[("A", vec![p as usize, n as usize, m as usize])],
            );
        }
    }
}

/// Orders this version cannot reach across a split are refused in the user's names
/// (the loop that left the split sits under a `transpose`, which no exchange crosses).
#[test]
fn a_reorder_out_of_a_split_that_has_no_exchange_is_refused_in_the_users_names() {
    for (def, steps, names) in [
        (
            "gen z < p, y < n, x < m: A[z, y, x]",
            "reorder x, z, yo, yi",
            ["`z`", "`x`"],
        ),
        (
            "gen z < p, y < n, x < m: A[z, y, x]",
            "reorder x, yo, z, yi",
            ["`z`", "`x`"],
        ),
    ] {
        let source = format!(
            "size p, n, m\ninput A : [p, n, m]\ndef s = {def}\nderive bad from s {{\n  split y by 8 into yo, yi\n  {steps}\n}}\n"
        );
        let (_, _, diags) = common::derive(&source);
        let d = diags
            .iter()
            .find(|d| d.code == "E0824")
            .unwrap_or_else(|| panic!("{steps}: no E0824 in {diags:?}"));
        for name in names {
            assert!(d.message.contains(name), "{steps}: {}", d.message);
        }
        let text = format!("{} {:?} {:?}", d.message, d.help, d.notes);
        assert!(!text.contains('?'), "{steps}: a metavariable in {text}");
    }
}

/// Every order of a split row loop's two loops and the column loop is reachable, each
/// with the values of the specification.
#[test]
fn every_order_of_a_split_and_the_loop_inside_it() {
    let orders = [
        ["x", "yo", "yi"],
        ["x", "yi", "yo"],
        ["yo", "x", "yi"],
        ["yo", "yi", "x"],
        ["yi", "x", "yo"],
        ["yi", "yo", "x"],
    ];
    let mut source =
        "size n, m\ninput A : [n, m]\ndef s = gen y < n, x < m: A[y, x] * 2\n".to_string();
    for (k, order) in orders.iter().enumerate() {
        source.push_str(&format!(
            "derive d{k} from s {{\n  split y by 8 into yo, yi\n  reorder {}\n}}\n",
            order.join(", ")
        ));
    }
    let (checked, derivations, diags) = common::derive(&source);
    assert!(diags.is_empty(), "{diags:?}");
    for (k, order) in orders.iter().enumerate() {
        let d = derivations
            .iter()
            .find(|d| d.name == format!("d{k}"))
            .unwrap();
        assert_eq!(loop_order(&d.result), order, "reorder {order:?}");
        for (n, m) in [(1, 1), (8, 5), (13, 5), (13, 1)] {
            assert_same_values(
                &checked,
                "s",
                &d.result,
                &[("n", n), ("m", m)],
                &[("A", vec![n as usize, m as usize])],
            );
        }
    }
}

/// `reorder` puts the loops in the order given: two loops already in that order stay
/// (it used to exchange any two loops named, so `reorder i, j` on `gen i: gen j` put
/// `j` outside), and the same `reorder` twice is the same as once.
#[test]
fn two_loops_already_in_order_stay() {
    let source = "size n, m
input A : [n, m]
def s = gen i < n, j < m: A[i, j]
derive same from s {
  reorder i, j
}
derive once from s {
  reorder j, i
}
derive twice from s {
  reorder j, i
  reorder j, i
}
";
    let (_, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let get = |n: &str| derivations.iter().find(|d| d.name == n).expect(n);
    assert!(get("same").steps.is_empty(), "{:?}", get("same").steps);
    assert_eq!(get("same").result, get("same").initial);
    assert_eq!(loop_order(&get("once").result), ["j", "i"]);
    assert_eq!(get("twice").result, get("once").result);
}
