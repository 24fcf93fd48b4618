//! `reorder` of a loop out of a split's `trunc_r(flatten(…))` (issue 20), through
//! [`atl_cli::run`] (in-process): the derived kernel lowers with the loops in the order
//! asked for (the loop IR, `atl emit --ir`), the translation validator validates it,
//! and its compiled C agrees with the interpreter where the row count is and is not a
//! multiple of the split factor.

mod common;

use atl_cli::EXIT_OK;
use common::atl;

const SOURCE: &str = "size n, m
input A : [n, m]
def s = gen y < n, x < m: A[y, x] * 2
derive b from s {
  split y by 8 into yo, yi
  reorder x, yo, yi
}
";

/// A scratch file holding `text`, in a directory of this test process.
fn scratch(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("atl-outsplit-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(name);
    std::fs::write(&file, text).expect("write");
    file.display().to_string()
}

/// The loop variables of a printed kernel's `for` lines with their indentation, in
/// order.
fn loops(kernel: &str) -> Vec<(usize, String)> {
    kernel
        .lines()
        .filter_map(|line| {
            let text = line.trim_start();
            let rest = text.strip_prefix("for ")?;
            let var = rest.split_whitespace().next()?;
            Some((line.len() - text.len(), var.to_string()))
        })
        .collect()
}

#[test]
fn the_moved_loop_is_outermost_in_the_lowered_kernel_which_validates_and_runs() {
    let file = scratch("rows.atl", SOURCE);
    let (code, out, err) = atl(&["emit", &file, "--def", "b", "--ir"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let nest = loops(&out);
    let names: Vec<&str> = nest.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(names, ["x", "yo", "yi"], "{out}");
    // Nested, not one after the other.
    assert!(nest.windows(2).all(|w| w[0].0 < w[1].0), "{out}");

    let (code, out, err) = atl(&["validate", &file, "--def", "b"]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("verdict: validated"), "{out}");

    for sizes in ["n=13,m=5", "n=8,m=1", "n=1,m=5"] {
        let (code, out, err) = atl(&["run", &file, "--def", "b", "--sizes", sizes]);
        assert_eq!(code, EXIT_OK, "{sizes}: {out}{err}");
        assert!(out.contains("max error vs interpreter"), "{sizes}: {out}");
    }
}
