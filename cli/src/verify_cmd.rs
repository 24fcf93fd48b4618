//! `atl verify CERT.json`: replays a derivation certificate with the independent checker
//! of `atl-proofs` (not the rewrite engine) and reports the first failing step.
//!
//! Intended command line:
//!
//! ```text
//! atl verify CERT.json
//!     Exit 0: accepted (one summary line on stdout, then a note for each assumption
//!     beyond the library: user rules, recorded definitions). Exit 1: rejected (the first
//!     failing step as an E10xx diagnostic on stderr). Exit 2: the file cannot be read
//!     or is not a certificate.
//! ```

use std::io::Write;
use std::path::Path;

use atl_lang::diag;

/// Checks the certificate at `path`; returns the exit status (0 accepted, 1 rejected,
/// 2 unreadable).
pub fn verify_file(
    path: &Path,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    color: bool,
) -> i32 {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(stderr, "error: cannot read `{}`: {e}", path.display());
            return 2;
        }
    };
    match atl_proofs::verify(&text) {
        Ok(r) => {
            let _ = writeln!(
                stdout,
                "certificate accepted: `{}` from `{}`, {} step(s) ({} rule application(s), {} tactic step(s)), {} side condition(s) re-proved, grade {}",
                r.derivation,
                r.from,
                r.steps,
                r.rule_steps,
                r.tactic_steps,
                r.conditions_proved,
                r.grade
            );
            if !r.user_rules.is_empty() {
                let _ = writeln!(
                    stdout,
                    "note: this relies on user rule(s) {} from the program file: they were only tested (examples and random instances, bounded), not proved; the equality holds if they are sound",
                    r.user_rules
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            if r.definitions > 0 {
                let _ = writeln!(
                    stdout,
                    "note: the programs refer to {} recorded definition(s); compare them with your source as you compare the declarations",
                    r.definitions
                );
            }
            0
        }
        Err(e) => {
            let name = path.display().to_string();
            // A failed write to stderr leaves nothing better to do.
            let _ = diag::render(&[e.to_diagnostic()], &name, &text, color, stderr);
            if e.is_unreadable() { 2 } else { 1 }
        }
    }
}
