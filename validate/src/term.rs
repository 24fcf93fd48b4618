//! Value terms: the symbolic values the value check ([`crate::values`]) compares — what
//! an element of the source program is ([`crate::source`]) and what the kernel leaves
//! in an element of its output, both written over the sizes, index variables and the
//! elements of the input tensors (uninterpreted reals).
//!
//! The language is small on purpose: literals, input elements, the scalar operators of
//! ATL, a selection on an index condition and a summation over an index range. A sum
//! `Σ v ∈ [lo, hi). body` means the left-to-right accumulation, from zero, of its
//! terms in increasing `v` (what the interpreter and a C `+=` loop compute); a
//! selection `p ? a : b` evaluates only the side its condition picks. A max-reduction
//! `max v ∈ [lo, hi). body` is the left-to-right fold from `-inf` with the scalar `max`
//! (`atl_lang::functions::max_step`): it is never reordered, split or padded, since
//! `max` is neither associative nor has an identity on NaN and signed zeros.

use std::collections::BTreeMap;
use std::fmt;

use atl_lang::functions::ScalarFn;
use atl_lang::index::{IndexExpr, Pred};
use atl_lang::ir::BinOp;

/// A symbolic real value.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    Lit(f64),
    /// The element of an input tensor at these coordinates (in range wherever it
    /// occurs: out-of-range reads of the source are selections of zero).
    Input {
        name: String,
        coords: Vec<IndexExpr>,
    },
    /// A read of a temporary, a scalar or the output by the kernel: the index of the
    /// read in `Walk::sites`, with the substitution to apply to that site's variables
    /// (the kernel's loop variables renamed or solved). Only in terms built from the
    /// kernel, before [`crate::values`] resolves them.
    Read {
        site: usize,
        subst: BTreeMap<String, IndexExpr>,
    },
    /// An index's value as a scalar (`float(i + 1)`), exact over the reals.
    Coord(IndexExpr),
    /// The value of memory nothing wrote (a read the kernel's writes do not explain).
    Unknown(String),
    Neg(Box<Term>),
    Bin(BinOp, Box<Term>, Box<Term>),
    /// A scalar function (uninterpreted: two calls are equal when their functions and
    /// arguments are).
    Call(ScalarFn, Vec<Term>),
    /// `cond ? then : otherwise`.
    Select(Pred, Box<Term>, Box<Term>),
    /// `Σ var ∈ [lo, hi). body`, accumulated in increasing `var` from zero.
    Sum {
        var: String,
        lo: IndexExpr,
        hi: IndexExpr,
        body: Box<Term>,
    },
    /// `max var ∈ [lo, hi). body`: `acc = -inf`, then `acc = max(acc, body)` in
    /// increasing `var` (`-inf` when the range is empty).
    Max {
        var: String,
        lo: IndexExpr,
        hi: IndexExpr,
        body: Box<Term>,
    },
}

impl Term {
    pub fn zero() -> Term {
        Term::Lit(0.0)
    }

    pub fn is_zero(&self) -> bool {
        matches!(self, Term::Lit(v) if *v == 0.0)
    }

    pub fn bin(op: BinOp, a: Term, b: Term) -> Term {
        Term::Bin(op, Box::new(a), Box::new(b))
    }

    /// `cond ? value : 0`.
    pub fn guarded(cond: Pred, value: Term) -> Term {
        match cond {
            Pred::Bool(true) => value,
            Pred::Bool(false) => Term::zero(),
            cond => Term::Select(cond, Box::new(value), Box::new(Term::zero())),
        }
    }

    /// Applies `f` to every index expression and condition, also under binders (the
    /// caller keeps names apart: bound variables are fresh everywhere they are made).
    pub fn map_index(&self, f: &mut dyn FnMut(&IndexExpr) -> IndexExpr) -> Term {
        match self {
            Term::Lit(_) | Term::Unknown(_) => self.clone(),
            Term::Coord(index) => Term::Coord(f(index)),
            Term::Input { name, coords } => Term::Input {
                name: name.clone(),
                coords: coords.iter().map(&mut *f).collect(),
            },
            Term::Read { site, subst } => Term::Read {
                site: *site,
                subst: subst.iter().map(|(k, v)| (k.clone(), f(v))).collect(),
            },
            Term::Neg(a) => Term::Neg(Box::new(a.map_index(f))),
            Term::Bin(op, a, b) => Term::bin(*op, a.map_index(f), b.map_index(f)),
            Term::Call(func, args) => {
                Term::Call(*func, args.iter().map(|a| a.map_index(f)).collect())
            }
            Term::Select(p, a, b) => Term::Select(
                p.map_index(f),
                Box::new(a.map_index(f)),
                Box::new(b.map_index(f)),
            ),
            Term::Sum { var, lo, hi, body } => Term::Sum {
                var: var.clone(),
                lo: f(lo),
                hi: f(hi),
                body: Box::new(body.map_index(f)),
            },
            Term::Max { var, lo, hi, body } => Term::Max {
                var: var.clone(),
                lo: f(lo),
                hi: f(hi),
                body: Box::new(body.map_index(f)),
            },
        }
    }

    /// `self` with the variable `var` replaced by `value`.
    pub fn subst(&self, var: &str, value: &IndexExpr) -> Term {
        self.map_index(&mut |e| e.subst(var, value))
    }

    /// Whether the term is proved finite for every finite input (inputs are assumed
    /// finite, TRUSTED.md), in double and in single precision: a literal within
    /// `float`'s range, an input element, a negation, a
    /// selection whose two sides are surely finite, `abs`/`max`/`min` of surely finite
    /// arguments (their result is one of them, or an absolute value), `select`
    /// returning surely finite values, and a surely finite term times a literal of
    /// magnitude at most 1 (then `|c * x| <= |x|`, and rounding is monotonic). Nothing
    /// else: a sum, difference or product of two non-constant terms can overflow
    /// (`1e308 + 1e308`, `1e200 * 1e200`), a sum over a range too, a scalar function
    /// can be infinite or NaN (`log(0)`, `exp(1000)`, `sqrt(-1)`), a division too
    /// (`1 / 0`), a max-reduction is `-inf` over an empty range, and memory nothing
    /// explains ([`Term::Unknown`]) may hold anything. Asked of resolved terms: a
    /// [`Term::Read`] (a read not yet replaced by what was written) is not surely
    /// finite.
    ///
    /// This is the condition of `x * 0 = 0` in the value check: for an infinite or
    /// NaN `x`, `x * 0` is NaN.
    pub fn surely_finite(&self) -> bool {
        match self {
            // Finite in single precision too: a kernel in `float` rounds `1e300` to
            // an infinity.
            Term::Lit(v) => v.is_finite() && v.abs() <= f64::from(f32::MAX),
            // An `int64_t` converted: at most 2^63, finite in single precision.
            Term::Input { .. } | Term::Coord(_) => true,
            Term::Neg(a) => a.surely_finite(),
            Term::Select(_, a, b) => a.surely_finite() && b.surely_finite(),
            Term::Bin(BinOp::Mul, a, b) => match (&**a, &**b) {
                (Term::Lit(c), x) | (x, Term::Lit(c)) => c.abs() <= 1.0 && x.surely_finite(),
                _ => false,
            },
            Term::Call(func, args) => match func {
                ScalarFn::Abs | ScalarFn::Max | ScalarFn::Min => {
                    args.iter().all(Term::surely_finite)
                }
                // `a OP b ? x : y` is `x` or `y`, whatever `a` and `b` are.
                ScalarFn::Select(_) => args.iter().skip(2).all(Term::surely_finite),
                ScalarFn::Sqrt | ScalarFn::Exp | ScalarFn::Log => false,
            },
            Term::Bin(BinOp::Add | BinOp::Sub | BinOp::Div, ..)
            | Term::Sum { .. }
            | Term::Max { .. }
            | Term::Unknown(_)
            | Term::Read { .. } => false,
        }
    }

    /// Whether some part is [`Term::Unknown`].
    pub fn has_unknown(&self) -> bool {
        match self {
            Term::Unknown(_) => true,
            Term::Lit(_) | Term::Coord(_) | Term::Input { .. } | Term::Read { .. } => false,
            Term::Neg(a) => a.has_unknown(),
            Term::Bin(_, a, b) | Term::Select(_, a, b) => a.has_unknown() || b.has_unknown(),
            Term::Call(_, args) => args.iter().any(Term::has_unknown),
            Term::Sum { body, .. } | Term::Max { body, .. } => body.has_unknown(),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Lit(v) => write!(f, "{v}"),
            Term::Input { name, coords } => {
                let c: Vec<String> = coords.iter().map(|c| c.to_string()).collect();
                write!(f, "{name}[{}]", c.join(", "))
            }
            Term::Coord(index) => write!(f, "float({index})"),
            Term::Read { site, .. } => write!(f, "<read #{site}>"),
            Term::Unknown(why) => write!(f, "<{why}>"),
            Term::Neg(a) => write!(f, "-({a})"),
            Term::Bin(op, a, b) => write!(f, "({a} {} {b})", op.symbol()),
            Term::Call(func, args) => {
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                write!(f, "{func}({})", args.join(", "))
            }
            Term::Select(p, a, b) if b.is_zero() => write!(f, "[{p}] * {a}"),
            Term::Select(p, a, b) => write!(f, "({p} ? {a} : {b})"),
            Term::Sum { var, lo, hi, body } => write!(f, "(sum {var} in {lo}..{hi}: {body})"),
            Term::Max { var, lo, hi, body } => write!(f, "(max {var} in {lo}..{hi}: {body})"),
        }
    }
}
