//! Scheduling reductions with directives: `split` of a `sum` (every tail strategy),
//! `rfactor`, and the `grade exact` declaration. Values are compared with plain Rust
//! loops (independent of the interpreter's evaluation of the specification), and the
//! expansions are checked to be the rule steps the documentation names.

mod common;

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_def};
use atl_lang::ir::{Expr, ExprKind};
use atl_rewrites::rule::Grade;
use atl_rewrites::{Derivation, with_derived};

const MATVEC: &str = include_str!("../../examples/matvec/matvec.atl");

/// `y[b, i] = sum j < N: A[b, i, j] * x[b, j]` with plain loops.
fn matvec_loops(a: &Tensor, x: &Tensor, (bn, m, n): (usize, usize, usize)) -> Vec<f64> {
    let mut y = vec![0.0; bn * m];
    for b in 0..bn {
        for i in 0..m {
            let mut acc = 0.0;
            for j in 0..n {
                acc += a.data[(b * m + i) * n + j] * x.data[b * n + j];
            }
            y[b * m + i] = acc;
        }
    }
    y
}

fn close(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| (g - w).abs() <= 1e-12 * (1.0 + w.abs()))
}

fn derivation<'d>(all: &'d [Derivation], name: &str) -> &'d Derivation {
    all.iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("derivation `{name}`"))
}

/// The rules of a derivation's steps, in order.
fn rules(d: &Derivation) -> Vec<String> {
    d.steps.iter().filter_map(|s| s.rule.clone()).collect()
}

#[test]
fn the_matvec_example_equals_plain_loops_at_sizes_with_and_without_a_tail() {
    let (checked, derivations, diags) = common::derive(MATVEC);
    assert!(diags.is_empty(), "{diags:?}");
    let fast = derivation(&derivations, "fast");
    assert_eq!(fast.grade(), Grade::Real, "rfactor regroups the additions");
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    let options = EvalOptions::default();
    // N below the factor (no full tile), a multiple of it (no partial tile), and with a
    // partial tile; B = M = 1 too.
    for (bn, m, n) in [
        (1, 1, 1),
        (2, 3, 7),
        (2, 3, 8),
        (3, 2, 19),
        (1, 4, 64),
        (2, 1, 67),
    ] {
        let sizes: BTreeMap<String, i64> = [("B", bn), ("M", m), ("N", n)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v as i64))
            .collect();
        let a = Tensor::random(vec![bn, m, n], 11);
        let x = Tensor::random(vec![bn, n], 12);
        let want = matvec_loops(&a, &x, (bn, m, n));
        let inputs: BTreeMap<String, Tensor> = [("A".to_string(), a), ("x".to_string(), x)]
            .into_iter()
            .collect();
        for def in ["matvec", "fast"] {
            let got = eval_def(&program, def, &sizes, &inputs, &options).expect("evaluates");
            assert_eq!(got.shape, vec![bn, m], "{def}");
            assert!(
                close(&got.data, &want),
                "`{def}` at B={bn}, M={m}, N={n}: {:?} vs {want:?}",
                got.data
            );
        }
    }
}

#[test]
fn the_matvec_schedule_is_directives_only_and_expands_into_the_documented_rules() {
    // No rule-level step, no numeric path, no user rule in the file.
    let block = &MATVEC[MATVEC.find("derive fast").expect("derive fast")..];
    assert!(!block.contains("rw ") && !block.contains(" in [") && !MATVEC.contains("\nrule "));
    let (_, derivations, diags) = common::derive(MATVEC);
    assert!(diags.is_empty(), "{diags:?}");
    let fast = derivation(&derivations, "fast");
    assert_eq!(
        rules(fast),
        ["sum_tile", "split_sum", "sum_swap", "sum_stage", "gen_sum"],
        "split (tile, separate), rfactor (swap, stage), reorder (gen_sum)"
    );
    let text = atl_lang::pretty::expr_to_string(&fast.result, Default::default());
    assert!(
        text.contains("let part = sum jo < N / 8: gen l < 8: A[b, i, jo * 8 + l] * x[b, jo * 8 + l] in sum ji < 8: part[ji]"),
        "{text}"
    );
    let hints: Vec<String> = fast
        .hints()
        .iter()
        .map(|h| format!("{} {}", h.kind.directive(), h.var))
        .collect();
    assert_eq!(hints, ["vectorize l", "parallel b"]);
}

const SUMS: &str = "size n
input g : [n, n]
def rows = gen i < n: sum k < n: g[i, k]
derive guarded from rows {
  split k by 4 into ko, ki
}
derive separate from rows {
  split k by 4 into ko, ki tail separate
}
derive partial from rows {
  split k by 4 into ko, ki
  rfactor ki into l
}
derive lanes from rows {
  split k by 4 into ko, ki tail separate
  rfactor ki into l as acc
  reorder ko, l
  vectorize l
}
";

/// `rows[i] = sum k < n: g[i, k]` with plain loops.
fn rows_loops(g: &Tensor, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (0..n).map(|k| g.data[i * n + k]).sum())
        .collect()
}

fn has_guard(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| found |= matches!(x.kind, ExprKind::Guard { .. }));
    found
}

#[test]
fn a_split_sum_equals_plain_loops_for_every_tail_and_the_full_tiles_carry_no_guard() {
    let (checked, derivations, diags) = common::derive(SUMS);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(derivations.len(), 4);
    assert_eq!(rules(derivation(&derivations, "guarded")), ["sum_tile"]);
    assert_eq!(
        rules(derivation(&derivations, "separate")),
        ["sum_tile", "split_sum"]
    );
    assert_eq!(
        rules(derivation(&derivations, "partial")),
        ["sum_tile", "sum_swap", "sum_stage"]
    );
    // `separate`: the full tiles (the first operand of `+`) without a guard.
    let sep = &derivation(&derivations, "separate").result;
    let mut full = None;
    sep.walk(&mut |x| {
        if let ExprKind::Binary { lhs, .. } = &x.kind
            && full.is_none()
        {
            full = Some((**lhs).clone());
        }
    });
    let full = full.expect("full tiles + last tile");
    assert!(!has_guard(&full), "full tiles: {full:?}");
    assert!(has_guard(sep), "the last tile keeps its guard");
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    let options = EvalOptions::default();
    for n in [1usize, 3, 4, 8, 9, 13] {
        let sizes: BTreeMap<String, i64> = [("n".to_string(), n as i64)].into_iter().collect();
        let g = Tensor::random(vec![n, n], 5);
        let want = rows_loops(&g, n);
        let inputs: BTreeMap<String, Tensor> = [("g".to_string(), g)].into_iter().collect();
        for d in &derivations {
            let got = eval_def(&program, &d.name, &sizes, &inputs, &options).expect("evaluates");
            assert!(
                close(&got.data, &want),
                "`{}` at n={n}: {:?} vs {want:?}",
                d.name,
                got.data
            );
        }
    }
}

#[test]
fn round_and_shift_of_a_sum_hold_when_the_extent_is_a_multiple() {
    let source = "size n
assume n % 4 == 0
input f : [n]
def total = sum k < n: f[k]
derive round from total {
  split k by 4 into ko, ki tail round
}
derive shift from total {
  split k by 4 into ko, ki tail shift
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    for d in &derivations {
        assert_eq!(rules(d), ["sum_tile", "guard_elim"], "{}", d.name);
        assert!(!has_guard(&d.result), "{}: no tail, no guard", d.name);
    }
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    for n in [4usize, 8, 12] {
        let sizes: BTreeMap<String, i64> = [("n".to_string(), n as i64)].into_iter().collect();
        let f = Tensor::random(vec![n], 9);
        let want: f64 = f.data.iter().sum();
        let inputs: BTreeMap<String, Tensor> = [("f".to_string(), f)].into_iter().collect();
        for d in &derivations {
            let got = eval_def(&program, &d.name, &sizes, &inputs, &EvalOptions::default())
                .expect("evaluates");
            assert!(close(&got.data, &[want]), "`{}` at n={n}", d.name);
        }
    }
}

#[test]
fn grade_exact_accepts_a_derivation_that_reassociates_nothing() {
    let source = "size n
input g : [n, n]
def rows = gen i < n: sum k < n: g[i, k]
derive exact from rows {
  grade exact
  split i by 4 into io, ii tail separate
  parallel io
}
";
    let (_, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let d = derivation(&derivations, "exact");
    assert_eq!(d.grade(), Grade::Exact);
    // The declaration is recorded as a `check` step with its origin.
    assert_eq!(d.steps[0].command, "check");
    assert_eq!(d.steps[0].origin.as_deref(), Some("grade exact"));
}

#[test]
fn grade_exact_refuses_each_reassociating_directive_in_the_users_words() {
    for (steps, written, reduction) in [
        ("split k by 4 into ko, ki", "split k by 4 into ko, ki", "k"),
        (
            "split k by 4 into ko, ki tail separate",
            "split k by 4 into ko, ki tail separate",
            "k",
        ),
        ("reorder k, j", "reorder k, j", "j"),
    ] {
        let source = format!(
            "size n
input g : [n, n, n]
def two = gen i < n: sum j < n: sum k < n: g[i, j, k]
derive d from two {{
  {steps}
  grade exact
}}
"
        );
        let (_, derivations, diags) = common::derive(&source);
        assert!(derivations.is_empty(), "`{steps}` was accepted");
        let [d] = diags.as_slice() else {
            panic!("{diags:?}")
        };
        assert_eq!(d.code, "E0855");
        assert_eq!(
            d.message,
            format!(
                "`{written}` would reassociate the additions of the reduction `{reduction}`, in a derivation declared `grade exact`"
            )
        );
        // Without the declaration the same steps are accepted, graded `real`.
        let (_, derivations, diags) = common::derive(&source.replace("  grade exact\n", ""));
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(derivations[0].grade(), Grade::Real);
    }
}

#[test]
fn grade_exact_refuses_a_derivation_whose_base_is_real() {
    let source = "size n
input g : [n, n]
def rows = gen i < n: sum k < n: g[i, k]
derive tiled from rows {
  split k by 4 into ko, ki
}
derive annotated from tiled {
  parallel i
}
derive exact from annotated {
  grade exact
  parallel i
}
derive exact_from_spec from rows {
  grade exact
  parallel i
}
";
    let (_, derivations, diags) = common::derive(source);
    let names: Vec<&str> = derivations.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["tiled", "annotated", "exact_from_spec"]);
    let [d] = diags.as_slice() else {
        panic!("{diags:?}")
    };
    assert_eq!(d.code, "E0855");
    // `annotated` is exact on its own steps; its base `tiled` is not.
    assert_eq!(
        d.message,
        "derivation `exact` is declared `grade exact`, but it starts from `tiled`, which is graded `real`"
    );
}

#[test]
fn partition_separates_the_full_tiles_of_a_split_reduction() {
    let source = "size n
input g : [n, n]
def rows = gen i < n: sum k < n: g[i, k]
derive later from rows {
  split k by 4 into ko, ki
  partition ko
}
derive at_once from rows {
  split k by 4 into ko, ki tail separate
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let later = derivation(&derivations, "later");
    assert_eq!(rules(later), ["sum_tile", "split_sum"]);
    // The same program as `tail separate`.
    let print = |d: &Derivation| atl_lang::pretty::expr_to_string(&d.result, Default::default());
    assert_eq!(print(later), print(derivation(&derivations, "at_once")));
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    for n in [1usize, 4, 6, 9] {
        let sizes: BTreeMap<String, i64> = [("n".to_string(), n as i64)].into_iter().collect();
        let g = Tensor::random(vec![n, n], 7);
        let want = rows_loops(&g, n);
        let inputs: BTreeMap<String, Tensor> = [("g".to_string(), g)].into_iter().collect();
        let got = eval_def(&program, "later", &sizes, &inputs, &EvalOptions::default())
            .expect("evaluates");
        assert!(close(&got.data, &want), "n={n}");
    }
}
