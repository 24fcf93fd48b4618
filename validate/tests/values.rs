//! The value check (obligation (h)): kernels written by hand as loop-IR text and
//! kernels lowered from the examples then edited, validated against ATL definitions.
//! A kernel that computes its definition is validated; one that computes something
//! else is rejected with a concrete wrong result when small sizes show it, and is
//! otherwise never validated.

mod common;

use atl_loopir::ir::Kernel;
use atl_solver::Verdict;
use atl_validate::concrete::Difference;
use atl_validate::{KernelVerdict, ObligationKind, Report};

const COPIES: &str = "size n
size m
input a: [n]
input b: [n, m]
def copy = gen i < n: a[i]
def first = gen i < n: a[0]
def last = gen i < n: a[n - 1]
def twice = gen i < n: a[i] + a[i]
def flip_t = gen j < m, i < n: b[n - 1 - i, j]
def row_sums = gen i < n: sum j < m: b[i, j]
def copy_2d = gen i < n, j < m: b[i, j]
";

fn kernel(text: &str) -> Kernel {
    atl_loopir::parse::parse_kernel(text).unwrap_or_else(|d| panic!("{d:?}\n{text}"))
}

fn against(text: &str, def: &str) -> Report {
    common::report_against(&kernel(text), COPIES, def)
}

fn assert_validated(report: &Report) {
    assert_eq!(report.verdict, KernelVerdict::Validated, "{report}");
}

/// Rejected by a run at small sizes, with the element that is wrong.
fn assert_wrong_result(report: &Report) -> Difference {
    match &report.verdict {
        KernelVerdict::Rejected {
            disagreement: Some(d),
            ..
        } => d.what.clone(),
        _ => panic!("not rejected with a wrong result:\n{report}"),
    }
}

/// Not validated, and not rejected: some value obligation is unknown.
fn assert_value_unknown(report: &Report) {
    assert!(
        matches!(report.verdict, KernelVerdict::NotValidated { .. }),
        "{report}"
    );
    assert!(
        report.obligations.iter().any(|c| matches!(
            c.obligation.kind,
            ObligationKind::Value { .. }
        ) && matches!(c.verdict, Verdict::Unknown(_))),
        "{report}"
    );
}

/// A tiled copy with C's `/` for the number of tiles and a guarded tail.
const TILED_COPY: &str = "kernel by_hand(n; a: [n]) -> o: [n]
  source: 0
{
  for io in 0..(n + 3) / 4 {  # gen
    for ii in 0..4 {  # gen
      if 4 * io + ii < n {
        o[4 * io + ii] = a[4 * io + ii @ (4 * io + ii)]  @ (4 * io + ii)
      }
    }
  }
}
";

#[test]
fn a_tiled_copy_written_by_hand_is_validated() {
    assert_validated(&against(TILED_COPY, "copy"));
}

#[test]
fn the_tiled_copy_is_not_a_kernel_of_another_definition() {
    let d = assert_wrong_result(&against(TILED_COPY, "twice"));
    assert!(matches!(d, Difference::Element { .. }), "{d:?}");
    assert_wrong_result(&against(TILED_COPY, "first"));
}

#[test]
fn a_copy_wrong_only_beyond_the_sizes_a_run_can_try_is_not_validated() {
    // Right for every n < 50: the runs agree, the value obligation is not proved.
    let text = TILED_COPY.replace(
        "= a[4 * io + ii @ (4 * io + ii)]",
        "= n < 50 ? a[4 * io + ii @ (4 * io + ii)] : 0",
    );
    assert_value_unknown(&against(&text, "copy"));
}

/// `o[j][i] = t[i][j]` through a temporary `t[i][j] = b[n - 1 - i][j]`, read back in a
/// flattened loop with floor operations.
const TRANSPOSING_COPY: &str = "kernel by_hand(n, m; b: [n, m]) -> o: [m, n]
  source: 0
{
  alloc t[n, m] = uninit[n * m] {  # heap
    for i in 0..n {  # gen
      for j in 0..m {  # gen
        t[i * m + j] = b[(n - 1 - i) * m + j @ (n - 1 - i, j)]  @ (i, j)
      }
    }
    for r in 0..n * m {  # gen
      o[floormod(r, m) * n + floordiv(r, m)] = t[r @ (r / m, r % m)]  @ (r % m, r / m)
    }
  }
}
";

#[test]
fn a_transposing_copy_through_a_temporary_written_by_hand_is_validated() {
    assert_validated(&against(TRANSPOSING_COPY, "flip_t"));
}

#[test]
fn a_temporary_filled_without_the_reversal_is_a_wrong_result() {
    let text = TRANSPOSING_COPY.replace(
        "b[(n - 1 - i) * m + j @ (n - 1 - i, j)]",
        "b[i * m + j @ (i, j)]",
    );
    match assert_wrong_result(&against(&text, "flip_t")) {
        Difference::Element { index, .. } => assert_eq!(index.len(), 2),
        d => panic!("{d:?}"),
    }
}

/// A scalar assigned twice: a read sees the last assignment, never the first.
const SCALAR_TWICE: &str = "kernel by_hand(n; a: [n]) -> o: [n]
  source: 0
{
  scalar s = a[0 @ (0)]
  s = a[n - 1 @ (n - 1)]
  for i in 0..n {  # gen
    o[i] = s  @ (i)
  }
}
";

#[test]
fn a_scalar_assigned_twice_holds_its_last_value() {
    assert_validated(&against(SCALAR_TWICE, "last"));
    // At n = 1 both are a[0]: the runs at n >= 2 find the difference.
    assert_wrong_result(&against(SCALAR_TWICE, "first"));
    // In the other order, the first value is the one read.
    let swapped = "kernel by_hand(n; a: [n]) -> o: [n]
  source: 0
{
  scalar s = a[n - 1 @ (n - 1)]
  s = a[0 @ (0)]
  for i in 0..n {  # gen
    o[i] = s  @ (i)
  }
}
";
    assert_validated(&against(swapped, "first"));
    assert_wrong_result(&against(swapped, "last"));
}

/// A row sum accumulated into a scalar, then stored.
const ROW_SUMS: &str = "kernel by_hand(n, m; b: [n, m]) -> o: [n]
  source: 0
{
  for i in 0..n {  # gen
    scalar acc = 0
    for j in 0..m {  # sum
      acc += b[i * m + j @ (i, j)]
    }
    o[i] = acc  @ (i)
  }
}
";

#[test]
fn a_row_sum_written_by_hand_is_validated() {
    assert_validated(&against(ROW_SUMS, "row_sums"));
}

#[test]
fn a_row_sum_in_the_reverse_order_is_not_validated() {
    // The same real number, summed in another order than the source's: not validated
    // (the check proves the source's order of summation), and not a wrong result.
    let text = ROW_SUMS.replace(
        "acc += b[i * m + j @ (i, j)]",
        "acc += b[i * m + m - 1 - j @ (i, m - 1 - j)]",
    );
    let report = against(&text, "row_sums");
    assert!(
        matches!(report.verdict, KernelVerdict::NotValidated { .. }),
        "{report}"
    );
}

#[test]
fn a_row_sum_missing_its_first_term_is_a_wrong_result() {
    let text = ROW_SUMS.replace("for j in 0..m {", "for j in 1..m {");
    assert_wrong_result(&against(&text, "row_sums"));
}

#[test]
fn a_row_sum_read_inside_its_accumulation_is_not_the_sum() {
    // Storing the partial sum at every step: the last store wins, and is the sum,
    // but the store runs m times — a double write, never validated.
    let text = ROW_SUMS.replace(
        "      acc += b[i * m + j @ (i, j)]\n    }\n    o[i] = acc  @ (i)",
        "      acc += b[i * m + j @ (i, j)]\n      o[i] = acc  @ (i)\n    }",
    );
    assert_ne!(text, ROW_SUMS);
    let report = against(&text, "row_sums");
    assert_ne!(report.verdict, KernelVerdict::Validated, "{report}");
}

// ---- kernels lowered from the examples, edited --------------------------------------

fn matmul_fast() -> Kernel {
    common::example_kernel("matmul/matmul.atl", "fast")
}

fn edited(k: &Kernel, from: &str, to: &str) -> Kernel {
    let text = atl_loopir::print::kernel_to_text(k);
    let changed = text.replacen(from, to, 1);
    assert_ne!(changed, text, "`{from}` is not in the kernel:\n{text}");
    kernel(&changed)
}

fn against_matmul(k: &Kernel) -> Report {
    common::report_against_example(k, "matmul/matmul.atl", "fast")
}

#[test]
fn the_fast_matmul_is_validated_and_its_edits_are_not() {
    let k = matmul_fast();
    assert_validated(&against_matmul(&k));
    // A register tile zeroed to 0.5.
    let zeroed = edited(&k, "acc[16 * z + z1] = 0 ", "acc[16 * z + z1] = 0.5 ");
    assert_wrong_result(&against_matmul(&zeroed));
    // The reduction skips its first term.
    let skipped = edited(&k, "for k in 0..K {", "for k in 1..K {");
    assert_wrong_result(&against_matmul(&skipped));
    // The reduction stops after 40 terms: right for every K <= 40.
    let capped = edited(&k, "for k in 0..K {", "for k in 0..min(K, 40) {");
    assert_value_unknown(&against_matmul(&capped));
    // The packed panel of B is built only for K < 60.
    let packed = edited(&k, "ji + 16 * jo < N ?", "ji + 16 * jo < N && K < 60 ?");
    assert_value_unknown(&against_matmul(&packed));
}

// ---- coverage by counting --------------------------------------------------------

/// `a ++ a` read back by `flatten(transpose(split(2, …)))`: each loop writes a
/// permutation of half the output, which no witness of the coordinates describes.
const INTERLEAVE: &str = "size n
input a: [n]
def interleave = flatten(transpose(split(2, a ++ a)))
";

const INTERLEAVE_KERNEL: &str = "kernel by_hand(n; a: [n]) -> o: [2 * n]
  source: 0
{
  for e in 0..n {  # gen
    o[n * (e % 2) + e / 2] = a[e @ (e)]  @ (n * (e % 2) + e / 2)
  }
  for e1 in 0..n {  # gen
    o[n * ((e1 + n) % 2) + (e1 + n) / 2] = a[e1 @ (e1)]  @ (n * ((e1 + n) % 2) + (e1 + n) / 2)
  }
}
";

#[test]
fn a_permutation_written_by_two_loops_is_covered_by_counting() {
    let report = common::report_against(&kernel(INTERLEAVE_KERNEL), INTERLEAVE, "interleave");
    assert_validated(&report);
    let coverage = report
        .obligations
        .iter()
        .find(|c| matches!(c.obligation.kind, ObligationKind::Coverage { .. }))
        .expect("a coverage obligation");
    assert_eq!(coverage.method, atl_validate::Method::Counting, "{report}");
}

#[test]
fn the_permutation_one_iteration_short_is_not_covered() {
    let text = INTERLEAVE_KERNEL.replace("for e1 in 0..n {", "for e1 in 0..n - 1 {");
    let report = common::report_against(&kernel(&text), INTERLEAVE, "interleave");
    // The count is one short: not proved, and the run finds the unwritten element.
    match assert_wrong_result(&report) {
        Difference::Fault(why) => assert!(why.contains("did not write"), "{why}"),
        d => panic!("{d:?}"),
    }
}

// ---- collapsed parallel loops ----------------------------------------------------

const ROW_SUMS_INTO_OUTPUT: &str = "kernel by_hand(n, m; b: [n, m]) -> o: [n]
  source: 0
{
  fill o[0..n] = 0
  for i in 0..n {  # gen, parallel
    for j in 0..m {  # sum
      o[i] += b[i * m + j @ (i, j)]  @ (i)
    }
  }
}
";

#[test]
fn a_collapsed_loop_whose_inner_iterations_share_an_element_is_a_race() {
    assert_validated(&against(ROW_SUMS_INTO_OUTPUT, "row_sums"));
    // Collapsed, the `j` iterations of one row run on different threads, all adding
    // into `o[i]`.
    let text = ROW_SUMS_INTO_OUTPUT.replace("# gen, parallel", "# gen, parallel, collapse");
    let report = against(&text, "row_sums");
    let KernelVerdict::Rejected { refuted, .. } = &report.verdict else {
        panic!("not rejected:\n{report}");
    };
    assert!(
        refuted
            .iter()
            .any(|r| matches!(&r.obligation.kind, ObligationKind::Race { loop_var, .. } if loop_var == "j")),
        "{report}"
    );
    // `collapse` on a loop that is not parallel is malformed.
    let text = ROW_SUMS_INTO_OUTPUT.replace("# gen, parallel", "# gen, collapse");
    let report = against(&text, "row_sums");
    assert!(report.is_rejected(), "{report}");
}

const COPY_2D: &str = "kernel by_hand(n, m; a: [n], b: [n, m]) -> o: [n, m]
  source: 0
{
  for i in 0..n {  # gen, parallel, collapse
    for j in 0..m {  # gen
      o[i * m + j] = b[i * m + j @ (i, j)]  @ (i, j)
    }
  }
}
";

#[test]
fn a_collapsed_loop_whose_inner_loop_has_a_pragma_is_rejected() {
    // The C of `collapse(2)` needs nothing between the two loops; an inner `omp simd`
    // or unrolling pragma does not compile (found by the mutation fuzzer compiling
    // validated mutants).
    assert_validated(&against(COPY_2D, "copy_2d"));
    for note in ["# gen, vector", "# gen, parallel", "# gen, unroll"] {
        let text = COPY_2D.replace("# gen\n", &format!("{note}\n"));
        assert_ne!(text, COPY_2D);
        let report = against(&text, "copy_2d");
        assert!(report.is_rejected(), "{note}: {report}");
    }
}

// ---- names that swap (found by attacking the validator) ----------------------------

const SWAPS: &str = "size n
input x: [3 * n]
def f = gen i < n, j < n: x[i + 2 * j]
def g = gen a < n, b < n: x[3 * b]
";

#[test]
fn source_binders_named_like_the_kernels_loops_in_another_order_do_not_capture() {
    // The kernel names the output's coordinates `(j, i)`: the source's element there is
    // `x[j + 2*i]`, not `x[3*i]` (which substituting one binder after the other gave).
    let wrong = "kernel f(n; x: [3 * n]) -> out: [n, n]
  source: 0
{
  for j in 0..n {  # gen
    for i in 0..n {  # gen
      out[j * n + i] = x[3 * i @ (3 * i)]  @ (j, i)
    }
  }
}
";
    let report = common::report_against(&kernel(wrong), SWAPS, "f");
    assert_wrong_result(&report);
    let right = wrong.replace("x[3 * i @ (3 * i)]", "x[j + 2 * i @ (j + 2 * i)]");
    assert_validated(&common::report_against(&kernel(&right), SWAPS, "f"));
}

#[test]
fn a_temporary_read_in_loops_named_in_the_other_order_does_not_capture() {
    // `t[j][k] = x[j + 2k]` read back as `t[k][j]` in loops named `(k, j)`: the kernel
    // computes `out[k][j] = x[k + 2j]`, which is not `g` (`x[3j]`).
    let text = "kernel g(n; x: [3 * n]) -> out: [n, n]
  source: 0
{
  alloc t[n, n] = uninit[n * n] {  # heap
    for j in 0..n {  # gen
      for k in 0..n {  # gen
        t[j * n + k] = x[j + 2 * k @ (j + 2 * k)]  @ (j, k)
      }
    }
    for k in 0..n {  # gen
      for j in 0..n {  # gen
        out[k * n + j] = t[k * n + j @ (k, j)]  @ (k, j)
      }
    }
  }
}
";
    assert_wrong_result(&common::report_against(&kernel(text), SWAPS, "g"));
    let same = "size n
input x: [3 * n]
def h = gen a < n, b < n: x[a + 2 * b]
";
    assert_validated(&common::report_against(&kernel(text), same, "h"));
}

#[test]
fn a_kernel_refusing_sizes_the_program_allows_is_rejected() {
    // A `requires K <= 19` dressed as an index-range bound: the kernel would refuse
    // K = 20, which the program allows and 64-bit arithmetic does not forbid.
    let fast = matmul_fast();
    let bound = fast
        .preconditions
        .iter()
        .find(|p| {
            p.kind == atl_loopir::ir::PreconditionKind::IndexRange
                && p.pred.to_string().starts_with("K <= ")
        })
        .map(|p| p.pred.to_string())
        .expect("an index-range bound of K");
    let narrowed = edited(&fast, &format!("requires {bound}"), "requires K <= 19");
    let report = against_matmul(&narrowed);
    let KernelVerdict::Rejected { refuted, .. } = &report.verdict else {
        panic!("not rejected:\n{report}");
    };
    assert!(
        refuted.iter().any(|r| matches!(
            &r.obligation.kind,
            ObligationKind::Precondition { text, index_range: Some(_) } if text == "K <= 19"
        )),
        "{report}"
    );
}

// ---- scalar functions --------------------------------------------------------------

const ROOTS: &str = "size n
input a: [n]
def roots = gen i < n: sqrt([i > 0] * a[i])
";

#[test]
fn a_kernel_with_scalar_functions_is_validated_and_a_wrong_function_is_not() {
    // The guard outside the call: sqrt(0) is 0, so the kernel computes `roots`.
    let text = "kernel by_hand(n; a: [n]) -> o: [n]
  source: 0
{
  for i in 0..n {  # gen
    o[i] = i > 0 ? sqrt(a[i @ (i)]) : 0  @ (i)
  }
}
";
    assert_validated(&common::report_against(&kernel(text), ROOTS, "roots"));
    let wrong = text.replace("sqrt(", "exp(");
    assert_wrong_result(&common::report_against(&kernel(&wrong), ROOTS, "roots"));
    let swapped = text.replace("sqrt(a[i @ (i)])", "max(a[i @ (i)], 0)");
    assert_wrong_result(&common::report_against(&kernel(&swapped), ROOTS, "roots"));
}

// ---- a witness that is not the writer (found by the validator's mutation fuzzer) ----

#[test]
fn a_zeroed_temporary_written_through_coordinates_that_do_not_determine_the_iteration() {
    // `t[3x + y] = a[x]` for y < 2: the witness of element 1 (x = 0, y = 0) does not
    // write it, but the iteration x = 0, y = 1 does. Reading it as the zero of the
    // zeroed buffer validated a wrong kernel.
    let program = "size n
input a: [n]
def f = gen i < 3 * n: [i < 1] * a[0]
";
    let text = "kernel by_hand(n; a: [n]) -> out: [3 * n]
  source: 0
{
  alloc t[3 * n] = zeros[3 * n] {  # heap
    for x in 0..n {  # gen
      for y in 0..2 {  # gen
        t[3 * x + y] = a[x @ (x)]  @ (3 * x + y)
      }
    }
    for i in 0..3 * n {  # gen
      out[i] = t[i @ (i)]  @ (i)
    }
  }
}
";
    let report = common::report_against(&kernel(text), program, "f");
    assert_ne!(report.verdict, KernelVerdict::Validated, "{report}");
    assert_wrong_result(&report);
}

// ---- tiles whose last tile is bounded by `min` ---------------------------------------

/// Row sums into the output, the rows in tiles of 2 whose last tile is cut at `n`
/// (`ii < min(2, n - 2 * io)`): each `+=` adds into the element of the one tile
/// iteration that covers it, which the check finds from the tile's bounds.
const TILED_ROW_SUMS_INTO_OUTPUT: &str = "kernel by_hand(n, m; b: [n, m]) -> o: [n]
  source: 0
{
  fill o[0..n] = 0
  for io in 0..(n + 1) / 2 {  # gen
    for ii in 0..min(2, n - 2 * io) {  # gen
      for j in 0..m {  # sum
        o[2 * io + ii] += b[(2 * io + ii) * m + j @ (2 * io + ii, j)]  @ (2 * io + ii)
      }
    }
  }
}
";

#[test]
fn a_tiled_accumulation_whose_last_tile_is_cut_by_min_is_validated() {
    assert_validated(&against(TILED_ROW_SUMS_INTO_OUTPUT, "row_sums"));
    // The last tile cut one row short: the last row keeps its zero.
    let short = TILED_ROW_SUMS_INTO_OUTPUT.replace("min(2, n - 2 * io)", "min(2, n - 2 * io - 1)");
    assert_wrong_result(&against(&short, "row_sums"));
}
