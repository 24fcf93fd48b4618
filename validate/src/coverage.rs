//! Coverage of the output: every element of `out` is written by an assignment store
//! or a fill, for every size the preconditions allow.
//!
//! "Some iteration of some store writes `c`" is an existential over the loop
//! variables, which the solver does not decide. So the validator computes, for each
//! candidate store, a *witness*: the iteration that would write coordinate `c`,
//! solved from the store's coordinates — a coordinate that is a loop variable plus
//! terms of other variables gives that variable (`x = c - rest`); a tiled coordinate
//! `T*xo + xi + rest` with `xi` running over `0..T` gives `xo = (c - rest) / T`,
//! `xi = (c - rest) % T`; a coordinate mentioning one unsolved variable `x` in any
//! other way gives the guess `x = c - coord[x := 0]`; a loop variable no coordinate
//! determines gets its loop's lower bound. The witness is only a proposal: the
//! obligation is the universally quantified
//!
//! ```text
//! preconditions && 0 <= c < shape  =>  OR over stores k: context_k(w_k(c)) && coords_k(w_k(c)) == c
//! ```
//!
//! (plus, for a fill at the top of the kernel, "the row-major position of `c` is
//! below its length"), which the solver proves or refutes for all sizes at once. A
//! proof is a proof of coverage whatever the witnesses were.
//!
//! A refutation of that query only says the *witnesses* miss `c`. It becomes a
//! refutation of coverage when the solver then proves, at the counterexample's sizes
//! and coordinate, that no iteration of any assignment store (and no fill, wherever
//! it is) writes `c`; otherwise the obligation is unknown ("coverage not
//! established"), never refuted and never proved.

use std::collections::BTreeMap;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::poly::Poly;
use atl_loopir::ir::StoreOp;
use atl_solver::{Facts, Solver, Verdict};

use crate::obligations::{Obligation, ObligationKind, Walk};
use crate::sites::{LoopRef, Site};
use crate::{CheckedObligation, Method};

/// The name of the coordinate variable of dimension `d`.
pub(crate) fn coordinate(d: usize) -> String {
    format!("c#{d}")
}

pub(crate) fn row_major(coords: &[IndexExpr], shape: &[IndexExpr]) -> IndexExpr {
    let mut position = IndexExpr::Const(0);
    for (d, i) in coords.iter().enumerate() {
        position = if d == 0 {
            i.clone()
        } else {
            IndexExpr::add(IndexExpr::mul(position, shape[d].clone()), i.clone())
        };
    }
    position
}

pub(crate) fn conjunction(preds: impl IntoIterator<Item = Pred>) -> Pred {
    preds
        .into_iter()
        .filter(|p| *p != Pred::Bool(true))
        .reduce(Pred::and)
        .unwrap_or(Pred::Bool(true))
}

/// The sizes of a counterexample as facts (`n == 5`, …): the second proof that confirms
/// a refutation is made at exactly those sizes.
pub(crate) fn pinned_sizes(walk: &Walk, cex: &atl_solver::Counterexample) -> Vec<Pred> {
    walk.sizes
        .iter()
        .filter_map(|s| {
            cex.get(s)
                .map(|v| Pred::cmp(CmpOp::Eq, IndexExpr::var(s), IndexExpr::Const(v)))
        })
        .collect()
}

/// The element a counterexample names (its coordinates `c#0`, `c#1`, … of `rank`).
pub(crate) fn counterexample_element(
    cex: &atl_solver::Counterexample,
    rank: usize,
) -> Option<Vec<IndexExpr>> {
    (0..rank)
        .map(|d| cex.get(&coordinate(d)).map(IndexExpr::Const))
        .collect()
}

/// `coords != values` in some dimension.
pub(crate) fn differs(coords: &[IndexExpr], values: &[IndexExpr]) -> Pred {
    coords
        .iter()
        .zip(values)
        .map(|(x, v)| Pred::cmp(CmpOp::Ne, x.clone(), v.clone()))
        .reduce(Pred::or)
        .unwrap_or(Pred::Bool(false))
}

/// Whether `misses` (the write does not touch the element) is proved under the write's
/// own `facts` at the counterexample's sizes (`pinned`).
pub(crate) fn proved_to_miss(
    walk: &Walk,
    facts: &[Pred],
    pinned: &[Pred],
    misses: &Pred,
    solver: &Solver,
) -> bool {
    let facts = Facts {
        sizes: walk.sizes.clone(),
        facts: facts.iter().chain(pinned).cloned().collect(),
        arrays: walk.arrays.clone(),
    };
    solver.prove(&facts, misses).is_proved()
}

/// Whether a loop's upper bound `hi` is `k`, or `min(k, …)` (a tail tile stopped at
/// the extent).
fn bounded_by(hi: &IndexExpr, k: &IndexExpr) -> bool {
    atl_lang::poly::same(hi, k)
        || matches!(hi, IndexExpr::Bin(IndexOp::Min, a, b)
            if atl_lang::poly::same(a, k) || atl_lang::poly::same(b, k))
}

/// `coef * m0 * m1 * ...`
fn term(monomial: &[IndexExpr], coef: i64) -> IndexExpr {
    let product = monomial.iter().cloned().reduce(IndexExpr::mul);
    match product {
        None => IndexExpr::Const(coef),
        Some(p) if coef == 1 => p,
        Some(p) => IndexExpr::mul(IndexExpr::Const(coef), p),
    }
}

/// The iteration of `site` that would write coordinate `target`, for the variables of
/// `solve_for` (a suffix of the site's loops).
pub(crate) struct Witness {
    /// Per variable, an expression over the sizes, `target`, the loop variables not
    /// in `solve_for`, and variables of `solve_for` solved before it (a triangular
    /// system, in solving order): the inner variable of a tile is `offset - K*outer`,
    /// which the solver handles better than `offset % K` when `K` is symbolic.
    pub triangular: Vec<(String, IndexExpr)>,
    /// Per variable, an expression over the sizes, `target` and the loop variables
    /// not in `solve_for` only. Variables no coordinate determines get their loop's
    /// lower bound when asked for, and are left out otherwise, as are proposals that
    /// refer to each other in a cycle.
    pub closed: BTreeMap<String, IndexExpr>,
}

pub(crate) fn witness(
    site: &Site,
    target: &[IndexExpr],
    solve_for: &[LoopRef],
    default_to_lower_bound: bool,
) -> Witness {
    let mut w: BTreeMap<String, IndexExpr> = BTreeMap::new();
    let mut triangular: Vec<(String, IndexExpr)> = Vec::new();
    let mut equations: Vec<(IndexExpr, IndexExpr)> = site
        .coords
        .iter()
        .cloned()
        .zip(target.iter().cloned())
        .collect();
    let mut guesses_allowed = false;
    loop {
        let unknown: Vec<&LoopRef> = solve_for
            .iter()
            .filter(|l| !w.contains_key(&l.var))
            .collect();
        let mentions_unknown = |e: &IndexExpr| unknown.iter().any(|l| e.mentions(&l.var));
        let mut progress = false;
        // `E / K == t1` and `E % K == t2` give `E == K*t1 + t2`.
        'pairs: for i in 0..equations.len() {
            for j in 0..equations.len() {
                if let (IndexExpr::Bin(IndexOp::Div, e1, k1), IndexExpr::Bin(IndexOp::Mod, e2, k2)) =
                    (&equations[i].0, &equations[j].0)
                    && e1 == e2
                    && k1 == k2
                    && !mentions_unknown(k1)
                    && mentions_unknown(e1)
                {
                    let combined = IndexExpr::add(
                        IndexExpr::mul((**k1).clone(), equations[i].1.clone()),
                        equations[j].1.clone(),
                    );
                    let e = (**e1).clone();
                    let (hi, lo) = (i.max(j), i.min(j));
                    equations.remove(hi);
                    equations.remove(lo);
                    equations.push((e, combined));
                    progress = true;
                    break 'pairs;
                }
            }
        }
        if progress {
            continue;
        }
        // An equation replaced by a smaller one (a digit of a mixed-radix position
        // solved, below).
        let mut reduced: Option<(usize, (IndexExpr, IndexExpr))> = None;
        for (index, (coord, c)) in equations.iter().enumerate() {
            let here: Vec<&&LoopRef> = unknown.iter().filter(|l| coord.mentions(&l.var)).collect();
            if here.is_empty() {
                continue;
            }
            let poly = Poly::from_index(coord);
            // Terms linear in one unknown, with a coefficient free of unknowns.
            let mut linear: Vec<(&LoopRef, IndexExpr)> = Vec::new();
            let mut rest = IndexExpr::Const(0);
            let mut solvable = true;
            for (monomial, coef) in poly.terms() {
                let at: Vec<usize> = (0..monomial.len())
                    .filter(|&k| mentions_unknown(&monomial[k]))
                    .collect();
                match at.as_slice() {
                    [] => rest = IndexExpr::add(rest, term(monomial, *coef)),
                    [k] => match &monomial[*k] {
                        IndexExpr::Var(x) if here.iter().any(|l| &l.var == x) => {
                            let mut others = monomial.clone();
                            others.remove(*k);
                            let l = here.iter().find(|l| &l.var == x).expect("found");
                            linear.push((l, term(&others, *coef)));
                        }
                        _ => solvable = false,
                    },
                    _ => solvable = false,
                }
            }
            let offset = IndexExpr::sub(c.clone(), rest);
            if solvable {
                match linear.as_slice() {
                    [(x, k)] => {
                        let value = match k.as_const() {
                            Some(1) => offset,
                            Some(-1) => IndexExpr::Neg(Box::new(offset)),
                            _ => IndexExpr::bin(IndexOp::Div, offset, k.clone()),
                        };
                        triangular.push((x.var.clone(), value.clone()));
                        w.insert(x.var.clone(), value);
                        progress = true;
                    }
                    [(a, ka), (b, kb)] => {
                        // K*outer + inner with inner over 0..K (or over 0..min(K, …), a
                        // tail tile stopped at the extent: only a proposal, which the
                        // solver checks against the loop's real bound).
                        let tiled =
                            |outer: &LoopRef, k: &IndexExpr, inner: &LoopRef, one: &IndexExpr| {
                                (one.as_const() == Some(1)
                                    && k.as_const() != Some(1)
                                    && inner.lo == IndexExpr::Const(0)
                                    && bounded_by(&inner.hi, k))
                                .then(|| (outer.var.clone(), inner.var.clone(), k.clone()))
                            };
                        if let Some((outer, inner, k)) =
                            tiled(a, ka, b, kb).or_else(|| tiled(b, kb, a, ka))
                        {
                            let quotient = IndexExpr::bin(IndexOp::Div, offset.clone(), k.clone());
                            triangular.push((outer.clone(), quotient.clone()));
                            triangular.push((
                                inner.clone(),
                                IndexExpr::sub(
                                    offset.clone(),
                                    IndexExpr::mul(k.clone(), IndexExpr::var(outer.clone())),
                                ),
                            ));
                            w.insert(outer, quotient);
                            w.insert(inner, IndexExpr::bin(IndexOp::Mod, offset, k));
                            progress = true;
                        }
                    }
                    // A split of a split's tile loop: `inner + K*v1 + (K*M)*v2 + …`,
                    // inner over 0..K and every other coefficient a constant multiple
                    // of K. The inner digit is the offset modulo K; the rest is the
                    // same problem for `offset / K` (only a proposal, as above).
                    many if many.len() >= 3 => {
                        let constant = |k: &IndexExpr| k.as_const();
                        let inner = many.iter().position(|(l, k)| {
                            constant(k) == Some(1) && l.lo == IndexExpr::Const(0)
                        });
                        let radix = many
                            .iter()
                            .filter_map(|(_, k)| constant(k))
                            .filter(|&k| k > 1)
                            .min();
                        if let (Some(at), Some(radix)) = (inner, radix)
                            && many.iter().enumerate().all(|(j, (_, k))| {
                                j == at || constant(k).is_some_and(|k| k > 1 && k % radix == 0)
                            })
                            && bounded_by(&many[at].0.hi, &IndexExpr::Const(radix))
                        {
                            let k = IndexExpr::Const(radix);
                            let digit = IndexExpr::bin(IndexOp::Mod, offset.clone(), k.clone());
                            let var = many[at].0.var.clone();
                            triangular.push((var.clone(), digit.clone()));
                            w.insert(var, digit);
                            let rest = many
                                .iter()
                                .enumerate()
                                .filter(|&(j, _)| j != at)
                                .map(|(_, (l, c))| {
                                    term(
                                        &[IndexExpr::var(l.var.clone())],
                                        constant(c).unwrap_or(0) / radix,
                                    )
                                })
                                .reduce(IndexExpr::add)
                                .unwrap_or(IndexExpr::Const(0));
                            reduced =
                                Some((index, (rest, IndexExpr::bin(IndexOp::Div, offset, k))));
                            progress = true;
                        }
                    }
                    _ => {}
                }
            } else if guesses_allowed && let [x] = here.as_slice() {
                let at_zero = coord.subst(&x.var, &IndexExpr::Const(0));
                let value = IndexExpr::sub(c.clone(), at_zero);
                triangular.push((x.var.clone(), value.clone()));
                w.insert(x.var.clone(), value);
                progress = true;
            }
            if progress {
                break;
            }
        }
        if let Some((index, equation)) = reduced {
            equations[index] = equation;
        }
        if progress {
            guesses_allowed = false;
        } else if !guesses_allowed {
            guesses_allowed = true;
        } else {
            break;
        }
    }
    if default_to_lower_bound {
        for l in solve_for {
            w.entry(l.var.clone()).or_insert_with(|| l.lo.clone());
        }
    }
    // Resolve proposals that mention other solved variables.
    for _ in 0..=solve_for.len() {
        let snapshot = w.clone();
        for e in w.values_mut() {
            for (v, value) in &snapshot {
                if e.mentions(v) {
                    *e = e.subst(v, value);
                }
            }
        }
    }
    w.retain(|_, e| solve_for.iter().all(|l| !e.mentions(&l.var)));
    Witness {
        triangular,
        closed: w,
    }
}

/// `num / d` and `num % d` where `num = d*q + r` with `0 <= r < d` provable from
/// `facts` (by the solver's fast path) are `q` and `r`: an identity under the facts
/// (floor division) that spares z3 the nested divisions of a row-major position
/// decomposed again (`(D*(C*x + y) + z) / D / C`), on which it gives up.
pub(crate) fn reduce_divisions(e: &IndexExpr, facts: &Facts, solver: &Solver) -> IndexExpr {
    match e {
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(reduce_divisions(a, facts, solver))),
        IndexExpr::Load(array, a) => {
            IndexExpr::Load(array.clone(), Box::new(reduce_divisions(a, facts, solver)))
        }
        IndexExpr::Bin(op, a, b) => {
            let a = reduce_divisions(a, facts, solver);
            let b = reduce_divisions(b, facts, solver);
            if matches!(op, IndexOp::Div | IndexOp::Mod)
                && let Some((q, r)) = split_multiple(&a, &b)
            {
                let bounded = Pred::and(
                    Pred::cmp(CmpOp::Le, IndexExpr::Const(0), r.clone()),
                    Pred::cmp(CmpOp::Lt, r.clone(), b.clone()),
                );
                if solver.prove_fast(facts, &bounded) {
                    return if *op == IndexOp::Div { q } else { r };
                }
            }
            IndexExpr::bin(*op, a, b)
        }
    }
}

/// `num = d*q + r` where `q` collects the terms with the factor `d` (a variable or a
/// positive constant); `None` when no term has it.
fn split_multiple(num: &IndexExpr, d: &IndexExpr) -> Option<(IndexExpr, IndexExpr)> {
    let poly = Poly::from_index(num);
    let mut q = IndexExpr::Const(0);
    let mut r = IndexExpr::Const(0);
    let mut found = false;
    for (monomial, coef) in poly.terms() {
        match d {
            IndexExpr::Var(_) if monomial.contains(d) => {
                let mut rest = monomial.clone();
                let at = rest.iter().position(|m| m == d).expect("contained");
                rest.remove(at);
                q = IndexExpr::add(q, term(&rest, *coef));
                found = true;
            }
            IndexExpr::Const(k) if *k > 0 && coef % k == 0 => {
                q = IndexExpr::add(q, term(monomial, coef / k));
                found = true;
            }
            _ => r = IndexExpr::add(r, term(monomial, *coef)),
        }
    }
    found.then(|| (atl_lang::poly::normalize(&q), atl_lang::poly::normalize(&r)))
}

fn substitute(p: &Pred, w: &BTreeMap<String, IndexExpr>) -> Pred {
    crate::sites::substitute_pred(p, w)
}

/// Checks the coverage of the output (see the module documentation).
pub fn check(walk: &Walk, solver: &Solver) -> CheckedObligation {
    let out = &walk.bindings[walk.output];
    let targets: Vec<IndexExpr> = (0..out.shape.len())
        .map(|d| IndexExpr::var(coordinate(d)))
        .collect();
    let mut context = walk.preconditions.clone();
    for (c, extent) in targets.iter().zip(&out.shape) {
        context.push(Pred::and(
            Pred::cmp(CmpOp::Le, IndexExpr::Const(0), c.clone()),
            Pred::cmp(CmpOp::Lt, c.clone(), extent.clone()),
        ));
    }
    let own_facts = |facts: &[Pred]| -> Vec<Pred> {
        facts
            .iter()
            .filter(|f| !walk.preconditions.contains(f))
            .cloned()
            .collect()
    };
    let stores: Vec<&Site> = walk
        .sites
        .iter()
        .filter(|s| s.binding == walk.output && s.op == Some(StoreOp::Assign))
        .collect();
    let fills: Vec<&crate::obligations::Fill> = walk
        .fills
        .iter()
        .filter(|f| f.binding == walk.output)
        .collect();
    let position = row_major(&targets, &out.shape);
    let mut disjuncts = Vec::new();
    for fill in &fills {
        if fill.loops.is_empty() {
            let mut conds = own_facts(&fill.facts);
            conds.push(Pred::cmp(CmpOp::Lt, position.clone(), fill.len.clone()));
            disjuncts.push(conjunction(conds));
        }
    }
    for store in &stores {
        let w = witness(store, &targets, &store.loops, true).closed;
        if w.len() != store.loops.len() {
            continue;
        }
        let mut conds: Vec<Pred> = own_facts(&store.facts)
            .iter()
            .map(|f| substitute(f, &w))
            .collect();
        for (coord, c) in store.coords.iter().zip(&targets) {
            let at = crate::sites::substitute(coord, &w);
            conds.push(Pred::cmp(CmpOp::Eq, at, c.clone()));
        }
        disjuncts.push(conjunction(conds));
    }
    let goal = disjuncts
        .into_iter()
        .reduce(Pred::or)
        .unwrap_or(Pred::Bool(false));
    let obligation = Obligation {
        kind: ObligationKind::Coverage {
            buffer: out.name.clone(),
        },
        location: String::new(),
        context: Facts {
            sizes: walk.sizes.clone(),
            facts: context,
            arrays: walk.arrays.clone(),
        },
        goal,
        lemma: None,
    };
    let reduced = obligation
        .goal
        .map_index(&mut |e| reduce_divisions(e, &obligation.context, solver));
    let mut method = Method::Solver;
    let verdict = match solver.prove(&obligation.context, &reduced) {
        Verdict::Proved => Verdict::Proved,
        _ if fills.is_empty() && by_counting(walk, &stores, solver) => {
            method = Method::Counting;
            Verdict::Proved
        }
        Verdict::Unknown(why) => Verdict::Unknown(format!("coverage not established ({why})")),
        Verdict::Refuted(cex) => {
            // Only a real refutation if nothing writes that element at those sizes.
            let pinned = pinned_sizes(walk, &cex);
            let values = counterexample_element(&cex, targets.len());
            let unwritten = values.is_some_and(|values| {
                let stores_miss = stores.iter().all(|s| {
                    proved_to_miss(
                        walk,
                        &s.facts,
                        &pinned,
                        &differs(&s.coords, &values),
                        solver,
                    )
                });
                let position = row_major(&values, &out.shape);
                let fills_miss = fills.iter().all(|f| {
                    let beyond = Pred::cmp(CmpOp::Ge, position.clone(), f.len.clone());
                    proved_to_miss(walk, &f.facts, &pinned, &beyond, solver)
                });
                stores_miss && fills_miss
            });
            if unwritten {
                Verdict::Refuted(cex)
            } else {
                Verdict::Unknown(format!(
                    "coverage not established: the witnesses miss the element at {cex}, and it \
                     was not proved that nothing else writes it"
                ))
            }
        }
    };
    CheckedObligation {
        obligation,
        verdict,
        method,
    }
}

/// Coverage by counting: when the assignment stores of the output run over
/// rectangular loop nests with no condition but their loop ranges, write in-bounds
/// elements (obligation (a)), never the same element twice (obligation (d), every
/// pair of them), and run as many times in all as the output has elements, they write
/// every element (an injection between finite sets of equal size is onto). This proof
/// holds given (a) and (d), which are obligations of the same kernel: a kernel is only
/// validated when they are proved too.
fn by_counting(walk: &Walk, stores: &[&Site], solver: &Solver) -> bool {
    if stores.is_empty() {
        return false;
    }
    let out = &walk.bindings[walk.output];
    let mut total = IndexExpr::Const(0);
    let mut facts = walk.preconditions.clone();
    let mut nonnegative = Vec::new();
    for store in stores {
        let vars: Vec<&str> = store.loops.iter().map(|l| l.var.as_str()).collect();
        let mut count = IndexExpr::Const(1);
        let mut ranges = Vec::new();
        for l in &store.loops {
            if vars.iter().any(|v| l.lo.mentions(v) || l.hi.mentions(v)) {
                return false;
            }
            let v = IndexExpr::var(l.var.clone());
            ranges.push(Pred::and(
                Pred::cmp(CmpOp::Le, l.lo.clone(), v.clone()),
                Pred::cmp(CmpOp::Lt, v, l.hi.clone()),
            ));
            let extent = IndexExpr::sub(l.hi.clone(), l.lo.clone());
            nonnegative.push(Pred::cmp(CmpOp::Le, IndexExpr::Const(0), extent.clone()));
            count = IndexExpr::mul(count, extent);
        }
        // No condition but the loop ranges (and the preconditions).
        if store
            .facts
            .iter()
            .any(|f| !walk.preconditions.contains(f) && !ranges.contains(f))
        {
            return false;
        }
        total = IndexExpr::add(total, count);
    }
    let sizes_only = Facts {
        sizes: walk.sizes.clone(),
        facts: std::mem::take(&mut facts),
        arrays: walk.arrays.clone(),
    };
    let goal = nonnegative
        .into_iter()
        .fold(Pred::cmp(CmpOp::Eq, total, numel(&out.shape)), Pred::and);
    solver.prove(&sizes_only, &goal).is_proved()
}

fn numel(shape: &[IndexExpr]) -> IndexExpr {
    shape
        .iter()
        .cloned()
        .reduce(IndexExpr::mul)
        .unwrap_or(IndexExpr::Const(1))
}
