//! The interactive rewrite session behind `atl repl`, independent of any terminal: a
//! [`Session`] takes one input (a derivation step or a `:command`) at a time and writes
//! its answer to any `io::Write`, so whole sessions are testable through byte buffers.
//! The binary wraps it in a line editor (rustyline) for completion and history.
//!
//! A failed step never ends the session: the program stays as it was and the
//! diagnostic (goal, context, counterexample) is printed.
//!
//! This module holds the command table, the steps, loading and focus; the commands
//! with more to them have modules of their own: `applicable` (`:applicable`), `eval`
//! (`:eval`), `lower` (`:pads`, `:ir`, `:c`), `bench` (`:bench`), `save` (`:save`) and
//! `view` (how the program, a step's effect, `:loops` and `:help` are shown). The
//! session owns a [`Monitor`]: Ctrl-C (through the terminal front) sets its flag, the
//! long commands pass it down and stop, and the session reports the interruption and
//! goes on.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use atl_lang::Checked;
use atl_lang::diag::{self, Diagnostic};
use atl_lang::ir::{Expr, LoopHint};
use atl_lang::monitor::Monitor;
use atl_lang::pretty::Style;
use atl_lang::shapes::show_shape;
use atl_lang::steps::{STEPS, StepClass};
use atl_rewrites::cert::StepRecord;
use atl_rewrites::context::StepOutcome;
use atl_rewrites::derivation::{check_exact_steps, exact_from_real_base, real_base};
use atl_rewrites::directives::declared_exact;
use atl_rewrites::directives::hints::check_hints;
use atl_rewrites::directives::vector_width::second_vector_width;
use atl_rewrites::engine::{list_sites, run_step_expanded};
use atl_rewrites::{Env, Library};
use atl_solver::Solver;

mod applicable;
mod bench;
mod eval;
mod lower;
mod save;
mod view;

/// The directives that take only a `gen` loop (a `sum` is refused: E0840, E0841, E0822),
/// so completion offers them no sum and no stage.
const GEN_ONLY_DIRECTIVES: &[&str] = &["parallel", "vectorize", "partition"];

/// What the caller should do after an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Continue,
    Quit,
}

/// A `:command`: its name, argument synopsis, help line and handler.
struct Command {
    name: &'static str,
    args: &'static str,
    help: &'static str,
    run: fn(&mut Session, &str, &mut dyn Write) -> Control,
}

/// The command table. Later stages (`:pads`, `:c`, `:ir`) add rows here.
const COMMANDS: &[Command] = &[
    Command {
        name: "help",
        args: "",
        help: "this list, then the steps and directives",
        run: Session::cmd_help,
    },
    Command {
        name: "load",
        args: "FILE",
        help: "load a program file",
        run: Session::cmd_load,
    },
    Command {
        name: "focus",
        args: "NAME",
        help: "work on a definition (or derivation) of the file",
        run: Session::cmd_focus,
    },
    Command {
        name: "show",
        args: "",
        help: "print the current program",
        run: Session::cmd_show,
    },
    Command {
        name: "applicable",
        args: "",
        help: "the rules and directives that apply to the current program: rules with their sites (and those that need a `with`), directives as you would type them",
        run: Session::cmd_applicable,
    },
    Command {
        name: "loops",
        args: "",
        help: "the loops of the current program, with their stages and ranges (what directives name)",
        run: Session::cmd_loops,
    },
    Command {
        name: "shape",
        args: "",
        help: "print the current program's shape",
        run: Session::cmd_shape,
    },
    Command {
        name: "undo",
        args: "",
        help: "take back the last step",
        run: Session::cmd_undo,
    },
    Command {
        name: "redo",
        args: "",
        help: "redo the last undone step",
        run: Session::cmd_redo,
    },
    Command {
        name: "history",
        args: "",
        help: "the steps taken so far",
        run: Session::cmd_history,
    },
    Command {
        name: "rules",
        args: "[FILTER]",
        help: "list rules (with their equations)",
        run: Session::cmd_rules,
    },
    Command {
        name: "rule",
        args: "NAME",
        help: "show one rule: equation, conditions, grade, examples",
        run: Session::cmd_rule,
    },
    Command {
        name: "sites",
        args: "[RULE]",
        help: "numbered places where a rule matches, with the status of its side conditions (`:sites <- RULE` for right-to-left); without a rule, every rule's sites",
        run: Session::cmd_sites,
    },
    Command {
        name: "eval",
        args: "n=4,m=5",
        help: "evaluate the current and the original program on random inputs and compare",
        run: Session::cmd_eval,
    },
    Command {
        name: "save",
        args: "NAME [FILE]",
        help: "write `derive NAME from FOCUS { steps }`: with FILE, to a new file holding the program and the derivation (`:save!` overwrites); `:save! NAME` appends to the loaded file",
        run: Session::cmd_save,
    },
    Command {
        name: "bench",
        args: "[SIZES] [--vs DEF] [--runs R] [--threads N]",
        help: "compile and time the current program against the focus's original (or DEF), as `atl bench` does; sizes default to 256 each",
        run: Session::cmd_bench,
    },
    Command {
        name: "pads",
        args: "",
        help: "the pad-set type of the current program, and whether it passes the gate",
        run: Session::cmd_pads,
    },
    Command {
        name: "ir",
        args: "",
        help: "the loop IR the current program lowers to",
        run: Session::cmd_ir,
    },
    Command {
        name: "c",
        args: "[--no-validate]",
        help: "the C the current program lowers to, once the translation validator validates it",
        run: Session::cmd_c,
    },
    Command {
        name: "unicode",
        args: "on|off",
        help: "print with ⊞ Σ ·",
        run: Session::cmd_unicode,
    },
    Command {
        name: "quit",
        args: "",
        help: "leave (also Ctrl-D); with unsaved steps, asks once (`:quit!` leaves at once)",
        run: Session::cmd_quit,
    },
];

/// One step as typed in the focus (a directive is one step for undo and `:save`): its
/// text and the primitive steps it expanded into, each with the program after it. The
/// whole expansion is kept because the rules of a derivation (`grade exact`, the loop
/// hints) are about every primitive step, not only the last.
#[derive(Debug)]
struct Taken {
    text: String,
    /// Never empty (a step that expands into nothing is not recorded).
    outcomes: Vec<StepOutcome>,
}

impl Taken {
    /// The program after the step.
    fn result(&self) -> &Expr {
        &self.last().expr
    }

    /// The record of its last primitive step (what `:history` shows).
    fn record(&self) -> &StepRecord {
        &self.last().record
    }

    fn last(&self) -> &StepOutcome {
        self.outcomes
            .last()
            .expect("a taken step has at least one primitive step")
    }

    /// The loop hints of steps taken one after the other (a hint given before
    /// `specialize` holds of both versions' loops: `record::add_hints`).
    fn hints<'t>(steps: impl IntoIterator<Item = &'t Taken>) -> Vec<LoopHint> {
        atl_rewrites::record::hints_of(
            steps
                .into_iter()
                .flat_map(|t| t.outcomes.iter().map(|o| &o.record)),
        )
    }
}

/// A refused step: its diagnostic, and the text the diagnostic points into with the
/// name to show for it (the input line, or the focus's steps for `grade exact`).
struct Refusal {
    diagnostic: Diagnostic,
    name: &'static str,
    source: String,
}

/// An interactive session.
#[derive(Debug)]
pub struct Session {
    file: Option<PathBuf>,
    source: String,
    checked: Option<Checked>,
    /// Definitions and derivations of the file, as the starting points for `:focus`.
    derived: BTreeMap<String, Expr>,
    /// For each derivation among them, the first one graded `real` on its chain of
    /// bases (itself first): a focus on it cannot be declared `grade exact`.
    real_bases: BTreeMap<String, String>,
    library: Library,
    solver: Solver,
    focus: Option<String>,
    /// The program the focus started from, and the steps taken in the focus.
    original: Option<Expr>,
    steps: Vec<Taken>,
    undone: Vec<Taken>,
    style: Style,
    color: bool,
    /// Watches the running command: Ctrl-C sets its cancellation flag (the terminal
    /// front registers the signal), and evaluation, validation and timing stop at their
    /// next check; a progress display polls it.
    monitor: Arc<Monitor>,
    /// Whether to draw a progress line on stderr during long commands.
    progress: bool,
    /// Whether steps were taken, undone or redone since the last `:save`.
    unsaved: bool,
    /// Leaving was refused once for unsaved steps: the next attempt leaves.
    quit_warned: bool,
    /// The running command was typed with `!` (`:save!`, `:quit!`).
    forced: bool,
    /// The columns `:help` lays its table out for.
    width: usize,
}

impl Session {
    /// A session with the standard rule library. `color` enables coloured diagnostics.
    pub fn new(color: bool) -> Result<Session, Vec<Diagnostic>> {
        let (library, diags) = Library::standard();
        if !diags.is_empty() {
            return Err(diags.into_iter().map(|(_, d)| d).collect());
        }
        Ok(Session {
            file: None,
            source: String::new(),
            checked: None,
            derived: BTreeMap::new(),
            real_bases: BTreeMap::new(),
            library,
            solver: Solver::new(),
            focus: None,
            original: None,
            steps: Vec::new(),
            undone: Vec::new(),
            style: Style::default(),
            color,
            monitor: Arc::new(Monitor::new()),
            progress: false,
            unsaved: false,
            quit_warned: false,
            forced: false,
            width: view::HELP_WIDTH,
        })
    }

    /// The monitor of the session's commands (for a Ctrl-C handler).
    pub fn monitor(&self) -> Arc<Monitor> {
        Arc::clone(&self.monitor)
    }

    /// Draws a progress line on stderr during long commands (the terminal front turns
    /// it on when stderr is a terminal).
    pub fn set_progress(&mut self, on: bool) {
        self.progress = on;
    }

    /// A progress display for a long computation, if enabled, showing `label` while
    /// the computation names no stage; drop it before printing.
    fn progress_display(&self, label: &str) -> crate::progress::Guard {
        if self.progress {
            crate::progress::on_stderr_labelled(&self.monitor, label)
        } else {
            crate::progress::show(&self.monitor, false, std::io::sink())
        }
    }

    /// The terminal's width: `:help` lays its table out for it (at most
    /// 100 columns, at least 60).
    pub fn set_width(&mut self, columns: usize) {
        self.width = columns.clamp(view::MIN_WIDTH, view::HELP_WIDTH);
    }

    /// How many steps would be lost by leaving now (0 after a `:save`).
    pub fn unsaved_steps(&self) -> usize {
        if self.unsaved { self.steps.len() } else { 0 }
    }

    /// Leaving (Ctrl-D, `:quit`): with unsaved steps, the first attempt says how many
    /// and how to keep them, and the session goes on; the next attempt leaves.
    pub fn leave(&mut self, out: &mut dyn Write) -> Control {
        let n = self.unsaved_steps();
        if n == 0 || self.quit_warned {
            return Control::Quit;
        }
        self.quit_warned = true;
        let focus = self.focus.as_deref().unwrap_or("the focus");
        let _ = writeln!(
            out,
            "{} on `{focus}` not saved: `:save NAME FILE` writes {} as `derive NAME from \
             {focus}` to a new file (`:save! NAME` appends to the loaded file); Ctrl-D again \
             or `:quit!` leaves without saving",
            plural(n, "step"),
            if n == 1 { "it" } else { "them" }
        );
        Control::Continue
    }

    /// The prompt to show: the focused definition's name.
    pub fn prompt(&self) -> String {
        match &self.focus {
            Some(f) => format!("{f}> "),
            None => "atl> ".to_string(),
        }
    }

    /// Names for tab completion: commands, rule names, definitions, step words.
    pub fn completions(&self, line: &str) -> Vec<String> {
        let word_start = line.rfind([' ', '\t']).map(|k| k + 1).unwrap_or(0);
        let prefix = &line[word_start..];
        let mut candidates: Vec<String> = Vec::new();
        if word_start == 0 {
            candidates.extend(COMMANDS.iter().map(|c| format!(":{}", c.name)));
            // Every step and directive of the step table.
            candidates.extend(STEPS.iter().map(|s| s.name.to_string()));
        } else {
            let first = line.split_whitespace().next().unwrap_or("");
            match first {
                "rw" | "rw<-" | ":rule" | ":sites" => {
                    candidates.extend(self.library.rules().iter().map(|r| r.name.clone()));
                    if let Some(step) = atl_lang::steps::lookup(first) {
                        candidates.extend(step.keywords.iter().map(|k| k.to_string()));
                    }
                }
                ":focus" | "unfold" => {
                    if let Some(c) = &self.checked {
                        candidates.extend(c.program.defs.iter().map(|d| d.name.clone()));
                        candidates.extend(c.program.derives.iter().map(|d| d.name.clone()));
                    }
                }
                ":unicode" => candidates.extend(["on", "off"].map(String::from)),
                // A directive or a loop annotation (or `window`): the loops and stages of
                // the current program, by the names directives accept, and the words.
                word if let Some(step) = STEPS.iter().find(|s| {
                    s.name == word
                        && (matches!(s.class, StepClass::Directive | StepClass::LoopHint)
                            || s.name == "window")
                }) =>
                {
                    // A step whose synopsis is its name and keywords (`grade exact`)
                    // names no loop.
                    let names_loops = step
                        .synopsis
                        .split([' ', ','])
                        .skip(1)
                        .any(|w| !w.is_empty() && !step.keywords.contains(&w));
                    if names_loops && let Some(current) = self.current() {
                        let program = self.checked.as_ref().map(|c| &c.program);
                        let all = atl_rewrites::loops::loops(current);
                        // These take only a `gen` (a sum's iterations accumulate into
                        // one element) and name no stage.
                        let gens_only = GEN_ONLY_DIRECTIVES.contains(&step.name);
                        candidates.extend(
                            all.iter()
                                .filter(|l| l.is_gen || !gens_only)
                                .map(|l| atl_rewrites::loops::user_name(l, &all, program)),
                        );
                        if !gens_only {
                            candidates.extend(atl_rewrites::loops::stages(current));
                        }
                    }
                    candidates.extend(step.keywords.iter().map(|k| k.to_string()));
                }
                _ => {}
            }
        }
        let mut out: Vec<String> = candidates
            .into_iter()
            .filter(|c| c.starts_with(prefix))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Handles one complete input (possibly several lines, see
    /// [`atl_lang::parser::is_incomplete`]).
    pub fn handle(&mut self, input: &str, out: &mut dyn Write) -> Control {
        let trimmed = input.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return Control::Continue;
        }
        if let Some(rest) = trimmed.strip_prefix(':') {
            let (typed, args) = match rest.split_once(char::is_whitespace) {
                Some((n, a)) => (n, a.trim()),
                None => (rest, ""),
            };
            // `!` forces the commands that ask first.
            let (name, forced) = match typed.strip_suffix('!') {
                Some(n) if ["save", "quit"].contains(&n) => (n, true),
                _ => (typed, false),
            };
            let Some(command) = COMMANDS.iter().find(|c| c.name == name) else {
                let hint = atl_lang::suggest::closest(name, COMMANDS.iter().map(|c| c.name), 2)
                    .map(|s| format!(" (did you mean `:{s}`?)"))
                    .unwrap_or_default();
                let _ = writeln!(out, "unknown command `:{typed}`{hint}; `:help` lists them");
                return Control::Continue;
            };
            self.monitor.clear_cancel();
            self.forced = forced;
            let control = (command.run)(self, args, out);
            self.forced = false;
            self.after_interrupt(out);
            return control;
        }
        self.monitor.clear_cancel();
        self.apply_steps(trimmed, out);
        self.after_interrupt(out);
        Control::Continue
    }

    /// After a command that Ctrl-C stopped: says so (the session is intact) and clears
    /// the flag for the next command.
    fn after_interrupt(&mut self, out: &mut dyn Write) {
        if self.monitor.is_cancelled() {
            let kept = match self.steps.len() {
                0 => "the session is kept (no steps yet)".to_string(),
                1 => "the session and its 1 step are kept".to_string(),
                n => format!("the session and its {n} steps are kept"),
            };
            let _ = writeln!(out, "interrupted; {kept}");
            self.monitor.clear_cancel();
        }
    }

    /// Renders diagnostics; the one an interrupted computation stops with (E0609) is
    /// left to [`Session::after_interrupt`].
    fn render(&self, diags: &[Diagnostic], name: &str, source: &str, out: &mut dyn Write) {
        let diags: Vec<Diagnostic> = diags
            .iter()
            .filter(|d| !(d.code == "E0609" && self.monitor.is_cancelled()))
            .cloned()
            .collect();
        if diags.is_empty() {
            return;
        }
        let _ = diag::render(&diags, name, source, self.color, out);
    }

    fn current(&self) -> Option<&Expr> {
        self.steps
            .last()
            .map(Taken::result)
            .or(self.original.as_ref())
    }

    /// The rewrite environment of the loaded program: the program, its shapes, the
    /// session's library (with the file's user rules) and solver; `None` before a load.
    fn env(&self) -> Option<Env<'_>> {
        self.checked.as_ref().map(|checked| self.env_for(checked))
    }

    /// The rewrite environment of `checked` (the loaded program, or a candidate such as
    /// the file with a saved block) with the session's library and solver.
    fn env_for<'a>(&'a self, checked: &'a Checked) -> Env<'a> {
        Env {
            program: &checked.program,
            shapes: &checked.shapes,
            library: &self.library,
            solver: &self.solver,
        }
    }

    /// The shape of the focus's starting point (what every step must keep).
    fn original_shape(&self) -> Option<atl_lang::shapes::Shape> {
        let checked = self.checked.as_ref()?;
        let start = self.original.as_ref().or(self.current())?;
        atl_lang::shapes::infer(&checked.shapes, start).ok()
    }

    /// `grade exact` as in a file: over every step of the focus (those taken, then
    /// `applied` earlier on this input line, then `text` with its expansion
    /// `outcomes`), a declaration anywhere refuses the first step that reassociates,
    /// with the diagnostic a file gives ([`check_exact_steps`]). A declaration typed
    /// after such a step is thus refused too. On a refusal, the diagnostic and the text
    /// it points into: the steps one per line, numbered as `:history` numbers them.
    fn check_exact(
        &self,
        applied: &[Taken],
        text: &str,
        outcomes: &[StepOutcome],
    ) -> Result<(), Refusal> {
        let (Some(checked), Some(original)) = (&self.checked, &self.original) else {
            return Ok(());
        };
        let mut texts: Vec<&str> = self
            .steps
            .iter()
            .chain(applied)
            .map(|t| t.text.as_str())
            .collect();
        texts.push(text);
        let mut expansions: Vec<&[StepOutcome]> = self
            .steps
            .iter()
            .chain(applied)
            .map(|t| t.outcomes.as_slice())
            .collect();
        expansions.push(outcomes);
        let history = texts.join("\n");
        let (steps, diags) = atl_lang::parser::parse_steps(&history);
        // Each text was parsed as one step when it was typed.
        debug_assert!(diags.is_empty() && steps.len() == texts.len(), "{history}");
        // As in a file, the starting point must be exact too.
        let refused_base = declared_exact(&steps).and_then(|declaration| {
            let focus = self.focus.as_ref()?;
            let base = self.real_bases.get(focus)?;
            Some(exact_from_real_base(
                &format!("the derivation from `{focus}`"),
                base,
                declaration,
            ))
        });
        let result = match refused_base {
            Some(d) => Err(d),
            None => check_exact_steps(&checked.program, original, &steps, &expansions),
        };
        result.map_err(|d| Refusal {
            diagnostic: d,
            name: "<steps>",
            source: history,
        })
    }

    fn apply_steps(&mut self, text: &str, out: &mut dyn Write) {
        let Some(env) = self.env() else {
            let _ = writeln!(out, "no program loaded: `:load FILE`");
            return;
        };
        let Some(current) = self.current().cloned() else {
            let _ = writeln!(out, "no program in focus: `:focus NAME`");
            return;
        };
        let (steps, diags) = atl_lang::parser::parse_steps(text);
        if !diags.is_empty() {
            let diags: Vec<Diagnostic> = diags.into_iter().map(suggest_step).collect();
            self.render(&diags, "<input>", text, out);
            return;
        }
        let Some(shape) = self.original_shape() else {
            let _ = writeln!(out, "the program in focus has no shape");
            return;
        };
        let mut expr = current;
        let mut applied: Vec<Taken> = Vec::new();
        for step in &steps {
            let step_text = text
                .get(step.span.range())
                .unwrap_or(text)
                .trim()
                .to_string();
            let hints_before: Vec<LoopHint> = Taken::hints(self.steps.iter().chain(&applied));
            let in_input = |d: Diagnostic| Refusal {
                diagnostic: suggest_step(d),
                name: "<input>",
                source: text.to_string(),
            };
            let result = run_step_expanded(&env, &expr, step, &shape, &self.derived)
                .map_err(in_input)
                .and_then(|outcomes| {
                    self.check_exact(&applied, &step_text, &outcomes)?;
                    // An annotation must agree with the ones before it (as in a file).
                    let mut hints = hints_before;
                    for o in &outcomes {
                        if atl_rewrites::record::add_hints(&mut hints, &o.record) {
                            check_hints(env.shapes, &o.expr, &hints).map_err(in_input)?;
                        }
                        if o.record.vector_width.is_some()
                            && let Some(earlier) = self
                                .steps
                                .iter()
                                .chain(&applied)
                                .flat_map(|t| &t.outcomes)
                                .find_map(|r| r.record.vector_width)
                        {
                            return Err(in_input(second_vector_width(earlier, step.span)));
                        }
                    }
                    Ok(outcomes)
                });
            match result {
                Ok(outcomes) => {
                    // A directive is one step for undo and `:save`; its rule steps'
                    // conditions are all shown.
                    for o in &outcomes[..outcomes.len().saturating_sub(1)] {
                        for c in &o.record.conditions {
                            let _ = writeln!(out, "  {}: {} -- {}", c.name, c.goal, c.verdict);
                        }
                    }
                    if let Some(last) = outcomes.last() {
                        expr = last.expr.clone();
                        applied.push(Taken {
                            text: step_text,
                            outcomes,
                        });
                    } else {
                        // A directive with nothing to do (`reorder i, j` where `i` is
                        // already outside `j`): no step, said so.
                        let _ = writeln!(
                            out,
                            "`{step_text}` changes nothing: the program is already so"
                        );
                    }
                }
                Err(refusal) => {
                    // A failed step leaves the program unchanged (steps before it on the
                    // same line are kept).
                    self.render(&[refusal.diagnostic], refusal.name, &refusal.source, out);
                    break;
                }
            }
        }
        if applied.is_empty() {
            return;
        }
        for taken in &applied {
            for c in &taken.record().conditions {
                let _ = writeln!(out, "  {}: {} -- {}", c.name, c.goal, c.verdict);
            }
        }
        let before = self.current().cloned();
        let hints_before = self.hints();
        self.steps.extend(applied);
        self.undone.clear();
        self.unsaved = true;
        self.quit_warned = false;
        self.print_step_effect(before.as_ref(), &hints_before, out);
    }

    fn load_text(&mut self, file: Option<PathBuf>, source: String, out: &mut dyn Write) -> bool {
        let name = file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "<input>".into());
        let (checked, diags) = atl_lang::check_source(&source);
        if !diags.is_empty() {
            self.render(&diags, &name, &source, out);
        }
        let Some(checked) = checked else {
            return false;
        };
        // The file's user rules join the library only after their checks.
        let (standard, _) = Library::standard();
        let (library, diags) = atl_rewrites::user_rules::library_with_user_rules(
            &standard,
            &checked.program,
            &name,
            &self.solver,
        );
        if !diags.is_empty() {
            self.render(&diags, &name, &source, out);
            return false;
        }
        self.library = library;
        // Replay the file's derivations so they can be focused and unfolded.
        let (derivations, diags) = atl_rewrites::run_derivations(&self.env_for(&checked));
        if !diags.is_empty() {
            self.render(&diags, &name, &source, out);
        }
        let real_bases = derivations
            .iter()
            .filter_map(|d| Some((d.name.clone(), real_base(&derivations, &d.name)?)))
            .collect();
        let mut derived = BTreeMap::new();
        for d in &checked.program.defs {
            derived.insert(d.name.clone(), d.body.clone());
        }
        for d in &derivations {
            derived.insert(d.name.clone(), d.result.clone());
        }
        let last = checked.program.defs.last().map(|d| d.name.clone());
        let count = checked.program.defs.len() + derivations.len();
        self.file = file;
        self.source = source;
        self.checked = Some(checked);
        self.derived = derived;
        self.real_bases = real_bases;
        let _ = writeln!(out, "loaded {name}: {count} definition(s)");
        if let Some(last) = last {
            self.set_focus(&last, out);
        }
        true
    }

    /// Loads a file (used by `atl repl FILE` and `:load`).
    pub fn load(&mut self, path: &Path, out: &mut dyn Write) -> bool {
        match std::fs::read_to_string(path) {
            Ok(source) => self.load_text(Some(path.to_path_buf()), source, out),
            Err(e) => {
                let _ = writeln!(out, "cannot read `{}`: {e}", path.display());
                false
            }
        }
    }

    fn set_focus(&mut self, name: &str, out: &mut dyn Write) {
        match self.derived.get(name) {
            Some(e) => {
                self.focus = Some(name.to_string());
                self.original = Some(e.clone());
                self.steps.clear();
                self.undone.clear();
                // Nothing is left to save (the steps of the previous focus are gone).
                self.unsaved = false;
                self.quit_warned = false;
                self.print_program(out);
            }
            None => {
                let names: Vec<&str> = self.derived.keys().map(String::as_str).collect();
                let _ = writeln!(
                    out,
                    "no definition named `{name}`; available: {}",
                    names.join(", ")
                );
            }
        }
    }

    fn cmd_help(&mut self, _: &str, out: &mut dyn Write) -> Control {
        let _ = writeln!(
            out,
            "Type a step to apply it to the program in focus, or a command:"
        );
        for c in COMMANDS {
            let head = if c.args.is_empty() {
                format!(":{}", c.name)
            } else {
                format!(":{} {}", c.name, c.args)
            };
            view::help_entry(&head, 22, c.help, self.width, out);
        }
        // The steps and directives, from the step table (docs/directives.md has more).
        let _ = writeln!(out, "Steps and directives:");
        for s in STEPS {
            view::help_entry(s.synopsis, 30, s.help, self.width, out);
        }
        Control::Continue
    }

    fn cmd_load(&mut self, args: &str, out: &mut dyn Write) -> Control {
        if args.is_empty() {
            let _ = writeln!(out, "usage: :load FILE");
        } else {
            self.load(Path::new(args), out);
        }
        Control::Continue
    }

    fn cmd_focus(&mut self, args: &str, out: &mut dyn Write) -> Control {
        if args.is_empty() {
            let _ = writeln!(out, "usage: :focus NAME");
        } else {
            self.set_focus(args, out);
        }
        Control::Continue
    }

    fn cmd_show(&mut self, _: &str, out: &mut dyn Write) -> Control {
        self.print_program(out);
        Control::Continue
    }

    fn cmd_shape(&mut self, _: &str, out: &mut dyn Write) -> Control {
        match (self.current(), &self.checked) {
            (Some(e), Some(c)) => match atl_lang::shapes::infer(&c.shapes, e) {
                Ok(s) => {
                    let _ = writeln!(out, "{}", show_shape(&s));
                }
                Err(d) => self.render(&[d], "<program>", "", out),
            },
            _ => {
                let _ = writeln!(out, "no program in focus");
            }
        }
        Control::Continue
    }

    fn cmd_undo(&mut self, _: &str, out: &mut dyn Write) -> Control {
        match self.steps.pop() {
            Some(s) => {
                let _ = writeln!(out, "undid `{}`", s.text);
                self.undone.push(s);
                self.unsaved = true;
                self.print_program(out);
            }
            None => {
                let _ = writeln!(out, "nothing to undo");
            }
        }
        Control::Continue
    }

    fn cmd_redo(&mut self, _: &str, out: &mut dyn Write) -> Control {
        match self.undone.pop() {
            Some(s) => {
                let _ = writeln!(out, "redid `{}`", s.text);
                self.steps.push(s);
                self.unsaved = true;
                self.print_program(out);
            }
            None => {
                let _ = writeln!(out, "nothing to redo");
            }
        }
        Control::Continue
    }

    fn cmd_history(&mut self, _: &str, out: &mut dyn Write) -> Control {
        if self.steps.is_empty() {
            let _ = writeln!(out, "no steps yet");
        }
        for (k, taken) in self.steps.iter().enumerate() {
            let path: Vec<String> = taken.record().path.iter().map(usize::to_string).collect();
            let _ = writeln!(
                out,
                "{:>3}. {}  (at [{}])",
                k + 1,
                taken.text,
                path.join(", ")
            );
        }
        Control::Continue
    }

    fn cmd_rules(&mut self, args: &str, out: &mut dyn Write) -> Control {
        for r in self.library.rules() {
            if args.is_empty() || r.name.contains(args) {
                let _ = writeln!(out, "{:<22} {}", r.name, r.equation);
            }
        }
        Control::Continue
    }

    fn cmd_rule(&mut self, args: &str, out: &mut dyn Write) -> Control {
        let Some(r) = self.library.get(args) else {
            let hint = self
                .library
                .suggest(args)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            let _ = writeln!(out, "no rule named `{args}`{hint}");
            return Control::Continue;
        };
        let _ = writeln!(out, "{}: {}", r.name, r.equation);
        let _ = writeln!(out, "  # {}", r.doc);
        for c in &r.conditions {
            let _ = writeln!(out, "  if {}: {}", c.name(), c.text());
        }
        let grade = atl_lang::steps::describe_grade(match r.grade {
            atl_rewrites::rule::Grade::Exact => "exact",
            atl_rewrites::rule::Grade::Real => "real",
        });
        let _ = writeln!(out, "  grade: {grade}  ({})", r.origin);
        for e in &r.examples {
            let _ = writeln!(out, "  example: {} => {}", e.start, e.result);
        }
        Control::Continue
    }

    fn cmd_sites(&mut self, args: &str, out: &mut dyn Write) -> Control {
        let (backward, name) = match args.strip_prefix("<-") {
            Some(rest) => (true, rest.trim()),
            None => (false, args),
        };
        if name.is_empty() && !backward {
            // Every rule's sites: the rules part of `:applicable`.
            self.print_applicable_rules(out);
            return Control::Continue;
        }
        if name.is_empty() {
            let _ = writeln!(
                out,
                "`:sites RULE` lists the places where a rule matches (`:sites <- RULE` right to left; `:sites` alone, every rule's); `:rules [FILTER]` lists the rules"
            );
            return Control::Continue;
        }
        let (Some(env), Some(current)) = (self.env(), self.current()) else {
            let _ = writeln!(out, "no program in focus");
            return Control::Continue;
        };
        match list_sites(&env, current, name, backward) {
            Ok(sites) if sites.is_empty() => {
                let _ = writeln!(out, "`{name}` matches nowhere");
            }
            Ok(sites) => {
                for (k, s) in sites.iter().enumerate() {
                    let path: Vec<String> = s.path.iter().map(usize::to_string).collect();
                    let status = match &s.outcome {
                        Ok(after) => format!("ok -> {after}"),
                        Err(d) => format!("refused: {}", d.message),
                    };
                    let _ = writeln!(
                        out,
                        "{:>3}. at [{}]  {}\n     {status}",
                        k + 1,
                        path.join(", "),
                        s.subterm
                    );
                }
            }
            Err(d) => self.render(&[d], "<input>", args, out),
        }
        Control::Continue
    }

    fn cmd_unicode(&mut self, args: &str, out: &mut dyn Write) -> Control {
        match args {
            "on" => self.style.unicode = true,
            "off" => self.style.unicode = false,
            _ => {
                let _ = writeln!(out, "usage: :unicode on|off");
                return Control::Continue;
            }
        }
        self.print_program(out);
        Control::Continue
    }

    fn cmd_quit(&mut self, _: &str, out: &mut dyn Write) -> Control {
        if self.forced {
            Control::Quit
        } else {
            self.leave(out)
        }
    }

    /// The steps taken, as text (for tests and `:save`).
    pub fn step_texts(&self) -> Vec<String> {
        self.steps.iter().map(|t| t.text.clone()).collect()
    }

    /// The current program, if any.
    pub fn current_program(&self) -> Option<&Expr> {
        self.current()
    }

    /// `N=4,M=4` with the loaded program's sizes (for usage lines).
    fn size_example(&self, value: &str) -> String {
        let names: Vec<String> = self
            .checked
            .as_ref()
            .map(|c| {
                c.program
                    .sizes
                    .iter()
                    .map(|s| format!("{}={value}", s.name))
                    .collect()
            })
            .unwrap_or_default();
        if names.is_empty() {
            format!("n={value},m={value}")
        } else {
            names.join(",")
        }
    }
}

/// An unknown step (E0815, `vectorise j`) with the closest step word as a did-you-mean.
fn suggest_step(d: Diagnostic) -> Diagnostic {
    if d.code != "E0815" {
        return d;
    }
    let word = d.message.split('`').nth(1).unwrap_or("");
    let Some(near) = atl_lang::suggest::closest(word, STEPS.iter().map(|s| s.name), 2) else {
        return d;
    };
    let help = match d.help {
        Some(h) => format!("did you mean `{near}`? {h}"),
        None => format!("did you mean `{near}`?"),
    };
    Diagnostic {
        help: Some(help),
        ..d
    }
}

/// `1 step`, `3 steps`.
fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Runs a whole session from a reader (one input per line; a line that leaves brackets
/// open continues on the next), writing to `out`. Used by tests and by `atl repl` when
/// standard input is not a terminal.
pub fn run_script(session: &mut Session, input: &str, out: &mut dyn Write) {
    run_script_bytes(session, input.as_bytes(), out);
}

/// [`run_script`] on bytes: a line that is not UTF-8 text is reported (with its
/// number) and skipped, and the session goes on.
pub fn run_script_bytes(session: &mut Session, input: &[u8], out: &mut dyn Write) {
    let mut pending = String::new();
    let mut pieces: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    // `split` yields an empty last piece after a final newline, as `lines` does not.
    if input.ends_with(b"\n") {
        pieces.pop();
    }
    for (k, raw) in pieces.into_iter().enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let line = match std::str::from_utf8(raw) {
            Ok(line) => line,
            Err(e) => {
                let _ = writeln!(
                    out,
                    "line {} is not UTF-8 text (byte {:#04x} at column {}); skipped",
                    k + 1,
                    raw[e.valid_up_to()],
                    e.valid_up_to() + 1
                );
                continue;
            }
        };
        pending.push_str(line);
        pending.push('\n');
        if atl_lang::parser::is_incomplete(&pending) {
            continue;
        }
        let _ = writeln!(out, "{}{}", session.prompt(), pending.trim_end());
        let text = std::mem::take(&mut pending);
        if session.handle(&text, out) == Control::Quit {
            return;
        }
    }
    if !pending.trim().is_empty() {
        let _ = writeln!(out, "{}{}", session.prompt(), pending.trim_end());
        session.handle(&pending, out);
    }
}
