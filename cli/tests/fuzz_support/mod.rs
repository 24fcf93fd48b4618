//! Support code of the soundness fuzzer (`cli/tests/soundness_fuzz.rs`, described in
//! `docs/fuzzing.md`): the random generator, programs, derivation steps, and the judges
//! that compare what the engine or the checker accepts with the interpreter.

pub mod kernel;
pub mod oracle;
pub mod program;
pub mod rng;
pub mod steps;
