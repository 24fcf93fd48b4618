//! Index expressions and predicates: the integer sublanguage of ATL.
//!
//! Index expressions appear in generator/sum bounds, accesses, guards, shapes and
//! reshape amounts. Their arithmetic is on unbounded integers with the conventions of
//! DESIGN §3.2 (those of Rocq's `Z`): `/` is floor division, `a % b = a - b*(a/b)`,
//! `a / 0 = 0`, `a % 0 = a`, `cdiv(a, b) = -((-a) / b)`. Evaluation here uses `i64`
//! with checked arithmetic: an overflow is reported, never wrapped.

use std::collections::BTreeSet;
use std::fmt;

/// A binary operator on index expressions. `CDiv`, `Min` and `Max` are written as calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexOp {
    Add,
    Sub,
    Mul,
    /// Floor division.
    Div,
    /// Floor modulo (the sign follows the divisor).
    Mod,
    /// Ceiling division, `cdiv(a, b) = -((-a) / b)`.
    CDiv,
    Min,
    Max,
}

impl IndexOp {
    /// The surface spelling: an infix symbol or a function name.
    pub fn symbol(self) -> &'static str {
        match self {
            IndexOp::Add => "+",
            IndexOp::Sub => "-",
            IndexOp::Mul => "*",
            IndexOp::Div => "/",
            IndexOp::Mod => "%",
            IndexOp::CDiv => "cdiv",
            IndexOp::Min => "min",
            IndexOp::Max => "max",
        }
    }

    /// Whether the operator is written as a call `op(a, b)` rather than infix.
    pub fn is_call(self) -> bool {
        matches!(self, IndexOp::CDiv | IndexOp::Min | IndexOp::Max)
    }
}

/// An integer index expression over sizes, binder variables and (in rule patterns)
/// metavariables.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexExpr {
    Const(i64),
    /// A size or a binder variable (after name resolution both are plain names).
    Var(String),
    /// A rule metavariable `?k`; never present in a program.
    Meta(String),
    Neg(Box<IndexExpr>),
    Bin(IndexOp, Box<IndexExpr>, Box<IndexExpr>),
    /// `pos[e]`: an element of a one-dimensional integer input (an index array,
    /// `input pos : int[n + 1] in 0..nnz + 1`). The array is fixed for a whole
    /// evaluation, so a load is a pure function of its index: rules treat it as any
    /// other index term, and the solver as an uninterpreted function constrained by
    /// the declared facts. Out of range it is 0 (every load a kernel performs is
    /// proved in range).
    Load(String, Box<IndexExpr>),
}

/// A comparison operator of a predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// Applies the comparison to two integers, or to two values (with C's meaning for
    /// doubles: false when either is NaN, except `!=`).
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }

    /// The comparison that holds exactly when `self` does not.
    pub fn negate(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
        }
    }
}

/// A predicate over index expressions (guards, `assume` facts, side conditions).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pred {
    Bool(bool),
    Cmp(CmpOp, IndexExpr, IndexExpr),
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
    Not(Box<Pred>),
}

/// Why an index expression could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexEvalError {
    /// A variable without a value in the environment.
    Unbound(String),
    /// A metavariable: patterns cannot be evaluated.
    Meta(String),
    /// The result does not fit in 64 bits.
    Overflow,
    /// A load from an index array where no array values are at hand.
    Load(String),
}

impl fmt::Display for IndexEvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexEvalError::Unbound(name) => write!(f, "index variable `{name}` has no value"),
            IndexEvalError::Meta(name) => write!(f, "metavariable `?{name}` cannot be evaluated"),
            IndexEvalError::Overflow => write!(f, "index arithmetic overflows 64 bits"),
            IndexEvalError::Load(name) => {
                write!(f, "the index array `{name}` has no values here")
            }
        }
    }
}

/// Floor division with `a / 0 = 0` (DESIGN §3.2). `None` on overflow (`i64::MIN / -1`).
pub fn floor_div(a: i64, b: i64) -> Option<i64> {
    narrow(apply_index_op_wide(IndexOp::Div, a.into(), b.into()))
}

/// Floor modulo with `a % 0 = a` (DESIGN §3.2): `a - b * floor_div(a, b)`.
pub fn floor_mod(a: i64, b: i64) -> Option<i64> {
    narrow(apply_index_op_wide(IndexOp::Mod, a.into(), b.into()))
}

/// Ceiling division `cdiv(a, b) = -((-a) / b)` with the floor convention.
pub fn ceil_div(a: i64, b: i64) -> Option<i64> {
    narrow(apply_index_op_wide(IndexOp::CDiv, a.into(), b.into()))
}

/// Applies a binary index operator to two integers (checked: `None` when the exact
/// result leaves 64 bits).
pub fn apply_index_op(op: IndexOp, a: i64, b: i64) -> Option<i64> {
    narrow(apply_index_op_wide(op, a.into(), b.into()))
}

fn narrow(v: Option<i128>) -> Option<i64> {
    v.and_then(|v| i64::try_from(v).ok())
}

/// An index operator on 128-bit integers (checked): the exact value wherever it fits.
/// The one definition of the operators' arithmetic; [`apply_index_op`] is it narrowed
/// to 64 bits, and evaluating in 128 bits serves values that leave 64 bits (a
/// counterexample to "this fits in `int64_t`" has to be checked somewhere).
pub fn apply_index_op_wide(op: IndexOp, a: i128, b: i128) -> Option<i128> {
    let floor_div = |a: i128, b: i128| -> Option<i128> {
        if b == 0 {
            return Some(0);
        }
        let q = a.checked_div(b)?;
        if (a % b != 0) && ((a < 0) != (b < 0)) {
            q.checked_sub(1)
        } else {
            Some(q)
        }
    };
    match op {
        IndexOp::Add => a.checked_add(b),
        IndexOp::Sub => a.checked_sub(b),
        IndexOp::Mul => a.checked_mul(b),
        IndexOp::Div => floor_div(a, b),
        IndexOp::Mod if b == 0 => Some(a),
        IndexOp::Mod => a.checked_sub(b.checked_mul(floor_div(a, b)?)?),
        IndexOp::CDiv => floor_div(a.checked_neg()?, b)?.checked_neg(),
        IndexOp::Min => Some(a.min(b)),
        IndexOp::Max => Some(a.max(b)),
    }
}

impl IndexExpr {
    /// Evaluates in 128-bit arithmetic under `env` (see [`apply_index_op_wide`]); a
    /// load is an error ([`IndexExpr::eval_wide_with`] gives the arrays).
    pub fn eval_wide(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<i128, IndexEvalError> {
        self.eval_wide_with(env, &|_, _| None)
    }

    /// [`IndexExpr::eval_wide`] with `load(array, index)` giving the elements of index
    /// arrays (`None`: no values for that array).
    pub fn eval_wide_with(
        &self,
        env: &dyn Fn(&str) -> Option<i64>,
        load: &dyn Fn(&str, i64) -> Option<i64>,
    ) -> Result<i128, IndexEvalError> {
        match self {
            IndexExpr::Const(c) => Ok(i128::from(*c)),
            IndexExpr::Var(name) => env(name)
                .map(i128::from)
                .ok_or_else(|| IndexEvalError::Unbound(name.clone())),
            IndexExpr::Meta(name) => Err(IndexEvalError::Meta(name.clone())),
            IndexExpr::Neg(a) => a
                .eval_wide_with(env, load)?
                .checked_neg()
                .ok_or(IndexEvalError::Overflow),
            IndexExpr::Bin(op, a, b) => {
                let a = a.eval_wide_with(env, load)?;
                let b = b.eval_wide_with(env, load)?;
                apply_index_op_wide(*op, a, b).ok_or(IndexEvalError::Overflow)
            }
            IndexExpr::Load(array, index) => {
                let at = i64::try_from(index.eval_wide_with(env, load)?)
                    .map_err(|_| IndexEvalError::Overflow)?;
                load(array, at)
                    .map(i128::from)
                    .ok_or_else(|| IndexEvalError::Load(array.clone()))
            }
        }
    }

    pub fn var(name: impl Into<String>) -> IndexExpr {
        IndexExpr::Var(name.into())
    }

    pub fn bin(op: IndexOp, a: IndexExpr, b: IndexExpr) -> IndexExpr {
        IndexExpr::Bin(op, Box::new(a), Box::new(b))
    }

    #[allow(clippy::should_implement_trait)]
    pub fn add(a: IndexExpr, b: IndexExpr) -> IndexExpr {
        IndexExpr::bin(IndexOp::Add, a, b)
    }

    #[allow(clippy::should_implement_trait)]
    pub fn sub(a: IndexExpr, b: IndexExpr) -> IndexExpr {
        IndexExpr::bin(IndexOp::Sub, a, b)
    }

    #[allow(clippy::should_implement_trait)]
    pub fn mul(a: IndexExpr, b: IndexExpr) -> IndexExpr {
        IndexExpr::bin(IndexOp::Mul, a, b)
    }

    /// Evaluates under `env`, which maps names to values; a load is an error
    /// ([`IndexExpr::eval_with`] gives the arrays).
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<i64, IndexEvalError> {
        self.eval_with(env, &|_, _| None)
    }

    /// [`IndexExpr::eval`] with `load(array, index)` giving the elements of index arrays.
    pub fn eval_with(
        &self,
        env: &dyn Fn(&str) -> Option<i64>,
        load: &dyn Fn(&str, i64) -> Option<i64>,
    ) -> Result<i64, IndexEvalError> {
        match self {
            IndexExpr::Const(c) => Ok(*c),
            IndexExpr::Var(name) => env(name).ok_or_else(|| IndexEvalError::Unbound(name.clone())),
            IndexExpr::Meta(name) => Err(IndexEvalError::Meta(name.clone())),
            IndexExpr::Neg(a) => a
                .eval_with(env, load)?
                .checked_neg()
                .ok_or(IndexEvalError::Overflow),
            IndexExpr::Bin(op, a, b) => {
                let a = a.eval_with(env, load)?;
                let b = b.eval_with(env, load)?;
                apply_index_op(*op, a, b).ok_or(IndexEvalError::Overflow)
            }
            IndexExpr::Load(array, index) => {
                let at = index.eval_with(env, load)?;
                load(array, at).ok_or_else(|| IndexEvalError::Load(array.clone()))
            }
        }
    }

    /// The value if the expression mentions no variable.
    pub fn as_const(&self) -> Option<i64> {
        self.eval(&|_| None).ok()
    }

    /// Adds the free variable names (not metavariables) to `out`.
    pub fn collect_vars(&self, out: &mut BTreeSet<String>) {
        match self {
            IndexExpr::Const(_) | IndexExpr::Meta(_) => {}
            IndexExpr::Var(name) => {
                out.insert(name.clone());
            }
            IndexExpr::Neg(a) | IndexExpr::Load(_, a) => a.collect_vars(out),
            IndexExpr::Bin(_, a, b) => {
                a.collect_vars(out);
                b.collect_vars(out);
            }
        }
    }

    /// Adds the index arrays it loads from to `out`.
    pub fn collect_loads(&self, out: &mut BTreeSet<String>) {
        match self {
            IndexExpr::Const(_) | IndexExpr::Meta(_) | IndexExpr::Var(_) => {}
            IndexExpr::Neg(a) => a.collect_loads(out),
            IndexExpr::Load(array, a) => {
                out.insert(array.clone());
                a.collect_loads(out);
            }
            IndexExpr::Bin(_, a, b) => {
                a.collect_loads(out);
                b.collect_loads(out);
            }
        }
    }

    /// Whether it loads from an index array.
    pub fn has_load(&self) -> bool {
        match self {
            IndexExpr::Const(_) | IndexExpr::Meta(_) | IndexExpr::Var(_) => false,
            IndexExpr::Load(..) => true,
            IndexExpr::Neg(a) => a.has_load(),
            IndexExpr::Bin(_, a, b) => a.has_load() || b.has_load(),
        }
    }

    /// The free variable names.
    pub fn vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect_vars(&mut out);
        out
    }

    /// Whether `name` occurs as a variable.
    pub fn mentions(&self, name: &str) -> bool {
        match self {
            IndexExpr::Const(_) | IndexExpr::Meta(_) => false,
            IndexExpr::Var(v) => v == name,
            IndexExpr::Neg(a) | IndexExpr::Load(_, a) => a.mentions(name),
            IndexExpr::Bin(_, a, b) => a.mentions(name) || b.mentions(name),
        }
    }

    /// Whether a metavariable occurs.
    pub fn has_meta(&self) -> bool {
        match self {
            IndexExpr::Const(_) | IndexExpr::Var(_) => false,
            IndexExpr::Meta(_) => true,
            IndexExpr::Neg(a) | IndexExpr::Load(_, a) => a.has_meta(),
            IndexExpr::Bin(_, a, b) => a.has_meta() || b.has_meta(),
        }
    }

    /// Replaces every occurrence of variable `name` by `value`. Index expressions have no
    /// binders, so this cannot capture.
    pub fn subst(&self, name: &str, value: &IndexExpr) -> IndexExpr {
        match self {
            IndexExpr::Var(v) if v == name => value.clone(),
            IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => self.clone(),
            IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(a.subst(name, value))),
            IndexExpr::Load(array, a) => {
                IndexExpr::Load(array.clone(), Box::new(a.subst(name, value)))
            }
            IndexExpr::Bin(op, a, b) => {
                IndexExpr::bin(*op, a.subst(name, value), b.subst(name, value))
            }
        }
    }

    /// Renames variable `from` to `to`.
    pub fn rename(&self, from: &str, to: &str) -> IndexExpr {
        self.subst(from, &IndexExpr::Var(to.to_string()))
    }

    /// Number of nodes; used for cost measures and reduction orders.
    pub fn size(&self) -> usize {
        match self {
            IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => 1,
            IndexExpr::Neg(a) | IndexExpr::Load(_, a) => 1 + a.size(),
            IndexExpr::Bin(_, a, b) => 1 + a.size() + b.size(),
        }
    }
}

impl Pred {
    pub fn cmp(op: CmpOp, a: IndexExpr, b: IndexExpr) -> Pred {
        Pred::Cmp(op, a, b)
    }

    pub fn and(a: Pred, b: Pred) -> Pred {
        Pred::And(Box::new(a), Box::new(b))
    }

    pub fn or(a: Pred, b: Pred) -> Pred {
        Pred::Or(Box::new(a), Box::new(b))
    }

    #[allow(clippy::should_implement_trait)]
    pub fn not(a: Pred) -> Pred {
        Pred::Not(Box::new(a))
    }

    /// Evaluates under `env` in 128-bit arithmetic ([`IndexExpr::eval_wide`]).
    pub fn eval_wide(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<bool, IndexEvalError> {
        self.eval_wide_with(env, &|_, _| None)
    }

    /// [`Pred::eval_wide`] with the elements of index arrays ([`IndexExpr::eval_with`]).
    pub fn eval_wide_with(
        &self,
        env: &dyn Fn(&str) -> Option<i64>,
        load: &dyn Fn(&str, i64) -> Option<i64>,
    ) -> Result<bool, IndexEvalError> {
        match self {
            Pred::Bool(b) => Ok(*b),
            Pred::Cmp(op, a, b) => {
                Ok(op.holds(a.eval_wide_with(env, load)?, b.eval_wide_with(env, load)?))
            }
            Pred::And(a, b) => Ok(a.eval_wide_with(env, load)? && b.eval_wide_with(env, load)?),
            Pred::Or(a, b) => Ok(a.eval_wide_with(env, load)? || b.eval_wide_with(env, load)?),
            Pred::Not(a) => Ok(!a.eval_wide_with(env, load)?),
        }
    }

    /// Evaluates under `env`.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<bool, IndexEvalError> {
        self.eval_with(env, &|_, _| None)
    }

    /// [`Pred::eval`] with the elements of index arrays ([`IndexExpr::eval_with`]).
    pub fn eval_with(
        &self,
        env: &dyn Fn(&str) -> Option<i64>,
        load: &dyn Fn(&str, i64) -> Option<i64>,
    ) -> Result<bool, IndexEvalError> {
        match self {
            Pred::Bool(b) => Ok(*b),
            Pred::Cmp(op, a, b) => Ok(op.holds(a.eval_with(env, load)?, b.eval_with(env, load)?)),
            Pred::And(a, b) => Ok(a.eval_with(env, load)? && b.eval_with(env, load)?),
            Pred::Or(a, b) => Ok(a.eval_with(env, load)? || b.eval_with(env, load)?),
            Pred::Not(a) => Ok(!a.eval_with(env, load)?),
        }
    }

    /// Adds the index arrays it loads from to `out`.
    pub fn collect_loads(&self, out: &mut BTreeSet<String>) {
        match self {
            Pred::Bool(_) => {}
            Pred::Cmp(_, a, b) => {
                a.collect_loads(out);
                b.collect_loads(out);
            }
            Pred::And(a, b) | Pred::Or(a, b) => {
                a.collect_loads(out);
                b.collect_loads(out);
            }
            Pred::Not(a) => a.collect_loads(out),
        }
    }

    /// Whether it loads from an index array.
    pub fn has_load(&self) -> bool {
        match self {
            Pred::Bool(_) => false,
            Pred::Cmp(_, a, b) => a.has_load() || b.has_load(),
            Pred::And(a, b) | Pred::Or(a, b) => a.has_load() || b.has_load(),
            Pred::Not(a) => a.has_load(),
        }
    }

    pub fn collect_vars(&self, out: &mut BTreeSet<String>) {
        match self {
            Pred::Bool(_) => {}
            Pred::Cmp(_, a, b) => {
                a.collect_vars(out);
                b.collect_vars(out);
            }
            Pred::And(a, b) | Pred::Or(a, b) => {
                a.collect_vars(out);
                b.collect_vars(out);
            }
            Pred::Not(a) => a.collect_vars(out),
        }
    }

    pub fn vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect_vars(&mut out);
        out
    }

    pub fn mentions(&self, name: &str) -> bool {
        match self {
            Pred::Bool(_) => false,
            Pred::Cmp(_, a, b) => a.mentions(name) || b.mentions(name),
            Pred::And(a, b) | Pred::Or(a, b) => a.mentions(name) || b.mentions(name),
            Pred::Not(a) => a.mentions(name),
        }
    }

    pub fn has_meta(&self) -> bool {
        match self {
            Pred::Bool(_) => false,
            Pred::Cmp(_, a, b) => a.has_meta() || b.has_meta(),
            Pred::And(a, b) | Pred::Or(a, b) => a.has_meta() || b.has_meta(),
            Pred::Not(a) => a.has_meta(),
        }
    }

    /// Replaces every occurrence of variable `name` by `value`.
    pub fn subst(&self, name: &str, value: &IndexExpr) -> Pred {
        match self {
            Pred::Bool(b) => Pred::Bool(*b),
            Pred::Cmp(op, a, b) => Pred::Cmp(*op, a.subst(name, value), b.subst(name, value)),
            Pred::And(a, b) => Pred::and(a.subst(name, value), b.subst(name, value)),
            Pred::Or(a, b) => Pred::or(a.subst(name, value), b.subst(name, value)),
            Pred::Not(a) => Pred::not(a.subst(name, value)),
        }
    }

    pub fn rename(&self, from: &str, to: &str) -> Pred {
        self.subst(from, &IndexExpr::Var(to.to_string()))
    }

    /// Applies `f` to every index expression in the predicate.
    pub fn map_index(&self, f: &mut dyn FnMut(&IndexExpr) -> IndexExpr) -> Pred {
        match self {
            Pred::Bool(b) => Pred::Bool(*b),
            Pred::Cmp(op, a, b) => Pred::Cmp(*op, f(a), f(b)),
            Pred::And(a, b) => {
                let a = a.map_index(f);
                Pred::and(a, b.map_index(f))
            }
            Pred::Or(a, b) => {
                let a = a.map_index(f);
                Pred::or(a, b.map_index(f))
            }
            Pred::Not(a) => Pred::not(a.map_index(f)),
        }
    }

    /// The conjuncts of a conjunction, flattened (`a && (b && c)` gives `[a, b, c]`).
    pub fn conjuncts(&self) -> Vec<&Pred> {
        match self {
            Pred::And(a, b) => {
                let mut out = a.conjuncts();
                out.extend(b.conjuncts());
                out
            }
            other => vec![other],
        }
    }

    pub fn size(&self) -> usize {
        match self {
            Pred::Bool(_) => 1,
            Pred::Cmp(_, a, b) => 1 + a.size() + b.size(),
            Pred::And(a, b) | Pred::Or(a, b) => 1 + a.size() + b.size(),
            Pred::Not(a) => 1 + a.size(),
        }
    }
}

// Display gives the canonical ASCII surface syntax with minimal parentheses; the pretty
// printer of whole programs reuses it, and the parser reads it back.

fn index_prec(e: &IndexExpr) -> u8 {
    match e {
        IndexExpr::Const(c) if *c < 0 => 3,
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) | IndexExpr::Load(..) => 4,
        IndexExpr::Neg(_) => 3,
        IndexExpr::Bin(op, _, _) => match op {
            IndexOp::Add | IndexOp::Sub => 1,
            IndexOp::Mul | IndexOp::Div | IndexOp::Mod => 2,
            IndexOp::CDiv | IndexOp::Min | IndexOp::Max => 4,
        },
    }
}

fn write_index_at(f: &mut fmt::Formatter<'_>, e: &IndexExpr, min_prec: u8) -> fmt::Result {
    if index_prec(e) < min_prec {
        write!(f, "(")?;
        write_index_at(f, e, 0)?;
        return write!(f, ")");
    }
    match e {
        IndexExpr::Const(c) => write!(f, "{c}"),
        IndexExpr::Var(v) => write!(f, "{v}"),
        IndexExpr::Meta(v) => write!(f, "?{v}"),
        IndexExpr::Load(array, a) => {
            write!(f, "{array}[")?;
            write_index_at(f, a, 0)?;
            write!(f, "]")
        }
        IndexExpr::Neg(a) => {
            write!(f, "-")?;
            // `-3` parses as the constant -3; the negation of the constant 3 is `-(3)`.
            let min = if matches!(**a, IndexExpr::Const(_)) {
                5
            } else {
                4
            };
            write_index_at(f, a, min)
        }
        IndexExpr::Bin(op, a, b) if op.is_call() => {
            write!(f, "{}(", op.symbol())?;
            write_index_at(f, a, 0)?;
            write!(f, ", ")?;
            write_index_at(f, b, 0)?;
            write!(f, ")")
        }
        IndexExpr::Bin(op, a, b) => {
            let p = index_prec(e);
            // Left-associative: the right operand needs a strictly higher precedence.
            write_index_at(f, a, p)?;
            write!(f, " {} ", op.symbol())?;
            write_index_at(f, b, p + 1)
        }
    }
}

impl fmt::Display for IndexExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_index_at(f, self, 0)
    }
}

fn pred_prec(p: &Pred) -> u8 {
    match p {
        Pred::Or(..) => 1,
        Pred::And(..) => 2,
        Pred::Not(_) => 3,
        Pred::Cmp(..) | Pred::Bool(_) => 4,
    }
}

fn write_pred_at(f: &mut fmt::Formatter<'_>, p: &Pred, min_prec: u8) -> fmt::Result {
    if pred_prec(p) < min_prec {
        write!(f, "(")?;
        write_pred_at(f, p, 0)?;
        return write!(f, ")");
    }
    match p {
        Pred::Bool(b) => write!(f, "{b}"),
        Pred::Cmp(op, a, b) => write!(f, "{a} {} {b}", op.symbol()),
        Pred::And(a, b) => {
            write_pred_at(f, a, 2)?;
            write!(f, " && ")?;
            write_pred_at(f, b, 3)
        }
        Pred::Or(a, b) => {
            write_pred_at(f, a, 1)?;
            write!(f, " || ")?;
            write_pred_at(f, b, 2)
        }
        Pred::Not(a) => {
            write!(f, "!")?;
            // `!i < n` would parse back the same, but `!(i < n)` is what people read.
            let min = if matches!(**a, Pred::Cmp(..)) { 5 } else { 3 };
            write_pred_at(f, a, min)
        }
    }
}

impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_pred_at(f, self, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_conventions_match_design() {
        // Hand-computed against the definitions in DESIGN §3.2.
        assert_eq!(floor_div(7, 2), Some(3));
        assert_eq!(floor_div(-7, 2), Some(-4));
        assert_eq!(floor_div(7, -2), Some(-4));
        assert_eq!(floor_div(-7, -2), Some(3));
        assert_eq!(floor_div(5, 0), Some(0));
        assert_eq!(floor_mod(-7, 2), Some(1));
        assert_eq!(floor_mod(7, -2), Some(-1));
        assert_eq!(floor_mod(5, 0), Some(5));
        assert_eq!(ceil_div(7, 2), Some(4));
        assert_eq!(ceil_div(-7, 2), Some(-3));
        assert_eq!(ceil_div(8, 2), Some(4));
        assert_eq!(ceil_div(3, 0), Some(0));
        assert_eq!(floor_div(i64::MIN, -1), None);
    }

    #[test]
    fn mod_identity_holds_on_a_grid() {
        for a in -20..=20 {
            for b in -6..=6 {
                let q = floor_div(a, b).unwrap();
                let r = floor_mod(a, b).unwrap();
                assert_eq!(a, b * q + r, "a={a} b={b}");
                if b > 0 {
                    assert!((0..b).contains(&r));
                }
            }
        }
    }

    #[test]
    fn display_parenthesizes_minimally() {
        let e = IndexExpr::mul(
            IndexExpr::add(IndexExpr::var("i"), IndexExpr::Const(1)),
            IndexExpr::var("n"),
        );
        assert_eq!(e.to_string(), "(i + 1) * n");
        let e = IndexExpr::sub(
            IndexExpr::var("a"),
            IndexExpr::sub(IndexExpr::var("b"), IndexExpr::var("c")),
        );
        assert_eq!(e.to_string(), "a - (b - c)");
        let p = Pred::and(
            Pred::or(Pred::Bool(true), Pred::Bool(false)),
            Pred::not(Pred::cmp(
                CmpOp::Lt,
                IndexExpr::var("i"),
                IndexExpr::var("n"),
            )),
        );
        assert_eq!(p.to_string(), "(true || false) && !(i < n)");
    }
}
