//! What several commands share before their own work starts: reading a source file,
//! the front end, the rule library (standard, from a `.rules` file, or with a
//! program's user rules), replaying the derivations and re-checking them with the
//! independent certificate checker, picking a definition, and parsing the `--sizes`,
//! `--input` and `--dtype` arguments. Each returns its result or a [`Failure`];
//! warnings go to the [`Ctx`] as they arise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, Tensor};

use crate::ctx::Ctx;
use crate::failure::{Failure, Located, Report};
use crate::npy;

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
    ctx: &mut Ctx<'_>,
    file: &Path,
) -> Result<(String, atl_lang::Checked), Failure> {
    let source = read_source(file)?;
    let (checked, diags) = atl_lang::check_source(&source);
    match checked {
        Some(c) => {
            if !diags.is_empty() {
                ctx.warn(&diags, file, &source);
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
        status: crate::EXIT_USER,
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
pub fn load_derived(ctx: &mut Ctx<'_>, file: &Path) -> Result<Loaded, Failure> {
    let (source, checked) = load_front_end(ctx, file)?;
    let solver = atl_solver::Solver::new();
    declarations_sound(ctx, file, &source, &checked, &solver)?;
    let lib = library_with_user_rules(file, &source, &checked.program, &solver)?;
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &lib,
        solver: &solver,
    };
    let (derivations, diags) = atl_rewrites::run_derivations(&env);
    if !diags.is_empty() {
        return Err(Failure::diagnostics(diags, file, &source));
    }
    let (program, shapes) =
        atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
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
    ctx: &mut Ctx<'_>,
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
            ctx.warn(&[d], file, source);
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

/// Parses `n=4,m=5` lists (repeatable flag) into a map.
pub fn parse_sizes(args: &[String]) -> Result<BTreeMap<String, i64>, String> {
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
#[derive(Clone, Debug)]
pub enum InputSource {
    Random(u64),
    Npy(PathBuf),
}

/// Parses `--input NAME=random:SEED` / `--input NAME=PATH.npy` arguments.
pub fn parse_inputs(args: &[String]) -> Result<Vec<(String, InputSource)>, String> {
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

/// Parses `--dtype f32|f64`.
pub fn parse_dtype(dtype: &str) -> Result<atl_emit_c::Dtype, Failure> {
    match dtype {
        "f32" => Ok(atl_emit_c::Dtype::F32),
        "f64" => Ok(atl_emit_c::Dtype::F64),
        other => Err(Failure::usage(format!(
            "`--dtype {other}`: expected `f32` or `f64`"
        ))),
    }
}

/// The help of `--fp` (`emit`, `run`, `bench`).
pub const FP_HELP: &str = "Floating point: `fast` (default; -ffp-contract=fast, multiply-adds may be fused, so results may differ in the last bits) or `strict` (-ffp-contract=off: every operation rounds as written, as in the interpreter; kernels of exact derivations are bit-identical)";

/// Parses `--fp fast|strict`.
pub fn parse_fp(fp: &str) -> Result<atl_emit_c::Fp, Failure> {
    atl_emit_c::Fp::parse(fp)
        .ok_or_else(|| Failure::usage(format!("`--fp {fp}`: expected `fast` or `strict`")))
}

/// What `eval`, `run` and `bench` need: the program (derivations added), the chosen
/// definition, checked sizes and every input given on the command line.
#[derive(Debug)]
pub struct Prepared {
    pub loaded: Loaded,
    pub name: String,
    pub sizes: BTreeMap<String, i64>,
    pub inputs: BTreeMap<String, Tensor>,
    /// Input shapes at these sizes (for filling inputs not given).
    pub input_shapes: BTreeMap<String, Vec<usize>>,
}

/// Loads `file` and checks the `--def`, `--sizes` and `--input` arguments against it.
pub fn prepare(
    ctx: &mut Ctx<'_>,
    file: &Path,
    def: Option<&str>,
    size_args: &[String],
    input_args: &[String],
) -> Result<Prepared, Failure> {
    let sizes = parse_sizes(size_args).map_err(Failure::usage)?;
    let input_sources = parse_inputs(input_args).map_err(Failure::usage)?;
    let loaded = load_derived(ctx, file)?;
    let program = &loaded.program;
    for name in sizes.keys() {
        if !program.is_size(name) {
            let declared: Vec<&str> = program.sizes.iter().map(|s| s.name.as_str()).collect();
            return Err(Failure::usage(format!(
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
    let name = pick_loaded_def(&loaded, file, def)?;
    // Sizes, assumptions and the element limit are checked before any input is built,
    // so huge sizes give a diagnostic instead of an out-of-memory abort.
    let shapes = atl_lang::interp::input_shapes(program, &sizes, &EvalOptions::default())
        .map_err(|d| Failure::diagnostics(vec![d], file, &loaded.source))?;
    let mut inputs = BTreeMap::new();
    for (input_name, src) in input_sources {
        let Some(decl) = program.input(&input_name) else {
            let declared: Vec<&str> = program.inputs.iter().map(|i| i.name.as_str()).collect();
            return Err(Failure::usage(format!(
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
                        return Err(Failure::diagnostics(vec![d], file, &loaded.source));
                    }
                },
                Err(e) => {
                    return Err(Failure::usage(format!(
                        "cannot read `{}`: {e}",
                        path.display()
                    )));
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
