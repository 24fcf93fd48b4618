//! The terminal front of `atl repl`: a rustyline editor around a [`Session`] with tab
//! completion of commands, rule names and definitions, persistent history
//! (`$HOME/.atl_history`), and multi-line input while brackets are open. When standard
//! input is not a terminal the session reads it as a script instead.
//!
//! Ctrl-C while a command runs sets the session's cancellation flag (a `signal-hook`
//! handler on SIGINT): the command stops at its next check and the session goes on. A
//! second Ctrl-C before the first is seen ends the process, as Ctrl-C does without the
//! handler. At the prompt the line editor reads Ctrl-C as a key (it clears the line).
//! Ctrl-D with unsaved steps says so and leaves on the next Ctrl-D; input that is not
//! UTF-8 is reported and the session goes on.

use std::borrow::Cow;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Editor, Helper};

use crate::EXIT_USER;
use crate::ctx::Ctx;
use crate::repl::{Control, Session, run_script_bytes};
use atl_driver::failure::{Failure, Report};

struct ReplHelper {
    session: Session,
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before.rfind([' ', '\t']).map(|k| k + 1).unwrap_or(0);
        let candidates = self
            .session
            .completions(before)
            .into_iter()
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        Ok((start, candidates))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Validator for ReplHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        if atl_lang::parser::is_incomplete(ctx.input()) {
            Ok(ValidationResult::Incomplete)
        } else {
            Ok(ValidationResult::Valid(None))
        }
    }
}

impl Helper for ReplHelper {}

fn history_path() -> Option<PathBuf> {
    std::env::var_os("ATL_HISTORY")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".atl_history")))
}

/// Runs `atl repl [FILE]` on the process's terminal (or on a piped standard input).
pub(crate) fn run_repl(file: Option<&Path>, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let stdout = &mut *ctx.stdout;
    let mut session = match Session::new(ctx.color) {
        Ok(s) => s,
        Err(diags) => {
            let lines: Vec<String> = diags
                .iter()
                .map(|d| format!("error[{}]: {}", d.code, d.message))
                .collect();
            return Err(Failure {
                reports: lines.into_iter().map(Report::Line).collect(),
                status: EXIT_USER,
            });
        }
    };
    if let Some(f) = file
        && !session.load(f, stdout)
    {
        return Err(Failure::status(EXIT_USER));
    }
    session.set_progress(std::io::stderr().is_terminal());
    // Ctrl-C stops the running command: the first sets the flag the command checks
    // (`register`); one more while it is still set ends the process
    // (`register_conditional_shutdown`, which runs first and sees the flag set).
    let flag = session.monitor().cancel_flag();
    let _ = signal_hook::flag::register_conditional_shutdown(
        signal_hook::consts::SIGINT,
        130,
        Arc::clone(&flag),
    );
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, flag);
    if !std::io::stdin().is_terminal() {
        let mut input = Vec::new();
        if let Err(e) = std::io::stdin().read_to_end(&mut input) {
            return Err(Failure::usage(format!("cannot read standard input: {e}")));
        }
        run_script_bytes(&mut session, &input, stdout);
        return Ok(());
    }
    let mut editor: Editor<ReplHelper, DefaultHistory> =
        Editor::new().map_err(|e| Failure::usage(format!("cannot start the line editor: {e}")))?;
    editor.set_helper(Some(ReplHelper { session }));
    let history = history_path();
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    let _ = writeln!(
        stdout,
        "atl repl: type a step (`rw get_gen`) or `:help`; Ctrl-C stops a command, Ctrl-D quits"
    );
    loop {
        let prompt = editor
            .helper()
            .map(|h| h.session.prompt())
            .unwrap_or_default();
        match editor.readline(&prompt) {
            Ok(line) => {
                let _ = editor.add_history_entry(line.as_str());
                let columns = editor.dimensions().map(|(c, _)| usize::from(c));
                let Some(helper) = editor.helper_mut() else {
                    break;
                };
                if let Some(c) = columns {
                    helper.session.set_width(c);
                }
                if helper.session.handle(&line, stdout) == Control::Quit {
                    break;
                }
                let _ = stdout.flush();
            }
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(rustyline::error::ReadlineError::Eof) => {
                let Some(helper) = editor.helper_mut() else {
                    break;
                };
                if helper.session.leave(stdout) == Control::Quit {
                    break;
                }
                let _ = stdout.flush();
            }
            // The line editor refuses a byte that is not UTF-8 (and the line typed so
            // far); the session goes on.
            Err(rustyline::error::ReadlineError::Io(e))
                if e.kind() == std::io::ErrorKind::InvalidData =>
            {
                let _ = writeln!(
                    stdout,
                    "the input is not UTF-8 text: the line was dropped; type it again"
                );
                let _ = stdout.flush();
            }
            Err(e) => {
                let _ = writeln!(stdout, "cannot read the terminal: {e}");
                break;
            }
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Ok(())
}
