//! Bounds of a kernel's `int64_t` index arithmetic: whether an index expression the C
//! evaluates (an entry check, a loop bound, a condition, the flat index of a load or a
//! store, a length) stays within `int64_t` at every intermediate result, for every
//! size the kernel's entry checks let through.
//!
//! One analysis, two users. The translation validator (`atl-validate`) proves with it
//! that no index expression overflows (the fast method of its "fits in `int64_t`"
//! obligations; what it cannot show goes to the solver), so it is part of the trusted
//! base (`TRUSTED.md`). The lowering (`atl-lower`'s overflow pass) uses it only to
//! *propose* entry checks `size <= B` ([`kernel_fits`] under an assumed bound): a
//! bound it forgets is found by the validator.
//!
//! Two abstractions of every value, the value being safe when either shows it fits:
//!
//! - **intervals**: sizes in `[1, cap]` (the cap of an entry check `size <= c` already
//!   passed, or of the ABI below), loop variables over their range; conditions
//!   (`if`, `select`, `blend`) narrow nothing, which is sound — a blend's load is
//!   evaluated whatever its condition, and so is checked;
//! - **magnitude polynomials**: an upper bound of `|value|` as a polynomial with
//!   non-negative coefficients over the sizes. A monomial that divides the product of
//!   the extents of a buffer whose extents are all sizes or positive constants is at
//!   most that product (every size is at least 1): for an input or the output it is
//!   below 2^61, because the caller's arrays exist (the ABI: an object has at most
//!   `PTRDIFF_MAX` bytes, elements at least 4); inside an `alloc` it is at most
//!   `INT64_MAX`, because the allocation's length was itself computed in `int64_t`
//!   (and checked here) and equals that product (checked by the validator). This is
//!   what keeps `i * m + j` over an `[n, m]` buffer free of any entry check.
//!
//! Every value an abstraction returns lies within `int64_t`, so the `i128` arithmetic
//! on them cannot overflow (products of two are below 2^126); coefficients of the
//! polynomials use checked or saturating operations.
//!
//! The operators are those of C as the printer writes them (`atl_loopir::ir::IxOp`):
//! `DivNat`/`ModNat` truncate (their intervals cover every rounding unless the
//! operands are known non-negative), the helpers' floor division and modulo follow
//! `a / 0 = 0`, `a % 0 = a`, and the helpers compute no intermediate result beyond
//! their own (`emit_c/src/cprint.rs`: `atl__floordiv` special-cases `b == -1`).

use std::collections::BTreeMap;

use atl_lang::index::{CmpOp, IndexExpr};

use crate::ir::{Cond, For, Ix, IxOp, Kernel, Stmt};

pub const INT64_MAX: i128 = i64::MAX as i128;
pub const INT64_MIN: i128 = i64::MIN as i128;

/// What to do about an expression that does not fit (E0938's help, from lowering and
/// from the validator's verdict alike).
pub const OVERFLOW_HELP: &str = "a constant in an index expression (an index's factor, a split \
     factor, a guard's factor) is too large for the sizes the program allows; use a smaller \
     one, or an `assume` bounding the sizes";

/// Elements an input or output array can have at most: `PTRDIFF_MAX /
/// sizeof(float)` (`double` arrays are smaller still).
pub const ABI_ELEMENTS: i128 = INT64_MAX / 4;

/// A monomial: sizes with exponents, sorted.
type Mono = Vec<(String, u32)>;

/// A non-negative rational coefficient `n / d` (`d >= 1`, in lowest terms): the
/// bound of `yo * ((W + 63) / 64)` is `H·W / 4096 + …`, not `H·W`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Q {
    n: i128,
    d: i128,
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

impl Q {
    fn int(n: i128) -> Q {
        Q { n, d: 1 }
    }

    fn new(n: i128, d: i128) -> Option<Q> {
        if d <= 0 || n < 0 {
            return None;
        }
        let g = gcd(n, d);
        Some(Q { n: n / g, d: d / g })
    }

    fn add(self, o: Q) -> Option<Q> {
        Q::new(
            self.n
                .checked_mul(o.d)?
                .checked_add(o.n.checked_mul(self.d)?)?,
            self.d.checked_mul(o.d)?,
        )
    }

    fn mul(self, o: Q) -> Option<Q> {
        Q::new(self.n.checked_mul(o.n)?, self.d.checked_mul(o.d)?)
    }

    /// A coefficient at least both (the larger one, or their sum).
    fn max(self, o: Q) -> Option<Q> {
        match (self.n.checked_mul(o.d), o.n.checked_mul(self.d)) {
            (Some(a), Some(b)) => Some(if a >= b { self } else { o }),
            _ => self.add(o),
        }
    }
}

/// A bound of a non-negative quantity: non-negative coefficients over monomials.
type Poly = BTreeMap<Mono, Q>;

/// More terms than this and the polynomial is given up (treated as unbounded).
const MAX_TERMS: usize = 64;

/// A value's abstraction: an interval within `int64_t`, and polynomial bounds of its
/// positive part (`up >= max(value, 0)`) and of its negative part (`down >=
/// max(-value, 0)`), when known. Keeping the two apart lets a sum whose terms cancel
/// (a row-major index computed as `+ a·W − b·W + …`) be bounded by its positive terms
/// and its negative terms separately, not by the sum of every term's magnitude.
#[derive(Clone, Debug)]
struct Abs {
    lo: i128,
    hi: i128,
    up: Option<Poly>,
    down: Option<Poly>,
}

/// A buffer whose extents are all sizes or positive constants: the multiset of its
/// size extents, and a bound of the product of those extents.
#[derive(Clone, Debug)]
struct Cover {
    dims: BTreeMap<String, u32>,
    limit: i128,
}

/// What is known where an expression is evaluated: the sizes' caps, the covers of the
/// buffers in scope, the loop variables in scope.
#[derive(Clone, Debug)]
pub struct Env {
    sizes: Vec<String>,
    /// Per size, the least upper bound known (`INT64_MAX` when none).
    caps: BTreeMap<String, i128>,
    covers: Vec<Cover>,
    /// Loop variables, innermost last; `None`: a variable whose range could not be
    /// bounded (every use of it fails).
    vars: Vec<(String, Option<Abs>)>,
    /// The caps and the number of covers before each enclosing `alloc` (what a
    /// temporary implies holds only inside it).
    allocs: Vec<(BTreeMap<String, i128>, usize)>,
}

impl Env {
    /// At the kernel's entry, before any check: sizes are `int64_t` parameters, and
    /// the ABI bounds the extents of the inputs and the output.
    pub fn new(k: &Kernel) -> Env {
        let mut env = Env {
            sizes: k.sizes.clone(),
            caps: k.sizes.iter().map(|s| (s.clone(), INT64_MAX)).collect(),
            covers: Vec::new(),
            vars: Vec::new(),
            allocs: Vec::new(),
        };
        for b in k.inputs.iter().chain(std::iter::once(&k.output)) {
            env.push_cover(&b.shape, ABI_ELEMENTS);
        }
        env
    }

    /// Every size is at most `cap` besides what is known (the lowering's hypothesis
    /// when it searches for an entry bound).
    pub fn with_cap(mut self, cap: i128) -> Env {
        for c in self.caps.values_mut() {
            *c = (*c).min(cap);
        }
        self
    }

    /// A condition the C has checked: a conjunct `size <= c` (or `c >= size`) caps
    /// the size; anything else is ignored (sound: less is known).
    pub fn assume(&mut self, c: &Cond) {
        match c {
            Cond::And(a, b) => {
                self.assume(a);
                self.assume(b);
            }
            Cond::Cmp(op, a, b) => {
                let cap = match (op, a, b) {
                    (CmpOp::Le, Ix::Var(s), Ix::Const(c))
                    | (CmpOp::Ge, Ix::Const(c), Ix::Var(s)) => Some((s, i128::from(*c))),
                    (CmpOp::Lt, Ix::Var(s), Ix::Const(c))
                    | (CmpOp::Gt, Ix::Const(c), Ix::Var(s)) => Some((s, i128::from(*c) - 1)),
                    _ => None,
                };
                if let Some((s, c)) = cap
                    && self.vars.iter().all(|(v, _)| v != s)
                    && let Some(old) = self.caps.get_mut(s)
                {
                    *old = (*old).min(c);
                }
            }
            _ => {}
        }
    }

    /// A buffer of `shape` is in scope whose element count is at most `limit`.
    fn push_cover(&mut self, shape: &[IndexExpr], limit: i128) {
        // Each extent is at least `q * M` for a monomial `M` over the sizes (every
        // size >= 1): the product of the `M`s is at most `limit / Π q`.
        let mut dims = BTreeMap::new();
        let mut factor = Q::int(1);
        for d in shape {
            let Some((q, m)) = self.lower_monomial(d) else {
                return;
            };
            let Some(f) = factor.mul(q) else { return };
            factor = f;
            for (s, e) in m {
                *dims.entry(s).or_insert(0) += e;
            }
        }
        let Some(limit) = limit.checked_mul(factor.d).map(|x| x / factor.n) else {
            return;
        };
        // A size that is an extent is at most the limit (the other extents are >= 1).
        for s in dims.keys() {
            if let Some(cap) = self.caps.get_mut(s) {
                *cap = (*cap).min(limit);
            }
        }
        self.covers.push(Cover { dims, limit });
    }

    /// A positive `q` and a monomial `M` over the sizes with `e >= q * M` at every
    /// size `>= 1` (so `e >= q > 0`): `n`, `c >= 1`, `e1 * e2`, `e1 + e2` (one of
    /// them, the other being at least as positive), `cdiv(e, c)` (`>= e / c`),
    /// `max(e1, e2)`; `None` for anything that may be 0 or less (`n - 3`, `n / 2`).
    fn lower_monomial(&self, e: &IndexExpr) -> Option<(Q, BTreeMap<String, u32>)> {
        use atl_lang::index::IndexOp;
        match e {
            IndexExpr::Var(s) if self.caps.contains_key(s) => {
                Some((Q::int(1), BTreeMap::from([(s.clone(), 1)])))
            }
            IndexExpr::Const(c) if *c >= 1 => Some((Q::int(i128::from(*c)), BTreeMap::new())),
            IndexExpr::Bin(IndexOp::Mul, a, b) => {
                let ((qa, mut ma), (qb, mb)) = (self.lower_monomial(a)?, self.lower_monomial(b)?);
                for (s, k) in mb {
                    *ma.entry(s).or_insert(0) += k;
                }
                Some((qa.mul(qb)?, ma))
            }
            IndexExpr::Bin(IndexOp::Add | IndexOp::Max, a, b) => {
                match (self.lower_monomial(a), self.lower_monomial(b)) {
                    (Some((qa, ma)), Some((qb, mb))) if ma == mb => Some((qa.add(qb)?, ma)),
                    (Some(x), Some(y)) => {
                        let degree = |m: &BTreeMap<String, u32>| m.values().sum::<u32>();
                        Some(if degree(&x.1) >= degree(&y.1) { x } else { y })
                    }
                    _ => None,
                }
            }
            IndexExpr::Bin(IndexOp::CDiv, a, b) => {
                let IndexExpr::Const(c) = **b else {
                    return None;
                };
                let (q, m) = self.lower_monomial(a)?;
                (c >= 1).then_some(())?;
                Some((q.mul(Q::new(1, i128::from(c))?)?, m))
            }
            _ => None,
        }
    }

    /// Entering the body of an `alloc` of `shape` (its length, computed in `int64_t`
    /// and equal to the element count, fits).
    pub fn push_alloc(&mut self, shape: &[IndexExpr]) {
        self.allocs.push((self.caps.clone(), self.covers.len()));
        self.push_cover(shape, INT64_MAX);
    }

    /// Leaving the body of the innermost `alloc` entered with [`Env::push_alloc`].
    pub fn pop_alloc(&mut self) {
        if let Some((caps, covers)) = self.allocs.pop() {
            self.caps = caps;
            self.covers.truncate(covers);
        }
    }

    /// Entering the body of a loop: its variable ranges over `[lo, hi)`.
    pub fn push_loop(&mut self, l: &For) {
        let var = match (self.abs(&l.lo), self.abs(&l.hi)) {
            // `var` takes the values lo..hi-1 (none when the range is empty; the
            // bounds below then over-approximate, which is sound): its positive part
            // is below hi's, its negative part at most lo's.
            (Some(lo), Some(hi)) => Some(Abs {
                lo: lo.lo,
                hi: lo.lo.max(hi.hi - 1),
                up: hi.up,
                down: lo.down,
            }),
            _ => None,
        };
        self.vars.push((l.var.clone(), var));
    }

    pub fn pop_loop(&mut self) {
        self.vars.pop();
    }

    /// Whether `ix` and every intermediate result of it stay within `int64_t`.
    pub fn fits(&self, ix: &Ix) -> bool {
        self.abs(ix).is_some()
    }

    /// The least upper bound known of the size `s`.
    pub fn size_cap(&self, s: &str) -> i128 {
        self.caps.get(s).copied().unwrap_or(INT64_MAX)
    }

    /// The bound of a monomial: the least cover, or the product of the sizes' caps.
    fn mono_bound(&self, m: &Mono) -> i128 {
        let mut best = 1i128;
        for (s, e) in m {
            for _ in 0..*e {
                best = best.saturating_mul(self.size_cap(s));
            }
        }
        for c in &self.covers {
            if m.iter().all(|(s, e)| c.dims.get(s).is_some_and(|d| d >= e)) {
                best = best.min(c.limit);
            }
        }
        best
    }

    /// The value of a bound polynomial at its worst, rounded up (saturating).
    fn poly_bound(&self, p: &Poly) -> i128 {
        p.iter().fold(0i128, |acc, (m, q)| {
            let term =
                q.n.checked_mul(self.mono_bound(m))
                    .map(|x| x / q.d + i128::from(x % q.d != 0))
                    .unwrap_or(i128::MAX);
            acc.saturating_add(term)
        })
    }

    /// Of two bounds of one quantity, the one smaller at its worst.
    fn tighter(&self, a: Option<Poly>, b: Option<Poly>) -> Option<Poly> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if self.poly_bound(&a) <= self.poly_bound(&b) {
                a
            } else {
                b
            }),
            (a, b) => a.or(b),
        }
    }

    /// The abstraction of `ix`, or `None` when some intermediate result may leave
    /// `int64_t` (or a name is bound by nothing).
    fn abs(&self, ix: &Ix) -> Option<Abs> {
        let a = match ix {
            Ix::Const(c) => {
                let c = i128::from(*c);
                Abs {
                    lo: c,
                    hi: c,
                    up: Some(constant(Q::int(c.max(0)))),
                    down: Some(constant(Q::int((-c).max(0)))),
                }
            }
            Ix::Var(v) => {
                if let Some((_, a)) = self.vars.iter().rev().find(|(n, _)| n == v) {
                    return a.clone();
                }
                if !self.sizes.contains(v) {
                    return None;
                }
                Abs {
                    lo: 1,
                    hi: self.size_cap(v),
                    up: Some(Poly::from([(vec![(v.clone(), 1)], Q::int(1))])),
                    down: Some(Poly::new()),
                }
            }
            Ix::Load(_, index) => {
                // The index is computed in `int64_t` too; the element is an `int32_t`
                // (the kernel's entry check refuses anything else).
                self.abs(index)?;
                let (lo, hi) = (i128::from(i32::MIN), i128::from(i32::MAX));
                Abs {
                    lo,
                    hi,
                    up: Some(constant(Q::int(hi))),
                    down: Some(constant(Q::int(-lo))),
                }
            }
            Ix::Neg(a) => {
                let a = self.abs(a)?;
                Abs {
                    lo: -a.hi,
                    hi: -a.lo,
                    up: a.down,
                    down: a.up,
                }
            }
            Ix::Bin(op, a, b) => {
                let (x, y) = (self.abs(a)?, self.abs(b)?);
                let (lo, hi) = interval(*op, &x, &y);
                let special = match op {
                    IxOp::Mul => self
                        .product_of_quotient(a, b)
                        .or_else(|| self.product_of_quotient(b, a)),
                    _ => None,
                };
                let (up, down) = special.unwrap_or_else(|| self.signed(*op, &x, &y, b));
                Abs { lo, hi, up, down }
            }
        };
        // The polynomial bounds narrow the interval — never to an empty one (which
        // only code that never runs can have, as in an empty loop), so that interval
        // arithmetic never meets an inverted range.
        let (mut lo, mut hi) = (a.lo, a.hi);
        if let Some(p) = &a.up {
            hi = hi.min(self.poly_bound(p)).max(lo);
        }
        if let Some(p) = &a.down {
            lo = lo.max(-self.poly_bound(p)).min(hi);
        }
        (fits(lo) && fits(hi)).then_some(Abs { lo, hi, ..a })
    }

    /// The positive and negative parts' bounds of `x op y` (`b`: the divisor's
    /// expression, whose being a constant allows dividing the coefficients).
    fn signed(&self, op: IxOp, x: &Abs, y: &Abs, b: &Ix) -> (Option<Poly>, Option<Poly>) {
        let (xu, xd, yu, yd) = (&x.up, &x.down, &y.up, &y.down);
        // |x| and |y|.
        let mx = pjoin(xu, xd);
        let my = pjoin(yu, yd);
        let constant_divisor = match b {
            Ix::Const(c) if *c != 0 => Some(i128::from(*c)),
            _ => None,
        };
        match op {
            IxOp::Add => (padd(xu, yu), padd(xd, yd)),
            IxOp::Sub => (padd(xu, yd), padd(xd, yu)),
            IxOp::Mul => (
                padd(&pmul(xu, yu), &pmul(xd, yd)),
                padd(&pmul(xu, yd), &pmul(xd, yu)),
            ),
            // min(a, b) <= a, b; -min(a, b) <= max(-a, -b). Symmetrically for max.
            IxOp::Min => (self.tighter(xu.clone(), yu.clone()), pjoin(xd, yd)),
            IxOp::Max => (pjoin(xu, yu), self.tighter(xd.clone(), yd.clone())),
            IxOp::DivNat | IxOp::FloorDiv | IxOp::CeilDiv => match constant_divisor {
                Some(c) => {
                    // a / c for c > 0; for c < 0 the parts of a exchange.
                    let (pu, pd) = if c > 0 { (xu, xd) } else { (xd, xu) };
                    let k = Q::new(1, c.abs());
                    let (pu, pd) = (pscale(pu, k), pscale(pd, k));
                    // Rounding adds at most 1 to the part it rounds towards: floor
                    // towards -inf, ceiling towards +inf, truncation to neither.
                    match op {
                        IxOp::FloorDiv => (pu, plus_one(&pd)),
                        IxOp::CeilDiv => (plus_one(&pu), pd),
                        _ => (pu, pd),
                    }
                }
                // A divisor of at least 1 moves the quotient towards 0 (a integer).
                None if y.lo >= 1 => (xu.clone(), xd.clone()),
                // |a / b| <= |a| for b != 0; a / 0 = 0.
                None => (mx.clone(), mx),
            },
            IxOp::ModNat | IxOp::FloorMod => {
                let below = |m: Option<Poly>| {
                    // Floor modulo by a positive divisor, and C's remainder of a
                    // non-negative dividend, are non-negative.
                    if op == IxOp::FloorMod || x.lo >= 0 {
                        (m, Some(Poly::new()))
                    } else {
                        (m.clone(), m)
                    }
                };
                match constant_divisor {
                    // floor: in [0, c - 1] (c > 0) or [c + 1, 0]; C's %: |r| < |c|,
                    // r >= 0 when a >= 0.
                    Some(c) => {
                        let m = Some(constant(Q::int(c.abs() - 1)));
                        if op == IxOp::FloorMod && c < 0 {
                            (Some(Poly::new()), m)
                        } else {
                            below(m)
                        }
                    }
                    None if y.lo >= 1 => below(yu.clone()),
                    // C's % by a non-zero b (the natural-division obligation) is at
                    // most |a|; floor modulo at most |a| + |b| (a % 0 = a).
                    None if op == IxOp::ModNat => (mx.clone(), mx),
                    None => {
                        let m = padd(&mx, &my);
                        (m.clone(), m)
                    }
                }
            }
        }
    }
}

impl Env {
    /// `G * d1 * … * dk * (a / d1 / … / dk)` (the leading coordinate of a row-major
    /// delinearization, or a split's rounded extent `b * cdiv(a, b)`): the divisors
    /// among the factors in any order, all floor, all C or all ceiling divisions,
    /// each divisor at least 1. Nested divisions by positive divisors are one division
    /// by their product `D` (for each rounding), and `D * (a / D)` is within `D` of
    /// `a`: its parts are at most those of `a` plus `D`. `G`, the other factors,
    /// multiplies that.
    fn product_of_quotient(
        &self,
        factors: &Ix,
        quotient: &Ix,
    ) -> Option<(Option<Poly>, Option<Poly>)> {
        fn product<'a>(e: &'a Ix, out: &mut Vec<&'a Ix>) {
            match e {
                Ix::Bin(IxOp::Mul, a, b) => {
                    product(a, out);
                    product(b, out);
                }
                _ => out.push(e),
            }
        }
        let mut rest = Vec::new();
        product(factors, &mut rest);
        let mut divisors = Vec::new();
        let mut num = quotient;
        let mut kind = None;
        while let Ix::Bin(op @ (IxOp::FloorDiv | IxOp::DivNat | IxOp::CeilDiv), inner, d) = num {
            if kind.is_some_and(|k| k != *op) {
                return None;
            }
            kind = Some(*op);
            divisors.push(&**d);
            num = inner;
        }
        if divisors.is_empty() || divisors.len() > rest.len() {
            return None;
        }
        let mut d_up = Some(constant(Q::int(1)));
        for d in &divisors {
            let at = rest.iter().position(|f| f == d)?;
            rest.swap_remove(at);
            let a = self.abs(d)?;
            if a.lo < 1 {
                return None;
            }
            d_up = pmul(&d_up, &a.up);
        }
        let n = self.abs(num)?;
        let (mut up, mut down) = (padd(&n.up, &d_up), padd(&n.down, &d_up));
        for g in rest {
            let g = self.abs(g)?;
            (up, down) = (
                padd(&pmul(&g.up, &up), &pmul(&g.down, &down)),
                padd(&pmul(&g.up, &down), &pmul(&g.down, &up)),
            );
        }
        Some((up, down))
    }
}

fn fits(x: i128) -> bool {
    (INT64_MIN..=INT64_MAX).contains(&x)
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
        // A divisor that may be 0 or -1: the quotient's magnitude is at most |a|
        // (the helpers give 0 for / 0; -a for / -1, which `mag` covers).
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

/// The constant polynomial `q`.
fn constant(q: Q) -> Poly {
    if q.n == 0 {
        Poly::new()
    } else {
        Poly::from([(Vec::new(), q)])
    }
}

fn padd(a: &Option<Poly>, b: &Option<Poly>) -> Option<Poly> {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    let mut out = a.clone();
    for (m, c) in b {
        let e = out.entry(m.clone()).or_insert(Q::int(0));
        *e = e.add(*c)?;
    }
    (out.len() <= MAX_TERMS).then_some(out)
}

/// A bound of both: the coefficient-wise maximum (monomials are non-negative).
fn pjoin(a: &Option<Poly>, b: &Option<Poly>) -> Option<Poly> {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    let mut out = a.clone();
    for (m, c) in b {
        let e = out.entry(m.clone()).or_insert(Q::int(0));
        *e = e.max(*c)?;
    }
    Some(out)
}

fn pmul(a: &Option<Poly>, b: &Option<Poly>) -> Option<Poly> {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    let mut out = Poly::new();
    for (ma, ca) in a {
        for (mb, cb) in b {
            let mut m: BTreeMap<String, u32> = ma.iter().cloned().collect();
            for (s, e) in mb {
                *m.entry(s.clone()).or_insert(0) += e;
            }
            let e = out.entry(m.into_iter().collect()).or_insert(Q::int(0));
            *e = e.add(ca.mul(*cb)?)?;
        }
    }
    (out.len() <= MAX_TERMS).then_some(out)
}

fn pscale(a: &Option<Poly>, k: Option<Q>) -> Option<Poly> {
    let k = k?;
    a.as_ref()?
        .iter()
        .map(|(m, c)| Some((m.clone(), c.mul(k)?)))
        .collect()
}

fn plus_one(a: &Option<Poly>) -> Option<Poly> {
    padd(a, &Some(constant(Q::int(1))))
}

/// The smallest bound an index-range precondition (`size <= bound`, the kernel's
/// 64-bit limit) may set in a kernel with `sizes` sizes: `2^(62 / sizes)`, so that
/// every size may reach the `sizes`-th root of 2^62 — a kernel may refuse sizes too
/// large for its index arithmetic, never ordinary ones. The validator refuses smaller
/// bounds; lowering refuses a kernel that would need one (E0938).
pub fn min_index_range_bound(sizes: usize) -> i64 {
    2f64.powf(62.0 / sizes.max(1) as f64).floor() as i64
}

/// The first index expression of `k` (printed, with what it is) that the analysis
/// cannot keep within `int64_t` when every size is also at most `cap`; `None` when
/// every one fits. Walks what the C evaluates: entry checks (each under the earlier
/// ones), loop bounds, conditions, lengths, and the flat index of every load and
/// store, including the loads of a blend.
pub fn first_overflow(k: &Kernel, cap: i128) -> Option<String> {
    let mut env = Env::new(k).with_cap(cap);
    for p in &k.preconditions {
        let mut bad = None;
        p.cond.visit_ix(&mut |ix| {
            if bad.is_none() && !env.fits(ix) {
                bad = Some(ix.clone());
            }
        });
        if let Some(ix) = bad {
            return Some(format!(
                "`{}` in an entry check",
                crate::print::ix_to_string(&ix)
            ));
        }
        env.assume(&p.cond);
    }
    // The index arrays' entry checks: their extents and ranges, over the sizes.
    for check in k.array_checks() {
        let Some(check) = check else {
            return Some("an index array's declaration".to_string());
        };
        if let Some(ix) = [&check.len, &check.lo, &check.hi]
            .into_iter()
            .find(|ix| !env.fits(ix))
        {
            return Some(format!(
                "`{}` in the entry check of the index array `{}`",
                crate::print::ix_to_string(ix),
                check.buf
            ));
        }
    }
    walk_block(&mut env, &k.body)
}

fn walk_block(env: &mut Env, body: &[Stmt]) -> Option<String> {
    body.iter().find_map(|s| walk_stmt(env, s))
}

fn walk_stmt(env: &mut Env, s: &Stmt) -> Option<String> {
    let mut bad = None;
    s.visit_own_ix(&mut |ix| {
        if bad.is_none() && !env.fits(ix) {
            bad = Some(ix.clone());
        }
    });
    if let Some(ix) = bad {
        return Some(format!("`{}`", crate::print::ix_to_string(&ix)));
    }
    match s {
        Stmt::For(l) => {
            if let Some(count) = collapsed_count(l)
                && !env.fits(&count)
            {
                return Some(format!(
                    "the iteration count of the collapsed loops `{}`",
                    l.var
                ));
            }
            env.push_loop(l);
            let r = walk_block(env, &l.body);
            env.pop_loop();
            r
        }
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => walk_block(env, then_branch).or_else(|| walk_block(env, else_branch)),
        Stmt::Alloc { shape, body, .. } => {
            env.push_alloc(shape);
            let r = walk_block(env, body);
            env.pop_alloc();
            r
        }
        _ => None,
    }
}

/// The number of iterations OpenMP computes for a `collapse(2)` loop and the loop
/// inside it: `max(hi1 - lo1, 0) * max(hi2 - lo2, 0)` (in the scope of the outer loop,
/// whose variable the inner bounds do not mention).
pub fn collapsed_count(l: &For) -> Option<Ix> {
    if !l.collapse {
        return None;
    }
    let [Stmt::For(inner)] = l.body.as_slice() else {
        return None;
    };
    let trips = |f: &For| {
        Ix::bin(
            IxOp::Max,
            Ix::bin(IxOp::Sub, f.hi.clone(), f.lo.clone()),
            Ix::Const(0),
        )
    };
    Some(Ix::bin(IxOp::Mul, trips(l), trips(inner)))
}

#[cfg(test)]
mod tests {
    //! The analysis is part of the validator's trusted base: attacked here with random
    //! expressions (huge constants, every operator, negative ranges, cancelling sums),
    //! every value each one takes at random sizes and loop indices — sizes that respect
    //! the caps and the covers, as the entry checks and the ABI guarantee — must lie
    //! in the interval the analysis gives every node it calls fitting.

    use super::*;
    use crate::ir::{BufferDecl, LoopOrigin};
    use atl_lang::rng::SplitMix64;

    const OPS: [IxOp; 10] = [
        IxOp::Add,
        IxOp::Sub,
        IxOp::Mul,
        IxOp::DivNat,
        IxOp::ModNat,
        IxOp::FloorDiv,
        IxOp::FloorMod,
        IxOp::CeilDiv,
        IxOp::Min,
        IxOp::Max,
    ];

    fn constant(rng: &mut SplitMix64) -> i64 {
        match rng.below(6) {
            0 => rng.range(-3, 3),
            1 => rng.range(1, 64),
            2 => 1 << rng.range(20, 62),
            3 => -(1 << rng.range(20, 62)),
            4 => i64::MAX - rng.range(0, 1000),
            _ => rng.range(-100, 100),
        }
    }

    fn expr(rng: &mut SplitMix64, vars: &[&str], depth: u32) -> Ix {
        if depth == 0 || rng.chance(30) {
            return if rng.chance(60) {
                Ix::Var(rng.pick(vars).to_string())
            } else {
                Ix::Const(constant(rng))
            };
        }
        if rng.chance(10) {
            return Ix::Neg(Box::new(expr(rng, vars, depth - 1)));
        }
        let op = *rng.pick(&OPS);
        Ix::bin(op, expr(rng, vars, depth - 1), expr(rng, vars, depth - 1))
    }

    /// C's value (`None`: a C division by zero, or beyond 128 bits).
    fn eval(ix: &Ix, env: &BTreeMap<&str, i128>) -> Option<i128> {
        Some(match ix {
            Ix::Const(c) => i128::from(*c),
            Ix::Var(v) => *env.get(v.as_str())?,
            // The generator makes no loads.
            Ix::Load(..) => return None,
            Ix::Neg(a) => eval(a, env)?.checked_neg()?,
            Ix::Bin(op, a, b) => {
                let (a, b) = (eval(a, env)?, eval(b, env)?);
                match op {
                    IxOp::Add => a.checked_add(b)?,
                    IxOp::Sub => a.checked_sub(b)?,
                    IxOp::Mul => a.checked_mul(b)?,
                    IxOp::DivNat => a.checked_div(b)?,
                    IxOp::ModNat => a.checked_rem(b)?,
                    IxOp::FloorDiv if b == 0 => 0,
                    IxOp::FloorDiv => div_floor(a, b),
                    IxOp::FloorMod if b == 0 => a,
                    IxOp::FloorMod => a - b * div_floor(a, b),
                    IxOp::CeilDiv if b == 0 => 0,
                    IxOp::CeilDiv => -div_floor(-a, b),
                    IxOp::Min => a.min(b),
                    IxOp::Max => a.max(b),
                }
            }
        })
    }

    /// Every node of `ix` the analysis bounds holds its values at `values`.
    fn check_nodes(env: &Env, ix: &Ix, values: &BTreeMap<&str, i128>, shown: &str) {
        let Some(abs) = env.abs(ix) else { return };
        if let Some(v) = eval(ix, values) {
            assert!(
                abs.lo <= v && v <= abs.hi,
                "`{}` = {v} outside [{}, {}] at {values:?} (in {shown})",
                crate::print::ix_to_string(ix),
                abs.lo,
                abs.hi
            );
        }
        if let Ix::Bin(_, a, b) = ix {
            check_nodes(env, a, values, shown);
            check_nodes(env, b, values, shown);
        } else if let Ix::Neg(a) = ix {
            check_nodes(env, a, values, shown);
        }
    }

    fn kernel(limit_extent: i64) -> Kernel {
        let decl = |name: &str, shape: Vec<IndexExpr>| BufferDecl {
            name: name.into(),
            shape,
            index_array: None,
            order: None,
            checked_where_read: false,
        };
        Kernel {
            name: "k".into(),
            sizes: vec!["n".into(), "m".into()],
            // A huge constant extent makes the cover small: n * m <= limit.
            inputs: vec![decl(
                "f",
                vec![
                    IndexExpr::var("n"),
                    IndexExpr::var("m"),
                    IndexExpr::Const(limit_extent),
                ],
            )],
            output: decl("out", vec![IndexExpr::var("n")]),
            preconditions: Vec::new(),
            vector_width: None,
            body: Vec::new(),
            source: atl_lang::ir::Expr::lit(0.0),
        }
    }

    fn for_loop(var: &str, lo: Ix, hi: Ix) -> For {
        For {
            var: var.into(),
            lo,
            hi,
            body: Vec::new(),
            origin: LoopOrigin::Gen,
            parallel: false,
            vector: false,
            unroll: false,
            collapse: false,
            hoisted_buffers: Vec::new(),
        }
    }

    #[test]
    fn every_value_lies_in_the_interval_of_a_node_that_fits() {
        let mut rng = SplitMix64::new(28);
        let mut bounded = 0;
        for case in 0..3000 {
            // n * m <= limit, each size at most its cap.
            let limit = rng.range(1, 400);
            let extent = (ABI_ELEMENTS / i128::from(limit)) as i64;
            let cap = rng.range(1, 40);
            let mut env = Env::new(&kernel(extent)).with_cap(i128::from(cap));
            let i_loop = for_loop(
                "i",
                expr(&mut rng, &["n", "m"], 2),
                expr(&mut rng, &["n", "m"], 2),
            );
            let j_loop = for_loop(
                "j",
                expr(&mut rng, &["n", "i"], 2),
                expr(&mut rng, &["m", "i"], 2),
            );
            env.push_loop(&i_loop);
            env.push_loop(&j_loop);
            let e = expr(&mut rng, &["n", "m", "i", "j"], 4);
            if env.abs(&e).is_some() {
                bounded += 1;
            }
            let shown = format!("case {case}: {}", crate::print::ix_to_string(&e));
            for _ in 0..40 {
                let n = rng.range(1, cap.min(limit));
                let m = rng.range(1, cap.min(limit / n).max(1));
                if n * m > limit {
                    continue;
                }
                let mut values: BTreeMap<&str, i128> =
                    BTreeMap::from([("n", i128::from(n)), ("m", i128::from(m))]);
                let (Some(ilo), Some(ihi)) = (eval(&i_loop.lo, &values), eval(&i_loop.hi, &values))
                else {
                    continue;
                };
                if ilo >= ihi || ihi - ilo > 1 << 40 {
                    continue;
                }
                let i = ilo + i128::from(rng.next_u64() % ((ihi - ilo) as u64));
                values.insert("i", i);
                let (Some(jlo), Some(jhi)) = (eval(&j_loop.lo, &values), eval(&j_loop.hi, &values))
                else {
                    continue;
                };
                if jlo >= jhi || jhi - jlo > 1 << 40 {
                    continue;
                }
                let j = jlo + i128::from(rng.next_u64() % ((jhi - jlo) as u64));
                values.insert("j", j);
                check_nodes(&env, &e, &values, &shown);
            }
        }
        // Not vacuous: many expressions are bounded.
        assert!(bounded > 500, "only {bounded} bounded");
    }

    #[test]
    fn lower_monomials_are_below_their_extents() {
        let env = Env::new(&kernel(1));
        let parse =
            |t: &str| atl_lang::parser::parse_index_str(t).unwrap_or_else(|e| panic!("{t}: {e:?}"));
        let cases = [
            ("n", true),
            ("3", true),
            ("n * m", true),
            ("n + m", true),
            ("n + 1", true),
            ("cdiv(n + 1, 2)", true),
            ("cdiv(n, 4) * m * 2", true),
            ("max(n, m * m)", true),
            ("n - 3", false),
            ("n / 2", false),
            ("n + m - 1", false),
            ("min(n, m)", false),
            ("0", false),
        ];
        for (text, expected) in cases {
            let e = parse(text);
            let found = env.lower_monomial(&e);
            assert_eq!(found.is_some(), expected, "{text}");
            let Some((q, m)) = found else { continue };
            for n in 1..40i64 {
                for mm in 1..40i64 {
                    let value = |s: &str| match s {
                        "n" => Some(n),
                        "m" => Some(mm),
                        _ => None,
                    };
                    let v = i128::from(e.eval(&value).expect("evaluates"));
                    let mono: i128 = m
                        .iter()
                        .map(|(s, k)| i128::from(value(s).expect("a size")).pow(*k))
                        .product();
                    // v >= q * mono, i.e. v * d >= n * mono.
                    assert!(
                        v * q.d >= q.n * mono,
                        "{text} at n={n}, m={mm}: {v} < {q:?} * {mono}"
                    );
                }
            }
        }
    }
}
