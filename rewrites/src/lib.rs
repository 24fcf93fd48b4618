//! `atl-rewrites`: scheduling by named, checked source-to-source rewrites.
//!
//! The rules themselves (the rule-file loader and the standard library of
//! `rules/library/*.rules`) live in the `atl-rules` crate, which the independent
//! certificate checker uses without this engine; they are re-exported here as [`rule`],
//! [`library`] and [`Library`], so `atl_rewrites::rule::…` paths keep working.
//!
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
pub mod matcher;
pub mod rocq;
pub mod user_rules;
pub mod well_shaped;

pub use atl_rules::Library;
pub use atl_rules::{library, rule};
pub use engine::{Derivation, Env, run_derivations, with_derived};
