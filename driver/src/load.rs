//! The pipeline's first stage: reading a source file, the front end, the rule library
//! (standard, from a `.rules` file, or with a program's user rules), replaying the
//! derivations and re-checking them with the independent certificate checker, and
//! picking a definition. Each returns its result or a [`Failure`]; warnings go to the
//! [`Observer`] as they arise.

use std::path::Path;

use atl_lang::diag::Diagnostic;

use crate::failure::{EXIT_USER, Failure, Located, Report};
use crate::observer::{Observer, begin};

/// Reads a source file as UTF-8 text.
pub fn read_source(file: &Path) -> Result<String, Failure> {
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
                Err(Failure::diagnostics(vec![d], file, &source))
            }
        },
        Err(e) => Err(Failure::usage(format!(
            "cannot read `{}`: {e}",
            file.display()
        ))),
    }
}

/// Front end: parse, resolve, check shapes. Warnings are rendered; errors stop.
pub fn load_front_end(
    observer: &mut dyn Observer,
    file: &Path,
) -> Result<(String, atl_lang::Checked), Failure> {
    let source = read_source(file)?;
    let (checked, diags) = atl_lang::check_source(&source);
    match checked {
        Some(c) => {
            if !diags.is_empty() {
                observer.warn(Located::new(diags, file, &source));
            }
            Ok((source, c))
        }
        None => Err(Failure::diagnostics(diags, file, &source)),
    }
}

/// The standard rule library; its files are embedded and tested, so a failure here is
/// a bug in this build, reported rather than panicking.
pub fn standard_library() -> Result<atl_rewrites::Library, Failure> {
    let (lib, diags) = atl_rewrites::Library::standard();
    if diags.is_empty() {
        return Ok(lib);
    }
    let reports = diags
        .into_iter()
        .map(|(file, d)| {
            let source = atl_rewrites::library::RULE_FILES
                .iter()
                .find(|(n, _)| *n == file)
                .map(|(_, s)| *s)
                .unwrap_or("");
            Report::Diagnostics(Located {
                diagnostics: vec![d],
                file,
                source: source.to_string(),
            })
        })
        .collect();
    Err(Failure {
        reports,
        status: EXIT_USER,
    })
}

/// The rules of a `.rules` file.
pub fn rules_file(path: &Path) -> Result<atl_rewrites::Library, Failure> {
    let text = read_source(path)?;
    let name = path.display().to_string();
    let (lib, diags) = atl_rewrites::Library::from_sources([(name.clone(), text.clone())]);
    if !diags.is_empty() {
        let ds: Vec<Diagnostic> = diags.into_iter().map(|(_, d)| d).collect();
        return Err(Failure::diagnostics(ds, path, &text));
    }
    Ok(lib)
}

/// The standard library plus the file's user rules, each checked before any
/// derivation may use it; a refused rule stops the command.
pub fn library_with_user_rules(
    file: &Path,
    source: &str,
    program: &atl_lang::ir::Program,
    solver: &atl_solver::Solver,
) -> Result<atl_rewrites::Library, Failure> {
    let standard = standard_library()?;
    let name = file.display().to_string();
    let (lib, diags) =
        atl_rewrites::user_rules::library_with_user_rules(&standard, program, &name, solver);
    if !diags.is_empty() {
        return Err(Failure::diagnostics(diags, file, source));
    }
    Ok(lib)
}

/// A checked program with its derivations replayed.
#[derive(Debug)]
pub struct Loaded {
    pub source: String,
    /// The program with every derived definition added.
    pub program: atl_lang::ir::Program,
    pub shapes: atl_lang::shapes::ShapeEnv,
    pub derivations: Vec<atl_rewrites::Derivation>,
    /// The rules the derivations ran with (the library and the file's user rules).
    pub library: atl_rewrites::Library,
}

/// Front end plus derivations, each re-checked independently.
pub fn load_derived(observer: &mut dyn Observer, file: &Path) -> Result<Loaded, Failure> {
    let (source, checked) = load_front_end(observer, file)?;
    let solver = atl_solver::Solver::new();
    declarations_sound(observer, file, &source, &checked, &solver)?;
    let lib = library_with_user_rules(file, &source, &checked.program, &solver)?;
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &lib,
        solver: &solver,
    };
    begin(observer, "replaying the derivations", 0)?;
    let (derivations, diags) = atl_rewrites::run_derivations(&env);
    if !diags.is_empty() {
        return Err(Failure::diagnostics(diags, file, &source));
    }
    let (program, shapes) =
        atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    begin(observer, "checking the derivations independently", 0)?;
    checked_independently(file, &source, &program, &derivations, &lib, &solver)?;
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
    observer: &mut dyn Observer,
    file: &Path,
    source: &str,
    checked: &atl_lang::Checked,
    solver: &atl_solver::Solver,
) -> Result<(), Failure> {
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
            observer.warn(Located::new(vec![d], file, source));
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
            return Err(Failure::diagnostics(vec![d], file, source));
        }
    }
    let diags = atl_rewrites::well_shaped::check_program(program, &checked.shapes, solver);
    if !diags.is_empty() {
        return Err(Failure::diagnostics(diags, file, source));
    }
    Ok(())
}

/// The independent certificate checker (`atl-proofs`, what `atl verify` runs) on one
/// derivation of `program` made with `library`: `Err` with the checker's reason when
/// it refuses the steps (the rule library's own rules are taken from the standard
/// library, never from the engine's copy). The commands and the REPL call it before a
/// derivation's result is evaluated, lowered or reported.
pub fn recheck(
    derivation: &atl_rewrites::Derivation,
    program: &atl_lang::ir::Program,
    library: &atl_rewrites::Library,
    solver: &atl_solver::Solver,
) -> Result<(), String> {
    let cert = atl_rewrites::cert::Certificate::new(derivation, program, library);
    let (standard, _) = atl_rewrites::Library::standard();
    atl_proofs::verify_certificate(&cert, &standard, solver)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Defence in depth: every derivation the command uses is re-checked by the
/// independent certificate checker (`atl-proofs`, what `atl verify` runs) before its
/// result is evaluated, lowered or reported; a derivation it refuses stops the command
/// even though the engine accepted it (that would be an engine bug).
fn checked_independently(
    file: &Path,
    source: &str,
    program: &atl_lang::ir::Program,
    derivations: &[atl_rewrites::Derivation],
    library: &atl_rewrites::Library,
    solver: &atl_solver::Solver,
) -> Result<(), Failure> {
    if derivations.is_empty() {
        return Ok(());
    }
    let mut diags = Vec::new();
    for d in derivations {
        if let Err(e) = recheck(d, program, library, solver) {
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
                .with_note(e)
                .with_help("this is a bug of the rewrite engine; please report it with this file. `atl derive --cert` writes the certificate, `atl verify` shows the failing step"),
            );
        }
    }
    if diags.is_empty() {
        return Ok(());
    }
    Err(Failure::diagnostics(diags, file, source))
}

/// Picks the definition a command works on: `--def NAME` or the last one.
pub fn pick_def<'p>(
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

/// [`pick_def`] on a loaded file, its diagnostic as a failure.
pub fn pick_loaded_def(
    loaded: &Loaded,
    file: &Path,
    requested: Option<&str>,
) -> Result<String, Failure> {
    pick_def(&loaded.program, requested)
        .map(str::to_string)
        .map_err(|d| Failure::diagnostics(vec![d], file, &loaded.source))
}
