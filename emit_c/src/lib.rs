//! `atl-emit-c`: C99 for lowered ATL kernels, and the means to compile and run it.
//!
//! - [`emit`] prints a [`Kernel`] as a C source and a header with DESIGN §7's ABI:
//!   `int NAME(int64_t <sizes…>, const T *restrict <inputs…>, T *restrict out)`,
//!   row-major and dense, `T` = `float` or `double` ([`Dtype`]); the kernel writes
//!   every element of `out` itself and returns 0, or returns `k` >= 1 without touching
//!   memory when its `k`-th precondition fails. The inputs are those the definition
//!   reads, in declaration order.
//! - [`compile`] builds it with the platform's C compiler, found by the `cc` crate's
//!   detection (so `CC` and `CFLAGS` are honoured, as in any Cargo build), either into
//!   a shared object that is loaded in-process ([`Backend::SharedObject`]) or into a
//!   stand-alone harness executable ([`Backend::Harness`]) — the latter is what the
//!   sanitizer runs use, since an AddressSanitizer runtime cannot be loaded into an
//!   uninstrumented process.
//! - [`Compiled::run`] checks a call (sizes, preconditions, input shapes), runs the
//!   kernel and returns the output as a [`Tensor`], with the time the kernel took.
//!
//! The one `unsafe` call (the foreign function call into the loaded kernel) lives in
//! the `ffi` module with the argument it relies on.
//!
//! Library code never prints.

mod compile;
mod cprint;
#[allow(unsafe_code)]
mod ffi;
pub mod memory;
mod run;

use atl_lang::diag::Diagnostic;
use atl_lower::Kernel;

pub use atl_lang::interp::Tensor;
pub use compile::{Backend, CompileOptions, Compiled, compile};
pub use cprint::{
    ArrayStatus, RESERVED_PREFIX, array_statuses, is_free_identifier, set_threads_symbol,
    storage_offset,
};
pub use run::{PreparedCall, RunOutput};

/// The element type of the generated kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// `float` (the default).
    #[default]
    F32,
    /// `double`.
    F64,
}

impl Dtype {
    /// Parses `f32`/`float` and `f64`/`double`.
    pub fn parse(s: &str) -> Option<Dtype> {
        match s {
            "f32" | "float" => Some(Dtype::F32),
            "f64" | "double" => Some(Dtype::F64),
            _ => None,
        }
    }

    pub fn c_type(self) -> &'static str {
        cprint::ctype(self)
    }
}

/// How the C compiler may evaluate the kernel's floating-point expressions (`--fp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fp {
    /// `-ffp-contract=fast` (GNU C's default; the default here): `a * b + c` may be one
    /// fused multiply-add, rounded once, so results may differ in the last bits from
    /// the interpreter's and from another kernel's whose contractions differ.
    #[default]
    Fast,
    /// `-ffp-contract=off`: every operation rounds as written, as in the interpreter;
    /// the kernels of two `exact` derivations of one specification are then
    /// bit-identical.
    Strict,
}

impl Fp {
    /// Parses `fast` and `strict`.
    pub fn parse(s: &str) -> Option<Fp> {
        match s {
            "fast" => Some(Fp::Fast),
            "strict" => Some(Fp::Strict),
            _ => None,
        }
    }

    /// `fast` or `strict`, as `--fp` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Fp::Fast => "fast",
            Fp::Strict => "strict",
        }
    }

    /// The compiler flag that gives this mode: `-ffp-contract=fast` or `-ffp-contract=off`.
    pub fn contract_flag(self) -> &'static str {
        match self {
            Fp::Fast => "-ffp-contract=fast",
            Fp::Strict => "-ffp-contract=off",
        }
    }
}

/// What to emit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EmitOptions {
    pub dtype: Dtype,
    /// The C symbol; the definition's name when `None`.
    pub symbol: Option<String>,
    /// The floating-point mode the kernel is meant to be compiled in: stated in the
    /// header, and the flag [`compile`] uses.
    pub fp: Fp,
}

/// A generated kernel: its symbol, the header and the implementation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CCode {
    pub symbol: String,
    pub header: String,
    pub source: String,
}

/// The C symbol of a kernel that only `atl` itself calls (`atl run`, `atl bench`): the
/// definition's name when it is a C identifier a user may define, otherwise
/// `kernel_NAME`, so that any definition name works there (`main`, `exp`, `int`, …)
/// although `atl emit` would refuse it as the name of a function to link.
pub fn internal_symbol(definition: &str) -> String {
    if is_linkable(definition) {
        definition.to_string()
    } else {
        format!("kernel_{}", definition.trim_start_matches('_'))
    }
}

/// Whether a kernel may be exported as `symbol`: a C identifier that is none of the
/// names the C file reserves (`atl_loopir::cnames`) and that no library of this
/// process defines, which covers the whole C library and POSIX (`read`, `open`,
/// `time`, …) of the machine at hand. A kernel named `read` was called by its own
/// runner as the C library's `read(2)`, which returned -1; linked into a program, it
/// would replace that program's `read`.
pub fn is_linkable(symbol: &str) -> bool {
    is_free_identifier(symbol) && !ffi::defined_by_a_loaded_library(symbol)
}

/// Prints `kernel` as C (see the crate documentation). Fails only for a symbol that
/// is not a usable C identifier (E0931).
pub fn emit(kernel: &Kernel, options: &EmitOptions) -> Result<CCode, Diagnostic> {
    let symbol = options
        .symbol
        .clone()
        .unwrap_or_else(|| kernel.name.clone());
    if !is_linkable(&symbol) {
        let why = if is_free_identifier(&symbol) {
            format!(
                "`{symbol}` is a function of the C library (libc): a kernel exported under \
                 that name would take its place in every program it is linked into"
            )
        } else {
            format!("`{symbol}` cannot be the name of a C function")
        };
        return Err(Diagnostic::error("E0931", why).with_help(format!(
            "use `--name` with a C identifier that is not a C keyword or C library name \
             and does not start with `{RESERVED_PREFIX}` (reserved for the emitter's own \
             helpers, in any case), `omp_`, `__` or `_` and a capital letter"
        )));
    }
    let printer = cprint::CPrinter::new(kernel, options.dtype, options.fp, &symbol);
    let header = printer.header();
    let source = printer.source();
    Ok(CCode {
        symbol,
        header,
        source,
    })
}

/// The C symbol of the packed entry point of the kernel `symbol` (see
/// [`packed_wrapper`]); in the reserved namespace, so it collides with no user name.
pub(crate) fn packed_symbol(symbol: &str) -> String {
    format!("{RESERVED_PREFIX}packed_{symbol}")
}

/// The packed entry point the runner calls: `int atl__packed_SYMBOL(const int64_t
/// *sizes, const void *const *inputs, T *out)`, forwarding to the kernel (and its
/// status); each input pointer is converted to its parameter's type (`T`, or `int32_t`
/// for an index array). Appended to the source only when compiling for
/// [`Compiled::run`]; the emitted file for users has the plain ABI only.
fn packed_wrapper(kernel: &Kernel, code: &CCode, dtype: Dtype) -> String {
    let t = dtype.c_type();
    let mut args: Vec<String> = (0..kernel.sizes.len())
        .map(|k| format!("sizes[{k}]"))
        .collect();
    args.extend(kernel.inputs.iter().enumerate().map(|(k, b)| {
        let elem = if b.index_array.is_some() {
            "int32_t"
        } else {
            t
        };
        format!("(const {elem} *)inputs[{k}]")
    }));
    args.push("out".to_string());
    format!(
        "\n/* Entry point for the atl runner: the same call with packed arguments. */\n\
         int {packed}(const int64_t *sizes, const void *const *inputs, {t} *out);\n\
         int {packed}(const int64_t *sizes, const void *const *inputs, {t} *out)\n\
         {{\n  (void)sizes;\n  (void)inputs;\n  return {sym}({args});\n}}\n",
        sym = code.symbol,
        packed = packed_symbol(&code.symbol),
        args = args.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_symbols_are_always_definable() {
        assert_eq!(internal_symbol("matmul"), "matmul");
        assert_eq!(internal_symbol("_x"), "_x");
        for name in [
            "main",
            "int",
            "for",
            "atl__floordiv",
            "ATL__OMP",
            "__x",
            "malloc",
            "_X",
            "exp",
            "sqrtf",
            "omp_get_max_threads",
        ] {
            let symbol = internal_symbol(name);
            assert!(is_free_identifier(&symbol), "{name} -> {symbol}");
            assert!(!is_free_identifier(name), "{name} was refused before");
        }
    }

    #[test]
    fn functions_of_the_c_library_are_not_linkable_and_get_an_internal_symbol() {
        for name in ["read", "write", "open", "close", "getpid"] {
            assert!(
                is_free_identifier(name),
                "{name}: not a name the C file reserves"
            );
            assert!(!is_linkable(name), "{name}: the C library defines it");
            assert_eq!(internal_symbol(name), format!("kernel_{name}"));
        }
        for name in ["matmul", "spmv", "read_rows", "blur"] {
            assert!(is_linkable(name), "{name}");
        }
    }

    #[test]
    fn user_names_outside_the_reserved_prefix_are_free() {
        for name in [
            "atl_rownorm",
            "atl_",
            "atl",
            "Atl_x",
            "atl_floordiv",
            "expo",
            "omp",
        ] {
            assert!(is_free_identifier(name), "{name}");
        }
        for name in ["atl__x", "Atl__x", "ATL__H", "atl__"] {
            assert!(!is_free_identifier(name), "{name}");
        }
    }
}
