//! `atl rules --check [FILTER] [--attempts N] [--file RULES]`: checks every rule of the
//! library (or of a `.rules` file) by bounded semantic testing with random instances,
//! and warns about side conditions no counterexample needed.

use std::path::Path;

use atl_rewrites::check::RuleCheck;

use crate::EXIT_USER;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;

/// One line per rule (`ok`, `UNTESTED`, `WRONG`); exit 1 if any rule was not `ok`.
pub fn run(
    filter: Option<&str>,
    attempts: usize,
    file: Option<&Path>,
    ctx: &mut Ctx<'_>,
) -> Result<(), Failure> {
    let lib = super::library_or_file(file)?;
    let solver = atl_solver::Solver::new();
    let results = atl_rewrites::check::check_library(&lib, &solver, attempts, 0);
    let mut failed = 0;
    for (name, result) in results {
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        match result {
            RuleCheck::Passed { instances, tried } => {
                let _ = writeln!(
                    ctx.stdout,
                    "ok      {name}  ({instances} of {tried} random instances applied and agreed)"
                );
                // Necessity: dropping a condition should make the rule wrong.
                if let Some(rule) = lib.get(&name) {
                    for c in atl_rewrites::check::unnecessary_conditions(rule, &solver, attempts, 1)
                    {
                        let _ = writeln!(
                            ctx.stdout,
                            "  warning: without condition `{c}` no counterexample was found; it may be stronger than needed"
                        );
                    }
                }
            }
            RuleCheck::NoInstance { tried } => {
                failed += 1;
                let _ = writeln!(
                    ctx.stdout,
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
                    ctx.stdout,
                    "WRONG   {name}  at {sizes}\n    {lhs}\n    => {rhs}\n    {detail}"
                );
            }
        }
    }
    if failed > 0 {
        return Err(Failure::status(EXIT_USER));
    }
    Ok(())
}
