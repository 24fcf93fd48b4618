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

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use atl_emit_c::{CompileOptions, Compiled, Dtype, Fp};
use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, Tensor};
use atl_lang::ir::Program;
use atl_lower::Kernel;
use clap::Args;

use crate::ctx::Ctx;
use crate::failure::Failure;
use crate::load::{FP_HELP, parse_dtype, parse_fp, parse_sizes, pick_def, prepare};
use crate::lowering::{Gated, Validation, gate_loaded, validate_loaded};

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    pub file: PathBuf,
    #[arg(long = "def")]
    pub def: Option<String>,
    /// Sizes to time at.
    #[arg(long = "sizes", value_name = "NAME=VALUE,...")]
    pub sizes: Vec<String>,
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
    let prepared = prepare(ctx, file, args.def.as_deref(), &args.sizes, &[])?;
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
    let mut gated = Vec::new();
    for name in std::iter::once(&prepared.name).chain(&vs) {
        gated.push(gate_loaded(ctx, file, loaded, name)?);
    }
    // Every kernel is validated before anything is compiled.
    let validation = Validation::from_flag(args.no_validate);
    let mut kernels = Vec::new();
    for g in &gated {
        let kernel = g
            .lower()
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
    let report = bench(&gated, &kernels, &prepared.sizes, &check_sizes, &options)
        .map_err(|diags| Failure::diagnostics(diags, file, &loaded.source))?;
    let _ = write_report(&report, ctx.stdout);
    Ok(())
}

/// Options of `atl bench`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchOptions {
    pub dtype: Dtype,
    /// `--fp`: the contraction flag the kernels are compiled with.
    pub fp: Fp,
    /// OpenMP threads for the timed calls.
    pub threads: usize,
    /// Timed calls per kernel.
    pub runs: usize,
}

/// How one kernel did.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTiming {
    pub def: String,
    /// Largest `|kernel - interpreter|` at the check sizes, relative to
    /// `max(1, max |interpreter|)`.
    pub check_error: f64,
    pub compile_time: Duration,
    /// Every timed call, in order.
    pub times: Vec<Duration>,
}

impl KernelTiming {
    pub fn median(&self) -> Duration {
        median(&self.times)
    }

    pub fn min(&self) -> Duration {
        self.times.iter().copied().min().unwrap_or_default()
    }
}

/// What `atl bench` measured.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    pub sizes: BTreeMap<String, i64>,
    pub check_sizes: BTreeMap<String, i64>,
    pub threads: usize,
    pub dtype: Dtype,
    pub main: KernelTiming,
    pub vs: Option<KernelTiming>,
}

impl BenchReport {
    /// `median(vs) / median(main)`: above 1 when the main definition is faster.
    pub fn ratio(&self) -> Option<f64> {
        let vs = self.vs.as_ref()?;
        let m = self.main.median().as_secs_f64();
        (m > 0.0).then(|| vs.median().as_secs_f64() / m)
    }
}

/// The median of a non-empty list (the lower middle for an even count).
pub fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted
        .get(sorted.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or_default()
}

/// The check sizes by default: every size clamped to at most 19 (odd, and not a
/// multiple of the usual tile sizes, so tails are exercised). When those break an
/// `assume` (`m % 16 == 0`), the nearest sizes that satisfy every `assume`: each size
/// tries its clamp, then smaller values, then larger ones up to 64 (never above the
/// timed size), the assignments closest to the clamps first. Without such sizes (or
/// after [`MAX_CHECK_SIZE_TRIES`]), the clamps, which the caller reports.
pub fn default_check_sizes(
    program: &Program,
    sizes: &BTreeMap<String, i64>,
) -> BTreeMap<String, i64> {
    let clamped: BTreeMap<String, i64> = sizes
        .iter()
        .map(|(k, v)| (k.clone(), (*v).min(19)))
        .collect();
    if atl_lang::interp::check_sizes(program, &clamped).is_ok() {
        return clamped;
    }
    let names: Vec<&String> = sizes.keys().collect();
    let candidates: Vec<Vec<i64>> = sizes
        .values()
        .map(|&v| {
            let c = v.min(19);
            (1..=c).rev().chain(20..=v.min(64)).collect()
        })
        .collect();
    // Assignments by the sum of their positions in the candidate lists.
    let most = candidates.iter().map(|c| c.len() - 1).sum::<usize>();
    let mut tries = 0;
    for total in 0..=most {
        let mut found = None;
        enumerate_positions(&candidates, total, &mut Vec::new(), &mut |pos| {
            tries += 1;
            let assignment: BTreeMap<String, i64> = names
                .iter()
                .zip(pos)
                .zip(&candidates)
                .map(|((n, &p), c)| ((*n).clone(), c[p]))
                .collect();
            if atl_lang::interp::check_sizes(program, &assignment).is_ok() {
                found = Some(assignment);
            }
            found.is_none() && tries < MAX_CHECK_SIZE_TRIES
        });
        if let Some(a) = found {
            return a;
        }
        if tries >= MAX_CHECK_SIZE_TRIES {
            break;
        }
    }
    clamped
}

/// Assignments tried for the default check sizes before giving up.
const MAX_CHECK_SIZE_TRIES: usize = 20_000;

/// Calls `visit` with every choice of one position per list whose positions add up to
/// `total` (in order), until it returns `false`; returns whether to go on.
fn enumerate_positions(
    lists: &[Vec<i64>],
    total: usize,
    prefix: &mut Vec<usize>,
    visit: &mut dyn FnMut(&[usize]) -> bool,
) -> bool {
    let k = prefix.len();
    if k == lists.len() {
        return total != 0 || visit(prefix);
    }
    for p in 0..lists[k].len().min(total + 1) {
        prefix.push(p);
        let go_on = enumerate_positions(lists, total - p, prefix, visit);
        prefix.pop();
        if !go_on {
            return false;
        }
    }
    true
}

/// Random inputs of a program at `sizes` (seeds 1, 2, … in declaration order).
pub fn random_inputs(
    program: &Program,
    sizes: &BTreeMap<String, i64>,
) -> Result<BTreeMap<String, Tensor>, Diagnostic> {
    let shapes = atl_lang::interp::input_shapes(program, sizes, &EvalOptions::default())?;
    let mut inputs = BTreeMap::new();
    for (k, decl) in program.inputs.iter().enumerate() {
        if let Some(shape) = shapes.get(&decl.name) {
            inputs.insert(
                decl.name.clone(),
                Tensor::random(shape.clone(), k as u64 + 1),
            );
        }
    }
    Ok(inputs)
}

fn compile(kernel: &Kernel, dtype: Dtype, fp: Fp) -> Result<(Compiled, Duration), Vec<Diagnostic>> {
    let t = Instant::now();
    let compiled = atl_emit_c::compile(
        kernel,
        &atl_emit_c::EmitOptions {
            dtype,
            // `atl bench` never exposes the symbol: any definition name works.
            symbol: Some(atl_emit_c::internal_symbol(&kernel.name)),
            fp,
        },
        &CompileOptions {
            opt_level: 3,
            openmp: true,
            flags: vec!["-march=native".to_string()],
            ..CompileOptions::default()
        },
    )
    .map_err(|d| vec![d])?;
    Ok((compiled, t.elapsed()))
}

/// Runs `compiled` at the check sizes and compares with the interpreter.
fn check(
    program: &Program,
    def: &str,
    compiled: &Compiled,
    sizes: &BTreeMap<String, i64>,
    dtype: Dtype,
) -> Result<f64, Diagnostic> {
    let inputs = random_inputs(program, sizes)?;
    let want = atl_lang::interp::eval_def(program, def, sizes, &inputs, &EvalOptions::default())?;
    let got = compiled.run(sizes, &inputs)?.output;
    // As `atl run` compares: NaN against NaN and an infinity against the same one agree,
    // the error is over the elements finite on both sides.
    let c = super::run::compare_outputs(&got, &want);
    let err = if c.mismatches > 0 || !c.same_size {
        f64::INFINITY
    } else {
        c.max_scaled_error
    };
    let tolerance = match dtype {
        Dtype::F32 => 1e-4,
        Dtype::F64 => 1e-10,
    };
    if err > tolerance {
        let shown: Vec<String> = sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let what = if !c.same_size {
            "the output has the wrong number of elements".to_string()
        } else if c.mismatches > 0 {
            format!("{} element(s) non-finite on one side only", c.mismatches)
        } else {
            format!("relative error {err:.3e}")
        };
        return Err(Diagnostic::error(
            "E0936",
            format!(
                "the compiled kernel of `{def}` disagrees with the interpreter at {}: {what}",
                shown.join(",")
            ),
        )
        .with_help("this is a bug in lowering or C emission; please report it with the program"));
    }
    Ok(err)
}

/// Compiles, checks and times the gated definitions (the first is the main one, the
/// second, if any, the one it is compared with); see the module documentation. Each
/// is lowered just before it is compiled.
/// Times `kernels` (lowered, and validated unless the user said otherwise, from
/// `gated`, in the same order).
pub fn bench(
    gated: &[Gated<'_>],
    kernels: &[Kernel],
    sizes: &BTreeMap<String, i64>,
    check_sizes: &BTreeMap<String, i64>,
    options: &BenchOptions,
) -> Result<BenchReport, Vec<Diagnostic>> {
    let Some(program) = gated.first().map(Gated::program) else {
        return Err(Vec::new());
    };
    let defs: Vec<&str> = gated.iter().map(Gated::name).collect();
    let inputs = random_inputs(program, sizes).map_err(|d| vec![d])?;
    let mut compiled = Vec::new();
    for (kernel, d) in kernels.iter().zip(&defs) {
        let (mut c, compile_time) = compile(kernel, options.dtype, options.fp)?;
        let check_error = check(program, d, &c, check_sizes, options.dtype).map_err(|e| vec![e])?;
        c.set_threads(options.threads).map_err(|e| vec![e])?;
        compiled.push((c, compile_time, check_error));
    }
    let mut calls = Vec::new();
    for (c, _, _) in &compiled {
        calls.push(c.prepare(sizes, &inputs).map_err(|d| vec![d])?);
    }
    // Warm-up: one call, two when the first was short.
    for call in &mut calls {
        let first = call.call().map_err(|d| vec![d])?;
        if first < Duration::from_millis(200) {
            call.call().map_err(|d| vec![d])?;
        }
    }
    let runs = options.runs.max(1);
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); calls.len()];
    for round in 0..runs {
        for k in 0..calls.len() {
            let which = (round + k) % calls.len();
            times[which].push(calls[which].call().map_err(|d| vec![d])?);
        }
    }
    let mut timings = compiled.iter().zip(&defs).zip(times).map(
        |(((_, compile_time, check_error), d), times)| KernelTiming {
            def: d.to_string(),
            check_error: *check_error,
            compile_time: *compile_time,
            times,
        },
    );
    let main = timings.next().ok_or_else(Vec::new)?;
    let vs = timings.next();
    Ok(BenchReport {
        sizes: sizes.clone(),
        check_sizes: check_sizes.clone(),
        threads: options.threads,
        dtype: options.dtype,
        main,
        vs,
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
