//! `x * 0` is 0 over the reals, but not in floating point when `x` is infinite or NaN,
//! which a scalar function (`log(0)`, `exp` overflow, `sqrt` of a negative number), a
//! division (by zero) or a max-reduction (`-inf` when empty) can make of finite
//! inputs. A kernel that stores 0 where the definition multiplies such a term by zero
//! computes something else (the interpreter gives NaN), so it is never validated.

mod common;

use atl_validate::KernelVerdict;

const PROGRAM: &str = "size n
input a: [n]
def logs = gen i < n: log(a[i] - a[i]) * 0
def quotients = gen i < n: 0 * (1 / (a[i] - a[i]))
def plain = gen i < n: (a[i] - a[i]) * 0
";

/// A kernel for definition `def` that stores 0 in every element.
fn zero_kernel(def: &str) -> atl_loopir::ir::Kernel {
    let text = format!(
        r#"kernel {def}(n; a: [n]) -> out: [n]
  requires n >= 1  # size: "size `n` is at least 1"
  source: 0
{{
  for i in 0..n {{  # gen, parallel
    out[i] = 0  @ (i)
  }}
}}
"#
    );
    atl_loopir::parse::parse_kernel(&text).unwrap_or_else(|d| panic!("{d:?}"))
}

#[test]
fn zero_for_a_non_finite_term_times_zero_is_not_validated() {
    for def in ["logs", "quotients"] {
        let report = common::report_against(&zero_kernel(def), PROGRAM, def);
        assert_ne!(report.verdict, KernelVerdict::Validated, "{def}: {report}");
    }
}

#[test]
fn zero_for_a_finite_term_times_zero_is_validated() {
    // The simplification still applies where the other factor is finite for finite
    // inputs (so the check above is not vacuous).
    let report = common::report_against(&zero_kernel("plain"), PROGRAM, "plain");
    assert_eq!(report.verdict, KernelVerdict::Validated, "{report}");
}
