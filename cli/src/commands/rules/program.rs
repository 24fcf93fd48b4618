//! `atl rules --file PROGRAM.atl [--check]`: the user rules of a program file (its
//! `rule` items), listed, or checked exactly as `atl check` checks them before a
//! derivation may use them (examples, then bounded semantic checking with random
//! instances; docs/rules.md).

use std::path::Path;

use atl_rewrites::rule::Grade;
use atl_rewrites::user_rules::{USER_RULE_ATTEMPTS, library_with_user_rules, load_user_rule};

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
        for item in &items {
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
    for item in items {
        match load_user_rule(item, &name) {
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
    Ok(())
}
