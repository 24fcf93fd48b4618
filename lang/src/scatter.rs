//! Scatter (thesis §7.2.1, Figures 7.2–7.4): the one place that recognizes a
//! *one-hot generator*, `gen t in lo..hi: [t == f && rest] * e` where `f` does not
//! mention `t`. Its value is zero except at the one element `t = f` (when `lo <= f <
//! hi` and `rest` holds there), so it is computed by one store instead of a loop.
//!
//! The thesis adds scatter as a construct `⊗_{p=lo}^{hi ≤ N} {f} e` whose meaning is
//! `gen t < N: sum p in lo..hi: [f p == t] * e p`, introduced by the rule RWSCAT. Here
//! no construct is needed: that meaning is, by the exact rule `gen_sum`, the sum of
//! one-hot generators `sum p in lo..hi: gen t < N: [t == f] * e`, which the language
//! already has, so every rule, the certificates and the validator's view of a
//! program are unchanged. What scatter changes is the cost: the interpreter
//! evaluates a one-hot generator at its one element (and a sum of them adds each into
//! place), and lowering emits one guarded `+=` at `f` (`out[crd[p]] += …`) instead of
//! a loop over `t`, so a CSC or COO product costs the number of stored values, not
//! that times the extent. Both the interpreter and lowering ask [`one_hot`], so they
//! agree on which generators qualify.

use crate::index::{CmpOp, IndexExpr, Pred};
use crate::ir::{Expr, ExprKind};
use crate::poly::normalize;

/// A generator's body `[t == target && rest] * value`.
#[derive(Clone, Debug, PartialEq)]
pub struct OneHot<'a> {
    /// The one coordinate where the body may be non-zero; it does not mention the
    /// generator's variable.
    pub target: IndexExpr,
    /// The other conjuncts of the guard (they may mention the variable), if any.
    pub rest: Option<Pred>,
    /// The guarded value.
    pub value: &'a Expr,
}

/// The one-hot form of `body`, the body of a generator over `var`: a guard one of
/// whose conjuncts is `var == target` (written either way round, or any equation
/// that normalizes to `var + r == 0` or `-var + r == 0`) with a `target` that does
/// not mention `var`.
pub fn one_hot<'a>(var: &str, body: &'a Expr) -> Option<OneHot<'a>> {
    let ExprKind::Guard { pred, body: value } = &body.kind else {
        return None;
    };
    let conjuncts = pred.conjuncts();
    let (position, target) = conjuncts
        .iter()
        .enumerate()
        .find_map(|(k, c)| solve_for(c, var).map(|target| (k, target)))?;
    let rest = conjuncts
        .iter()
        .enumerate()
        .filter(|(k, _)| *k != position)
        .map(|(_, c)| (*c).clone())
        .reduce(Pred::and);
    Some(OneHot {
        target,
        rest,
        value,
    })
}

/// The value of `var` an equation fixes (`a == b` with `a - b` = `±var + r`, `r` free
/// of `var`), written as the user wrote it where one side is `var` itself.
fn solve_for(c: &Pred, var: &str) -> Option<IndexExpr> {
    let Pred::Cmp(CmpOp::Eq, a, b) = c else {
        return None;
    };
    let is_var = |e: &IndexExpr| matches!(e, IndexExpr::Var(v) if v == var);
    if is_var(a) && !b.mentions(var) {
        return Some(b.clone());
    }
    if is_var(b) && !a.mentions(var) {
        return Some(a.clone());
    }
    let v = IndexExpr::var(var);
    let difference = normalize(&IndexExpr::sub(a.clone(), b.clone()));
    if !difference.mentions(var) {
        return None;
    }
    // var + r == 0  ⇔  var == -r
    let minus = normalize(&IndexExpr::sub(difference.clone(), v.clone()));
    if !minus.mentions(var) {
        return Some(normalize(&IndexExpr::sub(IndexExpr::Const(0), minus)));
    }
    // -var + r == 0  ⇔  var == r
    let plus = normalize(&IndexExpr::add(difference, v));
    (!plus.mentions(var)).then_some(plus)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexOp;

    fn load(a: &str, at: IndexExpr) -> IndexExpr {
        IndexExpr::Load(a.into(), Box::new(at))
    }

    fn guarded(pred: Pred) -> Expr {
        Expr::guard(pred, Expr::input("x"))
    }

    #[test]
    fn an_equation_on_the_variable_either_way_round_is_one_hot() {
        let crd = load("crd", IndexExpr::var("p"));
        for pred in [
            Pred::cmp(CmpOp::Eq, IndexExpr::var("i"), crd.clone()),
            Pred::cmp(CmpOp::Eq, crd.clone(), IndexExpr::var("i")),
        ] {
            let body = guarded(pred);
            let hot = one_hot("i", &body).expect("one-hot");
            assert_eq!(hot.target, crd);
            assert_eq!(hot.rest, None);
        }
    }

    #[test]
    fn the_other_conjuncts_are_kept_and_an_offset_is_solved() {
        // [j < m && i + 1 == crd[p]]: i is crd[p] - 1, and j < m stays.
        let crd = load("crd", IndexExpr::var("p"));
        let rest = Pred::cmp(CmpOp::Lt, IndexExpr::var("j"), IndexExpr::var("m"));
        let eq = Pred::cmp(
            CmpOp::Eq,
            IndexExpr::add(IndexExpr::var("i"), IndexExpr::Const(1)),
            crd.clone(),
        );
        let body = guarded(Pred::and(rest.clone(), eq));
        let hot = one_hot("i", &body).expect("one-hot");
        assert_eq!(hot.rest, Some(rest));
        // Where crd[p] is 5, the target is 4.
        let at = hot.target.eval_with(&|_| Some(0), &|_, _| Some(5));
        assert_eq!(at, Ok(4));
    }

    #[test]
    fn equations_that_do_not_fix_the_variable_are_not_one_hot() {
        let i = IndexExpr::var("i");
        for pred in [
            // the target mentions the variable
            Pred::cmp(CmpOp::Eq, i.clone(), load("crd", i.clone())),
            // twice the variable
            Pred::cmp(
                CmpOp::Eq,
                IndexExpr::bin(IndexOp::Mul, IndexExpr::Const(2), i.clone()),
                IndexExpr::var("k"),
            ),
            // not an equation
            Pred::cmp(CmpOp::Le, i.clone(), IndexExpr::var("k")),
            // a disjunction
            Pred::or(
                Pred::cmp(CmpOp::Eq, i.clone(), IndexExpr::var("k")),
                Pred::Bool(true),
            ),
        ] {
            assert_eq!(one_hot("i", &guarded(pred.clone())), None, "{pred}");
        }
        assert_eq!(one_hot("i", &Expr::input("x")), None);
    }
}
