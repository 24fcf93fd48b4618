//! `atl fmt`: prints a file in canonical form, rewrites it in place (`--write`), or
//! checks that it already is (`--check`, exit 1 with the first differing line if not).

use std::path::PathBuf;

use atl_lang::pretty::Style;
use clap::Args;

use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::load::read_source;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct FmtArgs {
    pub file: PathBuf,
    /// Do not print; exit 1 if the file is not already formatted.
    #[arg(long)]
    pub check: bool,
    /// Use the Unicode aliases `⊞ Σ ·`.
    #[arg(long)]
    pub unicode: bool,
    /// Rewrite the file in place.
    #[arg(long, conflicts_with = "check")]
    pub write: bool,
}

/// `atl fmt`.
pub fn run(args: &FmtArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let source = read_source(file)?;
    let formatted = atl_lang::pretty::format_source(
        &source,
        Style {
            unicode: args.unicode,
        },
    )
    .map_err(|diags| Failure::diagnostics(diags, file, &source))?;
    if args.check {
        if formatted == source {
            return Ok(());
        }
        let line = source
            .lines()
            .zip(formatted.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| source.lines().count().min(formatted.lines().count()))
            + 1;
        return Err(Failure::message(format!(
            "{} is not formatted (first difference at line {line}); run `atl fmt --write {}`",
            file.display(),
            file.display()
        )));
    }
    if args.write {
        if formatted != source {
            std::fs::write(file, &formatted)
                .map_err(|e| Failure::usage(format!("cannot write `{}`: {e}", file.display())))?;
        }
        return Ok(());
    }
    let _ = write!(ctx.stdout, "{formatted}");
    Ok(())
}
