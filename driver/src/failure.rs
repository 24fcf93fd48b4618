//! [`Failure`]: why a stage of the pipeline (or a command) stopped, as data. Stages
//! return it instead of printing and picking an exit status themselves; the CLI's
//! `atl_cli::run` renders it (in one place) and maps it to the exit status (DESIGN §8:
//! 1 for a user error, 2 for bad command-line arguments or a file named on the command
//! line that cannot be read or written, 130 for an interrupted command).
//!
//! A failure is a list of [`Report`]s written to standard error in order (diagnostics
//! about one source text, or a plain line) and an exit status. Warnings and notes that
//! do not stop a stage are not failures: they go to the [`crate::Observer`] as they
//! arise.

use std::io::Write;
use std::path::Path;

use atl_lang::diag::{self, Diagnostic};

/// Exit status for success.
pub const EXIT_OK: i32 = 0;
/// Exit status for a user error (with a rendered diagnostic).
pub const EXIT_USER: i32 = 1;
/// Exit status for bad command-line arguments.
pub const EXIT_ARGS: i32 = 2;
/// Exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Diagnostics together with the file name and source text their spans refer to.
#[derive(Clone, Debug)]
pub struct Located {
    pub diagnostics: Vec<Diagnostic>,
    /// The name shown in the rendering (a path, or `--assume`, `GOAL`, …).
    pub file: String,
    pub source: String,
}

impl Located {
    /// Diagnostics about `source`, read from `file`.
    pub fn new(diagnostics: Vec<Diagnostic>, file: &Path, source: &str) -> Located {
        Located {
            diagnostics,
            file: file.display().to_string(),
            source: source.to_string(),
        }
    }

    /// Renders the diagnostics; a failed write to stderr leaves nothing better to do.
    pub fn render(&self, color: bool, stderr: &mut dyn Write) {
        let _ = diag::render(&self.diagnostics, &self.file, &self.source, color, stderr);
    }
}

/// One piece of a failure's output on standard error.
#[derive(Clone, Debug)]
pub enum Report {
    Diagnostics(Located),
    /// A line of text (the newline is added when rendered).
    Line(String),
}

/// Why a command stopped: what to show on standard error, and the exit status.
#[derive(Clone, Debug)]
#[must_use]
pub struct Failure {
    pub reports: Vec<Report>,
    pub status: i32,
}

impl Failure {
    /// Bad command-line arguments, or a file named on the command line that cannot be
    /// read or written: `error: MESSAGE`, exit 2.
    pub fn usage(message: impl std::fmt::Display) -> Failure {
        Failure {
            reports: vec![Report::Line(format!("error: {message}"))],
            status: EXIT_ARGS,
        }
    }

    /// Diagnostics about `source` (the contents of `file`), exit 1.
    pub fn diagnostics(diagnostics: Vec<Diagnostic>, file: &Path, source: &str) -> Failure {
        Failure::located(Located::new(diagnostics, file, source))
    }

    /// Diagnostics with their file and source, exit 1.
    pub fn located(located: Located) -> Failure {
        Failure {
            reports: vec![Report::Diagnostics(located)],
            status: EXIT_USER,
        }
    }

    /// A plain line on standard error, exit 1 (e.g. `fmt --check` on an unformatted
    /// file).
    pub fn message(line: impl Into<String>) -> Failure {
        Failure {
            reports: vec![Report::Line(line.into())],
            status: EXIT_USER,
        }
    }

    /// Nothing more to show (the command already printed its answer, such as
    /// `prove`'s verdict), only the exit `status`.
    pub fn status(status: i32) -> Failure {
        Failure {
            reports: Vec::new(),
            status,
        }
    }

    /// The work was cancelled through the observer's monitor (Ctrl-C): `interrupted`,
    /// exit 130.
    pub fn interrupted() -> Failure {
        Failure {
            reports: vec![Report::Line("interrupted".to_string())],
            status: EXIT_INTERRUPTED,
        }
    }

    /// Adds a line after what is already there.
    pub fn then_line(mut self, line: impl Into<String>) -> Failure {
        self.reports.push(Report::Line(line.into()));
        self
    }

    /// Adds diagnostics after what is already there.
    pub fn then_located(mut self, located: Located) -> Failure {
        self.reports.push(Report::Diagnostics(located));
        self
    }

    /// The same reports with another exit status.
    pub fn with_status(mut self, status: i32) -> Failure {
        self.status = status;
        self
    }

    /// Writes every report to `stderr`, in order, and returns the exit status.
    pub fn render(&self, color: bool, stderr: &mut dyn Write) -> i32 {
        for report in &self.reports {
            match report {
                Report::Diagnostics(located) => located.render(color, stderr),
                Report::Line(line) => {
                    let _ = writeln!(stderr, "{line}");
                }
            }
        }
        self.status
    }
}
