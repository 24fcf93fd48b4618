//! Coordinates used as values (`float(i + 1)`) in the value check: a kernel that
//! converts the source's index is validated; one that converts another index, a
//! shifted one, or writes a constant instead is rejected.

mod common;

use atl_loopir::ir::Kernel;
use atl_validate::{KernelVerdict, Report};

const SOURCE: &str = "size n
input a: [n]
def ramp = gen i < n: a[i] * float(i + 1)
def square = gen i < n: float(i) * float(i)
";

const RAMP: &str = "kernel ramp(n; a: [n]) -> out: [n]
  source: gen i < n: a[i] * float(i + 1)
{
  for i in 0..n {  # gen
    out[i] = a[i @ (i)] * float(i + 1)  @ (i)
  }
}";

fn kernel(text: &str) -> Kernel {
    atl_loopir::parse::parse_kernel(text).unwrap_or_else(|d| panic!("{d:?}\n{text}"))
}

fn against(text: &str, def: &str) -> Report {
    common::report_against(&kernel(text), SOURCE, def)
}

fn assert_rejected(report: &Report) {
    assert!(
        matches!(report.verdict, KernelVerdict::Rejected { .. }),
        "{report}"
    );
}

#[test]
fn a_kernel_converting_the_sources_index_is_validated() {
    let report = against(RAMP, "ramp");
    assert_eq!(report.verdict, KernelVerdict::Validated, "{report}");
    // The loop-IR text reads back to the same kernel (`float(…)` is printed as parsed).
    let k = kernel(RAMP);
    let printed = atl_loopir::print::kernel_to_text(&k);
    assert!(printed.contains("float(i + 1)"), "{printed}");
    assert_eq!(kernel(&printed), k);
}

#[test]
fn a_kernel_converting_a_shifted_index_is_rejected() {
    for wrong in ["float(i)", "float(i + 2)", "float(n - i)", "1"] {
        let text = RAMP.replace("float(i + 1)", wrong);
        assert_rejected(&against(&text, "ramp"));
    }
}

#[test]
fn a_tiled_kernel_of_a_square_is_validated_and_its_mutants_are_not() {
    let tiled = "kernel square(n; a: [n]) -> out: [n]
  source: gen i < n: float(i) * float(i)
{
  for io in 0..n / 4 {  # gen
    for ii in 0..4 {  # gen
      out[ii + 4 * io] = float(ii + 4 * io) * float(4 * io + ii)  @ (ii + 4 * io)
    }
  }
  for i in n / 4 * 4..n {  # gen
    out[i] = float(i) * float(i)  @ (i)
  }
}";
    let report = against(tiled, "square");
    assert_eq!(report.verdict, KernelVerdict::Validated, "{report}");
    // The tile's own index instead of the element's.
    assert_rejected(&against(
        &tiled.replace("float(4 * io + ii)", "float(ii)"),
        "square",
    ));
    // The tail's first element off by one.
    assert_rejected(&against(
        &tiled.replace("float(i) * float(i)", "float(i) * float(i - 1)"),
        "square",
    ));
}

/// Lowers `def` of `text` as `atl emit` does.
fn lowered(text: &str, def: &str) -> Result<Kernel, atl_lang::diag::Diagnostic> {
    let (program, shapes) = common::program(text);
    atl_lower::lower_def_with(
        &program,
        &shapes,
        def,
        &atl_solver::Solver::new(),
        &atl_lower::LowerOptions::default(),
    )
}

#[test]
fn a_coordinates_index_arithmetic_is_bounded_like_an_accesss() {
    // The C evaluates `i * n` in int64_t: with the sizes unbounded it may overflow, and
    // lowering refuses the kernel (E0938) rather than emit one the validator rejects.
    let unbounded = "size n\ninput a: [n]\ndef big = gen i < n: a[i] * float(i * n)\n";
    let refused = lowered(unbounded, "big").expect_err("refused");
    assert_eq!(refused.code, "E0938", "{refused:?}");
    // Bounded by an `assume`, the same kernel is validated.
    let bounded =
        "size n\nassume n <= 100000\ninput a: [n]\ndef big = gen i < n: a[i] * float(i * n)\n";
    let kernel = lowered(bounded, "big").unwrap_or_else(|d| panic!("{d:?}"));
    let report = common::report_against(&kernel, bounded, "big");
    assert_eq!(report.verdict, KernelVerdict::Validated, "{report}");
}
