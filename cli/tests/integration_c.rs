//! The example C project `examples/integration/c` (issue 21), built the two ways a
//! user would build it, each in a temporary directory with the `atl` binary of this
//! build (`ATL=…`): its Makefile (with OpenMP, then without) and its CMakeLists.txt
//! (configure, build, ctest) through the reusable module `cmake/ATL.cmake`
//! (`atl_add_kernel`). The project's `main.c` checks its three kernels against values
//! computed by hand and by naive loops, at 2 threads and 1, and the status each returns
//! (0, or the number of the precondition that sizes it refuses break, with the output
//! untouched), and exits non-zero on a mismatch. One kernel calls `sqrt`, so both
//! builds must link the C math library (`-lm`).
//!
//! `make` and `cmake` come from `scripts/setup.sh`. Without `cmake` the CMake test
//! says so loudly and passes, unless `ATL_REQUIRE_CMAKE` is set (CI sets it in
//! `.ci/run`), as the Rocq tests do with `ATL_REQUIRE_COQ`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/integration/c")
}

fn atl_binary() -> &'static str {
    env!("CARGO_BIN_EXE_atl")
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

/// Whether `tool --version` runs.
fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// A skipped test says so on both streams (cargo shows stdout of passing tests only
/// with `--nocapture`; stderr too is captured, so both are used).
#[allow(clippy::print_stdout, clippy::print_stderr)]
fn say_skipped(reason: &str) {
    println!("SKIPPED: {reason}");
    eprintln!("SKIPPED: {reason}");
}

const EXPECTED: &str =
    "ok: demo_matvec = [6, 14, 2], demo_rowsum = [10, 26, 2], demo_norms^2 = [30, 174, 6]";

#[test]
fn the_makefile_builds_and_runs_the_example() {
    assert!(
        have("make"),
        "`make` is not installed: run scripts/setup.sh (it installs make)"
    );
    let dir = temp_dir("make");
    // With OpenMP, then without (sequential, vectorized), both warning-free.
    for (build, openmp) in [("omp", "-fopenmp"), ("seq", "")] {
        let out = run(Command::new("make")
            .arg("-C")
            .arg(project())
            .arg(format!("ATL={}", atl_binary()))
            .arg(format!("BUILD={}", dir.join(build).display()))
            .arg(format!("OPENMP={openmp}"))
            .arg("CFLAGS=-O2 -std=c99 -Wall -Wextra -Werror")
            .arg("check"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(EXPECTED), "{build}: {stdout}");
        assert!(dir.join(build).join("demo_matvec.h").is_file());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cmake_project_builds_and_runs_the_example() {
    if !have("cmake") {
        assert!(
            std::env::var_os("ATL_REQUIRE_CMAKE").is_none(),
            "ATL_REQUIRE_CMAKE is set but cmake is not installed: run scripts/setup.sh"
        );
        say_skipped("cmake is not installed; run scripts/setup.sh to install it");
        return;
    }
    let dir = temp_dir("cmake");
    let build = dir.join("build");
    run(Command::new("cmake")
        .arg("-S")
        .arg(project())
        .arg("-B")
        .arg(&build)
        .arg(format!("-DATL={}", atl_binary())));
    run(Command::new("cmake").arg("--build").arg(&build));
    assert!(build.join("demo_matvec.h").is_file());
    let out = run(&mut Command::new(build.join("demo")));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(EXPECTED), "{stdout}");
    // The project's own test (ctest) runs the same program.
    run(Command::new("ctest")
        .arg("--output-on-failure")
        .current_dir(&build));
    let _ = std::fs::remove_dir_all(&dir);
}
