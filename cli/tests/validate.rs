//! `atl validate` and `atl run --ir` through [`atl_cli::run`] (in-process): the report
//! of a lowered kernel (every obligation proved, still "not validated", exit 1), an
//! edited kernel text rejected with a counterexample, malformed texts answered with
//! diagnostics (never a panic), a kernel of another definition refused, and a printed
//! kernel run from its text agreeing with the interpreter; a last column tile summed
//! without the guard that zeroes only lanes never stored, validated, and the same guard
//! dropped where it zeroes stored lanes, rejected.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::{EXIT_OK, EXIT_USER};
use common::atl;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn path(rel: &str) -> String {
    root().join(rel).display().to_string()
}

/// A scratch file holding `text`, in a directory of this test process.
fn scratch(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("atl-validate-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(name);
    std::fs::write(&file, text).expect("write");
    file.display().to_string()
}

/// `atl emit --ir` of a definition of the matmul example.
fn printed_kernel(def: &str) -> String {
    let (code, out, err) = atl(&[
        "emit",
        &path("examples/matmul/matmul.atl"),
        "--def",
        def,
        "--ir",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    out
}

#[test]
fn validate_prints_proved_obligations_and_exits_0_validated() {
    let (code, out, err) = atl(&[
        "validate",
        &path("examples/matmul/matmul.atl"),
        "--def",
        "tiled",
    ]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("kernel tiled:"), "{out}");
    assert!(out.contains("0 refuted, 0 unknown"), "{out}");
    assert!(out.contains("  proved   bounds of load"), "{out}");
    assert!(
        out.contains("  proved   value: the element store #0"),
        "{out}"
    );
    assert!(out.contains("verdict: validated"), "{out}");
}

#[test]
fn a_kernel_wrong_only_at_large_sizes_is_not_validated() {
    // Summing only the first 30 terms is right for every K <= 30, which is all a run
    // at small sizes can see: the value obligation must still not be proved.
    let text = printed_kernel("tiled");
    let edited = text.replacen("for k in 0..K {", "for k in 0..min(K, 30) {", 1);
    assert_ne!(edited, text);
    let ir = scratch("tiled_min.ir", &edited);
    let file = path("examples/matmul/matmul.atl");
    let (code, out, err) = atl(&["validate", &file, "--def", "tiled", "--ir", &ir]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(out.contains("verdict: not validated"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("  unknown: ") && l.contains("value: the element")),
        "{out}"
    );
    assert!(err.contains("is not validated"), "{err}");
}

#[test]
fn a_wrong_initial_value_is_rejected_with_a_wrong_result() {
    let text = printed_kernel("tiled");
    let edited = text.replacen("scalar acc = 0", "scalar acc = 1", 1);
    assert_ne!(edited, text);
    let ir = scratch("tiled_init.ir", &edited);
    let file = path("examples/matmul/matmul.atl");
    let (code, out, err) = atl(&["validate", &file, "--def", "tiled", "--ir", &ir]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(out.contains("verdict: rejected"), "{out}");
    // The first size tried, every size 1: out[0, 0] = 1 + A[0,0]*B[0,0].
    assert!(
        out.contains("a wrong result at sizes K=1,M=1,N=1 (inputs random:1000): element [0, 0]"),
        "{out}"
    );
    assert!(err.contains("computes a wrong result"), "{err}");
}

#[test]
fn validate_of_the_printed_kernel_matches_validate_of_the_definition() {
    let text = printed_kernel("tiled");
    let ir = scratch("tiled.ir", &text);
    let file = path("examples/matmul/matmul.atl");
    let (code, from_text, err) = atl(&["validate", &file, "--def", "tiled", "--ir", &ir]);
    assert_eq!(code, EXIT_OK, "{err}");
    let (_, lowered, _) = atl(&["validate", &file, "--def", "tiled"]);
    // The same obligations and verdicts, up to the timing-free report.
    assert_eq!(from_text, lowered);
}

#[test]
fn an_edited_loop_bound_is_rejected_with_a_counterexample() {
    let text = printed_kernel("tiled");
    let edited = text.replacen("for k in 0..K {", "for k in 0..K + 1 {", 1);
    assert_ne!(edited, text, "the k loop is in the printed kernel:\n{text}");
    let ir = scratch("tiled_bound.ir", &edited);
    let (code, out, err) = atl(&[
        "validate",
        &path("examples/matmul/matmul.atl"),
        "--def",
        "tiled",
        "--ir",
        &ir,
    ]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(out.contains("verdict: rejected"), "{out}");
    assert!(out.contains("counterexample:"), "{out}");
    assert!(out.contains("k=1") || out.contains("k = 1"), "{out}");
    assert!(err.contains("is rejected"), "{err}");
}

#[test]
fn malformed_kernel_texts_give_diagnostics_with_spans() {
    let text = printed_kernel("matmul");
    let file = path("examples/matmul/matmul.atl");
    let cases = [
        // A cut in the middle of an index expression.
        text[..text.find("requires").unwrap() + "requires M >=".len()].to_string(),
        // An unknown character.
        text.replacen("for", "for $", 1),
        // A loop without its origin.
        text.replacen("# gen", "# parallel", 1),
        // Target arithmetic in a coordinate.
        text.replacen("@ (i,", "@ (floordiv(i, 1),", 1),
        // A source expression that does not resolve.
        text.replacen("source: ", "source: nosuchtensor + ", 1),
        String::new(),
    ];
    for (k, bad) in cases.iter().enumerate() {
        let ir = scratch(&format!("bad{k}.ir"), bad);
        let (code, out, err) = atl(&["validate", &file, "--def", "matmul", "--ir", &ir]);
        assert_eq!(code, EXIT_USER, "case {k}: {out}{err}\n{bad}");
        assert!(err.contains("[E0"), "case {k}: no diagnostic code: {err}");
        // ariadne's rendering of a span: `╭─[ FILE:LINE:COLUMN ]`.
        assert!(
            err.contains(&format!("bad{k}.ir:")),
            "case {k}: no span: {err}"
        );
        assert!(
            !out.contains("verdict"),
            "case {k}: validated anyway: {out}"
        );
    }
}

#[test]
fn a_kernel_of_another_definition_is_refused() {
    let text = printed_kernel("matmul").replacen("k < K", "k < K - 1", 1);
    let ir = scratch("other_source.ir", &text);
    let (code, out, err) = atl(&[
        "validate",
        &path("examples/matmul/matmul.atl"),
        "--def",
        "matmul",
        "--ir",
        &ir,
    ]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(err.contains("E0943"), "{err}");
    assert!(err.contains("normalized source"), "{err}");
}

#[test]
fn run_ir_runs_a_printed_kernel_and_agrees_with_the_interpreter() {
    let ir = scratch("tiled_run.ir", &printed_kernel("tiled"));
    let (code, out, err) = atl(&[
        "run",
        &path("examples/matmul/matmul.atl"),
        "--def",
        "tiled",
        "--ir",
        &ir,
        "--sizes",
        "M=11,N=9,K=4",
        "--dtype",
        "f64",
    ]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("output shape [11, 9]"), "{out}");
}

#[test]
fn run_ir_refuses_an_out_of_bounds_kernel_before_compiling_it() {
    let text = printed_kernel("tiled").replacen("for k in 0..K {", "for k in 0..K + 1 {", 1);
    let ir = scratch("tiled_oob.ir", &text);
    let (code, out, err) = atl(&[
        "run",
        &path("examples/matmul/matmul.atl"),
        "--def",
        "tiled",
        "--ir",
        &ir,
        "--sizes",
        "M=5,N=9,K=3",
    ]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    // The validator refuses it first (the bounds of the loads of A and B).
    assert!(err.contains("E0951"), "{err}");
    assert!(err.contains("was not used"), "{err}");
    assert!(!out.contains("output shape"), "{out}");
    // Unvalidated, the checking interpreter still refuses it before any C runs.
    let (code, out, err) = atl(&[
        "run",
        &path("examples/matmul/matmul.atl"),
        "--def",
        "tiled",
        "--ir",
        &ir,
        "--sizes",
        "M=5,N=9,K=3",
        "--no-validate",
    ]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(err.contains("it is not compiled"), "{err}");
    assert!(!out.contains("output shape"), "{out}");
}

#[test]
fn run_refuses_a_kernel_it_cannot_validate_unless_no_validate() {
    // Right for every K <= 30 (so at the sizes run here), not validated.
    let text = printed_kernel("tiled").replacen("for k in 0..K {", "for k in 0..min(K, 30) {", 1);
    let ir = scratch("tiled_capped.ir", &text);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "examples/matmul/matmul.atl",
            "--def",
            "tiled",
            "--ir",
            &ir,
            "--sizes",
            "M=5,N=9,K=3",
        ];
        args.extend_from_slice(extra);
        let file = path(args[1]);
        args[1] = &file;
        atl(&args)
    };
    let (code, out, err) = run(&[]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(err.contains("E0950"), "{err}");
    assert!(err.contains("is not validated"), "{err}");
    assert!(!out.contains("output shape"), "{out}");
    let (code, out, err) = run(&["--no-validate"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("output shape [5, 9]"), "{out}");
}

#[test]
fn emit_no_validate_marks_the_files_and_explain_shows_the_obligations() {
    let file = path("examples/matmul/matmul.atl");
    let dir = std::env::temp_dir().join(format!("atl-novalidate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("k.c");
    let h = dir.join("k.h");
    let (code, out, err) = atl(&[
        "emit",
        &file,
        "--def",
        "tiled",
        "-o",
        c.to_str().unwrap(),
        "--header",
        h.to_str().unwrap(),
        "--no-validate",
    ]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    let source = std::fs::read_to_string(&c).unwrap();
    let header = std::fs::read_to_string(&h).unwrap();
    assert!(source.starts_with("/* NOT VALIDATED"), "{source}");
    assert!(header.starts_with("/* NOT VALIDATED"), "{header}");
    // Validated (the default): no such note, and --explain shows the obligations.
    let (code, out, err) = atl(&["emit", &file, "--def", "tiled", "--explain"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(!out.contains("NOT VALIDATED"), "{out}");
    assert!(err.contains("verdict: validated"), "{err}");
    assert!(err.contains("proved   value: the element"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- issue 28: overflow and C names are refusals with their own codes ----------------

#[test]
fn a_kernel_whose_index_arithmetic_overflows_is_refused_with_e0938() {
    // The reproducer of issue 28: the load is evaluated whatever the guard (a blend),
    // and `i * 2^62` overflows from i = 2. Lowering refuses it, naming the expression.
    let file = scratch(
        "overflow.atl",
        "size n\ninput f : [n]\ndef g = gen i < n: [i < 2] * f[(i * 4611686018427387904) % n]\n",
    );
    for command in ["emit", "validate"] {
        let (code, out, err) = atl(&[command, &file, "--def", "g"]);
        assert_eq!(code, EXIT_USER, "{command}: {out}{err}");
        assert!(err.contains("E0938"), "{command}: {err}");
        assert!(err.contains("4611686018427387904 * i"), "{command}: {err}");
        assert!(!err.contains("E0951"), "{command}: {err}");
    }
}

#[test]
fn an_edited_kernel_that_overflows_is_refused_with_e0938_by_the_validator() {
    // The same load in the kernel of a plain copy: lowering had nothing to refuse, the
    // validator finds the overflow (with a counterexample) — not a lowering bug.
    let program = scratch(
        "copy.atl",
        "size n\ninput f : [n]\ndef g = gen i < n: f[i]\n",
    );
    let (code, printed, err) = atl(&["emit", &program, "--def", "g", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let text = printed.replacen(
        "f[i @ (i)]",
        "f[i * 4611686018427387904 / 4611686018427387904 @ (i)]",
        1,
    );
    assert_ne!(text, printed, "{printed}");
    let ir = scratch("copy_overflow.ir", &text);
    let (code, out, err) = atl(&["run", &program, "--def", "g", "--ir", &ir, "--sizes", "n=4"]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(err.contains("E0938"), "{err}");
    assert!(err.contains("leaves int64_t at"), "{err}");
}

#[test]
fn a_program_name_c_reserves_is_refused_with_e0944() {
    let file = scratch(
        "keyword.atl",
        "size n\ninput int : [n]\ndef g = gen i < n: int[i] * 2\n",
    );
    let (code, out, err) = atl(&["emit", &file, "--def", "g"]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(err.contains("E0944"), "{err}");
    assert!(err.contains("the input `int` is a C keyword"), "{err}");
}

/// A matmul with its reduction blocked (BLAS's `kc`): the block loop outermost, each
/// block's register tile accumulated from zero and added into the output, the last
/// block's loop bounded by `min(256, K - 256 * ko)`.
const K_BLOCKED: &str = "size M, N, K
input A : [M, K]
input B : [K, N]
def matmul = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]
derive k_blocked from matmul {
  split k by 256 into ko, ki
  reorder ko, i, j, ki
  tile i, j by 6, 16 into io, jt, ii, jl
  simpl
  reorder ko, io, jt, ki, ii, jl
  partition io
  partition jt
}
";

#[test]
fn a_k_blocked_matmul_is_validated_and_its_edits_are_not() {
    let file = scratch("k_blocked.atl", K_BLOCKED);
    let (code, text, err) = atl(&["emit", &file, "--def", "k_blocked", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // The block's tile, then its sum added into the output; the last block bounded.
    assert!(
        text.contains("for ki in 0..min(256, K - 256 * ko) {"),
        "{text}"
    );
    assert!(text.contains("] += acc["), "{text}");
    let (code, out, err) = atl(&["validate", &file, "--def", "k_blocked"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("0 refuted, 0 unknown"), "{out}");
    // Each edit below changes the kernel's result for some sizes: none is validated.
    for (from, to) in [
        // The last block one term short.
        ("min(256, K - 256 * ko)", "min(256, K - 256 * ko - 1)"),
        // Every block after the first overwrites the ones before.
        ("] += acc[", "] = acc["),
        // The blocks' terms shifted by one.
        (
            "A[K * ii + 6 * (K * io) + ki + 256 * ko",
            "A[K * ii + 6 * (K * io) + ki + 255 * ko",
        ),
    ] {
        let edited = text.replacen(from, to, 1);
        assert_ne!(edited, text, "`{from}` is not in the kernel:\n{text}");
        let ir = scratch("k_blocked_edited.ir", &edited);
        let (code, out, err) = atl(&["validate", &file, "--def", "k_blocked", "--ir", &ir]);
        assert_eq!(code, EXIT_USER, "{from} => {to}: {out}{err}");
        assert!(!out.contains("verdict: validated"), "{from} => {to}: {out}");
    }
}

/// The output's shape is compared with the source's under the kernel's preconditions,
/// as every other obligation is: lowering folds `min(n, 3)` to 3 under `assume n >= 3`,
/// and the validator once refuted that with `n = 2`, a size the kernel refuses (found by
/// the soundness fuzzer, seed 33, case 546).
#[test]
fn an_output_shape_folded_under_an_assume_is_validated() {
    let file = scratch(
        "assume_shape.atl",
        "size n\nassume n >= 3\n\
         def a = ((let u1 = (gen i < 1: 1.0) in u1) ++ flatten(split(2, (gen l < min(n, 3): 1.0))))\n",
    );
    let (code, out, err) = atl(&["validate", &file, "--def", "a"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("verdict: validated"), "{out}");
}

/// A matmul with `B` packed in panels of `width` columns and tiled `rows` x `width`,
/// each product under `guard` (`true` for none).
fn packed_tile(width: u32, rows: u32, guard: &str) -> String {
    format!(
        "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\n\
         def mm = gen i < M, j < N: sum k < K: [{guard}] * (A[i, k] * B[k, j])\n\n\
         derive fast from mm {{\n  pack B by {width} into Bp\n  \
         tile i, j by {rows}, {width} into it, jt, ir, jr\n  simpl\n  \
         reorder it, jt, k, ir, jr\n  partition it\n  partition jt\n}}\n"
    )
}

#[test]
fn a_last_column_tiles_lanes_past_the_extent_are_summed_without_a_guard_and_validated() {
    // The packed panels hold zeros past N, so every read of the last column tile is in
    // bounds, and its copy stores no lane past N: lowering sums those lanes without
    // the guard (no blend), and the kernel is validated and agrees with the
    // interpreter at sizes with ragged tiles in both dimensions.
    for (width, rows) in [(8, 2), (16, 3), (32, 4)] {
        let file = scratch(
            &format!("packed_{width}_{rows}.atl"),
            &packed_tile(width, rows, "true"),
        );
        let (code, ir, err) = atl(&["emit", &file, "--def", "fast", "--ir"]);
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(
            !ir.contains("blend("),
            "{width} x {rows}: a guard is left:\n{ir}"
        );
        let (code, out, err) = atl(&["validate", &file, "--def", "fast"]);
        assert_eq!(code, EXIT_OK, "{width} x {rows}: {out}{err}");
        for sizes in [
            "M=7,N=13,K=5",
            "M=1,N=1,K=1",
            &format!("M={rows},N={width},K=2"),
        ] {
            let (code, out, err) = atl(&["run", &file, "--def", "fast", "--sizes", sizes]);
            assert_eq!(code, EXIT_OK, "{width} x {rows} at {sizes}: {out}{err}");
        }
    }
}

#[test]
fn a_guard_that_zeroes_stored_lanes_stays_and_a_kernel_without_it_is_rejected() {
    // `[j + 1 < N]` zeroes the last column, which the copy stores: the guard is not
    // implied where the tile is read, so it stays a blend. Dropped by hand from the
    // last column tile (what a wrong lowering would do), the validator rejects the
    // kernel with a wrong result.
    let file = scratch("packed_guard.atl", &packed_tile(8, 2, "j + 1 < N"));
    let (code, ir, err) = atl(&["emit", &file, "--def", "fast", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let last = "blend(jr2 + 8 * jt2 + 1 < N, ";
    assert!(ir.contains(last), "{ir}");
    let (code, out, err) = atl(&["validate", &file, "--def", "fast"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    // `blend(c, v)` becomes `(v)`.
    let edited = ir.replacen(last, "(", 1);
    let mutant = scratch("packed_guard_dropped.ir", &edited);
    let (code, out, err) = atl(&["validate", &file, "--def", "fast", "--ir", &mutant]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(out.contains("verdict: rejected"), "{out}");
    assert!(out.contains("wrong result"), "{out}");
}

/// A split of a split's tile loop (`split i by 8`, then `split io by 2`): the store's
/// position `ii + 8 * io1x + 16 * io2` has three digits, and coverage needs the
/// iteration writing each element; the validator solves them one digit at a time
/// (before, it proposed none and the kernel was not validated). Edits that skip
/// elements are not validated.
#[test]
fn a_split_of_a_tile_loop_is_validated_and_its_edits_are_not() {
    let file = scratch(
        "nested_split.atl",
        "size n\ninput x : [n]\ninput y : [n]\ndef axpy = gen i < n: 2.0 * x[i] + y[i]\n\
         derive fast from axpy {\n  split i by 8 into io, ii\n  split io by 2 into io2, io1x\n}\n",
    );
    let (code, out, err) = atl(&["validate", &file, "--def", "fast"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("0 refuted, 0 unknown"), "{out}");
    let (code, text, err) = atl(&["emit", &file, "--def", "fast", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    for (from, to) in [
        // The second tile of each pair skipped.
        ("for io1x in 0..2 {", "for io1x in 0..1 {"),
        // The last lane of each tile skipped.
        ("for ii in 0..8 {", "for ii in 0..7 {"),
    ] {
        let edited = text.replacen(from, to, 1);
        assert_ne!(edited, text, "`{from}` is not in the kernel:\n{text}");
        let ir = scratch("nested_split_edited.ir", &edited);
        let (code, out, err) = atl(&["validate", &file, "--def", "fast", "--ir", &ir]);
        assert_eq!(code, EXIT_USER, "{from} => {to}: {out}{err}");
        assert!(!out.contains("verdict: validated"), "{from} => {to}: {out}");
    }
}
