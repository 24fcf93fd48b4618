//! Pad predicates: the symbolic pad-set types of thesis §5.5.
//!
//! The thesis types an expression with a *set* of positions per concrete valuation
//! (Figures 5.5/5.6). Here the set is a formula: a [`PadPred`] over the output
//! coordinates of the expression (the variables `$0`, `$1`, …, outermost dimension
//! first) and the index variables in scope (sizes and enclosing binders). It means
//! "every in-bounds position where the formula holds is guaranteed to be padding".
//! Out-of-bounds coordinates carry no meaning, which lets the rules leave range
//! conjuncts out wherever the shape already implies them.
//!
//! Formulas are positive combinations (`&&`, `||`) of quantifier-free index predicates
//! and one quantifier, `forall v in lo..hi: body`, which `sum` needs (a position is
//! padding only if it is padding in every iteration). No rule ever negates a pad
//! predicate, so every quantifier sits in a positive position; a goal `facts => P` with
//! quantifiers is therefore equivalent to the quantifier-free goal obtained by
//! replacing each quantified variable with a fresh free variable constrained by its
//! range ([`PadPred::to_goal`]): free variables of a goal are universally quantified.
//! That keeps every solver query quantifier-free and exact.

use std::collections::BTreeSet;
use std::fmt;

use atl_lang::index::{CmpOp, IndexEvalError, IndexExpr, Pred};
use atl_lang::poly::normalize;

/// The name of output coordinate `d` in pad predicates. `$` cannot occur in program
/// identifiers, so coordinates never clash with sizes or binders.
pub fn coord(d: usize) -> String {
    format!("${d}")
}

/// If `name` is an output coordinate, its dimension.
pub fn coord_dim(name: &str) -> Option<usize> {
    name.strip_prefix('$')?.parse().ok()
}

/// The program binder a quantified variable stands for: quantified variables are
/// program binders renamed with a `'N` suffix (`k'3`), which program names cannot
/// contain.
pub fn binder_base(name: &str) -> &str {
    name.split('\'').next().unwrap_or(name)
}

/// A pad predicate: see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PadPred {
    Const(bool),
    /// A quantifier-free index predicate (never a bare `true`/`false`: see `Const`).
    Atom(Pred),
    And(Vec<PadPred>),
    Or(Vec<PadPred>),
    /// `forall var in lo..hi: body` (vacuously true when `hi <= lo`). `var` is unique:
    /// a renamed binder (`k'3`), so substitutions can never capture it.
    Forall {
        var: String,
        lo: IndexExpr,
        hi: IndexExpr,
        body: Box<PadPred>,
    },
}

/// Folds constant comparisons and constant subterms of a predicate; normalizes the
/// index expressions (polynomial normal form), which makes equal atoms compare equal
/// and lets the constant folding see through `$0 + 1 - 1`.
fn simplify_atom(p: &Pred) -> PadPred {
    match p {
        Pred::Bool(b) => PadPred::Const(*b),
        Pred::Cmp(op, a, b) => {
            let a = normalize(a);
            let b = normalize(b);
            if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
                return PadPred::Const(op.holds(x, y));
            }
            if a == b {
                // Same normal form: equal for every assignment.
                return PadPred::Const(matches!(op, CmpOp::Eq | CmpOp::Le | CmpOp::Ge));
            }
            // Coordinates on the left reads best: `$0 >= n`, not `n <= $0`.
            if has_coord(&b) && !has_coord(&a) {
                return PadPred::Atom(Pred::Cmp(swap(*op), b, a));
            }
            PadPred::Atom(Pred::Cmp(*op, a, b))
        }
        Pred::And(x, y) => PadPred::and(simplify_atom(x), simplify_atom(y)),
        Pred::Or(x, y) => PadPred::or(simplify_atom(x), simplify_atom(y)),
        Pred::Not(x) => match simplify_atom(x) {
            PadPred::Const(b) => PadPred::Const(!b),
            PadPred::Atom(Pred::Cmp(op, a, b)) => PadPred::Atom(Pred::Cmp(op.negate(), a, b)),
            other => match other.as_pred() {
                Some(q) => PadPred::Atom(Pred::not(q)),
                // A negated `forall` cannot arise: atoms never contain quantifiers.
                None => PadPred::Atom(Pred::not(x.as_ref().clone())),
            },
        },
    }
}

fn has_coord(e: &IndexExpr) -> bool {
    e.vars().iter().any(|v| coord_dim(v).is_some())
}

/// The comparison with its operands exchanged (`a < b` iff `b > a`).
fn swap(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        CmpOp::Eq | CmpOp::Ne => op,
    }
}

/// Simultaneous substitution in an index expression.
pub fn subst_index(e: &IndexExpr, map: &dyn Fn(&str) -> Option<IndexExpr>) -> IndexExpr {
    match e {
        IndexExpr::Var(v) => map(v).unwrap_or_else(|| e.clone()),
        IndexExpr::Const(_) | IndexExpr::Meta(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(subst_index(a, map))),
        IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(subst_index(a, map))),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, subst_index(a, map), subst_index(b, map)),
    }
}

/// Simultaneous substitution in a predicate.
pub fn subst_pred(p: &Pred, map: &dyn Fn(&str) -> Option<IndexExpr>) -> Pred {
    p.map_index(&mut |e| subst_index(e, map))
}

impl PadPred {
    pub const TRUE: PadPred = PadPred::Const(true);
    pub const FALSE: PadPred = PadPred::Const(false);

    /// An index predicate, simplified.
    pub fn atom(p: Pred) -> PadPred {
        simplify_atom(&p)
    }

    pub fn cmp(op: CmpOp, a: IndexExpr, b: IndexExpr) -> PadPred {
        PadPred::atom(Pred::Cmp(op, a, b))
    }

    /// Conjunction with constant folding and flattening.
    pub fn and(a: PadPred, b: PadPred) -> PadPred {
        PadPred::all([a, b])
    }

    /// Disjunction with constant folding and flattening.
    pub fn or(a: PadPred, b: PadPred) -> PadPred {
        PadPred::any([a, b])
    }

    pub fn all(parts: impl IntoIterator<Item = PadPred>) -> PadPred {
        let mut out: Vec<PadPred> = Vec::new();
        for p in parts {
            match p {
                PadPred::Const(true) => {}
                PadPred::Const(false) => return PadPred::FALSE,
                PadPred::And(ps) => {
                    for q in ps {
                        if !out.contains(&q) {
                            out.push(q);
                        }
                    }
                }
                q => {
                    if !out.contains(&q) {
                        out.push(q);
                    }
                }
            }
        }
        match out.len() {
            0 => PadPred::TRUE,
            1 => out.pop().unwrap_or(PadPred::TRUE),
            _ => PadPred::And(out),
        }
    }

    pub fn any(parts: impl IntoIterator<Item = PadPred>) -> PadPred {
        let mut out: Vec<PadPred> = Vec::new();
        for p in parts {
            match p {
                PadPred::Const(false) => {}
                PadPred::Const(true) => return PadPred::TRUE,
                PadPred::Or(ps) => {
                    for q in ps {
                        if !out.contains(&q) {
                            out.push(q);
                        }
                    }
                }
                q => {
                    if !out.contains(&q) {
                        out.push(q);
                    }
                }
            }
        }
        match out.len() {
            0 => PadPred::FALSE,
            1 => out.pop().unwrap_or(PadPred::FALSE),
            _ => PadPred::Or(out),
        }
    }

    /// `forall var in lo..hi: body`, simplified: a body that does not mention `var` is
    /// `hi <= lo || body` (exact: the range is either empty or the body holds).
    pub fn forall(var: String, lo: IndexExpr, hi: IndexExpr, body: PadPred) -> PadPred {
        match body {
            PadPred::Const(true) => PadPred::TRUE,
            body if !body.mentions(&var) => PadPred::or(PadPred::cmp(CmpOp::Le, hi, lo), body),
            body => PadPred::Forall {
                var,
                lo: normalize(&lo),
                hi: normalize(&hi),
                body: Box::new(body),
            },
        }
    }

    pub fn is_false(&self) -> bool {
        matches!(self, PadPred::Const(false))
    }

    pub fn is_true(&self) -> bool {
        matches!(self, PadPred::Const(true))
    }

    /// The formula as a plain predicate, if it has no quantifier.
    pub fn as_pred(&self) -> Option<Pred> {
        match self {
            PadPred::Const(b) => Some(Pred::Bool(*b)),
            PadPred::Atom(p) => Some(p.clone()),
            PadPred::And(ps) => ps
                .iter()
                .map(PadPred::as_pred)
                .try_fold(None, |acc: Option<Pred>, p| {
                    let p = p?;
                    Some(Some(match acc {
                        None => p,
                        Some(a) => Pred::and(a, p),
                    }))
                })
                .map(|p| p.unwrap_or(Pred::Bool(true))),
            PadPred::Or(ps) => ps
                .iter()
                .map(PadPred::as_pred)
                .try_fold(None, |acc: Option<Pred>, p| {
                    let p = p?;
                    Some(Some(match acc {
                        None => p,
                        Some(a) => Pred::or(a, p),
                    }))
                })
                .map(|p| p.unwrap_or(Pred::Bool(false))),
            PadPred::Forall { .. } => None,
        }
    }

    /// Whether the variable occurs free.
    pub fn mentions(&self, name: &str) -> bool {
        match self {
            PadPred::Const(_) => false,
            PadPred::Atom(p) => p.mentions(name),
            PadPred::And(ps) | PadPred::Or(ps) => ps.iter().any(|p| p.mentions(name)),
            PadPred::Forall { var, lo, hi, body } => {
                lo.mentions(name) || hi.mentions(name) || (var != name && body.mentions(name))
            }
        }
    }

    /// The free variables.
    pub fn vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect_vars(&mut out);
        out
    }

    fn collect_vars(&self, out: &mut BTreeSet<String>) {
        match self {
            PadPred::Const(_) => {}
            PadPred::Atom(p) => p.collect_vars(out),
            PadPred::And(ps) | PadPred::Or(ps) => ps.iter().for_each(|p| p.collect_vars(out)),
            PadPred::Forall { var, lo, hi, body } => {
                lo.collect_vars(out);
                hi.collect_vars(out);
                let mut inner = BTreeSet::new();
                body.collect_vars(&mut inner);
                inner.remove(var);
                out.extend(inner);
            }
        }
    }

    /// Simultaneous substitution of free variables, re-simplifying. Quantified
    /// variables are never in the domain of `map` (they are unique names), and the
    /// substituted expressions never mention them, so no capture is possible.
    pub fn subst(&self, map: &dyn Fn(&str) -> Option<IndexExpr>) -> PadPred {
        match self {
            PadPred::Const(_) => self.clone(),
            PadPred::Atom(p) => PadPred::atom(subst_pred(p, map)),
            PadPred::And(ps) => PadPred::all(ps.iter().map(|p| p.subst(map))),
            PadPred::Or(ps) => PadPred::any(ps.iter().map(|p| p.subst(map))),
            PadPred::Forall { var, lo, hi, body } => {
                let inner = |name: &str| if name == var { None } else { map(name) };
                PadPred::forall(
                    var.clone(),
                    subst_index(lo, map),
                    subst_index(hi, map),
                    body.subst(&inner),
                )
            }
        }
    }

    /// Re-expresses a predicate over the coordinates of an enclosing operator: `$d`
    /// for `d < coords.len()` becomes `coords[d]`, and every later coordinate `$d`
    /// becomes `$(d - coords.len() + rest_from)` (the dimensions the operator passes
    /// through unchanged). Simultaneous, so `coords` may mention coordinates.
    pub fn with_coords(&self, coords: &[IndexExpr], rest_from: usize) -> PadPred {
        let k = coords.len();
        self.subst(&|name| {
            let d = coord_dim(name)?;
            Some(if d < k {
                coords[d].clone()
            } else {
                IndexExpr::var(coord(d - k + rest_from))
            })
        })
    }

    /// Rebuilds the formula with every atom replaced by `f(atom)` (re-simplified).
    pub fn map_atoms(&self, f: &mut dyn FnMut(&Pred) -> Pred) -> PadPred {
        match self {
            PadPred::Const(_) => self.clone(),
            PadPred::Atom(p) => PadPred::atom(f(p)),
            PadPred::And(ps) => PadPred::all(ps.iter().map(|p| p.map_atoms(f)).collect::<Vec<_>>()),
            PadPred::Or(ps) => PadPred::any(ps.iter().map(|p| p.map_atoms(f)).collect::<Vec<_>>()),
            PadPred::Forall { var, lo, hi, body } => {
                PadPred::forall(var.clone(), lo.clone(), hi.clone(), body.map_atoms(f))
            }
        }
    }

    /// Evaluates at concrete values; quantifiers are enumerated (tests and the REPL use
    /// small sizes).
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<bool, IndexEvalError> {
        match self {
            PadPred::Const(b) => Ok(*b),
            PadPred::Atom(p) => p.eval(env),
            PadPred::And(ps) => {
                for p in ps {
                    if !p.eval(env)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            PadPred::Or(ps) => {
                for p in ps {
                    if p.eval(env)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            PadPred::Forall { var, lo, hi, body } => {
                let lo = lo.eval(env)?;
                let hi = hi.eval(env)?;
                for v in lo..hi {
                    let inner = |name: &str| if name == var { Some(v) } else { env(name) };
                    if !body.eval(&inner)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    /// The quantifier-free goal equivalent to this formula *in goal position*: each
    /// quantified variable becomes a fresh free variable `v'N` with its range as a
    /// premise (`!(lo <= v && v < hi) || body`). Sound and exact because quantifiers
    /// only occur positively (see the module documentation). `fresh` numbers the new
    /// variables.
    pub fn to_goal(&self, fresh: &mut usize) -> Pred {
        match self {
            PadPred::Const(b) => Pred::Bool(*b),
            PadPred::Atom(p) => p.clone(),
            PadPred::And(ps) => fold(ps.iter().map(|p| p.to_goal(fresh)), Pred::and, true),
            PadPred::Or(ps) => fold(ps.iter().map(|p| p.to_goal(fresh)), Pred::or, false),
            PadPred::Forall { var, lo, hi, body } => {
                *fresh += 1;
                // Every occurrence gets its own variable: `(forall k: A) || (forall k:
                // B)` is stronger than `forall k: A || B`.
                let v = format!("{}'{}", binder_base(var), fresh);
                let vx = IndexExpr::var(v.clone());
                let body = body.subst(&|name| (name == var).then(|| vx.clone()));
                let range = Pred::and(
                    Pred::cmp(CmpOp::Le, lo.clone(), vx.clone()),
                    Pred::cmp(CmpOp::Lt, vx, hi.clone()),
                );
                Pred::or(Pred::not(range), body.to_goal(fresh))
            }
        }
    }

    /// Number of nodes (atoms count their predicate's size).
    pub fn size(&self) -> usize {
        match self {
            PadPred::Const(_) => 1,
            PadPred::Atom(p) => p.size(),
            PadPred::And(ps) | PadPred::Or(ps) => 1 + ps.iter().map(PadPred::size).sum::<usize>(),
            PadPred::Forall { lo, hi, body, .. } => 1 + lo.size() + hi.size() + body.size(),
        }
    }
}

fn fold(parts: impl Iterator<Item = Pred>, op: fn(Pred, Pred) -> Pred, unit: bool) -> Pred {
    parts.reduce(op).unwrap_or(Pred::Bool(unit))
}

fn prec(p: &PadPred) -> u8 {
    match p {
        PadPred::Or(_) => 1,
        PadPred::And(_) => 2,
        // A quantifier extends as far right as possible, like `gen`.
        PadPred::Forall { .. } => 0,
        PadPred::Atom(Pred::Or(..)) => 1,
        PadPred::Atom(Pred::And(..)) => 2,
        PadPred::Atom(_) | PadPred::Const(_) => 3,
    }
}

fn write_at(f: &mut fmt::Formatter<'_>, p: &PadPred, min: u8) -> fmt::Result {
    if prec(p) < min {
        write!(f, "(")?;
        write_at(f, p, 0)?;
        return write!(f, ")");
    }
    match p {
        PadPred::Const(b) => write!(f, "{b}"),
        PadPred::Atom(q) => write!(f, "{q}"),
        PadPred::And(ps) | PadPred::Or(ps) => {
            let (sep, child_min) = if matches!(p, PadPred::And(_)) {
                (" && ", 3)
            } else {
                (" || ", 2)
            };
            for (k, q) in ps.iter().enumerate() {
                if k > 0 {
                    write!(f, "{sep}")?;
                }
                write_at(f, q, child_min)?;
            }
            Ok(())
        }
        PadPred::Forall { var, lo, hi, body } => {
            // Show the program's binder name unless that would capture a free variable.
            let base = binder_base(var);
            if base != var && !body.mentions(base) {
                let renamed = body.subst(&|n| (n == var).then(|| IndexExpr::var(base)));
                write!(f, "forall {base} in {lo}..{hi}: ")?;
                write_at(f, &renamed, 0)
            } else {
                write!(f, "forall {var} in {lo}..{hi}: ")?;
                write_at(f, body, 0)
            }
        }
    }
}

/// ASCII, in the predicate syntax of the language plus `forall v in lo..hi: …`;
/// coordinates print as `$0`, `$1`, ….
impl fmt::Display for PadPred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_at(f, self, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> IndexExpr {
        IndexExpr::var(s)
    }

    #[test]
    fn constants_fold() {
        let a = PadPred::cmp(CmpOp::Lt, IndexExpr::Const(1), IndexExpr::Const(2));
        assert!(a.is_true());
        let b = PadPred::cmp(CmpOp::Lt, v("$0"), v("n"));
        assert_eq!(PadPred::and(b.clone(), PadPred::FALSE), PadPred::FALSE);
        assert_eq!(PadPred::or(b.clone(), PadPred::FALSE), b);
        assert!(
            PadPred::cmp(
                CmpOp::Le,
                IndexExpr::add(v("$0"), IndexExpr::Const(0)),
                v("$0")
            )
            .is_true()
        );
    }

    #[test]
    fn forall_without_its_variable_is_a_disjunction() {
        let body = PadPred::cmp(CmpOp::Le, v("n"), v("$0"));
        let p = PadPred::forall("k'1".into(), IndexExpr::Const(0), v("K"), body.clone());
        let expected = PadPred::or(PadPred::cmp(CmpOp::Le, v("K"), IndexExpr::Const(0)), body);
        assert_eq!(p, expected);
    }

    #[test]
    fn goal_gives_each_quantifier_its_own_variable() {
        let body = |x: &str| PadPred::cmp(CmpOp::Ne, v("k'1"), v(x));
        let q = |x: &str| {
            PadPred::forall(
                "k'1".into(),
                IndexExpr::Const(0),
                IndexExpr::Const(3),
                body(x),
            )
        };
        let p = PadPred::or(q("a"), q("b"));
        let mut fresh = 0;
        let g = p.to_goal(&mut fresh);
        let vars = g.vars();
        assert!(vars.contains("k'1") && vars.contains("k'2"), "{g}");
    }

    #[test]
    fn eval_enumerates_quantifiers() {
        let p = PadPred::forall(
            "k'1".into(),
            IndexExpr::Const(0),
            v("n"),
            PadPred::cmp(CmpOp::Lt, v("k'1"), v("$0")),
        );
        let env = |x: i64| {
            move |name: &str| match name {
                "n" => Some(3),
                "$0" => Some(x),
                _ => None,
            }
        };
        assert_eq!(p.eval(&env(3)), Ok(true));
        assert_eq!(p.eval(&env(2)), Ok(false));
    }

    #[test]
    fn display_parenthesizes() {
        let a = PadPred::cmp(CmpOp::Lt, v("$0"), v("n"));
        let b = PadPred::cmp(CmpOp::Ge, v("$1"), v("m"));
        let c = PadPred::cmp(CmpOp::Eq, v("$1"), IndexExpr::Const(0));
        let p = PadPred::and(PadPred::or(a, b), c);
        assert_eq!(p.to_string(), "($0 < n || $1 >= m) && $1 == 0");
    }
}
