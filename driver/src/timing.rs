//! Compiling, checking and timing kernels: what `atl bench` and the REPL's `:bench`
//! measure.
//!
//! Method (the bench kit's, `../shared/bench/README.md`): every kernel is compiled
//! with `-O3 -march=native -fopenmp` (and `-ffp-contract=fast`, or `-ffp-contract=off`
//! under `Fp::Strict`); each gets one warm-up call (two when the first took under
//! 0.2 s); then `R` timed calls per kernel, interleaved round-robin with a rotating
//! start so that the drift of a shared machine affects both alike. Only the kernel
//! call is timed. Before timing, each kernel runs at the check sizes on random inputs
//! and must agree with the interpreter within the element type's tolerance (E0936).
//! The monitor sees every stage and every timed call, and a cancellation stops the
//! work between two of them (E0609).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use atl_emit_c::{CompileOptions, Compiled, Dtype, Fp};
use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, Tensor};
use atl_lang::ir::Program;
use atl_lang::monitor::Monitor;
use atl_lower::Kernel;

use crate::compare::compare_outputs;
use crate::lowering::Gated;

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
                atl_lang::interp::random_input(decl, shape.clone(), k as u64 + 1, &|n| {
                    sizes.get(n).copied()
                }),
            );
        }
    }
    Ok(inputs)
}

/// Compiles `kernel` as `atl bench` does (`-O3 -march=native -fopenmp`, the `fp`
/// contraction flag), returning the time the compiler took.
pub fn compile(
    kernel: &Kernel,
    dtype: Dtype,
    fp: Fp,
) -> Result<(Compiled, Duration), Vec<Diagnostic>> {
    compile_within(kernel, dtype, fp, None)
}

/// [`compile`], stopping the compiler after `limit` (E0930).
pub fn compile_within(
    kernel: &Kernel,
    dtype: Dtype,
    fp: Fp,
    limit: Option<Duration>,
) -> Result<(Compiled, Duration), Vec<Diagnostic>> {
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
            time_limit: limit,
            ..CompileOptions::default()
        },
    )
    .map_err(|d| vec![d])?;
    Ok((compiled, t.elapsed()))
}

/// Runs `compiled` at the check sizes and compares with the interpreter: the largest
/// relative error, or E0936 above the element type's tolerance.
pub fn check(
    monitor: Option<&Arc<Monitor>>,
    program: &Program,
    def: &str,
    compiled: &Compiled,
    sizes: &BTreeMap<String, i64>,
    dtype: Dtype,
) -> Result<f64, Diagnostic> {
    let inputs = random_inputs(program, sizes)?;
    let eval_options = EvalOptions {
        monitor: monitor.cloned(),
        ..EvalOptions::default()
    };
    let want = atl_lang::interp::eval_def(program, def, sizes, &inputs, &eval_options)?;
    let got = compiled.run(sizes, &inputs)?.output;
    // As `atl run` compares: NaN against NaN and an infinity against the same one agree,
    // the error is over the elements finite on both sides.
    let c = compare_outputs(&got, &want);
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

/// E0609 when the monitor was cancelled: timing stops between two calls.
fn check_cancel(monitor: Option<&Arc<Monitor>>) -> Result<(), Vec<Diagnostic>> {
    match monitor {
        Some(m) if m.is_cancelled() => Err(vec![Diagnostic::error(
            "E0609",
            "the benchmark was interrupted",
        )]),
        _ => Ok(()),
    }
}

/// Compiles, checks and times `kernels` (lowered, and validated unless the user said
/// otherwise, from `gated`, in the same order; the first is the main one, the second,
/// if any, the one it is compared with); see the module documentation.
pub fn bench(
    monitor: Option<&Arc<Monitor>>,
    gated: &[Gated<'_>],
    kernels: &[Kernel],
    sizes: &BTreeMap<String, i64>,
    given: &BTreeMap<String, Tensor>,
    check_sizes: &BTreeMap<String, i64>,
    options: &BenchOptions,
) -> Result<BenchReport, Vec<Diagnostic>> {
    let Some(program) = gated.first().map(Gated::program) else {
        return Err(Vec::new());
    };
    let stage = |what: String, total: u64| -> Result<(), Vec<Diagnostic>> {
        check_cancel(monitor)?;
        if let Some(m) = monitor {
            m.begin(what, total);
        }
        Ok(())
    };
    let defs: Vec<&str> = gated.iter().map(Gated::name).collect();
    // Inputs given replace the random ones (a user's matrix: a sparse kernel's speed
    // depends on its structure).
    let mut inputs = random_inputs(program, sizes).map_err(|d| vec![d])?;
    inputs.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut compiled = Vec::new();
    for (kernel, d) in kernels.iter().zip(&defs) {
        stage(format!("compiling `{d}`"), 0)?;
        let (mut c, compile_time) = compile(kernel, options.dtype, options.fp)?;
        stage(format!("checking `{d}` against the interpreter"), 0)?;
        let check_error =
            check(monitor, program, d, &c, check_sizes, options.dtype).map_err(|e| vec![e])?;
        c.set_threads(options.threads).map_err(|e| vec![e])?;
        compiled.push((c, compile_time, check_error));
    }
    let mut calls = Vec::new();
    for (c, _, _) in &compiled {
        calls.push(c.prepare(sizes, &inputs).map_err(|d| vec![d])?);
    }
    // Warm-up: one call, two when the first was short.
    stage("warming up".to_string(), 0)?;
    for call in &mut calls {
        let first = call.call().map_err(|d| vec![d])?;
        if first < Duration::from_millis(200) {
            check_cancel(monitor)?;
            call.call().map_err(|d| vec![d])?;
        }
    }
    let runs = options.runs.max(1);
    stage("timing".to_string(), (runs * calls.len()) as u64)?;
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); calls.len()];
    for round in 0..runs {
        for k in 0..calls.len() {
            check_cancel(monitor)?;
            let which = (round + k) % calls.len();
            times[which].push(calls[which].call().map_err(|d| vec![d])?);
            if let Some(m) = monitor {
                m.advance(1);
            }
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
