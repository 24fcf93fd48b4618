//! One module per `atl` subcommand. Each has the clap arguments of its command and
//! `pub fn run(args, ctx: &mut Ctx) -> Result<(), Failure>`; [`crate::run`] parses the
//! command line, calls it, and renders a failure. Adding a command: a module here, a
//! variant of `crate::Command` and its line in `crate::run`'s dispatch. [`json`] is not
//! a command: it is what the commands' `--json` output shares (docs/json.md).

pub mod bench;
pub mod check;
pub mod derive;
pub mod emit;
pub mod eval;
pub mod explain;
pub mod fmt;
pub mod json;
pub mod layout;
pub mod prove;
pub mod repl;
pub mod rules;
pub mod run;
pub mod schedule;
pub mod validate;
pub mod verify;

/// The help of `--fp` (`emit`, `run`, `bench`).
pub const FP_HELP: &str = "Floating point: `fast` (default; -ffp-contract=fast, multiply-adds may be fused, so results may differ in the last bits) or `strict` (-ffp-contract=off: no fused multiply-adds, every operation rounds as the kernel writes it)";
