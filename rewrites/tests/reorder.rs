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
