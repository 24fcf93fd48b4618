//! The rewrite engine's public face, kept for the paths other crates use
//! (`atl_rewrites::engine::…`). The engine itself lives in modules of its own, layered
//! without a cycle (each uses only the ones listed before it):
//!
//! - [`crate::context`]: contexts, sites, paths, [`Env`], [`StepOutcome`];
//! - [`crate::rewrite`]: one rule application (search, matching, conditions, apply);
//! - [`crate::tactics`]: `unfold`, `inline`, `simpl`, `simpl_guard`, `check`;
//! - [`crate::window`]: the `window` tactic;
//! - [`crate::step`]: one primitive step, run and checked;
//! - [`crate::directives`]: scheduling directives, expanded into primitive steps;
//! - [`crate::derivation`]: the derivation driver, above the steps and the directives.

pub use crate::context::{
    Context, Env, MAX_TERM_SIZE, Site, StepOutcome, context_at, node_at, replace_at, sites,
    term_size,
};
pub use crate::derivation::{Derivation, run_derivations, run_step_expanded, with_derived};
pub use crate::rewrite::{Direction, RewriteRequest, SiteReport, list_sites, rewrite};
pub use crate::step::run_step;
pub use crate::tactics::{check, inline, simpl, simpl_guard, unfold};
pub use crate::window::window;
