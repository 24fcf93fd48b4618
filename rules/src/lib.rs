//! `atl-rules`: rules as data — the rule-file loader and the standard rule library.
//!
//! - [`rule`]: a `*.rules` file loaded into checked [`rule::Rule`]s (patterns as core IR
//!   with metavariables, side conditions, grade, examples), and the helpers both users
//!   of a rule need (`metas_of`, `as_pred_meta`, `SubstValue`).
//! - [`library`]: a [`Library`] of rules by name; [`Library::standard`] loads the rule
//!   files of `library/*.rules`, embedded at build time.
//!
//! This crate is the part of rewriting that the rewrite engine (`atl-rewrites`) and the
//! independent certificate checker (`atl-proofs`) share, and nothing more: no matcher,
//! no tactics, no certificates. The checker depends on it and not on the engine, which
//! `cli/tests/crate_graph.rs` checks in the crate graph. It depends only on the
//! front end (`atl-lang`). Library code never prints.

pub mod library;
pub mod rule;

pub use library::Library;
