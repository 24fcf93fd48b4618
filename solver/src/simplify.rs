//! The index and predicate simplifier: rewrites with the rules of
//! [`crate::rules`] on polynomial normal forms, proving rule conditions with the
//! [`Solver`], and removes guards that are provably true or false.
//!
//! Algorithm (deterministic): normalize with [`Poly`]; then repeatedly take the first
//! rewrite, in post-order of positions (innermost first) and file order of rules,
//! whose match is confirmed (the instantiated left-hand side has the same normal form
//! as the subterm), whose result — normalized as a whole — has a strictly smaller
//! weight `W` (see [`crate::rules`]), and whose conditions are proved. `W` is a
//! positive integer, so the loop ends; a step cap bounds the cost of pathological
//! inputs on top of that.
//!
//! Matching is modulo the polynomial normal form: a sum pattern matches the terms of a
//! sum in any order, a product pattern the factors of a monomial, and a lone
//! metavariable in a sum takes the remaining terms.

use std::collections::BTreeMap;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::poly::{Monomial, Poly};

use crate::query::Facts;
use crate::rules::{Rule, RuleSet, is_const_meta};
use crate::solver::Solver;

/// Rewrite steps per call. Each step strictly decreases `W`, so this only bounds the
/// cost of very large inputs; it is never what stops a normal simplification.
const MAX_STEPS: usize = 200;
/// Candidate matches tried per rule and position.
const MAX_CANDIDATES: usize = 16;

type Env = BTreeMap<String, IndexExpr>;
type Terms = BTreeMap<Monomial, i64>;

fn canonical(e: &IndexExpr) -> IndexExpr {
    Poly::from_index(e).to_index()
}

fn terms_of(e: &IndexExpr) -> Terms {
    Poly::from_index(e).terms().clone()
}

fn product(m: &[IndexExpr]) -> Option<IndexExpr> {
    m.iter().cloned().reduce(IndexExpr::mul)
}

fn term_expr(m: &[IndexExpr], c: i64) -> IndexExpr {
    match product(m) {
        None => IndexExpr::Const(c),
        Some(p) if c == 1 => p,
        Some(p) => IndexExpr::mul(IndexExpr::Const(c), p),
    }
}

/// The canonical expression of a sum of terms.
fn from_terms(t: &Terms) -> IndexExpr {
    let sum = t
        .iter()
        .map(|(m, c)| term_expr(m, *c))
        .reduce(IndexExpr::add)
        .unwrap_or(IndexExpr::Const(0));
    canonical(&sum)
}

/// `t - other`, or `None` on overflow.
fn sub_terms(t: &Terms, other: &Terms) -> Option<Terms> {
    let mut out = t.clone();
    for (m, c) in other {
        let e = out.entry(m.clone()).or_insert(0);
        *e = e.checked_sub(*c)?;
        if *e == 0 {
            out.remove(m);
        }
    }
    Some(out)
}

fn instantiate(e: &IndexExpr, env: &Env) -> Option<IndexExpr> {
    Some(match e {
        IndexExpr::Meta(name) => env.get(name)?.clone(),
        IndexExpr::Const(_) | IndexExpr::Var(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(instantiate(a, env)?)),
        IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(instantiate(a, env)?)),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, instantiate(a, env)?, instantiate(b, env)?),
    })
}

fn instantiate_pred(p: &Pred, env: &Env) -> Option<Pred> {
    Some(match p {
        Pred::Bool(b) => Pred::Bool(*b),
        Pred::Cmp(op, a, b) => Pred::Cmp(*op, instantiate(a, env)?, instantiate(b, env)?),
        Pred::And(a, b) => Pred::and(instantiate_pred(a, env)?, instantiate_pred(b, env)?),
        Pred::Or(a, b) => Pred::or(instantiate_pred(a, env)?, instantiate_pred(b, env)?),
        Pred::Not(a) => Pred::not(instantiate_pred(a, env)?),
    })
}

fn metas_bound(e: &IndexExpr, env: &Env) -> bool {
    match e {
        IndexExpr::Meta(name) => env.contains_key(name),
        IndexExpr::Const(_) | IndexExpr::Var(_) => true,
        IndexExpr::Neg(a) | IndexExpr::Load(_, a) => metas_bound(a, env),
        IndexExpr::Bin(_, a, b) => metas_bound(a, env) && metas_bound(b, env),
    }
}

/// Binds `name` to `value`, or checks that an existing binding has the same normal
/// form.
fn bind(env: &Env, name: &str, value: IndexExpr) -> Option<Env> {
    match env.get(name) {
        Some(old) => (terms_of(old) == terms_of(&value)).then(|| env.clone()),
        None => {
            let mut env = env.clone();
            env.insert(name.to_string(), value);
            Some(env)
        }
    }
}

/// All ways (up to a cap) in which `pat` matches `e`, extending `env`.
fn match_pat(pat: &IndexExpr, e: &IndexExpr, env: &Env, out: &mut Vec<Env>) {
    if out.len() >= MAX_CANDIDATES {
        return;
    }
    match pat {
        IndexExpr::Meta(name) if is_const_meta(name) => {
            if let Some(k) = Poly::from_index(e).as_const()
                && let Some(env) = bind(env, name, IndexExpr::Const(k))
            {
                out.push(env);
            }
        }
        IndexExpr::Meta(name) => {
            if let Some(env) = bind(env, name, e.clone()) {
                out.push(env);
            }
        }
        IndexExpr::Const(k) => {
            if Poly::from_index(e).as_const() == Some(*k) {
                out.push(env.clone());
            }
        }
        IndexExpr::Var(v) => {
            if matches!(e, IndexExpr::Var(w) if w == v) {
                out.push(env.clone());
            }
        }
        IndexExpr::Load(array, pa) => {
            if let IndexExpr::Load(b, ea) = e
                && b == array
            {
                match_pat(pa, ea, env, out);
            }
        }
        IndexExpr::Bin(op @ (IndexOp::Div | IndexOp::Mod | IndexOp::CDiv), pa, pb) => {
            if let IndexExpr::Bin(eop, ea, eb) = e
                && eop == op
            {
                // The divisor first: it is usually a constant or a single name, and
                // binding it first narrows the numerator's match.
                let mut first = Vec::new();
                match_pat(pb, eb, env, &mut first);
                for env in first {
                    match_pat(pa, ea, &env, out);
                }
            }
        }
        IndexExpr::Bin(op @ (IndexOp::Min | IndexOp::Max), pa, pb) => {
            if let IndexExpr::Bin(eop, ea, eb) = e
                && eop == op
            {
                for (x, y) in [(ea, eb), (eb, ea)] {
                    let mut first = Vec::new();
                    match_pat(pa, x, env, &mut first);
                    for env in first {
                        match_pat(pb, y, &env, out);
                    }
                }
            }
        }
        IndexExpr::Neg(_) | IndexExpr::Bin(..) => match_sum(pat, e, env, out),
    }
}

/// Matches a sum/product pattern against the polynomial of `e`.
fn match_sum(pat: &IndexExpr, e: &IndexExpr, env: &Env, out: &mut Vec<Env>) {
    let pterms = terms_of(pat);
    let mut bare = Vec::new();
    let mut others = Vec::new();
    for (m, c) in &pterms {
        match m.as_slice() {
            [IndexExpr::Meta(name)] if *c == 1 && !is_const_meta(name) => bare.push(name.clone()),
            _ => others.push((m.clone(), *c)),
        }
    }
    match_terms(&others, &bare, 0, &terms_of(e), env, out);
}

fn match_terms(
    others: &[(Monomial, i64)],
    bare: &[String],
    idx: usize,
    residual: &Terms,
    env: &Env,
    out: &mut Vec<Env>,
) {
    if out.len() >= MAX_CANDIDATES {
        return;
    }
    let Some((mono, k)) = others.get(idx) else {
        finish_bare(bare, residual, env, out);
        return;
    };
    if mono.iter().all(|f| metas_bound(f, env)) {
        // Fully determined: subtract its value.
        let Some(inst) = instantiate(&term_expr(mono, *k), env) else {
            return;
        };
        if let Some(rest) = sub_terms(residual, &terms_of(&inst)) {
            match_terms(others, bare, idx + 1, &rest, env, out);
        }
        return;
    }
    for (em, ek) in residual {
        let mut envs = Vec::new();
        match_term(mono, *k, em, *ek, env, &mut envs);
        if envs.is_empty() {
            continue;
        }
        let mut rest = residual.clone();
        rest.remove(em);
        for env in envs {
            match_terms(others, bare, idx + 1, &rest, &env, out);
        }
    }
}

/// Lone metavariables of a sum: bound ones are subtracted, one unbound takes the rest.
fn finish_bare(bare: &[String], residual: &Terms, env: &Env, out: &mut Vec<Env>) {
    let mut rest = residual.clone();
    let mut unbound = Vec::new();
    for name in bare {
        match env.get(name) {
            Some(v) => match sub_terms(&rest, &terms_of(v)) {
                Some(r) => rest = r,
                None => return,
            },
            None => unbound.push(name),
        }
    }
    match unbound.as_slice() {
        [] if rest.is_empty() => out.push(env.clone()),
        [name] => {
            let mut env = env.clone();
            env.insert((*name).clone(), from_terms(&rest));
            out.push(env);
        }
        // Several lone metavariables would split the rest ambiguously: no match.
        _ => {}
    }
}

/// Matches one pattern term `kp · mono` against one expression term `ek · em`.
fn match_term(mono: &Monomial, kp: i64, em: &Monomial, ek: i64, env: &Env, out: &mut Vec<Env>) {
    // Checked: `i64::MIN / -1` overflows (and panics even in release builds).
    if ek.checked_rem(kp) != Some(0) {
        return;
    }
    let Some(k) = ek.checked_div(kp) else { return };
    let mut cmetas = Vec::new();
    let mut gmetas = Vec::new();
    let mut structs = Vec::new();
    for f in mono {
        match f {
            IndexExpr::Meta(n) if is_const_meta(n) => cmetas.push(n.clone()),
            IndexExpr::Meta(n) => gmetas.push(n.clone()),
            other => structs.push(other.clone()),
        }
    }
    if cmetas.len() > 1 {
        return;
    }
    let mut assigned = Vec::new();
    assign_structs(&structs, em.clone(), env, &mut assigned);
    for (env, rem) in assigned {
        let mut k = k;
        let mut env = env;
        if let Some(c) = cmetas.first() {
            match env.get(c).and_then(IndexExpr::as_const) {
                Some(v) => match (k.checked_rem(v), k.checked_div(v)) {
                    (Some(0), Some(q)) => k = q,
                    _ => continue,
                },
                None if env.contains_key(c) => continue,
                None => {
                    env.insert(c.clone(), IndexExpr::Const(k));
                    k = 1;
                }
            }
        }
        finish_general(&gmetas, rem, k, &env, out);
    }
}

/// Matches structured factors (operations) of a pattern monomial against distinct
/// factors of an expression monomial; returns the environments and unused factors.
fn assign_structs(
    structs: &[IndexExpr],
    factors: Monomial,
    env: &Env,
    out: &mut Vec<(Env, Monomial)>,
) {
    let Some((first, rest)) = structs.split_first() else {
        out.push((env.clone(), factors));
        return;
    };
    for i in 0..factors.len() {
        let mut envs = Vec::new();
        match_pat(first, &factors[i], env, &mut envs);
        for env in envs {
            let mut remaining = factors.clone();
            remaining.remove(i);
            assign_structs(rest, remaining, &env, out);
        }
    }
}

/// Distributes the remaining factors and coefficient over general metavariables.
fn finish_general(gmetas: &[String], mut rem: Monomial, mut k: i64, env: &Env, out: &mut Vec<Env>) {
    let mut unbound = Vec::new();
    for g in gmetas {
        let Some(v) = env.get(g) else {
            unbound.push(g.clone());
            continue;
        };
        // A bound factor must divide the term exactly.
        let vt = terms_of(v);
        let Some((vm, vk)) = vt.iter().next().filter(|_| vt.len() == 1) else {
            return;
        };
        if k.checked_rem(*vk) != Some(0) {
            return;
        }
        for f in vm {
            match rem.iter().position(|x| x == f) {
                Some(i) => {
                    rem.remove(i);
                }
                None => return,
            }
        }
        let Some(q) = k.checked_div(*vk) else { return };
        k = q;
    }
    match unbound.as_slice() {
        [] if rem.is_empty() && k == 1 => out.push(env.clone()),
        [] => {}
        [g] => {
            let mut env = env.clone();
            env.insert(g.clone(), canonical(&term_expr(&rem, k)));
            out.push(env);
        }
        [g, h] if g != h && rem.len() <= 4 => {
            // Every split of the factors; the coefficient goes with the second.
            for mask in 1u32..(1 << rem.len()) {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for (i, f) in rem.iter().enumerate() {
                    if mask & (1 << i) != 0 {
                        a.push(f.clone());
                    } else {
                        b.push(f.clone());
                    }
                }
                let mut env = env.clone();
                env.insert(g.clone(), canonical(&term_expr(&a, 1)));
                env.insert(h.clone(), canonical(&term_expr(&b, k)));
                out.push(env);
            }
        }
        _ => {}
    }
}

/// A position in an expression: the child indices from the root.
type Path = Vec<usize>;

fn is_sum(e: &IndexExpr) -> bool {
    matches!(
        e,
        IndexExpr::Neg(_) | IndexExpr::Bin(IndexOp::Add | IndexOp::Sub, ..)
    )
}

fn is_product(e: &IndexExpr) -> bool {
    matches!(e, IndexExpr::Bin(IndexOp::Mul, ..))
}

/// Rewrite positions in post-order: operations only, and for a chain of `+`/`-` (or
/// of `*`) only its root, since sum and product patterns match whole chains.
fn positions<'e>(e: &'e IndexExpr, path: &mut Path, out: &mut Vec<(Path, &'e IndexExpr)>) {
    let inner =
        |child: &IndexExpr| (is_sum(e) && is_sum(child)) || (is_product(e) && is_product(child));
    match e {
        // A load is a leaf: its index is simplified on its own, before
        // (`Engine::load_indices`).
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) | IndexExpr::Load(..) => {
            return;
        }
        IndexExpr::Neg(a) => {
            path.push(0);
            positions(a, path, out);
            path.pop();
            if inner(a) {
                out.retain(|(p, _)| p != &*path_with(path, 0));
            }
        }
        IndexExpr::Bin(_, a, b) => {
            for (i, child) in [a, b].into_iter().enumerate() {
                path.push(i);
                positions(child, path, out);
                path.pop();
                if inner(child) {
                    let p = path_with(path, i);
                    out.retain(|(q, _)| q != &p);
                }
            }
        }
    }
    out.push((path.clone(), e));
}

fn path_with(path: &Path, i: usize) -> Path {
    let mut p = path.clone();
    p.push(i);
    p
}

fn replace(e: &IndexExpr, path: &[usize], new: &IndexExpr) -> IndexExpr {
    let Some((first, rest)) = path.split_first() else {
        return new.clone();
    };
    match e {
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(replace(a, rest, new))),
        IndexExpr::Bin(op, a, b) if *first == 0 => {
            IndexExpr::bin(*op, replace(a, rest, new), (**b).clone())
        }
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, (**a).clone(), replace(b, rest, new)),
        leaf => leaf.clone(),
    }
}

struct Engine<'a> {
    rules: &'a RuleSet,
    facts: &'a Facts,
    solver: &'a Solver,
}

impl Engine<'_> {
    fn conditions_hold(&self, rule: &Rule, env: &Env) -> bool {
        rule.conditions.iter().all(|c| {
            let Some(inst) = instantiate_pred(c, env) else {
                return false;
            };
            if inst.vars().is_empty() {
                // Conditions on matched constants are decided by evaluation.
                return inst.eval(&|_| None) == Ok(true);
            }
            self.proves(self.facts, &inst)
        })
    }

    /// Whether the solver proves `goal`. z3 is consulted only for linear queries
    /// (decidable, milliseconds); a non-linear one gets the fast path alone, because
    /// a simplification may ask many of them and each hopeless z3 call costs its whole
    /// resource limit.
    fn proves(&self, facts: &Facts, goal: &Pred) -> bool {
        if crate::smt::is_linear(facts, goal) {
            self.solver.prove(facts, goal).is_proved()
        } else {
            self.solver.prove_fast(facts, goal)
        }
    }

    fn instantiate_rhs(&self, rule: &Rule, env: &Env) -> Option<IndexExpr> {
        let mut env = env.clone();
        for (k, body) in rule.folds.iter().enumerate() {
            let value = instantiate(body, &env)?.as_const()?;
            env.insert(
                format!("{}{k}", crate::syntax::FOLD_PREFIX),
                IndexExpr::Const(value),
            );
        }
        instantiate(&rule.rhs, &env)
    }

    fn rewrite_once(&self, cur: &IndexExpr) -> Option<IndexExpr> {
        let w = crate::rules::weight(cur);
        let mut pos = Vec::new();
        positions(cur, &mut Vec::new(), &mut pos);
        for (path, sub) in pos {
            for rule in &self.rules.rules {
                let mut envs = Vec::new();
                match_pat(&rule.lhs, sub, &Env::new(), &mut envs);
                for env in envs {
                    let Some(lhs) = instantiate(&rule.lhs, &env) else {
                        continue;
                    };
                    // The matcher works modulo normal forms; confirm the match.
                    if terms_of(&lhs) != terms_of(sub) {
                        continue;
                    }
                    let Some(rhs) = self.instantiate_rhs(rule, &env) else {
                        continue;
                    };
                    let next = canonical(&replace(cur, &path, &rhs));
                    if crate::rules::weight(&next) >= w {
                        continue;
                    }
                    if self.conditions_hold(rule, &env) {
                        return Some(next);
                    }
                }
            }
        }
        None
    }

    fn index(&self, e: &IndexExpr) -> IndexExpr {
        let mut cur = canonical(&self.load_indices(e));
        for _ in 0..MAX_STEPS {
            match self.rewrite_once(&cur) {
                Some(next) => cur = next,
                None => break,
            }
        }
        cur
    }

    /// `e` with the index of every load simplified (a load is a leaf for the rewrite
    /// rules, but its index is an index expression like any other: `pos[(4 * ib + ii)
    /// / 4]` under `0 <= ii < 4` is `pos[ib]`, which lets a loop over a block row's
    /// stored blocks leave the rows of the block).
    fn load_indices(&self, e: &IndexExpr) -> IndexExpr {
        match e {
            IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => e.clone(),
            IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(self.index(a))),
            IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(self.load_indices(a))),
            IndexExpr::Bin(op, a, b) => {
                IndexExpr::bin(*op, self.load_indices(a), self.load_indices(b))
            }
        }
    }
}

/// Simplifies an index expression under `facts` with the built-in rules. The result
/// equals `e` for every assignment satisfying the facts. Deterministic; terminates.
pub fn simplify_index(e: &IndexExpr, facts: &Facts, solver: &Solver) -> IndexExpr {
    simplify_index_with(RuleSet::builtin(), e, facts, solver)
}

/// [`simplify_index`] with a caller-supplied rule set.
pub fn simplify_index_with(
    rules: &RuleSet,
    e: &IndexExpr,
    facts: &Facts,
    solver: &Solver,
) -> IndexExpr {
    Engine {
        rules,
        facts,
        solver,
    }
    .index(e)
}

/// Simplifies a predicate under `facts`: index expressions are simplified,
/// comparisons are put in the canonical form `N op P` (all coefficients positive),
/// comparisons the solver proves true or false under the facts (and the enclosing
/// conjuncts) become `true`/`false`, and boolean structure is folded.
pub fn simplify_pred(p: &Pred, facts: &Facts, solver: &Solver) -> Pred {
    simplify_pred_with(RuleSet::builtin(), p, facts, solver)
}

/// [`simplify_pred`] with a caller-supplied rule set.
pub fn simplify_pred_with(rules: &RuleSet, p: &Pred, facts: &Facts, solver: &Solver) -> Pred {
    Engine {
        rules,
        facts,
        solver,
    }
    .pred(p)
}

/// The negation of `p`, without a double negation.
fn negate(p: &Pred) -> Pred {
    match p {
        Pred::Bool(b) => Pred::Bool(!b),
        Pred::Cmp(op, a, b) => Pred::Cmp(op.negate(), a.clone(), b.clone()),
        Pred::Not(a) => (**a).clone(),
        other => Pred::not(other.clone()),
    }
}

/// `a op b` as `N op P`, where `b - a = P - N` and `N`, `P` have positive
/// coefficients; a constant difference decides the comparison.
fn canonical_cmp(op: CmpOp, a: &IndexExpr, b: &IndexExpr) -> Pred {
    let d = Poly::from_index(&IndexExpr::sub(b.clone(), a.clone()));
    if let Some(c) = d.as_const() {
        return Pred::Bool(op.holds(0, c));
    }
    let mut pos = Terms::new();
    let mut neg = Terms::new();
    for (m, c) in d.terms() {
        if *c > 0 {
            pos.insert(m.clone(), *c);
        } else if let Some(nc) = c.checked_neg() {
            neg.insert(m.clone(), nc);
        } else {
            // -i64::MIN does not exist: keep the comparison as written.
            return Pred::Cmp(op, a.clone(), b.clone());
        }
    }
    Pred::Cmp(op, from_terms(&neg), from_terms(&pos))
}

impl Engine<'_> {
    fn with_fact(&self, fact: Pred) -> Facts {
        let mut f = self.facts.clone();
        f.facts.push(fact);
        f
    }

    /// Whether `p` implies `q` under the facts, as far as the fast path can tell
    /// (absorbing a disjunct is a nicety, not worth a z3 call).
    fn implies(&self, p: &Pred, q: &Pred) -> bool {
        self.solver.prove_fast(&self.with_fact(p.clone()), q)
    }

    fn decide(&self, c: Pred) -> Pred {
        if self.proves(self.facts, &c) {
            Pred::Bool(true)
        } else if self.proves(self.facts, &negate(&c)) {
            Pred::Bool(false)
        } else {
            c
        }
    }

    fn pred(&self, p: &Pred) -> Pred {
        match p {
            Pred::Bool(_) => p.clone(),
            Pred::Cmp(op, a, b) => {
                let a = self.index(a);
                let b = self.index(b);
                match canonical_cmp(*op, &a, &b) {
                    c @ Pred::Cmp(..) => self.decide(c),
                    other => other,
                }
            }
            Pred::Not(a) => negate(&self.pred(a)),
            Pred::And(a, b) => {
                let a = self.pred(a);
                match a {
                    Pred::Bool(false) => a,
                    Pred::Bool(true) => self.pred(b),
                    _ => {
                        // Inside `a && b`, `b` only matters where `a` holds.
                        let facts = self.with_fact(a.clone());
                        let inner = Engine {
                            facts: &facts,
                            ..*self
                        };
                        match inner.pred(b) {
                            Pred::Bool(true) => a,
                            Pred::Bool(false) => Pred::Bool(false),
                            // `a` is redundant when `b` implies it.
                            b if self.implies(&b, &a) => b,
                            b => Pred::and(a, b),
                        }
                    }
                }
            }
            Pred::Or(a, b) => {
                let a = self.pred(a);
                match a {
                    Pred::Bool(true) => a,
                    Pred::Bool(false) => self.pred(b),
                    _ => {
                        // Inside `a || b`, `b` only matters where `a` fails.
                        let facts = self.with_fact(negate(&a));
                        let inner = Engine {
                            facts: &facts,
                            ..*self
                        };
                        match inner.pred(b) {
                            Pred::Bool(true) => Pred::Bool(true),
                            Pred::Bool(false) => a,
                            // One disjunct absorbs the other when it is implied by it.
                            b if self.implies(&a, &b) => b,
                            b if self.implies(&b, &a) => a,
                            b => Pred::or(a, b),
                        }
                    }
                }
            }
        }
    }
}
