//! Reads after writes: no read of an element (of a temporary, of the output, of a
//! scalar) that nothing assigned before it in the same lifetime, and no `+=` into an
//! element that was not assigned (zeroed) first — for a scalar accumulator, assigned
//! in the same iteration of the `gen` loops around it, so that every element's sum
//! starts afresh.
//!
//! The rule is sufficient, not complete: an access `R` is initialised when some
//! assignment `W` of its buffer (an `=` store, a fill, a scalar's declaration with a
//! value) *precedes it in program order within their common block*: their statement
//! paths ([`crate::sites::Path`]) agree down to a block, where `W`'s statement comes
//! first. Then, in every iteration of the loops they share, `W`'s statement runs
//! completely before `R`'s, and the obligation is that `W` writes `R`'s element
//!
//! ```text
//! context_R && c == coords_R  =>  OR over such W: context_W(w(c)) && coords_W(w(c)) == c
//! ```
//!
//! where `W`'s own loops (those it does not share with `R`, renamed apart) are solved
//! from the element by [`crate::coverage::witness`]: the same machinery as the
//! coverage of the output, so "an earlier loop nest fills the whole temporary" and "the
//! zeroing store just before the `sum` loop" are both instances. A zeroed `alloc` needs
//! no obligation. Anything the rule does not reach is unknown, never proved.
//!
//! A refutation of that query only says the preceding assignments miss the element.
//! It becomes a refutation of the obligation when the solver then proves, at the
//! counterexample's sizes and element, that no assignment of the buffer writes it at
//! any iteration — except assignments that come after `R` in its common block with
//! it when that block runs once per lifetime (no loop between the lifetime's start and
//! the block), which can never run before `R` in the same lifetime. A scalar `+=` that
//! only misses the same-iteration rule (it is assigned once, before the loops) is
//! therefore unknown, not refuted; so is a load in a `blend` (evaluated whatever the
//! blend's condition, its value discarded where the condition is false).

use std::collections::BTreeMap;

use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_loopir::ir::{LoopOrigin, StoreOp};
use atl_solver::{Facts, Solver, Verdict};

use crate::coverage::{
    conjunction, coordinate, counterexample_element, differs, pinned_sizes, proved_to_miss,
    row_major, witness,
};
use crate::obligations::{Fill, Obligation, ObligationKind, Walk};
use crate::sites::{BindingRole, LoopRef, Path, Site, rename_index, rename_pred};
use crate::{CheckedObligation, Method};

/// How two program-order positions relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// The first's statement comes before the second's in their common block.
    Before,
    /// The first's statement comes after the second's in their common block.
    After,
    /// The same statement, or different branches of one `if`, or one nested in the
    /// other (cannot happen for two accesses).
    Unordered,
}

fn order(a: &Path, b: &Path) -> Order {
    for (x, y) in a.iter().zip(b) {
        if x == y {
            continue;
        }
        if x.0 != y.0 {
            return Order::Unordered;
        }
        return if x.1 < y.1 {
            Order::Before
        } else {
            Order::After
        };
    }
    Order::Unordered
}

/// How many loops, outermost first, two sites share (the same loop statements).
fn shared_loops(a: &[LoopRef], b: &[LoopRef]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x.id == y.id).count()
}

/// An assignment of a buffer or scalar.
enum Assignment<'a> {
    /// An `=` store, or a scalar's `=` or declaration with a value.
    Write(&'a Site),
    Fill(&'a Fill),
}

impl Assignment<'_> {
    fn path(&self) -> &Path {
        match self {
            Assignment::Write(s) => &s.path,
            Assignment::Fill(f) => &f.path,
        }
    }

    fn loops(&self) -> &[LoopRef] {
        match self {
            Assignment::Write(s) => &s.loops,
            Assignment::Fill(f) => &f.loops,
        }
    }
}

/// The name of `var` in the copy of an assignment's own loops.
fn renamed(var: &str) -> String {
    format!("{var}#w")
}

/// The reads-after-writes obligations of every load, `+=` and scalar read or `+=` of
/// a buffer that is not zeroed when its lifetime starts (see the module
/// documentation), decided.
pub fn check(walk: &Walk, solver: &Solver) -> Vec<CheckedObligation> {
    let mut assignments: BTreeMap<usize, Vec<Assignment>> = BTreeMap::new();
    for s in walk.sites.iter().chain(&walk.scalar_inits) {
        if s.op == Some(StoreOp::Assign) {
            assignments
                .entry(s.binding)
                .or_default()
                .push(Assignment::Write(s));
        }
    }
    for f in &walk.fills {
        assignments
            .entry(f.binding)
            .or_default()
            .push(Assignment::Fill(f));
    }
    let none = Vec::new();
    walk.sites
        .iter()
        .filter(|r| r.op != Some(StoreOp::Assign))
        .filter(|r| {
            let b = &walk.bindings[r.binding];
            !b.zeroed && b.role != BindingRole::Input
        })
        .map(|r| {
            let candidates = assignments.get(&r.binding).unwrap_or(&none);
            obligation(walk, r, candidates, solver)
        })
        .collect()
}

fn obligation(
    walk: &Walk,
    r: &Site,
    assignments: &[Assignment],
    solver: &Solver,
) -> CheckedObligation {
    let binding = &walk.bindings[r.binding];
    let scalar = binding.role == BindingRole::Scalar;
    let targets: Vec<IndexExpr> = (0..r.coords.len())
        .map(|d| IndexExpr::var(coordinate(d)))
        .collect();
    let mut context = r.facts.clone();
    for (c, x) in targets.iter().zip(&r.coords) {
        context.push(Pred::cmp(CmpOp::Eq, c.clone(), x.clone()));
    }
    // A scalar `+=` must be preceded in the same iteration of every loop around it
    // (inside the scalar's scope) that is not a `sum`: those are the loops whose
    // iterations compute different sums.
    // The same for a scalar `max=` and the `max` loops.
    let folding = match r.op {
        Some(StoreOp::Accumulate) => Some(LoopOrigin::Sum),
        Some(StoreOp::Max) => Some(LoopOrigin::Max),
        _ => None,
    };
    let must_share = if let Some(folding) = folding.filter(|_| scalar) {
        r.loops
            .iter()
            .enumerate()
            .skip(binding.loops.len())
            .filter(|(_, l)| l.origin != folding)
            .map(|(k, _)| k + 1)
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    let lifetime = binding.loops.len();
    let mut disjuncts = Vec::new();
    for a in assignments {
        let shared = shared_loops(a.loops(), &r.loops);
        if order(a.path(), &r.path) == Order::Before
            && shared >= must_share
            && let Some(d) = disjunct(walk, r, a, shared, shared, &targets)
        {
            disjuncts.push(d);
        }
        // Or at an earlier iteration of the loops they share inside the buffer's
        // lifetime (a sliding window's rows, written by the iterations before), in
        // whatever order their statements come: that iteration ran completely before
        // `r`'s. Not where a scalar `+=` must share those loops' iteration.
        if shared > lifetime
            && must_share <= lifetime
            && matches!(a, Assignment::Write(_))
            && let Some(d) = disjunct(walk, r, a, shared, lifetime, &targets)
        {
            disjuncts.push(d);
        }
    }
    let goal = disjuncts
        .into_iter()
        .reduce(Pred::or)
        .unwrap_or(Pred::Bool(false));
    let obligation = Obligation {
        kind: ObligationKind::Initialised {
            access: r.access.clone(),
        },
        location: r.location.clone(),
        context: Facts {
            sizes: walk.sizes.clone(),
            facts: context,
            arrays: walk.arrays.clone(),
        },
        goal,
        lemma: None,
    };
    let verdict = match solver.prove(&obligation.context, &obligation.goal) {
        Verdict::Proved => Verdict::Proved,
        Verdict::Unknown(why) => {
            Verdict::Unknown(format!("initialisation not established ({why})"))
        }
        Verdict::Refuted(cex) => {
            // A load in a blend may read what nothing wrote where its value is
            // discarded: never a refutation (unknown), since no result need be wrong.
            if !r.discarded && confirmed(walk, r, assignments, &cex, solver) {
                Verdict::Refuted(cex)
            } else {
                Verdict::Unknown(format!(
                    "initialisation not established: no assignment that precedes it in \
                     program order writes the element at {cex}, and it was not proved that \
                     no assignment writes it before"
                ))
            }
        }
    };
    CheckedObligation {
        obligation,
        verdict,
        method: Method::Solver,
    }
}

/// "`a`, at the iteration of its loops solved from the element, runs and writes it",
/// with `a`'s loops from the `from`-th (all but the `shared` outer ones it has with
/// `r`, or more) renamed apart from `r`'s; when `from < shared`, also "at an iteration
/// of the shared loops `from..shared` lexicographically before `r`'s". `None` when the
/// witness does not determine the renamed loops.
fn disjunct(
    walk: &Walk,
    r: &Site,
    a: &Assignment,
    shared: usize,
    from: usize,
    targets: &[IndexExpr],
) -> Option<Pred> {
    // A fact of `a` that mentions none of its own loops and that `r` has too is the
    // same fact of their common context: it holds, leave it out.
    let keep = |f: &Pred, own: &BTreeMap<String, String>| {
        let shared_fact = r.facts.contains(f) && own.values().all(|v| !f.mentions(v));
        !(walk.preconditions.contains(f) || shared_fact)
    };
    match a {
        Assignment::Fill(fill) => {
            if fill.loops.len() != shared || from != shared {
                return None;
            }
            let shape = &walk.bindings[fill.binding].shape;
            let mut conds: Vec<Pred> = fill
                .facts
                .iter()
                .filter(|f| keep(f, &BTreeMap::new()))
                .cloned()
                .collect();
            for (c, extent) in targets.iter().zip(shape) {
                conds.push(Pred::cmp(CmpOp::Le, IndexExpr::Const(0), c.clone()));
                conds.push(Pred::cmp(CmpOp::Lt, c.clone(), extent.clone()));
            }
            // A fill of the whole buffer covers every element in its shape: with each
            // coordinate in its extent (above), the row-major position is below the
            // product of the extents, so the fill's bound adds nothing, and as a
            // product of variables it would make the query non-linear (z3 then needs
            // seconds, and under load gave up on a k-blocked matmul).
            let whole = shape
                .iter()
                .cloned()
                .reduce(IndexExpr::mul)
                .unwrap_or(IndexExpr::Const(1));
            if !atl_lang::poly::same(&fill.len, &whole) {
                conds.push(Pred::cmp(
                    CmpOp::Lt,
                    row_major(targets, shape),
                    fill.len.clone(),
                ));
            }
            Some(conjunction(conds))
        }
        Assignment::Write(w) => {
            let own: BTreeMap<String, String> = w.loops[from..]
                .iter()
                .map(|l| (l.var.clone(), renamed(&l.var)))
                .collect();
            let copy = Site {
                coords: w.coords.iter().map(|e| rename_index(e, &own)).collect(),
                facts: w.facts.iter().map(|f| rename_pred(f, &own)).collect(),
                loops: w
                    .loops
                    .iter()
                    .map(|l| LoopRef {
                        var: own.get(&l.var).cloned().unwrap_or_else(|| l.var.clone()),
                        lo: rename_index(&l.lo, &own),
                        hi: rename_index(&l.hi, &own),
                        ..l.clone()
                    })
                    .collect(),
                ..(*w).clone()
            };
            let solve_for = &copy.loops[from..];
            let values = witness(&copy, targets, solve_for, true).closed;
            if values.len() != solve_for.len() {
                return None;
            }
            let at = |e: &IndexExpr| crate::sites::substitute(e, &values);
            // Lexicographically before: built from the innermost shared loop out.
            let mut earlier = Pred::Bool(false);
            for k in (from..shared).rev() {
                let mine = at(&IndexExpr::var(copy.loops[k].var.clone()));
                let theirs = IndexExpr::var(r.loops[k].var.clone());
                let less = Pred::cmp(CmpOp::Lt, mine.clone(), theirs.clone());
                earlier = match earlier {
                    Pred::Bool(false) => less,
                    e => Pred::or(less, Pred::and(Pred::cmp(CmpOp::Eq, mine, theirs), e)),
                };
            }
            let mut conds: Vec<Pred> = copy
                .facts
                .iter()
                .filter(|f| keep(f, &own))
                .map(|f| crate::sites::substitute_pred(f, &values))
                .collect();
            for (coord, c) in copy.coords.iter().zip(targets) {
                conds.push(Pred::cmp(CmpOp::Eq, at(coord), c.clone()));
            }
            if from < shared {
                conds.push(earlier);
            }
            Some(conjunction(conds))
        }
    }
}

/// Whether, at the counterexample's sizes and element, no assignment that may run
/// before `r` in the same lifetime writes the element (see the module
/// documentation).
fn confirmed(
    walk: &Walk,
    r: &Site,
    assignments: &[Assignment],
    cex: &atl_solver::Counterexample,
    solver: &Solver,
) -> bool {
    let binding = &walk.bindings[r.binding];
    let pinned = pinned_sizes(walk, cex);
    let Some(values) = counterexample_element(cex, r.coords.len()) else {
        return false;
    };
    assignments.iter().all(|a| {
        let once_per_lifetime = shared_loops(a.loops(), &r.loops) == binding.loops.len();
        if order(a.path(), &r.path) == Order::After && once_per_lifetime {
            return true;
        }
        let (facts, misses) = match a {
            Assignment::Write(w) => (&w.facts, differs(&w.coords, &values)),
            Assignment::Fill(f) => (
                &f.facts,
                Pred::cmp(CmpOp::Ge, row_major(&values, &binding.shape), f.len.clone()),
            ),
        };
        proved_to_miss(walk, facts, &pinned, &misses, solver)
    })
}
