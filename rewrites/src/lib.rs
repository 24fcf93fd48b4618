//! `atl-rewrites`: scheduling by named, checked source-to-source rewrites.
//!
//! - [`rule`]: rules as data (`rules/*.rules`), loaded and validated.
//! - [`matcher`]: matching under binders with structural scoping, instantiation.
//! - [`engine`]: contexts, site selection, tactics (`rw`, `rw<-`, `unfold`, `inline`,
//!   `simpl`, `simpl_guard`, `check`) and derivations.
//! - [`cert`]: the certificate each derivation produces.
//! - [`user_rules`]: `rule` items of a program file, checked before they are used.
//! - [`rocq`]: rule statements (and small programs) exported as Rocq terms.
//!
//! Library code never prints.

pub mod cert;
pub mod check;
pub mod directives;
pub mod engine;
pub mod library;
pub mod matcher;
pub mod rocq;
pub mod rule;
pub mod user_rules;
pub mod well_shaped;

pub use engine::{Derivation, Env, run_derivations, with_derived};
pub use library::Library;
