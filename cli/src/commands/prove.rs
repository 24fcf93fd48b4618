//! `atl prove`: asks the index solver to prove a fact about sizes and indices, e.g.
//! `atl prove --size n --assume "i < n" "i + 1 <= n"`; prints the verdict, exit 0 only
//! when proved. With `--json`, the verdict as one document (docs/json.md), also when
//! it is not proved (exit 1 then); a fact that does not parse prints no JSON.

use std::path::Path;

use clap::Args;

use super::json;
use crate::EXIT_USER;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct ProveArgs {
    /// A size (an integer >= 1); repeatable.
    #[arg(long = "size", value_name = "NAME")]
    pub sizes: Vec<String>,
    /// A hypothesis; repeatable.
    #[arg(long = "assume", value_name = "FACT")]
    pub assumes: Vec<String>,
    /// The goal.
    pub goal: String,
    /// Print one JSON document (docs/json.md): the verdict, and the counterexample or
    /// the solver's reason.
    #[arg(long)]
    pub json: bool,
}

/// `atl prove`.
pub fn run(args: &ProveArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let mut facts = atl_solver::Facts {
        sizes: Vec::new(),
        facts: Vec::new(),
        arrays: Vec::new(),
    };
    for s in &args.sizes {
        for name in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(Failure::usage(format!("`--size {name}`: expected a name")));
            }
            facts.sizes.push(name.to_string());
        }
    }
    for a in &args.assumes {
        let p = atl_lang::parser::parse_pred_str(a)
            .map_err(|diags| Failure::diagnostics(diags, Path::new("--assume"), a))?;
        facts.facts.push(p);
    }
    let goal = &args.goal;
    let goal_pred = atl_lang::parser::parse_pred_str(goal)
        .map_err(|diags| Failure::diagnostics(diags, Path::new("GOAL"), goal))?;
    let verdict = atl_solver::Solver::new().prove(&facts, &goal_pred);
    if args.json {
        let (word, counterexample, reason) = json::verdict(&verdict);
        let doc = serde_json::json!({
            "command": "prove",
            "sizes": facts.sizes,
            "assumptions": args.assumes,
            "goal": goal,
            "verdict": word,
            "counterexample": counterexample,
            "reason": reason,
        });
        json::print(ctx.stdout, &doc);
    } else {
        let _ = writeln!(ctx.stdout, "{verdict}");
    }
    match verdict {
        atl_solver::Verdict::Proved => Ok(()),
        _ => Err(Failure::status(EXIT_USER)),
    }
}
