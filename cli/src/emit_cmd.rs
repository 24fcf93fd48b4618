//! `atl emit` and `atl run`: lowering to C, compiling, running and comparing with the
//! interpreter. Plain functions over a checked program (derivations already added
//! with `atl_rewrites::with_derived`, so `def` may name a `def` or a `derive`); the
//! argument parsing, file reading and exit codes stay in `lib.rs`.
//!
//! Intended command line:
//!
//! ```text
//! atl emit FILE --def NAME [-o OUT.c] [--header OUT.h] [--name SYMBOL] [--dtype f32|f64] [--ir]
//!     Prints the C source of the definition (to stdout, or to OUT.c), and with
//!     --header its header (prototype, documented shapes and preconditions) to OUT.h.
//!     --name sets the C symbol (default: the definition's name), --dtype the element
//!     type (default f32), --ir prints the loop IR instead of C.
//!     The pad-type/safety gate runs first; a program that fails it is refused with
//!     the gate's diagnostic and nothing is written.
//!
//! atl run FILE --def NAME --sizes n=4,m=5 [--input f=random:SEED|f=PATH.npy]... [--dtype f32|f64]
//!     Compiles the definition with the system C compiler, runs it on the inputs
//!     (missing inputs: random:1, random:2, … in declaration order), runs the
//!     reference interpreter on the same inputs, and prints the output shape, the
//!     maximum absolute and relative error, and the compile, kernel and interpreter
//!     times (`write_run_report`).
//! ```
//!
//! REPL: `:ir NAME` is [`ir_text`], `:c NAME` is [`c_text`].

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use atl_emit_c::{CompileOptions, Dtype};
use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, Tensor};
use atl_lang::ir::Program;
use atl_lang::shapes::ShapeEnv;
use atl_lower::Kernel;

/// Options of `atl emit` and `atl run`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EmitOptions {
    /// `--name SYMBOL`.
    pub symbol: Option<String>,
    /// `--dtype f32|f64`.
    pub dtype: Dtype,
}

impl EmitOptions {
    fn c_options(&self) -> atl_emit_c::EmitOptions {
        atl_emit_c::EmitOptions {
            dtype: self.dtype,
            symbol: self.symbol.clone(),
        }
    }
}

/// Lowers `def` to the loop IR.
pub fn lower(program: &Program, shapes: &ShapeEnv, def: &str) -> Result<Kernel, Vec<Diagnostic>> {
    atl_lower::lower_def_with(
        program,
        shapes,
        def,
        &atl_solver::Solver::new(),
        &atl_lower::LowerOptions::default(),
    )
    .map_err(|d| vec![d])
}

/// The loop IR of `def`, printed (`atl emit --ir`, the REPL's `:ir`).
pub fn ir_text(program: &Program, shapes: &ShapeEnv, def: &str) -> Result<String, Vec<Diagnostic>> {
    Ok(atl_lower::kernel_to_string(&lower(program, shapes, def)?))
}

/// The C source and header of `def`.
pub fn c_code(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    options: &EmitOptions,
) -> Result<atl_emit_c::CCode, Vec<Diagnostic>> {
    let kernel = lower(program, shapes, def)?;
    atl_emit_c::emit(&kernel, &options.c_options()).map_err(|d| vec![d])
}

/// The C source of `def` (the REPL's `:c`).
pub fn c_text(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    options: &EmitOptions,
) -> Result<String, Vec<Diagnostic>> {
    Ok(c_code(program, shapes, def, options)?.source)
}

/// `atl emit` without `-o`: writes the C source to `stdout`.
pub fn emit(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    options: &EmitOptions,
    stdout: &mut dyn Write,
) -> Result<(), Vec<Diagnostic>> {
    let code = c_code(program, shapes, def, options)?;
    stdout.write_all(code.source.as_bytes()).map_err(|e| {
        vec![Diagnostic::error(
            "E0935",
            format!("cannot write the C source: {e}"),
        )]
    })
}

/// `atl emit -o OUT.c [--header OUT.h]`: writes the files (nothing is written if
/// lowering or emission fails).
pub fn emit_files(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    options: &EmitOptions,
    source_path: &Path,
    header_path: Option<&Path>,
) -> Result<(), Vec<Diagnostic>> {
    let code = c_code(program, shapes, def, options)?;
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| {
            vec![Diagnostic::error(
                "E0935",
                format!("cannot write `{}`: {e}", path.display()),
            )]
        })
    };
    write(source_path, &code.source)?;
    if let Some(h) = header_path {
        write(h, &code.header)?;
    }
    Ok(())
}

/// What `atl run` measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    pub def: String,
    pub dtype: Dtype,
    /// The compiled kernel's output.
    pub output: Tensor,
    /// Largest `|kernel - interpreter|`.
    pub max_abs_error: f64,
    /// Largest `|kernel - interpreter| / max(|interpreter|, tiny)`, over elements
    /// whose reference is not zero.
    pub max_rel_error: f64,
    pub compile_time: Duration,
    pub kernel_time: Duration,
    pub interp_time: Duration,
}

/// `atl run`: compiles `def`, runs it at `sizes` on `inputs` (every input of the
/// program must be given; the CLI fills missing ones with `random:SEED`), runs the
/// reference interpreter on the same inputs and compares.
pub fn run(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
    options: &EmitOptions,
) -> Result<RunReport, Vec<Diagnostic>> {
    let kernel = lower(program, shapes, def)?;
    // Check the call before compiling: bad sizes or inputs are the user's to fix.
    atl_lower::check_call(&kernel, sizes, inputs).map_err(|d| vec![d])?;
    let t = Instant::now();
    let compiled = atl_emit_c::compile(&kernel, &options.c_options(), &CompileOptions::default())
        .map_err(|d| vec![d])?;
    let compile_time = t.elapsed();
    let ran = compiled.run(sizes, inputs).map_err(|d| vec![d])?;
    let t = Instant::now();
    let want = atl_lang::interp::eval_def(program, def, sizes, inputs, &EvalOptions::default())
        .map_err(|d| vec![d])?;
    let interp_time = t.elapsed();
    let (mut abs, mut rel) = (0.0f64, 0.0f64);
    for (g, w) in ran.output.data.iter().zip(&want.data) {
        let e = (g - w).abs();
        let e = if e.is_nan() { f64::INFINITY } else { e };
        abs = abs.max(e);
        if *w != 0.0 {
            rel = rel.max(e / w.abs());
        }
    }
    Ok(RunReport {
        def: def.to_string(),
        dtype: options.dtype,
        output: ran.output,
        max_abs_error: abs,
        max_rel_error: rel,
        compile_time,
        kernel_time: ran.elapsed,
        interp_time,
    })
}

/// Prints a run report, one fact per line.
pub fn write_run_report(report: &RunReport, out: &mut dyn Write) -> io::Result<()> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    writeln!(
        out,
        "{} ({}): output shape {:?}",
        report.def,
        report.dtype.c_type(),
        report.output.shape
    )?;
    writeln!(
        out,
        "max error vs interpreter: {:.3e} absolute, {:.3e} relative",
        report.max_abs_error, report.max_rel_error
    )?;
    writeln!(
        out,
        "compile {:.1} ms, kernel {:.3} ms, interpreter {:.3} ms",
        ms(report.compile_time),
        ms(report.kernel_time),
        ms(report.interp_time)
    )
}
