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
