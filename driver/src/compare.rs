//! A compiled kernel's output against the reference interpreter's: [`compare`] compiles
//! a kernel, runs it and the interpreter on the same inputs (what `atl run` does), and
//! [`compare_outputs`] compares two outputs element by element, non-finite values
//! included (also what `atl bench` checks before timing).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use atl_emit_c::{CompileOptions, Dtype, EmitOptions};
use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, Tensor};
use atl_lang::ir::Program;
use atl_lang::monitor::Monitor;
use atl_lower::Kernel;

/// What `atl run` measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    pub def: String,
    pub dtype: Dtype,
    /// The compiled kernel's output.
    pub output: Tensor,
    /// The kernel's output against the interpreter's.
    pub comparison: Comparison,
    pub compile_time: Duration,
    pub kernel_time: Duration,
    pub interp_time: Duration,
}

/// Compiles `kernel` (the lowering of `def`), runs it at `sizes` on `inputs` (every
/// input of the program must be given; the command fills missing ones with
/// `random:SEED`), runs the reference interpreter on the same inputs and compares.
/// The stages are reported to `monitor`, and the interpreter stops (E0609) when it is
/// cancelled.
pub fn compare(
    monitor: Option<&Arc<Monitor>>,
    kernel: &Kernel,
    program: &Program,
    def: &str,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
    options: &EmitOptions,
) -> Result<RunReport, Vec<Diagnostic>> {
    // Check the call before compiling: bad sizes or inputs are the user's to fix.
    atl_lower::check_call(kernel, sizes, inputs).map_err(|d| vec![d])?;
    let stage = |what: &str| {
        if let Some(m) = monitor {
            m.begin(what, 0);
        }
    };
    stage("compiling");
    let t = Instant::now();
    let compiled =
        atl_emit_c::compile(kernel, options, &CompileOptions::default()).map_err(|d| vec![d])?;
    let compile_time = t.elapsed();
    stage("running the kernel");
    let ran = compiled.run(sizes, inputs).map_err(|d| vec![d])?;
    stage(&format!("evaluating `{def}`"));
    let t = Instant::now();
    let eval_options = EvalOptions {
        monitor: monitor.cloned(),
        ..EvalOptions::default()
    };
    let want = atl_lang::interp::eval_def(program, def, sizes, inputs, &eval_options)
        .map_err(|d| vec![d])?;
    let interp_time = t.elapsed();
    let comparison = compare_outputs(&ran.output, &want);
    Ok(RunReport {
        def: def.to_string(),
        dtype: options.dtype,
        output: ran.output,
        comparison,
        compile_time,
        kernel_time: ran.elapsed,
        interp_time,
    })
}

/// The kernel's output against the interpreter's, element by element. Two values
/// *agree* when both are finite, both NaN, or both the same infinity; errors, the
/// scale and the worst element are over the elements where both values are finite.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Whether the two outputs have the same number of elements (nothing else is
    /// compared when they do not).
    pub same_size: bool,
    /// Elements where both values are finite.
    pub finite: usize,
    /// Elements where both are NaN, or both the same infinity.
    pub non_finite: usize,
    /// Elements where only one value is non-finite, or the infinities have opposite
    /// signs.
    pub mismatches: usize,
    /// The first of those.
    pub first_mismatch: Option<WorstElement>,
    /// Largest `|kernel - interpreter|` over finite pairs.
    pub max_abs_error: f64,
    /// Largest `|kernel - interpreter| / |interpreter|` over finite pairs whose
    /// reference is not zero.
    pub max_rel_error: f64,
    /// `max(1, max |interpreter|)` over finite references: what the tolerance is
    /// relative to.
    pub scale: f64,
    /// `max_abs_error / scale`.
    pub max_scaled_error: f64,
    /// The finite pair with the largest error.
    pub worst: Option<WorstElement>,
    /// Finite pairs whose bits differ (`+0` and `-0` included).
    pub bit_differences: usize,
    /// The first of those.
    pub first_bit_difference: Option<WorstElement>,
}

/// Compares `got` (the kernel's output) with `want` (the interpreter's): see
/// [`Comparison`].
pub fn compare_outputs(got: &Tensor, want: &Tensor) -> Comparison {
    let element = |k: usize| WorstElement {
        coordinates: unflatten(k, &want.shape),
        kernel: got.data[k],
        interpreter: want.data[k],
    };
    let mut c = Comparison {
        same_size: got.data.len() == want.data.len(),
        finite: 0,
        non_finite: 0,
        mismatches: 0,
        first_mismatch: None,
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        scale: 1.0,
        max_scaled_error: 0.0,
        worst: None,
        bit_differences: 0,
        first_bit_difference: None,
    };
    if !c.same_size {
        return c;
    }
    let mut worst: Option<(usize, f64)> = None;
    for (k, (&g, &w)) in got.data.iter().zip(&want.data).enumerate() {
        if g.is_finite() && w.is_finite() {
            c.finite += 1;
            c.scale = c.scale.max(w.abs());
            let e = (g - w).abs();
            if worst.is_none_or(|(_, we)| e > we) {
                worst = Some((k, e));
            }
            c.max_abs_error = c.max_abs_error.max(e);
            if w != 0.0 {
                c.max_rel_error = c.max_rel_error.max(e / w.abs());
            }
            if g.to_bits() != w.to_bits() {
                c.bit_differences += 1;
                if c.first_bit_difference.is_none() {
                    c.first_bit_difference = Some(element(k));
                }
            }
        } else if (g.is_nan() && w.is_nan()) || (g.is_infinite() && g == w) {
            c.non_finite += 1;
        } else {
            c.mismatches += 1;
            if c.first_mismatch.is_none() {
                c.first_mismatch = Some(element(k));
            }
        }
    }
    c.max_scaled_error = c.max_abs_error / c.scale;
    c.worst = worst.map(|(k, _)| element(k));
    c
}

/// The element of the output where the kernel is furthest from the interpreter.
#[derive(Clone, Debug, PartialEq)]
pub struct WorstElement {
    pub coordinates: Vec<usize>,
    pub kernel: f64,
    pub interpreter: f64,
}

/// The row-major coordinates of flat position `k` in `shape`.
fn unflatten(mut k: usize, shape: &[usize]) -> Vec<usize> {
    let mut coords = vec![0; shape.len()];
    for (c, &extent) in coords.iter_mut().zip(shape).rev() {
        if extent > 0 {
            *c = k % extent;
            k /= extent;
        }
    }
    coords
}
