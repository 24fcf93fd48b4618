//! The build-script helper: the one part of `atl-build` that prints. It writes Cargo's
//! directives (`cargo:rerun-if-changed=…`, `cargo:rustc-link-lib=…`) and warnings
//! (`cargo:warning=…`, one per line, so a rendered diagnostic keeps its layout) on
//! standard output, where a build script's output goes. On failure it prints the
//! rendered diagnostic once, on standard error (which Cargo shows when a build script
//! fails), and ends the build script with exit status 1: no panic, so no second copy
//! of the message and no Rust backtrace. Everything else in the crate returns data.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;

use crate::{Built, Error, Kernel};

/// Prints `built`'s directives and warnings for Cargo.
pub fn print(built: &Built) {
    for d in &built.directives {
        println!("cargo:{d}");
    }
    for w in &built.warnings {
        warn(w);
    }
}

/// A possibly multi-line warning as `cargo:warning=` lines.
pub fn warn(text: &str) {
    for line in text.lines() {
        println!("cargo:warning={line}");
    }
}

/// What a failed build script prints: the directives for standard output (Cargo reruns
/// the script when the `.atl` file changes, even after a failure) and the message for
/// standard error, the rendered diagnostic once, ending in a newline.
pub fn failure_output(file: &Path, error: &Error) -> (Vec<String>, String) {
    let directives = vec![format!("cargo:rerun-if-changed={}", file.display())];
    let mut message = error.to_string();
    if !message.ends_with('\n') {
        message.push('\n');
    }
    (directives, message)
}

/// [`Kernel::compile`], then [`print`]. On failure: prints [`failure_output`] (the
/// diagnostic once, on standard error) and exits the process with status 1, which
/// fails the build with that message; it never returns then. Call it from a build
/// script only (use [`Kernel::compile`] to handle the error yourself).
pub fn build(kernel: &Kernel) -> Built {
    match kernel.compile() {
        Ok(built) => {
            print(&built);
            built
        }
        Err(e) => {
            let (directives, message) = failure_output(&kernel.file, &e);
            for d in directives {
                println!("{d}");
            }
            eprint!("{message}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_kernel_is_reported_once_with_a_rerun_directive() {
        let rendered = "error[E0301]: unknown name `B`\n  ┌─ k.atl:3:5\n";
        let error = Error::Atl {
            file: "k.atl".into(),
            rendered: rendered.to_string(),
        };
        let (directives, message) = failure_output(Path::new("k.atl"), &error);
        assert_eq!(directives, ["cargo:rerun-if-changed=k.atl"]);
        assert_eq!(message.matches("E0301").count(), 1, "{message}");
        assert!(
            message.starts_with("atl-build: `k.atl` was refused:\n"),
            "{message}"
        );
        assert!(message.ends_with(rendered), "{message}");
        // Not a warning: the message goes to standard error as it is.
        assert!(!message.contains("cargo:"), "{message}");
        let (_, message) = failure_output(Path::new("k.atl"), &Error::NoOutDir);
        assert!(message.ends_with(")\n"), "{message}");
    }
}
