//! The `atl` command line as a library: the clap definition of the command line and
//! [`run`], which parses it, calls the subcommand's module under [`commands`], and
//! renders what went wrong ([`Failure`]) in one place. Tests call [`run`] in-process
//! with explicit writers (so a panic anywhere is caught by the fuzz tests rather than
//! hidden in a child process).
//!
//! Exit status (DESIGN §8): 0 success, 1 user error (a diagnostic was rendered), 2 bad
//! command-line arguments.
//!
//! The pipeline itself (loading, derivations, the gate, lowering, validation, C,
//! compiling, timing) is the `atl-driver` crate's; this crate parses arguments, calls
//! it and prints. Map: [`commands`] (one module per subcommand), [`ctx`] (what a
//! command is given; `atl_driver::Failure` is what it returns), [`repl`] (the REPL
//! session), [`verify_cmd`] (the report of `atl verify`), [`python`] (the module of
//! `atl emit --python`).

pub mod commands;
pub mod ctx;
pub mod progress;
pub mod python;
pub mod repl;
mod repl_term;
pub mod verify_cmd;

pub use atl_driver::failure::{EXIT_ARGS, EXIT_INTERRUPTED, EXIT_OK, EXIT_USER, Failure};
pub use ctx::Ctx;

use std::ffi::OsString;
use std::io::Write;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "atl",
    version,
    about = "ATL: a functional tensor language with checked rewrites",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands; each variant's doc comment is its `--help` summary.
#[derive(Subcommand, Debug)]
enum Command {
    /// Evaluate a definition with the reference interpreter.
    Eval(commands::eval::EvalArgs),
    /// Print a file in canonical form.
    Fmt(commands::fmt::FmtArgs),
    /// Check a file: syntax, names, shapes, and every derivation replayed.
    Check(commands::check::CheckArgs),
    /// Run a file's derivations and print the derived program.
    Derive(commands::derive::DeriveArgs),
    /// Lower a definition to C (after the pad-type and safety gate).
    Emit(commands::emit::EmitArgs),
    /// Compile a definition (or a given loop-IR kernel, `--ir`), run it, and compare it
    /// with the interpreter.
    Run(commands::run::RunArgs),
    /// Translation validation of a definition's kernel (or of a given loop-IR text,
    /// `--ir`): prints every obligation and the verdict; exits 0 only when the kernel is
    /// validated: its values are the definition's (over the reals), and its C has no
    /// overflowing index arithmetic, out-of-bounds access, race or name clash, for every
    /// size its entry checks let through (exit 1 otherwise, saying why).
    Validate(commands::validate::ValidateArgs),
    /// Interactive rewriting: apply steps to a definition and see the result at once.
    Repl(commands::repl::ReplArgs),
    /// Time a definition's compiled kernel (optionally against another definition).
    Bench(commands::bench::BenchArgs),
    /// Search a fast schedule of a definition at given sizes on this machine, and print
    /// it as a `derive` block of directives (checked, validated and timed; `atl check`
    /// replays it).
    Schedule(commands::schedule::ScheduleArgs),
    /// Check a derivation certificate independently of the rewrite engine.
    Verify(commands::verify::VerifyArgs),
    /// List the rule library.
    Rules(commands::rules::RulesArgs),
    /// Prove an index fact: `atl prove --size n --assume "i < n" "i + 1 <= n"`.
    Prove(commands::prove::ProveArgs),
    /// Explain a diagnostic code: `atl explain E0903`.
    Explain(commands::explain::ExplainArgs),
    /// Evaluate a CuTe layout expression and print the layout, its size, cosize and
    /// values: `atl layout "compose(20:2, (5,4):(4,1))"`.
    Layout(commands::layout::LayoutArgs),
}

/// Runs `atl` with `args` (including the program name). `color` enables coloured
/// diagnostics (the binary sets it when stderr is a terminal). No progress is drawn
/// ([`run_with_progress`]).
pub fn run(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    color: bool,
) -> i32 {
    run_with_progress(args, stdout, stderr, color, false)
}

/// [`run`]; with `progress`, the long stages of a command (evaluating, validating,
/// compiling, timing) draw a progress line on the process's standard error
/// ([`progress`]), which the binary asks for when stderr is a terminal.
pub fn run_with_progress(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    color: bool,
    progress: bool,
) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // clap's own rendering: usage errors on stderr (exit 2), `--help` and
            // `--version` on stdout (exit 0).
            let code = if e.use_stderr() { EXIT_ARGS } else { EXIT_OK };
            let text = if color {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            let target: &mut dyn Write = if e.use_stderr() { stderr } else { stdout };
            let _ = write!(target, "{text}");
            return code;
        }
    };
    let mut ctx = Ctx {
        stdout,
        stderr,
        color,
        monitor: progress.then(|| std::sync::Arc::new(atl_driver::Monitor::new())),
    };
    let result = match &cli.command {
        Command::Eval(args) => commands::eval::run(args, &mut ctx),
        Command::Fmt(args) => commands::fmt::run(args, &mut ctx),
        Command::Check(args) => commands::check::run(args, &mut ctx),
        Command::Derive(args) => commands::derive::run(args, &mut ctx),
        Command::Emit(args) => commands::emit::run(args, &mut ctx),
        Command::Run(args) => commands::run::run(args, &mut ctx),
        Command::Validate(args) => commands::validate::run(args, &mut ctx),
        Command::Repl(args) => commands::repl::run(args, &mut ctx),
        Command::Bench(args) => commands::bench::run(args, &mut ctx),
        Command::Schedule(args) => commands::schedule::run(args, &mut ctx),
        Command::Verify(args) => commands::verify::run(args, &mut ctx),
        Command::Rules(args) => commands::rules::run(args, &mut ctx),
        Command::Prove(args) => commands::prove::run(args, &mut ctx),
        Command::Explain(args) => commands::explain::run(args, &mut ctx),
        Command::Layout(args) => commands::layout::run(args, &mut ctx),
    };
    match result {
        Ok(()) => EXIT_OK,
        Err(failure) => failure.render(color, ctx.stderr),
    }
}
