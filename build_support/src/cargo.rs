//! The build-script helper: the one part of `atl-build` that prints. It writes Cargo's
//! directives (`cargo:rerun-if-changed=…`, `cargo:rustc-link-lib=…`) and warnings
//! (`cargo:warning=…`, one per line, so a rendered diagnostic keeps its layout) on
//! standard output, where a build script's output goes, and turns a failure into a
//! panic whose message is the rendered diagnostic (Cargo then shows it and fails the
//! build). Everything else in the crate returns data.

#![allow(clippy::print_stdout)]

use crate::{Built, Kernel};

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

/// [`Kernel::compile`], then [`print`]; on failure the rendered diagnostic is printed as
/// warnings (so it shows even in a quiet build) and the build script panics with it.
pub fn build(kernel: &Kernel) -> Built {
    match kernel.compile() {
        Ok(built) => {
            print(&built);
            built
        }
        Err(e) => {
            // Cargo reruns the script when the file changes, even after a failure.
            println!("cargo:rerun-if-changed={}", kernel.file.display());
            let text = e.to_string();
            warn(&text);
            panic!("{text}");
        }
    }
}
