//! The fast path of the prover: linear reasoning over polynomial normal forms and
//! interval bounds, answering "proved" for the common side conditions of a
//! derivation in microseconds, and "don't know" (never "false") otherwise.
//!
//! Method. Every comparison is normalized with [`atl_lang::poly::Poly`] into a linear
//! form `c0 + Σ aᵢ·mᵢ >= 0` over *monomials* `mᵢ` (variables, products, and opaque
//! `/ % cdiv min max` atoms). The hypotheses are the facts, the sizes (`n >= 1`) and
//! *definitional facts* of the atoms (for `q = a / k`, `k > 0`: `a - k·q >= 0` and
//! `k·q - a + k - 1 >= 0`; for `m = min(a, b)`: `a - m >= 0`, `b - m >= 0`; …).
//! A divisor that is one monomial `c·m` (`n`, `2·n`, `n·k`) splits the numerator as
//! a polynomial identity `a = b·Q + R` (the terms of `a` that `c·m` divides, and the
//! rest): then `a % b = R % b` for every `b` (for `b = 0` both are `R`, as `x % 0 = x`),
//! and `a / b = Q + R / b` once `b >= 1` is known; so `n·x % n = 0` without z3.
//! A goal `d >= 0` is proved when
//!
//! 1. its interval lower bound is `>= 0`, with monomial intervals from single-term
//!    facts, bound propagation through multi-term facts and interval arithmetic on
//!    atoms; or
//! 2. eliminating a monomial `m` with a hypothesis `f >= 0` (coefficients `a` in `d`
//!    and `b` in `f` of the same sign) leaves `r = |b|·d + (|b| - 1) - |a|·f` that is
//!    proved `>= 0` recursively: then `|b|·d > -|b|`, so the integer `d` is `>= 0`.
//!    The search is depth- and node-bounded.
//!
//! Every step is a valid inference over the integers, so a "proved" here is a proof;
//! everything else falls through to z3.
//!
//! Overflow. Coefficients and bounds are `i128` and every operation on them is
//! checked (`checked_*`, never `+ - * / abs` on values, which wrap in release builds):
//! an overflow drops the bound, the fact or the elimination step it would have
//! produced. Dropping is always sound (fewer hypotheses, weaker bounds); a wrapped
//! value could turn a huge bound into a contradiction and "prove" anything.

use std::collections::HashMap;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::poly::{Monomial, Poly};

use crate::query::Facts;

/// Maximum elimination depth and number of search nodes per obligation. Sized so that
/// a failing search costs tens of microseconds, far below a z3 call.
const MAX_DEPTH: u32 = 5;
const MAX_NODES: u32 = 300;
/// Rounds of bound propagation (bounds can keep improving around cycles of facts).
const PROPAGATION_ROUNDS: usize = 4;

/// `c0 + Σ coef·monomial`, meaning `>= 0` when used as a fact or an obligation.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Lin {
    c0: i128,
    /// Sorted by monomial id; no zero coefficients.
    terms: Vec<(usize, i128)>,
}

impl Lin {
    fn constant(c: i128) -> Lin {
        Lin {
            c0: c,
            terms: Vec::new(),
        }
    }

    fn coef(&self, id: usize) -> i128 {
        self.terms
            .binary_search_by_key(&id, |(m, _)| *m)
            .map(|i| self.terms[i].1)
            .unwrap_or(0)
    }

    /// `ka·self + kb·other + extra`, or `None` on overflow.
    fn combine(&self, ka: i128, other: &Lin, kb: i128, extra: i128) -> Option<Lin> {
        let mut terms = Vec::with_capacity(self.terms.len() + other.terms.len());
        let (mut i, mut j) = (0, 0);
        while i < self.terms.len() || j < other.terms.len() {
            let next = match (self.terms.get(i), other.terms.get(j)) {
                (Some(&(m, a)), Some(&(n, _))) if m < n => {
                    i += 1;
                    (m, a.checked_mul(ka)?)
                }
                (Some(&(m, _)), Some(&(n, b))) if n < m => {
                    j += 1;
                    (n, b.checked_mul(kb)?)
                }
                (Some(&(m, a)), Some(&(_, b))) => {
                    i += 1;
                    j += 1;
                    (m, a.checked_mul(ka)?.checked_add(b.checked_mul(kb)?)?)
                }
                (Some(&(m, a)), None) => {
                    i += 1;
                    (m, a.checked_mul(ka)?)
                }
                (None, Some(&(n, b))) => {
                    j += 1;
                    (n, b.checked_mul(kb)?)
                }
                (None, None) => unreachable!(),
            };
            if next.1 != 0 {
                terms.push(next);
            }
        }
        let c0 = self
            .c0
            .checked_mul(ka)?
            .checked_add(other.c0.checked_mul(kb)?)?
            .checked_add(extra)?;
        Some(Lin { c0, terms })
    }

    fn sub(&self, other: &Lin) -> Option<Lin> {
        self.combine(1, other, -1, 0)
    }

    fn plus(&self, c: i128) -> Option<Lin> {
        Some(Lin {
            c0: self.c0.checked_add(c)?,
            terms: self.terms.clone(),
        })
    }

    fn neg(&self) -> Option<Lin> {
        self.combine(-1, &Lin::constant(0), 0, 0)
    }

    /// Divides by the gcd of the coefficients, rounding the constant down: for integer
    /// monomials `Σ g·aᵢ·mᵢ + c >= 0` iff `Σ aᵢ·mᵢ + floor(c/g) >= 0`. Left as is when
    /// a coefficient has no absolute value in `i128` (an equivalent form either way).
    fn tighten(mut self) -> Lin {
        let Some(g) = self
            .terms
            .iter()
            .try_fold(0i128, |g, (_, a)| Some(gcd(g, a.checked_abs()?)))
        else {
            return self;
        };
        if g > 1 {
            for t in &mut self.terms {
                t.1 /= g;
            }
            self.c0 = self.c0.div_euclid(g);
        }
        self
    }
}

/// The gcd of two non-negative numbers (then no operation here can overflow).
fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// A closed interval; `None` is unbounded on that side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Interval {
    lo: Option<i128>,
    hi: Option<i128>,
}

impl Interval {
    const TOP: Interval = Interval { lo: None, hi: None };

    fn point(c: i128) -> Interval {
        Interval {
            lo: Some(c),
            hi: Some(c),
        }
    }

    fn new(lo: Option<i128>, hi: Option<i128>) -> Interval {
        Interval { lo, hi }
    }

    /// Both intervals hold, so the value is in their intersection.
    fn meet(self, other: Interval) -> Interval {
        let lo = match (self.lo, other.lo) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let hi = match (self.hi, other.hi) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Interval { lo, hi }
    }

    fn scale(self, k: i128) -> Interval {
        let mul = |x: Option<i128>| x.and_then(|x| x.checked_mul(k));
        if k >= 0 {
            Interval::new(mul(self.lo), mul(self.hi))
        } else {
            Interval::new(mul(self.hi), mul(self.lo))
        }
    }

    fn add(self, other: Interval) -> Interval {
        let add = |a: Option<i128>, b: Option<i128>| a?.checked_add(b?);
        Interval::new(add(self.lo, other.lo), add(self.hi, other.hi))
    }

    fn mul(self, other: Interval) -> Interval {
        if let (Some(a), Some(b), Some(c), Some(d)) = (self.lo, self.hi, other.lo, other.hi) {
            let corners = [
                a.checked_mul(c),
                a.checked_mul(d),
                b.checked_mul(c),
                b.checked_mul(d),
            ];
            if corners.iter().all(Option::is_some) {
                let vals = corners.map(Option::unwrap);
                return Interval::point(vals[0]).hull_all(&vals);
            }
            return Interval::TOP;
        }
        // With an unbounded side, only the non-negative case is easy and common
        // (products of sizes and in-range indices).
        match (self.lo, other.lo) {
            (Some(a), Some(c)) if a >= 0 && c >= 0 => {
                let hi = match (self.hi, other.hi) {
                    (Some(b), Some(d)) => b.checked_mul(d),
                    _ => None,
                };
                Interval::new(a.checked_mul(c), hi)
            }
            _ => Interval::TOP,
        }
    }

    fn hull_all(self, vals: &[i128]) -> Interval {
        let lo = vals.iter().copied().min();
        let hi = vals.iter().copied().max();
        Interval::new(lo, hi)
    }

    fn is_empty(self) -> bool {
        matches!((self.lo, self.hi), (Some(a), Some(b)) if a > b)
    }
}

/// `floor(a / k)` for `k != 0`; `None` on overflow (`i128::MIN / -1`).
fn floor_div_i(a: i128, k: i128) -> Option<i128> {
    let q = a.checked_div(k)?;
    if (a.checked_rem(k)? != 0) && ((a < 0) != (k < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// `ceil(a / k)` for `k != 0`; `None` on overflow.
fn ceil_div_i(a: i128, k: i128) -> Option<i128> {
    floor_div_i(a.checked_neg()?, k)?.checked_neg()
}

/// A goal decomposed into linear obligations.
enum Goal {
    Const(bool),
    /// `lin >= 0`
    NonNeg(Lin),
    /// `lin == 0`
    Zero(Lin),
    /// `lin != 0`
    NonZero(Lin),
    And(Vec<Goal>),
    Or(Vec<Goal>),
}

/// Atoms whose definitional facts depend on bounds of a symbolic divisor.
struct Deferred {
    id: usize,
    op: IndexOp,
    num: Lin,
    den: Lin,
    /// The numerator and divisor as written.
    a: IndexExpr,
    b: IndexExpr,
}

/// Splits `a` as `b·Q + R` when the divisor `b` is one monomial `c·m` (`n`, `2·n`,
/// `n·k`): `Q` collects the terms of `a` whose monomial contains `m` and whose
/// coefficient is a multiple of `c`, `R` the others. `None` when no term of `a` is such
/// a multiple, or `b` is not a single non-constant monomial. An identity of
/// polynomials, so it holds for every value of the variables, `b = 0` included.
fn split_multiple(a: &IndexExpr, b: &IndexExpr) -> Option<(Poly, Poly)> {
    let pb = Poly::from_index(b);
    let [(m, &c)] = pb.terms().iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    if m.is_empty() {
        return None;
    }
    let mut quotient = Poly::zero();
    let mut rest = Poly::zero();
    for (term, &k) in Poly::from_index(a).terms() {
        // The factors of `term` left after removing those of `m` (a multiset: both
        // are sorted), if `m` divides `term`.
        let mut left = term.clone();
        let divides = m.iter().all(|f| match left.iter().position(|g| g == f) {
            Some(i) => {
                left.remove(i);
                true
            }
            None => false,
        });
        let (sum, t) = match k.checked_rem(c) {
            Some(0) if divides => (&mut quotient, term_expr(&left, k.checked_div(c)?)),
            _ => (&mut rest, term_expr(term, k)),
        };
        *sum = Poly::from_index(&IndexExpr::add(sum.to_index(), t));
    }
    (!quotient.is_zero()).then_some((quotient, rest))
}

/// `R % b` or `R / b`; `0` when `R` is zero (`0 % b = 0 / b = 0` for every `b`, and as
/// an atom `0 % b` would be opaque).
fn remainder_part(op: IndexOp, rest: &Poly, b: &IndexExpr) -> IndexExpr {
    if rest.is_zero() {
        IndexExpr::Const(0)
    } else {
        IndexExpr::bin(op, rest.to_index(), b.clone())
    }
}

/// The index expression `k·f₁·…·fₙ`.
fn term_expr(factors: &[IndexExpr], k: i64) -> IndexExpr {
    factors
        .iter()
        .cloned()
        .fold(IndexExpr::Const(k), IndexExpr::mul)
}

/// What a monomial is, for interval arithmetic.
#[derive(Clone)]
enum Kind {
    /// A variable (or an atom without structure we use).
    Leaf,
    /// `op(a, b)` with the linear forms of its arguments.
    Atom(IndexOp, Lin, Lin),
    /// A product of the given single-factor monomials.
    Product(Vec<usize>),
}

#[derive(Default)]
struct Fast {
    monos: Vec<Monomial>,
    kinds: Vec<Kind>,
    ids: HashMap<Monomial, usize>,
    /// Monomials registered but whose atom facts are not generated yet.
    pending: Vec<usize>,
    facts: Vec<Lin>,
    deferred: Vec<Deferred>,
    bounds: Vec<Interval>,
    /// The hypotheses are contradictory: every goal holds.
    inconsistent: bool,
}

impl Fast {
    fn mono_id(&mut self, m: &Monomial) -> usize {
        if let Some(&id) = self.ids.get(m) {
            return id;
        }
        let id = self.monos.len();
        self.monos.push(m.clone());
        self.kinds.push(Kind::Leaf);
        self.ids.insert(m.clone(), id);
        self.pending.push(id);
        id
    }

    fn lin_of_poly(&mut self, p: &Poly) -> Option<Lin> {
        let mut c0 = 0i128;
        let mut terms = Vec::new();
        for (m, c) in p.terms() {
            if m.is_empty() {
                c0 = i128::from(*c);
            } else {
                terms.push((self.mono_id(m), i128::from(*c)));
            }
        }
        terms.sort_unstable();
        Some(Lin { c0, terms })
    }

    fn lin(&mut self, e: &IndexExpr) -> Option<Lin> {
        self.lin_of_poly(&Poly::from_index(e))
    }

    /// `b - a` for the comparison `a op b`, or `None` when it cannot be linearized.
    fn diff(&mut self, a: &IndexExpr, b: &IndexExpr) -> Option<Lin> {
        let la = self.lin(a)?;
        let lb = self.lin(b)?;
        lb.sub(&la)
    }

    fn add_fact(&mut self, l: Lin) {
        if l.terms.is_empty() {
            if l.c0 < 0 {
                self.inconsistent = true;
            }
            return;
        }
        self.facts.push(l.tighten());
    }

    fn add_cmp(&mut self, op: CmpOp, a: &IndexExpr, b: &IndexExpr) {
        let Some(d) = self.diff(a, b) else { return };
        // d = b - a
        let facts = match op {
            CmpOp::Le => vec![Some(d)],
            CmpOp::Lt => vec![d.plus(-1)],
            CmpOp::Ge => vec![d.neg()],
            CmpOp::Gt => vec![d.neg().and_then(|n| n.plus(-1))],
            CmpOp::Eq => vec![d.neg(), Some(d)],
            // A disequality is a disjunction: not usable by linear reasoning.
            CmpOp::Ne => vec![],
        };
        for f in facts.into_iter().flatten() {
            self.add_fact(f);
        }
    }

    fn add_hyp(&mut self, p: &Pred, positive: bool) {
        match p {
            Pred::Bool(b) => {
                if *b != positive {
                    self.inconsistent = true;
                }
            }
            Pred::Cmp(op, a, b) => {
                let op = if positive { *op } else { op.negate() };
                self.add_cmp(op, a, b);
            }
            Pred::And(a, b) if positive => {
                self.add_hyp(a, true);
                self.add_hyp(b, true);
            }
            Pred::Or(a, b) if !positive => {
                self.add_hyp(a, false);
                self.add_hyp(b, false);
            }
            Pred::Not(a) => self.add_hyp(a, !positive),
            // A disjunction as a hypothesis is dropped: weaker hypotheses stay sound.
            Pred::And(..) | Pred::Or(..) => {}
        }
    }

    fn goal(&mut self, p: &Pred, positive: bool) -> Goal {
        match p {
            Pred::Bool(b) => Goal::Const(*b == positive),
            Pred::Cmp(op, a, b) => {
                let op = if positive { *op } else { op.negate() };
                let Some(d) = self.diff(a, b) else {
                    return Goal::Const(false);
                };
                let lin = match op {
                    CmpOp::Le => Some(Goal::NonNeg(d)),
                    CmpOp::Lt => d.plus(-1).map(Goal::NonNeg),
                    CmpOp::Ge => d.neg().map(Goal::NonNeg),
                    CmpOp::Gt => d.neg().and_then(|n| n.plus(-1)).map(Goal::NonNeg),
                    CmpOp::Eq => Some(Goal::Zero(d)),
                    CmpOp::Ne => Some(Goal::NonZero(d)),
                };
                lin.unwrap_or(Goal::Const(false))
            }
            Pred::And(a, b) if positive => Goal::And(vec![self.goal(a, true), self.goal(b, true)]),
            Pred::Or(a, b) if !positive => {
                Goal::And(vec![self.goal(a, false), self.goal(b, false)])
            }
            Pred::Or(a, b) => Goal::Or(vec![self.goal(a, true), self.goal(b, true)]),
            Pred::And(a, b) => Goal::Or(vec![self.goal(a, false), self.goal(b, false)]),
            Pred::Not(a) => self.goal(a, !positive),
        }
    }

    /// Generates definitional facts for newly registered atoms, until no new
    /// monomial appears. Atom arguments are smaller than the atom, so this ends.
    fn close_atoms(&mut self) {
        while let Some(id) = self.pending.pop() {
            let m = self.monos[id].clone();
            if m.len() > 1 {
                // A product: register the factors so that intervals can multiply.
                let factors = m.iter().map(|f| self.mono_id(&vec![f.clone()])).collect();
                self.kinds[id] = Kind::Product(factors);
                continue;
            }
            let IndexExpr::Bin(op, a, b) = &m[0] else {
                continue;
            };
            let (Some(la), Some(lb)) = (self.lin(a), self.lin(b)) else {
                continue;
            };
            self.kinds[id] = Kind::Atom(*op, la.clone(), lb.clone());
            let q = Lin {
                c0: 0,
                terms: vec![(id, 1)],
            };
            match (op, b.as_const()) {
                (IndexOp::Min | IndexOp::Max, _) => {
                    let (x, y) = if *op == IndexOp::Min {
                        (la.sub(&q), lb.sub(&q))
                    } else {
                        (q.sub(&la), q.sub(&lb))
                    };
                    for f in [x, y].into_iter().flatten() {
                        self.add_fact(f);
                    }
                }
                (IndexOp::Div | IndexOp::CDiv | IndexOp::Mod, Some(0)) => {
                    // a / 0 = 0, cdiv(a, 0) = 0, a % 0 = a.
                    let v = if *op == IndexOp::Mod {
                        la.sub(&q)
                    } else {
                        q.neg()
                    };
                    if let Some(v) = v {
                        self.add_eq(v);
                    }
                }
                (IndexOp::Div, Some(k)) => self.div_facts(&la, &q, i128::from(k)),
                (IndexOp::CDiv, Some(k)) => {
                    // cdiv(a, k) = -((-a) / k)
                    if let (Some(na), Some(nq)) = (la.neg(), q.neg()) {
                        self.div_facts(&na, &nq, i128::from(k));
                    }
                }
                (IndexOp::Mod, Some(k)) => {
                    // r = a - k * (a / k), with the quotient as an atom of its own.
                    let quotient = IndexExpr::bin(IndexOp::Div, (**a).clone(), (**b).clone());
                    if let Some(lq) = self.lin(&quotient)
                        && let Some(v) = la.combine(1, &lq, -i128::from(k), 0)
                        && let Some(v) = v.sub(&q)
                    {
                        self.add_eq(v);
                    }
                }
                (IndexOp::Div | IndexOp::Mod, None) => {
                    if *op == IndexOp::Mod
                        && let Some((_, rest)) = split_multiple(a, b)
                    {
                        // a = b·Q + R, so a % b = R % b for every b: for b = 0 the
                        // multiple b·Q is 0 and both sides are R (`x % 0 = x`).
                        let r = remainder_part(IndexOp::Mod, &rest, b);
                        if let Some(lr) = self.lin(&r)
                            && let Some(v) = lr.sub(&q)
                        {
                            self.add_eq(v);
                        }
                    }
                    self.deferred.push(Deferred {
                        id,
                        op: *op,
                        num: la,
                        den: lb,
                        a: (**a).clone(),
                        b: (**b).clone(),
                    })
                }
                _ => {}
            }
        }
    }

    fn add_eq(&mut self, v: Lin) {
        if let Some(n) = v.neg() {
            self.add_fact(n);
        }
        self.add_fact(v);
    }

    /// Facts of `q = a / k` for a non-zero constant `k`, via a positive divisor:
    /// `a / k = (-a) / (-k)`.
    fn div_facts(&mut self, a: &Lin, q: &Lin, k: i128) {
        let (a, k) = if k > 0 {
            (a.clone(), k)
        } else {
            match (a.neg(), k.checked_neg()) {
                (Some(n), Some(k)) => (n, k),
                _ => return,
            }
        };
        // k*q <= a <= k*q + k - 1
        if let Some(f) = a.combine(1, q, -k, 0) {
            self.add_fact(f);
        }
        if let Some(f) = k.checked_sub(1).and_then(|k1| q.combine(k, &a, -1, k1)) {
            self.add_fact(f);
        }
    }

    fn interval_of(&self, l: &Lin) -> Interval {
        let mut acc = Interval::point(l.c0);
        for (m, a) in &l.terms {
            acc = acc.add(self.bounds[*m].scale(*a));
        }
        acc
    }

    /// The interval an atom or product takes by construction, from its arguments.
    fn structural(&self, id: usize) -> Interval {
        let (op, la, lb) = match &self.kinds[id] {
            Kind::Leaf => return Interval::TOP,
            Kind::Product(factors) => {
                if factors.len() == 2 && factors[0] == factors[1] {
                    return Interval::new(Some(0), None);
                }
                return factors
                    .iter()
                    .fold(Interval::point(1), |acc, f| acc.mul(self.bounds[*f]));
            }
            Kind::Atom(op, la, lb) => (*op, la, lb),
        };
        let ia = self.interval_of(la);
        let ib = self.interval_of(lb);
        let k = lb.terms.is_empty().then_some(lb.c0);
        match (op, k) {
            (IndexOp::Div | IndexOp::CDiv, Some(0)) => Interval::point(0),
            (IndexOp::Mod, Some(0)) => ia,
            (IndexOp::Div, Some(k)) => {
                let f = |x: Option<i128>| x.and_then(|x| floor_div_i(x, k));
                if k > 0 {
                    Interval::new(f(ia.lo), f(ia.hi))
                } else {
                    Interval::new(f(ia.hi), f(ia.lo))
                }
            }
            (IndexOp::CDiv, Some(k)) => {
                let f = |x: Option<i128>| x.and_then(|x| ceil_div_i(x, k));
                if k > 0 {
                    Interval::new(f(ia.lo), f(ia.hi))
                } else {
                    Interval::new(f(ia.hi), f(ia.lo))
                }
            }
            (IndexOp::Mod, Some(k)) => {
                let range = if k > 0 {
                    Interval::new(Some(0), k.checked_sub(1))
                } else {
                    Interval::new(k.checked_add(1), Some(0))
                };
                // An argument already inside the range is unchanged by `%`.
                match (ia.lo, ia.hi) {
                    (Some(lo), Some(hi)) if range.lo <= Some(lo) && Some(hi) <= range.hi => ia,
                    _ => range,
                }
            }
            (IndexOp::Mod, None) => match ib.lo {
                Some(blo) if blo >= 1 => {
                    let range = Interval::new(Some(0), ib.hi.and_then(|h| h.checked_sub(1)));
                    match (ia.lo, ia.hi) {
                        (Some(lo), Some(hi)) if lo >= 0 && hi < blo => ia,
                        _ => range,
                    }
                }
                _ => Interval::TOP,
            },
            (IndexOp::Div, None) => match ib.lo {
                // For b >= 1: a >= 0 gives 0 <= a/b <= a/lo(b); a < 0 gives a <= a/b <= -1.
                Some(blo) if blo >= 1 => {
                    let lo = ia.lo.map(|l| l.min(0));
                    let hi = ia.hi.and_then(|h| {
                        if h >= 0 {
                            floor_div_i(h, blo)
                        } else {
                            Some(-1)
                        }
                    });
                    Interval::new(lo, hi)
                }
                _ => Interval::TOP,
            },
            (IndexOp::Min, _) => {
                let lo = match (ia.lo, ib.lo) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    _ => None,
                };
                let hi = match (ia.hi, ib.hi) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                };
                Interval::new(lo, hi)
            }
            (IndexOp::Max, _) => {
                let lo = match (ia.lo, ib.lo) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                };
                let hi = match (ia.hi, ib.hi) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    _ => None,
                };
                Interval::new(lo, hi)
            }
            _ => Interval::TOP,
        }
    }

    fn grow_bounds(&mut self) {
        if self.bounds.len() < self.monos.len() {
            self.bounds.resize(self.monos.len(), Interval::TOP);
        }
    }

    /// Tightens monomial bounds from one fact `Σ aᵢ·mᵢ + c >= 0`:
    /// `aⱼ·mⱼ >= -(c + Σ_{i≠j} max(aᵢ·mᵢ))`. A bound whose computation overflows is
    /// not produced (issue 17: a wrapped `total - u` made consistent facts look
    /// contradictory, and then every goal was "proved").
    fn propagate(&mut self, f: usize) -> bool {
        let fact = &self.facts[f];
        let uppers: Vec<Option<i128>> = fact
            .terms
            .iter()
            .map(|(m, a)| self.bounds[*m].scale(*a).hi)
            .collect();
        let unbounded = uppers.iter().filter(|u| u.is_none()).count();
        if unbounded > 1 {
            return false;
        }
        let Some(total) = uppers
            .iter()
            .flatten()
            .try_fold(fact.c0, |acc, u| acc.checked_add(*u))
        else {
            return false;
        };
        let mut updates = Vec::new();
        for (j, (m, a)) in fact.terms.iter().enumerate() {
            let rest = match uppers[j] {
                Some(u) if unbounded == 0 => total.checked_sub(u),
                None => Some(total),
                _ => continue,
            };
            // a·m >= -rest
            let bound = if *a > 0 {
                rest.and_then(i128::checked_neg)
                    .and_then(|r| ceil_div_i(r, *a))
                    .map(|lo| Interval::new(Some(lo), None))
            } else {
                rest.zip(a.checked_neg())
                    .and_then(|(r, na)| floor_div_i(r, na))
                    .map(|hi| Interval::new(None, Some(hi)))
            };
            if let Some(bound) = bound {
                updates.push((*m, bound));
            }
        }
        let mut changed = false;
        for (m, b) in updates {
            let new = self.bounds[m].meet(b);
            if new != self.bounds[m] {
                self.bounds[m] = new;
                changed = true;
            }
        }
        changed
    }

    fn compute_bounds(&mut self) {
        self.grow_bounds();
        for _ in 0..PROPAGATION_ROUNDS {
            let mut changed = false;
            for f in 0..self.facts.len() {
                changed |= self.propagate(f);
            }
            for id in 0..self.monos.len() {
                let s = self.structural(id);
                let new = self.bounds[id].meet(s);
                if new != self.bounds[id] {
                    self.bounds[id] = new;
                    changed = true;
                }
            }
            if self.bounds.iter().any(|b| b.is_empty()) {
                self.inconsistent = true;
                return;
            }
            if !changed {
                break;
            }
        }
    }

    /// Definitional facts for `/` and `%` by a symbolic divisor known to be `>= 1`.
    fn add_deferred_facts(&mut self) {
        let deferred = std::mem::take(&mut self.deferred);
        for d in &deferred {
            let den = self.interval_of(&d.den);
            if den.lo.is_none_or(|l| l < 1) {
                continue;
            }
            let q = Lin {
                c0: 0,
                terms: vec![(d.id, 1)],
            };
            if d.op == IndexOp::Div
                && let Some((quotient, rest)) = split_multiple(&d.a, &d.b)
            {
                // a = b·Q + R with b >= 1, so a / b = Q + R / b (floor division).
                let r = remainder_part(IndexOp::Div, &rest, &d.b);
                let e = IndexExpr::add(quotient.to_index(), r);
                if let Some(le) = self.lin(&e)
                    && let Some(v) = le.sub(&q)
                {
                    self.add_eq(v);
                }
            }
            match d.op {
                IndexOp::Mod => {
                    // 0 <= a % b <= b - 1
                    self.add_fact(q.clone());
                    if let Some(f) = d.den.combine(1, &q, -1, -1) {
                        self.add_fact(f);
                    }
                }
                // a >= 0 and b >= 1 give 0 <= a / b <= a.
                IndexOp::Div if self.interval_of(&d.num).lo.is_some_and(|l| l >= 0) => {
                    self.add_fact(q.clone());
                    if let Some(f) = d.num.sub(&q) {
                        self.add_fact(f);
                    }
                }
                _ => {}
            }
        }
    }

    fn lower(&self, l: &Lin) -> Option<i128> {
        self.interval_of(l).lo
    }

    fn nonneg(&self, d: &Lin, by_mono: &[Vec<usize>], depth: u32, budget: &mut u32) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        if d.terms.is_empty() {
            return d.c0 >= 0;
        }
        if self.lower(d).is_some_and(|l| l >= 0) {
            return true;
        }
        if depth >= MAX_DEPTH {
            return false;
        }
        // Eliminate first the monomials that have no bound in the needed direction:
        // intervals cannot help with those.
        let mut order: Vec<(usize, i128)> = d.terms.clone();
        order.sort_by_key(|(m, a)| {
            let b = self.bounds[*m];
            let bounded = if *a > 0 {
                b.lo.is_some()
            } else {
                b.hi.is_some()
            };
            (bounded, *m)
        });
        for (m, a) in order {
            for &fi in &by_mono[m] {
                let f = &self.facts[fi];
                let b = f.coef(m);
                if (b > 0) != (a > 0) {
                    continue;
                }
                // r = |b|·d + (|b| - 1) - |a|·f, every operation checked.
                let (Some(ab), Some(aa)) = (b.checked_abs(), a.checked_abs()) else {
                    continue;
                };
                let Some(r) = ab
                    .checked_sub(1)
                    .and_then(|extra| d.combine(ab, f, -aa, extra))
                else {
                    continue;
                };
                if self.nonneg(&r.tighten(), by_mono, depth + 1, budget) {
                    return true;
                }
                if *budget == 0 {
                    return false;
                }
            }
        }
        false
    }

    fn solve(&self, g: &Goal, by_mono: &[Vec<usize>]) -> bool {
        let nonneg = |l: &Lin| {
            let mut budget = MAX_NODES;
            self.nonneg(&l.clone().tighten(), by_mono, 0, &mut budget)
        };
        match g {
            Goal::Const(b) => *b,
            Goal::NonNeg(l) => nonneg(l),
            Goal::Zero(l) => {
                (l.terms.is_empty() && l.c0 == 0)
                    || (nonneg(l) && l.neg().is_some_and(|n| nonneg(&n)))
            }
            Goal::NonZero(l) => {
                l.plus(-1).is_some_and(|x| nonneg(&x))
                    || l.neg().and_then(|n| n.plus(-1)).is_some_and(|x| nonneg(&x))
            }
            Goal::And(gs) => gs.iter().all(|g| self.solve(g, by_mono)),
            Goal::Or(gs) => gs.iter().any(|g| self.solve(g, by_mono)),
        }
    }
}

/// Whether the fast path proves `facts => goal`. `false` means "not proved here",
/// not "false".
pub(crate) fn proves(facts: &Facts, goal: &Pred) -> bool {
    let mut fast = Fast::default();
    for size in &facts.sizes {
        fast.add_cmp(
            CmpOp::Ge,
            &IndexExpr::var(size.clone()),
            &IndexExpr::Const(1),
        );
    }
    for fact in &facts.facts {
        fast.add_hyp(fact, true);
    }
    let goal = fast.goal(goal, true);
    if let Goal::Const(b) = goal
        && !fast.inconsistent
    {
        return b;
    }
    fast.close_atoms();
    fast.compute_bounds();
    if !fast.deferred.is_empty() && !fast.inconsistent {
        fast.add_deferred_facts();
        fast.close_atoms();
        fast.compute_bounds();
    }
    if fast.inconsistent {
        return true;
    }
    let mut by_mono = vec![Vec::new(); fast.monos.len()];
    for (i, f) in fast.facts.iter().enumerate() {
        for (m, _) in &f.terms {
            by_mono[*m].push(i);
        }
    }
    fast.solve(&goal, &by_mono)
}
