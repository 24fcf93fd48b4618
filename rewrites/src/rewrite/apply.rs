//! Applying: the `with` values a step gives (checked against the rule's parameters and
//! the site's scope), the instantiation of the produced side, its replacement into the
//! program (binders renamed apart) and the step's record.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use atl_lang::ast;
use atl_lang::diag::Diagnostic;
use atl_lang::index::IndexExpr;
use atl_lang::ir::{self, Expr};
use atl_lang::span::Span;

use crate::context::{Env, Site, StepOutcome, replace_at, reserved_names, show};
use crate::matcher::{self, Bindings};
use crate::record::StepRecord;
use crate::rewrite::conditions::step_error;
use crate::rewrite::request::RewriteRequest;
use crate::rule::{Condition, Rule};

/// The `with` values of a step, checked against the rule: index values of parameters,
/// and fresh names for binders only the produced side introduces.
#[derive(Debug, Default)]
pub struct WithValues {
    /// Parameter (without `?`) -> its value.
    pub values: BTreeMap<String, IndexExpr>,
    /// Binder of the produced side (`?i`) -> the fresh name the step gives it.
    pub binder_names: BTreeMap<String, String>,
}

impl WithValues {
    /// Checks each `with` entry against the rule in this direction (E0803): a new
    /// binder needs a fresh name; a value must be for a parameter that the match does
    /// not determine (neither matched by the pattern nor fixed by a shape condition).
    pub fn parse(
        env: &Env<'_>,
        root: &Expr,
        rule: &Rule,
        pattern: &Expr,
        result: &Expr,
        with: &[(ast::Ident, ast::SIndex)],
    ) -> Result<WithValues, Diagnostic> {
        let mut with_values = BTreeMap::new();
        let mut pattern_metas = BTreeSet::new();
        crate::rule::metas_of(pattern, &mut pattern_metas);
        // Binders that only the produced side introduces may be named with `with`.
        let mut pattern_binders = HashSet::new();
        pattern.bound_names(&mut pattern_binders);
        let mut result_binders = HashSet::new();
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
                    format!(
                        "`?{key}` is matched in this direction and cannot be given with `with`"
                    ),
                )
                .at(name.span, "determined by the match"));
            }
            let v = atl_lang::resolve::lower_index_free(value)?;
            with_values.insert(key, v);
        }
        Ok(WithValues {
            values: with_values,
            binder_names,
        })
    }

    /// A `with` value is evaluated in the site's scope: it may mention sizes and the
    /// binders around the site, never a binder of the rewritten term itself (the
    /// rule's binders would capture it; a rule parameter is a constant of the rule).
    pub fn check_scope(
        &self,
        env: &Env<'_>,
        site: &Site<'_>,
        with: &[(ast::Ident, ast::SIndex)],
    ) -> Result<(), Diagnostic> {
        for (name, _) in with {
            let key = name.name.trim_start_matches('?');
            let Some(v) = self.values.get(key) else {
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
        Ok(())
    }

    /// New binders named with `with` must be distinct from each other too.
    pub fn check_distinct_binders(
        &self,
        with: &[(ast::Ident, ast::SIndex)],
    ) -> Result<(), Diagnostic> {
        let mut seen_binders = BTreeSet::new();
        for (name, value) in with {
            let binder = format!("?{}", name.name.trim_start_matches('?'));
            if let Some(v) = self.binder_names.get(&binder)
                && !seen_binders.insert(v.clone())
            {
                return Err(
                    Diagnostic::error("E0803", format!("`{v}` names two new binders"))
                        .at(value.span, "used for another binder of this step already")
                        .with_help("give each new binder its own fresh name"),
                );
            }
        }
        Ok(())
    }

    /// Adds the parameter values to the match's bindings.
    pub fn bind(&self, bindings: &mut Bindings) {
        for (k, v) in &self.values {
            bindings.indices.insert(k.clone(), v.clone());
        }
    }
}

/// Every metavariable of the produced side must have a value now (from the match, a
/// shape condition or `with`), except the rule's substitutions (E0809).
pub fn check_instantiable(
    rule: &Rule,
    result: &Expr,
    bindings: &Bindings,
    step_span: Span,
) -> Result<(), Diagnostic> {
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
    Ok(())
}

/// Instantiates the produced side at `site`, puts it into `root` (binders renamed
/// apart) and records the step. The record's conditions are the caller's to fill.
pub fn build(
    env: &Env<'_>,
    root: &Expr,
    rule: &Rule,
    request: &RewriteRequest<'_>,
    site: &Site<'_>,
    bindings: &Bindings,
    with: &WithValues,
) -> Result<StepOutcome, Diagnostic> {
    let step_span = request.span;
    let (_, result) = request.direction.sides(rule);
    let mut avoid: BTreeSet<String> = ir::all_names(root).into_iter().collect();
    avoid.extend(env.program.sizes.iter().map(|s| s.name.clone()));
    avoid.extend(env.program.inputs.iter().map(|s| s.name.clone()));
    avoid.extend(env.program.defs.iter().map(|s| s.name.clone()));
    let new_node = matcher::instantiate(rule, result, bindings, &avoid, &with.binder_names)
        .map_err(|m| {
            step_error(
                "E0810",
                step_span,
                format!("cannot instantiate rule `{}`: {m}", rule.name),
            )
        })?;
    let replaced = replace_at(root, &site.path, new_node.clone())
        .ok_or_else(|| step_error("E0810", step_span, "internal: the site disappeared"))?;
    let expr = matcher::uniquify(&replaced, &reserved_names(env.program));

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
        command: format!("{} {}", request.direction.command_word(), rule.name),
        rule: Some(rule.name.clone()),
        rule_statement: Some(rule.statement()),
        direction: Some(request.direction.record_name().to_string()),
        path: site.path.clone(),
        instantiation,
        conditions: Vec::new(),
        grade: rule.grade,
        before: show(site.expr),
        after_site: show(&new_node),
        after: show(&expr),
        origin: None,
        hint: None,
        vector_width: None,
        storage: None,
        copies: Vec::new(),
    };
    Ok(StepOutcome { expr, record })
}
