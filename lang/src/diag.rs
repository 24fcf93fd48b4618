//! Diagnostics: the one error type every stage returns, and the one place that renders
//! them (with ariadne) into any `io::Write`.
//!
//! Codes are stable and grouped by stage; the registry in `codes.rs` lists them all
//! (`docs/errors.md` is generated from it): `E01xx` lexing, `E02xx` parsing, `E03xx`
//! names and declarations, `E04xx` shapes, `E05xx` evaluation, `E06xx` inputs and sizes
//! given on the command line.

use std::io;

use ariadne::{Color, Config, IndexType, Label as ALabel, Report, ReportKind, Source};

use crate::span::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// A labelled source range of a diagnostic.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable code such as `E0201`.
    pub code: &'static str,
    pub message: String,
    /// Where the problem is. `None` for problems without a source position (for
    /// example a missing `--sizes` value).
    pub primary: Option<Label>,
    /// Related places (the earlier declaration, the other operand, …).
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    /// What to do about it.
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        // Every code is in the registry that docs/errors.md and `atl explain` are made
        // from (the test lang/tests/error_codes.rs checks the literals; this catches a
        // code that reaches here another way). `warning` goes through here too.
        debug_assert!(
            crate::codes::lookup(code).is_some_and(|entry| !entry.retired),
            "diagnostic code {code} is not registered in lang/src/codes.rs (or is retired)"
        );
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: None,
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Sets the primary label.
    pub fn at(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.primary = Some(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Whether any diagnostic is an error.
pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}

/// Renders diagnostics about `source` (named `file_name` in the output) to `out`.
/// Colour is used only when `color` is set (the CLI sets it for terminals).
pub fn render(
    diags: &[Diagnostic],
    file_name: &str,
    source: &str,
    color: bool,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    for d in diags {
        render_one(d, file_name, source, color, out)?;
    }
    Ok(())
}

/// The byte range of `span` inside `source`, shrunk to the text's length and widened to
/// character boundaries: ariadne slices the source with it, which panics inside a
/// multi-byte character (a span computed on other text, such as the offset of an
/// invalid UTF-8 byte in a file shown with replacement characters, can land there).
fn clamp(span: Span, source: &str) -> std::ops::Range<usize> {
    let len = source.len();
    let mut start = span.start.min(len);
    while !source.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = span.end.clamp(start, len);
    while !source.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

fn render_one(
    d: &Diagnostic,
    file_name: &str,
    source: &str,
    color: bool,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    let kind = match d.severity {
        Severity::Error => ReportKind::Error,
        Severity::Warning => ReportKind::Warning,
    };
    let Some(primary) = &d.primary else {
        // No position: a plain one-paragraph message in the same style.
        writeln!(
            out,
            "{}[{}]: {}",
            severity_word(d.severity),
            d.code,
            d.message
        )?;
        for note in &d.notes {
            writeln!(out, "  note: {note}")?;
        }
        if let Some(help) = &d.help {
            writeln!(out, "  help: {help}")?;
        }
        return Ok(());
    };
    let name = file_name.to_string();
    let config = Config::default()
        .with_color(color)
        .with_index_type(IndexType::Byte);
    let primary_color = if d.is_error() {
        Color::Red
    } else {
        Color::Yellow
    };
    let mut report = Report::build(kind, (name.clone(), clamp(primary.span, source)))
        .with_config(config)
        .with_code(d.code)
        .with_message(&d.message)
        .with_label(
            ALabel::new((name.clone(), clamp(primary.span, source)))
                .with_message(&primary.message)
                .with_color(primary_color)
                .with_order(0),
        );
    for (k, label) in d.secondary.iter().enumerate() {
        report = report.with_label(
            ALabel::new((name.clone(), clamp(label.span, source)))
                .with_message(&label.message)
                .with_color(Color::Blue)
                .with_order(k as i32 + 1),
        );
    }
    for note in &d.notes {
        report = report.with_note(note);
    }
    if let Some(help) = &d.help {
        report = report.with_help(help);
    }
    report
        .finish()
        .write((name, Source::from(source)), &mut *out)
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// Renders to a string without colour (tests, snapshots).
pub fn render_to_string(diags: &[Diagnostic], file_name: &str, source: &str) -> String {
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = render(diags, file_name, source, false, &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}
