//! `:pads`, `:ir` and `:c`: the current program under the focus's own name, its steps
//! re-checked by the independent certificate checker, then the pad-type gate, lowering
//! (`atl_driver::lowering`) and, for `:c`, translation validation watched by the
//! session's monitor (Ctrl-C stops it between obligations). `:bench` uses the same
//! candidate program (`candidate_program`).

use std::io::Write;

use atl_lang::diag::Diagnostic;
use atl_lang::ir::{Def, Expr, Program};
use atl_lang::span::Span;

use super::{Control, Session};

impl Session {
    pub(super) fn cmd_pads(&mut self, _: &str, out: &mut dyn Write) -> Control {
        let (Some(checked), Some(current)) = (&self.checked, self.current()) else {
            let _ = writeln!(out, "no program in focus");
            return Control::Continue;
        };
        match atl_padtypes::pad_predicate(&checked.program, &checked.shapes, current) {
            Ok(ty) => {
                let ty = atl_padtypes::simplify_pad_type(
                    &ty,
                    &checked.program,
                    &checked.shapes,
                    &self.solver,
                );
                let _ = writeln!(out, "pad type: {ty}");
            }
            Err(d) => {
                self.render(&[d], "<program>", "", out);
                return Control::Continue;
            }
        }
        // Check the current program as the focus's definition.
        let Some(name) = self.focus.clone() else {
            return Control::Continue;
        };
        let Some((program, shapes)) = self.candidate_program(&name, false, out) else {
            return Control::Continue;
        };
        let diags = atl_padtypes::check_definition(&program, &shapes, &self.solver, &name);
        if diags.is_empty() {
            let _ = writeln!(
                out,
                "gate: passes (every truncation drops padding, every access is in bounds)"
            );
        } else {
            self.render(&diags, "<program>", "", out);
        }
        Control::Continue
    }

    /// The checked program with the current program added under `name` (replacing the
    /// definition so named: the focus keeps its own name in `:ir`, `:c` and `:bench`),
    /// with the loop annotations taken so far, and its shapes. With `derivations`, each
    /// derivation of the file is added as a definition too (what `:bench --vs` may
    /// name).
    pub(super) fn candidate_program(
        &self,
        name: &str,
        derivations: bool,
        out: &mut dyn Write,
    ) -> Option<(Program, atl_lang::shapes::ShapeEnv)> {
        let (Some(checked), Some(current)) = (&self.checked, self.current()) else {
            let _ = writeln!(out, "no program in focus");
            return None;
        };
        let mut program = checked.program.clone();
        let mut shapes = checked.shapes.clone();
        let def = |name: &str, body: &Expr| Def {
            name: name.to_string(),
            name_span: Span::DUMMY,
            body: body.clone(),
            span: Span::DUMMY,
            hints: Vec::new(),
            vector_width: None,
            storage: Vec::new(),
        };
        let mut added: Vec<Def> = Vec::new();
        if derivations {
            for (n, body) in &self.derived {
                if n != name && program.def(n).is_none() {
                    added.push(def(n, body));
                }
            }
        }
        // The annotations taken so far (`parallel y`, …, `vector_width 256`, `store_root
        // x`) apply to the candidate; lowering checks them against the kernel.
        added.push(Def {
            hints: self.hints(),
            vector_width: self.vector_width(),
            storage: self.storage(),
            ..def(name, current)
        });
        for def in added {
            match atl_lang::shapes::infer(&shapes, &def.body) {
                Ok(s) => {
                    shapes.globals.insert(def.name.clone(), s);
                }
                Err(d) => {
                    self.render(&[d], "<program>", "", out);
                    return None;
                }
            }
            match program.defs.iter_mut().find(|d| d.name == def.name) {
                Some(existing) => *existing = def,
                None => program.defs.push(def),
            }
        }
        Some((program, shapes))
    }

    /// Defence in depth, as in `atl check`/`emit`: the steps taken are re-checked by
    /// the independent certificate checker before anything is lowered. `false` (and
    /// the diagnostic printed) when it refuses them.
    pub(super) fn steps_recheck(&self, out: &mut dyn Write) -> bool {
        if self.steps.is_empty() {
            return true;
        }
        let (Some(checked), Some(focus), Some(original), Some(current)) =
            (&self.checked, &self.focus, &self.original, self.current())
        else {
            return false;
        };
        let mut with_focus = checked.program.clone();
        for (name, body) in &self.derived {
            if with_focus.def(name).is_none() {
                with_focus.defs.push(Def {
                    name: name.clone(),
                    name_span: Span::DUMMY,
                    body: body.clone(),
                    span: Span::DUMMY,
                    hints: Vec::new(),
                    vector_width: None,
                    storage: Vec::new(),
                });
            }
        }
        let derivation = atl_rewrites::Derivation {
            name: "__current".to_string(),
            from: focus.clone(),
            initial: original.clone(),
            result: current.clone(),
            // Every primitive step of each typed one: the checker replays them in
            // order, each from the program the previous one left.
            steps: self
                .steps
                .iter()
                .flat_map(|t| t.outcomes.iter().map(|o| o.record.clone()))
                .collect(),
        };
        if let Err(e) =
            atl_driver::load::recheck(&derivation, &with_focus, &self.library, &self.solver)
        {
            let d = Diagnostic::error(
                "E0847",
                "the independent checker refuses the steps taken, which the rewrite engine accepted",
            )
            .with_note(e)
            .with_help("this is a bug of the rewrite engine; please report it with the steps (`:history`)");
            self.render(&[d], "<program>", "", out);
            return false;
        }
        true
    }

    /// The gate, then lowering, of definition `name` of `program`; refusals printed.
    pub(super) fn gate_and_lower(
        &self,
        program: &Program,
        shapes: &atl_lang::shapes::ShapeEnv,
        name: &str,
        out: &mut dyn Write,
    ) -> Option<atl_lower::Kernel> {
        match atl_driver::lowering::gate_and_lower(program, shapes, name, &self.solver) {
            Ok(kernel) => Some(kernel),
            Err(atl_driver::lowering::NotLowered::Gate(diags)) => {
                self.render(&diags, "<program>", "", out);
                let _ = writeln!(out, "`{name}` fails the gate before lowering");
                None
            }
            Err(atl_driver::lowering::NotLowered::Lowering(diags)) => {
                self.render(&diags, "<program>", "", out);
                None
            }
        }
    }

    /// The current program as a kernel named after the focus: steps re-checked, gated
    /// and lowered (lowering only sees programs that pass pad types and access
    /// safety); with the program and shapes it was lowered from, for the validator.
    pub(super) fn lowerable(
        &self,
        out: &mut dyn Write,
    ) -> Option<(
        atl_lower::Kernel,
        Program,
        atl_lang::shapes::ShapeEnv,
        String,
    )> {
        let name = self.focus.clone()?;
        let (program, shapes) = self.candidate_program(&name, false, out)?;
        if !self.steps_recheck(out) {
            return None;
        }
        let kernel = self.gate_and_lower(&program, &shapes, &name, out)?;
        Some((kernel, program, shapes, name))
    }

    pub(super) fn cmd_ir(&mut self, _: &str, out: &mut dyn Write) -> Control {
        if let Some((kernel, ..)) = self.lowerable(out) {
            let _ = write!(out, "{}", atl_driver::emit::ir_text(&kernel));
        }
        Control::Continue
    }

    pub(super) fn cmd_c(&mut self, args: &str, out: &mut dyn Write) -> Control {
        let unchecked = match args.trim() {
            "" => false,
            "--no-validate" => true,
            _ => {
                let _ = writeln!(out, "usage: :c [--no-validate]");
                return Control::Continue;
            }
        };
        if let Some((kernel, program, shapes, name)) = self.lowerable(out) {
            // As `atl emit`: the kernel is validated first.
            let note = if unchecked {
                atl_driver::lowering::NOT_VALIDATED_NOTE
            } else {
                let progress = self.progress_display("validating");
                let validated = atl_driver::lowering::validate_kernel_monitored(
                    &program,
                    &shapes,
                    &name,
                    &kernel,
                    Some(&self.monitor),
                );
                drop(progress);
                match validated {
                    Ok(_) => "",
                    Err(_) if self.monitor.is_cancelled() => return Control::Continue,
                    Err((_, d)) => {
                        let d = Diagnostic {
                            help: Some(
                                "`:c --no-validate` prints the kernel anyway; please report the \
                                 program"
                                    .to_string(),
                            ),
                            ..d
                        };
                        self.render(&[d], "<program>", "", out);
                        let _ = writeln!(out, "the C is not printed");
                        return Control::Continue;
                    }
                }
            };
            let options = atl_emit_c::EmitOptions {
                symbol: Some(name),
                ..Default::default()
            };
            match atl_driver::emit::c_text(&kernel, &options) {
                Ok(t) => {
                    let _ = write!(out, "{note}{t}");
                }
                Err(d) => self.render(&d, "<program>", "", out),
            }
        }
        Control::Continue
    }
}
