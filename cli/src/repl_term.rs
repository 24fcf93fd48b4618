//! The terminal front of `atl repl`: a rustyline editor around a [`Session`] with tab
//! completion of commands, rule names and definitions, persistent history
//! (`$HOME/.atl_history`), and multi-line input while brackets are open. When standard
//! input is not a terminal the session reads it as a script instead.

use std::borrow::Cow;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Editor, Helper};

use crate::EXIT_USER;
use crate::ctx::Ctx;
use crate::repl::{Control, Session, run_script};
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
    if !std::io::stdin().is_terminal() {
        let mut input = String::new();
        if std::io::stdin().read_to_string(&mut input).is_err() {
            return Err(Failure::usage("standard input is not UTF-8 text"));
        }
        run_script(&mut session, &input, stdout);
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
        "atl repl: type a step (`rw get_gen`) or `:help`; Ctrl-D quits"
    );
    loop {
        let prompt = editor
            .helper()
            .map(|h| h.session.prompt())
            .unwrap_or_default();
        match editor.readline(&prompt) {
            Ok(line) => {
                let _ = editor.add_history_entry(line.as_str());
                let Some(helper) = editor.helper_mut() else {
                    break;
                };
                if helper.session.handle(&line, stdout) == Control::Quit {
                    break;
                }
                let _ = stdout.flush();
            }
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(_) => break,
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Ok(())
}
