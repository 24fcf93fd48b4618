//! The value check: every element of the output holds, when the kernel returns, the
//! source definition's element — for every size the preconditions allow and every
//! input.
//!
//! **The kernel's side.** For each assignment of the output (a store `out[…] = v`,
//! or a fill), at a symbolic iteration of its loops, the element it writes ends with
//! the value `v` plus every `+=` into that element (all of them: the assignment is
//! the only one of that element, obligation (d), and every `+=` follows an
//! assignment, obligation (f) — both checked separately, which this check relies
//! on). A `+=` store contributes the sum, over the iterations of its own loops
//! (renamed apart), of its value where it writes that element: `Σ loops. [context ∧
//! coordinates = c] v`. A read of a temporary or a scalar inside `v` is replaced by
//! what the memory holds at that point, the same way: the assignment that wrote the
//! element before the read (the witness of [`crate::coverage`], with the condition
//! that it ran before the read in program order: a lexicographic comparison of the
//! shared loops' iterations, then the statements' order) plus the `+=`s between. So
//! every read is eventually an input element, and the kernel's element is a
//! [`Term`] over the inputs.
//!
//! **The source's side** is [`crate::source`]: the definition's element at the same
//! coordinates.
//!
//! **Comparing** the two terms ([`Comparison`]): both are simplified under the
//! context (a selection whose condition the solver decides is resolved, a sum whose
//! guard fixes its variable is the one term it has, an empty sum is zero, `0 + x` is
//! `x`), then compared structurally, case-splitting on undecided selections: input
//! elements must read the same element (the solver proves each coordinate equal),
//! operators must match, and sums must run over the same range in the same order
//! (or over ranges whose difference contributes zero), each term once. So what is
//! proved is equality over the reals, each term of every source sum once. Within one
//! accumulating statement (`acc += …` in its loops) the terms come in the source's
//! order; several `+=` statements into one element are compared as consecutive sums
//! (`start + Σ first + Σ second`), which is a reassociation when their loops
//! interleave them (the C then rounds differently; lowering emits one accumulating
//! statement per source sum). A kernel that reorders the terms of one sum is not
//! validated.
//!
//! **Floating point.** Each identity the simplification uses holds in IEEE arithmetic
//! too (up to the sign of a zero) for the values it is applied to, so it makes no
//! infinity or NaN of one side equal to a finite value of the other: `0 + x = x`,
//! `x + 0 = x`, `x - 0 = x` and `-0 = 0` hold for every `x`, infinities and NaN
//! included; a selection evaluates only its side, so the terms of a sum whose guard
//! fails are exact zeros (an empty sum, a sum of zeros, a sum with one term that is
//! not a guarded zero are exact); `max(-inf, x) = x`; a scalar function of literals
//! is its value. `x * 0 = 0` (and `0 * x`) fails for an infinite or NaN `x` (NaN), so
//! it is used only when `x` is [`Term::surely_finite`], finite for every finite
//! input, which a product or a sum of inputs is not (`1e200 * 1e200`). Nothing
//! cancels: `x - x` is not 0 (NaN for an infinite `x`); terms are compared
//! structurally.
//!
//! An obligation that is not proved is unknown, with the first difference found.
//! [`crate::concrete`] then looks for a concrete counterexample by running the
//! kernel and the source at small sizes: only a difference found there rejects the
//! kernel.

use std::collections::{BTreeMap, BTreeSet};

use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::BinOp;
use atl_lang::poly::Poly;
use atl_loopir::ir::StoreOp;
use atl_solver::{Facts, Solver, Verdict};

use crate::coverage::{conjunction, coordinate, reduce_divisions, row_major, witness};
use crate::obligations::{Obligation, ObligationKind, Walk};
use crate::sites::{LoopRef, Path, Position, Site, runs_before};
use crate::source::SourceEval;
use crate::term::Term;
use crate::{CheckedObligation, Method};

/// The most solver questions one kernel's value check may ask (beyond it, the
/// remaining obligations are unknown).
const QUESTION_BUDGET: usize = 20_000;

/// The largest term the check builds (inlining temporaries can grow terms; beyond
/// this, unknown).
const TERM_LIMIT: usize = 20_000;

/// A substitution of index variables.
type Subst = BTreeMap<String, IndexExpr>;

/// `e` under the substitution `s`, all variables at once (`crate::sites::substitute`).
fn apply(e: &IndexExpr, s: &Subst) -> IndexExpr {
    crate::sites::substitute(e, s)
}

fn apply_pred(p: &Pred, s: &Subst) -> Pred {
    crate::sites::substitute_pred(p, s)
}

fn eq(a: IndexExpr, b: IndexExpr) -> Pred {
    Pred::cmp(CmpOp::Eq, a, b)
}

fn lt(a: IndexExpr, b: IndexExpr) -> Pred {
    Pred::cmp(CmpOp::Lt, a, b)
}

fn le(a: IndexExpr, b: IndexExpr) -> Pred {
    Pred::cmp(CmpOp::Le, a, b)
}

/// Builds the kernel's values.
struct Kernel<'w> {
    walk: &'w Walk,
    solver: &'w Solver,
    fresh: usize,
    size: usize,
}

impl<'w> Kernel<'w> {
    fn fresh(&mut self, var: &str) -> String {
        self.fresh += 1;
        let base = var.split('#').next().unwrap_or(var);
        format!("{base}#v{}", self.fresh)
    }

    /// The facts of `facts` that are not preconditions.
    fn own_facts<'a>(&self, facts: &'a [Pred]) -> impl Iterator<Item = &'a Pred> + use<'a, 'w> {
        let pre = &self.walk.preconditions;
        facts.iter().filter(move |f| !pre.contains(f))
    }

    /// Renames the loops of `loops` that are not `shared` (by identity) to fresh
    /// names, on top of `outer` (what the shared ones stand for).
    fn rename_own(
        &mut self,
        loops: &[LoopRef],
        shared: &BTreeSet<usize>,
        outer: &Subst,
    ) -> (Subst, Vec<LoopRef>) {
        let mut s = outer.clone();
        let mut own = Vec::new();
        for l in loops {
            if shared.contains(&l.id) {
                continue;
            }
            let var = self.fresh(&l.var);
            own.push(LoopRef {
                var: var.clone(),
                lo: apply(&l.lo, &s),
                hi: apply(&l.hi, &s),
                ..l.clone()
            });
            s.insert(l.var.clone(), IndexExpr::var(var));
        }
        (s, own)
    }

    /// "`x` (at `x.subst`) runs before `at`" in program order ([`runs_before`]); the
    /// end of the kernel when `at` is `None`.
    fn before(
        &self,
        x: &Position<'_>,
        at: &Option<Position<'_>>,
        outside: &BTreeSet<usize>,
    ) -> Pred {
        match at {
            None => Pred::Bool(true),
            Some(at) => runs_before(x, at, outside),
        }
    }

    /// Whether the coordinates of `site` (already renamed: its own loops are `own`,
    /// its other variables substituted by `outer`) determine its own loop variables:
    /// with `w` the witness solved from generic coordinates `c`, `w(coords(v)) == v`
    /// for every iteration `v` the site's context allows. Then an iteration writing an
    /// element is the witness of that element, and nothing else writes it.
    fn witness_is_unique(&self, site: &Site, own: &[LoopRef], outer: &Subst, rank: usize) -> bool {
        let generic: Vec<IndexExpr> = (0..rank)
            .map(|d| IndexExpr::var(format!("c#u{d}")))
            .collect();
        let w = witness(site, &generic, own, true).closed;
        if w.len() != own.len() {
            return false;
        }
        let back: Subst = (0..rank)
            .map(|d| (format!("c#u{d}"), site.coords[d].clone()))
            .collect();
        let goal = own
            .iter()
            .map(|l| {
                let value = apply(&w[&l.var], &back);
                eq(value, IndexExpr::var(l.var.clone()))
            })
            .reduce(Pred::and)
            .unwrap_or(Pred::Bool(true));
        let facts = Facts {
            sizes: self.walk.sizes.clone(),
            facts: site.facts.iter().map(|f| apply_pred(f, outer)).collect(),
            arrays: self.walk.arrays.clone(),
        };
        if let Pred::Cmp(CmpOp::Eq, a, b) = &goal
            && crate::identical(a, b)
        {
            return true;
        }
        let reduced = goal.map_index(&mut |e| reduce_divisions(e, &facts, self.solver));
        self.solver.prove(&facts, &reduced).is_proved()
    }

    /// Replaces every [`Term::Read`] of `t` by the value read.
    fn resolve(&mut self, t: &Term, depth: usize) -> Term {
        if self.size > TERM_LIMIT || depth > 64 {
            return Term::Unknown("the kernel's value is too large to check".into());
        }
        self.size += 1;
        match t {
            Term::Lit(_) | Term::Coord(_) | Term::Input { .. } | Term::Unknown(_) => t.clone(),
            Term::Read { site, subst } => self.read(*site, subst, depth + 1),
            Term::Neg(a) => Term::Neg(Box::new(self.resolve(a, depth))),
            Term::Bin(op, a, b) => {
                let a = self.resolve(a, depth);
                let b = self.resolve(b, depth);
                Term::bin(*op, a, b)
            }
            Term::Call(func, args) => {
                Term::Call(*func, args.iter().map(|a| self.resolve(a, depth)).collect())
            }
            Term::Select(p, a, b) => {
                let a = self.resolve(a, depth);
                let b = self.resolve(b, depth);
                Term::Select(p.clone(), Box::new(a), Box::new(b))
            }
            Term::Sum { var, lo, hi, body } => Term::Sum {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: Box::new(self.resolve(body, depth)),
            },
            Term::Max { var, lo, hi, body } => Term::Max {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: Box::new(self.resolve(body, depth)),
            },
        }
    }

    /// The value of a write's stored term at the iteration `subst`.
    fn stored(&mut self, site: &Site, subst: &Subst, depth: usize) -> Term {
        match &site.value {
            Some(v) => {
                let v = instantiate(v, subst);
                self.resolve(&v, depth)
            }
            None => Term::Unknown(format!("the value of {}", site.access)),
        }
    }

    /// What the read `site` (at the iteration `subst`) reads.
    fn read(&mut self, site: usize, subst: &Subst, depth: usize) -> Term {
        let walk = self.walk;
        let r = &walk.sites[site];
        let coords: Vec<IndexExpr> = r.coords.iter().map(|c| apply(c, subst)).collect();
        let at = Position {
            path: &r.path,
            loops: &r.loops,
            subst,
        };
        self.element(r.binding, &coords, &Some(at), depth)
    }

    /// The value of element `coords` of `binding` just before `at` (the end of the
    /// kernel when `None`), in the lifetime of the binding that `at` is in: the last
    /// assignment of the element before `at` plus the `+=`s into it after that
    /// assignment and before `at`.
    ///
    /// Each assignment statement is a candidate at the iteration that writes the
    /// element (a store's witness; several iterations of one store writing one element
    /// are excluded by the double-write obligation (d); scalar assignments and fills
    /// are only understood when they run once per lifetime), and a candidate's case is
    /// "it wrote the element before `at`, and no other candidate wrote it after it":
    /// exactly one case holds whenever some assignment ran.
    fn element(
        &mut self,
        binding: usize,
        coords: &[IndexExpr],
        at: &Option<Position<'_>>,
        depth: usize,
    ) -> Term {
        let walk = self.walk;
        let b = &walk.bindings[binding];
        let outside: BTreeSet<usize> = b.loops.iter().map(|l| l.id).collect();
        // What the loops around the binding stand for: as at the read (the same
        // lifetime).
        let outer: Subst = match at {
            Some(p) => b
                .loops
                .iter()
                .filter_map(|l| p.subst.get(&l.var).map(|x| (l.var.clone(), x.clone())))
                .collect(),
            None => Subst::new(),
        };
        // (guard, value, where and at which iteration the assignment runs)
        let mut candidates: Vec<(Pred, Term, &Path, &[LoopRef], Subst)> = Vec::new();
        let assignments: Vec<&Site> = walk
            .sites
            .iter()
            .chain(&walk.scalar_inits)
            .filter(|s| s.binding == binding && s.op == Some(StoreOp::Assign))
            .collect();
        for a in assignments {
            let (s, own) = self.rename_own(&a.loops, &outside, &outer);
            if a.coords.is_empty() && !own.is_empty() {
                return Term::Unknown(format!(
                    "{} assigns the scalar `{}` in a loop inside its scope",
                    a.access, b.name
                ));
            }
            let own_coords: Vec<IndexExpr> = a.coords.iter().map(|c| apply(c, &s)).collect();
            let renamed = Site {
                coords: own_coords.clone(),
                ..a.clone()
            };
            let w = witness(&renamed, coords, &own, true).closed;
            if w.len() != own.len() {
                return Term::Unknown(format!(
                    "which iteration of {} writes the element it reads is not found",
                    a.access
                ));
            }
            // The witness is *the* iteration that writes the element only if the
            // element determines the iteration: proved for all coordinates (otherwise
            // another iteration may write it while the witness's does not, and the
            // element's value is not the one this case describes).
            if !own.is_empty() && !self.witness_is_unique(&renamed, &own, &s, coords.len()) {
                return Term::Unknown(format!(
                    "the element {} writes does not determine the iteration that writes it",
                    a.access
                ));
            }
            // The composition: the assignment's variables to fresh names (`s`), the
            // fresh names to the witness (`w`, whose values mention no fresh name).
            let full: Subst = s.iter().map(|(k, v)| (k.clone(), apply(v, &w))).collect();
            let mut conds: Vec<Pred> = self
                .own_facts(&a.facts)
                .map(|f| apply_pred(f, &full))
                .collect();
            for (c, target) in a.coords.iter().zip(coords) {
                conds.push(eq(apply(c, &full), target.clone()));
            }
            let pos = Position {
                path: &a.path,
                loops: &a.loops,
                subst: &full,
            };
            conds.push(self.before(&pos, at, &outside));
            let value = self.stored(a, &full, depth);
            candidates.push((conjunction(conds), value, &a.path, &a.loops, full));
        }
        for f in walk.fills.iter().filter(|f| f.binding == binding) {
            if f.loops.len() != b.loops.len() {
                return Term::Unknown("a fill inside loops of the buffer's lifetime".into());
            }
            let mut conds: Vec<Pred> = self
                .own_facts(&f.facts)
                .map(|p| apply_pred(p, &outer))
                .collect();
            conds.push(lt(row_major(coords, &b.shape), apply(&f.len, &outer)));
            let pos = Position {
                path: &f.path,
                loops: &f.loops,
                subst: &outer,
            };
            conds.push(self.before(&pos, at, &outside));
            candidates.push((
                conjunction(conds),
                Term::Lit(f.value),
                &f.path,
                &f.loops,
                outer.clone(),
            ));
        }
        // The `max=`s into this binding (lowering's max-reductions).
        let max_sites = walk
            .sites
            .iter()
            .filter(|s| s.binding == binding && s.op == Some(StoreOp::Max))
            .count();
        let fallback = if max_sites > 0 {
            Term::Unknown(format!(
                "`{}` before an assignment, with `max=`s into it",
                b.name
            ))
        } else if b.zeroed {
            // Zero since the lifetime started, then every `+=` before `at`.
            let mut v = Term::zero();
            for acc in self.accumulations(binding, coords, at, None, &outer, depth) {
                v = Term::bin(BinOp::Add, v, acc);
            }
            v
        } else {
            Term::Unknown(format!("`{}` before anything wrote it", b.name))
        };
        // Candidate `i` is the last assignment before `at` when it wrote the element
        // and no other candidate wrote it after `i` (and before `at`).
        let last: Vec<Pred> = (0..candidates.len())
            .map(|i| {
                let (gi, _, pi, li, si) = &candidates[i];
                let mine = Position {
                    path: pi,
                    loops: li,
                    subst: si,
                };
                let mut conds = vec![gi.clone()];
                for (j, (gj, _, pj, lj, sj)) in candidates.iter().enumerate() {
                    if j == i {
                        continue;
                    }
                    let theirs = Position {
                        path: pj,
                        loops: lj,
                        subst: sj,
                    };
                    let later = self.before(&mine, &Some(theirs), &outside);
                    if later != Pred::Bool(false) {
                        conds.push(Pred::not(Pred::and(gj.clone(), later)));
                    }
                }
                conjunction(conds)
            })
            .collect();
        let mut value = fallback;
        for (guard, (_, stored, path, loops, subst)) in last.into_iter().zip(candidates).rev() {
            let assignment = Position {
                path,
                loops,
                subst: &subst,
            };
            let mut v = stored;
            if max_sites > 0 {
                v = self.max_fold(binding, coords, at, &assignment, &outer, depth, v);
            }
            for acc in self.accumulations(binding, coords, at, Some(&assignment), &outer, depth) {
                v = Term::bin(BinOp::Add, v, acc);
            }
            value = Term::Select(guard, Box::new(v), Box::new(value));
        }
        value
    }

    /// The value of a scalar assigned `start` at `after` and then folded by `max=`s
    /// before `at`: only the form lowering gives a max-reduction is understood, and
    /// anything else is [`Term::Unknown`] (so never validated). That form is: the
    /// scalar starts at `-inf`, one `max=` site in exactly one loop of its own, and
    /// every iteration of that loop runs it after the assignment and before `at` (an
    /// iteration that might not is an unknown value: a skipped step is not the step
    /// `max(acc, -inf)`, which differs when `acc` is NaN). Then the value is
    /// `max v ∈ [lo, hi). stored`, in the loop's order.
    #[allow(clippy::too_many_arguments)]
    fn max_fold(
        &mut self,
        binding: usize,
        coords: &[IndexExpr],
        at: &Option<Position<'_>>,
        after: &Position<'_>,
        outer: &Subst,
        depth: usize,
        start: Term,
    ) -> Term {
        let walk = self.walk;
        let b = &walk.bindings[binding];
        let unknown = |why: &str| Term::Unknown(format!("`{}`: {why}", b.name));
        if !coords.is_empty() {
            return unknown("a `max=` into a buffer element");
        }
        if !matches!(start, Term::Lit(v) if v == atl_lang::functions::MAX_EMPTY) {
            return unknown("a max-reduction that does not start at -inf");
        }
        let sites: Vec<&Site> = walk
            .sites
            .iter()
            .filter(|s| {
                s.binding == binding && matches!(s.op, Some(StoreOp::Max | StoreOp::Accumulate))
            })
            .collect();
        let [s] = sites.as_slice() else {
            return unknown("several `max=`/`+=` sites");
        };
        if s.op != Some(StoreOp::Max) {
            return unknown("a `+=` with `max=`s");
        }
        let outside: BTreeSet<usize> = b.loops.iter().map(|l| l.id).collect();
        let (subst, own) = self.rename_own(&s.loops, &outside, outer);
        let [l] = own.as_slice() else {
            return unknown("a `max=` not in exactly one loop of its own");
        };
        let mut conds: Vec<Pred> = self
            .own_facts(&s.facts)
            .map(|f| apply_pred(f, &subst))
            .collect();
        let pos = Position {
            path: &s.path,
            loops: &s.loops,
            subst: &subst,
        };
        conds.push(self.before(&pos, at, &outside));
        conds.push(self.before(after, &Some(pos), &outside));
        let stored = self.stored(s, &subst, depth);
        Term::Max {
            var: l.var.clone(),
            lo: l.lo.clone(),
            hi: l.hi.clone(),
            body: Box::new(Term::Select(
                conjunction(conds),
                Box::new(stored),
                Box::new(unknown(
                    "an iteration of the max-reduction that might not run",
                )),
            )),
        }
    }

    /// The `+=`s into element `coords` of `binding` that run before `at` (the end of
    /// the kernel when `None`) and after `after` (from the start of the lifetime when
    /// `None`), each as a sum over its own loops in their order.
    fn accumulations(
        &mut self,
        binding: usize,
        coords: &[IndexExpr],
        at: &Option<Position<'_>>,
        after: Option<&Position<'_>>,
        outer: &Subst,
        depth: usize,
    ) -> Vec<Term> {
        let walk = self.walk;
        let outside: BTreeSet<usize> = walk.bindings[binding].loops.iter().map(|l| l.id).collect();
        let mut terms = Vec::new();
        for s in walk
            .sites
            .iter()
            .filter(|s| s.binding == binding && s.op == Some(StoreOp::Accumulate))
        {
            let (subst, own) = self.rename_own(&s.loops, &outside, outer);
            let mut conds: Vec<Pred> = self
                .own_facts(&s.facts)
                .map(|f| apply_pred(f, &subst))
                .collect();
            for (c, target) in s.coords.iter().zip(coords) {
                conds.push(eq(apply(c, &subst), target.clone()));
            }
            let pos = Position {
                path: &s.path,
                loops: &s.loops,
                subst: &subst,
            };
            conds.push(self.before(&pos, at, &outside));
            if let Some(a) = after {
                conds.push(self.before(a, &Some(pos), &outside));
            }
            let stored = self.stored(s, &subst, depth);
            let mut term = Term::guarded(conjunction(conds), stored);
            for l in own.iter().rev() {
                term = Term::Sum {
                    var: l.var.clone(),
                    lo: l.lo.clone(),
                    hi: l.hi.clone(),
                    body: Box::new(term),
                };
            }
            terms.push(term);
        }
        terms
    }
}

/// `t` with the variables of its reads' substitutions and indices instantiated.
fn instantiate(t: &Term, s: &Subst) -> Term {
    match t {
        Term::Read { site, subst } => {
            let mut composed: Subst = subst
                .iter()
                .map(|(k, v)| (k.clone(), apply(v, s)))
                .collect();
            for (k, v) in s {
                composed.entry(k.clone()).or_insert_with(|| v.clone());
            }
            Term::Read {
                site: *site,
                subst: composed,
            }
        }
        Term::Lit(_) | Term::Unknown(_) => t.clone(),
        Term::Coord(index) => Term::Coord(apply(index, s)),
        Term::Input { name, coords } => Term::Input {
            name: name.clone(),
            coords: coords.iter().map(|c| apply(c, s)).collect(),
        },
        Term::Neg(a) => Term::Neg(Box::new(instantiate(a, s))),
        Term::Bin(op, a, b) => Term::bin(*op, instantiate(a, s), instantiate(b, s)),
        Term::Call(func, args) => {
            Term::Call(*func, args.iter().map(|a| instantiate(a, s)).collect())
        }
        Term::Select(p, a, b) => Term::Select(
            apply_pred(p, s),
            Box::new(instantiate(a, s)),
            Box::new(instantiate(b, s)),
        ),
        Term::Sum { var, lo, hi, body } => Term::Sum {
            var: var.clone(),
            lo: apply(lo, s),
            hi: apply(hi, s),
            body: Box::new(instantiate(body, s)),
        },
        Term::Max { var, lo, hi, body } => Term::Max {
            var: var.clone(),
            lo: apply(lo, s),
            hi: apply(hi, s),
            body: Box::new(instantiate(body, s)),
        },
    }
}

/// The outcome of comparing two terms.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Equal,
    /// Not shown equal, with the first difference found.
    Differs(String),
}

/// Compares terms under facts with the solver (see the module documentation).
pub(crate) struct Comparison<'s> {
    solver: &'s Solver,
    sizes: Vec<String>,
    arrays: Vec<atl_solver::IndexArrayFacts>,
    questions: usize,
    /// Whether the validation was cancelled: every question is then unanswered, which
    /// leaves the obligations unknown (never proved).
    cancelled: &'s dyn Fn() -> bool,
}

impl<'s> Comparison<'s> {
    /// Whether no more questions may be asked: the budget is spent, or cancelled.
    fn spent(&self) -> bool {
        self.questions >= QUESTION_BUDGET || (self.cancelled)()
    }

    fn facts(&self, facts: &[Pred]) -> Facts {
        Facts {
            sizes: self.sizes.clone(),
            facts: facts.to_vec(),
            arrays: self.arrays.clone(),
        }
    }

    /// `Some(true)` if `p` is proved under `facts`, `Some(false)` if its negation is,
    /// `None` otherwise (or beyond the budget).
    fn decide(&mut self, facts: &[Pred], p: &Pred) -> Option<bool> {
        match p {
            Pred::Bool(b) => return Some(*b),
            Pred::Cmp(CmpOp::Eq, a, b) if atl_lang::poly::same(a, b) => return Some(true),
            _ => {}
        }
        if facts.contains(p) {
            return Some(true);
        }
        if self.spent() {
            return None;
        }
        self.questions += 1;
        let f = self.facts(facts);
        if self.solver.prove(&f, p).is_proved() {
            return Some(true);
        }
        self.questions += 1;
        if self.solver.prove(&f, &Pred::not(p.clone())).is_proved() {
            return Some(false);
        }
        None
    }

    fn proves(&mut self, facts: &[Pred], p: &Pred) -> bool {
        if let Pred::Cmp(CmpOp::Eq, a, b) = p
            && crate::identical(a, b)
        {
            return true;
        }
        if self.spent() {
            return false;
        }
        self.questions += 1;
        let f = self.facts(facts);
        if self.solver.prove_fast(&f, p) {
            return true;
        }
        // Divisions of a multiple plus a bounded rest, simplified under the facts
        // (an identity there), then by normal forms or the solver.
        let reduced = p.map_index(&mut |e| reduce_divisions(e, &f, self.solver));
        if let Pred::Cmp(CmpOp::Eq, a, b) = &reduced
            && crate::identical(a, b)
        {
            return true;
        }
        matches!(self.solver.prove(&f, &reduced), Verdict::Proved)
    }

    /// Whether the facts are contradictory (the case cannot happen).
    fn unreachable(&mut self, facts: &[Pred]) -> bool {
        self.proves(facts, &Pred::Bool(false))
    }

    /// `t` simplified under `facts`.
    fn simplify(&mut self, t: &Term, facts: &[Pred]) -> Term {
        match t {
            Term::Lit(_) | Term::Input { .. } | Term::Unknown(_) | Term::Read { .. } => t.clone(),
            // A constant coordinate is its value where a double holds it exactly.
            Term::Coord(IndexExpr::Const(c)) if c.unsigned_abs() <= 1 << 53 => Term::Lit(*c as f64),
            Term::Coord(_) => t.clone(),
            Term::Call(func, args) => {
                let args: Vec<Term> = args.iter().map(|a| self.simplify(a, facts)).collect();
                // Of literals, the value (`sqrt(0)` is 0): `ScalarFn::apply` is the
                // meaning both interpreters use.
                let literals: Option<Vec<f64>> = args
                    .iter()
                    .map(|a| match a {
                        Term::Lit(v) => Some(*v),
                        _ => None,
                    })
                    .collect();
                match literals {
                    Some(values) => Term::Lit(func.apply(&values)),
                    None => Term::Call(*func, args),
                }
            }
            Term::Neg(a) => {
                let a = self.simplify(a, facts);
                if a.is_zero() {
                    Term::zero()
                } else {
                    Term::Neg(Box::new(a))
                }
            }
            Term::Bin(op, a, b) => {
                let a = self.simplify(a, facts);
                let b = self.simplify(b, facts);
                match op {
                    BinOp::Add if a.is_zero() => b,
                    BinOp::Add | BinOp::Sub if b.is_zero() => a,
                    // `x * 0 = 0` over the reals, but NaN in floating point for an
                    // infinite or NaN `x`: only where the other factor is proved
                    // finite for every finite input (`Term::surely_finite`: not a
                    // product of inputs, which overflows, nor memory nothing explains).
                    BinOp::Mul
                        if (a.is_zero() && b.surely_finite())
                            || (b.is_zero() && a.surely_finite()) =>
                    {
                        Term::zero()
                    }
                    _ => Term::bin(*op, a, b),
                }
            }
            Term::Select(p, a, b) => match self.decide(facts, p) {
                Some(true) => self.simplify(a, facts),
                Some(false) => self.simplify(b, facts),
                None => {
                    let mut with = facts.to_vec();
                    with.push(p.clone());
                    let a = self.simplify(a, &with);
                    with.pop();
                    with.push(Pred::not(p.clone()));
                    let b = self.simplify(b, &with);
                    if a == b {
                        a
                    } else {
                        Term::Select(p.clone(), Box::new(a), Box::new(b))
                    }
                }
            },
            Term::Max { var, lo, hi, body } => self.simplify_max(var, lo, hi, body, facts),
            Term::Sum { var, lo, hi, body } => {
                if self.decide(facts, &le(hi.clone(), lo.clone())) == Some(true) {
                    return Term::zero();
                }
                if let Some(single) = eliminate(var, lo, hi, body) {
                    return self.simplify(&single, facts);
                }
                let one = IndexExpr::add(lo.clone(), IndexExpr::Const(1));
                if self.decide(facts, &eq(hi.clone(), one)) == Some(true) {
                    return self.simplify(&body.subst(var, lo), facts);
                }
                let mut with = facts.to_vec();
                let v = IndexExpr::var(var.clone());
                with.push(le(lo.clone(), v.clone()));
                with.push(lt(v, hi.clone()));
                let body = self.simplify(body, &with);
                if let Some(single) = eliminate(var, lo, hi, &body) {
                    return self.simplify(&single, facts);
                }
                if let Term::Select(p, x, otherwise) = &body
                    && otherwise.is_zero()
                {
                    // `Σ v. [p ∧ q(v)] x` is `[p] Σ v. [q(v)] x` when `p` does not
                    // mention `v`: the condition becomes visible to case splits.
                    let (outside, inside): (Vec<&Pred>, Vec<&Pred>) =
                        p.conjuncts().into_iter().partition(|c| !c.mentions(var));
                    if !outside.is_empty() {
                        let inner =
                            Term::guarded(conjunction(inside.into_iter().cloned()), (**x).clone());
                        return Term::guarded(
                            conjunction(outside.into_iter().cloned()),
                            Term::Sum {
                                var: var.clone(),
                                lo: lo.clone(),
                                hi: hi.clone(),
                                body: Box::new(inner),
                            },
                        );
                    }
                }
                if body.is_zero() {
                    Term::zero()
                } else {
                    Term::Sum {
                        var: var.clone(),
                        lo: lo.clone(),
                        hi: hi.clone(),
                        body: Box::new(body),
                    }
                }
            }
        }
    }

    /// A max-reduction simplified under `facts`: `-inf` when provably empty, its one
    /// value when the range has one element (`max(-inf, x)` is `x`, NaN included),
    /// otherwise its body simplified under the range. Nothing else: `max` is not
    /// associative on NaN and signed zeros, so terms are never split, reordered or
    /// padded.
    fn simplify_max(
        &mut self,
        var: &str,
        lo: &IndexExpr,
        hi: &IndexExpr,
        body: &Term,
        facts: &[Pred],
    ) -> Term {
        if self.decide(facts, &le(hi.clone(), lo.clone())) == Some(true) {
            return Term::Lit(atl_lang::functions::MAX_EMPTY);
        }
        let one = IndexExpr::add(lo.clone(), IndexExpr::Const(1));
        if self.decide(facts, &eq(hi.clone(), one)) == Some(true) {
            return self.simplify(&body.subst(var, lo), facts);
        }
        let mut with = facts.to_vec();
        let v = IndexExpr::var(var.to_string());
        with.push(le(lo.clone(), v.clone()));
        with.push(lt(v, hi.clone()));
        Term::Max {
            var: var.to_string(),
            lo: lo.clone(),
            hi: hi.clone(),
            body: Box::new(self.simplify(body, &with)),
        }
    }

    /// Two reductions' terms step by step when their ranges are shown equal (the
    /// second's variable renamed to the first's, both bodies simplified knowing the
    /// variable is in range); `None` when the ranges are not shown equal.
    fn equal_steps(
        &mut self,
        (v1, lo1, hi1, b1): (&String, &IndexExpr, &IndexExpr, &Term),
        (v2, lo2, hi2, b2): (&String, &IndexExpr, &IndexExpr, &Term),
        facts: &[Pred],
    ) -> Option<Outcome> {
        let same_range = self.proves(facts, &eq(lo1.clone(), lo2.clone()))
            && self.proves(facts, &eq(hi1.clone(), hi2.clone()));
        if !same_range {
            return None;
        }
        let b2 = b2.subst(v2, &IndexExpr::var(v1.clone()));
        let v = IndexExpr::var(v1.clone());
        let mut with = facts.to_vec();
        with.push(le(lo1.clone(), v.clone()));
        with.push(lt(v, hi1.clone()));
        let x = self.simplify(b1, &with);
        let y = self.simplify(&b2, &with);
        Some(self.equal(&x, &y, &with))
    }

    /// Compares `a` (the kernel's) and `b` (the source's), both simplified under
    /// `facts`.
    fn equal(&mut self, a: &Term, b: &Term, facts: &[Pred]) -> Outcome {
        if a == b && !matches!(a, Term::Unknown(_)) {
            return Outcome::Equal;
        }
        if self.spent() {
            return Outcome::Differs("the check's budget of solver questions is spent".into());
        }
        // Case splits on undecided selections, the kernel's first.
        for (select, other, kernel_side) in [(a, b, true), (b, a, false)] {
            if let Term::Select(p, x, y) = select {
                for (branch, cond) in [(x, p.clone()), (y, Pred::not(p.clone()))] {
                    let mut with = facts.to_vec();
                    with.push(cond);
                    if self.unreachable(&with) {
                        continue;
                    }
                    let branch = self.simplify(branch, &with);
                    let other = self.simplify(other, &with);
                    let outcome = if kernel_side {
                        self.equal(&branch, &other, &with)
                    } else {
                        self.equal(&other, &branch, &with)
                    };
                    if outcome != Outcome::Equal {
                        return outcome;
                    }
                }
                return Outcome::Equal;
            }
        }
        // A selection under an operator: split on its condition.
        if !same_head(a, b)
            && let Some(p) = find_split(a).or_else(|| find_split(b))
        {
            for cond in [p.clone(), Pred::not(p)] {
                let mut with = facts.to_vec();
                with.push(cond);
                if self.unreachable(&with) {
                    continue;
                }
                let x = self.simplify(a, &with);
                let y = self.simplify(b, &with);
                if x == *a && y == *b {
                    // The split decided nothing: no progress.
                    return Outcome::Differs(format!(
                        "the kernel computes {a} where the source has {b}"
                    ));
                }
                let outcome = self.equal(&x, &y, &with);
                if outcome != Outcome::Equal {
                    return outcome;
                }
            }
            return Outcome::Equal;
        }
        match (a, b) {
            (Term::Lit(x), Term::Lit(y)) if x == y => Outcome::Equal,
            // A coordinate equals another, or an integer literal, where their integers
            // are proved equal.
            (Term::Coord(_), _) | (_, Term::Coord(_)) => {
                let equal = match (exact_integer(a), exact_integer(b)) {
                    (Some(x), Some(y)) => self.proves(facts, &eq(x, y)),
                    _ => false,
                };
                if equal {
                    Outcome::Equal
                } else {
                    Outcome::Differs(format!(
                        "the kernel computes {a} where the source has {b} (not shown equal)"
                    ))
                }
            }
            (
                Term::Input {
                    name: n1,
                    coords: c1,
                },
                Term::Input {
                    name: n2,
                    coords: c2,
                },
            ) if n1 == n2 && c1.len() == c2.len() => {
                for (d, (x, y)) in c1.iter().zip(c2).enumerate() {
                    if !self.proves(facts, &eq(x.clone(), y.clone())) {
                        return Outcome::Differs(format!(
                            "the kernel reads {a} where the source reads {b} (coordinate {d} not \
                             shown equal)"
                        ));
                    }
                }
                Outcome::Equal
            }
            (Term::Neg(x), Term::Neg(y)) => self.equal(x, y, facts),
            (Term::Call(f, xs), Term::Call(g, ys)) if f == g && xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    match self.equal(x, y, facts) {
                        Outcome::Equal => {}
                        d => return d,
                    }
                }
                Outcome::Equal
            }
            (Term::Bin(o1, x1, y1), Term::Bin(o2, x2, y2)) if o1 == o2 => {
                match self.equal(x1, x2, facts) {
                    Outcome::Equal => self.equal(y1, y2, facts),
                    d => d,
                }
            }
            (
                Term::Sum {
                    var: v1,
                    lo: lo1,
                    hi: hi1,
                    body: b1,
                },
                Term::Sum {
                    var: v2,
                    lo: lo2,
                    hi: hi2,
                    body: b2,
                },
            ) => {
                if let Some(outcome) =
                    self.equal_steps((v1, lo1, hi1, b1), (v2, lo2, hi2, b2), facts)
                {
                    return outcome;
                }
                // Different ranges: term by term over their union, zero outside each.
                let b2 = b2.subst(v2, &IndexExpr::var(v1.clone()));
                let v = IndexExpr::var(v1.clone());
                let in1 = Pred::and(le(lo1.clone(), v.clone()), lt(v.clone(), hi1.clone()));
                let mut with = facts.to_vec();
                let in2 = Pred::and(le(lo2.clone(), v.clone()), lt(v, hi2.clone()));
                with.push(Pred::or(in1.clone(), in2.clone()));
                let x = self.simplify(&Term::guarded(in1, (**b1).clone()), &with);
                let y = self.simplify(&Term::guarded(in2, b2), &with);
                self.equal(&x, &y, &with)
            }
            // Two max-reductions: the same range and equal values at each step (the
            // fold is in order, so nothing else is equal in general).
            (
                Term::Max {
                    var: v1,
                    lo: lo1,
                    hi: hi1,
                    body: b1,
                },
                Term::Max {
                    var: v2,
                    lo: lo2,
                    hi: hi2,
                    body: b2,
                },
            ) => self
                .equal_steps((v1, lo1, hi1, b1), (v2, lo2, hi2, b2), facts)
                .unwrap_or_else(|| {
                    Outcome::Differs(format!(
                        "the kernel computes {a} where the source has {b} (ranges not shown equal)"
                    ))
                }),
            (Term::Sum { var, lo, hi, body }, z) | (z, Term::Sum { var, lo, hi, body })
                if z.is_zero() =>
            {
                let v = IndexExpr::var(var.clone());
                let mut with = facts.to_vec();
                with.push(le(lo.clone(), v.clone()));
                with.push(lt(v, hi.clone()));
                let x = self.simplify(body, &with);
                self.equal(&x, &Term::zero(), &with)
            }
            _ => Outcome::Differs(format!("the kernel computes {a} where the source has {b}")),
        }
    }
}

/// The integer a coordinate or an integer literal stands for (a literal only where a
/// double holds it exactly).
fn exact_integer(t: &Term) -> Option<IndexExpr> {
    match t {
        Term::Coord(index) => Some(index.clone()),
        Term::Lit(v) if v.fract() == 0.0 && v.abs() <= 9_007_199_254_740_992.0 => {
            Some(IndexExpr::Const(*v as i64))
        }
        _ => None,
    }
}

/// Whether two terms have the same outermost operator (then they are compared
/// operand by operand).
fn same_head(a: &Term, b: &Term) -> bool {
    match (a, b) {
        (Term::Bin(x, ..), Term::Bin(y, ..)) => x == y,
        (Term::Call(f, xs), Term::Call(g, ys)) => f == g && xs.len() == ys.len(),
        (Term::Neg(_), Term::Neg(_))
        | (Term::Sum { .. }, Term::Sum { .. })
        | (Term::Max { .. }, Term::Max { .. })
        | (Term::Lit(_), Term::Lit(_))
        | (Term::Coord(_), Term::Coord(_))
        | (Term::Input { .. }, Term::Input { .. }) => true,
        _ => false,
    }
}

/// The condition of a selection under operators (not under a sum, whose variable it
/// may mention).
fn find_split(t: &Term) -> Option<Pred> {
    match t {
        Term::Select(p, ..) => Some(p.clone()),
        Term::Neg(a) => find_split(a),
        Term::Bin(_, a, b) => find_split(a).or_else(|| find_split(b)),
        Term::Call(_, args) => args.iter().find_map(find_split),
        _ => None,
    }
}

/// A sum whose body is `[… ∧ var == e ∧ …] * x` (with `e` free of `var`, `var`'s
/// coefficient ±1) is its one term: `[lo <= e < hi ∧ …] * x[var := e]`. The guard may
/// also sit under inner sums whose ranges do not mention `var`: `Σ var. Σ u. [var ==
/// e ∧ …] * x` is `Σ u. [lo <= e < hi ∧ …] * x[var := e]` (for each `u`, only the
/// term `var = e` is not zero; the order of the `u` terms is kept).
fn eliminate(var: &str, lo: &IndexExpr, hi: &IndexExpr, body: &Term) -> Option<Term> {
    eliminate_under(var, lo, hi, body, &[])
}

/// [`eliminate`] under the inner sums `inner` (outermost first) already crossed. The
/// terms keep their order only when the value of `var` does not decrease as the inner
/// sums advance: it may mention no inner sum's variable, or only the innermost one,
/// with coefficient 1 (then for each value of `var` there is one term, met in the same
/// order). Otherwise the sum is left alone (compared as it is, or not validated).
fn eliminate_under(
    var: &str,
    lo: &IndexExpr,
    hi: &IndexExpr,
    body: &Term,
    inner: &[&str],
) -> Option<Term> {
    match body {
        Term::Sum {
            var: u,
            lo: lo_u,
            hi: hi_u,
            body: inside,
        } if !lo_u.mentions(var) && !hi_u.mentions(var) => {
            let mut crossed = inner.to_vec();
            crossed.push(u);
            let inside = eliminate_under(var, lo, hi, inside, &crossed)?;
            Some(Term::Sum {
                var: u.clone(),
                lo: lo_u.clone(),
                hi: hi_u.clone(),
                body: Box::new(inside),
            })
        }
        Term::Select(p, x, otherwise) if otherwise.is_zero() => {
            let conjuncts = p.conjuncts();
            let value = conjuncts
                .iter()
                .find_map(|c| match c {
                    Pred::Cmp(CmpOp::Eq, l, r) => {
                        solve_for(var, &IndexExpr::sub(l.clone(), r.clone()))
                    }
                    _ => None,
                })
                .or_else(|| solve_tile(var, &conjuncts))?;
            if !keeps_order(&value, inner) {
                return None;
            }
            let range = Pred::and(le(lo.clone(), value.clone()), lt(value.clone(), hi.clone()));
            Some(Term::Select(
                Pred::and(range, p.subst(var, &value)),
                Box::new(x.subst(var, &value)),
                Box::new(Term::zero()),
            ))
        }
        _ => None,
    }
}

/// Whether `value` mentions none of the crossed sums' variables `inner`, or only the
/// innermost one, linearly with coefficient 1.
fn keeps_order(value: &IndexExpr, inner: &[&str]) -> bool {
    let Some((last, outer)) = inner.split_last() else {
        return true;
    };
    if outer.iter().any(|v| value.mentions(v)) {
        return false;
    }
    if !value.mentions(last) {
        return true;
    }
    let poly = Poly::from_index(value);
    poly.terms().iter().all(|(monomial, c)| {
        let here = monomial.iter().filter(|m| m.mentions(last)).count();
        here == 0 || (monomial.len() == 1 && monomial[0] == IndexExpr::var(*last) && *c == 1)
    })
}

/// `0 <= r - K*var` and `r - K*var < K` among `conjuncts`, with `K` a size or a
/// positive constant (so `K >= 1`) and `r` free of `var`: then `var` is `r / K`
/// (floor division), the one value that satisfies both. A tail tile's bound `x <
/// min(K, N - K*var)` implies `x < K`, and is read as both bounds.
fn solve_tile(var: &str, conjuncts: &[&Pred]) -> Option<IndexExpr> {
    let mut lower: Vec<IndexExpr> = Vec::new();
    let mut upper: Vec<(IndexExpr, IndexExpr)> = Vec::new();
    for c in conjuncts {
        match c {
            Pred::Cmp(CmpOp::Le, z, x) if z.as_const() == Some(0) => lower.push(x.clone()),
            Pred::Cmp(CmpOp::Lt, x, k) => {
                let mut bounds = vec![k];
                while let Some(b) = bounds.pop() {
                    match b {
                        IndexExpr::Bin(atl_lang::index::IndexOp::Min, a, b) => {
                            bounds.push(a);
                            bounds.push(b);
                        }
                        _ => upper.push((x.clone(), b.clone())),
                    }
                }
            }
            _ => {}
        }
    }
    for x in &lower {
        for (y, k) in &upper {
            if !atl_lang::poly::same(x, y) || k.mentions(var) {
                continue;
            }
            let positive = matches!(k, IndexExpr::Var(_)) || k.as_const().is_some_and(|c| c >= 1);
            if !positive {
                continue;
            }
            // x == r - K*var: r = x + K*var must be free of var.
            let r = atl_lang::poly::normalize(&IndexExpr::add(
                x.clone(),
                IndexExpr::mul(k.clone(), IndexExpr::var(var.to_string())),
            ));
            if !r.mentions(var) {
                return Some(IndexExpr::bin(atl_lang::index::IndexOp::Div, r, k.clone()));
            }
        }
    }
    None
}

/// `e == 0` solved for `var` when `e` is `±var + rest` with `rest` free of `var`.
fn solve_for(var: &str, e: &IndexExpr) -> Option<IndexExpr> {
    if !e.mentions(var) {
        return None;
    }
    let poly = Poly::from_index(e);
    let mut coef = None;
    let mut rest = IndexExpr::Const(0);
    for (monomial, c) in poly.terms() {
        let here = monomial.iter().filter(|m| m.mentions(var)).count();
        if here == 0 {
            let product = monomial.iter().cloned().reduce(IndexExpr::mul);
            let t = match product {
                None => IndexExpr::Const(*c),
                Some(p) => IndexExpr::mul(IndexExpr::Const(*c), p),
            };
            rest = IndexExpr::add(rest, t);
        } else if monomial.len() == 1 && monomial[0] == IndexExpr::var(var) && coef.is_none() {
            coef = Some(*c);
        } else {
            return None;
        }
    }
    match coef? {
        1 => Some(atl_lang::poly::normalize(&IndexExpr::Neg(Box::new(rest)))),
        -1 => Some(atl_lang::poly::normalize(&rest)),
        _ => None,
    }
}

/// One assignment of the output: what it is, where, its context, the element it
/// writes, the value it stores and its position in program order.
struct Case<'w> {
    what: String,
    location: String,
    facts: Vec<Pred>,
    coords: Vec<IndexExpr>,
    stored: Term,
    pos: Position<'w>,
}

/// The value obligations of a kernel: one per assignment of the output (a store or a
/// fill at the top of the kernel).
pub fn check(
    walk: &Walk,
    source: &mut SourceEval<'_>,
    def: &str,
    solver: &Solver,
    cancelled: &dyn Fn() -> bool,
) -> Vec<CheckedObligation> {
    let out = &walk.bindings[walk.output];
    let mut kernel = Kernel {
        walk,
        solver,
        fresh: 0,
        size: 0,
    };
    let mut cmp = Comparison {
        solver,
        sizes: walk.sizes.clone(),
        arrays: walk.arrays.clone(),
        questions: 0,
        cancelled,
    };
    let mut results = Vec::new();
    let no_subst = Subst::new();
    // (what, facts, coordinates, the kernel's value there, where the assignment is)
    let mut cases: Vec<Case<'_>> = Vec::new();
    for s in walk
        .sites
        .iter()
        .filter(|s| s.binding == walk.output && s.op == Some(StoreOp::Assign))
    {
        kernel.size = 0;
        let value = kernel.stored(s, &no_subst, 0);
        let pos = Position {
            path: &s.path,
            loops: &s.loops,
            subst: &no_subst,
        };
        cases.push(Case {
            what: s.access.to_string(),
            location: s.location.clone(),
            facts: s.facts.clone(),
            coords: s.coords.clone(),
            stored: value,
            pos,
        });
    }
    for (k, f) in walk
        .fills
        .iter()
        .filter(|f| f.binding == walk.output)
        .enumerate()
    {
        let coords: Vec<IndexExpr> = (0..out.shape.len())
            .map(|d| IndexExpr::var(coordinate(d)))
            .collect();
        let mut facts = f.facts.clone();
        for (c, n) in coords.iter().zip(&out.shape) {
            facts.push(crate::source::in_range(c, n));
        }
        facts.push(lt(row_major(&coords, &out.shape), f.len.clone()));
        let value = if f.loops.is_empty() {
            Term::Lit(f.value)
        } else {
            Term::Unknown("a fill of the output inside loops".into())
        };
        let pos = Position {
            path: &f.path,
            loops: &f.loops,
            subst: &no_subst,
        };
        cases.push(Case {
            what: format!("fill #{k} of `{}`", out.name),
            location: String::new(),
            facts,
            coords,
            stored: value,
            pos,
        });
    }
    for Case {
        what,
        location,
        facts,
        coords,
        stored,
        pos,
    } in cases
    {
        kernel.size = 0;
        // Whichever assignment of the element runs last, the element ends with its
        // value plus the `+=`s after it: so one obligation per assignment, each with
        // the `+=`s that follow it, proves the final value whatever the order.
        let mut value = stored;
        for a in kernel.accumulations(walk.output, &coords, &None, Some(&pos), &no_subst, 0) {
            value = Term::bin(BinOp::Add, value, a);
        }
        let expected = source.element_of_def(def, &coords);
        let verdict = match expected {
            Err(why) => Verdict::Unknown(format!("the source's element is out of reach: {why}")),
            Ok(expected) => {
                let k = cmp.simplify(&value, &facts);
                let s = cmp.simplify(&expected, &facts);
                match cmp.equal(&k, &s, &facts) {
                    Outcome::Equal => Verdict::Proved,
                    Outcome::Differs(why) => Verdict::Unknown(why),
                }
            }
        };
        results.push(CheckedObligation {
            obligation: Obligation {
                kind: ObligationKind::Value { write: what },
                location,
                context: Facts {
                    sizes: walk.sizes.clone(),
                    facts,
                    arrays: walk.arrays.clone(),
                },
                goal: Pred::Bool(true),
                lemma: None,
            },
            verdict,
            method: Method::Solver,
        });
    }
    results
}
