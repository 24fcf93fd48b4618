//! `compute_at` of a scalar stage (a `let` of rank 0): moved into the loop, it is
//! recomputed per iteration; there is no window to compute (it used to be refused with
//! E0829).

mod common;

use atl_lang::ir::ExprKind;

#[test]
fn a_scalar_stage_is_computed_at_a_loop() {
    let (_, derivations, diags) = common::derive(
        "size n
input f : [n]
def d = let s = sum k < n: f[k] in gen i < n: f[i] * s
derive at_i from d {
  compute_at s at i
}
",
    );
    assert!(diags.is_empty(), "{diags:?}");
    let result = &derivations[0].result;
    // gen i < n: let s = … in …
    let ExprKind::Gen { var, body, .. } = &result.kind else {
        panic!("{result:?}");
    };
    assert_eq!(var, "i");
    assert!(matches!(&body.kind, ExprKind::Let { var, .. } if var == "s"));
}

/// A stage inside a quotient, a difference or a negation is moved out of them (the
/// `let_lift_div/sub/neg` rules) to the loop named, and the result computes the same
/// values, bit for bit (no reassociation), at several sizes (ones included).
#[test]
fn a_stage_moves_across_division_subtraction_and_negation() {
    use atl_lang::interp::{EvalOptions, Tensor, eval_def, input_shapes};
    use std::collections::BTreeMap;
    let source = "size n, m
input a : [n, m]
def normalized =
  gen i < n, j < m: -(a[i, j] - 1) / (1 - -(let s = sum k < m: a[i, k] * a[i, k] in s))
derive staged from normalized {
  compute_at s at i
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let result = &derivations[0].result;
    let ExprKind::Gen { var, body, .. } = &result.kind else {
        panic!("{result:?}");
    };
    assert_eq!(var, "i");
    assert!(
        matches!(&body.kind, ExprKind::Let { var, .. } if var == "s"),
        "{body:?}"
    );
    let rules: Vec<&str> = derivations[0]
        .steps
        .iter()
        .filter_map(|s| s.rule.as_deref())
        .collect();
    for r in [
        "let_lift_neg",
        "let_lift_sub_r",
        "let_lift_div_r",
        "let_lift_gen",
    ] {
        assert!(rules.contains(&r), "{r} not in {rules:?}");
    }
    let (program, _) = atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    for (n, m) in [(1, 1), (1, 3), (3, 1), (4, 5)] {
        let sizes: BTreeMap<String, i64> = [("n".to_string(), n), ("m".to_string(), m)].into();
        let options = EvalOptions::default();
        let inputs: BTreeMap<String, Tensor> = input_shapes(&program, &sizes, &options)
            .expect("shapes")
            .into_iter()
            .map(|(name, s)| (name, Tensor::random(s, 11)))
            .collect();
        let a = eval_def(&program, "normalized", &sizes, &inputs, &options).expect("source");
        let b = eval_def(&program, "staged", &sizes, &inputs, &options).expect("derived");
        assert_eq!(a.shape, b.shape);
        assert!(
            a.data
                .iter()
                .zip(&b.data)
                .all(|(x, y)| x.to_bits() == y.to_bits())
        );
    }
}
