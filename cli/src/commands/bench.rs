//! `atl bench`: compile a definition with optimization and OpenMP, check it against the
//! reference interpreter at small sizes, then time it at the requested sizes — and,
//! with `--vs OTHER`, time a second definition of the same file in the same process,
//! interleaved call by call, and print the ratio.
//!
//! ```text
//! atl bench FILE --def NAME --sizes n=2000,m=2000 [--vs OTHER] [--threads N]
//!     [--runs R] [--check-sizes n=19,m=17] [--dtype f32|f64] [--fp fast|strict] [--no-validate]
//! ```
//!
//! Each kernel is validated before it is compiled (`atl-validate`, as `atl emit`
//! does); one that is not validated is refused (E0950, E0951) unless --no-validate.
//!
//! Method (the bench kit's, `../shared/bench/README.md`): every kernel is compiled
//! with `-O3 -march=native -fopenmp` (and `-ffp-contract=fast`, or `-ffp-contract=off`
//! with `--fp strict`); each gets one warm-up call (two when the first
//! took under 0.2 s); then `R` timed calls per kernel, interleaved round-robin with a
//! rotating start so that the drift of a shared machine affects both alike. Only the
//! kernel call is timed. The medians are reported, and the ratio
//! `median(OTHER) / median(NAME)` (above 1: NAME is faster).
//!
//! Before timing, each kernel runs at the check sizes (each size clamped to at most
//! 19 unless `--check-sizes` is given) on random inputs and must agree with the
//! interpreter within the element type's tolerance; a disagreement is E0936 and
//! nothing is timed.
//!
//! `--json` prints the report as one document (docs/json.md; times in milliseconds);
//! a failure before the timing (a refused kernel, a failed check) prints only its
//! diagnostics.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use atl_emit_c::Fp;
use atl_lang::interp::EvalOptions;
use clap::Args;
use serde_json::{Value, json};

use super::{FP_HELP, json};
use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::inputs::{parse_dtype, parse_fp, parse_sizes, prepare};
use atl_driver::load::pick_def;
use atl_driver::lowering::{Validation, gate_loaded, validate_loaded};
use atl_driver::timing::{BenchOptions, BenchReport, KernelTiming, bench, default_check_sizes};

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    pub file: PathBuf,
    #[arg(long = "def")]
    pub def: Option<String>,
    /// Sizes to time at.
    #[arg(long = "sizes", value_name = "NAME=VALUE,...")]
    pub sizes: Vec<String>,
    /// Inputs to time on (`NAME=PATH.npy`, `NAME=random:SEED`, a sparse matrix's
    /// `NAME=PATH.mtx|.npz`, as `atl run` takes them); the others are random. The
    /// check against the interpreter still runs on random inputs at the check sizes.
    #[arg(long = "input", value_name = "NAME=SOURCE")]
    pub inputs: Vec<String>,
    /// A second definition of the same file, timed interleaved with the first.
    #[arg(long = "vs", value_name = "OTHER")]
    pub vs: Option<String>,
    /// OpenMP threads.
    #[arg(long = "threads", default_value_t = 1)]
    pub threads: usize,
    /// Timed calls per kernel.
    #[arg(long = "runs", default_value_t = 11)]
    pub runs: usize,
    /// Sizes of the check against the interpreter (default: each size, at most 19; the
    /// nearest sizes that satisfy the `assume`s when those do not).
    #[arg(long = "check-sizes", value_name = "NAME=VALUE,...")]
    pub check_sizes: Vec<String>,
    #[arg(long = "dtype", default_value = "f32")]
    pub dtype: String,
    #[arg(long = "fp", default_value = "fast", help = FP_HELP)]
    pub fp: String,
    /// Time the kernels even if the translation validator does not validate them.
    #[arg(long = "no-validate")]
    pub no_validate: bool,
    /// Print one JSON document (docs/json.md) instead of the text report.
    #[arg(long)]
    pub json: bool,
}

/// `atl bench`.
pub fn run(args: &BenchArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let dtype = parse_dtype(&args.dtype)?;
    let fp = parse_fp(&args.fp)?;
    if args.threads == 0 || args.runs == 0 {
        return Err(Failure::usage(
            "`--threads` and `--runs` must be at least 1",
        ));
    }
    let prepared = prepare(ctx, file, args.def.as_deref(), &args.sizes, &args.inputs)?;
    let loaded = &prepared.loaded;
    let program = &loaded.program;
    let check_sizes = if args.check_sizes.is_empty() {
        default_check_sizes(program, &prepared.sizes)
    } else {
        parse_sizes(&args.check_sizes)
            .map_err(|m| Failure::usage(format!("`--check-sizes`: {m}")))?
    };
    if let Err(d) = atl_lang::interp::input_shapes(program, &check_sizes, &EvalOptions::default()) {
        return Err(
            Failure::diagnostics(vec![d], file, &loaded.source).then_line(
                "help: the check against the interpreter runs at the sizes above; choose others \
                 with `--check-sizes`",
            ),
        );
    }
    let vs = match &args.vs {
        None => None,
        Some(v) => Some(
            pick_def(program, Some(v))
                .map_err(|d| Failure::diagnostics(vec![d], file, &loaded.source))?
                .to_string(),
        ),
    };
    // Both definitions pass the gate before anything is lowered or compiled.
    // Validating, compiling, checking and timing take seconds: shown on a terminal.
    let progress = ctx.progress("benchmarking");
    let mut gated = Vec::new();
    for name in std::iter::once(&prepared.name).chain(&vs) {
        gated.push(gate_loaded(ctx, file, loaded, name)?);
    }
    // Every kernel is validated before anything is compiled.
    let validation = Validation::from_flag(args.no_validate);
    let mut kernels = Vec::new();
    for g in &gated {
        let kernel = g
            .lower_for(fp)
            .map_err(|diags| Failure::diagnostics(diags, file, &loaded.source))?;
        validate_loaded(ctx, file, loaded, g.name(), &kernel, validation, false)?;
        kernels.push(kernel);
    }
    if args.threads > 1 && std::env::var_os("OMP_WAIT_POLICY").is_none() {
        let _ = writeln!(
            ctx.stderr,
            "note: OMP_WAIT_POLICY is not set; on a machine whose cores are shared, \
             spinning OpenMP threads distort multi-thread timings (set it to `passive`)"
        );
    }
    let options = BenchOptions {
        dtype,
        fp,
        threads: args.threads,
        runs: args.runs,
    };
    let report = bench(
        ctx.monitor.as_ref(),
        &gated,
        &kernels,
        &prepared.sizes,
        &prepared.inputs,
        &check_sizes,
        &options,
    )
    .map_err(|diags| Failure::diagnostics(diags, file, &loaded.source))?;
    drop(progress);
    if args.json {
        json::print(ctx.stdout, &report_json(&report, fp, args.runs));
    } else {
        let _ = write_report(&report, ctx.stdout);
    }
    Ok(())
}

/// The `--json` document of `atl bench` (docs/json.md): the settings, each kernel's
/// times in milliseconds, and the ratio `median(vs) / median(def)`.
fn report_json(report: &BenchReport, fp: Fp, runs: usize) -> Value {
    let kernel = |t: &KernelTiming| {
        json!({
            "def": t.def,
            "median_ms": json::ms(t.median()),
            "min_ms": json::ms(t.min()),
            "times_ms": t.times.iter().map(|d| json::ms(*d)).collect::<Vec<_>>(),
            "check_error": json::number(t.check_error),
            "compile_ms": json::ms(t.compile_time),
        })
    };
    json!({
        "command": "bench",
        "sizes": json::sizes(&report.sizes),
        "check_sizes": json::sizes(&report.check_sizes),
        "dtype": super::run::dtype_word(report.dtype),
        "fp": super::run::fp_word(fp),
        "threads": report.threads,
        "runs": runs,
        "main": kernel(&report.main),
        "vs": report.vs.as_ref().map_or(Value::Null, kernel),
        "ratio": report.ratio().map_or(Value::Null, json::number),
    })
}

/// Prints a bench report.
pub fn write_report(report: &BenchReport, out: &mut dyn Write) -> io::Result<()> {
    let list = |m: &BTreeMap<String, i64>| {
        m.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    writeln!(
        out,
        "sizes {} ({}, {} thread{}); checked against the interpreter at {}",
        list(&report.sizes),
        report.dtype.c_type(),
        report.threads,
        if report.threads == 1 { "" } else { "s" },
        list(&report.check_sizes)
    )?;
    for t in std::iter::once(&report.main).chain(&report.vs) {
        writeln!(
            out,
            "{:<24} median {:>10.3} ms   min {:>10.3} ms   ({} runs; check error {:.1e}; compiled in {:.0} ms)",
            t.def,
            ms(t.median()),
            ms(t.min()),
            t.times.len(),
            t.check_error,
            ms(t.compile_time)
        )?;
    }
    if let (Some(r), Some(vs)) = (report.ratio(), &report.vs) {
        writeln!(
            out,
            "ratio {} / {} = {r:.3} (above 1: `{}` is faster)",
            vs.def, report.main.def, report.main.def
        )?;
    }
    Ok(())
}
