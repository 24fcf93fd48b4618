//! `atl-driver`: the ATL pipeline as functions over data. Every front end calls it —
//! the `atl` commands, the REPL, `atl-build` and the Python emitter — so there is one
//! way from a file to a kernel:
//!
//! 1. [`load`]: read the file, the front end (parse, resolve, shapes), the declarations'
//!    soundness, the rule library with the file's user rules, the derivations replayed
//!    and each re-checked by the independent certificate checker (`atl-proofs`);
//!    [`inputs`]: sizes and inputs for evaluating or running a definition.
//! 2. [`lowering`]: the pad-type and safety gate, lowering to the loop IR, translation
//!    validation of the kernel against its definition.
//! 3. [`emit`]: the C source and header; [`timing`]: compiling, checking against the
//!    interpreter and timing kernels (what `atl bench` measures); [`compare`]: a
//!    kernel's output against the interpreter's.
//!
//! Each stage returns its data or a [`Failure`] (diagnostics with their source, and the
//! exit status a command gives). While it works the pipeline talks to an [`Observer`]:
//! warnings as they arise, reports asked for, and a [`Monitor`] whose cancellation flag
//! the long stages check (evaluation, validation, compiling, timing stop promptly with
//! [`Failure::interrupted`]) and whose progress counter a display may poll. This crate
//! prints nothing.

pub mod compare;
pub mod emit;
pub mod failure;
pub mod inputs;
pub mod load;
pub mod lowering;
pub mod npy;
pub mod observer;
pub mod sparse_file;
pub mod sparse_input;
pub mod timing;

pub use atl_lang::monitor::Monitor;
pub use failure::{EXIT_ARGS, EXIT_INTERRUPTED, EXIT_OK, EXIT_USER, Failure, Located, Report};
pub use observer::{Collect, Observer};
