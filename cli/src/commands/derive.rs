//! `atl derive`: runs a file's derivations and prints one derived program; `--trace`
//! prints every step (rule, site, side conditions, program after) and the grade,
//! `--cert` writes the derivation's certificate (JSON, checked by `atl verify`),
//! `--json` prints the derivation, its steps and its grade as one document
//! (docs/json.md; none when the file does not check or the derivation is missing).

use std::path::{Path, PathBuf};

use atl_driver::load::Loaded;
use atl_lang::diag::Diagnostic;
use atl_lang::pretty::Style;
use atl_rewrites::derivation::Derivation;
use clap::Args;
use serde_json::{Value, json};

use super::json;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::load::load_derived;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct DeriveArgs {
    pub file: PathBuf,
    /// Derivation to show (default: the last one).
    #[arg(long = "def")]
    pub def: Option<String>,
    /// Print every step: the rule, the site, the side conditions, the program after.
    #[arg(long)]
    pub trace: bool,
    /// Write the derivation's certificate (JSON) to this file.
    #[arg(long = "cert", value_name = "OUT.json")]
    pub cert: Option<PathBuf>,
    /// Print with the Unicode aliases `⊞ Σ ·`.
    #[arg(long)]
    pub unicode: bool,
    /// Print one JSON document (docs/json.md): the derivation, every step and the
    /// grade, instead of the text.
    #[arg(long)]
    pub json: bool,
}

/// How a derivation's grade reads in `derive --trace` and `check`.
pub(crate) fn grade_word(g: atl_rewrites::rule::Grade) -> String {
    atl_lang::steps::describe_grade(match g {
        atl_rewrites::rule::Grade::Exact => "exact",
        atl_rewrites::rule::Grade::Real => "real",
    })
}

/// `atl derive`.
pub fn run(args: &DeriveArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let def = args.def.as_deref();
    let loaded = load_derived(ctx, file)?;
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
        return Err(Failure::diagnostics(vec![diag], file, &loaded.source));
    };
    let style = Style {
        unicode: args.unicode,
    };
    let show = |e: &atl_lang::ir::Expr| atl_lang::pretty::body_to_string(e, style, "  ");
    // The certificate is written before the JSON so that the document can say where.
    if let Some(path) = &args.cert {
        write_certificate(path, d, &loaded)?;
    }
    if args.json {
        json::print(
            ctx.stdout,
            &derivation_json(file, d, style, args.cert.as_deref()),
        );
        return Ok(());
    }
    let out = &mut *ctx.stdout;
    if args.trace {
        let _ = writeln!(out, "derive {} from {}", d.name, d.from);
        let _ = writeln!(out, "{}\n", show(&d.initial));
        for (k, step) in d.steps.iter().enumerate() {
            let path: Vec<String> = step.path.iter().map(usize::to_string).collect();
            let origin = step
                .origin
                .as_ref()
                .map(|o| format!("  [from `{o}`]"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "step {}: {}  (at [{}]){origin}",
                k + 1,
                step.command,
                path.join(", ")
            );
            if step.rule.is_some() {
                let _ = writeln!(out, "  rewrote  {}", step.before);
                let _ = writeln!(out, "  into     {}", step.after_site);
            }
            for c in &step.conditions {
                let _ = writeln!(out, "  {}: {} -- {}", c.name, c.goal, c.verdict);
            }
            let _ = writeln!(out, "  program: {}\n", step.after);
        }
        let _ = writeln!(out, "grade: {}", grade_word(d.grade()));
    }
    let _ = writeln!(out, "def {} =\n{}", d.name, show(&d.result));
    Ok(())
}

/// Writes the certificate of `d` (JSON, checked by `atl verify`) to `path`.
fn write_certificate(path: &Path, d: &Derivation, loaded: &Loaded) -> Result<(), Failure> {
    let certificate = atl_rewrites::cert::Certificate::chained(
        d,
        &loaded.derivations,
        &loaded.program,
        &loaded.library,
    );
    let text = serde_json::to_string_pretty(&certificate)
        .map_err(|e| Failure::usage(format!("cannot serialize the certificate: {e}")))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| Failure::usage(format!("cannot write `{}`: {e}", path.display())))
}

/// The `--json` document of a derivation (docs/json.md, `atl derive --json`).
fn derivation_json(file: &Path, d: &Derivation, style: Style, cert: Option<&Path>) -> Value {
    // Not indented: the text's indentation is for a terminal.
    let show = |e: &atl_lang::ir::Expr| atl_lang::pretty::body_to_string(e, style, "");
    let steps: Vec<Value> = d
        .steps
        .iter()
        .map(|step| {
            let conditions: Vec<Value> = step
                .conditions
                .iter()
                .map(|c| {
                    // The recorded verdict is a solver verdict's text (`proved`, or
                    // `refuted: …`/`unknown: …`): its first word is the verdict.
                    let word = c.verdict.split(':').next().unwrap_or_default().trim();
                    json!({"name": c.name, "goal": c.goal, "verdict": word})
                })
                .collect();
            json!({
                "command": step.command,
                "rule": step.rule,
                "direction": step.direction,
                "path": step.path,
                "instantiation": step.instantiation,
                "conditions": conditions,
                "grade": json::grade(step.grade),
                "before": step.before,
                "after_site": step.after_site,
                "after": step.after,
                "origin": step.origin,
            })
        })
        .collect();
    json!({
        "command": "derive",
        "file": file.display().to_string(),
        "name": d.name,
        "from": d.from,
        "grade": json::grade(d.grade()),
        "initial": show(&d.initial),
        "result": show(&d.result),
        "steps": steps,
        "certificate": cert.map(|p| p.display().to_string()),
    })
}
