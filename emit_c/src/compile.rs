//! Compiling generated C with the platform's C compiler.
//!
//! The compiler is found by the `cc` crate's detection (`cc::Build::try_get_compiler`),
//! configured for the target this crate was built for, with `cc`'s own output to
//! stdout turned off (a library never prints). `cc`'s default flags apply (`-O2`,
//! position-independent code, `-Wall -Wextra`), then `-std=c99 -ffp-contract=fast` (fused
//! multiply-adds, as GNU C has by default; `-ffp-contract=off` for [`crate::Fp::Strict`]), then the caller's
//! flags. The result goes to a private temporary directory that lives as long as the
//! [`Compiled`] value.

use std::path::{Path, PathBuf};
use std::process::Command;

use atl_lang::diag::Diagnostic;
use atl_lower::Kernel;

use crate::ffi;
use crate::{CCode, Dtype, EmitOptions};

/// How a kernel is made runnable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// A shared object loaded into this process (fast to call repeatedly).
    #[default]
    SharedObject,
    /// A stand-alone executable that reads the arguments from a file and writes the
    /// output to another; each run is a process. Needed for sanitizers.
    Harness,
}

/// How to compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    pub backend: Backend,
    /// `-O` level passed through `cc` (default 2).
    pub opt_level: u32,
    /// Build with `-fsanitize=address,undefined -fno-sanitize-recover=all` (the harness
    /// backend only: the sanitizer runtime must be linked into the executable).
    pub sanitize: bool,
    /// Compile with `-fopenmp`, so the kernel's `parallel` loops use threads (its
    /// `simd` loops are honoured either way by GCC's vectorizer).
    pub openmp: bool,
    /// Extra compiler flags, after all others.
    pub flags: Vec<String>,
    /// Stop the compiler after this long (E0930): an autoscheduler's candidate whose
    /// unrolled code takes GCC minutes is not worth waiting for.
    pub time_limit: Option<std::time::Duration>,
}

impl Default for CompileOptions {
    fn default() -> CompileOptions {
        CompileOptions {
            backend: Backend::SharedObject,
            opt_level: 2,
            sanitize: false,
            openmp: false,
            flags: Vec::new(),
            time_limit: None,
        }
    }
}

pub(crate) enum Artifact {
    Library(ffi::Library),
    Executable(PathBuf),
}

/// A compiled kernel, ready to [`run`](Compiled::run).
pub struct Compiled {
    /// Keeps the source and the binary alive; removed on drop.
    pub(crate) dir: tempfile::TempDir,
    pub(crate) kernel: Kernel,
    pub(crate) dtype: Dtype,
    pub(crate) code: CCode,
    pub(crate) artifact: Artifact,
    pub(crate) diagnostics: String,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("symbol", &self.code.symbol)
            .field("dtype", &self.dtype)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl Compiled {
    /// The generated code that was compiled.
    pub fn code(&self) -> &CCode {
        &self.code
    }

    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// What the compiler wrote to stderr (warnings); empty for a clean build.
    pub fn compiler_messages(&self) -> &str {
        &self.diagnostics
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Diagnostic {
    Diagnostic::error("E0932", format!("cannot {what} `{}`: {e}", path.display()))
}

/// The C compiler `cc` finds for the target this crate was built for.
fn compiler(options: &CompileOptions) -> Result<cc::Tool, Diagnostic> {
    let target = env!("ATL_EMIT_C_TARGET");
    let host = env!("ATL_EMIT_C_HOST");
    let mut build = cc::Build::new();
    build
        .target(target)
        .host(host)
        .opt_level(options.opt_level)
        .debug(options.sanitize)
        .pic(true)
        .warnings(true)
        .extra_warnings(true)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .cargo_output(false)
        .cargo_debug(false)
        .emit_rerun_if_env_changed(false)
        .inherit_rustflags(false);
    build.try_get_compiler().map_err(|e| {
        Diagnostic::error("E0932", format!("no C compiler found: {e}"))
            .with_help("install a C compiler (gcc or clang), or point `CC` at one")
    })
}

/// The harness executable's `main`: reads sizes and inputs from `argv[1]`, calls the
/// kernel through its packed entry point, writes the elapsed nanoseconds, the kernel's
/// status and the output to `argv[2]`. Every buffer has its exact size, so a sanitizer sees any
/// out-of-range access; the output starts as NaN so that an unwritten element shows.
fn harness_source(symbol: &str, dtype: Dtype) -> String {
    let t = dtype.c_type();
    let packed = crate::packed_symbol(symbol);
    format!(
        r#"/* atl test harness for `{symbol}`. File format (native endianness):
 * in:  u64 n, i64 sizes[n], u64 m, m x (u64 len, T data[len]), u64 out_len
 * out: u64 nanoseconds, i64 status (what the kernel returned), T out[out_len] */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int {packed}(const int64_t *sizes, const void *const *inputs, {t} *out);

static void *alloc_exact(uint64_t bytes)
{{
  void *p = malloc(bytes ? (size_t)bytes : 1);
  if (p == NULL)
    exit(70);
  return p;
}}

static uint64_t read_u64(FILE *f)
{{
  uint64_t v;
  if (fread(&v, sizeof v, 1, f) != 1)
    exit(66);
  return v;
}}

int main(int argc, char **argv)
{{
  if (argc != 3)
    return 64;
  FILE *in = fopen(argv[1], "rb");
  if (in == NULL)
    return 66;
  uint64_t n = read_u64(in);
  int64_t *sizes = alloc_exact(n * sizeof(int64_t));
  if (fread(sizes, sizeof(int64_t), (size_t)n, in) != n)
    return 66;
  uint64_t m = read_u64(in);
  void **inputs = alloc_exact(m * sizeof(void *));
  for (uint64_t k = 0; k < m; ++k) {{
    uint64_t len = read_u64(in);
    inputs[k] = alloc_exact(len);
    if (fread(inputs[k], 1, (size_t)len, in) != len)
      return 66;
  }}
  uint64_t out_len = read_u64(in);
  fclose(in);
  {t} *out = alloc_exact(out_len * sizeof({t}));
  memset(out, 0xff, (size_t)(out_len * sizeof({t})));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int64_t status = {packed}(sizes, (const void *const *)inputs, out);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  uint64_t ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t1.tv_nsec - t0.tv_nsec);
  FILE *o = fopen(argv[2], "wb");
  if (o == NULL)
    return 73;
  if (fwrite(&ns, sizeof ns, 1, o) != 1 || fwrite(&status, sizeof status, 1, o) != 1
      || fwrite(out, sizeof({t}), (size_t)out_len, o) != out_len)
    return 74;
  fclose(o);
  for (uint64_t k = 0; k < m; ++k)
    free(inputs[k]);
  free(inputs);
  free(sizes);
  free(out);
  return 0;
}}
"#
    )
}

/// Emits, compiles and loads (or links) `kernel`.
pub fn compile(
    kernel: &Kernel,
    emit: &EmitOptions,
    options: &CompileOptions,
) -> Result<Compiled, Diagnostic> {
    if options.sanitize && options.backend == Backend::SharedObject {
        return Err(
            Diagnostic::error("E0932", "sanitized kernels need the harness backend")
                .with_help("an AddressSanitizer runtime cannot be loaded into this process"),
        );
    }
    let code = crate::emit(kernel, emit)?;
    let dir = tempfile::Builder::new()
        .prefix("atl-kernel-")
        .tempdir()
        .map_err(|e| {
            Diagnostic::error("E0932", format!("cannot create a temporary directory: {e}"))
        })?;
    let c_path = dir.path().join(format!("{}.c", code.symbol));
    let mut source = code.source.clone();
    source.push_str(&crate::packed_wrapper(kernel, &code, emit.dtype));
    std::fs::write(&c_path, &source).map_err(|e| io_error("write", &c_path, e))?;
    // The compiler detection runs commands, which may fork: no solver check may run
    // meanwhile (`atl_lang::fork_guard`).
    let tool = {
        let _guard = atl_lang::fork_guard::spawning();
        compiler(options)?
    };
    let mut cmd: Command = tool.to_command();
    // Strict ISO C (`-std=c99`) turns GCC's contraction of `a * b + c` into one fused
    // multiply-add off (GNU C, the default, has it on): the kernels' accumulations
    // would then run at half the FMA throughput, and slower than the same C built as
    // the header says (`cc -O3 …`) or by the bench kit.
    // `--fp strict` turns it off: every operation rounds as written.
    cmd.args(["-std=c99", emit.fp.contract_flag()]);
    if options.sanitize {
        cmd.args([
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer",
        ]);
    }
    if options.openmp {
        cmd.arg("-fopenmp");
    }
    cmd.args(&options.flags);
    let binary = match options.backend {
        Backend::SharedObject => {
            let so = dir.path().join(format!("lib{}.so", code.symbol));
            cmd.arg("-shared").arg("-o").arg(&so).arg(&c_path);
            so
        }
        Backend::Harness => {
            let main = dir.path().join("harness.c");
            std::fs::write(&main, harness_source(&code.symbol, emit.dtype))
                .map_err(|e| io_error("write", &main, e))?;
            let exe = dir.path().join(&code.symbol);
            cmd.arg("-o").arg(&exe).arg(&c_path).arg(&main);
            exe
        }
    };
    cmd.arg("-lm");
    let output = run_compiler(cmd, options.time_limit)?;
    let messages = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        return Err(Diagnostic::error(
            "E0932",
            format!(
                "the C compiler rejected the generated code for `{}`",
                code.symbol
            ),
        )
        .with_note(messages)
        .with_help("this is a bug in the C emitter; please report it with the program"));
    }
    let artifact = match options.backend {
        Backend::SharedObject => {
            Artifact::Library(ffi::Library::open(&binary, options.openmp).map_err(|e| {
                Diagnostic::error("E0933", format!("cannot load the compiled kernel: {e}"))
            })?)
        }
        Backend::Harness => Artifact::Executable(binary),
    };
    Ok(Compiled {
        dir,
        kernel: kernel.clone(),
        dtype: emit.dtype,
        code,
        artifact,
        diagnostics: messages,
    })
}

/// Runs the compiler to completion, or kills it after `limit` (E0930).
fn run_compiler(
    mut cmd: Command,
    limit: Option<std::time::Duration>,
) -> Result<std::process::Output, Diagnostic> {
    let cannot_run =
        |e: std::io::Error| Diagnostic::error("E0932", format!("cannot run the C compiler: {e}"));
    let Some(limit) = limit else {
        return atl_lang::fork_guard::output(&mut cmd).map_err(cannot_run);
    };
    // The compiler's messages go to a file, so that a full pipe cannot block it while
    // this thread waits.
    let log = tempfile::tempfile().map_err(cannot_run)?;
    // Its own process group, so that the compiler proper (`cc1`, a child of the
    // driver) is stopped with it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log.try_clone().map_err(cannot_run)?);
    let mut child = atl_lang::fork_guard::spawn(&mut cmd).map_err(cannot_run)?;
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(cannot_run)? {
            use std::io::{Read, Seek};
            let mut stderr = Vec::new();
            let mut log = log;
            log.rewind().map_err(cannot_run)?;
            log.read_to_end(&mut stderr).map_err(cannot_run)?;
            return Ok(std::process::Output {
                status,
                stdout: Vec::new(),
                stderr,
            });
        }
        if start.elapsed() >= limit {
            let group = format!("-{}", child.id());
            let _ =
                atl_lang::fork_guard::output(Command::new("kill").args(["-KILL", "--", &group]));
            let _ = child.kill();
            let _ = child.wait();
            return Err(Diagnostic::error(
                "E0930",
                format!(
                    "the C compiler did not finish within {:.0} s",
                    limit.as_secs_f64()
                ),
            )
            .with_help("the code is too large for the compiler (fully unrolled tiles): choose smaller tiles"));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
