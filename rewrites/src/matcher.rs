//! Matching rule patterns against program subterms under binders, and instantiating
//! the other side.
//!
//! Binder metavariables are IR variables spelled `?i`. When a pattern binder matches a
//! term binder `i`, the term's variable is renamed to `?i` inside everything captured
//! below it, so captured subterms are stored in pattern names and compare up to
//! alpha-equivalence. A metavariable may capture a subterm mentioning a pattern binder
//! only if that binder is in the metavariable's scope (in scope at every occurrence on
//! both sides) — this is what refuses `sum_swap` when an inner bound depends on the
//! outer binder.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use atl_lang::index::{IndexExpr, Pred};
use atl_lang::ir::{self, Expr, ExprKind, NameSupply};
use atl_lang::poly;

use crate::rule::Rule;

/// What the metavariables of a rule stand for at one site.
#[derive(Clone, Debug, Default)]
pub struct Bindings {
    /// Expression metavariables (captured subterms, in pattern binder names).
    pub exprs: BTreeMap<String, Expr>,
    /// Index metavariables.
    pub indices: BTreeMap<String, IndexExpr>,
    /// Binder metavariables (`?i`) to the term's binder names.
    pub binders: BTreeMap<String, String>,
    /// Ranges of the term binders matched inside the pattern: `?i` → (lo, hi).
    pub ranges: BTreeMap<String, (IndexExpr, IndexExpr)>,
    /// Predicate metavariables (in pattern binder names).
    pub preds: BTreeMap<String, Pred>,
}

/// Why a structural match failed because of scoping (for diagnostics).
#[derive(Clone, Debug, Default)]
pub struct MatchNotes {
    pub scope_refusals: Vec<String>,
}

struct Matcher<'r> {
    rule: &'r Rule,
    /// Pattern binders in scope: (pattern name `?i`, term name).
    inner: Vec<(String, String)>,
    b: Bindings,
    notes: MatchNotes,
}

fn rename_index_vars(e: &IndexExpr, map: &[(String, String)]) -> IndexExpr {
    let mut out = e.clone();
    for (pv, tv) in map.iter().rev() {
        out = out.subst(tv, &IndexExpr::Var(pv.clone()));
    }
    out
}

impl Matcher<'_> {
    /// Term binders visible here that `meta` may not mention.
    fn forbidden(&self, meta: &str) -> Vec<(String, String)> {
        let allowed = self.rule.scopes.get(meta).cloned().unwrap_or_default();
        self.inner
            .iter()
            .filter(|(pv, _)| !allowed.contains(pv))
            .cloned()
            .collect()
    }

    fn to_pattern_names(&self, t: &Expr) -> Expr {
        let mut out = t.clone();
        for (pv, tv) in self.inner.iter().rev() {
            // Index binders and let binders share the renaming: names are unique.
            out = ir::rename_index(&out, tv, pv);
            out = ir::rename_tensor(&out, tv, pv);
        }
        out
    }

    fn meta_expr(&mut self, m: &str, t: &Expr) -> bool {
        let free_i = t.free_index_vars();
        let free_t = t.free_tensor_vars();
        for (pv, tv) in self.forbidden(m) {
            if free_i.contains(&tv) || free_t.contains(&tv) {
                self.notes.scope_refusals.push(format!(
                    "`?{m}` would capture a subterm that mentions `{tv}`, bound by `{pv}` of the pattern, which is not in scope at every occurrence of `?{m}`"
                ));
                return false;
            }
        }
        let renamed = self.to_pattern_names(t);
        match self.b.exprs.get(m) {
            Some(prev) => ir::alpha_eq(prev, &renamed),
            None => {
                self.b.exprs.insert(m.to_string(), renamed);
                true
            }
        }
    }

    fn index(&mut self, p: &IndexExpr, t: &IndexExpr) -> bool {
        match (p, t) {
            (IndexExpr::Meta(m), _) => {
                let vars = t.vars();
                for (pv, tv) in self.forbidden(m) {
                    if vars.contains(&tv) {
                        self.notes.scope_refusals.push(format!(
                            "`?{m}` would capture `{t}`, which mentions `{tv}`, bound by `{pv}` of the pattern, not in scope at every occurrence of `?{m}`"
                        ));
                        return false;
                    }
                }
                let renamed = rename_index_vars(t, &self.inner);
                match self.b.indices.get(m) {
                    Some(prev) => poly::same(prev, &renamed),
                    None => {
                        self.b.indices.insert(m.clone(), renamed);
                        true
                    }
                }
            }
            (IndexExpr::Var(pv), IndexExpr::Var(tv)) if pv.starts_with('?') => self
                .inner
                .iter()
                .rev()
                .find(|(p, _)| p == pv)
                .is_some_and(|(_, term)| term == tv),
            (IndexExpr::Var(a), IndexExpr::Var(b)) => a == b,
            (IndexExpr::Const(a), _) => t.as_const() == Some(*a),
            (IndexExpr::Neg(a), IndexExpr::Neg(b)) => self.index(a, b),
            (IndexExpr::Bin(o1, a1, b1), IndexExpr::Bin(o2, a2, b2)) => {
                o1 == o2 && self.index(a1, a2) && self.index(b1, b2)
            }
            _ => false,
        }
    }

    fn pred(&mut self, p: &Pred, t: &Pred) -> bool {
        if let Some(m) = crate::rule::as_pred_meta(p) {
            let key = format!("pred:{m}");
            let vars = t.vars();
            for (pv, tv) in self.forbidden(&key) {
                if vars.contains(&tv) {
                    self.notes.scope_refusals.push(format!(
                        "`?{m}` would capture `{t}`, which mentions `{tv}`, bound by `{pv}` of the pattern, not in scope at every occurrence of `?{m}`"
                    ));
                    return false;
                }
            }
            let renamed = t.map_index(&mut |i| rename_index_vars(i, &self.inner));
            return match self.b.preds.get(m) {
                Some(prev) => *prev == renamed,
                None => {
                    self.b.preds.insert(m.to_string(), renamed);
                    true
                }
            };
        }
        match (p, t) {
            (Pred::Bool(a), Pred::Bool(b)) => a == b,
            (Pred::Cmp(o1, a1, b1), Pred::Cmp(o2, a2, b2)) => {
                o1 == o2 && self.index(a1, a2) && self.index(b1, b2)
            }
            (Pred::And(a1, b1), Pred::And(a2, b2)) | (Pred::Or(a1, b1), Pred::Or(a2, b2)) => {
                self.pred(a1, a2) && self.pred(b1, b2)
            }
            (Pred::Not(a), Pred::Not(b)) => self.pred(a, b),
            _ => false,
        }
    }

    fn bind_binder(&mut self, pv: &str, tv: &str) {
        self.b.binders.insert(pv.to_string(), tv.to_string());
    }

    fn expr(&mut self, p: &Expr, t: &Expr) -> bool {
        use ExprKind as K;
        match (&p.kind, &t.kind) {
            (K::Meta(m), _) => return self.meta_expr(m, t),
            (K::Lit(a), K::Lit(b)) => return a.to_bits() == b.to_bits(),
            (K::Var(pv), K::Var(tv)) if pv.starts_with('?') => {
                return self
                    .inner
                    .iter()
                    .rev()
                    .find(|(p, _)| p == pv)
                    .is_some_and(|(_, term)| term == tv);
            }
            (K::Input(a), K::Input(b)) | (K::DefRef(a), K::DefRef(b)) | (K::Var(a), K::Var(b)) => {
                return a == b;
            }
            _ => {}
        }
        let Some(pairs) = p.zip_children(t) else {
            return false;
        };
        // The node's own data, before its children (an access's index comes after its
        // tensor, below: the order decides which scope refusal is noted).
        let own = match (&p.kind, &t.kind) {
            (K::Gen { lo: pl, hi: ph, .. }, K::Gen { lo: tl, hi: th, .. })
            | (K::Sum { lo: pl, hi: ph, .. }, K::Sum { lo: tl, hi: th, .. })
            | (K::MaxRed { lo: pl, hi: ph, .. }, K::MaxRed { lo: tl, hi: th, .. }) => {
                self.index(pl, tl) && self.index(ph, th)
            }
            (K::Guard { pred: pp, .. }, K::Guard { pred: tp, .. }) => self.pred(pp, tp),
            (K::Amount { amount: pk, .. }, K::Amount { amount: tk, .. })
            | (K::Coord(pk), K::Coord(tk)) => self.index(pk, tk),
            _ => true,
        };
        if !own {
            return false;
        }
        let binders = p.binder().zip(t.binder());
        for (k, (pc, tc)) in pairs.into_iter().enumerate() {
            let ok = match binders {
                Some(((pv, _), (tv, _))) if p.binds_in_child(k) => {
                    self.bind_binder(pv, tv);
                    if let K::Gen { lo, hi, .. }
                    | K::Sum { lo, hi, .. }
                    | K::MaxRed { lo, hi, .. } = &t.kind
                    {
                        self.b.ranges.insert(
                            pv.to_string(),
                            (
                                rename_index_vars(lo, &self.inner),
                                rename_index_vars(hi, &self.inner),
                            ),
                        );
                    }
                    self.inner.push((pv.to_string(), tv.to_string()));
                    let ok = self.expr(pc, tc);
                    self.inner.pop();
                    ok
                }
                _ => self.expr(pc, tc),
            };
            if !ok {
                return false;
            }
        }
        match (&p.kind, &t.kind) {
            (K::Access { index: pi, .. }, K::Access { index: ti, .. }) => self.index(pi, ti),
            _ => true,
        }
    }
}

/// Matches `pattern` (one side of `rule`) against the term `t`.
pub fn match_at(rule: &Rule, pattern: &Expr, t: &Expr) -> Result<Bindings, MatchNotes> {
    let mut m = Matcher {
        rule,
        inner: Vec::new(),
        b: Bindings::default(),
        notes: MatchNotes::default(),
    };
    if m.expr(pattern, t) {
        Ok(m.b)
    } else {
        Err(m.notes)
    }
}

/// Substitutes bound index metavariables (and binder metavariables, as variables) into an
/// index pattern. `None` if a metavariable is unbound.
pub fn instantiate_index(p: &IndexExpr, b: &Bindings) -> Option<IndexExpr> {
    Some(match p {
        IndexExpr::Meta(m) => match b.indices.get(m) {
            Some(v) => v.clone(),
            None => IndexExpr::Var(b.binders.get(&format!("?{m}"))?.clone()),
        },
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(instantiate_index(a, b)?)),
        IndexExpr::Bin(op, x, y) => {
            IndexExpr::bin(*op, instantiate_index(x, b)?, instantiate_index(y, b)?)
        }
        _ => p.clone(),
    })
}

pub fn instantiate_pred(p: &Pred, b: &Bindings) -> Option<Pred> {
    if let Some(m) = crate::rule::as_pred_meta(p) {
        return b.preds.get(m).cloned();
    }
    Some(match p {
        Pred::Bool(x) => Pred::Bool(*x),
        Pred::Cmp(op, x, y) => Pred::Cmp(*op, instantiate_index(x, b)?, instantiate_index(y, b)?),
        Pred::And(x, y) => Pred::and(instantiate_pred(x, b)?, instantiate_pred(y, b)?),
        Pred::Or(x, y) => Pred::or(instantiate_pred(x, b)?, instantiate_pred(y, b)?),
        Pred::Not(x) => Pred::not(instantiate_pred(x, b)?),
    })
}

/// Instantiates the other side of a rule. Binder metavariables that were matched keep
/// the term's names; the others get the names in `names` (from `with`) or names fresh
/// for `avoid`.
pub fn instantiate(
    rule: &Rule,
    pattern: &Expr,
    b: &Bindings,
    avoid: &BTreeSet<String>,
    names: &BTreeMap<String, String>,
) -> Result<Expr, String> {
    let raw = build(rule, pattern, b)?;
    let mut supply = NameSupply::new(avoid.iter().cloned());
    for v in b.binders.values().chain(names.values()) {
        supply.reserve(v);
    }
    let mut chosen: HashMap<String, String> =
        names.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    Ok(name_binders(&raw, b, &mut supply, &mut chosen))
}

fn build(rule: &Rule, p: &Expr, b: &Bindings) -> Result<Expr, String> {
    let inst_index = |i: &IndexExpr| -> Result<IndexExpr, String> {
        // Binder metavariables appear as `?i` variables and stay; index metavariables
        // are replaced.
        fn go(i: &IndexExpr, b: &Bindings) -> Result<IndexExpr, String> {
            Ok(match i {
                IndexExpr::Meta(m) => b
                    .indices
                    .get(m)
                    .cloned()
                    .ok_or_else(|| format!("`?{m}` has no value"))?,
                IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(go(a, b)?)),
                IndexExpr::Bin(op, x, y) => IndexExpr::bin(*op, go(x, b)?, go(y, b)?),
                _ => i.clone(),
            })
        }
        go(i, b)
    };
    let mut out = match &p.kind {
        ExprKind::Meta(m) => {
            if let Some(spec) = rule.substs.get(m) {
                let body = if rule.substs.contains_key(&spec.meta) {
                    build(rule, &Expr::synth(ExprKind::Meta(spec.meta.clone())), b)?
                } else {
                    b.exprs
                        .get(&spec.meta)
                        .cloned()
                        .ok_or_else(|| format!("`?{}` has no value", spec.meta))?
                };
                return Ok(match &spec.value {
                    crate::rule::SubstValue::Index(v) => {
                        ir::subst_index(&body, &spec.var, &inst_index(v)?)
                    }
                    crate::rule::SubstValue::Expr(v) => {
                        let value = b
                            .exprs
                            .get(v)
                            .cloned()
                            .ok_or_else(|| format!("`?{v}` has no value"))?;
                        ir::subst_tensor(&body, &spec.var, &value)
                    }
                });
            }
            return b
                .exprs
                .get(m)
                .cloned()
                .ok_or_else(|| format!("`?{m}` has no value"));
        }
        _ => p.clone(),
    };
    if let ExprKind::Guard { pred, .. } = &mut out.kind {
        *pred = instantiate_pred_pattern(pred, b)?;
    }
    let mut err = None;
    out.map_own_index(&mut |i| match inst_index(i) {
        Ok(v) => v,
        Err(e) => {
            err = Some(e);
            i.clone()
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    for c in out.children_mut() {
        *c = build(rule, c, b)?;
    }
    out.span = atl_lang::span::Span::DUMMY;
    Ok(out)
}

/// Renames binders spelled `?x` to concrete names.
fn name_binders(
    e: &Expr,
    b: &Bindings,
    supply: &mut NameSupply,
    chosen: &mut HashMap<String, String>,
) -> Expr {
    let mut out = e.clone();
    if let Some(v) = out.binder().map(|(v, _)| v.to_string())
        && v.starts_with('?')
    {
        let name = match b.binders.get(&v) {
            Some(n) => n.clone(),
            None => chosen
                .entry(v.clone())
                .or_insert_with(|| supply.fresh(v.trim_start_matches('?')))
                .clone(),
        };
        rename_binder(&mut out, &v, name);
    }
    for c in out.children_mut() {
        *c = name_binders(c, b, supply, chosen);
    }
    out
}

/// Makes every binder name unique in `e` and distinct from `reserved` (renaming later
/// duplicates), restoring the IR invariant after a rewrite duplicated a subterm.
pub fn uniquify(e: &Expr, reserved: &BTreeSet<String>) -> Expr {
    let mut seen: BTreeSet<String> = reserved.clone();
    let mut supply = NameSupply::new(ir::all_names(e).into_iter().chain(reserved.iter().cloned()));
    uniq(e, &mut seen, &mut supply)
}

fn uniq(e: &Expr, seen: &mut BTreeSet<String>, supply: &mut NameSupply) -> Expr {
    let mut out = e.clone();
    let rename = match out.binder() {
        Some((v, _)) if seen.contains(v) => Some((v.to_string(), supply.fresh(v))),
        Some((v, _)) => {
            seen.insert(v.to_string());
            None
        }
        None => None,
    };
    if let Some((old, new)) = rename {
        seen.insert(new.clone());
        rename_binder(&mut out, &old, new);
    }
    for c in out.children_mut() {
        *c = uniq(c, seen, supply);
    }
    out
}

/// Replaces predicate metavariables (and index metavariables) in a guard pattern, keeping
/// binder metavariables as `?i` variables.
fn instantiate_pred_pattern(p: &Pred, b: &Bindings) -> Result<Pred, String> {
    if let Some(m) = crate::rule::as_pred_meta(p) {
        return b
            .preds
            .get(m)
            .cloned()
            .ok_or_else(|| format!("`?{m}` has no value"));
    }
    Ok(match p {
        Pred::And(x, y) => Pred::and(
            instantiate_pred_pattern(x, b)?,
            instantiate_pred_pattern(y, b)?,
        ),
        Pred::Or(x, y) => Pred::or(
            instantiate_pred_pattern(x, b)?,
            instantiate_pred_pattern(y, b)?,
        ),
        Pred::Not(x) => Pred::not(instantiate_pred_pattern(x, b)?),
        other => other.clone(),
    })
}

/// Renames the variable bound by `e` (a gen, sum or let) from `old` to `new` in its scope.
fn rename_binder(e: &mut Expr, old: &str, new: String) {
    match &mut e.kind {
        ExprKind::Gen { var, body, .. }
        | ExprKind::Sum { var, body, .. }
        | ExprKind::MaxRed { var, body, .. } => {
            **body = ir::rename_index(body, old, &new);
            *var = new;
        }
        ExprKind::Let { var, body, .. } => {
            **body = ir::rename_tensor(body, old, &new);
            *var = new;
        }
        _ => {}
    }
}
