//! The sliding window (`store_root x`, `store_at x at yo` after `compute_at`, issue
//! 32): the stage's buffer outlives the iterations of the loop that computes it, each
//! iteration computes only the rows the earlier ones did not, and the translation
//! validator proves the kernel (the rows an iteration reads were written by an earlier
//! one). Kernels edited to compute too few rows, to write them at the wrong row, to
//! read a row before it is written, or to run the iterations in parallel are rejected;
//! requests that describe no sliding window are refused with the reason. A folded
//! window (`fold_storage x by F`: rows `F` apart in one place) is validated when no
//! row is overwritten before it is read, and rejected when a fold is too small.

mod common;

use atl_cli::{EXIT_OK, EXIT_USER};
use common::atl;

/// A scratch file holding `text`, in a directory of this test process.
fn scratch(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("atl-sliding-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(name);
    std::fs::write(&file, text).expect("write");
    file.display().to_string()
}

/// The kernel's maximum absolute error against the interpreter, from `atl run`.
fn run_error(file: &str, def: &str, sizes: &str) -> f64 {
    let (code, out, err) = atl(&["run", file, "--def", def, "--sizes", sizes]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("max error vs interpreter"))
        .unwrap_or_else(|| panic!("no error line: {out}"));
    line.split_whitespace()
        .nth(4)
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("unreadable: {line}"))
}

fn blur_example() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/blur/blur.atl")
        .display()
        .to_string()
}

const BLUR: &str = "size H, W
input img : [H, W]

def blur =
  let bx =
      gen y < H, x < W:
        [0 <= x - 1] * img[y, x - 1] + img[y, x] + [x + 1 < W] * img[y, x + 1] in
  gen y < H, x < W: [0 <= y - 1] * bx[y - 1, x] + bx[y, x] + [y + 1 < H] * bx[y + 1, x]

derive per_row_slide from blur {
  compute_at bx at y1
  store_root bx
}

derive per_row_fold from blur {
  compute_at bx at y1
  store_root bx
  fold_storage bx by 3
}

derive per_row_fold_short from blur {
  compute_at bx at y1
  store_root bx
  fold_storage bx by 2
}

derive fold_alone from blur {
  compute_at bx at y1
  fold_storage bx by 3
}

derive per_row_slide_parallel from blur {
  compute_at bx at y1
  store_root bx
  parallel y1
}
";

const SIZES: [&str; 5] = ["H=37,W=19", "H=1,W=1", "H=2,W=3", "H=32,W=5", "H=33,W=4"];

#[test]
fn strips_with_a_sliding_window_are_validated_and_agree_with_the_interpreter() {
    let file = blur_example();
    let (code, ir, err) = atl(&["emit", &file, "--def", "strips_sliding", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // One buffer per strip, 32 rows and the two above them; the strips in parallel,
    // the rows of each in order.
    assert!(
        ir.contains("for yo in 0..(H + 31) / 32 {  # gen, parallel"),
        "{ir}"
    );
    assert!(ir.contains("alloc bx[34, W]"), "{ir}");
    assert!(ir.contains("for yi in 0..32 {  # gen\n"), "{ir}");
    // Each row computes one new row of `bx`, at its row in the strip plus two.
    assert!(ir.contains("@ (yi + 2, x)"), "{ir}");
    let (code, out, err) = atl(&["validate", &file, "--def", "strips_sliding"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("verdict: validated"), "{out}");
    for sizes in SIZES {
        let e = run_error(&file, "strips_sliding", sizes);
        assert!(e < 1e-4, "{sizes}: {e}");
    }
}

#[test]
fn a_stage_stored_at_the_root_slides_along_the_outer_loop() {
    let file = scratch("blur.atl", BLUR);
    let (code, ir, err) = atl(&["emit", &file, "--def", "per_row_slide", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // A row for every row a window has: H + 2; the loop runs in order.
    assert!(ir.contains("alloc bx[H + 2, W]"), "{ir}");
    assert!(ir.contains("for y1 in 0..H {  # gen\n"), "{ir}");
    for sizes in SIZES {
        let e = run_error(&file, "per_row_slide", sizes);
        assert!(e < 1e-4, "{sizes}: {e}");
    }
    // Asked to run in parallel, it is refused: the iterations depend on each other.
    let (code, _, err) = atl(&["emit", &file, "--def", "per_row_slide_parallel"]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(
        err.contains("E0914") && err.contains("loop `y1` is `parallel`"),
        "{err}"
    );
}

/// `atl validate --ir` of an edited kernel: the verdict line and the output.
fn validate_edited(file: &str, def: &str, ir: &str, name: &str) -> (i32, String) {
    let edited = scratch(name, ir);
    let (code, out, err) = atl(&["validate", file, "--def", def, "--ir", &edited]);
    (code, format!("{out}{err}"))
}

#[test]
fn edited_sliding_kernels_are_rejected() {
    let file = scratch("blur_edits.atl", BLUR);
    let (code, ir, err) = atl(&["emit", &file, "--def", "per_row_slide", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let (code, out) = validate_edited(&file, "per_row_slide", &ir, "same.ir");
    assert_eq!(code, EXIT_OK, "the kernel as emitted: {out}");
    let edit = |from: &str, to: &str| -> String {
        assert!(ir.contains(from), "`{from}` not in\n{ir}");
        ir.replacen(from, to, 1)
    };
    // The first window's first rows: one instead of two.
    let too_few = edit("for w1 in 0..2 {", "for w1 in 0..1 {");
    // Each new row written one row too high (over the row the iteration reads).
    let wrong_row = edit(
        "bx[2 * W + W * y1 + x] = (0 <= x - 1 ? img[W + W * y1 + x - 1 @ (y1 + 1, x - 1)] : 0) + img[W + W * y1 + x @ (y1 + 1, x)] + (x + 1 < W ? img[W + W * y1 + x + 1 @ (y1 + 1, x + 1)] : 0)  @ (y1 + 2, x)",
        "bx[W + W * y1 + x] = (0 <= x - 1 ? img[W + W * y1 + x - 1 @ (y1 + 1, x - 1)] : 0) + img[W + W * y1 + x @ (y1 + 1, x)] + (x + 1 < W ? img[W + W * y1 + x + 1 @ (y1 + 1, x + 1)] : 0)  @ (y1 + 1, x)",
    );
    // The rows run in parallel: one iteration reads what another writes.
    let parallel = edit(
        "for y1 in 0..H {  # gen\n",
        "for y1 in 0..H {  # gen, parallel\n",
    );
    for (name, text, expect) in [
        ("too_few.ir", too_few, "initialised before"),
        ("wrong_row.ir", wrong_row, "no double write"),
        ("parallel.ir", parallel, "no race in loop `y1`"),
    ] {
        let (code, out) = validate_edited(&file, "per_row_slide", &text, name);
        assert_ne!(code, EXIT_OK, "{name} validated:\n{out}");
        assert!(out.contains("verdict: rejected"), "{name}: {out}");
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with("refuted") && l.contains(expect)),
            "{name}: no refuted `{expect}`:\n{out}"
        );
    }
}

/// The row an iteration computes is read before it is written: the consumer moved
/// before the producer in the loop's body. The row read at `y1 + 2` was written by no
/// earlier iteration, and by this one only after the read: its initialisation must not
/// be proved (an iteration's own later statements are not earlier iterations).
#[test]
fn a_row_read_before_its_iteration_writes_it_is_not_initialised() {
    let file = scratch("blur_order.atl", BLUR);
    let (code, ir, err) = atl(&["emit", &file, "--def", "per_row_slide", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let lines: Vec<&str> = ir.lines().collect();
    let producer = lines
        .iter()
        .position(|l| l.trim_start().starts_with("if 0 <= y1 + 1 && y1 + 1 < H {"))
        .expect("the producer");
    let consumer = lines
        .iter()
        .position(|l| l.trim_start().starts_with("for x1 in 0..W {"))
        .expect("the consumer");
    assert!(producer < consumer);
    let mut reordered: Vec<&str> = lines[..producer].to_vec();
    reordered.extend(&lines[consumer..consumer + 3]);
    reordered.extend(&lines[producer..consumer]);
    reordered.extend(&lines[consumer + 3..]);
    let (code, out) = validate_edited(
        &file,
        "per_row_slide",
        &(reordered.join("\n") + "\n"),
        "order.ir",
    );
    assert_ne!(code, EXIT_OK, "validated:\n{out}");
    let init = out
        .lines()
        .find(|l| l.contains("initialised before") && l.contains("@ (y1 + 2, x1)"))
        .unwrap_or_else(|| panic!("no such obligation:\n{out}"));
    assert!(!init.trim_start().starts_with("proved"), "{init}");
}

#[test]
fn requests_that_describe_no_sliding_window_are_refused() {
    let file = scratch(
        "still.atl",
        "size H, W
input img : [H, W]
input v : [W]

def still =
  let c = gen x < W: v[x] * v[x] in
  gen y < H, x1 < W: c[x1] + img[y, x1]

derive still_slide from still {
  compute_at c at y
  store_root c
}
",
    );
    let (code, _, err) = atl(&["emit", &file, "--def", "still_slide"]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("E0914"), "{err}");
    assert!(err.contains("`store_root c` cannot slide"), "{err}");
}

#[test]
fn a_folded_window_keeps_three_rows_and_is_validated() {
    let file = scratch("blur_fold.atl", BLUR);
    let (code, ir, err) = atl(&["emit", &file, "--def", "per_row_fold", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // The rows of all the windows, stored modulo 3: three rows of memory.
    assert!(
        ir.contains("alloc bx[H + 2, W] fold 3 = uninit[3 * W]"),
        "{ir}"
    );
    assert!(ir.contains("bx[(y1 + 2) % 3 * W + x]"), "{ir}");
    let (code, out, err) = atl(&["validate", &file, "--def", "per_row_fold"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("proved   folding:"), "{out}");
    for sizes in SIZES {
        let e = run_error(&file, "per_row_fold", sizes);
        assert!(e < 1e-4, "{sizes}: {e}");
    }
    // Fewer rows than a window reads: refused by lowering, with the numbers.
    let (code, _, err) = atl(&["emit", &file, "--def", "per_row_fold_short"]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(
        err.contains("E0914") && err.contains("a fold of 2 rows is less than the 3 rows"),
        "{err}"
    );
    // A buffer allocated per iteration is not folded.
    let (code, _, err) = atl(&["emit", &file, "--def", "fold_alone"]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("is folded but not stored apart"), "{err}");
}

#[test]
fn edited_folded_kernels_are_rejected() {
    let file = scratch("blur_fold_edits.atl", BLUR);
    let (code, ir, err) = atl(&["emit", &file, "--def", "per_row_fold", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // Folded by 2 throughout (length and indices consistent): a row is overwritten by
    // the row two below before the consumer reads it. Only the folding obligations
    // see it: every access is in bounds and flattens right, and the values are right
    // as if unfolded.
    let by_two = ir
        .replace("fold 3 = uninit[3 * W]", "fold 2 = uninit[2 * W]")
        .replace("% 3", "% 2");
    // A new row stored one row of memory off.
    let off = ir.replacen(
        "bx[(y1 + 2) % 3 * W + x] =",
        "bx[(y1 + 3) % 3 * W + x] =",
        1,
    );
    // The rows in parallel: two iterations write the same memory.
    let parallel = ir.replacen(
        "for y1 in 0..H {  # gen\n",
        "for y1 in 0..H {  # gen, parallel\n",
        1,
    );
    assert!(by_two != ir && off != ir && parallel != ir);
    for (name, text, expect) in [
        ("by_two.ir", by_two, "folding:"),
        ("off.ir", off, "flattening of"),
        ("parallel.ir", parallel, "no race in loop `y1`"),
    ] {
        let (code, out) = validate_edited(&file, "per_row_fold", &text, name);
        assert_ne!(code, EXIT_OK, "{name} validated:\n{out}");
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with("refuted") && l.contains(expect)),
            "{name}: no refuted `{expect}`:\n{out}"
        );
    }
}
