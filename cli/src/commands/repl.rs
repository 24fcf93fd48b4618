//! `atl repl`: the interactive rewrite session. The session itself is
//! [`crate::repl::Session`]; the terminal around it (line editor, completion, history,
//! or a script on a piped standard input) is `crate::repl_term`.

use std::path::PathBuf;

use clap::Args;

use crate::ctx::Ctx;
use atl_driver::failure::Failure;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct ReplArgs {
    /// A program file to load.
    pub file: Option<PathBuf>,
}

/// `atl repl`.
pub fn run(args: &ReplArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    crate::repl_term::run_repl(args.file.as_deref(), ctx)
}
