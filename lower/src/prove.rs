//! The facts lowering reasons with, and the questions it asks the solver.
//!
//! Lowering keeps a stack of facts — sizes `>= 1`, the program's `assume`s, the range
//! of every enclosing loop, the guards of enclosing `if`s — and asks
//! [`atl_solver::Solver`] whether a condition holds there. A "proved" lets it drop a
//! bounds check or a guard, or use C's `/`; anything else keeps the check. An answer
//! of "unknown" is therefore always safe, only slower, which is why lowering uses the
//! solver's fast path by default (microseconds per query) and z3 only on request.

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::Program;
use atl_lang::poly::normalize;
use atl_solver::{Facts, Solver, simplify_index};

/// What is known of a condition at a program point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Residual {
    True,
    False,
    /// What remains to check at run time (the unproved conjuncts).
    Check(Pred),
}

pub(crate) struct Prover<'a> {
    solver: &'a Solver,
    sizes: Vec<String>,
    /// `assume` facts.
    base: Vec<Pred>,
    /// The declarations of the program's index arrays.
    arrays: Vec<atl_solver::IndexArrayFacts>,
    /// Loop ranges and guards, outermost first.
    stack: Vec<Pred>,
}

impl<'a> Prover<'a> {
    pub(crate) fn new(program: &Program, solver: &'a Solver) -> Prover<'a> {
        Prover {
            solver,
            sizes: program.sizes.iter().map(|s| s.name.clone()).collect(),
            base: program.assumes.iter().map(|a| a.pred.clone()).collect(),
            arrays: atl_solver::IndexArrayFacts::of_program(program),
            stack: Vec::new(),
        }
    }

    fn facts(&self, with_stack: bool) -> Facts {
        let mut facts = self.base.clone();
        if with_stack {
            facts.extend(self.stack.iter().cloned());
        }
        Facts {
            sizes: self.sizes.clone(),
            facts,
            arrays: self.arrays.clone(),
        }
    }

    /// Removes the context (loop ranges, guards), leaving the global facts; for
    /// conditions that are evaluated outside every loop.
    pub(crate) fn take_context(&mut self) -> Vec<Pred> {
        std::mem::take(&mut self.stack)
    }

    pub(crate) fn restore_context(&mut self, stack: Vec<Pred>) {
        self.stack = stack;
    }

    pub(crate) fn push(&mut self, p: Pred) {
        self.stack.push(p);
    }

    pub(crate) fn pop(&mut self) {
        self.stack.pop();
    }

    /// Pushes `lo <= var < hi`.
    pub(crate) fn push_range(&mut self, var: &str, lo: &IndexExpr, hi: &IndexExpr) {
        let v = IndexExpr::var(var);
        self.push(Pred::and(
            Pred::cmp(CmpOp::Le, lo.clone(), v.clone()),
            Pred::cmp(CmpOp::Lt, v, hi.clone()),
        ));
    }

    /// Whether `p` holds at this point.
    pub(crate) fn proves(&self, p: &Pred) -> bool {
        match p {
            Pred::Bool(b) => *b,
            _ => self.solver.prove(&self.facts(true), p).is_proved(),
        }
    }

    /// Whether `p` holds for all sizes satisfying the `assume`s (ignoring the context).
    pub(crate) fn proves_globally(&self, p: &Pred) -> bool {
        match p {
            Pred::Bool(b) => *b,
            _ => self.solver.prove(&self.facts(false), p).is_proved(),
        }
    }

    /// What remains of `p` here: conjuncts that are proved are dropped; a refuted
    /// conjunct makes the whole condition false.
    pub(crate) fn residual(&self, p: &Pred) -> Residual {
        let mut keep: Vec<Pred> = Vec::new();
        for c in p.conjuncts() {
            if self.proves(c) {
                continue;
            }
            if self.proves(&negate(c)) {
                return Residual::False;
            }
            keep.push(c.clone());
        }
        match keep.into_iter().reduce(Pred::and) {
            None => Residual::True,
            Some(p) => Residual::Check(p),
        }
    }

    /// `e` in normal form, with division and modulo simplified by the solver's rules
    /// under the current facts (so that `split`/`flatten` index algebra collapses).
    pub(crate) fn simplify(&self, e: &IndexExpr) -> IndexExpr {
        let e = normalize(e);
        if has_division(&e) {
            simplify_index(&e, &self.facts(true), self.solver)
        } else {
            e
        }
    }

    /// An extent as used for storage: `d` if it is provably non-negative for every
    /// valid size, else `max(0, d)` (the interpreter clamps empty ranges to 0).
    pub(crate) fn clamp(&self, d: &IndexExpr) -> IndexExpr {
        let d = normalize(d);
        let d = if has_division(&d) {
            simplify_index(&d, &self.facts(false), self.solver)
        } else {
            d
        };
        if self.proves_globally(&Pred::cmp(CmpOp::Ge, d.clone(), IndexExpr::Const(0))) {
            d
        } else {
            IndexExpr::bin(IndexOp::Max, IndexExpr::Const(0), d)
        }
    }
}

/// Whether an index expression divides (the simplifier's rules only matter then).
pub(crate) fn has_division(e: &IndexExpr) -> bool {
    match e {
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => false,
        IndexExpr::Neg(a) | IndexExpr::Load(_, a) => has_division(a),
        IndexExpr::Bin(op, a, b) => {
            matches!(op, IndexOp::Div | IndexOp::Mod | IndexOp::CDiv)
                || has_division(a)
                || has_division(b)
        }
    }
}

/// The negation of a predicate, pushing `!` into comparisons.
pub(crate) fn negate(p: &Pred) -> Pred {
    match p {
        Pred::Bool(b) => Pred::Bool(!b),
        Pred::Cmp(op, a, b) => Pred::Cmp(op.negate(), a.clone(), b.clone()),
        Pred::Not(a) => (**a).clone(),
        Pred::And(a, b) => Pred::or(negate(a), negate(b)),
        Pred::Or(a, b) => Pred::and(negate(a), negate(b)),
    }
}
