//! `atl emit`: lowers a definition to C (or prints its loop IR), after the pad-type and
//! safety gate of `atl_driver::lowering`; a definition that fails the gate is refused with
//! the gate's diagnostic and nothing is written.
//!
//! ```text
//! atl emit FILE --def NAME [-o OUT.c] [--header OUT.h] [--name SYMBOL] [--dtype f32|f64] [--ir]
//!     [--fp fast|strict] [--python DIR] [--no-validate] [--explain]
//!     Prints the C source of the definition (to stdout, or to OUT.c), and with
//!     --header its header (prototype, documented shapes and preconditions) to OUT.h.
//!     --name sets the C symbol (default: the definition's name), --dtype the element
//!     type (default f32), --ir prints the loop IR instead of C, in the full textual
//!     form that `atl validate --ir` and `atl run --ir` read back. --python DIR writes
//!     SYMBOL_f32.c/.h, SYMBOL_f64.c/.h and SYMBOL.py, a Python module (ctypes + numpy)
//!     serving both dtypes, that compiles the C on first use (-O3 -march=native unless
//!     ATL_PORTABLE=1 or $CFLAGS) and checks the arguments it is given
//!     (`crate::python`); --dtype is then the dtype of a call whose arguments are all
//!     Python numbers. --fp strict: the kernel is meant to be compiled with
//!     -ffp-contract=off (the header says so, the Python module does it); --fp fast
//!     (the default): -ffp-contract=fast, multiply-adds may be fused.
//!     The kernel is validated first (`atl-validate`: it computes the definition, for
//!     every size its preconditions allow); one that is not validated is not written
//!     (E0950, or E0951 when it is wrong) unless --no-validate, and then the C file
//!     and the header begin with a comment saying so. --explain prints the
//!     validator's obligations and verdicts to standard error.
//! ```
//!
//! The pipeline and the printing functions are `atl_driver::emit`'s.

use std::path::{Path, PathBuf};

use atl_driver::emit::{c_code, emit_files, lower_for_emit, write_error};
use atl_emit_c::EmitOptions;
use atl_lang::diag::Diagnostic;
use atl_lower::Kernel;
use clap::Args;

use super::FP_HELP;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::inputs::{parse_dtype, parse_fp};
use atl_driver::lowering::{NOT_VALIDATED_NOTE, Validation};

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct EmitArgs {
    pub file: PathBuf,
    /// Definition or derivation to emit (default: the last definition).
    #[arg(long = "def")]
    pub def: Option<String>,
    /// Write the C source here instead of standard output.
    #[arg(short = 'o', value_name = "OUT.c")]
    pub output: Option<PathBuf>,
    /// Also write the header (prototype, shapes, preconditions).
    #[arg(long = "header", value_name = "OUT.h")]
    pub header: Option<PathBuf>,
    /// The C symbol (default: the definition's name).
    #[arg(long = "name", value_name = "SYMBOL")]
    pub name: Option<String>,
    /// Element type: f32 (default) or f64. With --python the module serves both (each
    /// call runs the variant of its arrays' dtype); this is the dtype of a call whose
    /// arguments are all Python numbers.
    #[arg(long = "dtype", default_value = "f32")]
    pub dtype: String,
    #[arg(long = "fp", default_value = "fast", help = FP_HELP)]
    pub fp: String,
    /// Print the loop IR instead of C.
    #[arg(long, conflicts_with = "python")]
    pub ir: bool,
    /// Write SYMBOL_f32.c/.h, SYMBOL_f64.c/.h and SYMBOL.py (a Python module: ctypes +
    /// numpy, serving float32 and float64, which compiles the C on first use with
    /// -O3 -march=native, or -O3 when ATL_PORTABLE=1; $CFLAGS overrides) into this
    /// directory.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "header"])]
    pub python: Option<PathBuf>,
    /// Emit the kernel even if the translation validator does not validate it (the C
    /// file and header then say so).
    #[arg(long = "no-validate")]
    pub no_validate: bool,
    /// Print the translation validator's obligations and verdicts to standard error.
    #[arg(long)]
    pub explain: bool,
}

/// `atl emit`.
pub fn run(args: &EmitArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let dtype = parse_dtype(&args.dtype)?;
    let fp = parse_fp(&args.fp)?;
    let validation = Validation::from_flag(args.no_validate);
    let progress = ctx.progress("lowering and validating");
    let lowered = lower_for_emit(ctx, file, args.def.as_deref(), fp, validation, args.explain)?;
    drop(progress);
    let (loaded, kernel) = (&lowered.loaded, &lowered.kernel);
    let options = EmitOptions {
        symbol: args.name.clone(),
        dtype,
        fp,
    };
    let note = match validation {
        Validation::On => "",
        Validation::Off => NOT_VALIDATED_NOTE,
    };
    let result = if let Some(dir) = &args.python {
        python_files(
            kernel,
            &loaded.program.sparse,
            &options,
            dir,
            &lowered.name,
            validation == Validation::On,
            note,
        )
    } else if args.ir {
        let _ = write!(ctx.stdout, "{}", atl_lower::print::kernel_to_text(kernel));
        Ok(())
    } else {
        match &args.output {
            Some(path) => emit_files(kernel, &options, path, args.header.as_deref(), note),
            None => c_code(kernel, &options).and_then(|code| {
                // C on standard output; the header (if asked for) to its file.
                if let Some(h) = &args.header {
                    std::fs::write(h, format!("{note}{}", code.header))
                        .map_err(|e| write_error(h, &e))?;
                }
                let _ = ctx.stdout.write_all(note.as_bytes());
                let _ = ctx.stdout.write_all(code.source.as_bytes());
                Ok(())
            }),
        }
    };
    result.map_err(|diags| Failure::diagnostics(diags, file, &loaded.source))
}

/// `atl emit --python DIR`: the kernel's C source and header for each dtype
/// (`SYMBOL_f32.c`/`.h`, `SYMBOL_f64.c`/`.h`, with those symbols) and the Python module
/// `SYMBOL.py` (`crate::python`), which serves both and takes `options.dtype` for calls
/// whose arguments are all Python numbers, in `DIR`, created if missing (nothing is
/// written if emission fails).
pub fn python_files(
    kernel: &Kernel,
    sparse: &[atl_lang::ir::SparseDecl],
    options: &EmitOptions,
    dir: &Path,
    def: &str,
    validated: bool,
    note: &str,
) -> Result<(), Vec<Diagnostic>> {
    // The module's name: `--name` (or the definition's), checked as a C name.
    let symbol = c_code(kernel, options)?.symbol;
    let mut files = Vec::new();
    for (dtype, variant) in crate::python::variants(&symbol) {
        let code = c_code(
            kernel,
            &EmitOptions {
                symbol: Some(variant),
                dtype,
                fp: options.fp,
            },
        )?;
        files.push((
            format!("{}.c", code.symbol),
            format!("{note}{}", code.source),
        ));
        files.push((
            format!("{}.h", code.symbol),
            format!("{note}{}", code.header),
        ));
    }
    let module = crate::python::module(
        kernel,
        &symbol,
        options.dtype,
        options.fp,
        def,
        validated,
        sparse,
    );
    files.push((format!("{symbol}.py"), module));
    let fail = |path: &Path, e: std::io::Error| write_error(path, &e);
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| fail(&path, e))?;
    }
    Ok(())
}
