//! `atl rules --file PROGRAM.atl [--check]`: the user rules of a program file (its
//! `rule` items), listed, or checked exactly as `atl check` checks them before a
//! derivation may use them (examples, then bounded semantic checking with random
//! instances; docs/rules.md).

use std::path::Path;

use atl_rewrites::rule::Grade;
use atl_rewrites::user_rules::{USER_RULE_ATTEMPTS, library_with_user_rules, load_user_rule};

use crate::{EXIT_OK, EXIT_USER, Output, library, load};

/// Whether `--file` names a program file rather than a rule file.
pub(crate) fn is_program_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "atl")
}

pub(crate) fn cmd_rules_of_program(
    out: &mut Output<'_>,
    file: &Path,
    filter: Option<&str>,
    check: bool,
) -> i32 {
    let (source, checked) = match load(out, file) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let items: Vec<_> = checked
        .program
        .rules
        .iter()
        .filter(|r| filter.is_none_or(|f| r.name.name.contains(f)))
        .collect();
    if items.is_empty() {
        let _ = writeln!(
            out.stderr,
            "no user rule{} in `{}`",
            filter
                .map(|f| format!(" matches `{f}`"))
                .unwrap_or_default(),
            file.display()
        );
        return EXIT_USER;
    }
    let name = file.display().to_string();
    if check {
        let standard = match library(out) {
            Ok(l) => l,
            Err(code) => return code,
        };
        let solver = atl_solver::Solver::new();
        let (lib, diags) = library_with_user_rules(&standard, &checked.program, &name, &solver);
        for item in &items {
            if lib.user_source(&item.name.name).is_some() {
                let _ = writeln!(
                    out.stdout,
                    "ok      {}  (user rule: its examples and {USER_RULE_ATTEMPTS} random instances agreed; tested, not proved)",
                    item.name.name
                );
            } else {
                let _ = writeln!(out.stdout, "REFUSED {}", item.name.name);
            }
        }
        if !diags.is_empty() {
            out.diagnostics(&diags, file, &source);
            return EXIT_USER;
        }
        return EXIT_OK;
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
                    out.stdout,
                    "{}  [{grade}, user rule]  {}",
                    r.name, r.equation
                );
                let _ = writeln!(out.stdout, "    {}", r.doc);
                for c in &r.conditions {
                    let _ = writeln!(out.stdout, "    if {}: {}", c.name(), c.text());
                }
            }
            Err(d) => failed.push(d),
        }
    }
    if !failed.is_empty() {
        out.diagnostics(&failed, file, &source);
        return EXIT_USER;
    }
    EXIT_OK
}
