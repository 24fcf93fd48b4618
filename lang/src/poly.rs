//! Polynomial normal form of index expressions: a sum of integer-weighted monomials
//! whose factors are variables or *opaque atoms* (`/`, `%`, `cdiv`, `min`, `max` nodes
//! that do not reduce, with normalized arguments).
//!
//! Two expressions with equal normal forms are equal for every assignment (the converse
//! does not hold: `(2*i)/2` and `i` are equal and normalize alike, but `min(i, i+1)` is
//! kept as an atom). Shape inference uses this for symbolic shape equality; the solver
//! uses it as the first, cheap step of its fast path.

use std::collections::BTreeMap;

use crate::index::{IndexExpr, IndexOp, apply_index_op};

/// A product of atoms, sorted; the empty monomial is the constant term.
pub type Monomial = Vec<IndexExpr>;

/// A polynomial with integer coefficients over atoms. Zero coefficients are never
/// stored, so structural equality is semantic equality of polynomials.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Poly {
    terms: BTreeMap<Monomial, i64>,
}

impl Poly {
    pub fn zero() -> Poly {
        Poly::default()
    }

    pub fn constant(c: i64) -> Poly {
        let mut p = Poly::zero();
        p.add_term(Vec::new(), c);
        p
    }

    pub fn atom(e: IndexExpr) -> Poly {
        let mut p = Poly::zero();
        p.add_term(vec![e], 1);
        p
    }

    /// The terms: monomial (sorted atoms) to non-zero coefficient.
    pub fn terms(&self) -> &BTreeMap<Monomial, i64> {
        &self.terms
    }

    fn add_term(&mut self, m: Monomial, c: i64) -> Option<()> {
        if c == 0 {
            return Some(());
        }
        let entry = self.terms.entry(m.clone()).or_insert(0);
        *entry = entry.checked_add(c)?;
        if *entry == 0 {
            self.terms.remove(&m);
        }
        Some(())
    }

    /// The value when the polynomial is a constant.
    pub fn as_const(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether every monomial is of degree at most one.
    pub fn is_linear(&self) -> bool {
        self.terms.keys().all(|m| m.len() <= 1)
    }

    fn checked_add(&self, other: &Poly) -> Option<Poly> {
        let mut out = self.clone();
        for (m, c) in &other.terms {
            out.add_term(m.clone(), *c)?;
        }
        Some(out)
    }

    fn checked_scale(&self, k: i64) -> Option<Poly> {
        let mut out = Poly::zero();
        for (m, c) in &self.terms {
            out.add_term(m.clone(), c.checked_mul(k)?)?;
        }
        Some(out)
    }

    fn checked_mul(&self, other: &Poly) -> Option<Poly> {
        let mut out = Poly::zero();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &other.terms {
                let mut m: Monomial = m1.iter().chain(m2.iter()).cloned().collect();
                m.sort();
                out.add_term(m, c1.checked_mul(*c2)?)?;
            }
        }
        Some(out)
    }

    /// Divides every coefficient by `k` if all are multiples of it.
    fn exact_div(&self, k: i64) -> Option<Poly> {
        // Checked: `i64::MIN % -1` and `i64::MIN / -1` overflow (a panic, not a value).
        if k == 0 || self.terms.values().any(|c| c.checked_rem(k) != Some(0)) {
            return None;
        }
        let mut out = Poly::zero();
        for (m, c) in &self.terms {
            out.add_term(m.clone(), c.checked_div(k)?)?;
        }
        Some(out)
    }

    /// Normalizes an index expression. Never fails: a sub-expression whose arithmetic
    /// would overflow is kept as an atom.
    pub fn from_index(e: &IndexExpr) -> Poly {
        match e {
            IndexExpr::Const(c) => Poly::constant(*c),
            IndexExpr::Var(_) | IndexExpr::Meta(_) => Poly::atom(e.clone()),
            // A load is a function of its index: an atom over the normalized index, so
            // `pos[i + 1]` and `pos[1 + i]` are the same atom.
            IndexExpr::Load(array, a) => Poly::atom(IndexExpr::Load(
                array.clone(),
                Box::new(Poly::from_index(a).to_index()),
            )),
            IndexExpr::Neg(a) => {
                let a = Poly::from_index(a);
                a.checked_scale(-1)
                    .unwrap_or_else(|| Poly::atom(IndexExpr::Neg(Box::new(a.to_index()))))
            }
            IndexExpr::Bin(op, a, b) => {
                let pa = Poly::from_index(a);
                let pb = Poly::from_index(b);
                let fallback = |pa: &Poly, pb: &Poly| {
                    let (x, y) = (pa.to_index(), pb.to_index());
                    // min and max commute: order their arguments canonically.
                    let (x, y) = if matches!(op, IndexOp::Min | IndexOp::Max) && y < x {
                        (y, x)
                    } else {
                        (x, y)
                    };
                    Poly::atom(IndexExpr::bin(*op, x, y))
                };
                if let (Some(x), Some(y)) = (pa.as_const(), pb.as_const()) {
                    if let Some(v) = apply_index_op(*op, x, y) {
                        return Poly::constant(v);
                    }
                    return fallback(&pa, &pb);
                }
                let reduced = match op {
                    IndexOp::Add => pa.checked_add(&pb),
                    IndexOp::Sub => pb.checked_scale(-1).and_then(|nb| pa.checked_add(&nb)),
                    IndexOp::Mul => pa.checked_mul(&pb),
                    // (k*p) / k = p and cdiv(k*p, k) = p exactly, for k != 0.
                    IndexOp::Div | IndexOp::CDiv => pb.as_const().and_then(|k| pa.exact_div(k)),
                    // (k*p) % k = 0 for k != 0.
                    IndexOp::Mod => pb
                        .as_const()
                        .filter(|k| *k != 0)
                        .and_then(|k| pa.exact_div(k))
                        .map(|_| Poly::zero()),
                    IndexOp::Min | IndexOp::Max => (pa == pb).then(|| pa.clone()),
                };
                reduced.unwrap_or_else(|| fallback(&pa, &pb))
            }
        }
    }

    /// The canonical index expression of this polynomial: positive terms first, in
    /// monomial order, constant last; `a - b` for negative coefficients.
    pub fn to_index(&self) -> IndexExpr {
        let mut positive = Vec::new();
        let mut negative = Vec::new();
        let mut constant = 0i64;
        for (m, c) in &self.terms {
            if m.is_empty() {
                constant = *c;
                continue;
            }
            let product = m
                .iter()
                .cloned()
                .reduce(IndexExpr::mul)
                .expect("non-empty monomial");
            if *c > 0 {
                positive.push(scale(product, *c));
            } else {
                negative.push(match c.checked_neg() {
                    Some(nc) => scale(product, nc),
                    None => IndexExpr::mul(IndexExpr::Const(*c), product),
                });
            }
        }
        let mut acc: Option<IndexExpr> = None;
        for t in positive {
            acc = Some(match acc {
                None => t,
                Some(a) => IndexExpr::add(a, t),
            });
        }
        for t in negative {
            acc = Some(match acc {
                None => IndexExpr::Neg(Box::new(t)),
                Some(a) => IndexExpr::sub(a, t),
            });
        }
        match acc {
            None => IndexExpr::Const(constant),
            Some(a) if constant > 0 => IndexExpr::add(a, IndexExpr::Const(constant)),
            Some(a) if constant < 0 => match constant.checked_neg() {
                Some(nc) => IndexExpr::sub(a, IndexExpr::Const(nc)),
                None => IndexExpr::add(a, IndexExpr::Const(constant)),
            },
            Some(a) => a,
        }
    }
}

fn scale(e: IndexExpr, c: i64) -> IndexExpr {
    if c == 1 {
        e
    } else {
        IndexExpr::mul(IndexExpr::Const(c), e)
    }
}

/// Normal form as an index expression.
pub fn normalize(e: &IndexExpr) -> IndexExpr {
    Poly::from_index(e).to_index()
}

/// Whether `a` and `b` have the same normal form (hence are equal everywhere).
pub fn same(a: &IndexExpr, b: &IndexExpr) -> bool {
    Poly::from_index(a) == Poly::from_index(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexExpr as I;

    fn v(n: &str) -> I {
        I::var(n)
    }

    #[test]
    fn linear_combinations_cancel() {
        // (i + 3) - i  ==  3
        let e = I::sub(I::add(v("i"), I::Const(3)), v("i"));
        assert_eq!(normalize(&e), I::Const(3));
        // n*m == m*n
        assert!(same(&I::mul(v("n"), v("m")), &I::mul(v("m"), v("n"))));
        // 2*(n+1) == n + n + 2
        let a = I::mul(I::Const(2), I::add(v("n"), I::Const(1)));
        let b = I::add(I::add(v("n"), v("n")), I::Const(2));
        assert!(same(&a, &b));
    }

    #[test]
    fn division_of_the_most_negative_coefficient_by_minus_one_does_not_panic() {
        // (-9223372036854775807*n - n) / -1: the coefficient is i64::MIN, and
        // i64::MIN / -1 does not fit; the division stays opaque (found by the solver's
        // soundness test through `atl prove`, which exited with a panic).
        let num = I::sub(I::mul(I::Const(-i64::MAX), v("n")), v("n"));
        let e = I::bin(IndexOp::Div, num, I::Const(-1));
        let out = normalize(&e);
        assert!(matches!(out, I::Bin(IndexOp::Div, _, _)), "{out:?}");
    }

    #[test]
    fn exact_division_reduces_and_inexact_stays_opaque() {
        let e = I::bin(IndexOp::Div, I::mul(I::Const(4), v("n")), I::Const(2));
        assert_eq!(normalize(&e), I::mul(I::Const(2), v("n")));
        let e = I::bin(IndexOp::Div, v("n"), I::Const(2));
        assert_eq!(normalize(&e), e);
        assert!(!same(&e, &v("n")));
        let e = I::bin(IndexOp::Mod, I::mul(I::Const(8), v("i")), I::Const(4));
        assert_eq!(normalize(&e), I::Const(0));
    }

    #[test]
    fn constants_fold_with_floor_conventions() {
        let e = I::bin(IndexOp::Div, I::Const(-7), I::Const(2));
        assert_eq!(normalize(&e), I::Const(-4));
        let e = I::bin(IndexOp::CDiv, I::Const(7), I::Const(0));
        assert_eq!(normalize(&e), I::Const(0));
    }

    #[test]
    fn min_max_are_canonical_up_to_argument_order() {
        assert!(same(
            &I::bin(IndexOp::Min, v("a"), v("b")),
            &I::bin(IndexOp::Min, v("b"), v("a"))
        ));
        assert!(!same(
            &I::bin(IndexOp::Min, v("a"), v("b")),
            &I::bin(IndexOp::Max, v("a"), v("b"))
        ));
    }

    #[test]
    fn normal_form_preserves_value_on_a_grid() {
        // A handful of expressions checked against direct evaluation.
        let exprs = [
            I::sub(
                I::mul(I::bin(IndexOp::CDiv, v("n"), I::Const(8)), I::Const(8)),
                v("n"),
            ),
            I::bin(
                IndexOp::Mod,
                I::add(I::mul(v("n"), I::Const(6)), v("i")),
                I::Const(3),
            ),
            I::Neg(Box::new(I::sub(v("i"), I::mul(v("n"), v("i"))))),
        ];
        for e in &exprs {
            let n = normalize(e);
            for nv in -5..=9 {
                for iv in -5..=9 {
                    let env = |name: &str| match name {
                        "n" => Some(nv),
                        "i" => Some(iv),
                        _ => None,
                    };
                    assert_eq!(e.eval(&env), n.eval(&env), "{e} vs {n}");
                }
            }
        }
    }
}
