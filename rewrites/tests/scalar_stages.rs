//! `compute_at` of a scalar stage (a `let` of rank 0): moved into the loop, it is
//! recomputed per iteration; there is no window to compute (it used to be refused with
//! E0829). And stages moved across the scalar operators: `-`, `/`, negation, and every
//! argument of every scalar function (it used to be refused with E0827).

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
    let rules = common::rules_applied(&derivations[0]);
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
            .map(|(name, s)| {
                (
                    name.clone(),
                    atl_lang::interp::random_input_named(&program, &name, s, &sizes, 11),
                )
            })
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

/// Evaluates definitions `spec` and `derived` of `program` at each `(n, m)` of `sizes`
/// (random inputs) and asserts they are equal bit for bit: the let-lifting rules move
/// a computation without changing its operations or their order.
fn assert_same_bits(
    program: &atl_lang::ir::Program,
    spec: &str,
    derived: &str,
    sizes: &[(i64, i64)],
    what: &str,
) {
    use atl_lang::interp::{EvalOptions, Tensor, eval_def, input_shapes};
    use std::collections::BTreeMap;
    for &(n, m) in sizes {
        let sizes: BTreeMap<String, i64> = [("n".to_string(), n), ("m".to_string(), m)]
            .into_iter()
            .filter(|(name, _)| program.sizes.iter().any(|s| s.name == *name))
            .collect();
        let options = EvalOptions::default();
        let inputs: BTreeMap<String, Tensor> = input_shapes(program, &sizes, &options)
            .expect("shapes")
            .into_iter()
            .map(|(name, s)| {
                (
                    name.clone(),
                    atl_lang::interp::random_input_named(program, &name, s, &sizes, 5 + n as u64),
                )
            })
            .collect();
        let a = eval_def(program, spec, &sizes, &inputs, &options).expect("source");
        let b = eval_def(program, derived, &sizes, &inputs, &options).expect("derived");
        assert_eq!(a.shape, b.shape, "{what}");
        assert!(
            a.data
                .iter()
                .zip(&b.data)
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "{what} at n={n}, m={m}: {:?} / {:?}",
            a.data,
            b.data
        );
    }
}

/// For every scalar function (each comparison of `select` included) and each of its
/// arguments: a stage in that argument is moved to the loop named, with the lifting
/// rule of that function and argument, and the result computes the same values.
#[test]
fn a_stage_moves_out_of_every_argument_of_every_scalar_function() {
    use atl_lang::functions::ScalarFn;
    let stage = "(let s = sum k < m: a[i, k] * a[i, k] in s)";
    for func in ScalarFn::all() {
        for position in 0..func.arity() {
            let args: Vec<String> = (0..func.arity())
                .map(|p| {
                    if p == position {
                        stage.to_string()
                    } else {
                        format!("(a[i, j] + {p})")
                    }
                })
                .collect();
            let call = match func {
                ScalarFn::Select(op) => format!(
                    "select({} {} {}, {}, {})",
                    args[0],
                    op.symbol(),
                    args[1],
                    args[2],
                    args[3]
                ),
                f => format!("{}({})", f.name(), args.join(", ")),
            };
            let source = format!(
                "size n, m
input a : [n, m]
def spec = gen i < n, j < m: {call}
derive staged from spec {{
  compute_at s at i
}}
"
            );
            let (checked, derivations, diags) = common::derive(&source);
            assert!(diags.is_empty(), "{call}: {diags:?}");
            let result = &derivations[0].result;
            let ExprKind::Gen { var, body, .. } = &result.kind else {
                panic!("{call}: {result:?}");
            };
            assert_eq!(var, "i", "{call}");
            assert!(
                matches!(&body.kind, ExprKind::Let { var, .. } if var == "s"),
                "{call}: {body:?}"
            );
            let rules = common::rules_applied(&derivations[0]);
            let lift = atl_rewrites::directives::call_lift_rule(func, position);
            assert!(
                rules.contains(&lift.as_str()),
                "{call}: {lift} not in {rules:?}"
            );
            let (program, _) =
                atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
            assert_same_bits(&program, "spec", "staged", &[(1, 1), (2, 3), (4, 5)], &call);
        }
    }
}

/// A stage read inside a scalar function's argument is moved into it (the lifting rule
/// backwards), down to the loop named, and windowed there; this was refused (E0827)
/// before the functions had lifting rules.
#[test]
fn a_stage_moves_into_a_scalar_functions_argument() {
    let source = "size n
input f : [n]
def a =
  let b = gen i < n: f[i] * f[i] in
  sqrt(sum j < n: b[j])
derive s from a {
  compute_at b at j
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let result = &derivations[0].result;
    // sqrt(sum j < n: let b = … in …)
    let ExprKind::Call { args, .. } = &result.kind else {
        panic!("{result:?}");
    };
    let ExprKind::Sum { var, body, .. } = &args[0].kind else {
        panic!("{result:?}");
    };
    assert_eq!(var, "j");
    assert!(
        matches!(&body.kind, ExprKind::Let { var, .. } if var == "b"),
        "{body:?}"
    );
    let rules = common::rules_applied(&derivations[0]);
    assert!(rules.contains(&"let_lift_sqrt"), "{rules:?}");
    let (program, _) = atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    assert_same_bits(&program, "a", "s", &[(1, 1), (2, 1), (7, 1)], "sqrt");
}

/// `compute_root` lifts a stage out of a loop and then out of the calls around it, up
/// to the chain of lets at the root (a softmax-like row: the stage is inside `max`,
/// `-`, `exp` and `/`).
#[test]
fn compute_root_lifts_a_stage_out_of_calls() {
    let source = "size n
input f : [n]
def a = gen i < n: exp(f[i] - max(let mx = sum k < n: f[k] in mx, 0)) / abs(f[i] + 2)
derive r from a {
  compute_root mx
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let result = &derivations[0].result;
    assert!(
        matches!(&result.kind, ExprKind::Let { var, .. } if var == "mx"),
        "{result:?}"
    );
    let rules = common::rules_applied(&derivations[0]);
    for r in [
        "let_lift_max_l",
        "let_lift_sub_r",
        "let_lift_exp",
        "let_lift_div_l",
    ] {
        assert!(rules.contains(&r), "{r} not in {rules:?}");
    }
    let (program, _) = atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    assert_same_bits(
        &program,
        "a",
        "r",
        &[(1, 1), (3, 1), (6, 1)],
        "softmax-like",
    );
}
