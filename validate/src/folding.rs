//! Folded buffers (`alloc … fold F`, Halide's storage folding): rows `F` apart share
//! memory, so a row may be overwritten by another. The value check
//! ([`crate::values`]) reads the buffer by its coordinates, as if unfolded; this
//! module proves that folding changes nothing it reads. For every lifetime of a folded
//! buffer:
//!
//! 1. every write that runs before a read (or a `+=`) is of a row below the read's
//!    row plus `F`: `Wrote(v') ∧ before(W, R) ⇒ v' < v + F`;
//! 2. of two writes, the later one's row is above the earlier one's minus `F`:
//!    `before(W1, W2) ⇒ v2 > v1 - F`.
//!
//! Then the memory of row `v` at a read holds what the last write of row `v` before it
//! wrote: a write of another row `v' ≡ v (mod F)` between the two would be of a row
//! `v' ≤ v - F` by (1), run after a write of row `v`, against (2). The buffer must not
//! be zeroed or filled (a row nothing wrote would read zero unfolded and another row's
//! value folded). Sound, not complete: a kernel that reuses rows in another order is
//! not validated.

use std::collections::{BTreeMap, BTreeSet};

use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_solver::Facts;

use crate::obligations::{Obligation, ObligationKind, Walk};
use crate::sites::{Position, Site, copy_names, rename_index, rename_pred, runs_before};

/// The obligations of every folded buffer of the kernel.
pub fn obligations(walk: &Walk) -> Vec<Obligation> {
    let mut out = Vec::new();
    for (b, binding) in walk.bindings.iter().enumerate() {
        let Some(fold) = binding.fold else { continue };
        let sites: Vec<&Site> = walk.sites.iter().filter(|s| s.binding == b).collect();
        let filled = walk.fills.iter().any(|f| f.binding == b);
        if binding.zeroed || filled {
            out.push(Obligation {
                kind: ObligationKind::WellFormed {
                    problem: format!(
                        "the folded buffer `{}` is {}",
                        binding.name,
                        if filled { "filled" } else { "zeroed" }
                    ),
                },
                location: String::new(),
                context: Facts {
                    sizes: walk.sizes.clone(),
                    facts: walk.preconditions.clone(),
                    arrays: walk.safety_arrays.clone(),
                },
                goal: Pred::Bool(false),
                lemma: None,
            });
            continue;
        }
        let outside: BTreeSet<usize> = binding.loops.iter().map(|l| l.id).collect();
        let writes: Vec<&Site> = sites.iter().copied().filter(|s| s.is_write()).collect();
        // Reads: loads, and the stores that read the element they update.
        let reads: Vec<&Site> = sites
            .iter()
            .copied()
            .filter(|s| !s.is_write() || s.op != Some(atl_loopir::ir::StoreOp::Assign))
            .collect();
        for r in &reads {
            for w in &writes {
                out.push(pair(walk, &outside, fold, w, r, Rule::BeforeRead));
            }
        }
        for w1 in &writes {
            for w2 in &writes {
                out.push(pair(walk, &outside, fold, w1, w2, Rule::LaterWrite));
            }
        }
    }
    out
}

#[derive(Clone, Copy)]
enum Rule {
    /// (1): `first` writes before `second` reads.
    BeforeRead,
    /// (2): `first` writes before `second` writes.
    LaterWrite,
}

/// The obligation for `first` (a write) running before `second`, each at its own
/// iteration of the loops inside the buffer's lifetime (`#1`, `#2`).
fn pair(
    walk: &Walk,
    outside: &BTreeSet<usize>,
    fold: i64,
    first: &Site,
    second: &Site,
    rule: Rule,
) -> Obligation {
    let own = |s: &Site, copy: usize| -> BTreeMap<String, String> {
        let inside: Vec<_> = s
            .loops
            .iter()
            .filter(|l| !outside.contains(&l.id))
            .cloned()
            .collect();
        copy_names(&inside, copy)
    };
    let (m1, m2) = (own(first, 1), own(second, 2));
    let as_subst = |m: &BTreeMap<String, String>| -> BTreeMap<String, IndexExpr> {
        m.iter()
            .map(|(k, v)| (k.clone(), IndexExpr::var(v.clone())))
            .collect()
    };
    let (s1, s2) = (as_subst(&m1), as_subst(&m2));
    let mut facts: Vec<Pred> = Vec::new();
    for f in &first.facts {
        crate::sites::push_fact(&mut facts, rename_pred(f, &m1));
    }
    for f in &second.facts {
        crate::sites::push_fact(&mut facts, rename_pred(f, &m2));
    }
    facts.push(runs_before(
        &Position {
            path: &first.path,
            loops: &first.loops,
            subst: &s1,
        },
        &Position {
            path: &second.path,
            loops: &second.loops,
            subst: &s2,
        },
        outside,
    ));
    let row = |s: &Site, m: &BTreeMap<String, String>| {
        s.coords
            .first()
            .map(|c| rename_index(c, m))
            .unwrap_or(IndexExpr::Const(0))
    };
    let (v1, v2) = (row(first, &m1), row(second, &m2));
    let f = IndexExpr::Const(fold);
    let goal = match rule {
        Rule::BeforeRead => Pred::cmp(CmpOp::Lt, v1, IndexExpr::add(v2, f)),
        Rule::LaterWrite => Pred::cmp(CmpOp::Gt, v2, IndexExpr::sub(v1, f)),
    };
    let location = if first.location == second.location {
        first.location.clone()
    } else {
        format!("{} | {}", first.location, second.location)
    };
    Obligation {
        kind: ObligationKind::Folding {
            first: first.access.clone(),
            second: second.access.clone(),
            reads: matches!(rule, Rule::BeforeRead),
        },
        location,
        context: Facts {
            sizes: walk.sizes.clone(),
            facts,
            arrays: walk.safety_arrays.clone(),
        },
        goal,
        lemma: None,
    }
}
