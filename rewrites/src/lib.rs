//! `atl-rewrites`: scheduling by named, checked source-to-source rewrites.
//!
//! The rules themselves (the rule-file loader and the standard library of
//! `rules/library/*.rules`) live in the `atl-rules` crate, which the independent
//! certificate checker uses without this engine; they are re-exported here as [`rule`],
//! [`library`] and [`Library`], so `atl_rewrites::rule::…` paths keep working.
//!
//! - [`matcher`]: matching under binders with structural scoping, instantiation.
//! - [`context`]: contexts, sites and paths; the [`Env`] every step runs in.
//! - [`rewrite`]: one rule application (`rw`, `rw<-`): searching, matching, conditions,
//!   applying.
//! - [`tactics`] (`unfold`, `inline`, `simpl`, `simpl_guard`, `check`) and [`window`].
//! - [`step`]: one primitive step, run and checked (size, shape discipline, shape).
//! - [`directives`]: scheduling directives, expanded into primitive steps.
//! - [`derivation`]: the driver running `derive` blocks, above steps and directives.
//! - [`engine`]: the facade re-exporting these under their former paths.
//! - [`record`]: the record of each step.
//! - [`cert`]: the certificate each derivation produces.
//! - [`user_rules`]: `rule` items of a program file, checked before they are used.
//! - [`rocq`]: rule statements (and small programs) exported as Rocq terms.
//!
//! Library code never prints.

pub mod cert;
pub mod check;
pub mod context;
pub mod derivation;
pub mod directives;
pub mod engine;
pub mod loops;
pub mod matcher;
pub mod record;
pub mod rewrite;
pub mod rocq;
pub mod step;
pub mod tactics;
pub mod user_rules;
pub mod well_shaped;
pub mod window;

pub use atl_rules::Library;
pub use atl_rules::{library, rule};
pub use context::Env;
pub use derivation::{Derivation, run_derivations, with_derived};
