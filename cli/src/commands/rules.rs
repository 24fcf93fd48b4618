//! `atl rules`: the rule library, listed (this module), checked by bounded semantic
//! testing (`--check`, [`check`]), read from a `.rules` file or a program's user rules
//! (`--file`, [`program`] for `.atl` programs), or exported as Rocq statements
//! (`--export-rocq`, [`rocq`]). `--json` prints the listing or the check as one
//! document (docs/json.md); no rule matching the filter prints only the error.

pub mod check;
pub mod program;
pub mod rocq;

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Value, json};

use super::json;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::load::{rules_file, standard_library};

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct RulesArgs {
    /// Only rules whose name contains this text.
    pub filter: Option<String>,
    /// Check every rule by bounded semantic testing with random instances.
    #[arg(long)]
    pub check: bool,
    /// Random instances tried per rule with `--check`.
    #[arg(long, default_value_t = 200)]
    pub attempts: usize,
    /// List (or with `--check`, check) the rules of this `.rules` file, or the user
    /// rules (`rule` items) of this `.atl` program, instead of the library.
    #[arg(long = "file", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Write the library's Rocq statements (one file per rule file, and `All.v`)
    /// into this directory.
    #[arg(long = "export-rocq", value_name = "DIR", conflicts_with_all = ["check", "filter", "json"])]
    pub export_rocq: Option<PathBuf>,
    /// Print one JSON document (docs/json.md): the listing, or with `--check` each
    /// rule's result (exit status unchanged).
    #[arg(long)]
    pub json: bool,
}

/// `atl rules`: picks the part the arguments ask for.
pub fn run(args: &RulesArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let filter = args.filter.as_deref();
    if let Some(dir) = &args.export_rocq {
        rocq::export(dir, ctx)
    } else if let Some(path) = args.file.as_deref().filter(|p| program::is_program_file(p)) {
        program::run(path, filter, args.check, args.json, ctx)
    } else if args.check {
        check::run(filter, args.attempts, args.file.as_deref(), args.json, ctx)
    } else {
        list(filter, args.file.as_deref(), args.json, ctx)
    }
}

/// The library the listing and `--check` work on: the standard one, or a `.rules` file.
fn library_or_file(file: Option<&Path>) -> Result<atl_rewrites::Library, Failure> {
    match file {
        None => standard_library(),
        Some(path) => rules_file(path),
    }
}

/// What a listing says of one rule, for `--json` (docs/json.md): `status` is
/// `proved` (in Rocq), `checked` (by bounded testing) or `user` (a program's rule).
pub(crate) fn rule_json(r: &atl_rewrites::rule::Rule, status: &str, reason: Option<&str>) -> Value {
    let conditions: Vec<Value> = r
        .conditions
        .iter()
        .map(|c| json!({"name": c.name(), "text": c.text()}))
        .collect();
    json!({
        "name": r.name,
        "equation": r.equation.to_string(),
        "grade": json::grade(r.grade),
        "status": status,
        "not_proved_reason": reason,
        "doc": r.doc,
        "conditions": conditions,
    })
}

/// The `--json` document of a listing.
pub(crate) fn listing_json(source: &str, rules: Vec<Value>) -> Value {
    json!({"command": "rules", "source": source, "rules": rules})
}

/// Lists the rules whose name contains `filter`: equation, grade, status, doc and
/// side conditions.
fn list(
    filter: Option<&str>,
    file: Option<&Path>,
    as_json: bool,
    ctx: &mut Ctx<'_>,
) -> Result<(), Failure> {
    let lib = library_or_file(file)?;
    let mut shown = 0;
    let mut listed = Vec::new();
    for r in lib.rules() {
        if filter.is_some_and(|f| !r.name.contains(f)) {
            continue;
        }
        if as_json {
            let (status, reason) = match &r.status {
                atl_rewrites::rule::Status::Proved => ("proved", None),
                atl_rewrites::rule::Status::Checked(reason) => ("checked", reason.as_deref()),
            };
            listed.push(rule_json(r, status, reason));
            shown += 1;
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
            ctx.stdout,
            "{}  [{grade}, {status}]  {}",
            r.name, r.equation
        );
        let _ = writeln!(ctx.stdout, "    {}", r.doc);
        if let atl_rewrites::rule::Status::Checked(Some(reason)) = &r.status {
            let _ = writeln!(ctx.stdout, "    not proved in Rocq: {reason}");
        }
        for c in &r.conditions {
            let _ = writeln!(ctx.stdout, "    if {}: {}", c.name(), c.text());
        }
        shown += 1;
    }
    if shown == 0 {
        return Err(Failure::message(format!(
            "no rule matches `{}`",
            filter.unwrap_or("")
        )));
    }
    if as_json {
        let source = file.map_or("library".to_string(), |p| p.display().to_string());
        json::print(ctx.stdout, &listing_json(&source, listed));
    }
    Ok(())
}
