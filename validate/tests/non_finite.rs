//! `x * 0` is 0 over the reals, but not in floating point when `x` is infinite or NaN,
//! which a scalar function (`log(0)`, `exp` overflow, `sqrt` of a negative number), a
//! division (by zero), a max-reduction (`-inf` when empty), and also a sum or product
//! of finite inputs (`1e308 + 1e308`, `1e200 * 1e200`) can make of finite inputs. A
//! kernel that stores 0 where the definition multiplies such a term by zero computes
//! something else (the interpreter gives NaN), and so does a kernel that adds such a
//! term times zero where the definition has nothing (issue 28: `f + f * f * 0` gives
//! NaN for `f = 1e200`, the definition `f`): neither is ever validated.

mod common;

use atl_validate::KernelVerdict;

const PROGRAM: &str = "size n
input a: [n]
def logs = gen i < n: log(a[i] - a[i]) * 0
def quotients = gen i < n: 0 * (1 / (a[i] - a[i]))
def plain = gen i < n: (a[i] - a[i]) * 0
def square_times_zero = gen i < n: a[i] * a[i] * 0
def single_times_zero = gen i < n: a[i] * 0
def copy = gen i < n: a[i]
def zero = gen i < n: 0
";

/// A kernel for definition `def` whose loop body is `body` (statements over `i` in
/// `0..n`, writing `out[i]`).
fn kernel(def: &str, body: &str) -> atl_loopir::ir::Kernel {
    let text = format!(
        r#"kernel {def}(n; a: [n]) -> out: [n]
  requires n >= 1  # size: "size `n` is at least 1"
  source: 0
{{
{body}
}}
"#
    );
    atl_loopir::parse::parse_kernel(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"))
}

/// A kernel for definition `def` that stores `value` (over `i` and `a[i @ (i)]`) in
/// every element.
fn storing(def: &str, value: &str) -> atl_loopir::ir::Kernel {
    kernel(
        def,
        &format!(
            "  for i in 0..n {{  # gen, parallel
    out[i] = {value}  @ (i)
  }}"
        ),
    )
}

/// A kernel for definition `def` that stores 0 in every element.
fn zero_kernel(def: &str) -> atl_loopir::ir::Kernel {
    storing(def, "0")
}

const A: &str = "a[i @ (i)]";

/// Asserts the kernel is not validated as the kernel of `def`, and that this is for
/// its value (every other obligation is proved: not vacuous).
fn assert_not_validated(kernel: &atl_loopir::ir::Kernel, def: &str) {
    let report = common::report_against(kernel, PROGRAM, def);
    let def = format!("{def} by {}", atl_loopir::print::kernel_to_text(kernel));
    assert_ne!(report.verdict, KernelVerdict::Validated, "{def}: {report}");
    let text = report.to_string();
    let unproved: Vec<String> = text
        .lines()
        .filter(|l| {
            l.trim_start().starts_with("unknown:") || l.trim_start().starts_with("refuted:")
        })
        .map(str::to_string)
        .collect();
    assert!(
        !unproved.is_empty() && unproved.iter().all(|l| l.contains("value: ")),
        "{def}: not validated for another reason than its value:\n{report}"
    );
}

fn assert_validated(kernel: &atl_loopir::ir::Kernel, def: &str) {
    let report = common::report_against(kernel, PROGRAM, def);
    let def = format!("{def} by {}", atl_loopir::print::kernel_to_text(kernel));
    assert_eq!(report.verdict, KernelVerdict::Validated, "{def}: {report}");
}

#[test]
fn zero_for_a_non_finite_term_times_zero_is_not_validated() {
    for def in ["logs", "quotients"] {
        assert_not_validated(&zero_kernel(def), def);
    }
}

#[test]
fn zero_for_a_finite_term_times_zero_is_validated() {
    // The simplification still applies where the other factor is finite for finite
    // inputs (so the checks here are not vacuous). This control was `(a[i] - a[i]) *
    // 0` ("plain"): a difference of inputs can overflow in general (`1e308 - (-1e308)`
    // is `inf`, though not when both are the same element), so the check no longer
    // treats it as finite and that kernel is not validated; a single input element is
    // finite (inputs are assumed finite).
    assert_validated(&zero_kernel("single_times_zero"), "single_times_zero");
    assert_not_validated(&zero_kernel("plain"), "plain");
}

#[test]
fn zero_for_a_growing_term_times_zero_is_not_validated() {
    // The reverse of the issue: the definition multiplies a product of inputs (`inf`
    // for `a = 1e200`) by zero, which is NaN; the kernel's 0 is not that.
    assert_not_validated(&zero_kernel("square_times_zero"), "square_times_zero");
}

#[test]
fn a_growing_term_times_zero_added_is_not_validated() {
    // Issue 28, item 2: `f + f * f * 0` for `f`, NaN for `f = 1e200`.
    let value = format!("{A} + {A} * {A} * 0");
    assert_not_validated(&storing("copy", &value), "copy");
}

#[test]
fn growing_terms_for_zero_are_not_validated() {
    let cases = [
        // inf - inf is NaN.
        format!("{A} * {A} - {A} * {A}"),
        // 1e308 + 1e308 is inf.
        format!("({A} + {A}) * 0"),
        format!("{A} * {A} * {A} * 0"),
        format!("0 * ({A} * {A})"),
        // `x - x` for a sum of products.
        format!("{A} * {A} + {A} * {A} - ({A} * {A} + {A} * {A})"),
        // exp(1000) is inf.
        format!("exp({A}) * 0"),
        format!("-({A} * {A}) * 0"),
        format!("({A} * 2) * 0"),
        // Infinite in single precision.
        "1e300 * 0".to_string(),
    ];
    for value in cases {
        assert_not_validated(&storing("zero", &value), "zero");
    }
}

#[test]
fn a_temporary_holding_a_product_times_zero_is_not_validated() {
    // The finiteness question is asked of what the read resolves to: `t[i]` holds
    // `a[i] * a[i]`.
    let body = "  alloc t[n] = uninit[n] {  # heap
    for i in 0..n {  # gen, parallel
      t[i] = a[i @ (i)] * a[i @ (i)]  @ (i)
    }
    for i in 0..n {  # gen, parallel
      out[i] = t[i @ (i)] * 0  @ (i)
    }
  }";
    assert_not_validated(&kernel("zero", body), "zero");
    // The same temporary holding one input element: finite, so validated.
    let body = body.replace("t[i] = a[i @ (i)] * a[i @ (i)]", "t[i] = a[i @ (i)]");
    assert_validated(&kernel("zero", &body), "zero");
}

#[test]
fn surely_finite_terms_times_zero_are_validated() {
    // Positive controls: an input element, its negation, a literal, a literal of
    // magnitude at most 1 times an input, and a selection or `max` of inputs, each
    // times zero, are zero in floating point for finite inputs.
    let cases = [
        format!("{A} * 0"),
        format!("0 * {A}"),
        format!("-{A} * 0"),
        "3 * 0".to_string(),
        format!("({A} * 0.5) * 0"),
        format!("max({A}, {A}) * 0"),
        format!("abs({A}) * 0"),
    ];
    for value in cases {
        let report = common::report_against(&storing("zero", &value), PROGRAM, "zero");
        assert_eq!(
            report.verdict,
            KernelVerdict::Validated,
            "{value}: {report}"
        );
    }
    assert_validated(&storing("copy", &format!("{A} + {A} * 0")), "copy");
    assert_validated(&zero_kernel("single_times_zero"), "single_times_zero");
}

#[test]
fn a_scalar_holding_a_sum_times_zero_is_not_validated() {
    // `s` accumulates `n` inputs (`n * 1e308` overflows); read through the scalar,
    // then multiplied by zero.
    let body = "  for i in 0..n {  # gen, parallel
    scalar s = 0
    for k in 0..n {  # sum
      s += a[k @ (k)]
    }
    out[i] = s * 0  @ (i)
  }";
    assert_not_validated(&kernel("zero", body), "zero");
    // A scalar holding one input element: finite, so validated.
    let body = "  for i in 0..n {  # gen, parallel
    scalar s = a[i @ (i)]
    out[i] = s * 0  @ (i)
  }";
    assert_validated(&kernel("zero", body), "zero");
}
