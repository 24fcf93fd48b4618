//! `atl-build`: ATL kernels in a Cargo build, from a `build.rs`.
//!
//! ```no_run
//! // build.rs, in `fn main`:
//! atl_build::Kernel::new("kernels/x.atl")
//!     .def("fast")
//!     .name("x_fast")
//!     .dtype(atl_build::Dtype::F32)
//!     .build(); // prints the cargo directives; on failure the diagnostic, then exit(1)
//! ```
//! and in the crate, `include!(concat!(env!("OUT_DIR"), "/x_fast.rs"));` gives
//! `x_fast(sizes…, inputs…, out) -> Result<(), x_fast::CallError>`, `x_fast::set_threads`,
//! `x_fast::lengths` and the raw declarations in `x_fast::ffi`.
//!
//! [`Kernel::compile`] runs the pipeline of `atl emit` (`atl_driver::emit::lower_for_emit`:
//! load, check, derivations replayed and re-checked independently, the pad-type and
//! safety gate, lowering, translation validation — a kernel that is not validated is
//! refused unless [`Kernel::no_validate`]), prints the C source and header into
//! `OUT_DIR/atl/`, compiles them with the `cc` crate into a static library (with
//! OpenMP when a probe program using it compiles and links, sequential otherwise), and
//! writes the Rust bindings (`bindings.rs`). It returns what a build script must tell
//! Cargo ([`Built::directives`]) and the rendered warnings, and prints nothing:
//! [`Kernel::build`] is the build-script helper that prints them (the one place of
//! this crate that prints, see [`cargo`]).
//!
//! The crate reads the environment Cargo gives build scripts (`OUT_DIR`, and through
//! `cc`: `TARGET`, `HOST`, `CC`, `CFLAGS`, …); that is its purpose. It calls the
//! pipeline library `atl-driver`, as the `atl` command does, and does not depend on
//! the command line (`atl-cli`, with its argument parser and line editor).

mod bindings;
pub mod cargo;

use std::fmt;
use std::path::{Path, PathBuf};

pub use atl_emit_c::{Dtype, Fp};

/// One kernel to build: a definition of an `.atl` file and how to compile it.
#[derive(Clone, Debug)]
pub struct Kernel {
    file: PathBuf,
    def: Option<String>,
    name: Option<String>,
    dtype: Dtype,
    fp: Fp,
    validate: bool,
    openmp: bool,
    opt_level: u32,
    flags: Vec<String>,
    out_dir: Option<PathBuf>,
}

/// Why a kernel was not built.
#[derive(Debug)]
pub enum Error {
    /// The `.atl` file was refused (syntax, shapes, a derivation, the gate, lowering,
    /// validation, the symbol): the diagnostics rendered with file, line and column.
    Atl { file: PathBuf, rendered: String },
    /// The C compiler failed (on the probe or on the generated code).
    Compile(String),
    /// A file could not be written.
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// `OUT_DIR` is not set: not run from a build script, and no [`Kernel::out_dir`].
    NoOutDir,
    /// The bindings cannot be generated (a name Rust cannot spell).
    Bindings(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Atl { file, rendered } => {
                write!(
                    f,
                    "atl-build: `{}` was refused:\n{rendered}",
                    file.display()
                )
            }
            Error::Compile(m) => write!(f, "atl-build: compiling the kernel failed: {m}"),
            Error::Io { path, error } => {
                write!(f, "atl-build: cannot write `{}`: {error}", path.display())
            }
            Error::NoOutDir => write!(
                f,
                "atl-build: OUT_DIR is not set (run from a build script, or give `.out_dir(…)`)"
            ),
            Error::Bindings(m) => write!(f, "atl-build: {m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// A built kernel: the files written and what the build script must print.
#[derive(Clone, Debug)]
pub struct Built {
    /// The C symbol (and the name of the Rust module and function).
    pub symbol: String,
    /// The definition that was compiled.
    pub def: String,
    /// The generated C source and header (in `OUT_DIR/atl/`).
    pub c_file: PathBuf,
    pub header: PathBuf,
    /// The Rust bindings: `include!` this file.
    pub bindings: PathBuf,
    /// Whether the kernel was compiled with OpenMP.
    pub openmp: bool,
    /// Lines for Cargo, without the `cargo:` prefix, in the order to print them:
    /// `rerun-if-changed=FILE`, the static library's search path and name, the OpenMP
    /// runtime (`rustc-link-lib=gomp` or `omp`).
    pub directives: Vec<String>,
    /// Warnings (rendered diagnostics of the `.atl` file, compiler messages), one
    /// string each, possibly of several lines.
    pub warnings: Vec<String>,
}

impl Kernel {
    /// The last definition of `file` (relative paths are relative to the package, the
    /// build script's working directory), as an `f32` kernel named after it.
    pub fn new(file: impl AsRef<Path>) -> Kernel {
        Kernel {
            file: file.as_ref().to_path_buf(),
            def: None,
            name: None,
            dtype: Dtype::F32,
            fp: Fp::Fast,
            validate: true,
            openmp: true,
            opt_level: 3,
            flags: Vec::new(),
            out_dir: None,
        }
    }

    /// The definition or derivation to compile (`atl emit --def`).
    pub fn def(mut self, def: &str) -> Kernel {
        self.def = Some(def.to_string());
        self
    }

    /// The C symbol, also the name of the Rust module and function (`atl emit --name`;
    /// default: the definition's name).
    pub fn name(mut self, name: &str) -> Kernel {
        self.name = Some(name.to_string());
        self
    }

    /// The element type (`atl emit --dtype`): `f32` slices (default) or `f64`.
    pub fn dtype(mut self, dtype: Dtype) -> Kernel {
        self.dtype = dtype;
        self
    }

    /// The floating-point mode (`atl emit --fp`): [`Fp::Fast`] (default,
    /// `-ffp-contract=fast`: multiply-adds may be fused) or [`Fp::Strict`]
    /// (`-ffp-contract=off`: every operation rounds as written, as in the interpreter).
    pub fn fp(mut self, fp: Fp) -> Kernel {
        self.fp = fp;
        self
    }

    /// `.fp(Fp::Strict)`.
    pub fn fp_strict(self) -> Kernel {
        self.fp(Fp::Strict)
    }

    /// Use the kernel even if the translation validator does not validate it (`atl emit
    /// --no-validate`); the generated files say so.
    pub fn no_validate(mut self) -> Kernel {
        self.validate = false;
        self
    }

    /// With `false`, compile without OpenMP even where the compiler has it (the kernel
    /// is then sequential, its vector loops keep a vectorization hint). Default `true`:
    /// OpenMP when a probe program with `-fopenmp` compiles and links.
    pub fn openmp(mut self, openmp: bool) -> Kernel {
        self.openmp = openmp;
        self
    }

    /// The `-O` level (default 3, whatever the Cargo profile).
    pub fn opt_level(mut self, level: u32) -> Kernel {
        self.opt_level = level;
        self
    }

    /// An extra C compiler flag (e.g. `-march=native`), after all others.
    pub fn flag(mut self, flag: &str) -> Kernel {
        self.flags.push(flag.to_string());
        self
    }

    /// Where to write (default: `OUT_DIR`).
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Kernel {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Emits the kernel and its bindings without compiling: the C source, the header
    /// and the Rust bindings are written, nothing else (no compiler is needed).
    pub fn generate(&self) -> Result<Built, Error> {
        self.run(false)
    }

    /// Emits, compiles and writes the bindings (see the crate documentation). Prints
    /// nothing: print [`Built::directives`] (or use [`Kernel::build`]).
    pub fn compile(&self) -> Result<Built, Error> {
        self.run(true)
    }

    /// The build-script one-liner: [`Kernel::compile`], then prints the directives and
    /// warnings for Cargo. When the kernel cannot be built it prints the rendered
    /// diagnostics once, on standard error, and exits the build script with status 1
    /// (no panic, no backtrace), which fails the build with them. See
    /// [`cargo::build`].
    pub fn build(&self) -> Built {
        cargo::build(self)
    }

    fn run(&self, compile: bool) -> Result<Built, Error> {
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or(Error::NoOutDir)?,
        };
        let validation = if self.validate {
            atl_driver::lowering::Validation::On
        } else {
            atl_driver::lowering::Validation::Off
        };
        let atl_error = |failure: atl_driver::Failure| {
            let mut text = Vec::new();
            failure.render(false, &mut text);
            Error::Atl {
                file: self.file.clone(),
                rendered: String::from_utf8_lossy(&text).into_owned(),
            }
        };
        let mut observer = atl_driver::Collect::default();
        let lowered = atl_driver::emit::lower_for_emit(
            &mut observer,
            &self.file,
            self.def.as_deref(),
            self.fp,
            validation,
            false,
        )
        .map_err(atl_error)?;
        let mut warnings: Vec<String> = observer
            .warnings
            .iter()
            .map(|located| {
                let mut text = Vec::new();
                located.render(false, &mut text);
                String::from_utf8_lossy(&text).into_owned()
            })
            .collect();
        let options = atl_emit_c::EmitOptions {
            symbol: self.name.clone(),
            dtype: self.dtype,
            fp: self.fp,
        };
        let code = atl_driver::emit::c_code(&lowered.kernel, &options).map_err(|diags| {
            atl_error(atl_driver::Failure::diagnostics(
                diags,
                &self.file,
                &lowered.loaded.source,
            ))
        })?;
        let note = if self.validate {
            ""
        } else {
            atl_driver::lowering::NOT_VALIDATED_NOTE
        };
        let atl_dir = out_dir.join("atl");
        let write = |path: &Path, text: &str| {
            std::fs::write(path, text).map_err(|error| Error::Io {
                path: path.to_path_buf(),
                error,
            })
        };
        std::fs::create_dir_all(&atl_dir).map_err(|error| Error::Io {
            path: atl_dir.clone(),
            error,
        })?;
        let c_file = atl_dir.join(format!("{}.c", code.symbol));
        let header = atl_dir.join(format!("{}.h", code.symbol));
        write(&c_file, &format!("{note}{}", code.source))?;
        write(&header, &format!("{note}{}", code.header))?;

        let file_text = self.file.display().to_string();
        let rust = bindings::generate(&bindings::BindingSpec {
            kernel: &lowered.kernel,
            symbol: &code.symbol,
            dtype: self.dtype,
            file: &file_text,
            def: &lowered.name,
            validated: self.validate,
        })
        .map_err(Error::Bindings)?;
        let bindings = out_dir.join(format!("{}.rs", code.symbol));
        write(&bindings, &rust)?;

        let mut directives = vec![format!("rerun-if-changed={}", self.file.display())];
        let mut openmp = false;
        if compile {
            let compiled = compile_c(self, &atl_dir, &c_file, &code.symbol)?;
            openmp = compiled.openmp;
            directives.extend(compiled.directives);
            warnings.extend(compiled.warnings);
        }
        Ok(Built {
            symbol: code.symbol,
            def: lowered.name,
            c_file,
            header,
            bindings,
            openmp,
            directives,
            warnings,
        })
    }
}

struct CompiledC {
    openmp: bool,
    directives: Vec<String>,
    warnings: Vec<String>,
}

/// A `cc::Build` that prints nothing (the directives are returned instead).
fn quiet_build(kernel: &Kernel, dir: &Path) -> cc::Build {
    let mut build = cc::Build::new();
    build
        .out_dir(dir)
        .opt_level(kernel.opt_level)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .cargo_output(false)
        .cargo_debug(false)
        .emit_rerun_if_env_changed(false);
    build
}

/// The OpenMP runtime to link, when a probe program using OpenMP compiles and links
/// with `-fopenmp`: GCC's `gomp`, Clang's `omp`. `None`: build without OpenMP.
fn probe_openmp(kernel: &Kernel, dir: &Path) -> Option<&'static str> {
    let tool = quiet_build(kernel, dir).try_get_compiler().ok()?;
    let runtime = if tool.is_like_clang() {
        "omp"
    } else if tool.is_like_gnu() {
        "gomp"
    } else {
        return None;
    };
    let probe = dir.join("atl_openmp_probe.c");
    std::fs::write(
        &probe,
        "#include <omp.h>\nint main(void)\n{\n  int n = 0;\n#pragma omp parallel\n  {\n#pragma omp atomic\n    n += 1;\n  }\n  return omp_get_max_threads() > 0 && n > 0 ? 0 : 1;\n}\n",
    )
    .ok()?;
    let exe = dir.join("atl_openmp_probe");
    let status = tool
        .to_command()
        .arg("-fopenmp")
        .arg(&probe)
        .arg("-o")
        .arg(&exe)
        .output()
        .ok()?;
    status.status.success().then_some(runtime)
}

fn compile_c(kernel: &Kernel, dir: &Path, c_file: &Path, symbol: &str) -> Result<CompiledC, Error> {
    // `cc` starts the compiler with `fork` (it sets the environment): no solver check
    // may run meanwhile in this process (`atl_lang::fork_guard`). The build runs its
    // checks before, so holding the guard for the whole compile costs nothing.
    let _guard = atl_lang::fork_guard::spawning();
    let runtime = if kernel.openmp {
        probe_openmp(kernel, dir)
    } else {
        None
    };
    let mut build = quiet_build(kernel, dir);
    // `-std=c99` alone turns GCC's fused multiply-adds off (see atl-emit-c's compile):
    // `-ffp-contract=fast` brings them back, `-ffp-contract=off` (strict) keeps them off.
    build
        .file(c_file)
        .flag_if_supported("-std=c99")
        .flag_if_supported(kernel.fp.contract_flag());
    if runtime.is_some() {
        build.flag("-fopenmp");
    }
    for f in &kernel.flags {
        build.flag(f);
    }
    let lib = format!("atlk_{symbol}");
    build
        .try_compile(&lib)
        .map_err(|e| Error::Compile(e.to_string()))?;
    let mut directives = vec![
        format!("rustc-link-search=native={}", dir.display()),
        format!("rustc-link-lib=static={lib}"),
    ];
    // A kernel using `sqrt`, `exp`, `log` or `abs` calls the C math library.
    if std::env::var("CARGO_CFG_TARGET_FAMILY").is_ok_and(|f| f == "unix") {
        directives.push("rustc-link-lib=m".to_string());
    }
    let mut warnings = Vec::new();
    match runtime {
        Some(rt) => directives.push(format!("rustc-link-lib={rt}")),
        None if kernel.openmp => warnings.push(format!(
            "`{symbol}` is compiled without OpenMP (the C compiler cannot build and link an \
             OpenMP program): it runs sequentially, its vector loops still vectorized"
        )),
        None => {}
    }
    Ok(CompiledC {
        openmp: runtime.is_some(),
        directives,
        warnings,
    })
}
