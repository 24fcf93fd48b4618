//! `atl rules --check [FILTER] [--attempts N] [--file RULES]`: checks every rule of the
//! library (or of a `.rules` file) by bounded semantic testing with random instances,
//! and warns about side conditions no counterexample needed.

use std::io::Write;
use std::path::Path;

use atl_rewrites::check::RuleCheck;
use serde_json::{Value, json};

use super::super::json;
use crate::EXIT_USER;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;

/// One line per rule (`ok`, `UNTESTED`, `WRONG`), or with `as_json` one document
/// (docs/json.md); exit 1 if any rule was not `ok`.
pub fn run(
    filter: Option<&str>,
    attempts: usize,
    file: Option<&Path>,
    as_json: bool,
    ctx: &mut Ctx<'_>,
) -> Result<(), Failure> {
    let lib = super::library_or_file(file)?;
    let solver = atl_solver::Solver::new();
    let results = atl_rewrites::check::check_library(&lib, &solver, attempts, 0);
    let mut failed = 0;
    let mut checked = Vec::new();
    for (name, result) in results {
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        if !matches!(result, RuleCheck::Passed { .. }) {
            failed += 1;
        }
        // Necessity: dropping a condition should make the rule wrong.
        let unnecessary: Vec<String> = match (&result, lib.get(&name)) {
            (RuleCheck::Passed { .. }, Some(rule)) => {
                atl_rewrites::check::unnecessary_conditions(rule, &solver, attempts, 1)
                    .into_iter()
                    .map(|c| c.to_string())
                    .collect()
            }
            _ => Vec::new(),
        };
        if as_json {
            checked.push(result_json(&name, &result, unnecessary));
        } else {
            write_result(ctx.stdout, &name, &result, &unnecessary);
        }
    }
    if as_json {
        let source = file.map_or("library".to_string(), |p| p.display().to_string());
        json::print(ctx.stdout, &check_document(&source, checked));
    }
    if failed > 0 {
        return Err(Failure::status(EXIT_USER));
    }
    Ok(())
}

/// One rule's result as `atl rules --check` prints it.
fn write_result(out: &mut dyn Write, name: &str, result: &RuleCheck, unnecessary: &[String]) {
    let _ = match result {
        RuleCheck::Passed { instances, tried } => writeln!(
            out,
            "ok      {name}  ({instances} of {tried} random instances applied and agreed)"
        ),
        RuleCheck::NoInstance { tried } => writeln!(
            out,
            "UNTESTED {name}  (no random instance applied in {tried} tries)"
        ),
        RuleCheck::Failed {
            lhs,
            rhs,
            sizes,
            detail,
        } => writeln!(
            out,
            "WRONG   {name}  at {sizes}\n    {lhs}\n    => {rhs}\n    {detail}"
        ),
    };
    for c in unnecessary {
        let _ = writeln!(
            out,
            "  warning: without condition `{c}` no counterexample was found; it may be stronger than needed"
        );
    }
}

/// One rule's result in the `--check --json` document ([`check_json`]).
fn result_json(name: &str, result: &RuleCheck, unnecessary: Vec<String>) -> Value {
    match result {
        RuleCheck::Passed { instances, tried } => check_json(
            name,
            "ok",
            Some(*instances),
            Some(*tried),
            unnecessary,
            None,
        ),
        RuleCheck::NoInstance { tried } => {
            check_json(name, "untested", None, Some(*tried), Vec::new(), None)
        }
        RuleCheck::Failed {
            lhs,
            rhs,
            sizes,
            detail,
        } => {
            let failure = json!({
                "sizes": sizes.to_string(),
                "lhs": lhs.to_string(),
                "rhs": rhs.to_string(),
                "detail": detail.to_string(),
            });
            check_json(name, "wrong", None, None, Vec::new(), Some(failure))
        }
    }
}

/// One rule's result in the `--check --json` document: `ok`, `untested`, `wrong`
/// (with the failing instance), or `refused` (a program's user rule).
pub(crate) fn check_json(
    name: &str,
    result: &str,
    instances: Option<usize>,
    tried: Option<usize>,
    unnecessary_conditions: Vec<String>,
    failure: Option<Value>,
) -> Value {
    json!({
        "name": name,
        "result": result,
        "instances": instances,
        "tried": tried,
        "unnecessary_conditions": unnecessary_conditions,
        "failure": failure,
    })
}

/// The `--check --json` document.
pub(crate) fn check_document(source: &str, results: Vec<Value>) -> Value {
    json!({"command": "rules", "check": true, "source": source, "results": results})
}
