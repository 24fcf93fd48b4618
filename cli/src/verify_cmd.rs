//! The body of `atl verify CERT.json`: replays a derivation certificate with the
//! independent checker of `atl-proofs` (not the rewrite engine) and reports the first
//! failing step. The command (`crate::commands::verify`) writes an accepted report with
//! [`write_accepted`]; [`verify_file`] is the whole command with plain writers and an
//! exit status, which `proofs/tests/verify_cmd.rs` compiles on its own (by path) to test
//! the checker's output, so this file uses nothing else of the CLI crate.
//!
//! ```text
//! atl verify CERT.json
//!     Exit 0: accepted (one summary line on stdout, the declarations the equality
//!     holds under, the chain of nested base derivations, then a note for each
//!     assumption beyond the library: user rules, recorded definitions, warnings).
//!     Exit 1: rejected (the first failing step as an E10xx diagnostic on stderr).
//!     Exit 2: the file cannot be read or is not a certificate.
//! ```

use std::io::Write;
use std::path::Path;

use atl_lang::diag;
use atl_lang::steps::describe_grade;
use atl_proofs::VerifyReport;

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
            write_accepted(&r, stdout);
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

/// Writes what an accepted certificate establishes: the summary line, the declarations
/// it holds under, the chain of bases, and a note or warning for each assumption
/// beyond the library.
pub fn write_accepted(r: &VerifyReport, stdout: &mut dyn Write) {
    let _ = writeln!(
        stdout,
        "certificate accepted: `{}` from `{}`, {} step(s) ({} rule application(s), {} tactic step(s)), {} side condition(s) re-proved, grade {}",
        r.derivation,
        r.from,
        r.steps,
        r.rule_steps,
        r.tactic_steps,
        r.conditions_proved,
        describe_grade(&r.grade)
    );
    let _ = writeln!(stdout, "{}", under(r));
    // The chain of bases, each verified from its own nested certificate.
    let chain: Vec<&VerifyReport> = std::iter::successors(Some(r), |x| x.base.as_deref()).collect();
    for b in &chain[1..] {
        let _ = writeln!(
            stdout,
            "  `{}` verified from its nested certificate: from `{}`, {} step(s), grade {}",
            b.derivation,
            b.from,
            b.steps,
            describe_grade(&b.grade)
        );
    }
    let root = chain[chain.len() - 1];
    if root.from_unverified {
        let _ = writeln!(
            stdout,
            "warning: `{}` is a derivation whose certificate is not nested: `initial` was checked only against its recorded result, which nothing verified; regenerate the certificate with `atl derive --cert`",
            root.from
        );
    } else {
        let _ = writeln!(
            stdout,
            "note: the chain starts from the recorded body of `{}`; compare it with your source",
            root.from
        );
    }
    for w in chain.iter().flat_map(|x| &x.warnings) {
        let _ = writeln!(stdout, "warning: {w}");
    }
    let mut user_rules: Vec<&String> = Vec::new();
    for n in chain.iter().flat_map(|x| &x.user_rules) {
        if !user_rules.contains(&n) {
            user_rules.push(n);
        }
    }
    if !user_rules.is_empty() {
        let _ = writeln!(
            stdout,
            "note: this relies on user rule(s) {} from the program file: they were only tested (examples and random instances, bounded), not proved; the equality holds if they are sound",
            user_rules
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let definitions: usize = chain.iter().map(|x| x.definitions).sum();
    if definitions > 0 {
        let _ = writeln!(
            stdout,
            "note: the programs refer to {definitions} recorded definition(s); compare them with your source as you compare the declarations"
        );
    }
}

/// The declarations the accepted equality holds under: every size at least 1, every
/// `assume` and every index array's declaration (the reader's side of the claim).
fn under(r: &VerifyReport) -> String {
    let sizes = if r.sizes.is_empty() {
        "no sizes".to_string()
    } else {
        format!(
            "{} >= 1",
            r.sizes
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let assumes = if r.assumes.is_empty() {
        "no `assume`".to_string()
    } else {
        r.assumes
            .iter()
            .map(|a| format!("`assume {a}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let arrays = if r.index_arrays.is_empty() {
        String::new()
    } else {
        format!(
            ", for every index array that satisfies its declaration ({})",
            r.index_arrays
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let sparse = if r.sparse.is_empty() {
        String::new()
    } else {
        format!(
            ", where {} (each recorded definition is the matrix its arrays store; a matrix's storages store the same matrix, and each program reads one of them)",
            r.sparse
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!("holds for every size with {sizes}, under {assumes}{arrays}{sparse}")
}
