//! The scalar functions of the language, in one table: `sqrt`, `exp`, `log`, `abs`,
//! value `max`/`min`, and the comparison-select `select(a > b, x, y)`. Each entry says
//! its surface name, its arity, its meaning on `f64` ([`ScalarFn::apply`], which the
//! reference interpreter and the loop-IR interpreter both call), the C it is printed
//! as, and whether it maps zeros to zero (what the pad-type checker needs: a function
//! of padding is padding only then).
//!
//! They apply to scalars; on tensors, write the `gen`: `gen i < n: sqrt(x[i])`.

use std::fmt;

use crate::index::CmpOp;

/// A scalar function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarFn {
    Sqrt,
    Exp,
    Log,
    Abs,
    /// `max(a, b)`: `a > b ? a : b`.
    Max,
    /// `min(a, b)`: `a < b ? a : b`.
    Min,
    /// `select(a OP b, x, y)`: `x` where the comparison holds, else `y`; its four
    /// arguments are `a, b, x, y`.
    Select(CmpOp),
}

/// One row of the table.
struct Entry {
    func: ScalarFn,
    name: &'static str,
    arity: usize,
    /// The C spelling for `double` and for `float` (`{}` for the arguments).
    c_double: &'static str,
    c_float: &'static str,
    zero_to_zero: bool,
    /// glibc's vector math library (libmvec, x86-64) has SIMD variants of the C
    /// function, which kernels built with `--fp fast` call in their SIMD loops.
    libmvec: bool,
    doc: &'static str,
}

/// Every function with a name of its own (`select` is written with a comparison).
const TABLE: &[Entry] = &[
    Entry {
        func: ScalarFn::Sqrt,
        name: "sqrt",
        arity: 1,
        c_double: "sqrt",
        c_float: "sqrtf",
        zero_to_zero: true,
        libmvec: false,
        doc: "square root (NaN below zero)",
    },
    Entry {
        func: ScalarFn::Exp,
        name: "exp",
        arity: 1,
        c_double: "exp",
        c_float: "expf",
        zero_to_zero: false,
        libmvec: true,
        doc: "exponential",
    },
    Entry {
        func: ScalarFn::Log,
        name: "log",
        arity: 1,
        c_double: "log",
        c_float: "logf",
        zero_to_zero: false,
        libmvec: true,
        doc: "natural logarithm (-inf at zero, NaN below)",
    },
    Entry {
        func: ScalarFn::Abs,
        name: "abs",
        arity: 1,
        c_double: "fabs",
        c_float: "fabsf",
        zero_to_zero: true,
        libmvec: false,
        doc: "absolute value",
    },
    Entry {
        func: ScalarFn::Max,
        name: "max",
        arity: 2,
        c_double: "",
        c_float: "",
        zero_to_zero: true,
        libmvec: false,
        doc: "the larger value: `a > b ? a : b`",
    },
    Entry {
        func: ScalarFn::Min,
        name: "min",
        arity: 2,
        c_double: "",
        c_float: "",
        zero_to_zero: true,
        libmvec: false,
        doc: "the smaller value: `a < b ? a : b`",
    },
];

/// The value of a max-reduction over an empty range (`max k in 0..0: e`): the
/// identity of `max`, what C's `-INFINITY` is.
pub const MAX_EMPTY: f64 = f64::NEG_INFINITY;

/// One step of the max-reduction `max k in lo..hi: e`: the accumulator starts at
/// [`MAX_EMPTY`] and becomes `max(acc, e_k)` for `k = lo, lo + 1, …` in order. Both
/// interpreters call this, the C kernels do the same with the `max` helper.
pub fn max_step(acc: f64, x: f64) -> f64 {
    ScalarFn::Max.apply(&[acc, x])
}

impl ScalarFn {
    /// Every function with a name of its own, in the table's order.
    pub fn named() -> impl Iterator<Item = ScalarFn> {
        TABLE.iter().map(|e| e.func)
    }

    /// Every function: the named ones, then `select` with each comparison.
    pub fn all() -> impl Iterator<Item = ScalarFn> {
        const COMPARISONS: [CmpOp; 6] = [
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
            CmpOp::Eq,
            CmpOp::Ne,
        ];
        Self::named().chain(COMPARISONS.into_iter().map(ScalarFn::Select))
    }

    /// The function called `name` (`select` is not one: it takes a comparison).
    pub fn from_name(name: &str) -> Option<ScalarFn> {
        TABLE.iter().find(|e| e.name == name).map(|e| e.func)
    }

    fn entry(self) -> Option<&'static Entry> {
        TABLE.iter().find(|e| e.func == self)
    }

    /// The surface name.
    pub fn name(self) -> &'static str {
        match self {
            ScalarFn::Select(_) => "select",
            f => f.entry().map_or("?", |e| e.name),
        }
    }

    /// The name in identifiers (the let-lifting rules' names, the Rocq statements'
    /// function names): the surface name, and for `select` the comparison too
    /// (`select_gt`), since each comparison is a different function.
    pub fn ident_name(self) -> String {
        match self {
            ScalarFn::Select(op) => format!("select_{}", comparison_ident(op)),
            f => f.name().to_string(),
        }
    }

    /// The number of scalar arguments (`select`: `a, b, x, y`).
    pub fn arity(self) -> usize {
        match self {
            ScalarFn::Select(_) => 4,
            f => f.entry().map_or(0, |e| e.arity),
        }
    }

    /// What the function does, for documentation and help texts.
    pub fn doc(self) -> &'static str {
        match self {
            ScalarFn::Select(_) => "`x` where `a OP b` holds, else `y` (OP: < <= > >= == !=)",
            f => f.entry().map_or("", |e| e.doc),
        }
    }

    /// Whether `f(0, …, 0) = 0`, so that a function of padding is padding (`select`
    /// returns one of its last two arguments: zero when both are).
    pub fn zero_to_zero(self) -> bool {
        match self {
            ScalarFn::Select(_) => true,
            f => f.entry().is_some_and(|e| e.zero_to_zero),
        }
    }

    /// Which arguments must be zero for the result to be zero by
    /// [`ScalarFn::zero_to_zero`]: all of them, except `select`'s comparison operands.
    pub fn result_arguments(self) -> std::ops::Range<usize> {
        match self {
            ScalarFn::Select(_) => 2..4,
            f => 0..f.arity(),
        }
    }

    /// Whether glibc's libmvec has SIMD variants of the function's C spelling
    /// ([`ScalarFn::c_name`]).
    pub fn in_libmvec(self) -> bool {
        self.entry().is_some_and(|e| e.libmvec)
    }

    /// The C library function for a one-argument function (`None` for those printed
    /// with a helper or an operator).
    pub fn c_name(self, double: bool) -> Option<&'static str> {
        let e = self.entry()?;
        let name = if double { e.c_double } else { e.c_float };
        (!name.is_empty()).then_some(name)
    }

    /// The meaning (DESIGN §3.2 extended): `args` has [`ScalarFn::arity`] values.
    ///
    /// # Panics
    ///
    /// If `args` has the wrong length (a caller's bug).
    pub fn apply(self, args: &[f64]) -> f64 {
        assert_eq!(args.len(), self.arity(), "arguments of `{}`", self.name());
        match self {
            ScalarFn::Sqrt => args[0].sqrt(),
            ScalarFn::Exp => args[0].exp(),
            ScalarFn::Log => args[0].ln(),
            ScalarFn::Abs => args[0].abs(),
            ScalarFn::Max => {
                if args[0] > args[1] {
                    args[0]
                } else {
                    args[1]
                }
            }
            ScalarFn::Min => {
                if args[0] < args[1] {
                    args[0]
                } else {
                    args[1]
                }
            }
            ScalarFn::Select(op) => {
                if op.holds(args[0], args[1]) {
                    args[2]
                } else {
                    args[3]
                }
            }
        }
    }
}

/// A comparison's name in identifiers: `lt`, `le`, `gt`, `ge`, `eq`, `ne`.
pub fn comparison_ident(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "lt",
        CmpOp::Le => "le",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "ge",
        CmpOp::Eq => "eq",
        CmpOp::Ne => "ne",
    }
}

impl fmt::Display for ScalarFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_agrees_with_the_meanings() {
        for f in ScalarFn::named() {
            assert_eq!(ScalarFn::from_name(f.name()), Some(f));
            let zeros = vec![0.0; f.arity()];
            assert_eq!(f.apply(&zeros) == 0.0, f.zero_to_zero(), "{f}");
        }
        assert_eq!(ScalarFn::Max.apply(&[2.0, -3.0]), 2.0);
        assert_eq!(ScalarFn::Min.apply(&[2.0, -3.0]), -3.0);
        assert_eq!(ScalarFn::Abs.apply(&[-1.5]), 1.5);
        assert_eq!(
            ScalarFn::Select(CmpOp::Gt).apply(&[1.0, 0.0, 7.0, 8.0]),
            7.0
        );
        assert_eq!(
            ScalarFn::Select(CmpOp::Gt).apply(&[0.0, 0.0, 7.0, 8.0]),
            8.0
        );
        assert!(ScalarFn::Sqrt.apply(&[-1.0]).is_nan());
        assert_eq!(ScalarFn::Log.apply(&[0.0]), f64::NEG_INFINITY);
    }
}
