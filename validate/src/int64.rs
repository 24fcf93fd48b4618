//! (j) 64-bit arithmetic: every `int64_t` expression the C evaluates — entry checks,
//! loop bounds, conditions (`if`, `select`, `blend`), lengths, the flat index of every
//! load and store (also the loads a `blend` evaluates whatever its condition), the
//! iteration count of `collapse`d loops — and each of its intermediate results lies
//! within `int64_t`, wherever the C evaluates it. Without this, the other obligations,
//! proved over unbounded integers, would say nothing of a kernel whose index
//! arithmetic wraps (signed overflow is undefined behaviour in C).
//!
//! One obligation per evaluated expression: the conjunction, over its intermediate
//! results (every node but a constant or a name: constants are `int64_t` literals,
//! sizes `int64_t` parameters, loop variables between bounds that fit), of
//! `INT64_MIN <= node <= INT64_MAX`, under the expression's context (the kernel's
//! entry checks already passed, the enclosing loops, conditions and short-circuits)
//! and the ABI's facts (the caller's input and output arrays exist, so each one's
//! element count is at most `atl_loopir::int64::ABI_ELEMENTS`).
//!
//! Decided first by the interval and magnitude analysis of `atl_loopir::int64`
//! ([`Method::Magnitude`], computed during the walk where the analysis knows the
//! enclosing loops and allocations), then by the solver. The analysis reads the
//! target's own operators (C's truncating `/` and `%` included); the solver reads the
//! translation (`crate::translate`), which is faithful wherever the natural-division
//! side conditions hold — themselves obligations, so a validated kernel satisfies
//! both. The lowering's overflow pass only proposes entry bounds; nothing it claims
//! is used here.

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_loopir::int64::ABI_ELEMENTS;
use atl_solver::{Facts, Solver, Verdict};

use crate::obligations::{Obligation, ObligationKind, Walk};
use crate::sites::BindingRole;
use crate::{CheckedObligation, Method, discharge};

/// An `int64_t` expression the C evaluates, recorded by the walk.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// What it is (`index of load #3 …`, `loop bound`, `precondition`…).
    pub what: String,
    /// The expression, in the solver's names.
    pub expr: IndexExpr,
    /// Its context: what holds wherever the C evaluates it.
    pub facts: Vec<Pred>,
    pub location: String,
    /// The analysis of `atl_loopir::int64` showed that it fits.
    pub by_magnitude: bool,
}

/// The intermediate results of `e` (every node but a constant or a name), each once,
/// innermost first.
fn intermediates(e: &IndexExpr, out: &mut Vec<IndexExpr>) {
    match e {
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => return,
        IndexExpr::Neg(a) | IndexExpr::Load(_, a) => intermediates(a, out),
        IndexExpr::Bin(_, a, b) => {
            intermediates(a, out);
            intermediates(b, out);
        }
    }
    if !out.contains(e) {
        out.push(e.clone());
    }
}

/// `INT64_MIN <= e <= INT64_MAX`.
fn fits(e: &IndexExpr) -> Pred {
    Pred::and(
        Pred::cmp(CmpOp::Le, IndexExpr::Const(i64::MIN), e.clone()),
        Pred::cmp(CmpOp::Le, e.clone(), IndexExpr::Const(i64::MAX)),
    )
}

/// The ABI's facts: the element count of every input and of the output whose
/// extents are sizes or positive constants is at most [`ABI_ELEMENTS`].
fn abi_facts(walk: &Walk) -> Vec<Pred> {
    walk.bindings
        .iter()
        .filter(|b| matches!(b.role, BindingRole::Input | BindingRole::Output))
        .filter(|b| {
            b.shape.iter().all(|d| match d {
                IndexExpr::Var(s) => walk.sizes.contains(s),
                IndexExpr::Const(c) => *c >= 1,
                _ => false,
            })
        })
        .filter(|b| !b.shape.is_empty())
        .map(|b| {
            let count = b
                .shape
                .iter()
                .cloned()
                .reduce(|a, d| IndexExpr::bin(IndexOp::Mul, a, d))
                .unwrap_or(IndexExpr::Const(1));
            Pred::cmp(
                CmpOp::Le,
                count,
                IndexExpr::Const(i64::try_from(ABI_ELEMENTS).unwrap_or(i64::MAX)),
            )
        })
        .collect()
}

/// The "fits in `int64_t`" obligation of every evaluated expression that computes
/// something, decided.
pub fn check(walk: &Walk, solver: &Solver) -> Vec<CheckedObligation> {
    let abi = abi_facts(walk);
    walk.evaluations
        .iter()
        .filter_map(|ev| {
            let mut nodes = Vec::new();
            intermediates(&ev.expr, &mut nodes);
            let goal = nodes.iter().map(fits).reduce(Pred::and)?;
            let mut facts = ev.facts.clone();
            facts.extend(abi.iter().cloned());
            let obligation = Obligation {
                kind: ObligationKind::Int64 {
                    what: ev.what.clone(),
                    expr: ev.expr.to_string(),
                },
                location: ev.location.clone(),
                context: Facts {
                    sizes: walk.sizes.clone(),
                    facts,
                    arrays: walk.safety_arrays.clone(),
                },
                goal,
                lemma: None,
            };
            if ev.by_magnitude {
                return Some(CheckedObligation {
                    obligation,
                    verdict: Verdict::Proved,
                    method: Method::Magnitude,
                });
            }
            // One query per intermediate result, innermost first: the first refuted
            // one is where the C overflows (its operands fit), and one hard node
            // (a product of variables) leaves the others decided.
            let mut unknown = None;
            for node in &nodes {
                let single = Obligation {
                    goal: fits(node),
                    ..obligation.clone()
                };
                let checked = discharge(single, solver);
                match checked.verdict {
                    Verdict::Proved => {}
                    Verdict::Refuted(_) => return Some(checked),
                    Verdict::Unknown(_) => {
                        unknown.get_or_insert(checked);
                    }
                }
            }
            Some(unknown.unwrap_or(CheckedObligation {
                obligation,
                verdict: Verdict::Proved,
                method: Method::Solver,
            }))
        })
        .collect()
}
