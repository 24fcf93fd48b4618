//! `atl-loopir`: the loop IR that lowering produces, the C emitter prints and the
//! translation validator checks (DESIGN §6) — its data types ([`ir`]), its textual
//! form ([`mod@print`], read back by [`parse`]), its checking interpreter ([`interp`])
//! and the names C reserves, which no name of a kernel may be ([`cnames`]).
//!
//! It is a crate of its own, depending only on `atl-lang`, so that code which must be
//! independent of the lowering passes (the validator, `atl-validate`) can read
//! kernels without linking `atl-lower`. `atl-lower` re-exports the three modules
//! under their former paths.
//!
//! Library code never prints.

pub mod cnames;
pub mod int64;
pub mod interp;
pub mod ir;
pub mod parse;
pub mod print;

pub use interp::{CallShapes, check_call, run_kernel};
pub use ir::Kernel;
pub use parse::parse_kernel;
pub use print::{kernel_to_string, kernel_to_text};
