//! `atl explain CODE`: prints what a diagnostic code means and what to do about it, from
//! the registry in `atl_lang::codes` (the same text as `docs/errors.md`), as
//! `rustc --explain` does.

use clap::Args;

use crate::ctx::Ctx;
use atl_driver::failure::Failure;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// A diagnostic code, e.g. `E0903` (the `E` may be lower case).
    pub code: String,
}

/// `atl explain`.
pub fn run(args: &ExplainArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    match atl_lang::codes::explain(&args.code) {
        Some(text) => {
            let _ = write!(ctx.stdout, "{text}");
            if !text.ends_with('\n') {
                let _ = writeln!(ctx.stdout);
            }
            Ok(())
        }
        None => Err(Failure::usage(format!(
            "`{}` is not a diagnostic code of atl; codes look like `E0903` and are listed in docs/errors.md",
            args.code.trim()
        ))),
    }
}
