//! `atl verify CERT.json`: checks a derivation certificate with the independent checker
//! of `atl-proofs` (not the rewrite engine). Accepted: the report of
//! [`crate::verify_cmd::write_accepted`], exit 0. Rejected: the first failing step as
//! an E10xx diagnostic, exit 1. Exit 2: the file cannot be read or is not a
//! certificate. `--json`: one document (docs/json.md) when accepted or rejected
//! (exit status as without it); none when the file cannot be read.

use std::path::{Path, PathBuf};

use atl_proofs::VerifyReport;
use clap::Args;
use serde_json::{Value, json};

use super::json;
use crate::ctx::Ctx;
use crate::{EXIT_ARGS, EXIT_USER};
use atl_driver::failure::Failure;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// A certificate written by `atl derive --cert`.
    pub cert: PathBuf,
    /// Print one JSON document (docs/json.md): `accepted` with what the certificate
    /// establishes, or `rejected` with the first failing step's error.
    #[arg(long)]
    pub json: bool,
}

/// `atl verify` (the same as [`crate::verify_cmd::verify_file`], with its failure
/// returned rather than printed).
pub fn run(args: &VerifyArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let path = args.cert.as_path();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("cannot read `{}`: {e}", path.display())))?;
    match atl_proofs::verify(&text) {
        Ok(report) => {
            if args.json {
                json::print(ctx.stdout, &accepted_json(path, &report));
            } else {
                crate::verify_cmd::write_accepted(&report, ctx.stdout);
            }
            Ok(())
        }
        Err(e) => {
            let status = if e.is_unreadable() {
                EXIT_ARGS
            } else {
                EXIT_USER
            };
            // A rejected certificate still has an answer; an unreadable file has none.
            if args.json && status == EXIT_USER {
                let doc = json!({
                    "command": "verify",
                    "certificate": path.display().to_string(),
                    "verdict": "rejected",
                    "error": json::diagnostic(&e.to_diagnostic()),
                });
                json::print(ctx.stdout, &doc);
            }
            Err(Failure::diagnostics(vec![e.to_diagnostic()], path, &text).with_status(status))
        }
    }
}

/// The `--json` document of an accepted certificate: the root report's counts, the
/// declarations it holds under, the chain of nested bases, and the assumptions
/// beyond the library gathered over the chain (as the text report gathers them).
fn accepted_json(path: &Path, r: &VerifyReport) -> Value {
    let chain: Vec<&VerifyReport> = std::iter::successors(Some(r), |x| x.base.as_deref()).collect();
    let bases: Vec<Value> = chain[1..]
        .iter()
        .map(|b| json!({"derivation": b.derivation, "from": b.from, "steps": b.steps, "grade": b.grade}))
        .collect();
    let root = chain[chain.len() - 1];
    let mut user_rules: Vec<&String> = Vec::new();
    for n in chain.iter().flat_map(|x| &x.user_rules) {
        if !user_rules.contains(&n) {
            user_rules.push(n);
        }
    }
    let warnings: Vec<&String> = chain.iter().flat_map(|x| &x.warnings).collect();
    json!({
        "command": "verify",
        "certificate": path.display().to_string(),
        "verdict": "accepted",
        "derivation": r.derivation,
        "from": r.from,
        "steps": r.steps,
        "rule_steps": r.rule_steps,
        "tactic_steps": r.tactic_steps,
        "conditions_proved": r.conditions_proved,
        "shape_obligations": r.shape_obligations,
        "grade": r.grade,
        "sizes": r.sizes,
        "assumes": r.assumes,
        "index_arrays": r.index_arrays,
        "sparse": r.sparse,
        "bases": bases,
        "chain_from": root.from,
        "chain_from_unverified": root.from_unverified,
        "user_rules": user_rules,
        "definitions": chain.iter().map(|x| x.definitions).sum::<usize>(),
        "warnings": warnings,
    })
}
