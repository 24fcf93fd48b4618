//! The `atl` command line as a library: argument parsing and every subcommand, driven
//! through [`run`] with explicit writers so that tests call it in-process (and a panic
//! anywhere would be caught by the fuzz tests rather than hidden in a child process).
//!
//! Exit status (DESIGN §8): 0 success, 1 user error (a diagnostic was rendered), 2 bad
//! command-line arguments.

pub mod bench_cmd;
pub mod emit_cmd;
pub mod npy;
pub mod repl;
mod repl_term;
mod user_rules_cmd;
pub mod verify_cmd;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use atl_lang::diag::{self, Diagnostic};
use atl_lang::interp::{EvalOptions, Tensor};
use atl_lang::pretty::Style;
use clap::{Parser, Subcommand};

/// Exit status for success.
pub const EXIT_OK: i32 = 0;
/// Exit status for a user error (with a rendered diagnostic).
pub const EXIT_USER: i32 = 1;
/// Exit status for bad command-line arguments.
pub const EXIT_ARGS: i32 = 2;

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

#[derive(Subcommand, Debug)]
enum Command {
    /// Evaluate a definition with the reference interpreter.
    Eval {
        file: PathBuf,
        /// Definition to evaluate (default: the last one in the file).
        #[arg(long = "def")]
        def: Option<String>,
        /// Size values, e.g. `n=4,m=5` (repeatable).
        #[arg(long = "sizes", value_name = "NAME=VALUE,...")]
        sizes: Vec<String>,
        /// An input: `NAME=random:SEED` or `NAME=PATH.npy` (repeatable).
        #[arg(long = "input", value_name = "NAME=SOURCE")]
        inputs: Vec<String>,
        /// Print `{"shape":[…],"data":[…]}` (flat, row-major).
        #[arg(long)]
        json: bool,
        /// Also write the result as a float64 `.npy` file.
        #[arg(long = "out", value_name = "PATH.npy")]
        out: Option<PathBuf>,
    },
    /// Print a file in canonical form.
    Fmt {
        file: PathBuf,
        /// Do not print; exit 1 if the file is not already formatted.
        #[arg(long)]
        check: bool,
        /// Use the Unicode aliases `⊞ Σ ·`.
        #[arg(long)]
        unicode: bool,
        /// Rewrite the file in place.
        #[arg(long, conflicts_with = "check")]
        write: bool,
    },
    /// Check a file: syntax, names, shapes, and every derivation replayed.
    Check { file: PathBuf },
    /// Run a file's derivations and print the derived program.
    Derive {
        file: PathBuf,
        /// Derivation to show (default: the last one).
        #[arg(long = "def")]
        def: Option<String>,
        /// Print every step: the rule, the site, the side conditions, the program after.
        #[arg(long)]
        trace: bool,
        /// Write the derivation's certificate (JSON) to this file.
        #[arg(long = "cert", value_name = "OUT.json")]
        cert: Option<PathBuf>,
        /// Print with the Unicode aliases `⊞ Σ ·`.
        #[arg(long)]
        unicode: bool,
    },
    /// Lower a definition to C (after the pad-type and safety gate).
    Emit {
        file: PathBuf,
        /// Definition or derivation to emit (default: the last definition).
        #[arg(long = "def")]
        def: Option<String>,
        /// Write the C source here instead of standard output.
        #[arg(short = 'o', value_name = "OUT.c")]
        output: Option<PathBuf>,
        /// Also write the header (prototype, shapes, preconditions).
        #[arg(long = "header", value_name = "OUT.h")]
        header: Option<PathBuf>,
        /// The C symbol (default: the definition's name).
        #[arg(long = "name", value_name = "SYMBOL")]
        name: Option<String>,
        /// Element type: f32 (default) or f64.
        #[arg(long = "dtype", default_value = "f32")]
        dtype: String,
        /// Print the loop IR instead of C.
        #[arg(long)]
        ir: bool,
    },
    /// Compile a definition, run it, and compare it with the interpreter.
    Run {
        file: PathBuf,
        #[arg(long = "def")]
        def: Option<String>,
        #[arg(long = "sizes", value_name = "NAME=VALUE,...")]
        sizes: Vec<String>,
        /// Inputs not given are filled with `random:1`, `random:2`, … in order.
        #[arg(long = "input", value_name = "NAME=SOURCE")]
        inputs: Vec<String>,
        #[arg(long = "dtype", default_value = "f32")]
        dtype: String,
    },
    /// Interactive rewriting: apply steps to a definition and see the result at once.
    Repl {
        /// A program file to load.
        file: Option<PathBuf>,
    },
    /// Time a definition's compiled kernel (optionally against another definition).
    Bench {
        file: PathBuf,
        #[arg(long = "def")]
        def: Option<String>,
        /// Sizes to time at.
        #[arg(long = "sizes", value_name = "NAME=VALUE,...")]
        sizes: Vec<String>,
        /// A second definition of the same file, timed interleaved with the first.
        #[arg(long = "vs", value_name = "OTHER")]
        vs: Option<String>,
        /// OpenMP threads.
        #[arg(long = "threads", default_value_t = 1)]
        threads: usize,
        /// Timed calls per kernel.
        #[arg(long = "runs", default_value_t = 11)]
        runs: usize,
        /// Sizes of the check against the interpreter (default: each size, at most 19).
        #[arg(long = "check-sizes", value_name = "NAME=VALUE,...")]
        check_sizes: Vec<String>,
        #[arg(long = "dtype", default_value = "f32")]
        dtype: String,
    },
    /// Check a derivation certificate independently of the rewrite engine.
    Verify {
        /// A certificate written by `atl derive --cert`.
        cert: PathBuf,
    },
    /// List the rule library.
    Rules {
        /// Only rules whose name contains this text.
        filter: Option<String>,
        /// Check every rule by bounded semantic testing with random instances.
        #[arg(long)]
        check: bool,
        /// Random instances tried per rule with `--check`.
        #[arg(long, default_value_t = 200)]
        attempts: usize,
        /// List (or with `--check`, check) the rules of this `.rules` file, or the user
        /// rules (`rule` items) of this `.atl` program, instead of the library.
        #[arg(long = "file", value_name = "FILE")]
        file: Option<PathBuf>,
        /// Write the library's Rocq statements (one file per rule file, and `All.v`)
        /// into this directory.
        #[arg(long = "export-rocq", value_name = "DIR", conflicts_with_all = ["check", "filter"])]
        export_rocq: Option<PathBuf>,
    },
    /// Prove an index fact: `atl prove --size n --assume "i < n" "i + 1 <= n"`.
    Prove {
        /// A size (an integer >= 1); repeatable.
        #[arg(long = "size", value_name = "NAME")]
        sizes: Vec<String>,
        /// A hypothesis; repeatable.
        #[arg(long = "assume", value_name = "FACT")]
        assumes: Vec<String>,
        /// The goal.
        goal: String,
    },
}

/// Where diagnostics go and how they look.
struct Output<'a> {
    stdout: &'a mut dyn Write,
    stderr: &'a mut dyn Write,
    color: bool,
}

impl Output<'_> {
    fn diagnostics(&mut self, diags: &[Diagnostic], file: &Path, source: &str) {
        let name = file.display().to_string();
        // A failed write to stderr leaves nothing better to do.
        let _ = diag::render(diags, &name, source, self.color, self.stderr);
    }

    fn arg_error(&mut self, message: &str) -> i32 {
        let _ = writeln!(self.stderr, "error: {message}");
        EXIT_ARGS
    }
}

/// Runs `atl` with `args` (including the program name). `color` enables coloured
/// diagnostics (the binary sets it when stderr is a terminal).
pub fn run(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    color: bool,
) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
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
    let mut out = Output {
        stdout,
        stderr,
        color,
    };
    match cli.command {
        Command::Eval {
            file,
            def,
            sizes,
            inputs,
            json,
            out: out_path,
        } => cmd_eval(
            &mut out,
            &file,
            def.as_deref(),
            &sizes,
            &inputs,
            json,
            out_path.as_deref(),
        ),
        Command::Fmt {
            file,
            check,
            unicode,
            write,
        } => cmd_fmt(&mut out, &file, check, unicode, write),
        Command::Check { file } => cmd_check(&mut out, &file),
        Command::Derive {
            file,
            def,
            trace,
            cert,
            unicode,
        } => cmd_derive(
            &mut out,
            &file,
            def.as_deref(),
            trace,
            cert.as_deref(),
            unicode,
        ),
        Command::Rules {
            filter,
            check,
            attempts,
            file,
            export_rocq,
        } => {
            if let Some(dir) = export_rocq {
                cmd_rules_export_rocq(&mut out, &dir)
            } else if let Some(path) = file
                .as_deref()
                .filter(|p| user_rules_cmd::is_program_file(p))
            {
                user_rules_cmd::cmd_rules_of_program(&mut out, path, filter.as_deref(), check)
            } else if check {
                cmd_rules_check(&mut out, filter.as_deref(), attempts, file.as_deref())
            } else {
                cmd_rules(&mut out, filter.as_deref(), file.as_deref())
            }
        }
        Command::Emit {
            file,
            def,
            output,
            header,
            name,
            dtype,
            ir,
        } => cmd_emit(
            &mut out,
            &file,
            def.as_deref(),
            output.as_deref(),
            header.as_deref(),
            name,
            &dtype,
            ir,
        ),
        Command::Run {
            file,
            def,
            sizes,
            inputs,
            dtype,
        } => cmd_run(&mut out, &file, def.as_deref(), &sizes, &inputs, &dtype),
        Command::Bench {
            file,
            def,
            sizes,
            vs,
            threads,
            runs,
            check_sizes,
            dtype,
        } => cmd_bench(
            &mut out,
            &file,
            def.as_deref(),
            &sizes,
            BenchArgs {
                vs: vs.as_deref(),
                threads,
                runs,
                check_sizes: &check_sizes,
                dtype: &dtype,
            },
        ),
        Command::Verify { cert } => verify_cmd::verify_file(&cert, out.stdout, out.stderr, color),
        Command::Repl { file } => repl_term::run_repl(file, color, out.stdout, out.stderr),
        Command::Prove {
            sizes,
            assumes,
            goal,
        } => cmd_prove(&mut out, &sizes, &assumes, &goal),
    }
}

/// A checked program with its derivations replayed.
struct Loaded {
    source: String,
    /// The program with every derived definition added.
    program: atl_lang::ir::Program,
    shapes: atl_lang::shapes::ShapeEnv,
    derivations: Vec<atl_rewrites::Derivation>,
    /// The rules the derivations ran with (the library and the file's user rules).
    library: atl_rewrites::Library,
}

/// The standard rule library; its files are embedded and tested, so a failure here is
/// a bug in this build, reported rather than panicking.
fn library(out: &mut Output<'_>) -> Result<atl_rewrites::Library, i32> {
    let (lib, diags) = atl_rewrites::Library::standard();
    if diags.is_empty() {
        return Ok(lib);
    }
    for (file, d) in &diags {
        let src = atl_rewrites::library::RULE_FILES
            .iter()
            .find(|(n, _)| n == file)
            .map(|(_, s)| *s)
            .unwrap_or("");
        let _ = diag::render(std::slice::from_ref(d), file, src, out.color, out.stderr);
    }
    Err(EXIT_USER)
}

/// Front end plus derivations.
fn load_derived(out: &mut Output<'_>, file: &Path) -> Result<Loaded, i32> {
    let (source, checked) = load(out, file)?;
    let solver = atl_solver::Solver::new();
    declarations_sound(out, file, &source, &checked, &solver)?;
    let lib = library_with_user_rules(out, file, &source, &checked.program, &solver)?;
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &lib,
        solver: &solver,
    };
    let (derivations, diags) = atl_rewrites::run_derivations(&env);
    if !diags.is_empty() {
        out.diagnostics(&diags, file, &source);
        return Err(EXIT_USER);
    }
    let (program, shapes) =
        atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    checked_independently(out, file, &source, &program, &derivations, &lib, &solver)?;
    Ok(Loaded {
        source,
        program,
        shapes,
        derivations,
        library: lib,
    })
}

/// The declarations must be satisfiable (under contradictory `assume`s every side
/// condition would hold vacuously) and every written definition and input must be
/// well-shaped under them (the shape discipline, `atl_rewrites::well_shaped`).
fn declarations_sound(
    out: &mut Output<'_>,
    file: &Path,
    source: &str,
    checked: &atl_lang::Checked,
    solver: &atl_solver::Solver,
) -> Result<(), i32> {
    let program = &checked.program;
    if !program.assumes.is_empty() {
        let facts = atl_rewrites::well_shaped::declaration_facts(program);
        let verdict = solver.prove(&facts, &atl_lang::index::Pred::Bool(false));
        if let atl_solver::Verdict::Unknown(reason) = &verdict {
            let mut d = Diagnostic::warning(
                "E0414",
                "the solver could not decide whether the `assume`s are consistent",
            )
            .with_note(format!(
                "{reason}; if they contradict each other, every side condition holds vacuously"
            ))
            .with_help("check that some sizes satisfy every `assume` (e.g. `atl eval --sizes …`)");
            for a in &program.assumes {
                d = d.with_secondary(a.span, "assumed here");
            }
            out.diagnostics(&[d], file, source);
        }
        if verdict.is_proved() {
            let mut d = Diagnostic::error(
                "E0414",
                "the `assume`s contradict each other (or the sizes being at least 1)",
            )
            .with_note("under contradictory facts every side condition would hold, so no derivation could be trusted")
            .with_help("remove or correct the contradicting `assume`");
            for a in &program.assumes {
                d = d.with_secondary(a.span, "assumed here");
            }
            out.diagnostics(&[d], file, source);
            return Err(EXIT_USER);
        }
    }
    let diags = atl_rewrites::well_shaped::check_program(program, &checked.shapes, solver);
    if !diags.is_empty() {
        out.diagnostics(&diags, file, source);
        return Err(EXIT_USER);
    }
    Ok(())
}

/// Defence in depth: every derivation the command uses is re-checked by the
/// independent certificate checker (`atl-proofs`, what `atl verify` runs) before its
/// result is evaluated, lowered or reported; a derivation it refuses stops the command
/// even though the engine accepted it (that would be an engine bug).
fn checked_independently(
    out: &mut Output<'_>,
    file: &Path,
    source: &str,
    program: &atl_lang::ir::Program,
    derivations: &[atl_rewrites::Derivation],
    library: &atl_rewrites::Library,
    solver: &atl_solver::Solver,
) -> Result<(), i32> {
    if derivations.is_empty() {
        return Ok(());
    }
    let (standard, _) = atl_rewrites::Library::standard();
    let mut diags = Vec::new();
    for d in derivations {
        let cert = atl_rewrites::cert::Certificate::new(d, program, library);
        if let Err(e) = atl_proofs::verify_certificate(&cert, &standard, solver) {
            let span = program
                .derive(&d.name)
                .map(|x| x.name_span)
                .unwrap_or_default();
            diags.push(
                Diagnostic::error(
                    "E0847",
                    format!(
                        "the independent checker refuses derivation `{}`, which the rewrite engine accepted",
                        d.name
                    ),
                )
                .at(span, "this derivation")
                .with_note(e.to_string())
                .with_help("this is a bug of the rewrite engine; please report it with this file. `atl derive --cert` writes the certificate, `atl verify` shows the failing step"),
            );
        }
    }
    if diags.is_empty() {
        return Ok(());
    }
    out.diagnostics(&diags, file, source);
    Err(EXIT_USER)
}

/// The standard library plus the file's user rules, each checked before any
/// derivation may use it; a refused rule is rendered and stops the command.
fn library_with_user_rules(
    out: &mut Output<'_>,
    file: &Path,
    source: &str,
    program: &atl_lang::ir::Program,
    solver: &atl_solver::Solver,
) -> Result<atl_rewrites::Library, i32> {
    let standard = library(out)?;
    let name = file.display().to_string();
    let (lib, diags) =
        atl_rewrites::user_rules::library_with_user_rules(&standard, program, &name, solver);
    if !diags.is_empty() {
        out.diagnostics(&diags, file, source);
        return Err(EXIT_USER);
    }
    Ok(lib)
}

fn grade_word(g: atl_rewrites::rule::Grade) -> &'static str {
    match g {
        atl_rewrites::rule::Grade::Exact => "exact (bit-identical to its specification)",
        atl_rewrites::rule::Grade::Real => "real (equal over the reals; rounding may differ)",
    }
}

fn cmd_derive(
    out: &mut Output<'_>,
    file: &Path,
    def: Option<&str>,
    trace: bool,
    cert: Option<&Path>,
    unicode: bool,
) -> i32 {
    let loaded = match load_derived(out, file) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let chosen = match def {
        Some(name) => loaded.derivations.iter().find(|d| d.name == name),
        None => loaded.derivations.last(),
    };
    let Some(d) = chosen else {
        let names: Vec<&str> = loaded.derivations.iter().map(|d| d.name.as_str()).collect();
        let msg = match def {
            Some(name) => format!("no derivation named `{name}`"),
            None => "the file has no derivation".to_string(),
        };
        let mut diag = Diagnostic::error("E0606", msg);
        diag = if names.is_empty() {
            diag.with_help("add a `derive NAME from DEF { … }` block")
        } else {
            diag.with_help(format!("derivations in this file: {}", names.join(", ")))
        };
        out.diagnostics(&[diag], file, &loaded.source);
        return EXIT_USER;
    };
    let style = Style { unicode };
    let show = |e: &atl_lang::ir::Expr| atl_lang::pretty::body_to_string(e, style, "  ");
    if trace {
        let _ = writeln!(out.stdout, "derive {} from {}", d.name, d.from);
        let _ = writeln!(out.stdout, "{}\n", show(&d.initial));
        for (k, step) in d.steps.iter().enumerate() {
            let path: Vec<String> = step.path.iter().map(usize::to_string).collect();
            let origin = step
                .origin
                .as_ref()
                .map(|o| format!("  [from `{o}`]"))
                .unwrap_or_default();
            let _ = writeln!(
                out.stdout,
                "step {}: {}  (at [{}]){origin}",
                k + 1,
                step.command,
                path.join(", ")
            );
            if step.rule.is_some() {
                let _ = writeln!(out.stdout, "  rewrote  {}", step.before);
                let _ = writeln!(out.stdout, "  into     {}", step.after_site);
            }
            for c in &step.conditions {
                let _ = writeln!(out.stdout, "  {}: {} -- {}", c.name, c.goal, c.verdict);
            }
            let _ = writeln!(out.stdout, "  program: {}\n", step.after);
        }
        let _ = writeln!(out.stdout, "grade: {}", grade_word(d.grade()));
    }
    let _ = writeln!(out.stdout, "def {} =\n{}", d.name, show(&d.result));
    if let Some(path) = cert {
        let certificate = atl_rewrites::cert::Certificate::chained(
            d,
            &loaded.derivations,
            &loaded.program,
            &loaded.library,
        );
        let text = match serde_json::to_string_pretty(&certificate) {
            Ok(t) => t,
            Err(e) => return out.arg_error(&format!("cannot serialize the certificate: {e}")),
        };
        if let Err(e) = std::fs::write(path, text + "\n") {
            return out.arg_error(&format!("cannot write `{}`: {e}", path.display()));
        }
    }
    let _ = &loaded.shapes;
    EXIT_OK
}

fn cmd_rules(out: &mut Output<'_>, filter: Option<&str>, file: Option<&Path>) -> i32 {
    let lib = match file {
        None => match library(out) {
            Ok(l) => l,
            Err(code) => return code,
        },
        Some(path) => match rules_file(out, path) {
            Ok(l) => l,
            Err(code) => return code,
        },
    };
    let mut shown = 0;
    for r in lib.rules() {
        if filter.is_some_and(|f| !r.name.contains(f)) {
            continue;
        }
        let grade = match r.grade {
            atl_rewrites::rule::Grade::Exact => "exact",
            atl_rewrites::rule::Grade::Real => "real",
        };
        let status = match &r.status {
            atl_rewrites::rule::Status::Proved => "proved",
            atl_rewrites::rule::Status::Checked(_) => "checked",
        };
        let _ = writeln!(
            out.stdout,
            "{}  [{grade}, {status}]  {}",
            r.name, r.equation
        );
        let _ = writeln!(out.stdout, "    {}", r.doc);
        if let atl_rewrites::rule::Status::Checked(Some(reason)) = &r.status {
            let _ = writeln!(out.stdout, "    not proved in Rocq: {reason}");
        }
        for c in &r.conditions {
            let _ = writeln!(out.stdout, "    if {}: {}", c.name(), c.text());
        }
        shown += 1;
    }
    if shown == 0 {
        let _ = writeln!(out.stderr, "no rule matches `{}`", filter.unwrap_or(""));
        return EXIT_USER;
    }
    EXIT_OK
}

/// `atl rules --export-rocq DIR`: the statements of `proofs/rocq` (DESIGN §9).
fn cmd_rules_export_rocq(out: &mut Output<'_>, dir: &Path) -> i32 {
    let lib = match library(out) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let exported = match atl_rewrites::rocq::export_library(&lib) {
        Ok(e) => e,
        Err(e) => return out.arg_error(&format!("cannot export to Rocq: {e}")),
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        return out.arg_error(&format!("cannot create `{}`: {e}", dir.display()));
    }
    for f in &exported {
        let path = dir.join(&f.name);
        if let Err(e) = std::fs::write(&path, &f.contents) {
            return out.arg_error(&format!("cannot write `{}`: {e}", path.display()));
        }
    }
    let _ = writeln!(
        out.stdout,
        "wrote {} files to {}",
        exported.len(),
        dir.display()
    );
    EXIT_OK
}

fn cmd_rules_check(
    out: &mut Output<'_>,
    filter: Option<&str>,
    attempts: usize,
    file: Option<&Path>,
) -> i32 {
    let lib = match file {
        None => match library(out) {
            Ok(l) => l,
            Err(code) => return code,
        },
        Some(path) => match rules_file(out, path) {
            Ok(l) => l,
            Err(code) => return code,
        },
    };
    let solver = atl_solver::Solver::new();
    let results = atl_rewrites::check::check_library(&lib, &solver, attempts, 0);
    let mut failed = 0;
    for (name, result) in results {
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        use atl_rewrites::check::RuleCheck;
        match result {
            RuleCheck::Passed { instances, tried } => {
                let _ = writeln!(
                    out.stdout,
                    "ok      {name}  ({instances} of {tried} random instances applied and agreed)"
                );
                // Necessity: dropping a condition should make the rule wrong.
                if let Some(rule) = lib.get(&name) {
                    for c in atl_rewrites::check::unnecessary_conditions(rule, &solver, attempts, 1)
                    {
                        let _ = writeln!(
                            out.stdout,
                            "  warning: without condition `{c}` no counterexample was found; it may be stronger than needed"
                        );
                    }
                }
            }
            RuleCheck::NoInstance { tried } => {
                failed += 1;
                let _ = writeln!(
                    out.stdout,
                    "UNTESTED {name}  (no random instance applied in {tried} tries)"
                );
            }
            RuleCheck::Failed {
                lhs,
                rhs,
                sizes,
                detail,
            } => {
                failed += 1;
                let _ = writeln!(
                    out.stdout,
                    "WRONG   {name}  at {sizes}\n    {lhs}\n    => {rhs}\n    {detail}"
                );
            }
        }
    }
    if failed > 0 { EXIT_USER } else { EXIT_OK }
}

/// The rules of a `.rules` file; load errors are rendered.
fn rules_file(out: &mut Output<'_>, path: &Path) -> Result<atl_rewrites::Library, i32> {
    let text = read_source(out, path)?;
    let name = path.display().to_string();
    let (lib, diags) = atl_rewrites::Library::from_sources([(name.clone(), text.clone())]);
    if !diags.is_empty() {
        let ds: Vec<Diagnostic> = diags.into_iter().map(|(_, d)| d).collect();
        out.diagnostics(&ds, path, &text);
        return Err(EXIT_USER);
    }
    Ok(lib)
}

fn cmd_prove(out: &mut Output<'_>, sizes: &[String], assumes: &[String], goal: &str) -> i32 {
    let mut facts = atl_solver::Facts {
        sizes: Vec::new(),
        facts: Vec::new(),
    };
    for s in sizes {
        for name in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return out.arg_error(&format!("`--size {name}`: expected a name"));
            }
            facts.sizes.push(name.to_string());
        }
    }
    for a in assumes {
        match atl_lang::parser::parse_pred_str(a) {
            Ok(p) => facts.facts.push(p),
            Err(diags) => {
                out.diagnostics(&diags, Path::new("--assume"), a);
                return EXIT_USER;
            }
        }
    }
    let goal_pred = match atl_lang::parser::parse_pred_str(goal) {
        Ok(p) => p,
        Err(diags) => {
            out.diagnostics(&diags, Path::new("GOAL"), goal);
            return EXIT_USER;
        }
    };
    let verdict = atl_solver::Solver::new().prove(&facts, &goal_pred);
    let _ = writeln!(out.stdout, "{verdict}");
    match verdict {
        atl_solver::Verdict::Proved => EXIT_OK,
        _ => EXIT_USER,
    }
}

fn read_source(out: &mut Output<'_>, file: &Path) -> Result<String, i32> {
    match std::fs::read(file) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => {
                let offset = e.utf8_error().valid_up_to();
                let source = String::from_utf8_lossy(e.as_bytes()).into_owned();
                let d = Diagnostic::error("E0100", "the file is not valid UTF-8")
                    .at(
                        atl_lang::span::Span::new(offset, offset + 1),
                        "invalid byte here",
                    )
                    .with_help("ATL sources are UTF-8 text");
                out.diagnostics(&[d], file, &source);
                Err(EXIT_USER)
            }
        },
        Err(e) => Err(out.arg_error(&format!("cannot read `{}`: {e}", file.display()))),
    }
}

/// Front end: parse, resolve, check shapes; renders diagnostics.
fn load(out: &mut Output<'_>, file: &Path) -> Result<(String, atl_lang::Checked), i32> {
    let source = read_source(out, file)?;
    let (checked, diags) = atl_lang::check_source(&source);
    if !diags.is_empty() {
        out.diagnostics(&diags, file, &source);
    }
    match checked {
        Some(c) => Ok((source, c)),
        None => Err(EXIT_USER),
    }
}

fn cmd_check(out: &mut Output<'_>, file: &Path) -> i32 {
    let loaded = match load_derived(out, file) {
        Ok(v) => v,
        Err(code) => return code,
    };
    // The gate before lowering: pad types of every truncation and safety of every
    // access, in every definition (derived ones included).
    let solver = atl_solver::Solver::new();
    let gate = atl_padtypes::check_program(&loaded.program, &loaded.shapes, &solver);
    if !gate.is_empty() {
        out.diagnostics(&gate, file, &loaded.source);
        if diag::has_errors(&gate) {
            return EXIT_USER;
        }
    }
    let p = &loaded.program;
    for def in &p.defs {
        let shape = loaded
            .shapes
            .globals
            .get(&def.name)
            .map(|s| atl_lang::shapes::show_shape(s))
            .unwrap_or_default();
        match loaded.derivations.iter().find(|d| d.name == def.name) {
            Some(d) => {
                let _ = writeln!(
                    out.stdout,
                    "derive {} from {} : {shape}  ({} steps replayed; grade {})",
                    d.name,
                    d.from,
                    d.steps.len(),
                    grade_word(d.grade())
                );
            }
            None => {
                let _ = writeln!(out.stdout, "def {} : {shape}", def.name);
            }
        }
    }
    let _ = writeln!(
        out.stdout,
        "ok: {} (shapes, derivations, pad types and access safety)",
        file.display()
    );
    EXIT_OK
}

fn cmd_fmt(out: &mut Output<'_>, file: &Path, check: bool, unicode: bool, write: bool) -> i32 {
    let source = match read_source(out, file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let formatted = match atl_lang::pretty::format_source(&source, Style { unicode }) {
        Ok(f) => f,
        Err(diags) => {
            out.diagnostics(&diags, file, &source);
            return EXIT_USER;
        }
    };
    if check {
        if formatted == source {
            return EXIT_OK;
        }
        let line = source
            .lines()
            .zip(formatted.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| source.lines().count().min(formatted.lines().count()))
            + 1;
        let _ = writeln!(
            out.stderr,
            "{} is not formatted (first difference at line {line}); run `atl fmt --write {}`",
            file.display(),
            file.display()
        );
        return EXIT_USER;
    }
    if write {
        if formatted != source
            && let Err(e) = std::fs::write(file, &formatted)
        {
            return out.arg_error(&format!("cannot write `{}`: {e}", file.display()));
        }
        return EXIT_OK;
    }
    let _ = write!(out.stdout, "{formatted}");
    EXIT_OK
}

/// Parses `n=4,m=5` lists (repeatable flag) into a map.
fn parse_sizes(args: &[String]) -> Result<BTreeMap<String, i64>, String> {
    let mut sizes = BTreeMap::new();
    for arg in args {
        for part in arg.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').ok_or_else(|| {
                format!("`--sizes {part}`: expected NAME=VALUE, e.g. `--sizes n=4,m=5`")
            })?;
            let value: i64 = value
                .trim()
                .parse()
                .map_err(|_| format!("`--sizes {part}`: `{value}` is not an integer"))?;
            if sizes.insert(name.trim().to_string(), value).is_some() {
                return Err(format!("`--sizes`: `{}` is given twice", name.trim()));
            }
        }
    }
    Ok(sizes)
}

/// An `--input` source, before shapes are known.
enum InputSource {
    Random(u64),
    Npy(PathBuf),
}

fn parse_inputs(args: &[String]) -> Result<Vec<(String, InputSource)>, String> {
    let mut out: Vec<(String, InputSource)> = Vec::new();
    for arg in args {
        let (name, source) = arg.split_once('=').ok_or_else(|| {
            format!("`--input {arg}`: expected NAME=random:SEED or NAME=PATH.npy")
        })?;
        let name = name.trim().to_string();
        if out.iter().any(|(n, _)| *n == name) {
            return Err(format!("`--input`: `{name}` is given twice"));
        }
        let source = if let Some(seed) = source.strip_prefix("random:") {
            InputSource::Random(seed.trim().parse().map_err(|_| {
                format!("`--input {arg}`: the seed `{seed}` is not a non-negative integer")
            })?)
        } else if source.ends_with(".npy") {
            InputSource::Npy(PathBuf::from(source))
        } else {
            return Err(format!(
                "`--input {arg}`: expected `random:SEED` or a path ending in `.npy`"
            ));
        };
        out.push((name, source));
    }
    Ok(out)
}

/// Picks the definition a command works on: `--def NAME` or the last one.
fn pick_def<'p>(
    program: &'p atl_lang::ir::Program,
    requested: Option<&str>,
) -> Result<&'p str, Diagnostic> {
    let defs: Vec<&str> = program.defs.iter().map(|d| d.name.as_str()).collect();
    match requested {
        Some(name) => {
            if let Some(d) = program.def(name) {
                Ok(d.name.as_str())
            } else {
                Err(
                    Diagnostic::error("E0606", format!("no definition named `{name}`"))
                        .with_help(format!("definitions in this file: {}", defs.join(", "))),
                )
            }
        }
        None => program.defs.last().map(|d| d.name.as_str()).ok_or_else(|| {
            Diagnostic::error("E0606", "the file has no definition to evaluate")
                .with_help("add a `def NAME = …`")
        }),
    }
}

/// What `eval` and `run` need: the program (derivations added), the chosen definition,
/// checked sizes and every input given on the command line.
struct Prepared {
    loaded: Loaded,
    name: String,
    sizes: BTreeMap<String, i64>,
    inputs: BTreeMap<String, Tensor>,
    /// Input shapes at these sizes (for filling inputs not given).
    input_shapes: BTreeMap<String, Vec<usize>>,
}

fn prepare(
    out: &mut Output<'_>,
    file: &Path,
    def: Option<&str>,
    size_args: &[String],
    input_args: &[String],
) -> Result<Prepared, i32> {
    let sizes = parse_sizes(size_args).map_err(|m| out.arg_error(&m))?;
    let input_sources = parse_inputs(input_args).map_err(|m| out.arg_error(&m))?;
    let loaded = load_derived(out, file)?;
    let source = loaded.source.clone();
    let program = &loaded.program;
    for name in sizes.keys() {
        if !program.is_size(name) {
            let declared: Vec<&str> = program.sizes.iter().map(|s| s.name.as_str()).collect();
            return Err(out.arg_error(&format!(
                "`--sizes`: `{name}` is not a size of {} (sizes: {})",
                file.display(),
                if declared.is_empty() {
                    "none".to_string()
                } else {
                    declared.join(", ")
                }
            )));
        }
    }
    let name = match pick_def(program, def) {
        Ok(n) => n.to_string(),
        Err(d) => {
            out.diagnostics(&[d], file, &source);
            return Err(EXIT_USER);
        }
    };
    // Sizes, assumptions and the element limit are checked before any input is built,
    // so huge sizes give a diagnostic instead of an out-of-memory abort.
    let shapes = match atl_lang::interp::input_shapes(program, &sizes, &EvalOptions::default()) {
        Ok(s) => s,
        Err(d) => {
            out.diagnostics(&[d], file, &source);
            return Err(EXIT_USER);
        }
    };
    let mut inputs = BTreeMap::new();
    for (input_name, src) in input_sources {
        let Some(decl) = program.input(&input_name) else {
            let declared: Vec<&str> = program.inputs.iter().map(|i| i.name.as_str()).collect();
            return Err(out.arg_error(&format!(
                "`--input`: `{input_name}` is not an input of {} (inputs: {})",
                file.display(),
                if declared.is_empty() {
                    "none".to_string()
                } else {
                    declared.join(", ")
                }
            )));
        };
        let tensor = match src {
            InputSource::Random(seed) => match shapes.get(&decl.name) {
                Some(shape) => Tensor::random(shape.clone(), seed),
                None => continue,
            },
            InputSource::Npy(path) => match std::fs::read(&path) {
                Ok(bytes) => match npy::parse(&bytes) {
                    Ok(a) => Tensor {
                        shape: a.shape,
                        data: a.data,
                    },
                    Err(m) => {
                        let d = Diagnostic::error(
                            "E0608",
                            format!(
                                "cannot read input `{input_name}` from `{}`: {m}",
                                path.display()
                            ),
                        );
                        out.diagnostics(&[d], file, &source);
                        return Err(EXIT_USER);
                    }
                },
                Err(e) => {
                    return Err(out.arg_error(&format!("cannot read `{}`: {e}", path.display())));
                }
            },
        };
        inputs.insert(input_name, tensor);
    }
    Ok(Prepared {
        loaded,
        name,
        sizes,
        inputs,
        input_shapes: shapes,
    })
}

fn parse_dtype(out: &mut Output<'_>, dtype: &str) -> Result<atl_emit_c::Dtype, i32> {
    match dtype {
        "f32" => Ok(atl_emit_c::Dtype::F32),
        "f64" => Ok(atl_emit_c::Dtype::F64),
        other => Err(out.arg_error(&format!("`--dtype {other}`: expected `f32` or `f64`"))),
    }
}

/// Runs the pad-type and access-safety gate on `name` (and what it uses); renders and
/// refuses on failure: lowering never sees a program that fails it.
fn gate(out: &mut Output<'_>, file: &Path, loaded: &Loaded, name: &str) -> Result<(), i32> {
    let solver = atl_solver::Solver::new();
    let diags = atl_padtypes::check_definition(&loaded.program, &loaded.shapes, &solver, name);
    if diags.is_empty() {
        return Ok(());
    }
    out.diagnostics(&diags, file, &loaded.source);
    if diag::has_errors(&diags) {
        let _ = writeln!(
            out.stderr,
            "error: `{name}` fails the gate before lowering; nothing was emitted"
        );
        return Err(EXIT_USER);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn cmd_emit(
    out: &mut Output<'_>,
    file: &Path,
    def: Option<&str>,
    output: Option<&Path>,
    header: Option<&Path>,
    symbol: Option<String>,
    dtype: &str,
    ir: bool,
) -> i32 {
    let dtype = match parse_dtype(out, dtype) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let loaded = match load_derived(out, file) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let name = match pick_def(&loaded.program, def) {
        Ok(n) => n.to_string(),
        Err(d) => {
            out.diagnostics(&[d], file, &loaded.source);
            return EXIT_USER;
        }
    };
    if let Err(code) = gate(out, file, &loaded, &name) {
        return code;
    }
    let options = emit_cmd::EmitOptions { symbol, dtype };
    let result = if ir {
        emit_cmd::ir_text(&loaded.program, &loaded.shapes, &name).map(|t| {
            let _ = write!(out.stdout, "{t}");
        })
    } else {
        match output {
            Some(path) => emit_cmd::emit_files(
                &loaded.program,
                &loaded.shapes,
                &name,
                &options,
                path,
                header,
            ),
            None => emit_cmd::c_code(&loaded.program, &loaded.shapes, &name, &options).and_then(
                |code| {
                    // C on standard output; the header (if asked for) to its file.
                    if let Some(h) = header {
                        std::fs::write(h, &code.header).map_err(|e| {
                            vec![Diagnostic::error(
                                "E0935",
                                format!("cannot write `{}`: {e}", h.display()),
                            )]
                        })?;
                    }
                    let _ = out.stdout.write_all(code.source.as_bytes());
                    Ok(())
                },
            ),
        }
    };
    match result {
        Ok(()) => EXIT_OK,
        Err(diags) => {
            out.diagnostics(&diags, file, &loaded.source);
            EXIT_USER
        }
    }
}

fn cmd_run(
    out: &mut Output<'_>,
    file: &Path,
    def: Option<&str>,
    size_args: &[String],
    input_args: &[String],
    dtype: &str,
) -> i32 {
    let dtype = match parse_dtype(out, dtype) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let mut prepared = match prepare(out, file, def, size_args, input_args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if let Err(code) = gate(out, file, &prepared.loaded, &prepared.name) {
        return code;
    }
    // Inputs not given: random:1, random:2, … in declaration order.
    for (k, decl) in prepared.loaded.program.inputs.iter().enumerate() {
        if !prepared.inputs.contains_key(&decl.name)
            && let Some(shape) = prepared.input_shapes.get(&decl.name)
        {
            prepared.inputs.insert(
                decl.name.clone(),
                Tensor::random(shape.clone(), k as u64 + 1),
            );
        }
    }
    let options = emit_cmd::EmitOptions {
        symbol: None,
        dtype,
    };
    match emit_cmd::run(
        &prepared.loaded.program,
        &prepared.loaded.shapes,
        &prepared.name,
        &prepared.sizes,
        &prepared.inputs,
        &options,
    ) {
        Ok(report) => {
            let _ = emit_cmd::write_run_report(&report, out.stdout);
            EXIT_OK
        }
        Err(diags) => {
            out.diagnostics(&diags, file, &prepared.loaded.source);
            EXIT_USER
        }
    }
}

/// The options of `atl bench` besides the file, definition and sizes.
struct BenchArgs<'a> {
    vs: Option<&'a str>,
    threads: usize,
    runs: usize,
    check_sizes: &'a [String],
    dtype: &'a str,
}

fn cmd_bench(
    out: &mut Output<'_>,
    file: &Path,
    def: Option<&str>,
    size_args: &[String],
    args: BenchArgs<'_>,
) -> i32 {
    let dtype = match parse_dtype(out, args.dtype) {
        Ok(d) => d,
        Err(code) => return code,
    };
    if args.threads == 0 || args.runs == 0 {
        return out.arg_error("`--threads` and `--runs` must be at least 1");
    }
    let prepared = match prepare(out, file, def, size_args, &[]) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let program = &prepared.loaded.program;
    let check_sizes = if args.check_sizes.is_empty() {
        bench_cmd::default_check_sizes(&prepared.sizes)
    } else {
        match parse_sizes(args.check_sizes) {
            Ok(s) => s,
            Err(m) => return out.arg_error(&format!("`--check-sizes`: {m}")),
        }
    };
    if let Err(d) = atl_lang::interp::input_shapes(program, &check_sizes, &EvalOptions::default()) {
        out.diagnostics(&[d], file, &prepared.loaded.source);
        let _ = writeln!(
            out.stderr,
            "help: the check against the interpreter runs at the sizes above; choose others \
             with `--check-sizes`"
        );
        return EXIT_USER;
    }
    let vs = match args.vs {
        None => None,
        Some(v) => match pick_def(program, Some(v)) {
            Ok(n) => Some(n.to_string()),
            Err(d) => {
                out.diagnostics(&[d], file, &prepared.loaded.source);
                return EXIT_USER;
            }
        },
    };
    for name in std::iter::once(&prepared.name).chain(&vs) {
        if let Err(code) = gate(out, file, &prepared.loaded, name) {
            return code;
        }
    }
    if args.threads > 1 && std::env::var_os("OMP_WAIT_POLICY").is_none() {
        let _ = writeln!(
            out.stderr,
            "note: OMP_WAIT_POLICY is not set; on a machine whose cores are shared, \
             spinning OpenMP threads distort multi-thread timings (set it to `passive`)"
        );
    }
    let options = bench_cmd::BenchOptions {
        dtype,
        threads: args.threads,
        runs: args.runs,
    };
    match bench_cmd::bench(
        program,
        &prepared.loaded.shapes,
        &prepared.name,
        vs.as_deref(),
        &prepared.sizes,
        &check_sizes,
        &options,
    ) {
        Ok(report) => {
            let _ = bench_cmd::write_report(&report, out.stdout);
            EXIT_OK
        }
        Err(diags) => {
            out.diagnostics(&diags, file, &prepared.loaded.source);
            EXIT_USER
        }
    }
}

fn cmd_eval(
    out: &mut Output<'_>,
    file: &Path,
    def: Option<&str>,
    size_args: &[String],
    input_args: &[String],
    json: bool,
    out_path: Option<&Path>,
) -> i32 {
    let prepared = match prepare(out, file, def, size_args, input_args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let Prepared {
        loaded,
        name,
        sizes,
        inputs,
        ..
    } = prepared;
    let source = loaded.source.clone();
    let program = &loaded.program;
    let result = match atl_lang::interp::eval_def(
        program,
        &name,
        &sizes,
        &inputs,
        &EvalOptions::default(),
    ) {
        Ok(t) => t,
        Err(d) => {
            out.diagnostics(&[d], file, &source);
            return EXIT_USER;
        }
    };
    if let Some(path) = out_path {
        let mut buf = Vec::new();
        let _ = npy::write_f64(&mut buf, &result.shape, &result.data);
        if let Err(e) = std::fs::write(path, &buf) {
            return out.arg_error(&format!("cannot write `{}`: {e}", path.display()));
        }
    }
    if json {
        // Written by hand to keep DESIGN §8's key order (`shape` first).
        let shape = serde_json::Value::from(result.shape.clone());
        let data = serde_json::Value::Array(result.data.iter().map(|v| json_number(*v)).collect());
        let _ = writeln!(out.stdout, "{{\"shape\":{shape},\"data\":{data}}}");
    } else {
        let _ = writeln!(out.stdout, "{}", show_tensor(&result));
    }
    EXIT_OK
}

/// JSON has no NaN or infinity; they print as `null` (and the text output shows them).
fn json_number(v: f64) -> serde_json::Value {
    serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// Human-readable nested-list rendering with six significant digits.
fn show_tensor(t: &Tensor) -> String {
    fn rec(t: &Tensor, dim: usize, offset: usize, out: &mut String) {
        if dim == t.shape.len() {
            out.push_str(&format!(
                "{:.6}",
                t.data.get(offset).copied().unwrap_or(0.0)
            ));
            return;
        }
        let stride: usize = t.shape[dim + 1..].iter().product();
        out.push('[');
        for k in 0..t.shape[dim] {
            if k > 0 {
                out.push_str(", ");
                if dim + 1 < t.shape.len() {
                    out.push('\n');
                    out.push_str(&" ".repeat(dim + 1));
                }
            }
            rec(t, dim + 1, offset + k * stride, out);
        }
        out.push(']');
    }
    let mut s = format!("shape {:?}\n", t.shape);
    rec(t, 0, 0, &mut s);
    s
}
