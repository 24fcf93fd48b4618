//! From a file to a kernel and its C: [`lower_for_emit`] is the whole pipeline of `atl
//! emit` up to printing (what `atl-build` and the Python emitter run too), and the
//! printing functions work on a lowered [`Kernel`]: the loop IR in its reading form
//! ([`ir_text`], the REPL's `:ir`), the C source and header ([`c_code`]), written to
//! files ([`emit_files`]).

use std::path::Path;

use atl_emit_c::{EmitOptions, Fp};
use atl_lang::diag::Diagnostic;
use atl_lower::Kernel;

use crate::failure::Failure;
use crate::load::{Loaded, load_derived, pick_loaded_def};
use crate::lowering::{Validation, gate_and_lower_loaded_for, validate_loaded};
use crate::observer::Observer;

/// A definition of a file, lowered and (unless [`Validation::Off`]) validated: what
/// `atl emit` prints, and what `atl-build` compiles.
#[derive(Debug)]
pub struct Lowered {
    /// The file with its derivations replayed.
    pub loaded: Loaded,
    /// The definition's name (`def`, or the last definition).
    pub name: String,
    pub kernel: Kernel,
}

/// The pipeline of `atl emit` up to printing: load, check and replay the derivations
/// (each re-checked independently), pick the definition, the pad-type and safety gate,
/// lowering for the floating-point mode `fp` (`crate::lowering::lower_options`), and
/// translation validation (unless `validation` is [`Validation::Off`]). Warnings go to
/// the observer as they arise; with `explain`, the validator's report too.
pub fn lower_for_emit(
    observer: &mut dyn Observer,
    file: &Path,
    def: Option<&str>,
    fp: Fp,
    validation: Validation,
    explain: bool,
) -> Result<Lowered, Failure> {
    let loaded = load_derived(observer, file)?;
    let name = pick_loaded_def(&loaded, file, def)?;
    let kernel = gate_and_lower_loaded_for(observer, file, &loaded, &name, fp)?;
    validate_loaded(observer, file, &loaded, &name, &kernel, validation, explain)?;
    Ok(Lowered {
        loaded,
        name,
        kernel,
    })
}

/// The loop IR in the reading form (the REPL's `:ir`; `atl emit --ir` prints the full
/// form, `atl_lower::print::kernel_to_text`).
pub fn ir_text(kernel: &Kernel) -> String {
    atl_lower::kernel_to_string(kernel)
}

/// The C source and header of a kernel.
pub fn c_code(
    kernel: &Kernel,
    options: &EmitOptions,
) -> Result<atl_emit_c::CCode, Vec<Diagnostic>> {
    atl_emit_c::emit(kernel, options).map_err(|d| vec![d])
}

/// The C source of a kernel (the REPL's `:c`).
pub fn c_text(kernel: &Kernel, options: &EmitOptions) -> Result<String, Vec<Diagnostic>> {
    Ok(c_code(kernel, options)?.source)
}

/// E0935: a file that cannot be written.
pub fn write_error(path: &Path, error: &std::io::Error) -> Vec<Diagnostic> {
    vec![Diagnostic::error(
        "E0935",
        format!("cannot write `{}`: {error}", path.display()),
    )]
}

/// Writes the C source (and the header, if asked for), each preceded by `note`;
/// nothing is written if emission fails.
pub fn emit_files(
    kernel: &Kernel,
    options: &EmitOptions,
    source_path: &Path,
    header_path: Option<&Path>,
    note: &str,
) -> Result<(), Vec<Diagnostic>> {
    let code = c_code(kernel, options)?;
    let write =
        |path: &Path, text: &str| std::fs::write(path, text).map_err(|e| write_error(path, &e));
    write(source_path, &format!("{note}{}", code.source))?;
    if let Some(h) = header_path {
        write(h, &format!("{note}{}", code.header))?;
    }
    Ok(())
}
