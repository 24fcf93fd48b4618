//! What the compiled-kernel tests share: whether this run is the sanitizer run, and
//! the compile options that follow from it.

use atl_emit_c::{Backend, CompileOptions};

/// `ATL_SANITIZE=1` (as `.ci/run` sets it): kernels are built as harness executables
/// under `-fsanitize=address,undefined`, where any report fails the test.
pub fn sanitize() -> bool {
    std::env::var_os("ATL_SANITIZE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The options of a differential run: sanitized harness executables in the sanitizer
/// run; otherwise shared objects built with OpenMP, so that `parallel` loops (and the
/// per-thread temporaries of their regions) really run on threads.
pub fn compile_options() -> CompileOptions {
    if sanitize() {
        CompileOptions {
            backend: Backend::Harness,
            sanitize: true,
            opt_level: 1,
            ..CompileOptions::default()
        }
    } else {
        CompileOptions {
            openmp: true,
            ..CompileOptions::default()
        }
    }
}
