//! The Python example `examples/integration/python` (issue 21): `atl emit --python`
//! writes a module per kernel (ctypes + numpy) into a temporary directory, and
//! `python3 check_kernels.py DIR` imports both, calls them (the module compiles the C
//! on first use) and compares with numpy, exactly, at 2 threads and 1, and checks that
//! bad arrays (dtype, layout, shape, sizes, aliasing) raise before C is called.
//!
//! `python3` with numpy comes from `scripts/setup.sh`. Without numpy the test says so
//! loudly and passes, unless `ATL_REQUIRE_NUMPY` is set (CI sets it in `.ci/run`), as
//! the CMake and Rocq tests do with `ATL_REQUIRE_CMAKE` and `ATL_REQUIRE_COQ`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/integration/python")
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-integration-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs `cmd`; panics with its output unless it succeeds.
fn run(cmd: &mut Command) -> Output {
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
    out
}

/// Whether `python3 -c "import numpy"` succeeds.
fn have_numpy() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[allow(clippy::print_stdout, clippy::print_stderr)]
fn say_skipped(reason: &str) {
    println!("SKIPPED: {reason}");
    eprintln!("SKIPPED: {reason}");
}

fn emit(dir: &Path, def: &str, name: &str, dtype: &str) {
    run(Command::new(env!("CARGO_BIN_EXE_atl"))
        .arg("emit")
        .arg(project().join("kernels.atl"))
        .args(["--def", def, "--name", name, "--dtype", dtype, "--python"])
        .arg(dir));
    for ext in ["c", "h", "py"] {
        assert!(dir.join(format!("{name}.{ext}")).is_file(), "{name}.{ext}");
    }
}

#[test]
fn emit_python_writes_a_module_that_agrees_with_numpy() {
    if !have_numpy() {
        assert!(
            std::env::var_os("ATL_REQUIRE_NUMPY").is_none(),
            "ATL_REQUIRE_NUMPY is set but `python3 -c 'import numpy'` fails: run scripts/setup.sh"
        );
        say_skipped("python3 with numpy is not installed; run scripts/setup.sh to install it");
        return;
    }
    let dir = temp_dir("python");
    emit(&dir, "matvec_blocked", "py_matvec", "f32");
    emit(&dir, "rownorm", "py_rownorm", "f64");
    let out = run(Command::new("python3")
        .arg(project().join("check_kernels.py"))
        .arg(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ok: py_matvec and py_rownorm agree with numpy"),
        "{stdout}"
    );
    // The module compiled the shared objects next to itself.
    assert!(dir.join("libpy_matvec.so").is_file());
    assert!(dir.join("libpy_rownorm.so").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn python_conflicts_with_other_outputs() {
    let out = Command::new(env!("CARGO_BIN_EXE_atl"))
        .arg("emit")
        .arg(project().join("kernels.atl"))
        .args(["--python", "/tmp/x", "-o", "/tmp/x.c"])
        .output()
        .expect("atl runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn emit_python_fp_strict_compiles_without_contraction() {
    // The module compiles its C on first use; under `--fp strict` with
    // `-ffp-contract=off` (no numpy needed to read the module's text).
    let dir = temp_dir("python-strict");
    run(Command::new(env!("CARGO_BIN_EXE_atl"))
        .arg("emit")
        .arg(project().join("kernels.atl"))
        .args(["--def", "matvec", "--name", "strict_k", "--python"])
        .arg(&dir)
        .args(["--fp", "strict"]));
    let py = std::fs::read_to_string(dir.join("strict_k.py")).expect("the module");
    assert!(py.contains("\"-ffp-contract=off\""), "{py}");
    assert!(!py.contains("\"-ffp-contract=fast\""), "{py}");
    let h = std::fs::read_to_string(dir.join("strict_k.h")).expect("the header");
    assert!(h.contains("-ffp-contract=off"), "{h}");
}
