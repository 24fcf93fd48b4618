//! `atl run`: compiles a definition with the system C compiler (after the gate of
//! [`crate::lowering`]), runs it, runs the reference interpreter on the same inputs
//! and compares.
//!
//! ```text
//! atl run FILE --def NAME --sizes n=4,m=5 [--input f=random:SEED|f=PATH.npy]... [--dtype f32|f64]
//!     Inputs not given are filled with random:1, random:2, … in declaration order.
//!     Prints the output shape, the maximum absolute and relative error, and the
//!     compile, kernel and interpreter times (`write_run_report`).
//! ```

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use atl_emit_c::{CompileOptions, Dtype};
use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, Tensor};
use atl_lang::ir::Program;
use atl_lower::Kernel;
use clap::Args;

use super::emit::EmitOptions;
use crate::ctx::Ctx;
use crate::failure::Failure;
use crate::load::{parse_dtype, prepare};
use crate::lowering::gate_and_lower_loaded;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct RunArgs {
    pub file: PathBuf,
    #[arg(long = "def")]
    pub def: Option<String>,
    #[arg(long = "sizes", value_name = "NAME=VALUE,...")]
    pub sizes: Vec<String>,
    /// Inputs not given are filled with `random:1`, `random:2`, … in order.
    #[arg(long = "input", value_name = "NAME=SOURCE")]
    pub inputs: Vec<String>,
    #[arg(long = "dtype", default_value = "f32")]
    pub dtype: String,
}

/// `atl run`.
pub fn run(args: &RunArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let dtype = parse_dtype(&args.dtype)?;
    let mut prepared = prepare(ctx, file, args.def.as_deref(), &args.sizes, &args.inputs)?;
    let kernel = gate_and_lower_loaded(ctx, file, &prepared.loaded, &prepared.name)?;
    // Inputs not given: random:1, random:2, … in declaration order.
    for (k, decl) in prepared.loaded.program.inputs.iter().enumerate() {
        if !prepared.inputs.contains_key(&decl.name)
            && let Some(shape) = prepared.input_shapes.get(&decl.name)
        {
            prepared.inputs.insert(
                decl.name.clone(),
                Tensor::random(shape.clone(), k as u64 + 1),
            );
        }
    }
    let options = EmitOptions {
        symbol: None,
        dtype,
    };
    let report = compare(
        &kernel,
        &prepared.loaded.program,
        &prepared.name,
        &prepared.sizes,
        &prepared.inputs,
        &options,
    )
    .map_err(|diags| Failure::diagnostics(diags, file, &prepared.loaded.source))?;
    let _ = write_run_report(&report, ctx.stdout);
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

/// Compiles `kernel` (the lowering of `def`), runs it at `sizes` on `inputs` (every
/// input of the program must be given; the command fills missing ones with
/// `random:SEED`), runs the reference interpreter on the same inputs and compares.
pub fn compare(
    kernel: &Kernel,
    program: &Program,
    def: &str,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
    options: &EmitOptions,
) -> Result<RunReport, Vec<Diagnostic>> {
    // Check the call before compiling: bad sizes or inputs are the user's to fix.
    atl_lower::check_call(kernel, sizes, inputs).map_err(|d| vec![d])?;
    let t = Instant::now();
    let compiled = atl_emit_c::compile(kernel, &options.c_options(), &CompileOptions::default())
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
