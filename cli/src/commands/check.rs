//! `atl check`: the whole file through the front end, its derivations replayed (and
//! re-checked independently), and every definition through the pad-type and
//! access-safety gate; prints each definition's shape (and each derivation's steps and
//! grade). With `--json`, one document (docs/json.md) when the file checks; a file
//! that does not check prints only its diagnostics.

use std::path::PathBuf;

use atl_lang::diag;
use clap::Args;
use serde_json::{Value, json};

use super::derive::grade_word;
use super::json;
use crate::ctx::Ctx;
use atl_driver::failure::{Failure, Located};
use atl_driver::load::load_derived;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    pub file: PathBuf,
    /// Print one JSON document (docs/json.md) instead of the text report.
    #[arg(long)]
    pub json: bool,
}

/// `atl check`.
pub fn run(args: &CheckArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let loaded = load_derived(ctx, file)?;
    // The gate before lowering: pad types of every truncation and safety of every
    // access, in every definition (derived ones included).
    let solver = atl_solver::Solver::new();
    let gate = atl_padtypes::check_program(&loaded.program, &loaded.shapes, &solver);
    if diag::has_errors(&gate) {
        return Err(Failure::diagnostics(gate, file, &loaded.source));
    }
    if !gate.is_empty() {
        ctx.warn_located(&Located::new(gate, file, &loaded.source));
    }
    let p = &loaded.program;
    if args.json {
        let definitions: Vec<Value> = p
            .defs
            .iter()
            .map(|def| {
                let shape: Vec<String> = loaded
                    .shapes
                    .globals
                    .get(&def.name)
                    .map(|s| s.iter().map(|d| d.to_string()).collect())
                    .unwrap_or_default();
                let derivation = loaded
                    .derivations
                    .iter()
                    .find(|d| d.name == def.name)
                    .map_or(Value::Null, |d| {
                        json!({
                            "from": d.from,
                            "steps": d.steps.len(),
                            "grade": json::grade(d.grade()),
                        })
                    });
                json!({"name": def.name, "shape": shape, "derivation": derivation})
            })
            .collect();
        let doc = json!({
            "command": "check",
            "file": file.display().to_string(),
            "ok": true,
            "definitions": definitions,
        });
        json::print(ctx.stdout, &doc);
        return Ok(());
    }
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
                    ctx.stdout,
                    "derive {} from {} : {shape}  ({} steps replayed; grade {})",
                    d.name,
                    d.from,
                    d.steps.len(),
                    grade_word(d.grade())
                );
            }
            None => match loaded.program.sparse_item(&def.name) {
                Some(item) => {
                    let _ = writeln!(ctx.stdout, "sparse {item}");
                }
                None => {
                    let _ = writeln!(ctx.stdout, "def {} : {shape}", def.name);
                }
            },
        }
    }
    let _ = writeln!(
        ctx.stdout,
        "ok: {} (shapes, derivations, pad types and access safety)",
        file.display()
    );
    Ok(())
}
