//! `atl validate`: translation validation of a definition's kernel (issue 19) — the
//! kernel lowering produces (after the gate of [`crate::lowering`], as `atl emit`
//! lowers it), or a kernel given as loop-IR text (`--ir`, the form `atl emit --ir`
//! prints), checked by `atl-validate` for every size the preconditions allow.
//!
//! ```text
//! atl validate FILE [--def NAME] [--ir KERNEL.ir]
//!     Prints every obligation with its verdict (proved, refuted with a
//!     counterexample, unknown), then the kernel's verdict. Exits 0 only when the
//!     kernel is validated (every obligation proved, the values against the
//!     definition included); 1 when it is rejected (a counterexample, or a wrong
//!     result found by running it at small sizes) or not validated (the reasons).
//! ```
//!
//! With `--ir`, the kernel text must declare the definition's sizes, inputs and output
//! shape, and its `source:` expression must be the definition's normalized source (the
//! one lowering records, compared up to the names of bound variables), so that what is
//! validated is a kernel for that definition (E0943 otherwise).

use std::path::{Path, PathBuf};

use atl_lang::diag::Diagnostic;
use atl_lower::Kernel;
use atl_validate::KernelVerdict;
use clap::Args;

use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::load::{load_derived, pick_loaded_def, read_source};
use atl_driver::lowering::gate_and_lower_loaded;

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
}

/// `atl validate`.
pub fn run(args: &ValidateArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let loaded = load_derived(ctx, file)?;
    let name = pick_loaded_def(&loaded, file, args.def.as_deref())?;
    let lowered = gate_and_lower_loaded(ctx, file, &loaded, &name)?;
    let kernel = match &args.ir {
        Some(ir) => read_kernel_for(ir, &lowered)?,
        None => lowered,
    };
    let source = atl_validate::Source {
        program: &loaded.program,
        shapes: &loaded.shapes,
        def: &name,
    };
    let report = atl_validate::validate(&kernel, Some(&source), &atl_solver::Solver::new());
    let _ = writeln!(ctx.stdout, "{report}");
    match &report.verdict {
        KernelVerdict::Validated => Ok(()),
        KernelVerdict::Rejected {
            disagreement: Some(_),
            ..
        } => Err(Failure::message(format!(
            "error: the kernel of `{name}` is rejected: it computes a wrong result (above)"
        ))),
        KernelVerdict::Rejected { .. } => Err(Failure::message(format!(
            "error: the kernel of `{name}` is rejected: an obligation is false (counterexample above)"
        ))),
        KernelVerdict::NotValidated { .. } => Err(Failure::message(format!(
            "error: the kernel of `{name}` is not validated (the reasons are above)"
        ))),
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
    if kernel.inputs != lowered.inputs {
        let show = |k: &Kernel| {
            k.inputs
                .iter()
                .map(|b| format!("{}: {:?}", b.name, shape_text(&b.shape)))
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
