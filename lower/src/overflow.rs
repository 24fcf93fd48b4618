//! The size bound under which a kernel's `int64_t` index arithmetic cannot overflow.
//!
//! C's signed overflow is undefined behaviour, and index expressions can overflow at
//! sizes the kernel would otherwise accept: a ceiling division by a large constant
//! (`(n + c - 1) / c`), a guard `[i * 4611686018427387904 < n]`, an `assume` with a
//! product. So every index expression the C code evaluates — entry checks, loop
//! bounds, guards, flat indices, lengths, and every intermediate result of each — is
//! bounded here, in `i128`, for all sizes at most a bound `B`; the kernel gets the
//! entry precondition `s <= B` for the sizes that need it (largest `B` that works),
//! and a kernel that overflows even at `B = 1` is refused (E0938).
//!
//! Two abstractions, a node being safe when either shows it fits:
//!
//! - **intervals**: sizes in `[1, bound]`, loop variables over their range (guards
//!   are not used to narrow anything, which is sound);
//! - **magnitude polynomials**: an upper bound of `|value|` as a polynomial with
//!   non-negative coefficients over the sizes. A monomial that divides the product of
//!   the extents of an input or the output whose extents are all sizes or positive
//!   constants is at most that product, and the caller's arrays exist (the ABI), so
//!   it is below 2^61 (an object has at most `PTRDIFF_MAX` bytes and elements have
//!   at least 4). This is what keeps `i * m + j` over an `[n, m]` buffer free of any
//!   entry check, where intervals alone would demand `n, m < 2^31.5`.
//!
//! For the same reason a size that is an extent of such a buffer is at most
//! 2^61 / (the product of its constant extents) without any check.
//!
//! Not checked: the flat index of a load or store. Lowering emits an access only
//! where its coordinates are in range (the loop-IR interpreter re-checks it, E0921,
//! E0924), so its value is below the buffer's element count, which the ABI (inputs,
//! output) or a successful allocation (temporaries, whose lengths are checked here)
//! keeps below 2^61; its intermediate results are those of a row-major flattening
//! of in-range coordinates (`TRUSTED.md`).

use std::collections::{BTreeMap, HashMap};

use atl_lang::diag::Diagnostic;
use atl_lang::index::IndexExpr;

use crate::ir::{BufferDecl, Ix, IxOp, Kernel, Stmt, Val};

const MAX: i128 = i64::MAX as i128;
const MIN: i128 = i64::MIN as i128;

/// Elements an input or output array can have at most: `PTRDIFF_MAX /
/// sizeof(float)` (`double` arrays are smaller still).
const ABI_ELEMENTS: i128 = MAX / 4;

/// A monomial: sizes with exponents, sorted.
type Mono = Vec<(String, u32)>;

/// An upper bound of a magnitude: non-negative coefficients over monomials.
type Poly = BTreeMap<Mono, i128>;

/// More terms than this and the polynomial is given up (treated as unbounded).
const MAX_TERMS: usize = 64;

/// What the analysis knows of the kernel's buffers and sizes.
struct Facts {
    /// Per qualifying buffer: its size extents (a multiset) and its element limit.
    covers: Vec<(BTreeMap<String, u32>, i128)>,
    /// Per size: the ABI's bound (`i64::MAX` when the ABI gives none).
    caps: HashMap<String, i128>,
}

impl Facts {
    fn new(k: &Kernel) -> Facts {
        let mut covers = Vec::new();
        let mut caps: HashMap<String, i128> = k.sizes.iter().map(|s| (s.clone(), MAX)).collect();
        for b in k.inputs.iter().chain(std::iter::once(&k.output)) {
            if let Some(cover) = cover_of(b, &caps) {
                for s in cover.0.keys() {
                    let cap = caps.get_mut(s).expect("a size of the kernel");
                    *cap = (*cap).min(cover.1);
                }
                covers.push(cover);
            }
        }
        Facts { covers, caps }
    }

    /// The bound of a monomial: the least cover, or the product of the sizes' bounds.
    fn mono_bound(&self, m: &Mono, bound: &dyn Fn(&str) -> i128) -> i128 {
        let mut best = 1i128;
        for (s, e) in m {
            for _ in 0..*e {
                best = best.saturating_mul(bound(s));
            }
        }
        for (dims, limit) in &self.covers {
            if m.iter().all(|(s, e)| dims.get(s).is_some_and(|d| d >= e)) {
                best = best.min(*limit);
            }
        }
        best
    }

    /// The value of a magnitude polynomial at its worst (saturating).
    fn poly_bound(&self, p: &Poly, bound: &dyn Fn(&str) -> i128) -> i128 {
        p.iter().fold(0i128, |acc, (m, c)| {
            acc.saturating_add(c.saturating_mul(self.mono_bound(m, bound)))
        })
    }
}

/// A buffer whose extents are all sizes or positive constants bounds the product of
/// its size extents: the multiset of those sizes and the limit.
fn cover_of(b: &BufferDecl, caps: &HashMap<String, i128>) -> Option<(BTreeMap<String, u32>, i128)> {
    let mut dims = BTreeMap::new();
    let mut constant = 1i128;
    for d in &b.shape {
        match d {
            IndexExpr::Var(s) if caps.contains_key(s) => *dims.entry(s.clone()).or_insert(0) += 1,
            IndexExpr::Const(c) if *c >= 1 => constant = constant.saturating_mul(i128::from(*c)),
            _ => return None,
        }
    }
    Some((dims, ABI_ELEMENTS / constant))
}

/// A loop variable's or size's abstraction.
#[derive(Clone)]
struct Abs {
    lo: i128,
    hi: i128,
    poly: Option<Poly>,
}

struct Analysis<'f> {
    facts: &'f Facts,
    /// The bound every size is assumed to respect (besides the ABI's).
    bound: i128,
    vars: Vec<(String, Abs)>,
}

fn fits(x: i128) -> bool {
    (MIN..=MAX).contains(&x)
}

impl Analysis<'_> {
    fn size_bound(&self, s: &str) -> i128 {
        self.facts
            .caps
            .get(s)
            .copied()
            .unwrap_or(MAX)
            .min(self.bound)
    }

    /// The abstraction of `ix`, or `None` when some intermediate result may leave
    /// `int64_t`.
    fn ix(&self, ix: &Ix) -> Option<Abs> {
        let (lo, hi, poly) = match ix {
            Ix::Const(c) => {
                let c = i128::from(*c);
                (c, c, Some(Poly::from([(Vec::new(), c.abs())])))
            }
            Ix::Var(v) => {
                if let Some((_, a)) = self.vars.iter().rev().find(|(n, _)| n == v) {
                    return Some(a.clone());
                }
                if !self.facts.caps.contains_key(v) {
                    return None;
                }
                let poly = Poly::from([(vec![(v.clone(), 1)], 1)]);
                (1, self.size_bound(v), Some(poly))
            }
            Ix::Neg(a) => {
                let a = self.ix(a)?;
                (-a.hi, -a.lo, a.poly)
            }
            Ix::Bin(op, a, b) => {
                let (x, y) = (self.ix(a)?, self.ix(b)?);
                let (lo, hi) = interval(*op, &x, &y);
                let p = match (op, &**a, &**b) {
                    // `b * cdiv(a, b)` (a split's rounded-up extent) is below |a| + |b|.
                    (IxOp::Mul, f, Ix::Bin(IxOp::CeilDiv | IxOp::FloorDiv, num, den))
                        if **den == *f =>
                    {
                        self.ix(num)
                            .and_then(|n| add(n.poly.as_ref()?, x.poly.as_ref()?))
                    }
                    _ => poly(*op, &x, &y, b),
                };
                (lo, hi, p)
            }
        };
        // The polynomial bound narrows the interval.
        let (mut lo, mut hi) = (lo, hi);
        if let Some(p) = &poly {
            let m = self.facts.poly_bound(p, &|s| self.size_bound(s));
            lo = lo.max(-m);
            hi = hi.min(m);
        }
        (fits(lo) && fits(hi)).then_some(Abs { lo, hi, poly })
    }

    fn stmts(&mut self, body: &[Stmt]) -> bool {
        body.iter().all(|s| self.stmt(s))
    }

    fn stmt(&mut self, s: &Stmt) -> bool {
        let mut ok = true;
        let mut check = |ix: &Ix| ok &= self.ix(ix).is_some();
        // The flat index of an access to an input or the output whose extents bound
        // it is not checked (see the module documentation); everything else is.
        let val = |v: &Val, check: &mut dyn FnMut(&Ix)| {
            v.visit(&mut |n| match n {
                Val::Select(c, _) | Val::Blend(c, _) => c.visit_ix(check),
                _ => {}
            })
        };
        match s {
            Stmt::Store { value, .. } => val(value, &mut check),
            Stmt::Decl { init: Some(v), .. } => val(v, &mut check),
            Stmt::SetScalar { value, .. } => val(value, &mut check),
            _ => s.visit_own_ix(&mut check),
        }
        if !ok {
            return false;
        }
        match s {
            Stmt::For(l) => {
                let (Some(lo), Some(hi)) = (self.ix(&l.lo), self.ix(&l.hi)) else {
                    return false;
                };
                // `var` takes the values lo..hi-1 (none when the range is empty; the
                // range below then over-approximates, which is sound).
                // |var| <= |hi| when lo >= 0 (var < hi); |lo| + |hi| otherwise.
                let poly = match (lo.poly, hi.poly) {
                    (_, Some(b)) if lo.lo >= 0 => Some(b),
                    (Some(a), Some(b)) => add(&a, &b),
                    _ => None,
                };
                let var = Abs {
                    lo: lo.lo,
                    hi: lo.lo.max(hi.hi - 1),
                    poly,
                };
                self.vars.push((l.var.clone(), var));
                let ok = self.stmts(&l.body);
                self.vars.pop();
                ok
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => self.stmts(then_branch) && self.stmts(else_branch),
            Stmt::Alloc { body, .. } => self.stmts(body),
            _ => true,
        }
    }
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) == (b < 0)) {
        q + 1
    } else {
        q
    }
}

/// The interval of `x op y` in exact (`i128`) arithmetic; the caller checks that it
/// fits `int64_t`. Divisions cover floor, truncation and ceiling alike unless the
/// operator fixes the rounding; `/ 0` and `% 0` follow the helpers (0 and `a`).
fn interval(op: IxOp, x: &Abs, y: &Abs) -> (i128, i128) {
    let corners = |f: &dyn Fn(i128, i128) -> i128| {
        let v = [f(x.lo, y.lo), f(x.lo, y.hi), f(x.hi, y.lo), f(x.hi, y.hi)];
        (
            v.iter().copied().min().unwrap_or(0),
            v.iter().copied().max().unwrap_or(0),
        )
    };
    let mag = x.lo.abs().max(x.hi.abs());
    let divisor_zero = y.lo <= 0 && 0 <= y.hi;
    match op {
        IxOp::Add => (x.lo + y.lo, x.hi + y.hi),
        IxOp::Sub => (x.lo - y.hi, x.hi - y.lo),
        IxOp::Mul => corners(&|a, b| a * b),
        IxOp::Min => (x.lo.min(y.lo), x.hi.min(y.hi)),
        IxOp::Max => (x.lo.max(y.lo), x.hi.max(y.hi)),
        IxOp::DivNat | IxOp::FloorDiv | IxOp::CeilDiv if divisor_zero => (-mag, mag),
        IxOp::DivNat | IxOp::FloorDiv | IxOp::CeilDiv => {
            let (flo, fhi) = corners(&div_floor);
            let (clo, chi) = corners(&div_ceil);
            match op {
                IxOp::FloorDiv => (flo, fhi),
                IxOp::CeilDiv => (clo, chi),
                // C's `/` truncates: floor for a non-negative quotient.
                _ if x.lo >= 0 && y.lo > 0 => (flo, fhi),
                _ => (flo, chi),
            }
        }
        IxOp::ModNat | IxOp::FloorMod => {
            let m = y.lo.abs().max(y.hi.abs());
            let (mut lo, mut hi) = if y.lo > 0 && (op == IxOp::FloorMod || x.lo >= 0) {
                (0, if x.lo >= 0 { x.hi.min(m - 1) } else { m - 1 })
            } else {
                (-(m - 1).max(0), (m - 1).max(0))
            };
            if op == IxOp::ModNat {
                // |a % b| <= |a| for C's remainder.
                lo = lo.max(-mag);
                hi = hi.min(mag);
            }
            if divisor_zero {
                lo = lo.min(x.lo);
                hi = hi.max(x.hi);
            }
            (lo, hi)
        }
    }
}

fn add(a: &Poly, b: &Poly) -> Option<Poly> {
    let mut out = a.clone();
    for (m, c) in b {
        let e = out.entry(m.clone()).or_insert(0);
        *e = e.checked_add(*c)?;
    }
    (out.len() <= MAX_TERMS).then_some(out)
}

fn join(a: &Poly, b: &Poly) -> Poly {
    let mut out = a.clone();
    for (m, c) in b {
        let e = out.entry(m.clone()).or_insert(0);
        *e = (*e).max(*c);
    }
    out
}

fn mul(a: &Poly, b: &Poly) -> Option<Poly> {
    let mut out = Poly::new();
    for (ma, ca) in a {
        for (mb, cb) in b {
            let mut m: BTreeMap<String, u32> = ma.iter().cloned().collect();
            for (s, e) in mb {
                *m.entry(s.clone()).or_insert(0) += e;
            }
            let e = out.entry(m.into_iter().collect()).or_insert(0);
            *e = e.checked_add(ca.checked_mul(*cb)?)?;
        }
    }
    (out.len() <= MAX_TERMS).then_some(out)
}

/// The magnitude polynomial of `x op y` (`b`: the divisor's expression, whose being a
/// constant allows dividing the coefficients).
fn poly(op: IxOp, x: &Abs, y: &Abs, b: &Ix) -> Option<Poly> {
    let constant = match b {
        Ix::Const(c) if *c != 0 => Some(i128::from(*c).abs()),
        _ => None,
    };
    let (px, py) = (x.poly.as_ref(), y.poly.as_ref());
    match op {
        IxOp::Add | IxOp::Sub => add(px?, py?),
        // |min(a, b)|, |max(a, b)| <= max(|a|, |b|): the coefficient-wise maximum
        // bounds it (monomials are positive).
        IxOp::Min | IxOp::Max => Some(join(px?, py?)),
        IxOp::Mul => mul(px?, py?),
        IxOp::DivNat | IxOp::FloorDiv | IxOp::CeilDiv => match constant {
            // |round(a / c)| <= |a| / c + 1.
            Some(c) => {
                let mut p: Poly = px?
                    .iter()
                    .map(|(m, k)| (m.clone(), div_ceil(*k, c)))
                    .collect();
                *p.entry(Vec::new()).or_insert(0) += 1;
                Some(p)
            }
            // |a / b| <= |a| for |b| >= 1, and a / 0 = 0.
            None => px.cloned(),
        },
        IxOp::ModNat | IxOp::FloorMod => match constant {
            Some(c) => Some(Poly::from([(Vec::new(), c - 1)])),
            // C's remainder is at most |a|; floor modulo at most |a| + |b|.
            None if op == IxOp::ModNat => px.cloned(),
            None => add(px?, py?),
        },
    }
}

/// Whether every index expression of `k` stays within `int64_t` when every size is
/// at most `bound` (and within what the ABI implies).
fn safe(k: &Kernel, facts: &Facts, bound: i128) -> bool {
    let mut a = Analysis {
        facts,
        bound,
        vars: Vec::new(),
    };
    let mut ok = true;
    for p in &k.preconditions {
        p.cond.visit_ix(&mut |ix| ok &= a.ix(ix).is_some());
    }
    ok && a.stmts(&k.body)
}

/// The sizes that need an entry check `size <= bound` for the kernel's index
/// arithmetic not to overflow, with the largest such bound (none needed: empty).
/// E0938 when even sizes of 1 overflow.
pub(crate) fn size_bounds(k: &Kernel) -> Result<Vec<(String, i64)>, Diagnostic> {
    let facts = Facts::new(k);
    if safe(k, &facts, MAX) {
        return Ok(Vec::new());
    }
    if !safe(k, &facts, 1) {
        return Err(Diagnostic::error(
            "E0938",
            format!(
                "the kernel of `{}` overflows 64-bit index arithmetic at every size",
                k.name
            ),
        )
        .with_help(
            "a constant in an index expression (a split factor, a guard's factor) is too \
             large; use a smaller one",
        ));
    }
    // The largest bound that works: `safe` is monotone in it.
    let (mut good, mut bad) = (1i128, MAX);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if safe(k, &facts, mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    let bound = i64::try_from(good).unwrap_or(i64::MAX);
    Ok(k.sizes
        .iter()
        .filter(|s| facts.caps.get(*s).copied().unwrap_or(MAX) > good)
        .map(|s| (s.clone(), bound))
        .collect())
}
