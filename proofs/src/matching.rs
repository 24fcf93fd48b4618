//! The checker's own pattern matcher and instantiation of rule sides.
//!
//! Written separately from the rewrite engine's matcher on purpose: a certificate is
//! only evidence if a second implementation agrees with the first. Binder
//! metavariables are IR variables spelled `?i` (as the rule loader builds them). When a
//! pattern binder meets a term binder, the term's name is renamed to the pattern's
//! inside every captured subterm, so captured values are stated in pattern names and
//! repeated metavariables compare up to alpha-equivalence. Scoping is structural: a
//! metavariable may capture a subterm that mentions a pattern binder only if the rule
//! loader put that binder in the metavariable's scope (`Rule::scopes`).

use std::collections::BTreeMap;

use atl_lang::index::{IndexExpr, Pred};
use atl_lang::ir::{
    Expr, ExprKind, alpha_eq, rename_index, rename_tensor, subst_index, subst_tensor,
};
use atl_lang::poly;
use atl_rules::rule::{Rule, SubstValue, as_pred_meta};

use crate::show;

/// Values of a rule's metavariables at one site.
#[derive(Clone, Debug, Default)]
pub(crate) struct Inst {
    /// Expression metavariables, in pattern binder names.
    pub exprs: BTreeMap<String, Expr>,
    /// The same subterms in the term's own names (for shape conditions).
    pub terms: BTreeMap<String, Expr>,
    /// Index metavariables, in pattern binder names.
    pub indices: BTreeMap<String, IndexExpr>,
    /// Predicate metavariables, in pattern binder names.
    pub preds: BTreeMap<String, Pred>,
    /// Binder metavariables (`?i`) to the term's binder names.
    pub binders: BTreeMap<String, String>,
    /// Ranges of the binders matched inside the pattern (term names).
    pub ranges: BTreeMap<String, (IndexExpr, IndexExpr)>,
}

impl Inst {
    pub fn is_bound(&self, m: &str) -> bool {
        match m.strip_prefix("pred:") {
            Some(p) => self.preds.contains_key(p),
            None => self.exprs.contains_key(m) || self.indices.contains_key(m),
        }
    }

    /// The instantiation as certificates record it (predicates are not recorded).
    pub fn recorded(&self) -> BTreeMap<String, String> {
        let exprs = self.exprs.iter().map(|(k, v)| (format!("?{k}"), show(v)));
        let indices = self
            .indices
            .iter()
            .map(|(k, v)| (format!("?{k}"), v.to_string()));
        let binders = self.binders.iter().map(|(k, v)| (k.clone(), v.clone()));
        exprs.chain(indices).chain(binders).collect()
    }

    /// Pattern binder names (`?i`) back to the term's names.
    fn to_term(&self, i: &IndexExpr) -> IndexExpr {
        match i {
            IndexExpr::Var(v) => IndexExpr::Var(self.binders.get(v).unwrap_or(v).clone()),
            IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(self.to_term(a))),
            IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, self.to_term(a), self.to_term(b)),
            _ => i.clone(),
        }
    }

    /// An index expression of a side condition, in the term's names: `?k` is its value,
    /// a binder metavariable `?i` the term binder it matched.
    pub fn cond_index(&self, i: &IndexExpr) -> Result<IndexExpr, String> {
        Ok(match i {
            IndexExpr::Meta(m) => match (self.indices.get(m), self.binders.get(&format!("?{m}"))) {
                (Some(v), _) => self.to_term(v),
                (None, Some(t)) => IndexExpr::Var(t.clone()),
                (None, None) => {
                    return Err(format!("a condition mentions `?{m}`, which has no value"));
                }
            },
            IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(self.cond_index(a)?)),
            IndexExpr::Bin(op, a, b) => {
                IndexExpr::bin(*op, self.cond_index(a)?, self.cond_index(b)?)
            }
            _ => i.clone(),
        })
    }

    pub fn cond_pred(&self, p: &Pred) -> Result<Pred, String> {
        if let Some(m) = as_pred_meta(p) {
            let v = self
                .preds
                .get(m)
                .ok_or_else(|| format!("`?{m}` has no value"))?;
            return Ok(v.map_index(&mut |i| self.to_term(i)));
        }
        Ok(match p {
            Pred::Bool(b) => Pred::Bool(*b),
            Pred::Cmp(op, a, b) => Pred::Cmp(*op, self.cond_index(a)?, self.cond_index(b)?),
            Pred::And(a, b) => Pred::and(self.cond_pred(a)?, self.cond_pred(b)?),
            Pred::Or(a, b) => Pred::or(self.cond_pred(a)?, self.cond_pred(b)?),
            Pred::Not(a) => Pred::not(self.cond_pred(a)?),
        })
    }

    /// An index expression of a rule side: metavariables replaced, `?i` kept.
    fn side_index(&self, i: &IndexExpr) -> Result<IndexExpr, String> {
        Ok(match i {
            IndexExpr::Meta(m) => self
                .indices
                .get(m)
                .cloned()
                .ok_or_else(|| format!("`?{m}` has no value"))?,
            IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(self.side_index(a)?)),
            IndexExpr::Bin(op, a, b) => {
                IndexExpr::bin(*op, self.side_index(a)?, self.side_index(b)?)
            }
            _ => i.clone(),
        })
    }

    fn side_pred(&self, p: &Pred) -> Result<Pred, String> {
        if let Some(m) = as_pred_meta(p) {
            return self
                .preds
                .get(m)
                .cloned()
                .ok_or_else(|| format!("`?{m}` has no value"));
        }
        Ok(match p {
            Pred::Bool(b) => Pred::Bool(*b),
            Pred::Cmp(op, a, b) => Pred::Cmp(*op, self.side_index(a)?, self.side_index(b)?),
            Pred::And(a, b) => Pred::and(self.side_pred(a)?, self.side_pred(b)?),
            Pred::Or(a, b) => Pred::or(self.side_pred(a)?, self.side_pred(b)?),
            Pred::Not(a) => Pred::not(self.side_pred(a)?),
        })
    }
}

struct Matcher<'r> {
    rule: &'r Rule,
    /// Pattern binders around the current point: (pattern name `?i`, term name).
    inner: Vec<(String, String)>,
    inst: Inst,
}

/// Matches one side of `rule` against `term`; the error says where and why not.
pub(crate) fn match_rule(rule: &Rule, pattern: &Expr, term: &Expr) -> Result<Inst, String> {
    let mut m = Matcher {
        rule,
        inner: Vec::new(),
        inst: Inst::default(),
    };
    m.expr(pattern, term)?;
    Ok(m.inst)
}

impl Matcher<'_> {
    fn term_of(&self, pv: &str) -> Option<&String> {
        self.inner
            .iter()
            .rev()
            .find(|(p, _)| p == pv)
            .map(|(_, t)| t)
    }

    /// Refuses a capture that mentions a pattern binder outside the scope of `meta`.
    fn scope(
        &self,
        meta: &str,
        shown: &str,
        mentions: &dyn Fn(&str) -> bool,
    ) -> Result<(), String> {
        let allowed = self.rule.scopes.get(meta);
        for (pv, tv) in &self.inner {
            if !allowed.is_some_and(|s| s.contains(pv)) && mentions(tv) {
                let m = meta.trim_start_matches("pred:");
                return Err(format!(
                    "scoping: `?{m}` would capture `{shown}`, which mentions `{tv}` (bound by `{pv}` of the pattern), but `{pv}` is not in scope at every occurrence of `?{m}`"
                ));
            }
        }
        Ok(())
    }

    fn rename(&self, i: &IndexExpr) -> IndexExpr {
        self.inner
            .iter()
            .fold(i.clone(), |i, (pv, tv)| i.rename(tv, pv))
    }

    fn meta_expr(&mut self, m: &str, t: &Expr) -> Result<(), String> {
        let (fi, ft) = (t.free_index_vars(), t.free_tensor_vars());
        self.scope(m, &show(t), &|v| fi.contains(v) || ft.contains(v))?;
        let renamed = self.inner.iter().fold(t.clone(), |e, (pv, tv)| {
            rename_tensor(&rename_index(&e, tv, pv), tv, pv)
        });
        match self.inst.exprs.get(m) {
            Some(prev) if alpha_eq(prev, &renamed) => Ok(()),
            Some(prev) => Err(format!(
                "`?{m}` occurs twice with different values: `{}` and `{}`",
                show(prev),
                show(&renamed)
            )),
            None => {
                self.inst.exprs.insert(m.to_string(), renamed);
                self.inst.terms.insert(m.to_string(), t.clone());
                Ok(())
            }
        }
    }

    fn index(&mut self, p: &IndexExpr, t: &IndexExpr) -> Result<(), String> {
        let ok = match (p, t) {
            (IndexExpr::Meta(m), _) => {
                let vars = t.vars();
                self.scope(m, &t.to_string(), &|v| vars.contains(v))?;
                let renamed = self.rename(t);
                match self.inst.indices.get(m) {
                    Some(prev) => poly::same(prev, &renamed),
                    None => {
                        self.inst.indices.insert(m.clone(), renamed);
                        true
                    }
                }
            }
            (IndexExpr::Var(pv), IndexExpr::Var(tv)) if pv.starts_with('?') => {
                self.term_of(pv) == Some(tv)
            }
            (IndexExpr::Var(a), IndexExpr::Var(b)) => a == b,
            (IndexExpr::Const(a), _) => t.as_const() == Some(*a),
            (IndexExpr::Neg(a), IndexExpr::Neg(b)) => return self.index(a, b),
            (IndexExpr::Bin(o1, a1, b1), IndexExpr::Bin(o2, a2, b2)) if o1 == o2 => {
                self.index(a1, a2)?;
                return self.index(b1, b2);
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!("the index pattern `{p}` does not match `{t}`"))
        }
    }

    fn pred(&mut self, p: &Pred, t: &Pred) -> Result<(), String> {
        if let Some(m) = as_pred_meta(p) {
            let vars = t.vars();
            self.scope(&format!("pred:{m}"), &t.to_string(), &|v| vars.contains(v))?;
            let renamed = t.map_index(&mut |i| self.rename(i));
            return match self.inst.preds.get(m) {
                Some(prev) if *prev == renamed => Ok(()),
                Some(prev) => Err(format!("`?{m}` occurs twice: `{prev}` and `{renamed}`")),
                None => {
                    self.inst.preds.insert(m.to_string(), renamed);
                    Ok(())
                }
            };
        }
        match (p, t) {
            (Pred::Bool(a), Pred::Bool(b)) if a == b => Ok(()),
            (Pred::Cmp(o1, a1, b1), Pred::Cmp(o2, a2, b2)) if o1 == o2 => {
                self.index(a1, a2)?;
                self.index(b1, b2)
            }
            (Pred::And(a1, b1), Pred::And(a2, b2)) | (Pred::Or(a1, b1), Pred::Or(a2, b2)) => {
                self.pred(a1, a2)?;
                self.pred(b1, b2)
            }
            (Pred::Not(a), Pred::Not(b)) => self.pred(a, b),
            _ => Err(format!("the guard pattern `{p}` does not match `{t}`")),
        }
    }

    /// Matches a binder's body with `pv` bound to `tv`.
    fn under(&mut self, pv: &str, tv: &str, p: &Expr, t: &Expr) -> Result<(), String> {
        self.inst.binders.insert(pv.to_string(), tv.to_string());
        self.inner.push((pv.to_string(), tv.to_string()));
        let r = self.expr(p, t);
        self.inner.pop();
        r
    }

    fn expr(&mut self, p: &Expr, t: &Expr) -> Result<(), String> {
        use ExprKind as K;
        let ok = match (&p.kind, &t.kind) {
            (K::Meta(m), _) => return self.meta_expr(m, t),
            (K::Lit(a), K::Lit(b)) => a.to_bits() == b.to_bits(),
            (K::Coord(a), K::Coord(b)) => return self.index(a, b),
            (K::Var(pv), K::Var(tv)) if pv.starts_with('?') => self.term_of(pv) == Some(tv),
            (K::Input(a), K::Input(b)) | (K::DefRef(a), K::DefRef(b)) | (K::Var(a), K::Var(b)) => {
                a == b
            }
            (
                K::Gen {
                    var: pv,
                    lo: pl,
                    hi: ph,
                    body: pb,
                },
                K::Gen {
                    var: tv,
                    lo: tl,
                    hi: th,
                    body: tb,
                },
            )
            | (
                K::Sum {
                    var: pv,
                    lo: pl,
                    hi: ph,
                    body: pb,
                },
                K::Sum {
                    var: tv,
                    lo: tl,
                    hi: th,
                    body: tb,
                },
            )
            | (
                K::MaxRed {
                    var: pv,
                    lo: pl,
                    hi: ph,
                    body: pb,
                },
                K::MaxRed {
                    var: tv,
                    lo: tl,
                    hi: th,
                    body: tb,
                },
            ) => {
                self.index(pl, tl)?;
                self.index(ph, th)?;
                self.inst
                    .ranges
                    .insert(pv.clone(), (tl.clone(), th.clone()));
                return self.under(pv, tv, pb, tb);
            }
            (K::Guard { pred: pp, body: pb }, K::Guard { pred: tp, body: tb }) => {
                self.pred(pp, tp)?;
                return self.expr(pb, tb);
            }
            (
                K::Let {
                    var: pv,
                    value: px,
                    body: pb,
                },
                K::Let {
                    var: tv,
                    value: tx,
                    body: tb,
                },
            ) => {
                self.expr(px, tx)?;
                return self.under(pv, tv, pb, tb);
            }
            (
                K::Access {
                    tensor: pt,
                    index: pi,
                },
                K::Access {
                    tensor: tt,
                    index: ti,
                },
            ) => {
                self.expr(pt, tt)?;
                return self.index(pi, ti);
            }
            (K::Neg(a), K::Neg(b))
            | (K::Transpose(a), K::Transpose(b))
            | (K::Flatten(a), K::Flatten(b)) => {
                return self.expr(a, b);
            }
            (
                K::Binary {
                    op: o1,
                    lhs: l1,
                    rhs: r1,
                },
                K::Binary {
                    op: o2,
                    lhs: l2,
                    rhs: r2,
                },
            ) if o1 == o2 => {
                self.expr(l1, l2)?;
                return self.expr(r1, r2);
            }
            (K::Concat(a1, b1), K::Concat(a2, b2)) => {
                self.expr(a1, a2)?;
                return self.expr(b1, b2);
            }
            // The same scalar function (a `select`'s comparison included), argument by
            // argument.
            (K::Call { func: f1, args: a1 }, K::Call { func: f2, args: a2 })
                if f1 == f2 && a1.len() == a2.len() =>
            {
                for (pa, ta) in a1.iter().zip(a2) {
                    self.expr(pa, ta)?;
                }
                return Ok(());
            }
            (
                K::Amount {
                    op: o1,
                    amount: k1,
                    arg: a1,
                },
                K::Amount {
                    op: o2,
                    amount: k2,
                    arg: a2,
                },
            ) if o1 == o2 => {
                self.index(k1, k2)?;
                return self.expr(a1, a2);
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "the pattern `{}` does not match `{}`",
                show(p),
                show(t)
            ))
        }
    }
}

/// Instantiates a rule side. Binders keep their pattern names (`?io`); the result is
/// compared up to alpha-equivalence, so no fresh names are needed.
pub(crate) fn build(rule: &Rule, p: &Expr, inst: &Inst) -> Result<Expr, String> {
    if let ExprKind::Meta(m) = &p.kind {
        let Some(spec) = rule.substs.get(m) else {
            return inst
                .exprs
                .get(m)
                .cloned()
                .ok_or_else(|| format!("`?{m}` has no value"));
        };
        let body = build(rule, &Expr::synth(ExprKind::Meta(spec.meta.clone())), inst)?;
        return match &spec.value {
            SubstValue::Index(v) => Ok(subst_index(&body, &spec.var, &inst.side_index(v)?)),
            SubstValue::Expr(v) => {
                let value = inst
                    .exprs
                    .get(v)
                    .ok_or_else(|| format!("`?{v}` has no value"))?;
                Ok(subst_tensor(&body, &spec.var, value))
            }
        };
    }
    let mut out = p.clone();
    let mut err = None;
    if let ExprKind::Guard { pred, .. } = &mut out.kind {
        *pred = inst.side_pred(pred)?;
    } else {
        out.map_own_index(&mut |i| {
            inst.side_index(i).unwrap_or_else(|e| {
                err = Some(e);
                i.clone()
            })
        });
    }
    if let Some(e) = err {
        return Err(e);
    }
    for c in out.children_mut() {
        *c = build(rule, c, inst)?;
    }
    Ok(out)
}
