//! The value check on max-reductions (`max j < m: e`): the kernel lowering gives a
//! max-reduction (a scalar declared `-inf`, then `max=` in a `max` loop, in order) is
//! validated; kernels that compute something else — another start value, `+=` for
//! `max=`, a shorter range, the same maximum folded in another order (which differs on
//! NaN and signed zeros) — are never validated, and rejected with a wrong result where
//! small sizes show one. Also the softmax example's kernels edited the same ways.

mod common;

use atl_loopir::ir::{Kernel, Stmt, StoreOp, Val};
use atl_validate::{KernelVerdict, Report};

const PROGRAM: &str = "size n
size m
input b: [n, m]
def row_max = gen i < n: max j < m: b[i, j]
def empty_max = gen i < n: max j in m..m: b[i, j]
";

/// The kernel `atl emit --ir` prints for `row_max`, with `{init}`, `{op}`, `{hi}` and
/// `{read}` to edit.
const ROW_MAX: &str = r#"kernel row_max(n, m; b: [n, m]) -> out: [n]
  requires n >= 1  # size: "size `n` is at least 1"
  requires m >= 1  # size: "size `m` is at least 1"
  source: 0
{
  for i in 0..n {  # gen, parallel
    scalar mx = {init}
    for j in 0..{hi} {  # max
      mx {op} b[i * m + {read} @ (i, {read})]
    }
    out[i] = mx  @ (i)
  }
}
"#;

fn row_max(init: &str, op: &str, hi: &str, read: &str) -> Report {
    let text = ROW_MAX
        .replace("{init}", init)
        .replace("{op}", op)
        .replace("{hi}", hi)
        .replace("{read}", read);
    let kernel = atl_loopir::parse::parse_kernel(&text).unwrap_or_else(|d| panic!("{d:?}"));
    common::report_against(&kernel, PROGRAM, "row_max")
}

fn assert_validated(report: &Report) {
    assert_eq!(report.verdict, KernelVerdict::Validated, "{report}");
}

fn assert_not_validated(report: &Report) {
    assert_ne!(report.verdict, KernelVerdict::Validated, "{report}");
}

#[test]
fn the_lowered_max_reduction_is_validated() {
    assert_validated(&row_max("-inf", "max=", "m", "j"));
}

#[test]
fn another_start_value_is_not_validated() {
    // Zero is the maximum's start only when some value is positive: a row of negative
    // values would give 0.
    assert_not_validated(&row_max("0", "max=", "m", "j"));
    assert_not_validated(&row_max("inf", "max=", "m", "j"));
}

#[test]
fn a_sum_for_the_max_is_not_validated() {
    assert_not_validated(&row_max("-inf", "+=", "m", "j"));
    assert_not_validated(&row_max("0", "+=", "m", "j"));
}

#[test]
fn a_shorter_range_is_not_validated() {
    let report = row_max("-inf", "max=", "m - 1", "j");
    assert_not_validated(&report);
}

#[test]
fn the_maximum_in_another_order_is_not_validated() {
    // The same value on ordered reals, but `max` folded right to left differs on NaN
    // and signed zeros: the check compares folds in order.
    assert_not_validated(&row_max("-inf", "max=", "m", "m - 1 - j"));
}

#[test]
fn an_empty_max_is_minus_infinity() {
    let kernel = atl_loopir::parse::parse_kernel(
        r#"kernel empty_max(n, m; b: [n, m]) -> out: [n]
  requires n >= 1  # size: "size `n` is at least 1"
  requires m >= 1  # size: "size `m` is at least 1"
  source: 0
{
  for i in 0..n {  # gen
    out[i] = -inf  @ (i)
  }
}
"#,
    )
    .expect("parses");
    assert_validated(&common::report_against(&kernel, PROGRAM, "empty_max"));
    let zero = atl_loopir::parse::parse_kernel(
        r#"kernel empty_max(n, m; b: [n, m]) -> out: [n]
  requires n >= 1  # size: "size `n` is at least 1"
  requires m >= 1  # size: "size `m` is at least 1"
  source: 0
{
  for i in 0..n {  # gen
    out[i] = 0  @ (i)
  }
}
"#,
    )
    .expect("parses");
    assert_not_validated(&common::report_against(&zero, PROGRAM, "empty_max"));
}

/// Applies `f` to every statement of the kernel's body, nested ones included.
fn edit(kernel: &mut Kernel, f: &mut dyn FnMut(&mut Stmt)) {
    fn go(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Stmt)) {
        for s in stmts {
            f(s);
            match s {
                Stmt::For(l) => go(&mut l.body, f),
                Stmt::If {
                    then_branch,
                    else_branch,
                    ..
                } => {
                    go(then_branch, f);
                    go(else_branch, f);
                }
                Stmt::Alloc { body, .. } => go(body, f),
                _ => {}
            }
        }
    }
    go(&mut kernel.body, f);
}

#[test]
fn the_softmax_kernels_are_validated_and_their_edits_are_not() {
    for def in ["softmax", "fast"] {
        let kernel = common::example_kernel("softmax/softmax.atl", def);
        assert_validated(&common::report_against_example(
            &kernel,
            "softmax/softmax.atl",
            def,
        ));
        // The max-reduction's start value 0 instead of -inf.
        let mut zero_start = kernel.clone();
        edit(&mut zero_start, &mut |s| {
            if let Stmt::Decl {
                init: Some(Val::Lit(v)),
                ..
            } = s
                && *v == f64::NEG_INFINITY
            {
                *v = 0.0;
            }
        });
        assert_ne!(zero_start, kernel);
        assert_not_validated(&common::report_against_example(
            &zero_start,
            "softmax/softmax.atl",
            def,
        ));
        // `+=` for `max=`.
        let mut summed = kernel.clone();
        edit(&mut summed, &mut |s| {
            if let Stmt::SetScalar { op, .. } = s
                && *op == StoreOp::Max
            {
                *op = StoreOp::Accumulate;
            }
        });
        assert_ne!(summed, kernel);
        assert_not_validated(&common::report_against_example(
            &summed,
            "softmax/softmax.atl",
            def,
        ));
    }
}

#[test]
fn a_max_times_zero_is_not_zero() {
    // `max j in 0..m - 1` is `-inf` at m = 1, and `-inf * 0` is NaN: a kernel storing 0
    // is wrong there, and the value check must not simplify the product to 0.
    let program = "size n
size m
input b: [n, m]
def times_zero = gen i < n: (max j < m - 1: b[i, j]) * 0
";
    let kernel = atl_loopir::parse::parse_kernel(
        r#"kernel times_zero(n, m; b: [n, m]) -> out: [n]
  requires n >= 1  # size: "size `n` is at least 1"
  requires m >= 1  # size: "size `m` is at least 1"
  source: 0
{
  for i in 0..n {  # gen
    out[i] = 0  @ (i)
  }
}
"#,
    )
    .expect("parses");
    assert_not_validated(&common::report_against(&kernel, program, "times_zero"));
}

#[test]
fn a_parallel_max_loop_is_a_race() {
    // Threads would fold into the one scalar at the same time.
    let text = ROW_MAX
        .replace("{init}", "-inf")
        .replace("{op}", "max=")
        .replace("{hi}", "m")
        .replace("{read}", "j")
        .replace("# gen, parallel", "# gen")
        .replace("# max", "# max, parallel");
    let kernel = atl_loopir::parse::parse_kernel(&text).unwrap_or_else(|d| panic!("{d:?}"));
    let report = common::report_against(&kernel, PROGRAM, "row_max");
    assert!(
        matches!(report.verdict, KernelVerdict::Rejected { .. }),
        "{report}"
    );
}
