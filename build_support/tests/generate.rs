//! atl-build without a build script: `Kernel::generate` into a temporary directory
//! (the C source, the header and the bindings; no compiler), and the errors a user
//! sees — rendered diagnostics pointing into the `.atl` file, an unknown definition,
//! no `OUT_DIR`. The compiling path is exercised by `examples/integration/rust`,
//! whose build script uses `Kernel::build`.

use std::path::PathBuf;

use atl_build::{Dtype, Error, Kernel};

fn write_atl(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write the .atl file");
    path
}

const GOOD: &str =
    "size n, m\nassume n >= 2\ninput A : [n, m]\n\ndef rowsum =\n  gen i < n: sum j < m: A[i, j]\n";

#[test]
fn generate_writes_the_c_the_header_and_the_bindings() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_atl(&dir, "k.atl", GOOD);
    let built = Kernel::new(&file)
        .name("my_rowsum")
        .dtype(Dtype::F64)
        .out_dir(dir.path())
        .generate()
        .expect("the kernel builds");
    assert_eq!(built.symbol, "my_rowsum");
    assert_eq!(built.def, "rowsum");
    assert!(!built.openmp);
    assert_eq!(
        built.directives,
        vec![format!("rerun-if-changed={}", file.display())]
    );
    let c = std::fs::read_to_string(&built.c_file).expect("the C file");
    assert!(c.contains("int my_rowsum(int64_t n"), "{c}");
    assert!(c.contains("double"), "{c}");
    let h = std::fs::read_to_string(&built.header).expect("the header");
    assert!(h.contains("my_rowsum_set_threads"), "{h}");
    let rs = std::fs::read_to_string(&built.bindings).expect("the bindings");
    assert_eq!(built.bindings, dir.path().join("my_rowsum.rs"));
    for needle in [
        "pub mod my_rowsum {",
        "pub fn my_rowsum(n: i64, m: i64, A: *const f64, out: *mut f64) -> ::core::ffi::c_int;",
        "pub fn my_rowsum_set_threads(threads: ::core::ffi::c_int);",
        "pub fn call(n: i64, m: i64, A: &[f64], out: &mut [f64])",
        "pub fn my_rowsum(n: i64, m: i64, A: &[f64], out: &mut [f64])",
        // The program's assume is checked before the call.
        "condition: \"n >= 2\"",
        // The C kernel's status is checked after it: its preconditions by number
        // (`n >= 1`, `m >= 1`, the assume), a non-zero one an error.
        "const PRECONDITIONS: [&str; 3] = [\"n >= 1\", \"m >= 1\", \"n >= 2\"];",
        "return ::core::result::Result::Err(CallError::Refused { status: atl__status, condition });",
        "definition `rowsum` (validated)",
    ] {
        assert!(rs.contains(needle), "missing {needle:?} in:\n{rs}");
    }
}

#[test]
fn an_error_in_the_file_is_rendered_with_its_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Line 4: `B` is not declared.
    let file = write_atl(
        &dir,
        "bad.atl",
        "size n\ninput A : [n]\n\ndef f = gen i < n: B[i]\n",
    );
    let err = Kernel::new(&file)
        .out_dir(dir.path())
        .generate()
        .expect_err("refused");
    let Error::Atl { rendered, .. } = &err else {
        panic!("expected a diagnostic, got {err:?}");
    };
    assert!(rendered.contains("bad.atl:4:"), "{rendered}");
    assert!(rendered.contains('B'), "{rendered}");
    let text = err.to_string();
    assert!(text.contains("was refused"), "{text}");
    // Nothing was written.
    assert!(!dir.path().join("f.rs").exists());
}

#[test]
fn an_unknown_definition_names_the_others() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_atl(&dir, "k.atl", GOOD);
    let err = Kernel::new(&file)
        .def("nope")
        .out_dir(dir.path())
        .generate()
        .expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("E0606") && text.contains("rowsum"), "{text}");
}

#[test]
fn a_symbol_rust_cannot_spell_is_refused_and_keywords_are_raw() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_atl(&dir, "k.atl", GOOD);
    let err = Kernel::new(&file)
        .name("self")
        .out_dir(dir.path())
        .generate()
        .expect_err("refused");
    assert!(matches!(err, Error::Bindings(_)), "{err:?}");
    let built = Kernel::new(&file)
        .name("mod")
        .out_dir(dir.path())
        .generate()
        .expect("`mod` is a C identifier");
    let rs = std::fs::read_to_string(&built.bindings).expect("the bindings");
    assert!(rs.contains("pub mod r#mod {"), "{rs}");
}

#[test]
fn without_out_dir_there_is_an_error() {
    if std::env::var_os("OUT_DIR").is_some() {
        return;
    }
    let err = Kernel::new("k.atl").generate().expect_err("no OUT_DIR");
    assert!(matches!(err, Error::NoOutDir), "{err:?}");
}

#[test]
fn fp_strict_is_stated_in_the_header_and_fast_is_the_default() {
    // `.fp_strict()` compiles with `-ffp-contract=off` (`Kernel::build` passes the
    // flag to `cc`); what `generate` can show is the header, which says so to anyone
    // compiling the C by hand.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_atl(&dir, "k.atl", GOOD);
    let strict = Kernel::new(&file)
        .name("strict_rowsum")
        .fp_strict()
        .out_dir(dir.path())
        .generate()
        .expect("the kernel builds");
    let h = std::fs::read_to_string(&strict.header).expect("the header");
    assert!(
        h.contains("(--fp strict): compile with -ffp-contract=off"),
        "{h}"
    );
    let fast = Kernel::new(&file)
        .name("fast_rowsum")
        .out_dir(dir.path())
        .generate()
        .expect("the kernel builds");
    let h = std::fs::read_to_string(&fast.header).expect("the header");
    assert!(h.contains("(--fp fast)"), "{h}");
    assert!(!h.contains("-ffp-contract=off"), "{h}");
}
