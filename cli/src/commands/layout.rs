//! `atl layout EXPR [--json]`: evaluates a CuTe layout expression with `atl-layout`
//! (`compose((6,2):(8,2), (4,3):(3,1))`, docs/layouts.md) and prints the layout, its
//! size and cosize and its values on `[0, size)`, at most [`MAX_VALUES`] of them. An
//! expression that does not parse or has no result is a diagnostic (`E11xx`) pointing
//! into the expression, exit 1, and no JSON.

use clap::Args;

use super::json;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_lang::diag::Diagnostic;
use atl_lang::span::Span;
use atl_layout::{LayoutError, TextError, TextErrorKind};

/// The most values printed: a layout's size can be up to 2^63, and past a few thousand
/// values a listing is no longer read.
pub const MAX_VALUES: usize = 4096;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct LayoutArgs {
    /// A layout or an expression over layouts, e.g. `(3,4):(4,1)` or
    /// `compose(20:2, (5,4):(4,1))` (quote it for the shell).
    pub expr: String,
    /// Print one JSON document (docs/json.md): the layout, size, cosize and values.
    #[arg(long)]
    pub json: bool,
}

/// `atl layout`.
pub fn run(args: &LayoutArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let layout = atl_layout::evaluate(&args.expr).map_err(|e| {
        Failure::diagnostics(
            vec![diagnostic(&e)],
            std::path::Path::new("EXPR"),
            &args.expr,
        )
    })?;
    let values = layout.values(MAX_VALUES);
    let truncated = i64::try_from(values.len()).map_or(true, |n| n < layout.size());
    if args.json {
        let doc = serde_json::json!({
            "command": "layout",
            "expression": args.expr,
            "layout": layout.to_string(),
            "size": layout.size(),
            "cosize": layout.cosize(),
            "values": values,
            "truncated": truncated,
        });
        json::print(ctx.stdout, &doc);
        return Ok(());
    }
    let listed: Vec<String> = values.iter().map(i64::to_string).collect();
    let _ = writeln!(ctx.stdout, "layout: {layout}");
    let _ = writeln!(ctx.stdout, "size:   {}", layout.size());
    let _ = writeln!(ctx.stdout, "cosize: {}", layout.cosize());
    if truncated {
        let _ = writeln!(
            ctx.stdout,
            "values (the first {} of {}): {}",
            values.len(),
            layout.size(),
            listed.join(" ")
        );
    } else {
        let _ = writeln!(ctx.stdout, "values: {}", listed.join(" "));
    }
    Ok(())
}

/// The diagnostic of an expression's error: its code by kind, at its span.
fn diagnostic(e: &TextError) -> Diagnostic {
    let (code, label) = match &e.kind {
        TextErrorKind::Syntax => ("E1101", "here"),
        TextErrorKind::Layout(LayoutError::Malformed(_)) => ("E1102", "not a layout"),
        TextErrorKind::Layout(LayoutError::Compose(_)) => ("E1103", "no result"),
        TextErrorKind::Layout(LayoutError::Complement(_)) => ("E1104", "no result"),
        TextErrorKind::Layout(LayoutError::Overflow(_)) => ("E1105", "beyond 64 bits"),
        TextErrorKind::Arguments
        | TextErrorKind::Layout(LayoutError::Coordinate(_) | LayoutError::TooLarge(_)) => {
            ("E1106", "here")
        }
    };
    Diagnostic::error(code, e.message.clone()).at(Span::new(e.span.start, e.span.end), label)
}
