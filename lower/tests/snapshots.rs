//! Snapshot tests of the loop IR of the pipeline, matmul, softmax and matvec examples (every definition
//! and derivation), and of the sparse products' scatters (`examples/spmv/spmv_csc.atl`,
//! `spmv_coo.atl`: one store per stored value, no loop over the rows). Review changes with `cargo insta review`; create them with
//! `INSTA_UPDATE=always`.

mod support;

fn check(example: &str) {
    check_file(example, example);
}

fn check_file(dir: &str, example: &str) {
    let ex = support::load(&support::examples_dir().join(format!("{dir}/{example}.atl")));
    // The sparse products need z3, as `atl emit` uses it: that `crd[p]` is inside its
    // array for `p` in `pos[j]..pos[j + 1]` follows from `pos`'s declaration, which the
    // fast path does not reason about (without it, the scatter stays a loop).
    let solver = if dir == "spmv" {
        atl_solver::Solver::new()
    } else {
        atl_lower::fast_solver()
    };
    for def in &ex.defs {
        let kernel =
            atl_lower::lower_def_with(&ex.program, &ex.shapes, def, &solver, &Default::default())
                .unwrap_or_else(|d| panic!("`{def}` does not lower: {d:?}"));
        insta::assert_snapshot!(
            format!("{example}__{def}"),
            atl_lower::kernel_to_string(&kernel)
        );
    }
}

#[test]
fn pipeline_ir() {
    check("pipeline");
}

#[test]
fn matmul_ir() {
    check("matmul");
}

#[test]
fn softmax_ir() {
    check("softmax");
}

#[test]
fn matvec_ir() {
    check("matvec");
}

#[test]
fn scatter_ir() {
    check_file("spmv", "spmv_csc");
    check_file("spmv", "spmv_coo");
}
