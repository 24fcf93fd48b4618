//! `atl verify CERT.json`: checks a derivation certificate with the independent checker
//! of `atl-proofs` (not the rewrite engine). Accepted: the report of
//! [`crate::verify_cmd::write_accepted`], exit 0. Rejected: the first failing step as
//! an E10xx diagnostic, exit 1. Exit 2: the file cannot be read or is not a
//! certificate.

use std::path::PathBuf;

use clap::Args;

use crate::ctx::Ctx;
use crate::{EXIT_ARGS, EXIT_USER};
use atl_driver::failure::Failure;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// A certificate written by `atl derive --cert`.
    pub cert: PathBuf,
}

/// `atl verify` (the same as [`crate::verify_cmd::verify_file`], with its failure
/// returned rather than printed).
pub fn run(args: &VerifyArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let path = args.cert.as_path();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("cannot read `{}`: {e}", path.display())))?;
    match atl_proofs::verify(&text) {
        Ok(report) => {
            crate::verify_cmd::write_accepted(&report, ctx.stdout);
            Ok(())
        }
        Err(e) => {
            let status = if e.is_unreadable() {
                EXIT_ARGS
            } else {
                EXIT_USER
            };
            Err(Failure::diagnostics(vec![e.to_diagnostic()], path, &text).with_status(status))
        }
    }
}
