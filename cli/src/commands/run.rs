//! `atl run`: compiles a definition with the system C compiler (after the gate of
//! [`crate::lowering`]), runs it, runs the reference interpreter on the same inputs
//! and compares.
//!
//! ```text
//! atl run FILE --def NAME --sizes n=4,m=5 [--input f=random:SEED|f=PATH.npy|A=PATH.mtx|A=PATH.npz]...
//!     [--dtype f32|f64] [--tolerance T] [--ir KERNEL.ir] [--no-validate]
//!     Inputs not given are filled with random:1, random:2, … in declaration order.
//!     The kernel is validated first (`atl-validate`, as `atl emit` does): one that is
//!     not validated is refused (E0950, E0951) unless --no-validate.
//!     --ir compiles and runs the given loop-IR kernel (the text `atl emit --ir`
//!     prints, perhaps edited) instead of the one lowering produces; it must be a
//!     kernel of the definition (same sizes, inputs, output shape and source, E0943),
//!     and it is first run by the checking loop-IR interpreter at these sizes, so that
//!     a kernel that would access memory out of bounds is refused before it is
//!     compiled (E0921 and the other E092x codes).
//!     Prints the output shape, the maximum absolute and relative error, and the
//!     compile, kernel and interpreter times (`write_run_report`); exits 1 with E0939
//!     (naming the worst element) when the kernel disagrees with the interpreter by
//!     more than the tolerance. --json prints one document instead (docs/json.md),
//!     also on a disagreement (then with the verdict `disagrees`, and exit 1); what
//!     fails before the comparison prints only diagnostics.
//! ```
//!
//! The comparison: the error of an element is `|kernel - interpreter|` divided by the
//! scale `max(1, max |interpreter|)` over the whole output (so elements near zero are
//! not judged by a relative error they cannot have). The default tolerance is
//! `8 · ε · (1 + L)`, where `ε` is the element type's unit roundoff (2^-24 for `f32`,
//! 2^-53 for `f64`) and `L` the summation length: the number of terms of the longest
//! accumulation of the definition at these sizes (`summation_length`) — the classic
//! `n · ε` bound of a floating-point sum, with room for the rounding of the inputs
//! to the element type and for the reassociation of `real`-graded rewrites.
//!
//! Non-finite values ([`compare_outputs`]): a NaN against a NaN, or an infinity
//! against the same infinity, agree (the report counts them); an element non-finite on
//! one side only, or infinite with opposite signs, is a disagreement (E0939, naming the
//! first). Errors, the scale and the worst element are over the elements finite on
//! both sides.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use atl_emit_c::{Dtype, Fp};
use atl_lang::diag::Diagnostic;
use clap::Args;
use serde_json::{Value, json};

use super::{FP_HELP, json};
use crate::ctx::Ctx;
use atl_driver::compare::{Comparison, RunReport, WorstElement, compare, compare_outputs};
use atl_driver::failure::Failure;
use atl_driver::inputs::{parse_dtype, parse_fp, prepare};
use atl_driver::lowering::{Validation, gate_and_lower_loaded_for, validate_loaded};
use atl_emit_c::EmitOptions;

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
    /// The largest error accepted, relative to `max(1, max |reference|)`; default
    /// `8 · ε · (1 + L)` (ε the dtype's unit roundoff, L the summation length).
    #[arg(long = "tolerance", value_name = "T")]
    pub tolerance: Option<f64>,
    /// Compile and run this loop-IR kernel (as `atl emit --ir` prints it) instead of
    /// the one lowering produces; it must be a kernel of the definition.
    #[arg(long = "ir", value_name = "KERNEL.ir")]
    pub ir: Option<PathBuf>,
    /// Run the kernel even if the translation validator does not validate it.
    #[arg(long = "no-validate")]
    pub no_validate: bool,
    #[arg(long = "fp", default_value = "fast", help = FP_HELP)]
    pub fp: String,
    /// Print one JSON document (docs/json.md) instead of the text report (also when
    /// the kernel disagrees with the interpreter; exit status unchanged).
    #[arg(long)]
    pub json: bool,
}

/// `atl run`.
pub fn run(args: &RunArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let dtype = parse_dtype(&args.dtype)?;
    let fp = parse_fp(&args.fp)?;
    if let Some(t) = args.tolerance
        && !(t.is_finite() && t >= 0.0)
    {
        return Err(Failure::usage(format!(
            "`--tolerance {t}`: expected a finite number >= 0"
        )));
    }
    let mut prepared = prepare(ctx, file, args.def.as_deref(), &args.sizes, &args.inputs)?;
    let progress = ctx.progress("running");
    let mut kernel = gate_and_lower_loaded_for(ctx, file, &prepared.loaded, &prepared.name, fp)?;
    if let Some(ir) = &args.ir {
        kernel = super::validate::read_kernel_for(ir, &kernel)?;
    }
    validate_loaded(
        ctx,
        file,
        &prepared.loaded,
        &prepared.name,
        &kernel,
        Validation::from_flag(args.no_validate),
        false,
    )?;
    // Inputs not given: random:1, random:2, … in declaration order.
    for (k, decl) in prepared.loaded.program.inputs.iter().enumerate() {
        if !prepared.inputs.contains_key(&decl.name)
            && let Some(shape) = prepared.input_shapes.get(&decl.name)
        {
            let sizes = &prepared.sizes;
            prepared.inputs.insert(
                decl.name.clone(),
                atl_lang::interp::random_input(decl, shape.clone(), k as u64 + 1, &|n| {
                    sizes.get(n).copied()
                }),
            );
        }
    }
    if let Some(ir) = &args.ir {
        // A given kernel is unchecked: the checking interpreter runs it first, so that
        // one that would read or write out of its buffers never runs as C.
        atl_lower::run_kernel(&kernel, &prepared.sizes, &prepared.inputs).map_err(|d| {
            Failure::message(format!(
                "error: the loop-IR interpreter refuses the kernel of `{}`; it is not compiled",
                ir.display()
            ))
            .then_line(format!("error[{}]: {}", d.code, d.message))
        })?;
    }
    // `atl run` never exposes the symbol: any definition name works.
    let options = EmitOptions {
        symbol: Some(atl_emit_c::internal_symbol(&kernel.name)),
        dtype,
        fp,
    };
    let report = compare(
        ctx.monitor.as_ref(),
        &kernel,
        &prepared.loaded.program,
        &prepared.name,
        &prepared.sizes,
        &prepared.inputs,
        &options,
    )
    .map_err(|diags| Failure::diagnostics(diags, file, &prepared.loaded.source))?;
    drop(progress);
    if !args.json {
        let _ = write_run_report(&report, ctx.stdout);
    }
    let tolerance = args.tolerance.unwrap_or_else(|| {
        default_tolerance(dtype, summation_length(&kernel.source, &prepared.sizes))
    });
    let grade = prepared
        .loaded
        .derivations
        .iter()
        .find(|d| d.name == prepared.name)
        .map(|d| d.grade());
    let bits = bit_check(fp, dtype, grade);
    // Under strict, the C rounds every operation as written: bit for bit the loop IR's
    // own evaluation (the kernel's order of operations, in f64).
    let loop_ir = match bits {
        BitCheck::Fast | BitCheck::Float => None,
        BitCheck::On | BitCheck::Real => Some(
            atl_lower::run_kernel(&kernel, &prepared.sizes, &prepared.inputs)
                .map(|t| compare_outputs(&report.output, &t))
                .map_err(|d| Failure::diagnostics(vec![d], file, &prepared.loaded.source))?,
        ),
    };
    if !args.json {
        let _ = write_bit_check(&report, bits, loop_ir.as_ref(), &prepared.name, ctx.stdout);
    }
    let diag = loop_ir
        .as_ref()
        .and_then(|c| bit_disagreement(&report.def, c, &prepared.sizes));
    let diag = diag.or_else(|| disagreement(&report, &prepared.sizes, tolerance));
    if args.json {
        let verdict = if diag.is_some() {
            "disagrees"
        } else {
            "agrees"
        };
        let doc = run_json(
            &report,
            &prepared.sizes,
            fp,
            tolerance,
            bits,
            loop_ir.as_ref(),
            verdict,
        );
        json::print(ctx.stdout, &doc);
    }
    if let Some(diag) = diag {
        return Err(Failure::diagnostics(
            vec![diag],
            file,
            &prepared.loaded.source,
        ));
    }
    Ok(())
}

/// The `--json` document of `atl run` (docs/json.md): the report, the tolerance, the
/// bit checks and the verdict (`agrees` or `disagrees`).
fn run_json(
    report: &RunReport,
    sizes: &BTreeMap<String, i64>,
    fp: Fp,
    tolerance: f64,
    bits: BitCheck,
    loop_ir: Option<&Comparison>,
    verdict: &str,
) -> Value {
    let c = &report.comparison;
    let element = |w: &WorstElement| {
        json!({
            "coordinates": w.coordinates,
            "kernel": json::number(w.kernel),
            "interpreter": json::number(w.interpreter),
        })
    };
    // Errors are over the elements finite on both sides: none without such elements.
    let error = |v: f64| {
        if c.finite == 0 {
            Value::Null
        } else {
            json::number(v)
        }
    };
    let (bit_check, bit_identical) = match bits {
        BitCheck::Fast => ("fast", Value::Null),
        BitCheck::Float => ("float", Value::Null),
        BitCheck::Real => ("real", Value::Null),
        BitCheck::On => ("on", json!(c.finite - c.bit_differences)),
    };
    json!({
        "command": "run",
        "def": report.def,
        "dtype": dtype_word(report.dtype),
        "fp": fp_word(fp),
        "sizes": json::sizes(sizes),
        "output_shape": report.output.shape,
        "elements": report.output.data.len(),
        "finite": c.finite,
        "non_finite": c.non_finite,
        "mismatches": c.mismatches,
        "max_abs_error": error(c.max_abs_error),
        "max_rel_error": error(c.max_rel_error),
        "max_scaled_error": error(c.max_scaled_error),
        "scale": json::number(c.scale),
        "tolerance": json::number(tolerance),
        "worst": c.worst.as_ref().map_or(Value::Null, element),
        "first_mismatch": c.first_mismatch.as_ref().map_or(Value::Null, element),
        "bit_check": bit_check,
        "bit_identical_to_interpreter": bit_identical,
        "bit_identical_to_loop_ir": loop_ir.map(|l| l.finite - l.bit_differences),
        "compile_ms": json::ms(report.compile_time),
        "kernel_ms": json::ms(report.kernel_time),
        "interpreter_ms": json::ms(report.interp_time),
        "verdict": verdict,
    })
}

/// The element type as its option word (`f32`, `f64`).
pub(crate) fn dtype_word(d: Dtype) -> &'static str {
    match d {
        Dtype::F32 => "f32",
        Dtype::F64 => "f64",
    }
}

/// The floating-point mode as its option word (`fast`, `strict`).
pub(crate) fn fp_word(fp: Fp) -> &'static str {
    match fp {
        Fp::Fast => "fast",
        Fp::Strict => "strict",
    }
}

/// What `atl run` compares bit for bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitCheck {
    /// `--fp strict` in `f64` for a specification or a derivation graded `exact`: the
    /// C must be bit for bit the loop IR's evaluation of the kernel (every operation
    /// rounded as written, in the kernel's order), and the report counts the elements
    /// bit-identical to the interpreter's.
    On,
    /// `--fp strict` in `f64` for a derivation graded `real`: as [`BitCheck::On`].
    Real,
    /// `--fp fast` (the default): multiply-adds may be fused; only the tolerance.
    Fast,
    /// `--fp strict` in `f32`: the kernel rounds to `float`, both interpreters compute
    /// in `f64`; only the tolerance.
    Float,
}

/// The bit check of `atl run` for these options and the definition's grade (`None`
/// for a definition that is not a derivation).
pub fn bit_check(fp: Fp, dtype: Dtype, grade: Option<atl_rewrites::rule::Grade>) -> BitCheck {
    match (fp, dtype, grade) {
        (Fp::Fast, _, _) => BitCheck::Fast,
        (Fp::Strict, Dtype::F32, _) => BitCheck::Float,
        (Fp::Strict, Dtype::F64, Some(atl_rewrites::rule::Grade::Real)) => BitCheck::Real,
        (Fp::Strict, Dtype::F64, _) => BitCheck::On,
    }
}

/// The report's lines about bits under `--fp strict` (nothing under `fast`): against
/// the loop IR's evaluation (`loop_ir`), and against the interpreter.
fn write_bit_check(
    report: &RunReport,
    bits: BitCheck,
    loop_ir: Option<&Comparison>,
    def: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let c = &report.comparison;
    if let Some(l) = loop_ir {
        writeln!(
            out,
            "--fp strict: {} of {} finite element(s) bit-identical to the loop IR's evaluation",
            l.finite - l.bit_differences,
            l.finite
        )?;
    }
    match bits {
        BitCheck::Fast => Ok(()),
        BitCheck::On => writeln!(
            out,
            "--fp strict: {} of {} finite element(s) bit-identical to the interpreter{}",
            c.finite - c.bit_differences,
            c.finite,
            if c.bit_differences == 0 {
                ""
            } else {
                " (lowering may group a sum's terms differently, e.g. nested sums into one accumulator: equal over the reals)"
            }
        ),
        BitCheck::Float => writeln!(
            out,
            "--fp strict: bits not compared (the kernel computes in float, the interpreters in double: use --dtype f64)"
        ),
        BitCheck::Real => writeln!(
            out,
            "--fp strict: bits not compared with the interpreter (`{def}` is graded real: {})",
            atl_lang::steps::GRADE_REAL_MEANING
        ),
    }
}

/// E0939 when, under `--fp strict` in `f64`, an element finite on both sides differs
/// in its bits from the loop IR's evaluation (`c`; the first one named), or is
/// non-finite on one side only.
fn bit_disagreement(
    def: &str,
    c: &Comparison,
    sizes: &BTreeMap<String, i64>,
) -> Option<Diagnostic> {
    let w = c
        .first_bit_difference
        .as_ref()
        .or(c.first_mismatch.as_ref())?;
    let shown: Vec<String> = sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let coords: Vec<String> = w.coordinates.iter().map(|c| c.to_string()).collect();
    Some(
        Diagnostic::error(
            "E0939",
            format!(
                "the compiled kernel of `{def}` is not bit for bit the loop IR's evaluation at {}: at [{}] the C computes {:e} where the loop IR gives {:e}",
                shown.join(","),
                coords.join(", "),
                w.kernel,
                w.interpreter
            ),
        )
        .with_note(format!(
            "{} of {} finite element(s) differ; under `--fp strict` the C must round every operation as written",
            c.bit_differences, c.finite
        ))
        .with_help(
            "check that `CFLAGS` holds nothing like -ffast-math; otherwise it is a bug of C emission: report it with the file",
        ),
    )
}

/// The default tolerance of `atl run` (module documentation): `8 · ε · (1 + L)`.
pub fn default_tolerance(dtype: Dtype, summation_length: u64) -> f64 {
    let unit_roundoff = match dtype {
        Dtype::F32 => f64::from(f32::EPSILON) / 2.0,
        Dtype::F64 => f64::EPSILON / 2.0,
    };
    8.0 * unit_roundoff * (1.0 + summation_length as f64)
}

/// The number of terms of the longest accumulation in `e` at `sizes`: a `sum` counts
/// its extent times the length of its body, `+`/`-` and a `let` add the lengths of
/// their parts (the error of a value read from a `let` buffer carries over), anything
/// else is the longest of its children, a leaf 0. A range that mentions enclosing
/// binders is measured at every combination of their extreme values (exact for the
/// triangular ranges programs use); one that cannot be evaluated counts as the largest
/// size. Saturating: it is a measure for a tolerance, not a count anything relies on.
pub fn summation_length(e: &atl_lang::ir::Expr, sizes: &BTreeMap<String, i64>) -> u64 {
    let mut binders = Vec::new();
    length_in(e, sizes, &mut binders)
}

fn length_in(
    e: &atl_lang::ir::Expr,
    sizes: &BTreeMap<String, i64>,
    binders: &mut Vec<(String, i64, i64)>,
) -> u64 {
    use atl_lang::ir::{BinOp, ExprKind};
    match &e.kind {
        // A max-reduction rounds nothing itself: like a `gen`, its length is its body's.
        ExprKind::Gen { var, lo, hi, body }
        | ExprKind::Sum { var, lo, hi, body }
        | ExprKind::MaxRed { var, lo, hi, body } => {
            let (lo_min, _) = extremes(lo, sizes, binders);
            let (_, hi_max) = extremes(hi, sizes, binders);
            let extent = hi_max.saturating_sub(lo_min).max(0);
            binders.push((var.clone(), lo_min, hi_max.saturating_sub(1).max(lo_min)));
            let inner = length_in(body, sizes, binders);
            binders.pop();
            if matches!(e.kind, ExprKind::Sum { .. }) {
                (extent as u64).saturating_mul(inner.max(1))
            } else {
                inner
            }
        }
        ExprKind::Binary {
            op: BinOp::Add | BinOp::Sub,
            lhs,
            rhs,
        } => length_in(lhs, sizes, binders).saturating_add(length_in(rhs, sizes, binders)),
        ExprKind::Let { value, body, .. } => {
            length_in(value, sizes, binders).saturating_add(length_in(body, sizes, binders))
        }
        _ => e
            .children()
            .into_iter()
            .map(|c| length_in(c, sizes, binders))
            .max()
            .unwrap_or(0),
    }
}

/// The least and greatest value of `ix` over the extreme values of the binders it
/// mentions (all combinations, up to 6 binders); the largest size when it cannot be
/// evaluated.
fn extremes(
    ix: &atl_lang::index::IndexExpr,
    sizes: &BTreeMap<String, i64>,
    binders: &[(String, i64, i64)],
) -> (i64, i64) {
    let largest = sizes.values().copied().max().unwrap_or(1);
    let mentioned: Vec<&(String, i64, i64)> =
        binders.iter().filter(|(v, _, _)| ix.mentions(v)).collect();
    if mentioned.len() > 6 {
        return (0, largest);
    }
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    for corner in 0..(1u32 << mentioned.len()) {
        let value = ix.eval(&|name: &str| {
            if let Some(k) = mentioned.iter().position(|(v, _, _)| v == name) {
                let (_, lo, hi) = mentioned[k];
                Some(if corner & (1 << k) == 0 { *lo } else { *hi })
            } else {
                sizes.get(name).copied()
            }
        });
        match value {
            Ok(v) => {
                min = min.min(v);
                max = max.max(v);
            }
            Err(_) => return (0, largest),
        }
    }
    (min, max)
}

/// E0939 when the outputs disagree: different lengths; an element non-finite on one
/// side only (or infinities of opposite signs), the first one named; or the largest
/// scaled error over the finite elements above `tolerance`, the worst element named.
fn disagreement(
    report: &RunReport,
    sizes: &BTreeMap<String, i64>,
    tolerance: f64,
) -> Option<Diagnostic> {
    let c = &report.comparison;
    let shown: Vec<String> = sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let at = |w: &WorstElement| {
        let coords: Vec<String> = w.coordinates.iter().map(|c| c.to_string()).collect();
        format!(
            "at [{}] the kernel computes {} where the interpreter gives {}",
            coords.join(", "),
            w.kernel,
            w.interpreter
        )
    };
    let error = |what: String| {
        Diagnostic::error(
            "E0939",
            format!(
                "the compiled kernel of `{}` disagrees with the interpreter at {}: {what}",
                report.def,
                shown.join(",")
            ),
        )
    };
    if !c.same_size {
        return Some(error(
            "the output has the wrong number of elements".to_string(),
        ));
    }
    if let Some(w) = &c.first_mismatch {
        return Some(
            error(at(w))
                .with_note(format!(
                    "{} element(s) non-finite on one side only (or infinite with opposite signs)",
                    c.mismatches
                ))
                .with_help(
                    "a NaN or an infinity on one side only is not rounding: it is a bug of lowering or C emission (report it with the file), or of a rewrite that is unsound for non-finite values",
                ),
        );
    }
    if c.max_scaled_error <= tolerance {
        return None;
    }
    let w = c.worst.as_ref()?;
    Some(
        error(at(w))
        .with_note(format!(
            "error {:.3e} relative to the output's scale {:.3e}; tolerance {tolerance:.3e}",
            c.max_scaled_error, c.scale
        ))
        .with_help(
            "if the difference is rounding (long sums, reassociating rewrites), raise it with `--tolerance`; otherwise it is a bug of lowering or C emission: report it with the file",
        ),
    )
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
    let c = &report.comparison;
    if c.finite == 0 {
        writeln!(
            out,
            "max error vs interpreter: none (no element is finite on both sides)"
        )?;
    } else {
        writeln!(
            out,
            "max error vs interpreter: {:.3e} absolute, {:.3e} relative",
            c.max_abs_error, c.max_rel_error
        )?;
    }
    if c.non_finite > 0 {
        writeln!(
            out,
            "non-finite on both sides: {} of {} elements (the same NaN or infinity; errors are over the {} finite ones)",
            c.non_finite,
            report.output.data.len(),
            c.finite
        )?;
    }
    if c.mismatches > 0 {
        writeln!(
            out,
            "non-finite on one side only: {} of {} elements",
            c.mismatches,
            report.output.data.len()
        )?;
    }
    writeln!(
        out,
        "compile {:.1} ms, kernel {:.3} ms, interpreter {:.3} ms",
        ms(report.compile_time),
        ms(report.kernel_time),
        ms(report.interp_time)
    )
}
