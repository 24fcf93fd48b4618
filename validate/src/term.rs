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

    /// Whether some part can be infinite or NaN for finite inputs: a max-reduction
    /// (`-inf` over an empty range), a scalar function (`log(0)`, `exp` overflow,
    /// `sqrt` of a negative number) or a division (by zero). `x * 0` of such an `x` is
    /// NaN, not 0, so the product is not simplified away.
    pub fn may_be_non_finite(&self) -> bool {
        match self {
            Term::Max { .. } | Term::Call(..) | Term::Bin(BinOp::Div, ..) => true,
            Term::Lit(v) => !v.is_finite(),
            Term::Unknown(_) | Term::Input { .. } | Term::Read { .. } => false,
            Term::Neg(a) => a.may_be_non_finite(),
            Term::Bin(_, a, b) | Term::Select(_, a, b) => {
                a.may_be_non_finite() || b.may_be_non_finite()
            }
            Term::Sum { body, .. } => body.may_be_non_finite(),
        }
    }

    /// Whether some part is [`Term::Unknown`].
    pub fn has_unknown(&self) -> bool {
        match self {
            Term::Unknown(_) => true,
            Term::Lit(_) | Term::Input { .. } | Term::Read { .. } => false,
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
