//! The one way to lower a definition: the pad-type and access-safety gate
//! (`atl-padtypes`) first, then lowering to the loop IR (`atl-lower`). Lowering never
//! sees a definition that fails the gate: [`gate`] is the only way to make a
//! [`Gated`], and [`Gated::lower`] the only lowering the commands use (`emit`, `run`,
//! `bench`, and the REPL's `:ir` / `:c` through [`gate_and_lower`]).
//!
//! The core functions return data ([`NotLowered`]) so that the REPL can word its
//! answers its own way; [`gate_loaded`] and [`gate_and_lower_loaded`] are the
//! commands' side, which pass the gate's warnings to the [`Observer`] and turn a
//! refusal into a [`Failure`].

use std::path::Path;

use atl_emit_c::Fp;
use atl_lang::diag::{self, Diagnostic};
use atl_lang::ir::Program;
use atl_lang::shapes::ShapeEnv;
use atl_lower::{Kernel, LowerOptions};

use crate::failure::{Failure, Located};
use crate::load::Loaded;
use crate::observer::{Observer, begin, check_cancel};

/// Why a definition was not lowered.
#[derive(Clone, Debug)]
pub enum NotLowered {
    /// The gate refused it: its diagnostics (errors among them).
    Gate(Vec<Diagnostic>),
    /// It passed the gate but lowering failed.
    Lowering(Vec<Diagnostic>),
}

/// A definition that passed the gate, ready to lower.
#[derive(Clone, Debug)]
pub struct Gated<'p> {
    program: &'p Program,
    shapes: &'p ShapeEnv,
    name: String,
}

impl<'p> Gated<'p> {
    /// The definition's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The program it belongs to.
    pub fn program(&self) -> &'p Program {
        self.program
    }

    /// Lowers the definition to the loop IR (for `--fp fast`).
    pub fn lower(&self) -> Result<Kernel, Vec<Diagnostic>> {
        self.lower_for(Fp::Fast)
    }

    /// Lowers the definition to the loop IR for a floating-point mode
    /// ([`lower_options`]).
    pub fn lower_for(&self, fp: Fp) -> Result<Kernel, Vec<Diagnostic>> {
        lower_ungated_with(self.program, self.shapes, &self.name, &lower_options(fp))
    }
}

/// Runs the pad-type and access-safety gate on `name` (and what it uses). Passing
/// gives the [`Gated`] definition and the gate's warnings; failing gives every
/// diagnostic of the gate.
pub fn gate<'p>(
    program: &'p Program,
    shapes: &'p ShapeEnv,
    name: &str,
    solver: &atl_solver::Solver,
) -> Result<(Gated<'p>, Vec<Diagnostic>), Vec<Diagnostic>> {
    let diags = atl_padtypes::check_definition(program, shapes, solver, name);
    if diag::has_errors(&diags) {
        return Err(diags);
    }
    let gated = Gated {
        program,
        shapes,
        name: name.to_string(),
    };
    Ok((gated, diags))
}

/// The gate, then lowering; the gate's warnings are dropped (the REPL's `:ir` and `:c`,
/// which show only refusals).
pub fn gate_and_lower(
    program: &Program,
    shapes: &ShapeEnv,
    name: &str,
    solver: &atl_solver::Solver,
) -> Result<Kernel, NotLowered> {
    let (gated, _warnings) = gate(program, shapes, name, solver).map_err(NotLowered::Gate)?;
    gated.lower().map_err(NotLowered::Lowering)
}

/// Lowers `def` to the loop IR without the gate (for `--fp fast`): only for tests whose
/// programs are generated to pass it (the soundness fuzzer's oracle).
pub fn lower_ungated(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
) -> Result<Kernel, Vec<Diagnostic>> {
    lower_ungated_with(program, shapes, def, &LowerOptions::default())
}

fn lower_ungated_with(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    options: &LowerOptions,
) -> Result<Kernel, Vec<Diagnostic>> {
    atl_lower::lower_def_with(program, shapes, def, &atl_solver::Solver::new(), options)
        .map_err(|d| vec![d])
}

/// How a kernel compiled in floating-point mode `fp` is lowered: under
/// [`Fp::Strict`], every nested sum keeps its own accumulator, so the kernel rounds as
/// the definition is written (`LowerOptions::group_sums_as_written`).
pub fn lower_options(fp: Fp) -> LowerOptions {
    LowerOptions {
        group_sums_as_written: fp == Fp::Strict,
        ..LowerOptions::default()
    }
}

/// The commands' gate on a definition of a loaded file: warnings are rendered now; a
/// refusal is its diagnostics followed by a line saying nothing was emitted.
pub fn gate_loaded<'l>(
    observer: &mut dyn Observer,
    file: &Path,
    loaded: &'l Loaded,
    name: &str,
) -> Result<Gated<'l>, Failure> {
    let solver = atl_solver::Solver::new();
    match gate(&loaded.program, &loaded.shapes, name, &solver) {
        Ok((gated, warnings)) => {
            if !warnings.is_empty() {
                observer.warn(Located::new(warnings, file, &loaded.source));
            }
            Ok(gated)
        }
        Err(diags) => Err(
            Failure::diagnostics(diags, file, &loaded.source).then_line(format!(
                "error: `{name}` fails the gate before lowering; nothing was emitted"
            )),
        ),
    }
}

/// [`gate_loaded`], then lowering (for `--fp fast`); a lowering failure is its
/// diagnostics.
pub fn gate_and_lower_loaded(
    observer: &mut dyn Observer,
    file: &Path,
    loaded: &Loaded,
    name: &str,
) -> Result<Kernel, Failure> {
    gate_and_lower_loaded_for(observer, file, loaded, name, Fp::Fast)
}

/// [`gate_and_lower_loaded`] for a floating-point mode ([`lower_options`]).
pub fn gate_and_lower_loaded_for(
    observer: &mut dyn Observer,
    file: &Path,
    loaded: &Loaded,
    name: &str,
    fp: Fp,
) -> Result<Kernel, Failure> {
    gate_loaded(observer, file, loaded, name)?
        .lower_for(fp)
        .map_err(|diags| {
            let diags = diags
                .into_iter()
                .map(|d| at_definition(d, &loaded.program, name))
                .collect();
            Failure::diagnostics(diags, file, &loaded.source)
        })
}

/// A diagnostic about a definition's kernel, which names no place in the source
/// (lowering and the validator see only the kernel), pointed at the definition's
/// name.
fn at_definition(d: Diagnostic, program: &Program, name: &str) -> Diagnostic {
    match program.def(name) {
        Some(def) if d.primary.is_none() => d.at(def.name_span, "the kernel of this definition"),
        _ => d,
    }
}

/// Whether a command validates the kernel it uses: on unless `--no-validate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validation {
    /// Validate; a kernel that is not validated is refused (E0950, E0951).
    On,
    /// `--no-validate`: use the kernel unchecked (an emitted one says so).
    Off,
}

impl Validation {
    pub fn from_flag(no_validate: bool) -> Validation {
        if no_validate {
            Validation::Off
        } else {
            Validation::On
        }
    }
}

/// The comment heading a C file or header emitted with `--no-validate`.
pub const NOT_VALIDATED_NOTE: &str = "/* NOT VALIDATED: emitted with `atl emit --no-validate`; the translation validator did\n   not check that this kernel computes its definition (`atl validate` does). */\n";

/// Validates `kernel` as the kernel of definition `name` of `program` (issue 19,
/// `atl-validate`). `Ok` with the report when every obligation is proved; otherwise the
/// report and the diagnostic that refuses the kernel: E0951 when it is rejected (a
/// counterexample), E0950 when it is only not validated.
pub fn validate_kernel(
    program: &Program,
    shapes: &ShapeEnv,
    name: &str,
    kernel: &Kernel,
) -> Result<atl_validate::Report, (Box<atl_validate::Report>, Diagnostic)> {
    validate_kernel_monitored(program, shapes, name, kernel, None)
}

/// [`validate_kernel`] watched by a monitor (progress, cancellation: an interrupted
/// validation is *not validated*, E0950; the caller checks the monitor to tell).
pub fn validate_kernel_monitored(
    program: &Program,
    shapes: &ShapeEnv,
    name: &str,
    kernel: &Kernel,
    monitor: Option<&atl_lang::monitor::Monitor>,
) -> Result<atl_validate::Report, (Box<atl_validate::Report>, Diagnostic)> {
    let source = atl_validate::Source {
        program,
        shapes,
        def: name,
    };
    let report = atl_validate::validate_monitored(
        kernel,
        Some(&source),
        &atl_solver::Solver::new(),
        monitor,
    );
    if let Some(d) =
        overflow_refusal(name, &report).or_else(|| reserved_name_refusal(name, &report))
    {
        return Err((Box::new(report), d));
    }
    let diagnostic = match &report.verdict {
        atl_validate::KernelVerdict::Validated => return Ok(report),
        atl_validate::KernelVerdict::Rejected {
            refuted,
            disagreement,
        } => {
            let mut d = Diagnostic::error(
                "E0951",
                format!(
                    "the kernel lowered from `{name}` is wrong: the translation validator rejects it"
                ),
            );
            for r in refuted.iter().take(3) {
                d = d.with_note(format!(
                    "{} — counterexample: {}",
                    r.obligation, r.counterexample
                ));
            }
            if let Some(wrong) = disagreement {
                d = d.with_note(format!("a wrong result {wrong}"));
            }
            d.with_help(format!(
                "this is a bug of the lowering: please report it with the program; \
                 `atl validate FILE --def {name}` shows every obligation"
            ))
        }
        atl_validate::KernelVerdict::NotValidated { reasons } => {
            let mut d = Diagnostic::error(
                "E0950",
                format!(
                    "the kernel lowered from `{name}` is not validated: the translation validator \
                     could not prove every obligation"
                ),
            );
            for r in reasons.iter().take(3) {
                d = d.with_note(shorten(r, 400));
            }
            if reasons.len() > 3 {
                d = d.with_note(format!("and {} more", reasons.len() - 3));
            }
            d.with_help(format!(
                "`atl validate FILE --def {name}` lists every obligation; `--no-validate` uses \
                 the kernel anyway (an emitted one says so in its header); please report the program"
            ))
        }
    };
    Err((Box::new(report), diagnostic))
}

/// E0938 when the only thing wrong with a kernel is its 64-bit index arithmetic: every
/// refuted obligation (or, when none is refuted, every undecided one) is a "fits in
/// `int64_t`" obligation. Sizes too large for the arithmetic are a limit of the
/// kernel, not a wrong kernel (E0951) — as when lowering refuses it for that reason.
fn overflow_refusal(name: &str, report: &atl_validate::Report) -> Option<Diagnostic> {
    use atl_solver::Verdict;
    let is_overflow =
        |o: &atl_validate::Obligation| matches!(o.kind, atl_validate::ObligationKind::Int64 { .. });
    let failed: Vec<&atl_validate::CheckedObligation> = match &report.verdict {
        atl_validate::KernelVerdict::Validated => return None,
        atl_validate::KernelVerdict::Rejected {
            disagreement: Some(_),
            ..
        } => return None,
        atl_validate::KernelVerdict::Rejected { .. } => report
            .obligations
            .iter()
            .filter(|c| c.verdict.is_refuted())
            .collect(),
        atl_validate::KernelVerdict::NotValidated { reasons } => {
            let unknown: Vec<_> = report
                .obligations
                .iter()
                .filter(|c| matches!(c.verdict, Verdict::Unknown(_)))
                .collect();
            // A reason that is no undecided obligation (no source given…) is not about
            // the arithmetic.
            if unknown.len() != reasons.len() {
                return None;
            }
            unknown
        }
    };
    if failed.is_empty() || !failed.iter().all(|c| is_overflow(&c.obligation)) {
        return None;
    }
    let mut d = Diagnostic::error(
        "E0938",
        format!("the kernel lowered from `{name}` may overflow 64-bit index arithmetic"),
    );
    for c in failed.iter().take(3) {
        let atl_validate::ObligationKind::Int64 { what, expr } = &c.obligation.kind else {
            continue;
        };
        d = d.with_note(match &c.verdict {
            Verdict::Refuted(cex) => {
                format!("the {what}, `{expr}`, leaves int64_t at {cex}")
            }
            _ => format!("the {what}, `{expr}`, is not shown to stay within int64_t"),
        });
    }
    Some(d.with_help(atl_loopir::int64::OVERFLOW_HELP))
}

/// E0944 when the only thing wrong with a kernel is a name of the program that C
/// reserves (a keyword, a library or `<math.h>` name, the emitter's prefix): the
/// validator refuses it (`atl_validate::names`), and it is the program's to change,
/// not a wrong kernel (E0951).
fn reserved_name_refusal(name: &str, report: &atl_validate::Report) -> Option<Diagnostic> {
    let atl_validate::KernelVerdict::Rejected {
        refuted,
        disagreement: None,
    } = &report.verdict
    else {
        return None;
    };
    let problems: Vec<&str> = refuted
        .iter()
        .map(|r| match &r.obligation.kind {
            atl_validate::ObligationKind::CName { problem } => Some(problem.as_str()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let first = problems.first()?;
    let mut d = Diagnostic::error(
        "E0944",
        format!("the kernel of `{name}` cannot be written in C: {first}"),
    );
    for p in problems.iter().skip(1).take(2) {
        d = d.with_note((*p).to_string());
    }
    Some(d.with_help(
        "rename it in the program: C has one namespace, and the kernel's names are the \
         program's",
    ))
}

/// `text` cut after `max` characters (on a character boundary), with `…`.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The commands' validation of a kernel of a loaded file: nothing with `--no-validate`;
/// otherwise the kernel is validated or the command fails with E0950/E0951. With
/// `explain`, the validator's report (every obligation and its verdict) is written to
/// standard error first.
pub fn validate_loaded(
    observer: &mut dyn Observer,
    file: &Path,
    loaded: &Loaded,
    name: &str,
    kernel: &Kernel,
    validation: Validation,
    explain: bool,
) -> Result<(), Failure> {
    if validation == Validation::Off {
        return Ok(());
    }
    begin(observer, &format!("validating `{name}`"), 0)?;
    let result = validate_kernel_monitored(
        &loaded.program,
        &loaded.shapes,
        name,
        kernel,
        observer.monitor().map(|m| &**m),
    );
    check_cancel(observer)?;
    match result {
        Ok(report) => {
            if explain {
                observer.explain(&report.to_string());
            }
            Ok(())
        }
        Err((report, d)) => {
            if explain {
                observer.explain(&report.to_string());
            }
            let d = at_definition(d, &loaded.program, name);
            Err(
                Failure::diagnostics(vec![d], file, &loaded.source).then_line(format!(
                    "error: the kernel of `{name}` was not used (`--no-validate` to use it anyway)"
                )),
            )
        }
    }
}
