//! The one way the CLI lowers a definition: the pad-type and access-safety gate
//! (`atl-padtypes`) first, then lowering to the loop IR (`atl-lower`). Lowering never
//! sees a definition that fails the gate: [`gate`] is the only way to make a
//! [`Gated`], and [`Gated::lower`] the only lowering the commands use (`emit`, `run`,
//! `bench`, and the REPL's `:ir` / `:c` through [`gate_and_lower`]).
//!
//! The core functions return data ([`NotLowered`]) so that the REPL can word its
//! answers its own way; [`gate_loaded`] and [`gate_and_lower_loaded`] are the
//! commands' side, which render the gate's warnings and turn a refusal into a
//! [`Failure`].

use std::path::Path;

use atl_lang::diag::{self, Diagnostic};
use atl_lang::ir::Program;
use atl_lang::shapes::ShapeEnv;
use atl_lower::Kernel;

use crate::ctx::Ctx;
use crate::failure::Failure;
use crate::load::Loaded;

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

    /// Lowers the definition to the loop IR.
    pub fn lower(&self) -> Result<Kernel, Vec<Diagnostic>> {
        lower_ungated(self.program, self.shapes, &self.name)
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

/// Lowers `def` to the loop IR without the gate: only for [`Gated::lower`] and for
/// tests whose programs are generated to pass it.
pub fn lower_ungated(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
) -> Result<Kernel, Vec<Diagnostic>> {
    atl_lower::lower_def_with(
        program,
        shapes,
        def,
        &atl_solver::Solver::new(),
        &atl_lower::LowerOptions::default(),
    )
    .map_err(|d| vec![d])
}

/// The commands' gate on a definition of a loaded file: warnings are rendered now; a
/// refusal is its diagnostics followed by a line saying nothing was emitted.
pub fn gate_loaded<'l>(
    ctx: &mut Ctx<'_>,
    file: &Path,
    loaded: &'l Loaded,
    name: &str,
) -> Result<Gated<'l>, Failure> {
    let solver = atl_solver::Solver::new();
    match gate(&loaded.program, &loaded.shapes, name, &solver) {
        Ok((gated, warnings)) => {
            if !warnings.is_empty() {
                ctx.warn(&warnings, file, &loaded.source);
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

/// [`gate_loaded`], then lowering; a lowering failure is its diagnostics.
pub fn gate_and_lower_loaded(
    ctx: &mut Ctx<'_>,
    file: &Path,
    loaded: &Loaded,
    name: &str,
) -> Result<Kernel, Failure> {
    gate_loaded(ctx, file, loaded, name)?
        .lower()
        .map_err(|diags| Failure::diagnostics(diags, file, &loaded.source))
}
