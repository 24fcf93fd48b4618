//! One rule application, `rw RULE …` (and `rw<- RULE …`), split the way egg splits a
//! rewrite:
//!
//! - [`search`]: which sites are candidates (`in [path]`, `around (…)`) and which match
//!   is taken (`at N`);
//! - [`matching`]: the rule's pattern against each candidate (the matcher of
//!   [`crate::matcher`]);
//! - [`conditions`]: shape conditions and index side conditions, proved by the solver
//!   under the site's context (only "proved" passes);
//! - [`apply`]: the `with` values, the instantiation of the produced side, the
//!   replacement in the program and the step's record.
//!
//! [`rewrite`] runs them in that order; the checks of the produced program that every
//! step gets (size, shape discipline) are [`crate::step::run_step`]'s.

use atl_lang::ast;
use atl_lang::diag::Diagnostic;
use atl_lang::ir::Expr;
use atl_lang::span::Span;

use crate::context::{Env, StepOutcome, show, sites};
use crate::matcher;
use crate::rule::Rule;

pub mod apply;
pub mod conditions;
pub mod matching;
pub mod request;
pub mod search;

pub use request::{Direction, RewriteRequest};

/// The rule named by a step (E0801 with a suggestion if there is none).
fn lookup_rule<'l>(env: &Env<'l>, rule_name: &ast::Ident) -> Result<&'l Rule, Diagnostic> {
    env.library.get(&rule_name.name).ok_or_else(|| {
        let mut d = Diagnostic::error("E0801", format!("no rule named `{}`", rule_name.name))
            .at(rule_name.span, "unknown rule");
        if let Some(s) = env.library.suggest(&rule_name.name) {
            d = d.with_help(format!("did you mean `{s}`?"));
        } else {
            d = d.with_help("`atl rules` lists the rule library");
        }
        d
    })
}

/// Applies `rw RULE …` (or `rw<- RULE …`) to `root`.
pub fn rewrite(
    env: &Env<'_>,
    root: &Expr,
    request: &RewriteRequest<'_>,
) -> Result<StepOutcome, Diagnostic> {
    let rule = lookup_rule(env, request.rule)?;
    if request.direction == Direction::Backward && !rule.substs.is_empty() {
        return Err(Diagnostic::error(
            "E0802",
            format!("rule `{}` cannot be used right-to-left", rule.name),
        )
        .at(
            request.span,
            "its right side contains a substitution, which is not a pattern",
        )
        .with_help(format!("use `rw {}`", rule.name)));
    }
    let (pattern, result) = request.direction.sides(rule);

    // `with` values are index expressions in the site's scope.
    let with = apply::WithValues::parse(env, root, rule, pattern, result, request.with)?;

    let all = sites(env.shapes, root);
    let candidates = search::candidate_sites(&all, request.site)?;
    let (matches, refusals) = matching::match_candidates(rule, pattern, candidates);
    let (site, mut bindings) = search::chosen_match(matches, &refusals, rule, request)?;

    with.check_scope(env, site, request.with)?;
    with.check_distinct_binders(request.with)?;
    with.bind(&mut bindings);

    let facts = env.facts(&site.ctx);
    let mut records = Vec::new();
    // Shape conditions bind or check dimensions.
    conditions::shape_conditions(
        env,
        rule,
        site,
        &mut bindings,
        &facts,
        request.span,
        &mut records,
    )?;
    // Every parameter must have a value now.
    apply::check_instantiable(rule, result, &bindings, request.span)?;
    conditions::index_conditions(env, rule, &bindings, &facts, request.span, &mut records)?;

    let mut outcome = apply::build(env, root, rule, request, site, &bindings, &with)?;
    outcome.record.conditions = records;
    Ok(outcome)
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
    let direction = Direction::from_backward(backward);
    let (pattern, _) = direction.sides(rule);
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
        let request = RewriteRequest {
            rule: &ident,
            direction,
            site: &sel,
            with: &[],
            span: Span::DUMMY,
        };
        let outcome = rewrite(env, root, &request).map(|o| o.record.after_site);
        out.push(SiteReport {
            path: s.path.clone(),
            subterm: show(s.expr),
            outcome,
        });
    }
    Ok(out)
}
