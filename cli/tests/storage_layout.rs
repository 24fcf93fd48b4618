//! Inputs declared with a storage layout (`input A : [M, K] layout (M, K):(1, M)`,
//! issue 33): the kernel receives the input in its storage order and reads it in
//! place; it is validated, agrees with the interpreter (which reads the program's
//! coordinates), and documents where each element is; a kernel that reads the input
//! in the program's row-major order instead is rejected, even where the shapes agree.

mod common;

use atl_cli::{EXIT_OK, EXIT_USER};
use common::atl;

/// A scratch file holding `text`, in a directory of this test process.
fn scratch(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("atl-storage-layout-{}", std::process::id()));
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

/// The column-major example (`examples/colmajor`).
fn column_major() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/colmajor/colmajor.atl")
        .display()
        .to_string()
}

#[test]
fn a_column_major_operand_is_read_in_place_and_validated() {
    let file = column_major();
    let (code, ir, err) = atl(&["emit", &file, "--def", "fast", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // Received as the [K, M] array of its columns, read at `M * k + i`.
    assert!(ir.contains("A: [K, M] order (1, 0)"), "{ir}");
    assert!(
        ir.contains("A[M * k + ii + 6 * io @ (k, ii + 6 * io)]"),
        "{ir}"
    );
    let (code, out, err) = atl(&["validate", &file, "--def", "fast"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(
        out.contains("proved   the storage order of `A` is the source's"),
        "{out}"
    );
    assert!(out.contains("verdict: validated"), "{out}");
    // The header says where the program's element is.
    let (code, c, err) = atl(&["emit", &file, "--def", "fast"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        c.contains("(`layout`: the program's element (i0, i1) of [M, K] is at M * i1 + i0)"),
        "{c}"
    );
    // Ragged sizes: full and partial tiles, in both directions.
    for sizes in [
        "M=5,N=9,K=3",
        "M=12,N=32,K=1",
        "M=3,N=5,K=7",
        "M=13,N=35,K=9",
    ] {
        let e = run_error(&file, "fast", sizes);
        assert!(e < 1e-5, "{sizes}: {e}");
    }
    // The specification itself compiles with the same layout.
    assert!(run_error(&file, "colmajor", "M=6,N=4,K=5") < 1e-5);
    // And the tile on a row-major copy of `A`.
    assert!(run_error(&file, "fast_copied", "M=7,N=17,K=4") < 1e-5);
}

#[test]
fn a_three_dimensional_input_is_stored_in_the_declared_order() {
    // Channels innermost (HWC) for a [C, H, W] tensor.
    let file = scratch(
        "hwc.atl",
        "size C, H, W
input X : [C, H, W] layout (C, H, W):(1, W * C, C)
input w : [C]
def scale = gen c < C, h < H, x < W: X[c, h, x] * w[c]
def pool = gen c < C: sum h < H, x < W: X[c, h, x]
",
    );
    let (code, ir, err) = atl(&["emit", &file, "--def", "scale", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(ir.contains("X: [H, W, C] order (1, 2, 0)"), "{ir}");
    for def in ["scale", "pool"] {
        let (code, out, err) = atl(&["validate", &file, "--def", def]);
        assert_eq!(code, EXIT_OK, "{def}: {out}{err}");
        let e = run_error(&file, def, "C=3,H=4,W=5");
        assert!(e < 1e-5, "{def}: {e}");
    }
}

#[test]
fn a_kernel_reading_the_input_row_major_is_rejected_even_where_the_shapes_agree() {
    let file = scratch(
        "square.atl",
        "size N
input A : [N, N] layout (N, N):(1, N)
input x : [N]
def mv = gen i < N: sum j < N: A[i, j] * x[j]
",
    );
    let (code, ir, err) = atl(&["emit", &file, "--def", "mv", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // The kernel of a row-major `A`: the same shape, so only the storage order tells.
    let edited = ir
        .replace(" order (1, 0)", "")
        .replace("A[N * j + i @ (j, i)]", "A[N * i + j @ (i, j)]");
    assert_ne!(edited, ir, "{ir}");
    assert!(!edited.contains("order ("), "{edited}");
    let kernel = scratch("square_edited.ir", &edited);
    let (code, out, err) = atl(&["validate", &file, "--def", "mv", "--ir", &kernel]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(
        out.contains("refuted: N=1 the storage order of `A` is the source's: false"),
        "{out}"
    );
    // The storage coordinates read back in the wrong order: wrong values.
    let swapped = ir.replace("A[N * j + i @ (j, i)]", "A[N * i + j @ (i, j)]");
    assert_ne!(swapped, ir);
    let kernel = scratch("square_swapped.ir", &swapped);
    let (code, out, err) = atl(&["validate", &file, "--def", "mv", "--ir", &kernel]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(out.contains("verdict: rejected"), "{out}");
    // An output is written row-major: an order on it is a syntax error, not ignored.
    let ordered = ir.replace("-> out: [N]", "-> out: [N] order (0)");
    assert_ne!(ordered, ir);
    let kernel = scratch("square_ordered_output.ir", &ordered);
    let (code, out, err) = atl(&["validate", &file, "--def", "mv", "--ir", &kernel]);
    assert_eq!(code, EXIT_USER, "{out}{err}");
    assert!(
        err.contains("E0940") && err.contains("outputs are row-major"),
        "{err}"
    );
}
