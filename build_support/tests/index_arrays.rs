//! Index arrays through the Rust bindings: a compressed-row product (`pos`, `crd` as
//! `&[i32]`) is generated with `Kernel::generate`, its C compiled with `cc` into a
//! static library and a small program using the bindings compiled with `rustc` and
//! run. Its product is compared with the dense product of the matrix the arrays
//! encode, computed here; a decreasing `pos` comes back as `CallError::IndexArray`
//! naming `pos` (the kernel's entry check), a `crd` of the wrong length as
//! `CallError::Length`. The C is compiled by hand rather than by `Kernel::compile`,
//! whose `cc` build reads the environment Cargo gives only build scripts (`TARGET`,
//! `HOST`); that path is exercised by `examples/integration/rust`.

use std::path::Path;
use std::process::Command;

use atl_build::{Dtype, Kernel};

const SPMV: &str = "size n, m, nnz
input pos : int[n + 1] in 0..nnz + 1 sorted
input crd : int[nnz] in 0..m
input vals : [nnz]
input v : [m]
def spmv = gen i < n: sum p in pos[i]..pos[i + 1]: vals[p] * v[crd[p]]
";

/// A 4 x 5 matrix with an empty row and a full one, in compressed rows.
const POS: [i32; 5] = [0, 2, 2, 7, 9];
const CRD: [i32; 9] = [1, 4, 0, 1, 2, 3, 4, 0, 3];
const VALS: [f64; 9] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
const V: [f64; 5] = [1.0, -2.0, 4.0, 0.5, 3.0];

/// The program that calls the bindings (`include!`d from `bindings`): the product,
/// then the two refused calls, one line each.
fn program(bindings: &Path) -> String {
    format!(
        r#"include!({bindings:?});

fn main() {{
    let (pos, crd, vals, v) = ({POS:?}, {CRD:?}, {VALS:?}, {V:?});
    let mut out = [0.0f64; 4];
    ia_spmv(4, 5, 9, &pos, &crd, &vals, &v, &mut out).expect("a valid call");
    println!("product {{:?}}", out);
    let decreasing = [0, 2, 1, 7, 9];
    let mut untouched = [-1.0f64; 4];
    match ia_spmv(4, 5, 9, &decreasing, &crd, &vals, &v, &mut untouched) {{
        Err(e @ ia_spmv::CallError::IndexArray {{ .. }}) => {{
            println!("refused {{e}} | {{e:?}} | {{:?}}", untouched)
        }}
        other => panic!("expected IndexArray, got {{other:?}}"),
    }}
    match ia_spmv(4, 5, 9, &pos, &crd[..8], &vals, &v, &mut out) {{
        Err(e) => println!("length {{e:?}}"),
        Ok(()) => panic!("a short crd was accepted"),
    }}
}}
"#
    )
}

fn run(cmd: &mut Command) -> String {
    let what = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_bindings_pass_index_arrays_and_report_a_broken_declaration() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("spmv.atl");
    std::fs::write(&file, SPMV).expect("write the program");
    let built = Kernel::new(&file)
        .name("ia_spmv")
        .dtype(Dtype::F64)
        .out_dir(dir.path())
        .generate()
        .expect("a kernel over index arrays has bindings");
    let rs = std::fs::read_to_string(&built.bindings).expect("the bindings");
    assert!(
        rs.contains(
            "pub fn call(n: i64, m: i64, nnz: i64, pos: &[i32], crd: &[i32], vals: &[f64], v: &[f64], out: &mut [f64])"
        ),
        "{rs}"
    );
    assert!(rs.contains("pos: *const i32, crd: *const i32"), "{rs}");

    // The C, as a static library.
    let object = dir.path().join("ia_spmv.o");
    run(
        Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()))
            .args(["-O2", "-std=c99", "-c"])
            .arg(&built.c_file)
            .arg("-o")
            .arg(&object),
    );
    run(Command::new("ar")
        .arg("rcs")
        .arg(dir.path().join("libia_spmv.a"))
        .arg(&object));
    // The program, against it.
    let main = dir.path().join("main.rs");
    std::fs::write(&main, program(&built.bindings)).expect("write main.rs");
    let exe = dir.path().join("main");
    run(
        Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
            .args(["--edition", "2024", "-O", "-L"])
            .arg(format!("native={}", dir.path().display()))
            .args(["-l", "static=ia_spmv"])
            .arg(&main)
            .arg("-o")
            .arg(&exe),
    );
    let stdout = run(&mut Command::new(&exe));

    // The dense matrix the arrays encode, times V.
    let mut dense = [[0.0f64; 5]; 4];
    for i in 0..4 {
        for p in POS[i]..POS[i + 1] {
            let p = usize::try_from(p).expect("p");
            dense[i][usize::try_from(CRD[p]).expect("column")] += VALS[p];
        }
    }
    let expected: Vec<f64> = dense
        .iter()
        .map(|row| row.iter().zip(V).map(|(a, b)| a * b).sum())
        .collect();
    assert_eq!(expected, [4.0, 0.0, 39.0, 12.5], "the hand product");
    let product = format!("product {expected:?}");
    assert!(stdout.contains(&product), "{product} in {stdout}");

    // The kernel's entry check of `pos` (status 4: after the three sizes' checks),
    // named with its declaration; the output was not written.
    let refused = stdout
        .lines()
        .find(|l| l.starts_with("refused "))
        .unwrap_or_default();
    for needle in [
        "the index array `pos` breaks its declaration `0 <= pos[k] < nnz + 1, non-decreasing`",
        "IndexArray { argument: \"pos\", declaration: \"0 <= pos[k] < nnz + 1, non-decreasing\", status: 4 }",
        "[-1.0, -1.0, -1.0, -1.0]",
    ] {
        assert!(refused.contains(needle), "{needle} in {stdout}");
    }
    assert!(
        stdout.contains("length Length { argument: \"crd\", expected: 9, actual: 8 }"),
        "{stdout}"
    );
}
