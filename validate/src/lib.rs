//! `atl-validate`: translation validation of loop-IR kernels (issue 19, DESIGN §6) —
//! proving, per kernel and for every size its preconditions allow, that the code we
//! emit does what the ATL program says, instead of trusting the lowering that built it.
//!
//! Independence: this crate depends on `atl-lang`, `atl-solver` and the loop IR's data
//! types (`atl-loopir`) only — never on `atl-lower`'s lowering, normalization,
//! annotation or placement passes, so that it cannot share their mistakes. Its own
//! translation of the target's index language ([`translate`]) is written here for the
//! same reason. `cli/tests/crate_graph.rs` checks the crate graph.
//!
//! What this increment checks ([`obligations`]), each obligation proved by the solver
//! for all sizes (`atl_solver::Solver::prove`; "unknown" is never "proved"):
//!
//! - (a) bounds: every coordinate of every load and store is in `[0, extent)` of the
//!   buffer's declared shape, under its context (preconditions, enclosing loop ranges,
//!   `if` and `select` conditions);
//! - (b) flattening: the flat index of every access is the row-major position of its
//!   coordinates in the declared shape;
//! - and what makes those meaningful: the extents an access records are the declared
//!   ones, every C `/` and `%` has a numerator `>= 0` and a divisor `>= 1` (so it is the
//!   floor operation it is reasoned about as), every `alloc` has the length of its
//!   shape, every fill stays in its buffer, every name is bound, every access names a
//!   buffer in scope with one coordinate per dimension, no store writes an input.
//!
//! - (c) no race ([`interference::races`]): two iterations of a `parallel` or `vector`
//!   loop never write the same element of memory they share (the output, a buffer or
//!   scalar allocated outside the loop, a buffer hoisted around it that is not per
//!   thread), nor does one read what another writes;
//! - (d) no double write ([`interference::double_writes`]): two executions of
//!   assignment stores never write one element within one lifetime of the buffer;
//! - (e) coverage of the output ([`coverage`]): every element is written by an
//!   assignment store or a fill, proved with witnesses solved from the coordinates
//!   (unknown, never refuted, when the witnesses do not reach an element that may be
//!   written otherwise).
//! - (f) reads after writes ([`reads`]): every read of a temporary, of the output or
//!   of a scalar, and every `+=` into one, follows an assignment (`=`, a fill, a
//!   scalar's declaration with a value; for a scalar `+=`, in the same iteration of
//!   the non-`sum` loops around it) of the element it touches, earlier in program
//!   order within the same lifetime; zeroed `alloc`s need nothing. Proved by a
//!   sufficient rule with coverage's witnesses (an assignment that precedes the access
//!   in their common block writes its element), unknown where the rule does not
//!   reach, refuted only when no assignment that may run before it writes the element.
//!
//! What it does **not** check yet: that the values stored are the source's (each sum
//! accumulating its terms exactly once), and that temporaries hold what the source's
//! `let`s say when read. So a kernel whose
//! obligations all hold is
//! [`KernelVerdict::NotValidated`] with the reason [`NOT_CHECKED_YET`] — never
//! [`KernelVerdict::Validated`], which no function of this increment returns. A
//! refuted obligation rejects the kernel ([`KernelVerdict::Rejected`]) with the
//! solver's counterexample (sizes and loop variables), which the solver has checked by
//! evaluation and which satisfies the obligation's context, i.e. is a point the
//! kernel reaches.
//!
//! Assumptions of this increment: integers are unbounded (the kernel's `int64_t`
//! arithmetic is trusted not to overflow under its preconditions; the lowering's
//! index-range preconditions are meant for that, and are not validated here).
//!
//! Library code never prints.

pub mod coverage;
pub mod interference;
pub mod obligations;
pub mod reads;
pub mod sites;
pub mod translate;

use std::fmt;
use std::time::{Duration, Instant};

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_loopir::ir::Kernel;
use atl_solver::{Counterexample, Solver, Verdict};

pub use obligations::{Access, AccessKind, Lemma, Obligation, ObligationKind, Walk, collect, walk};

/// The reason every kernel is, at best, not validated by this increment.
pub const NOT_CHECKED_YET: &str = "values (each stored value is the source's, each sum accumulates its terms exactly once) and temporaries (they hold what the source's `let`s say when read) are not checked yet";

/// How an obligation was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Both sides of an equality have the same polynomial normal form.
    Identity,
    /// `Solver::prove` (its fast path, then z3).
    Solver,
    /// The obligation's [`Lemma`], proved by `Solver::prove`.
    Lemma,
}

/// An obligation with its verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedObligation {
    pub obligation: Obligation,
    pub verdict: Verdict,
    pub method: Method,
}

/// A refuted obligation and the assignment that refutes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Refutation {
    pub obligation: Obligation,
    pub counterexample: Counterexample,
}

/// The verdict on a kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelVerdict {
    /// Every obligation of full translation validation holds. Not returned by this
    /// increment (see the crate documentation).
    Validated,
    /// Some obligation is false at a reachable point: the kernel is wrong.
    Rejected { refuted: Vec<Refutation> },
    /// Nothing was refuted, but something was not proved: the obligations the solver
    /// could not decide, and what is not checked at all.
    NotValidated { reasons: Vec<String> },
}

/// Everything the validator found on one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub kernel: String,
    pub obligations: Vec<CheckedObligation>,
    pub verdict: KernelVerdict,
    pub elapsed: Duration,
}

impl Report {
    /// How many obligations were proved, refuted and left unknown.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut counts = (0, 0, 0);
        for c in &self.obligations {
            match c.verdict {
                Verdict::Proved => counts.0 += 1,
                Verdict::Refuted(_) => counts.1 += 1,
                Verdict::Unknown(_) => counts.2 += 1,
            }
        }
        counts
    }

    pub fn is_rejected(&self) -> bool {
        matches!(self.verdict, KernelVerdict::Rejected { .. })
    }
}

/// `e` with every `a % b` written `a - b * (a / b)`: an identity for all integers
/// under ATL's floor conventions (also for `b = 0`: `a % 0 = a`, `a / 0 = 0`), which
/// lets polynomial normal forms see that `(a / b) * b + a % b` is `a`.
fn without_modulo(e: &IndexExpr) -> IndexExpr {
    match e {
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(without_modulo(a))),
        IndexExpr::Bin(IndexOp::Mod, a, b) => {
            let (a, b) = (without_modulo(a), without_modulo(b));
            IndexExpr::sub(
                a.clone(),
                IndexExpr::mul(b.clone(), IndexExpr::bin(IndexOp::Div, a, b)),
            )
        }
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, without_modulo(a), without_modulo(b)),
    }
}

/// Whether `a == b` for all integers, by polynomial normal forms (after
/// [`without_modulo`]).
fn identical(a: &IndexExpr, b: &IndexExpr) -> bool {
    atl_lang::poly::same(a, b) || atl_lang::poly::same(&without_modulo(a), &without_modulo(b))
}

/// Decides one obligation: an equality whose sides are the same polynomial (modulo
/// `a % b = a - b * (a / b)`) is proved on the spot, anything else goes to the solver.
pub fn discharge(obligation: Obligation, solver: &Solver) -> CheckedObligation {
    if let Pred::Cmp(CmpOp::Eq, a, b) = &obligation.goal
        && identical(a, b)
    {
        return CheckedObligation {
            obligation,
            verdict: Verdict::Proved,
            method: Method::Identity,
        };
    }
    if let Some(lemma) = &obligation.lemma
        && !solver.prove_fast(&obligation.context, &obligation.goal)
        && solver.prove(&lemma.context, &lemma.goal).is_proved()
    {
        return CheckedObligation {
            obligation,
            verdict: Verdict::Proved,
            method: Method::Lemma,
        };
    }
    let verdict = solver.prove(&obligation.context, &obligation.goal);
    CheckedObligation {
        obligation,
        verdict,
        method: Method::Solver,
    }
}

/// Collects and decides every obligation of `kernel` ([`collect`], [`discharge`]).
pub fn validate(kernel: &Kernel, solver: &Solver) -> Report {
    let start = Instant::now();
    let walked = walk(kernel);
    let mut checked: Vec<CheckedObligation> = walked
        .obligations
        .iter()
        .cloned()
        .chain(interference::races(&walked))
        .chain(interference::double_writes(&walked))
        .map(|o| discharge(o, solver))
        .collect();
    checked.push(coverage::check(&walked, solver));
    checked.extend(reads::check(&walked, solver));
    let refuted: Vec<Refutation> = checked
        .iter()
        .filter_map(|c| match &c.verdict {
            Verdict::Refuted(cex) => Some(Refutation {
                obligation: c.obligation.clone(),
                counterexample: cex.clone(),
            }),
            _ => None,
        })
        .collect();
    let verdict = if !refuted.is_empty() {
        KernelVerdict::Rejected { refuted }
    } else {
        let mut reasons: Vec<String> = checked
            .iter()
            .filter_map(|c| match &c.verdict {
                Verdict::Unknown(why) => Some(format!("not decided: {} ({why})", c.obligation)),
                _ => None,
            })
            .collect();
        reasons.push(NOT_CHECKED_YET.to_string());
        KernelVerdict::NotValidated { reasons }
    };
    Report {
        kernel: kernel.name.clone(),
        obligations: checked,
        verdict,
        elapsed: start.elapsed(),
    }
}

impl fmt::Display for KernelVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelVerdict::Validated => write!(f, "validated"),
            KernelVerdict::Rejected { refuted } => {
                write!(f, "rejected")?;
                for r in refuted {
                    write!(
                        f,
                        "\n  {}\n    counterexample: {}",
                        r.obligation, r.counterexample
                    )?;
                }
                Ok(())
            }
            KernelVerdict::NotValidated { reasons } => {
                write!(f, "not validated")?;
                for r in reasons {
                    write!(f, "\n  {r}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (proved, refuted, unknown) = self.counts();
        writeln!(
            f,
            "kernel {}: {} obligations, {proved} proved, {refuted} refuted, {unknown} unknown",
            self.kernel,
            self.obligations.len()
        )?;
        for c in &self.obligations {
            writeln!(f, "  {:<8} {}", c.verdict.to_string(), c.obligation)?;
        }
        write!(f, "verdict: {}", self.verdict)
    }
}
