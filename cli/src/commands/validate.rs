//! `atl validate`: translation validation of a definition's kernel (issue 19) — the
//! kernel lowering produces (after the gate of [`crate::lowering`], as `atl emit`
//! lowers it), or a kernel given as loop-IR text (`--ir`, the form `atl emit --ir`
//! prints), checked by `atl-validate` for every size the preconditions allow.
//!
//! ```text
//! atl validate FILE [--def NAME] [--ir KERNEL.ir] [--fp fast|strict]
//!     Prints every obligation with its verdict (proved, refuted with a
//!     counterexample, unknown), then the kernel's verdict. Exits 0 only when the
//!     kernel is validated (every obligation proved, the values against the
//!     definition included); 1 when it is rejected (a counterexample, or a wrong
//!     result found by running it at small sizes) or not validated (the reasons).
//!     --fp strict validates the kernel `atl emit --fp strict` writes (nested sums
//!     keep their own accumulators); the default is the `--fp fast` one.
//!     --json prints the same as one document (docs/json.md), with the same exit
//!     status; a file that does not check or lower prints only diagnostics.
//! ```
//!
//! With `--ir`, the kernel text must declare the definition's sizes, inputs and output
//! shape, and its `source:` expression must be the definition's normalized source (the
//! one lowering records, compared up to the names of bound variables), so that what is
//! validated is a kernel for that definition (E0943 otherwise).

use std::path::{Path, PathBuf};

use atl_lang::diag::Diagnostic;
use atl_lower::Kernel;
use atl_validate::concrete::{Difference, Disagreement};
use atl_validate::{KernelVerdict, Method, ObligationKind};
use clap::Args;
use serde_json::{Value, json};

use super::json;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::inputs::parse_fp;
use atl_driver::load::{load_derived, pick_loaded_def, read_source};
use atl_driver::lowering::gate_and_lower_loaded_for;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    pub file: PathBuf,
    /// Definition or derivation whose kernel is validated (default: the last
    /// definition).
    #[arg(long = "def")]
    pub def: Option<String>,
    /// Validate this loop-IR text (as `atl emit --ir` prints it) instead of the kernel
    /// lowering produces; it must be a kernel of the definition.
    #[arg(long = "ir", value_name = "KERNEL.ir")]
    pub ir: Option<PathBuf>,
    #[arg(long = "fp", default_value = "fast", help = super::FP_HELP)]
    pub fp: String,
    /// Print one JSON document (docs/json.md): every obligation with its verdict, and
    /// the kernel's verdict (also when it is not validated; exit status unchanged).
    #[arg(long)]
    pub json: bool,
}

/// `atl validate`.
pub fn run(args: &ValidateArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let fp = parse_fp(&args.fp)?;
    let loaded = load_derived(ctx, file)?;
    let name = pick_loaded_def(&loaded, file, args.def.as_deref())?;
    let lowered = gate_and_lower_loaded_for(ctx, file, &loaded, &name, fp)?;
    let kernel = match &args.ir {
        Some(ir) => read_kernel_for(ir, &lowered)?,
        None => lowered,
    };
    let source = atl_validate::Source {
        program: &loaded.program,
        shapes: &loaded.shapes,
        def: &name,
    };
    let progress = ctx.progress(&format!("validating `{name}`"));
    let report = atl_validate::validate_monitored(
        &kernel,
        Some(&source),
        &atl_solver::Solver::new(),
        ctx.monitor.as_deref(),
    );
    drop(progress);
    if args.json {
        json::print(ctx.stdout, &report_json(&name, &report));
    } else {
        let _ = writeln!(ctx.stdout, "{report}");
    }
    // Where the details are: above in the text report, in the document with --json.
    let (wrong, counterexample, reasons) = if args.json {
        (
            "`disagreement` in the JSON document",
            "`refuted` in the JSON document",
            "`reasons` in the JSON document",
        )
    } else {
        ("above", "counterexample above", "the reasons are above")
    };
    match &report.verdict {
        KernelVerdict::Validated => Ok(()),
        KernelVerdict::Rejected {
            disagreement: Some(_),
            ..
        } => Err(Failure::message(format!(
            "error: the kernel of `{name}` is rejected: it computes a wrong result ({wrong})"
        ))),
        KernelVerdict::Rejected { .. } => Err(Failure::message(format!(
            "error: the kernel of `{name}` is rejected: an obligation is false ({counterexample})"
        ))),
        KernelVerdict::NotValidated { .. } => Err(Failure::message(format!(
            "error: the kernel of `{name}` is not validated ({reasons})"
        ))),
    }
}

/// The `--json` document of a validation report (docs/json.md, `atl validate
/// --json`).
pub fn report_json(def: &str, report: &atl_validate::Report) -> Value {
    let obligations: Vec<Value> = report
        .obligations
        .iter()
        .map(|c| {
            let (verdict, counterexample, reason) = json::verdict(&c.verdict);
            json!({
                "kind": obligation_kind(&c.obligation.kind),
                "description": c.obligation.kind.to_string(),
                "goal": c.obligation.goal.to_string(),
                "location": c.obligation.location,
                "verdict": verdict,
                "method": method_word(c.method),
                "counterexample": counterexample,
                "reason": reason,
            })
        })
        .collect();
    let (proved, refuted, unknown) = report.counts();
    let (verdict, rejections, disagreement, reasons) = match &report.verdict {
        KernelVerdict::Validated => ("validated", Vec::new(), Value::Null, Vec::new()),
        KernelVerdict::Rejected {
            refuted,
            disagreement,
        } => (
            "rejected",
            refuted
                .iter()
                .map(|r| {
                    json!({
                        "obligation": r.obligation.to_string(),
                        "counterexample": json::counterexample(&r.counterexample),
                    })
                })
                .collect(),
            disagreement.as_ref().map_or(Value::Null, disagreement_json),
            Vec::new(),
        ),
        KernelVerdict::NotValidated { reasons } => {
            ("not_validated", Vec::new(), Value::Null, reasons.clone())
        }
    };
    json!({
        "command": "validate",
        "def": def,
        "kernel": report.kernel,
        "verdict": verdict,
        "counts": {"proved": proved, "refuted": refuted, "unknown": unknown},
        "obligations": obligations,
        "refuted": rejections,
        "disagreement": disagreement,
        "reasons": reasons,
        "elapsed_ms": json::ms(report.elapsed),
    })
}

/// A wrong result found by running the kernel at small sizes.
fn disagreement_json(d: &Disagreement) -> Value {
    let (element, expected, computed, fault) = match &d.what {
        Difference::Element {
            index,
            expected,
            computed,
        } => (
            json!(index),
            json::number(*expected),
            json::number(*computed),
            Value::Null,
        ),
        Difference::Fault(why) => (Value::Null, Value::Null, Value::Null, json!(why)),
    };
    json!({
        "sizes": json::sizes(&d.sizes),
        "seed": d.seed,
        "element": element,
        "expected": expected,
        "computed": computed,
        "fault": fault,
        "text": d.to_string(),
    })
}

/// The obligation's kind as a fixed snake_case word (docs/json.md lists them).
fn obligation_kind(kind: &ObligationKind) -> &'static str {
    match kind {
        ObligationKind::Bounds { .. } => "bounds",
        ObligationKind::RecordedExtent { .. } => "recorded_extent",
        ObligationKind::Flattening { .. } => "flattening",
        ObligationKind::NaturalDivision { .. } => "natural_division",
        ObligationKind::IndexArrayRead { .. } => "index_array_read",
        ObligationKind::CheckedWhereRead { .. } => "checked_where_read",
        ObligationKind::CheckHolds { .. } => "check_holds",
        ObligationKind::AllocLength { .. } => "alloc_length",
        ObligationKind::Int64 { .. } => "int64",
        ObligationKind::FillLength { .. } => "fill_length",
        ObligationKind::WellFormed { .. } => "well_formed",
        ObligationKind::CName { .. } => "c_name",
        ObligationKind::Race { .. } => "race",
        ObligationKind::DoubleWrite { .. } => "double_write",
        ObligationKind::Folding { .. } => "folding",
        ObligationKind::Coverage { .. } => "coverage",
        ObligationKind::Initialised { .. } => "initialised",
        ObligationKind::Value { .. } => "value",
        ObligationKind::SourceShape { .. } => "source_shape",
        ObligationKind::PreconditionText { .. } => "precondition_text",
        ObligationKind::Precondition { .. } => "precondition",
    }
}

/// How an obligation was decided, as a fixed word.
fn method_word(m: Method) -> &'static str {
    match m {
        Method::Identity => "identity",
        Method::Solver => "solver",
        Method::Lemma => "lemma",
        Method::Counting => "counting",
        Method::Magnitude => "magnitude",
    }
}

/// Reads a loop-IR text (`--ir`) and checks that it is a kernel of the definition
/// `lowered` was lowered from ([`check_kernel_matches`]).
pub fn read_kernel_for(ir: &Path, lowered: &Kernel) -> Result<Kernel, Failure> {
    let text = read_source(ir)?;
    let kernel =
        atl_lower::parse::parse_kernel(&text).map_err(|d| Failure::diagnostics(d, ir, &text))?;
    check_kernel_matches(&kernel, lowered).map_err(|d| Failure::diagnostics(vec![d], ir, &text))?;
    Ok(kernel)
}

/// E0943 unless `kernel` has the sizes (in order), inputs and output shape of
/// `lowered`, and its source expression is `lowered`'s up to bound names: the kernel
/// computes — or claims to — the same definition with the same C signature.
pub fn check_kernel_matches(kernel: &Kernel, lowered: &Kernel) -> Result<(), Diagnostic> {
    let mismatch = |what: String| {
        Diagnostic::error(
            "E0943",
            format!("this kernel is not one of `{}`: {what}", lowered.name),
        )
        .at(
            atl_lang::span::Span::new(0, "kernel".len()),
            "the kernel's header",
        )
    };
    if kernel.sizes != lowered.sizes {
        return Err(mismatch(format!(
            "its sizes are ({}), the definition's ({})",
            kernel.sizes.join(", "),
            lowered.sizes.join(", ")
        )));
    }
    // Where an index array's range is checked (on entry or where read) is the
    // kernel's choice, which the validator checks: the declarations must agree.
    let declared = |k: &Kernel| {
        k.inputs
            .iter()
            .map(|b| (b.name.clone(), b.shape.clone(), b.index_array.clone()))
            .collect::<Vec<_>>()
    };
    if declared(kernel) != declared(lowered) {
        let show = |k: &Kernel| {
            k.inputs
                .iter()
                .map(|b| match &b.index_array {
                    None => format!("{}: {:?}", b.name, shape_text(&b.shape)),
                    Some(a) => format!(
                        "{}: \"int{} in {}..{}{}\"",
                        b.name,
                        shape_text(&b.shape),
                        a.lo,
                        a.hi,
                        if a.sorted { " sorted" } else { "" }
                    ),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(mismatch(format!(
            "its inputs are ({}), the definition's ({})",
            show(kernel),
            show(lowered)
        )));
    }
    if kernel.output.shape != lowered.output.shape {
        return Err(mismatch(format!(
            "its output's shape is {}, the definition's {}",
            shape_text(&kernel.output.shape),
            shape_text(&lowered.output.shape)
        )));
    }
    if !atl_lang::ir::alpha_eq(&kernel.source, &lowered.source) {
        return Err(mismatch(format!(
            "its `source:` is not the definition's normalized source, which is\n  {}",
            atl_lang::pretty::expr_to_string(&lowered.source, Default::default())
        )));
    }
    Ok(())
}

fn shape_text(shape: &[atl_lang::index::IndexExpr]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}
