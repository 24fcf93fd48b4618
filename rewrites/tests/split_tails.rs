//! `split … tail separate`: the full tiles apart from the partial last one, the steady
//! state without the tail guard — a checked derivation equal to its specification at
//! every size (including sizes below the factor, where there is no full tile).

mod common;

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_expr};
use atl_lang::ir::{Expr, ExprKind};

const PROGRAM: &str = "size M, N
input A : [M, N]
def scale = gen i < M, j < N: A[i, j] * 2
derive sep from scale {
  split i by 8 into io, ii tail separate
}
derive sep2 from scale {
  split i by 8 into io, ii tail separate
  split j by 4 into jo, ji tail separate
}
";

fn has_guard(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |n| found |= matches!(n.kind, ExprKind::Guard { .. }));
    found
}

/// The first operand of the first `++` under `e`.
fn full_tiles(e: &Expr) -> &Expr {
    let mut found = None;
    let mut stack = vec![e];
    while let Some(n) = stack.pop() {
        if let ExprKind::Concat(a, _) = &n.kind {
            found = Some(&**a);
            break;
        }
        stack.extend(n.children().into_iter().rev());
    }
    found.expect("a concatenation of the full tiles and the last one")
}

#[test]
fn the_full_tiles_carry_no_guard_and_the_values_are_the_specifications() {
    let (checked, derivations, diags) = common::derive(PROGRAM);
    assert!(diags.is_empty(), "{diags:?}");
    let by_name: BTreeMap<&str, &Expr> = derivations
        .iter()
        .map(|d| (d.name.as_str(), &d.result))
        .collect();
    assert!(!has_guard(full_tiles(by_name["sep"])));
    // In sep2 the full row tiles contain the column split, itself separated.
    assert!(!has_guard(full_tiles(full_tiles(by_name["sep2"]))));
    assert!(has_guard(by_name["sep"]), "the last tile keeps its guard");
    let spec = &checked.program.def("scale").unwrap().body;
    let options = EvalOptions::default();
    for (m, n) in [(1, 1), (7, 3), (8, 4), (17, 9), (16, 13)] {
        let sizes: BTreeMap<String, i64> = [("M".to_string(), m), ("N".to_string(), n)]
            .into_iter()
            .collect();
        let inputs: BTreeMap<String, Tensor> = [(
            "A".to_string(),
            Tensor::random(vec![m as usize, n as usize], 7),
        )]
        .into_iter()
        .collect();
        let want = eval_expr(&checked.program, spec, &sizes, &inputs, &options).unwrap();
        for name in ["sep", "sep2"] {
            let got =
                eval_expr(&checked.program, by_name[name], &sizes, &inputs, &options).unwrap();
            assert_eq!(got, want, "{name} at M={m}, N={n}");
        }
    }
}

#[test]
fn pack_and_partition_give_the_fast_matmul_with_directives_only() {
    let source = "size M, N, K
input A : [M, K]
input B : [K, N]
def matmul = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]
derive fast from matmul {
  pack B by 16 into Bp
  tile i, j by 6, 16 into io, jt, ii, jl
  simpl
  reorder io, jt, k, ii, jl
  partition io
  partition jt
}
derive not_a_tile from matmul {
  partition i
}
";
    let (checked, derivations, diags) = common::derive(source);
    // `partition` of a loop that no split made and that has no boundary guard is
    // refused, naming the loop.
    let refused = diags.iter().find(|d| d.code == "E0820").expect("E0820");
    assert!(
        refused
            .message
            .contains("`partition i`: no guard in the loop `i` bounds `i`"),
        "{refused:?}"
    );
    let fast = &derivations
        .iter()
        .find(|d| d.name == "fast")
        .unwrap()
        .result;
    // A let of the packed panels at the root, then the full tiles without a guard.
    let ExprKind::Let { var, body, .. } = &fast.kind else {
        panic!("{fast:?}")
    };
    assert_eq!(var, "Bp");
    assert!(!has_guard(full_tiles(full_tiles(body))));
    common::assert_matmul_values(
        &checked,
        "matmul",
        fast,
        &[(1, 1, 1), (6, 16, 2), (13, 35, 3), (7, 17, 5)],
    );
}

#[test]
fn a_batched_operand_is_packed_one_batch_at_a_time() {
    let source = "size NB, M, N, K
input A : [NB, M, K]
input B : [NB, K, N]
def bmm = gen b < NB, i < M, j < N: sum k < K: A[b, i, k] * B[b, k, j]
derive packed from bmm {
  pack B by 16 into Bp
  tile i, j by 8, 16 into it, jt, ir, jr
  simpl
  reorder b, it, jt, k, ir, jr
  partition it
  partition jt
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let packed = &derivations[0].result;
    // The copy is computed inside the batch loop: `gen b: let Bp = … in …`.
    let ExprKind::Gen { var, body, .. } = &packed.kind else {
        panic!("{packed:?}")
    };
    assert_eq!(var, "b");
    assert!(
        matches!(&body.kind, ExprKind::Let { var, .. } if var == "Bp"),
        "{body:?}"
    );
    let spec = &checked.program.def("bmm").unwrap().body;
    let options = EvalOptions::default();
    for (nb, m, n, k) in [(1, 1, 1, 1), (2, 8, 16, 3), (3, 9, 21, 4), (2, 17, 35, 2)] {
        let sizes: BTreeMap<String, i64> = [("NB", nb), ("M", m), ("N", n), ("K", k)]
            .into_iter()
            .map(|(s, v)| (s.to_string(), v))
            .collect();
        let inputs: BTreeMap<String, Tensor> = [
            (
                "A".to_string(),
                Tensor::random(vec![nb as usize, m as usize, k as usize], 3),
            ),
            (
                "B".to_string(),
                Tensor::random(vec![nb as usize, k as usize, n as usize], 4),
            ),
        ]
        .into_iter()
        .collect();
        let want = eval_expr(&checked.program, spec, &sizes, &inputs, &options).unwrap();
        let got = eval_expr(&checked.program, packed, &sizes, &inputs, &options).unwrap();
        assert_eq!(got, want, "at NB={nb}, M={m}, N={n}, K={k}");
    }
}
