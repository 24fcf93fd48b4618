//! Obligations about two executions of memory operations: no race between the
//! iterations of a `parallel` or `vector` loop, and no element written twice by
//! assignment stores.
//!
//! Both put two sites in one query. Each gets its own copy of the loop variables the
//! two executions do not share (suffixed `#1` and `#2`, see
//! [`crate::sites::copy_names`]); the variables they do share (the loops around the
//! parallel loop, the loops around a temporary's `alloc`) keep their names, so both
//! executions see the same values for them. The goal is always "the coordinates
//! differ", a disjunction of `!=` per dimension: with the bounds and flattening
//! obligations proved, different in-bounds coordinates are different flat indices,
//! so proving it proves the two operations touch different memory. A scalar is a
//! buffer of rank 0: the goal is `false`, proved only when the two executions cannot
//! both happen.

use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_loopir::ir::{Storage, StoreOp};
use atl_solver::Facts;

use crate::coverage::{coordinate, witness};
use crate::obligations::{Lemma, Obligation, ObligationKind, Walk};
use crate::sites::{
    Binding, BindingRole, LoopRef, Site, copy_names, push_fact, rename_index, rename_pred,
};

/// `xs != ys` in some dimension (`false` for rank 0).
fn coordinates_differ(xs: &[IndexExpr], ys: &[IndexExpr]) -> Pred {
    xs.iter()
        .zip(ys)
        .map(|(x, y)| Pred::cmp(CmpOp::Ne, x.clone(), y.clone()))
        .reduce(Pred::or)
        .unwrap_or(Pred::Bool(false))
}

fn location(a: &Site, b: &Site) -> String {
    if a.location == b.location {
        a.location.clone()
    } else {
        format!("{} | {}", a.location, b.location)
    }
}

/// The facts of `a` with its variables renamed by `ma`, then those of `b` renamed by
/// `mb`, without repeating the shared ones.
fn two_contexts(
    a: &Site,
    ma: &std::collections::BTreeMap<String, String>,
    b: &Site,
    mb: &std::collections::BTreeMap<String, String>,
) -> Vec<Pred> {
    let mut facts = Vec::new();
    for f in &a.facts {
        push_fact(&mut facts, rename_pred(f, ma));
    }
    for f in &b.facts {
        push_fact(&mut facts, rename_pred(f, mb));
    }
    facts
}

fn renamed(
    coords: &[IndexExpr],
    map: &std::collections::BTreeMap<String, String>,
) -> Vec<IndexExpr> {
    coords.iter().map(|c| rename_index(c, map)).collect()
}

/// Whether the memory of `binding` is the same for every iteration of the loop `l`
/// (at depth `depth` in the loop nests of the sites inside it): the output, anything
/// allocated or declared outside `l`, and a buffer allocated inside `l` but hoisted
/// (reused) around `l` or an enclosing loop — unless hoisted per thread around `l`
/// itself, and `l` is a parallel loop whose iterations are not also SIMD lanes of one
/// thread, or around the collapsed parallel loop `l` is the inner loop of.
fn shared_by_iterations(binding: &Binding, l: &LoopRef) -> bool {
    let storage = match &binding.role {
        BindingRole::Input | BindingRole::Output => return true,
        BindingRole::Scalar => None,
        BindingRole::Temporary(storage) => Some(storage),
    };
    let Some(at) = binding.loops.iter().position(|x| x.id == l.id) else {
        // Allocated (or declared) outside the loop.
        return true;
    };
    match storage {
        Some(Storage::Hoisted {
            loop_var,
            per_thread,
        }) => match binding
            .loops
            .iter()
            .rposition(|x| &x.kernel_var == loop_var)
        {
            // Hoisted around a loop inside `l`: one buffer per iteration of `l`.
            Some(x) if x > at => false,
            Some(x) if x == at => !(*per_thread && l.parallel && !l.vector),
            // Per thread around the collapsed parallel loop just around `l`: the threads
            // of that loop's region share out the iterations of both, each with its
            // own buffer.
            Some(x) if x + 1 == at && l.collapsed_inner => !*per_thread || l.vector,
            // Around an enclosing loop, or around a loop that does not enclose the
            // alloc (ill-formed): assume the worst, shared.
            _ => true,
        },
        _ => false,
    }
}

/// The lemma "the coordinates of `site` determine the loop variables `vars`": with
/// `w` the witness solved for the loops `private` (those the two copies do not share),
/// `w_x(coords) == x` for every `x` of `vars`, under one copy of the site's context.
/// Two executions of the site at the same coordinates (and the same shared loop
/// variables, which `w` may mention) then agree on every variable of `vars`. `None`
/// when some variable of `vars` has no witness.
fn determined(site: &Site, private: &[LoopRef], vars: &[String], walk: &Walk) -> Option<Lemma> {
    let targets: Vec<IndexExpr> = (0..site.coords.len())
        .map(|d| IndexExpr::var(coordinate(d)))
        .collect();
    let w = witness(site, &targets, private, false).triangular;
    // The needed variables and those their witnesses mention, in solving order; each
    // witness may mention only variables solved before it.
    let mut needed: Vec<String> = vars.to_vec();
    let mut goals = Vec::new();
    for (k, (x, e)) in w.iter().enumerate().rev() {
        if !needed.contains(x) {
            continue;
        }
        for l in private {
            if e.mentions(&l.var) {
                if !w[..k].iter().any(|(y, _)| y == &l.var) {
                    return None;
                }
                needed.push(l.var.clone());
            }
        }
        let mut e = e.clone();
        for (d, coord) in site.coords.iter().enumerate() {
            e = e.subst(&coordinate(d), coord);
        }
        goals.push(Pred::cmp(CmpOp::Eq, IndexExpr::var(x.clone()), e));
    }
    if vars.iter().any(|v| !w.iter().any(|(x, _)| x == v)) {
        return None;
    }
    goals.reverse();
    Some(Lemma {
        context: Facts {
            sizes: walk.sizes.clone(),
            facts: site.facts.clone(),
            arrays: walk.safety_arrays.clone(),
        },
        goal: goals.into_iter().reduce(Pred::and)?,
    })
}

/// (a) The race obligations: for every `parallel` or `vector` loop, every write inside
/// it to memory shared by its iterations, against every access of the same memory
/// inside it (the write itself included).
pub fn races(walk: &Walk) -> Vec<Obligation> {
    let mut loops: Vec<(usize, &LoopRef)> = Vec::new();
    for site in &walk.sites {
        for (depth, l) in site.loops.iter().enumerate() {
            if (l.parallel || l.vector) && !loops.iter().any(|(_, x)| x.id == l.id) {
                loops.push((depth, l));
            }
        }
    }
    loops.sort_by_key(|(_, l)| l.id);
    let mut out = Vec::new();
    for (depth, l) in loops {
        let inside: Vec<&Site> = walk
            .sites
            .iter()
            .filter(|s| s.loops.get(depth).is_some_and(|x| x.id == l.id))
            .collect();
        for (i, write) in inside.iter().enumerate() {
            if !write.is_write() || !shared_by_iterations(&walk.bindings[write.binding], l) {
                continue;
            }
            for (j, other) in inside.iter().enumerate() {
                // A pair of writes once (the obligation is symmetric).
                if other.binding != write.binding || (other.is_write() && j < i) {
                    continue;
                }
                let m1 = copy_names(&write.loops[depth..], 1);
                let m2 = copy_names(&other.loops[depth..], 2);
                let mut facts = two_contexts(write, &m1, other, &m2);
                let v1 = IndexExpr::var(format!("{}#1", l.var));
                let v2 = IndexExpr::var(format!("{}#2", l.var));
                // One site against itself: the copies are interchangeable, so the
                // first iteration may be taken to be the smaller.
                facts.push(if i == j {
                    Pred::cmp(CmpOp::Lt, v1, v2)
                } else {
                    Pred::cmp(CmpOp::Ne, v1, v2)
                });
                // The lemma is about the coordinates, which for a folded buffer are
                // not where the elements are stored.
                let lemma = if i == j && walk.bindings[write.binding].fold.is_none() {
                    determined(
                        write,
                        &write.loops[depth..],
                        std::slice::from_ref(&l.var),
                        walk,
                    )
                } else {
                    None
                };
                out.push(Obligation {
                    lemma,
                    kind: ObligationKind::Race {
                        loop_var: l.var.clone(),
                        write: write.access.clone(),
                        other: other.access.clone(),
                    },
                    location: location(write, other),
                    context: Facts {
                        sizes: walk.sizes.clone(),
                        facts,
                        arrays: walk.safety_arrays.clone(),
                    },
                    // Where the two are stored (a folded buffer's rows `F` apart
                    // share memory).
                    goal: coordinates_differ(
                        &walk.bindings[write.binding].physical(&renamed(&write.coords, &m1)),
                        &walk.bindings[other.binding].physical(&renamed(&other.coords, &m2)),
                    ),
                });
            }
        }
    }
    out
}

/// (b) The double-write obligations: for every buffer the kernel writes (the output,
/// every temporary), every pair of assignment stores to it, a store with itself
/// included (then at two iteration points that differ in some loop inside the
/// buffer's `alloc`). Loops around the `alloc` are shared: each execution of it is a
/// fresh buffer. Zeroing stores are assignments like any other: the lowering's zeroing
/// writes only what nothing else assigns (the padding of a staged buffer, the
/// accumulator of a sum, which is then updated with `+=`), so it needs no exemption.
pub fn double_writes(walk: &Walk) -> Vec<Obligation> {
    let mut out = Vec::new();
    for (b, binding) in walk.bindings.iter().enumerate() {
        if !matches!(
            binding.role,
            BindingRole::Output | BindingRole::Temporary(_)
        ) {
            continue;
        }
        let shared = binding.loops.len();
        let writes: Vec<&Site> = walk
            .sites
            .iter()
            .filter(|s| s.binding == b && s.op == Some(StoreOp::Assign))
            .collect();
        for (i, first) in writes.iter().enumerate() {
            for second in &writes[i..] {
                let m1 = copy_names(&first.loops[shared..], 1);
                let m2 = copy_names(&second.loops[shared..], 2);
                let mut facts = two_contexts(first, &m1, second, &m2);
                let mut lemma = None;
                if std::ptr::eq(*first, *second) {
                    let inner = &first.loops[shared..];
                    let vars: Vec<String> = inner.iter().map(|l| l.var.clone()).collect();
                    lemma = determined(first, inner, &vars, walk);
                    // Two executions of one store: some loop inside the alloc differs.
                    let Some(points_differ) = first.loops[shared..]
                        .iter()
                        .map(|l| {
                            Pred::cmp(
                                CmpOp::Ne,
                                IndexExpr::var(format!("{}#1", l.var)),
                                IndexExpr::var(format!("{}#2", l.var)),
                            )
                        })
                        .reduce(Pred::or)
                    else {
                        // Executed once per lifetime of the buffer.
                        continue;
                    };
                    facts.push(points_differ);
                }
                out.push(Obligation {
                    lemma,
                    kind: ObligationKind::DoubleWrite {
                        first: first.access.clone(),
                        second: second.access.clone(),
                    },
                    location: location(first, second),
                    context: Facts {
                        sizes: walk.sizes.clone(),
                        facts,
                        arrays: walk.safety_arrays.clone(),
                    },
                    goal: coordinates_differ(
                        &renamed(&first.coords, &m1),
                        &renamed(&second.coords, &m2),
                    ),
                });
            }
        }
    }
    out
}
