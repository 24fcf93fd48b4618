//! The rewrite engine: contexts, site selection, tactics and derivations.
//!
//! A step rewrites one program (a definition body) into an equal one. On the way down
//! to a site the engine collects the *context* (thesis §4.2.2): the range of every
//! enclosing `gen`/`sum`, every enclosing guard's predicate, the shapes of enclosing
//! `let`s, the program's `assume`s and sizes >= 1. Side conditions are proved by the
//! solver under that context; "unknown" is a failure. Every step is recorded for the
//! certificate.

use std::collections::{BTreeMap, BTreeSet};

use atl_lang::ast::{self, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{self, Expr, ExprKind, LoopHint, Program};
use atl_lang::poly;
use atl_lang::pretty::{Style, expr_to_string};
use atl_lang::shapes::{self, Shape, ShapeEnv, show_shape};
use atl_lang::span::Span;
use atl_solver::{Facts, Solver, Verdict};

use crate::cert::{ConditionRecord, StepRecord};
use crate::library::Library;
use crate::matcher::{self, Bindings};
use crate::rule::{Condition, Grade, Rule};

/// Facts and shapes known at a point of a program.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// Binder ranges and guard predicates, outermost first.
    pub facts: Vec<Pred>,
    /// Shapes of enclosing lets (innermost last).
    pub lets: Vec<(String, Shape)>,
    /// Names bound around the point (index and tensor binders).
    pub bound: Vec<String>,
}

/// Everything a step needs besides the expression being rewritten.
#[derive(Debug)]
pub struct Env<'a> {
    pub program: &'a Program,
    pub shapes: &'a ShapeEnv,
    pub library: &'a Library,
    pub solver: &'a Solver,
}

impl Env<'_> {
    /// The solver's facts for a context: sizes, assumes, then the context's facts.
    pub fn facts(&self, ctx: &Context) -> Facts {
        let mut f = crate::well_shaped::declaration_facts(self.program);
        f.facts.extend(ctx.facts.iter().cloned());
        f
    }
}

/// A node reached by a pre-order walk: its path (child indices from the root), the
/// context there and the node.
#[derive(Debug)]
pub struct Site<'e> {
    pub path: Vec<usize>,
    pub ctx: Context,
    pub expr: &'e Expr,
}

fn range_fact(var: &str, lo: &IndexExpr, hi: &IndexExpr) -> Pred {
    Pred::and(
        Pred::cmp(CmpOp::Le, lo.clone(), IndexExpr::var(var)),
        Pred::cmp(CmpOp::Lt, IndexExpr::var(var), hi.clone()),
    )
}

/// The context inside child `k` of `e`, given the context at `e`.
fn child_context(env: &ShapeEnv, e: &Expr, k: usize, ctx: &Context) -> Context {
    let mut c = ctx.clone();
    match &e.kind {
        ExprKind::Gen { var, lo, hi, .. } | ExprKind::Sum { var, lo, hi, .. } => {
            c.facts.push(range_fact(var, lo, hi));
            c.bound.push(var.clone());
        }
        ExprKind::Guard { pred, .. } => c.facts.push(pred.clone()),
        ExprKind::Let { var, value, .. } if k == 1 => {
            let mut lets = ctx.lets.clone();
            if let Ok(s) = shapes::infer_with_lets(env, &mut lets, value) {
                c.lets.push((var.clone(), s));
            }
            c.bound.push(var.clone());
        }
        _ => {}
    }
    c
}

/// The largest program (in nodes) a derivation step may produce: far above the
/// examples' programs (whose printed forms are under 2,000 characters), low enough
/// that a derivation duplicating a term at every step stops within seconds.
pub const MAX_TERM_SIZE: usize = 20_000;

/// The number of nodes of `e`.
pub fn term_size(e: &Expr) -> usize {
    let mut n = 0;
    e.walk(&mut |_| n += 1);
    n
}

/// The context at `path` (empty if the path leaves the tree).
pub fn context_at(env: &ShapeEnv, root: &Expr, path: &[usize]) -> Context {
    let mut ctx = Context::default();
    let mut cur = root;
    for &k in path {
        let Some(child) = cur.children().get(k).copied() else {
            break;
        };
        ctx = child_context(env, cur, k, &ctx);
        cur = child;
    }
    ctx
}

/// The step's word as the user wrote it (`rw split_gen`, `simpl`, …), for messages.
fn step_word(step: &ast::Step) -> String {
    match &step.kind {
        StepKind::Rewrite { backward, rule, .. } => {
            format!("{} {}", if *backward { "rw<-" } else { "rw" }, rule.name)
        }
        StepKind::Unfold(n) => format!("unfold {}", n.name),
        StepKind::Inline(n) => format!("inline {}", n.name),
        StepKind::Simpl => "simpl".into(),
        StepKind::SimplGuard => "simpl_guard".into(),
        StepKind::Window { var, .. } => format!("window {}", var.name),
        StepKind::Check => "check".into(),
        StepKind::Directive { name, .. } => name.name.clone(),
    }
}

/// All nodes in pre-order with paths and contexts.
pub fn sites<'e>(env: &ShapeEnv, root: &'e Expr) -> Vec<Site<'e>> {
    let mut out = Vec::new();
    fn go<'e>(
        env: &ShapeEnv,
        e: &'e Expr,
        path: &mut Vec<usize>,
        ctx: Context,
        out: &mut Vec<Site<'e>>,
    ) {
        out.push(Site {
            path: path.clone(),
            ctx: ctx.clone(),
            expr: e,
        });
        for (k, c) in e.children().into_iter().enumerate() {
            let cctx = child_context(env, e, k, &ctx);
            path.push(k);
            go(env, c, path, cctx, out);
            path.pop();
        }
    }
    go(env, root, &mut Vec::new(), Context::default(), &mut out);
    out
}

/// The node at `path`, if any.
pub fn node_at<'e>(root: &'e Expr, path: &[usize]) -> Option<&'e Expr> {
    let mut cur = root;
    for &k in path {
        cur = *cur.children().get(k)?;
    }
    Some(cur)
}

/// Replaces the node at `path`.
pub fn replace_at(root: &Expr, path: &[usize], new: Expr) -> Option<Expr> {
    if path.is_empty() {
        return Some(new);
    }
    let mut out = root.clone();
    let child = {
        let children = out.children();
        (*children.get(path[0])?).clone()
    };
    let replaced = replace_at(&child, &path[1..], new)?;
    *out.children_mut().into_iter().nth(path[0])? = replaced;
    Some(out)
}

/// The result of one step: the new expression and its record.
#[derive(Debug)]
pub struct StepOutcome {
    pub expr: Expr,
    pub record: StepRecord,
}

fn show(e: &Expr) -> String {
    expr_to_string(e, Style::default())
}

fn show_facts(facts: &Facts) -> Vec<String> {
    let mut out: Vec<String> = facts.sizes.iter().map(|s| format!("{s} >= 1")).collect();
    out.extend(facts.facts.iter().map(|p| p.to_string()));
    out
}

fn step_error(code: &'static str, span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(code, msg).at(span, "this step")
}

/// Which side is matched and which is produced.
fn sides(rule: &Rule, backward: bool) -> (&Expr, &Expr) {
    if backward {
        (&rule.rhs, &rule.lhs)
    } else {
        (&rule.lhs, &rule.rhs)
    }
}

/// Applies `rw RULE …` to `root`.
#[allow(clippy::too_many_arguments)]
pub fn rewrite(
    env: &Env<'_>,
    root: &Expr,
    rule_name: &ast::Ident,
    backward: bool,
    site_sel: &ast::SiteSelector,
    with: &[(ast::Ident, ast::SIndex)],
    step_span: Span,
) -> Result<StepOutcome, Diagnostic> {
    let rule = env.library.get(&rule_name.name).ok_or_else(|| {
        let mut d = Diagnostic::error("E0801", format!("no rule named `{}`", rule_name.name))
            .at(rule_name.span, "unknown rule");
        if let Some(s) = env.library.suggest(&rule_name.name) {
            d = d.with_help(format!("did you mean `{s}`?"));
        } else {
            d = d.with_help("`atl rules` lists the rule library");
        }
        d
    })?;
    if backward && !rule.substs.is_empty() {
        return Err(Diagnostic::error(
            "E0802",
            format!("rule `{}` cannot be used right-to-left", rule.name),
        )
        .at(
            step_span,
            "its right side contains a substitution, which is not a pattern",
        )
        .with_help(format!("use `rw {}`", rule.name)));
    }
    let (pattern, result) = sides(rule, backward);

    // `with` values are index expressions in the site's scope.
    let mut with_values = BTreeMap::new();
    let mut pattern_metas = BTreeSet::new();
    crate::rule::metas_of(pattern, &mut pattern_metas);
    // Binders that only the produced side introduces may be named with `with`.
    let mut pattern_binders = std::collections::HashSet::new();
    pattern.bound_names(&mut pattern_binders);
    let mut result_binders = std::collections::HashSet::new();
    result.bound_names(&mut result_binders);
    let mut binder_names = BTreeMap::new();
    for (name, value) in with {
        let key = name.name.trim_start_matches('?').to_string();
        let binder = format!("?{key}");
        if result_binders.contains(&binder) && !pattern_binders.contains(&binder) {
            match atl_lang::resolve::lower_index_free(value)? {
                IndexExpr::Var(v)
                    if !ir::all_names(root).contains(&v)
                        && !env.program.is_size(&v)
                        && env.program.input(&v).is_none()
                        && env.program.def(&v).is_none() =>
                {
                    binder_names.insert(binder, v);
                    continue;
                }
                _ => {
                    return Err(Diagnostic::error("E0803", format!("`{key}` names a new binder and needs a fresh name"))
                        .at(value.span, "not a fresh name")
                        .with_help(format!("for example `with {key} := {key}2`, using a name the program does not use yet")));
                }
            }
        }
        let shape_bound = rule.conditions.iter().any(|c| matches!(c, Condition::Shape { dims, .. } if dims.iter().any(|d| d == &IndexExpr::Meta(key.clone()))));
        if shape_bound && !rule.params.contains(&key) {
            // The shape condition determines it; a value given here would add a side
            // condition the certificate checker does not derive (found by the fuzzer).
            return Err(Diagnostic::error(
                "E0803",
                format!("`?{key}` is determined by the shape of the matched term and cannot be given with `with`"),
            )
            .at(name.span, "determined by the match")
            .with_help(format!("remove `{key} := …`")));
        }
        if !rule.params.contains(&key) && !shape_bound {
            return Err(Diagnostic::error(
                "E0803",
                format!("`{key}` is not a parameter of rule `{}`", rule.name),
            )
            .at(name.span, "unknown parameter")
            .with_help(if rule.params.is_empty() {
                "this rule takes no `with` values".to_string()
            } else {
                format!(
                    "its parameters are: {}",
                    rule.params
                        .iter()
                        .map(|p| format!("?{p}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }));
        }
        if pattern_metas.contains(&key) {
            return Err(Diagnostic::error(
                "E0803",
                format!("`?{key}` is matched in this direction and cannot be given with `with`"),
            )
            .at(name.span, "determined by the match"));
        }
        let v = atl_lang::resolve::lower_index_free(value)?;
        with_values.insert(key, v);
    }

    // Candidate sites.
    let all = sites(env.shapes, root);
    let mut candidates: Vec<&Site<'_>> = all.iter().collect();
    if let Some((path, span)) = &site_sel.path {
        let path: Vec<usize> = path.iter().map(|p| *p as usize).collect();
        candidates.retain(|s| s.path == path);
        if candidates.is_empty() {
            return Err(Diagnostic::error("E0804", "no subterm at this path")
                .at(*span, "path leads nowhere")
                .with_help("paths are child numbers from the root, starting at 0"));
        }
    }
    if let Some(around) = &site_sel.around {
        let pat = crate::rule::site_pattern(around)?;
        let anchor = all
            .iter()
            .find(|s| site_matches(&pat, s.expr))
            .ok_or_else(|| {
                Diagnostic::error("E0805", "no subterm matches the `around` pattern")
                    .at(around.span, "matches nothing")
            })?;
        let prefix = anchor.path.clone();
        candidates.retain(|s| s.path.starts_with(&prefix));
    }
    let mut matches = Vec::new();
    let mut refusals = Vec::new();
    for s in candidates {
        match matcher::match_at(rule, pattern, s.expr) {
            Ok(b) => matches.push((s, b)),
            Err(notes) => refusals.extend(notes.scope_refusals),
        }
    }
    let wanted = site_sel.at.map(|(n, _)| n as usize).unwrap_or(1);
    let total = matches.len();
    let Some((site, mut bindings)) = matches.into_iter().nth(wanted - 1) else {
        let mut d = if total == 0 {
            Diagnostic::error("E0806", format!("rule `{}` matches nowhere", rule.name))
                .at(step_span, "no match")
                .with_note(format!(
                    "{}: {}",
                    if backward { "right side" } else { "left side" },
                    if backward {
                        rule.equation.split("=>").nth(1).unwrap_or("").trim()
                    } else {
                        rule.equation.split("=>").next().unwrap_or("").trim()
                    }
                ))
        } else {
            Diagnostic::error(
                "E0806",
                format!("rule `{}` has only {total} match(es)", rule.name),
            )
            .at(step_span, format!("asked for match {wanted}"))
        };
        if let Some(r) = refusals.first() {
            d = d.with_note(format!("a structural match was refused: {r}"));
        }
        return Err(d);
    };
    // A `with` value is evaluated in the site's scope: it may mention sizes and the
    // binders around the site, never a binder of the rewritten term itself (the rule's
    // binders would capture it; a rule parameter is a constant of the rule).
    for (name, _) in with {
        let key = name.name.trim_start_matches('?');
        let Some(v) = with_values.get(key) else {
            continue;
        };
        for var in v.vars() {
            if env.program.is_size(&var) || site.ctx.bound.contains(&var) {
                continue;
            }
            let bound_inside = ir::all_names(site.expr).contains(&var);
            return Err(Diagnostic::error(
                "E0846",
                format!("the value of `{key}` mentions `{var}`, which is not in scope at the rewritten term"),
            )
            .at(name.span, if bound_inside { "bound inside the rewritten term" } else { "not a size or an enclosing binder" })
            .with_help("a `with` value may use sizes, constants and the binders around the rewritten term"));
        }
    }
    // New binders named with `with` must be distinct from each other too.
    let mut seen_binders = BTreeSet::new();
    for (name, value) in with {
        let binder = format!("?{}", name.name.trim_start_matches('?'));
        if let Some(v) = binder_names.get(&binder)
            && !seen_binders.insert(v.clone())
        {
            return Err(
                Diagnostic::error("E0803", format!("`{v}` names two new binders"))
                    .at(value.span, "used for another binder of this step already")
                    .with_help("give each new binder its own fresh name"),
            );
        }
    }
    for (k, v) in &with_values {
        bindings.indices.insert(k.clone(), v.clone());
    }

    let facts = env.facts(&site.ctx);
    let mut records = Vec::new();

    // Shape conditions bind or check dimensions.
    for c in &rule.conditions {
        let Condition::Shape {
            name,
            meta,
            dims,
            open,
        } = c
        else {
            continue;
        };
        let Some(term) = bindings.exprs.get(meta) else {
            return Err(step_error(
                "E0807",
                step_span,
                format!(
                    "condition `{name}` of `{}` needs `?{meta}`, which is not matched in this direction",
                    rule.name
                ),
            ));
        };
        let mut lets = site.ctx.lets.clone();
        let shape = shapes::infer_with_lets(env.shapes, &mut lets, term).map_err(|d| {
            step_error(
                "E0807",
                step_span,
                format!("cannot infer the shape of `?{meta}` for condition `{name}`"),
            )
            .with_note(d.message)
        })?;
        if shape.len() < dims.len() || (!open && shape.len() != dims.len()) {
            return Err(step_error(
                "E0808",
                step_span,
                format!("condition `{name}` of `{}` fails", rule.name),
            )
            .with_note(format!(
                "`?{meta}` has shape {}, which is not {}",
                show_shape(&shape),
                show_dims(dims, *open)
            )));
        }
        for (d, actual) in dims.iter().zip(&shape) {
            if let IndexExpr::Meta(m) = d
                && !bindings.indices.contains_key(m)
            {
                bindings.indices.insert(m.clone(), actual.clone());
                continue;
            }
            let expected = matcher::instantiate_index(d, &bindings).ok_or_else(|| {
                step_error(
                    "E0807",
                    step_span,
                    format!("condition `{name}` mentions an unbound metavariable"),
                )
            })?;
            let goal = Pred::cmp(CmpOp::Eq, expected.clone(), actual.clone());
            let verdict = if poly::same(&expected, actual) {
                Verdict::Proved
            } else {
                env.solver.prove(&facts, &goal)
            };
            records.push(ConditionRecord::new(name, &goal, &facts, &verdict));
            check_verdict(&verdict, rule, name, &goal, &facts, step_span)?;
        }
    }

    // Every parameter must have a value now.
    let mut result_metas = BTreeSet::new();
    crate::rule::metas_of(result, &mut result_metas);
    for spec in rule.substs.values() {
        result_metas.insert(spec.meta.clone());
        match &spec.value {
            crate::rule::SubstValue::Index(v) => {
                let mut ms = BTreeSet::new();
                crate::rule::metas_of(&Expr::access(Expr::input("_"), v.clone()), &mut ms);
                result_metas.extend(ms);
            }
            crate::rule::SubstValue::Expr(v) => {
                result_metas.insert(v.clone());
            }
        }
    }
    for m in &result_metas {
        if rule.substs.contains_key(m) {
            continue;
        }
        let bound = match m.strip_prefix("pred:") {
            Some(p) => bindings.preds.contains_key(p),
            None => bindings.exprs.contains_key(m) || bindings.indices.contains_key(m),
        };
        if !bound {
            return Err(Diagnostic::error(
                "E0809",
                format!(
                    "rule `{}` needs a value for `?{m}` in this direction",
                    rule.name
                ),
            )
            .at(step_span, "missing instantiation")
            .with_help(format!("add `with {m} := …`")));
        }
    }

    // Index side conditions.
    for c in &rule.conditions {
        let Condition::Pred { name, pred } = c else {
            continue;
        };
        let goal = matcher::instantiate_pred(pred, &bindings).ok_or_else(|| {
            step_error(
                "E0809",
                step_span,
                format!(
                    "condition `{name}` of `{}` mentions a metavariable without a value",
                    rule.name
                ),
            )
            .with_help("give it with `with NAME := …`")
        })?;
        // Conditions may mention binders matched inside the pattern (directly, or
        // through an index value captured in pattern names): add their ranges.
        let goal = rename_pattern_pred(&goal, &bindings);
        let mut f = facts.clone();
        for (pv, (lo, hi)) in &bindings.ranges {
            if let Some(tv) = bindings.binders.get(pv)
                && goal.mentions(tv)
            {
                let lo = rename_pattern_vars(lo, &bindings);
                let hi = rename_pattern_vars(hi, &bindings);
                f.facts.push(range_fact(tv, &lo, &hi));
            }
        }
        let verdict = env.solver.prove(&f, &goal);
        records.push(ConditionRecord::new(name, &goal, &f, &verdict));
        check_verdict(&verdict, rule, name, &goal, &f, step_span)?;
    }

    // Build the result.
    let mut avoid: BTreeSet<String> = ir::all_names(root).into_iter().collect();
    avoid.extend(env.program.sizes.iter().map(|s| s.name.clone()));
    avoid.extend(env.program.inputs.iter().map(|s| s.name.clone()));
    avoid.extend(env.program.defs.iter().map(|s| s.name.clone()));
    let new_node =
        matcher::instantiate(rule, result, &bindings, &avoid, &binder_names).map_err(|m| {
            step_error(
                "E0810",
                step_span,
                format!("cannot instantiate rule `{}`: {m}", rule.name),
            )
        })?;
    let replaced = replace_at(root, &site.path, new_node.clone())
        .ok_or_else(|| step_error("E0810", step_span, "internal: the site disappeared"))?;
    let reserved: BTreeSet<String> = env
        .program
        .sizes
        .iter()
        .map(|s| s.name.clone())
        .chain(env.program.inputs.iter().map(|s| s.name.clone()))
        .chain(env.program.defs.iter().map(|s| s.name.clone()))
        .collect();
    let expr = matcher::uniquify(&replaced, &reserved);

    let instantiation = bindings
        .exprs
        .iter()
        .map(|(k, v)| (format!("?{k}"), show(v)))
        .chain(
            bindings
                .indices
                .iter()
                .map(|(k, v)| (format!("?{k}"), v.to_string())),
        )
        .chain(bindings.binders.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    let record = StepRecord {
        command: format!("{} {}", if backward { "rw<-" } else { "rw" }, rule.name),
        rule: Some(rule.name.clone()),
        rule_statement: Some(rule.statement()),
        direction: Some(if backward { "backward" } else { "forward" }.to_string()),
        path: site.path.clone(),
        instantiation,
        conditions: records,
        grade: rule.grade,
        before: show(site.expr),
        after_site: show(&new_node),
        after: show(&expr),
        origin: None,
        hint: None,
    };
    Ok(StepOutcome { expr, record })
}

fn show_dims(dims: &[IndexExpr], open: bool) -> String {
    let mut parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    if open {
        parts.push("..".to_string());
    }
    format!("[{}]", parts.join(", "))
}

/// Pattern binder names (`?i`) in an instantiated condition become the term's names.
fn rename_pattern_vars(e: &IndexExpr, b: &Bindings) -> IndexExpr {
    let mut out = e.clone();
    for (pv, tv) in &b.binders {
        out = out.subst(pv, &IndexExpr::var(tv.clone()));
    }
    out
}

fn rename_pattern_pred(p: &Pred, b: &Bindings) -> Pred {
    p.map_index(&mut |i| rename_pattern_vars(i, b))
}

/// Turns a solver verdict on a step's condition into the step's outcome: only `Proved`
/// passes. `what` names the condition (``side condition `upper` of `get_gen` ``);
/// `help` says how to fix a refuted one.
fn verdict_to_result(
    verdict: &Verdict,
    what: &str,
    goal: &Pred,
    facts: &Facts,
    span: Span,
    help: &str,
) -> Result<(), Diagnostic> {
    let context = show_facts(facts).join(", ");
    let context = if context.is_empty() {
        "(none)".to_string()
    } else {
        context
    };
    match verdict {
        Verdict::Proved => Ok(()),
        Verdict::Refuted(cex) => Err(Diagnostic::error("E0811", format!("{what} is false here"))
            .at(span, format!("cannot prove {goal}"))
            .with_note(format!("goal: {goal}"))
            .with_note(format!("context: {context}"))
            .with_note(format!("counterexample: {cex}"))
            .with_help(help)),
        Verdict::Unknown(reason) => Err(Diagnostic::error("E0812", format!("{what} could not be proved"))
            .at(span, format!("unknown: {goal}"))
            .with_note(format!("goal: {goal}"))
            .with_note(format!("context: {context}"))
            .with_note(format!("the solver gave up: {reason}"))
            .with_help("an unproved condition is never accepted; simplify the indices (`simpl`) or add an `assume`")),
    }
}

fn check_verdict(
    verdict: &Verdict,
    rule: &Rule,
    name: &str,
    goal: &Pred,
    facts: &Facts,
    span: Span,
) -> Result<(), Diagnostic> {
    verdict_to_result(
        verdict,
        &format!("side condition `{name}` of `{}`", rule.name),
        goal,
        facts,
        span,
        "select another site (`at N`, `around (…)`), or first make the context imply the condition (a guard, a split)",
    )
}

/// Whether `e` matches an `around` pattern: metavariables match anything, binder names
/// match any binder, other names must be equal.
fn site_matches(p: &Expr, e: &Expr) -> bool {
    use ExprKind as K;
    match (&p.kind, &e.kind) {
        (K::Meta(_), _) => true,
        (K::Input(n), K::Input(m)) | (K::Input(n), K::DefRef(m)) | (K::Input(n), K::Var(m)) => {
            n == m
        }
        (K::Lit(a), K::Lit(b)) => a == b,
        (
            K::Gen {
                lo: l1,
                hi: h1,
                body: b1,
                ..
            },
            K::Gen {
                lo: l2,
                hi: h2,
                body: b2,
                ..
            },
        )
        | (
            K::Sum {
                lo: l1,
                hi: h1,
                body: b1,
                ..
            },
            K::Sum {
                lo: l2,
                hi: h2,
                body: b2,
                ..
            },
        ) => index_site_matches(l1, l2) && index_site_matches(h1, h2) && site_matches(b1, b2),
        _ => false,
    }
}

fn index_site_matches(p: &IndexExpr, e: &IndexExpr) -> bool {
    match p {
        IndexExpr::Meta(_) => true,
        _ => poly::same(p, e),
    }
}

/// `unfold NAME`: replaces every reference to definition NAME by its body.
pub fn unfold(
    env: &Env<'_>,
    root: &Expr,
    name: &ast::Ident,
    derived: &BTreeMap<String, Expr>,
) -> Result<StepOutcome, Diagnostic> {
    let body = derived
        .get(&name.name)
        .cloned()
        .or_else(|| env.program.def(&name.name).map(|d| d.body.clone()))
        .ok_or_else(|| {
            Diagnostic::error("E0813", format!("no definition named `{}`", name.name))
                .at(name.span, "cannot unfold")
        })?;
    let mut count = 0;
    let mut paths = Vec::new();
    fn go(
        e: &Expr,
        name: &str,
        body: &Expr,
        count: &mut usize,
        path: &mut Vec<usize>,
        paths: &mut Vec<Vec<usize>>,
    ) -> Expr {
        if let ExprKind::DefRef(r) = &e.kind
            && r == name
        {
            *count += 1;
            paths.push(path.clone());
            return body.clone();
        }
        let mut out = e.clone();
        for (k, c) in out.children_mut().into_iter().enumerate() {
            path.push(k);
            *c = go(c, name, body, count, path, paths);
            path.pop();
        }
        out
    }
    let replaced = go(
        root,
        &name.name,
        &body,
        &mut count,
        &mut Vec::new(),
        &mut paths,
    );
    if count == 0 {
        return Err(
            Diagnostic::error("E0813", format!("`{}` is not used here", name.name))
                .at(name.span, "nothing to unfold"),
        );
    }
    let expr = matcher::uniquify(&replaced, &reserved_names(env.program));
    // Like a rule step: the site (the first reference, in pre-order) before and after;
    // the certificate carries the definitions, so a checker can compare the body.
    let mut record = StepRecord::tactic(
        format!("unfold {}", name.name),
        paths.first().cloned().unwrap_or_default(),
        name.name.clone(),
        show(&expr),
    );
    record.after_site = show(&body);
    Ok(StepOutcome { record, expr })
}

fn reserved_names(p: &Program) -> BTreeSet<String> {
    p.sizes
        .iter()
        .map(|s| s.name.clone())
        .chain(p.inputs.iter().map(|s| s.name.clone()))
        .chain(p.defs.iter().map(|s| s.name.clone()))
        .collect()
}

/// `inline x`: replaces `let x = v in b` by `b[x := v]`.
pub fn inline(env: &Env<'_>, root: &Expr, name: &ast::Ident) -> Result<StepOutcome, Diagnostic> {
    let all = sites(env.shapes, root);
    let site = all
        .iter()
        .find(|s| matches!(&s.expr.kind, ExprKind::Let { var, .. } if *var == name.name))
        .ok_or_else(|| {
            Diagnostic::error("E0814", format!("no `let {}` in the program", name.name))
                .at(name.span, "nothing to inline")
                .with_help("binder names are shown by `--trace` and the REPL's `:show`")
        })?;
    let ExprKind::Let { var, value, body } = &site.expr.kind else {
        unreachable!("found a let above")
    };
    let new_node = ir::subst_tensor(body, var, value);
    let replaced = replace_at(root, &site.path, new_node).expect("the site exists");
    let expr = matcher::uniquify(&replaced, &reserved_names(env.program));
    Ok(StepOutcome {
        record: StepRecord::tactic(
            format!("inline {}", name.name),
            site.path.clone(),
            show(root),
            show(&expr),
        ),
        expr,
    })
}

/// Rebuilds `e` bottom-up, giving `f` each node with its context.
fn map_with_context(
    env: &ShapeEnv,
    e: &Expr,
    ctx: &Context,
    f: &mut dyn FnMut(&Expr, &Context) -> Expr,
) -> Expr {
    let mut out = e.clone();
    let original = e.clone();
    for (k, c) in out.children_mut().into_iter().enumerate() {
        let cctx = child_context(env, &original, k, ctx);
        *c = map_with_context(env, c, &cctx, f);
    }
    f(&out, ctx)
}

/// `simpl`: simplifies every index expression and guard under its context, except
/// what determines a shape: a reshape amount is simplified under the declarations only,
/// and a `gen`'s bounds under its context only if the length `hi - lo` stays equal
/// under the declarations (otherwise under the declarations only). A shape is observed
/// where a guard's or a range's facts do not hold (the shape discipline,
/// `well_shaped.rs`).
pub fn simpl(env: &Env<'_>, root: &Expr) -> StepOutcome {
    let declarations = crate::well_shaped::declaration_facts(env.program);
    let expr = map_with_context(env.shapes, root, &Context::default(), &mut |node, ctx| {
        let facts = env.facts(ctx);
        let mut out = node.clone();
        match &mut out.kind {
            ExprKind::Amount { amount, .. } => {
                *amount = atl_solver::simplify_index(amount, &declarations, env.solver);
            }
            ExprKind::Gen { lo, hi, .. } => {
                let new_lo = atl_solver::simplify_index(lo, &facts, env.solver);
                let new_hi = atl_solver::simplify_index(hi, &facts, env.solver);
                let old_len = IndexExpr::sub(hi.clone(), lo.clone());
                let new_len = IndexExpr::sub(new_hi.clone(), new_lo.clone());
                let same_length = poly::same(&old_len, &new_len)
                    || env
                        .solver
                        .prove(&declarations, &Pred::cmp(CmpOp::Eq, old_len, new_len))
                        .is_proved();
                if same_length {
                    (*lo, *hi) = (new_lo, new_hi);
                } else {
                    *lo = atl_solver::simplify_index(lo, &declarations, env.solver);
                    *hi = atl_solver::simplify_index(hi, &declarations, env.solver);
                }
            }
            _ => out.map_own_index(&mut |i| atl_solver::simplify_index(i, &facts, env.solver)),
        }
        out
    });
    StepOutcome {
        record: StepRecord::tactic("simpl".to_string(), Vec::new(), show(root), show(&expr)),
        expr,
    }
}

/// `simpl_guard`: removes guards that are provably true in their context, and replaces
/// scalar guarded expressions whose guard is provably false by `0`.
pub fn simpl_guard(env: &Env<'_>, root: &Expr) -> StepOutcome {
    let mut conditions = Vec::new();
    let expr = map_with_context(env.shapes, root, &Context::default(), &mut |node, ctx| {
        let ExprKind::Guard { pred, body } = &node.kind else {
            return node.clone();
        };
        let facts = env.facts(ctx);
        let verdict = env.solver.prove(&facts, pred);
        if verdict == Verdict::Proved {
            conditions.push(ConditionRecord::new("guard_true", pred, &facts, &verdict));
            return (**body).clone();
        }
        let negated = Pred::not(pred.clone());
        let verdict = env.solver.prove(&facts, &negated);
        let mut lets = ctx.lets.clone();
        let scalar =
            shapes::infer_with_lets(env.shapes, &mut lets, body).is_ok_and(|s| s.is_empty());
        if verdict == Verdict::Proved && scalar {
            conditions.push(ConditionRecord::new(
                "guard_false",
                &negated,
                &facts,
                &verdict,
            ));
            return Expr::lit(0.0);
        }
        node.clone()
    });
    let mut record = StepRecord::tactic(
        "simpl_guard".to_string(),
        Vec::new(),
        show(root),
        show(&expr),
    );
    record.conditions = conditions;
    StepOutcome { expr, record }
}

/// The result of running a derivation.
#[derive(Clone, Debug)]
pub struct Derivation {
    pub name: String,
    pub from: String,
    pub initial: Expr,
    pub result: Expr,
    pub steps: Vec<StepRecord>,
}

impl Derivation {
    /// The loop hints of its annotation steps (`parallel x`, …), in order. A
    /// derivation's hints are its own: one `from` another derivation does not inherit
    /// the base's (its steps may rename or remove those loops).
    pub fn hints(&self) -> Vec<LoopHint> {
        self.steps.iter().filter_map(|s| s.hint.clone()).collect()
    }

    /// The weakest grade of the derivation's steps.
    pub fn grade(&self) -> Grade {
        if self.steps.iter().any(|s| s.grade == Grade::Real) {
            Grade::Real
        } else {
            Grade::Exact
        }
    }
}

/// Executes one derivation step on `expr`.
pub fn run_step(
    env: &Env<'_>,
    expr: &Expr,
    step: &ast::Step,
    original_shape: &Shape,
    derived: &BTreeMap<String, Expr>,
) -> Result<StepOutcome, Diagnostic> {
    let outcome = match &step.kind {
        StepKind::Rewrite {
            backward,
            rule,
            site,
            with,
        } => rewrite(env, expr, rule, *backward, site, with, step.span)?,
        StepKind::Unfold(name) => unfold(env, expr, name, derived)?,
        StepKind::Inline(name) => inline(env, expr, name)?,
        StepKind::Simpl => simpl(env, expr),
        StepKind::SimplGuard => simpl_guard(env, expr),
        StepKind::Window { var, dims } => window(env, expr, var, dims, step.span)?,
        StepKind::Check => StepOutcome {
            expr: expr.clone(),
            record: StepRecord::tactic("check".to_string(), Vec::new(), show(expr), show(expr)),
        },
        StepKind::Directive { name, .. } => {
            return Err(Diagnostic::error(
                "E0815",
                format!(
                    "`{}` expands into several steps; run it with `run_step_expanded`",
                    name.name
                ),
            )
            .at(name.span, "directive"));
        }
    };
    // Terms stay small enough that every later pass (and the checker) is quick: a
    // derivation that duplicates a term again and again is stopped here.
    let size = term_size(&outcome.expr);
    if size > MAX_TERM_SIZE {
        return Err(Diagnostic::error(
            "E0848",
            format!("the step would make the program {size} nodes large (the limit is {MAX_TERM_SIZE})"),
        )
        .at(step.span, "this step")
        .with_note("steps that duplicate terms (`unfold_let` of a value used many times, `inline`) can grow a program exponentially")
        .with_help("bind the duplicated value with a `let` instead of inlining it"));
    }
    // The shape discipline: the result is well-shaped under the declarations alone,
    // and the rewritten term keeps its shape (for `simpl`, every node does).
    let step_name = step_word(step);
    let mut known = std::collections::HashSet::new();
    let site = match &step.kind {
        StepKind::Rewrite { .. } => Some((outcome.record.path.clone(), false)),
        StepKind::Simpl | StepKind::SimplGuard => Some((Vec::new(), true)),
        _ => None,
    };
    if let Some((path, deep)) = site {
        let ctx = context_at(env.shapes, expr, &path);
        if let (Some(before), Some(after)) = (node_at(expr, &path), node_at(&outcome.expr, &path)) {
            crate::well_shaped::check_preserved(
                env.program,
                env.shapes,
                env.solver,
                &ctx.lets,
                before,
                after,
                deep,
                step.span,
                &step_name,
            )?;
        }
    }
    crate::well_shaped::check_step(
        env.program,
        env.shapes,
        env.solver,
        &outcome.expr,
        step.span,
        &step_name,
        &mut known,
    )?;
    // Every step must preserve the shape (a cheap, independent sanity check).
    let shape = shapes::infer(env.shapes, &outcome.expr).map_err(|d| {
        Diagnostic::error("E0816", "the step produced an ill-shaped program")
            .at(step.span, "this step")
            .with_note(d.message)
    })?;
    if shape.len() != original_shape.len()
        || !shape
            .iter()
            .zip(original_shape)
            .all(|(a, b)| poly::same(a, b))
    {
        let facts = env.facts(&Context::default());
        let all_proved = shape.len() == original_shape.len()
            && shape.iter().zip(original_shape).all(|(a, b)| {
                env.solver
                    .prove(&facts, &Pred::cmp(CmpOp::Eq, a.clone(), b.clone()))
                    == Verdict::Proved
            });
        if !all_proved {
            return Err(
                Diagnostic::error("E0817", "the step changed the shape of the program")
                    .at(step.span, "this step")
                    .with_note(format!(
                        "before: {}, after: {}",
                        show_shape(original_shape),
                        show_shape(&shape)
                    )),
            );
        }
    }
    Ok(outcome)
}

/// Runs one step, expanding scheduling directives into their rule steps (one outcome
/// per rule application).
pub fn run_step_expanded(
    env: &Env<'_>,
    expr: &Expr,
    step: &ast::Step,
    original_shape: &Shape,
    derived: &BTreeMap<String, Expr>,
) -> Result<Vec<StepOutcome>, Diagnostic> {
    match &step.kind {
        StepKind::Directive { name, args } => crate::directives::apply_directive(
            env,
            expr,
            name,
            args,
            step.span,
            original_shape,
            derived,
        ),
        _ => run_step(env, expr, step, original_shape, derived).map(|o| vec![o]),
    }
}

/// The written definitions `e` uses, directly or through other definitions (each
/// once).
fn used_definitions<'p>(program: &'p Program, e: &Expr) -> Vec<&'p ir::Def> {
    let mut out: Vec<&ir::Def> = Vec::new();
    let mut scanned = 0;
    let visit = |cur: &Expr, out: &mut Vec<&'p ir::Def>| {
        cur.walk(&mut |n| {
            if let ExprKind::DefRef(name) = &n.kind
                && let Some(def) = program.def(name)
                && !out.iter().any(|d| d.name == def.name)
            {
                out.push(def);
            }
        });
    };
    visit(e, &mut out);
    while scanned < out.len() {
        let body = &out[scanned].body;
        scanned += 1;
        visit(body, &mut out);
    }
    out
}

/// Runs every derivation of a program in order. Returns the derivations that succeeded
/// and one diagnostic per failing derivation (its first failing step).
pub fn run_derivations(env: &Env<'_>) -> (Vec<Derivation>, Vec<Diagnostic>) {
    let mut done: Vec<Derivation> = Vec::new();
    let mut derived: BTreeMap<String, Expr> = BTreeMap::new();
    let mut diags = Vec::new();
    for d in &env.program.derives {
        let initial = match derived
            .get(&d.from)
            .cloned()
            .or_else(|| env.program.def(&d.from).map(|x| x.body.clone()))
        {
            Some(e) => e,
            None => continue, // its base failed; already reported
        };
        let Ok(original_shape) = shapes::infer(env.shapes, &initial) else {
            continue;
        };
        // The starting point must itself be well-shaped (a written definition is
        // checked by the front end's caller too; this keeps the engine's promise on
        // its own).
        let starting_point = std::iter::once(&initial).chain(
            used_definitions(env.program, &initial)
                .into_iter()
                .map(|def| &def.body),
        );
        if let Some(diag) = starting_point
            .filter_map(|e| {
                crate::well_shaped::check_expr(env.program, env.shapes, env.solver, e).err()
            })
            .next()
        {
            diags.push(diag.with_secondary(d.name_span, format!("in derivation `{}`", d.name)));
            continue;
        }
        let mut expr = initial.clone();
        let mut steps: Vec<StepRecord> = Vec::new();
        let mut hints: Vec<LoopHint> = Vec::new();
        let mut failed = false;
        for step in &d.steps {
            let result = run_step_expanded(env, &expr, step, &original_shape, &derived).and_then(
                |outcomes| {
                    // An annotation must also agree with the hints before it (one
                    // parallel loop per nest, compatible hints on one loop).
                    for o in &outcomes {
                        if let Some(h) = &o.record.hint {
                            hints.push(h.clone());
                            crate::directives::check_hints(env.shapes, &o.expr, &hints)?;
                        }
                    }
                    Ok(outcomes)
                },
            );
            match result {
                Ok(outcomes) => {
                    for outcome in outcomes {
                        expr = outcome.expr;
                        steps.push(outcome.record);
                    }
                }
                Err(diag) => {
                    diags.push(
                        diag.with_secondary(d.name_span, format!("in derivation `{}`", d.name)),
                    );
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            continue;
        }
        // Steps after an annotation may have removed or changed its loop: the hints
        // must still hold of the result, which is what lowering sees.
        if let Err(diag) = crate::directives::check_hints(env.shapes, &expr, &hints) {
            diags.push(
                diag.with_note("a step after the annotation changed its loop; annotate at the end of the derivation")
                    .with_secondary(d.name_span, format!("in derivation `{}`", d.name)),
            );
            continue;
        }
        derived.insert(d.name.clone(), expr.clone());
        done.push(Derivation {
            name: d.name.clone(),
            from: d.from.clone(),
            initial,
            result: expr,
            steps,
        });
    }
    (done, diags)
}

/// The program with every successful derivation added as a definition (so that
/// `--def NAME` finds it) and the shape environment extended accordingly.
pub fn with_derived(
    program: &Program,
    shapes_env: &ShapeEnv,
    derivations: &[Derivation],
) -> (Program, ShapeEnv) {
    let mut p = program.clone();
    let mut env = shapes_env.clone();
    for d in derivations {
        let span = program
            .derive(&d.name)
            .map(|x| x.name_span)
            .unwrap_or_default();
        if let Ok(s) = shapes::infer(&env, &d.result) {
            env.globals.insert(d.name.clone(), s);
        }
        p.defs.push(ir::Def {
            name: d.name.clone(),
            name_span: span,
            body: d.result.clone(),
            span,
            hints: d.hints(),
        });
    }
    (p, env)
}

/// One place where a rule matches, for listing (`:sites` in the REPL).
#[derive(Debug)]
pub struct SiteReport {
    pub path: Vec<usize>,
    /// The matched subterm.
    pub subterm: String,
    /// `Ok` with the subterm it would become, or the diagnostic that stops the step
    /// (a side condition, a missing `with`).
    pub outcome: Result<String, Diagnostic>,
}

/// Every structural match of `rule_name` in `root`, in pre-order, with whether the step
/// would succeed there.
pub fn list_sites(
    env: &Env<'_>,
    root: &Expr,
    rule_name: &str,
    backward: bool,
) -> Result<Vec<SiteReport>, Diagnostic> {
    let rule = env.library.get(rule_name).ok_or_else(|| {
        let mut d = Diagnostic::error("E0801", format!("no rule named `{rule_name}`"));
        if let Some(s) = env.library.suggest(rule_name) {
            d = d.with_help(format!("did you mean `{s}`?"));
        }
        d
    })?;
    let (pattern, _) = sides(rule, backward);
    let ident = ast::Ident {
        name: rule_name.to_string(),
        span: Span::DUMMY,
    };
    let mut out = Vec::new();
    for s in sites(env.shapes, root) {
        if matcher::match_at(rule, pattern, s.expr).is_err() {
            continue;
        }
        let sel = ast::SiteSelector {
            path: Some((s.path.iter().map(|p| *p as u64).collect(), Span::DUMMY)),
            ..Default::default()
        };
        let outcome = rewrite(env, root, &ident, backward, &sel, &[], Span::DUMMY)
            .map(|o| o.record.after_site);
        out.push(SiteReport {
            path: s.path.clone(),
            subterm: show(s.expr),
            outcome,
        });
    }
    Ok(out)
}

/// `window x in LO..HI[, LO2..HI2, …]`: stores only rows `LO..HI` of the let-bound
/// tensor `x` (and, with more ranges, only columns `LO2..HI2` of those rows, and so on:
/// one range per leading dimension).
///
/// Every read `x[i1]…[id]` in the let's body (d the number of ranges) must provably
/// satisfy `LOk <= ik < HIk` in its context for every k, and `x` may not be used other
/// than through such reads; then `let x = v in b` becomes
/// `let x = gen w1 < HI1 - LO1: … gen wd < HId - LOd: [in range] * v[w1 + LO1]…[wd + LOd]
/// in b'`, where `in range` is `0 <= wk + LOk && wk + LOk < |v|k` for every k and `b'`
/// reads `x[i1 - LO1]…[id - LOd]`. The guard keeps elements outside `v` zero, as reads of
/// `v` there were, so every read of the new buffer has the value the old read had. Each
/// `HIk - LOk` must be fixed by the sizes (the new buffer's extents). This is the storage
/// half of Halide's `compute_at`: the buffer shrinks to the window a tile reads (its halo
/// included).
pub fn window(
    env: &Env<'_>,
    root: &Expr,
    var: &ast::Ident,
    dims: &[(ast::SIndex, ast::SIndex)],
    step_span: Span,
) -> Result<StepOutcome, Diagnostic> {
    let mut bounds: Vec<(IndexExpr, IndexExpr)> = Vec::new();
    for (lo, hi) in dims {
        bounds.push((
            atl_lang::resolve::lower_index_free(lo)?,
            atl_lang::resolve::lower_index_free(hi)?,
        ));
    }
    if bounds.is_empty() {
        return Err(
            Diagnostic::error("E0819", "a window needs at least one range")
                .at(step_span, "no range"),
        );
    }
    let d = bounds.len();
    let all = sites(env.shapes, root);
    let site = all
        .iter()
        .find(|s| matches!(&s.expr.kind, ExprKind::Let { var: v, .. } if *v == var.name))
        .ok_or_else(|| {
            Diagnostic::error("E0818", format!("no `let {}` in the program", var.name))
                .at(var.span, "nothing to window")
                .with_help("binder names are shown by `atl derive --trace` and the REPL's `:show`")
        })?;
    let ExprKind::Let { value, body, .. } = &site.expr.kind else {
        unreachable!("found a let above")
    };
    // The bounds may mention sizes and the binders around the let only.
    for v in bounds
        .iter()
        .flat_map(|(lo, hi)| lo.vars().into_iter().chain(hi.vars()))
    {
        if !env.program.is_size(&v) && !site.ctx.bound.contains(&v) {
            return Err(Diagnostic::error(
                "E0819",
                format!(
                    "the window bound mentions `{v}`, which is not in scope at `let {}`",
                    var.name
                ),
            )
            .at(step_span, "bound out of scope")
            .with_help(
                "window bounds are built from sizes and the loop variables around the let",
            ));
        }
    }
    let mut extents = Vec::new();
    for (lo, hi) in &bounds {
        let extent = poly::normalize(&IndexExpr::sub(hi.clone(), lo.clone()));
        if let Some(v) = extent.vars().into_iter().find(|v| !env.program.is_size(v)) {
            return Err(Diagnostic::error("E0819", format!("the window's length `{extent}` depends on `{v}`"))
                .at(step_span, "the buffer would be jagged")
                .with_help("choose bounds whose difference is fixed by the sizes, e.g. `yo * 64 - 1..yo * 64 + 65`"));
        }
        extents.push(extent);
    }
    let mut lets = site.ctx.lets.clone();
    let value_shape = shapes::infer_with_lets(env.shapes, &mut lets, value)?;
    if value_shape.len() < d {
        return Err(Diagnostic::error(
            "E0819",
            if value_shape.is_empty() {
                format!("`{}` is a scalar; there is nothing to window", var.name)
            } else {
                format!(
                    "`{}` has {} dimension(s), and the window gives {d} ranges",
                    var.name,
                    value_shape.len()
                )
            },
        )
        .at(var.span, "too few dimensions"));
    }
    let let_facts = env.facts(&site.ctx);
    let mut records = Vec::new();
    for (lo, hi) in &bounds {
        let nonneg = Pred::cmp(CmpOp::Le, lo.clone(), hi.clone());
        let verdict = env.solver.prove(&let_facts, &nonneg);
        records.push(ConditionRecord::new(
            "window_order",
            &nonneg,
            &let_facts,
            &verdict,
        ));
        check_window_verdict(&verdict, "window_order", &nonneg, &let_facts, step_span)?;
    }

    // Every use of the variable in the body must be a read of d indices inside the
    // window.
    let body_ctx = child_context(env.shapes, site.expr, 1, &site.ctx);
    for s in sites(env.shapes, body) {
        let ExprKind::Var(v) = &s.expr.kind else {
            continue;
        };
        if *v != var.name {
            continue;
        }
        // The chain of accesses around the use, innermost first.
        let mut indices = Vec::new();
        let mut read_path = s.path.clone();
        while indices.len() < d && all_parent_is_access(body, &read_path) {
            read_path.pop();
            let Some(ExprKind::Access { index, .. }) = node_at(body, &read_path).map(|n| &n.kind)
            else {
                unreachable!("the parent is an access")
            };
            indices.push(index.clone());
        }
        if indices.len() < d {
            let user = node_at(body, &read_path).unwrap_or(s.expr);
            return Err(Diagnostic::error(
                "E0819",
                if indices.is_empty() {
                    format!("`{}` is used as a whole tensor, not only read by index", var.name)
                } else {
                    format!(
                        "`{}` is read with {} index(es), and the window has {d} ranges: the read takes a part of the buffer that the window would change",
                        var.name,
                        indices.len()
                    )
                },
            )
            .at(step_span, "cannot window")
            .with_note(format!("use: {}", show(user))));
        }
        // The context of the read: that of its outermost access.
        let read_ctx = all
            .iter()
            .find(|t| {
                let mut full = site.path.clone();
                full.push(1);
                full.extend(read_path.iter().copied());
                t.path == full
            })
            .map(|t| t.ctx.clone())
            .unwrap_or_else(|| {
                let mut ctx = body_ctx.clone();
                ctx.facts.extend(s.ctx.facts.iter().cloned());
                ctx
            });
        let facts = env.facts(&read_ctx);
        let read = node_at(body, &read_path).unwrap_or(s.expr);
        for (k, ((lo, hi), index)) in bounds.iter().zip(&indices).enumerate() {
            let goal = Pred::and(
                Pred::cmp(CmpOp::Le, lo.clone(), index.clone()),
                Pred::cmp(CmpOp::Lt, index.clone(), hi.clone()),
            );
            let verdict = env.solver.prove(&facts, &goal);
            records.push(ConditionRecord::new(
                "read_in_window",
                &goal,
                &facts,
                &verdict,
            ));
            check_window_verdict(&verdict, "read_in_window", &goal, &facts, step_span).map_err(
                |e| {
                    e.with_note(format!(
                        "the read `{}` is not provably inside dimension {} of the window, {lo}..{hi}",
                        show(read),
                        k + 1
                    ))
                },
            )?;
        }
    }

    // Build the windowed let.
    let mut supply = ir::NameSupply::new(
        ir::all_names(root)
            .into_iter()
            .chain(reserved_names(env.program)),
    );
    let ws: Vec<String> = (0..d).map(|_| supply.fresh("w")).collect();
    let shifted: Vec<IndexExpr> = ws
        .iter()
        .zip(&bounds)
        .map(|(w, (lo, _))| IndexExpr::add(IndexExpr::var(w.clone()), lo.clone()))
        .collect();
    let in_range = window_guard(&shifted, &value_shape);
    let mut element = (**value).clone();
    for s in &shifted {
        element = Expr::access(element, s.clone());
    }
    let mut new_value = Expr::guard(in_range, element);
    for (w, extent) in ws.iter().zip(&extents).rev() {
        new_value = Expr::gen_(w.clone(), IndexExpr::Const(0), extent.clone(), new_value);
    }
    let los: Vec<IndexExpr> = bounds.iter().map(|(lo, _)| lo.clone()).collect();
    let new_body = shift_reads(body, &var.name, &los);
    let mut new_let = site.expr.clone();
    new_let.kind = ExprKind::Let {
        var: var.name.clone(),
        value: Box::new(new_value),
        body: Box::new(new_body),
    };
    let replaced = replace_at(root, &site.path, new_let.clone()).expect("the site exists");
    let expr = matcher::uniquify(&replaced, &reserved_names(env.program));
    let ranges: Vec<String> = bounds
        .iter()
        .map(|(lo, hi)| format!("{lo}..{hi}"))
        .collect();
    let mut record = StepRecord::tactic(
        format!("window {} in {}", var.name, ranges.join(", ")),
        site.path.clone(),
        show(site.expr),
        show(&expr),
    );
    record.after_site = show(&new_let);
    record.conditions = records;
    Ok(StepOutcome { expr, record })
}

/// The guard of a windowed buffer: every shifted index `s` within its dimension of the
/// original, `0 <= s && s < extent`.
fn window_guard(shifted: &[IndexExpr], shape: &Shape) -> Pred {
    // Left-nested (`((a && b) && c) && d`), the way the parser reads a chain back.
    let mut out: Option<Pred> = None;
    for (s, extent) in shifted.iter().zip(shape) {
        for atom in [
            Pred::cmp(CmpOp::Le, IndexExpr::Const(0), s.clone()),
            Pred::cmp(CmpOp::Lt, s.clone(), extent.clone()),
        ] {
            out = Some(match out {
                None => atom,
                Some(q) => Pred::and(q, atom),
            });
        }
    }
    out.unwrap_or(Pred::Bool(true))
}

/// Re-indexes every read `x[i1]…[id]` (d = `los.len()`) as `x[i1 - lo1]…[id - lod]`.
fn shift_reads(e: &Expr, name: &str, los: &[IndexExpr]) -> Expr {
    // The access chain of a read, outermost first: peel `d` accesses and check that the
    // innermost tensor is `name`.
    fn chain(e: &Expr, d: usize, name: &str) -> bool {
        match (&e.kind, d) {
            (ExprKind::Var(v), 0) => v == name,
            (ExprKind::Access { tensor, .. }, d) if d > 0 => chain(tensor, d - 1, name),
            _ => false,
        }
    }
    fn rebuild(e: &Expr, los: &[IndexExpr]) -> Expr {
        // `e` is the access of the last dimension.
        let Some((lo, rest)) = los.split_last() else {
            return e.clone();
        };
        let ExprKind::Access { tensor, index } = &e.kind else {
            return e.clone();
        };
        let mut out = e.clone();
        out.kind = ExprKind::Access {
            tensor: Box::new(rebuild(tensor, rest)),
            index: IndexExpr::sub(index.clone(), lo.clone()),
        };
        out
    }
    if chain(e, los.len(), name) {
        return rebuild(e, los);
    }
    let mut out = e.clone();
    for c in out.children_mut() {
        *c = shift_reads(c, name, los);
    }
    out
}

/// Whether the node at `path` (relative to `root`) is the tensor of an access.
fn all_parent_is_access(root: &Expr, path: &[usize]) -> bool {
    match path.split_last() {
        Some((last, parent)) => {
            *last == 0
                && matches!(
                    node_at(root, parent).map(|p| &p.kind),
                    Some(ExprKind::Access { .. })
                )
        }
        None => false,
    }
}

fn check_window_verdict(
    verdict: &Verdict,
    name: &str,
    goal: &Pred,
    facts: &Facts,
    span: Span,
) -> Result<(), Diagnostic> {
    verdict_to_result(
        verdict,
        &format!("`window` condition `{name}`"),
        goal,
        facts,
        span,
        "widen the window so that every read of the buffer falls inside it",
    )
}
