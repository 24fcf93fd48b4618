//! `atl rules --file PROGRAM.atl [--check]`: the user rules of a program file (its
//! `rule` items), listed, or checked exactly as `atl check` checks them before a
//! derivation may use them (examples, then bounded semantic checking with random
//! instances; docs/rules.md).

use std::path::Path;

use atl_rewrites::rule::Grade;
use atl_rewrites::user_rules::{USER_RULE_ATTEMPTS, library_with_user_rules, load_user_rule};

use super::super::json;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::load::{load_front_end, standard_library};

/// Whether `--file` names a program file rather than a rule file.
pub fn is_program_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "atl")
}

/// Lists (or with `check`, checks) the user rules of `file` whose name contains
/// `filter`.
pub fn run(
    file: &Path,
    filter: Option<&str>,
    check: bool,
    as_json: bool,
    ctx: &mut Ctx<'_>,
) -> Result<(), Failure> {
    let (source, checked) = load_front_end(ctx, file)?;
    let items: Vec<_> = checked
        .program
        .rules
        .iter()
        .filter(|r| filter.is_none_or(|f| r.name.name.contains(f)))
        .collect();
    if items.is_empty() {
        return Err(Failure::message(format!(
            "no user rule{} in `{}`",
            filter
                .map(|f| format!(" matches `{f}`"))
                .unwrap_or_default(),
            file.display()
        )));
    }
    let name = file.display().to_string();
    if check {
        let standard = standard_library()?;
        let solver = atl_solver::Solver::new();
        let (lib, diags) = library_with_user_rules(&standard, &checked.program, &name, &solver);
        if as_json {
            let results = items
                .iter()
                .map(|item| {
                    let ok = lib.user_source(&item.name.name).is_some();
                    // Checked as `atl check` checks it: its examples, then
                    // USER_RULE_ATTEMPTS random instances (how many applied is not
                    // reported by the loader).
                    let (result, tried) = if ok {
                        ("ok", Some(USER_RULE_ATTEMPTS))
                    } else {
                        ("refused", None)
                    };
                    super::check::check_json(&item.name.name, result, None, tried, Vec::new(), None)
                })
                .collect();
            json::print(ctx.stdout, &super::check::check_document(&name, results));
        }
        for item in items.iter().filter(|_| !as_json) {
            if lib.user_source(&item.name.name).is_some() {
                let _ = writeln!(
                    ctx.stdout,
                    "ok      {}  (user rule: its examples and {USER_RULE_ATTEMPTS} random instances agreed; tested, not proved)",
                    item.name.name
                );
            } else {
                let _ = writeln!(ctx.stdout, "REFUSED {}", item.name.name);
            }
        }
        if !diags.is_empty() {
            return Err(Failure::diagnostics(diags, file, &source));
        }
        return Ok(());
    }
    let mut failed = Vec::new();
    let mut listed = Vec::new();
    for item in items {
        match load_user_rule(item, &name) {
            Ok(r) if as_json => listed.push(super::rule_json(&r, "user", None)),
            Ok(r) => {
                let grade = match r.grade {
                    Grade::Exact => "exact",
                    Grade::Real => "real",
                };
                let _ = writeln!(
                    ctx.stdout,
                    "{}  [{grade}, user rule]  {}",
                    r.name, r.equation
                );
                let _ = writeln!(ctx.stdout, "    {}", r.doc);
                for c in &r.conditions {
                    let _ = writeln!(ctx.stdout, "    if {}: {}", c.name(), c.text());
                }
            }
            Err(d) => failed.push(d),
        }
    }
    if !failed.is_empty() {
        return Err(Failure::diagnostics(failed, file, &source));
    }
    if as_json {
        json::print(ctx.stdout, &super::listing_json(&name, listed));
    }
    Ok(())
}
