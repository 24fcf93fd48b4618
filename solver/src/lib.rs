//! `atl-solver`: the one place that answers questions about index arithmetic.
//!
//! - [`Solver::prove`] decides `facts => goal` over the integers as [`Verdict::Proved`],
//!   [`Verdict::Refuted`] (with a counterexample checked by evaluation) or
//!   [`Verdict::Unknown`]. A cache and a linear/interval fast path answer the common
//!   side conditions of a derivation in microseconds; z3 decides the rest, with floor
//!   division encoded exactly (DESIGN §3.2) and deterministic resource limits (plus
//!   wall-clock backstops where z3 ignores them; see `smt.rs`).
//! - [`simplify_index`] and [`simplify_pred`] clean up index expressions and guards with
//!   rewrite rules that are data (`rules/index.rules`), each proved by z3 and oriented
//!   by a documented reduction order, so simplification always terminates.
//!
//! Library code never prints.

pub mod arrays;
mod fast;
mod query;
pub mod rules;
mod simplify;
mod smt;
mod solver;
pub mod syntax;
pub mod watchdog;

pub use arrays::IndexArrayFacts;
pub use query::{Counterexample, Facts, Verdict};
pub use rules::{Rule, RuleSet};
pub use simplify::{simplify_index, simplify_index_with, simplify_pred, simplify_pred_with};
pub use solver::{DEFAULT_RLIMIT, Solver, SolverConfig, SolverStats};
