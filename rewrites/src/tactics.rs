//! The tactics: steps that are not a single rule application. `unfold NAME`
//! (a definition's references replaced by its body), `inline x` (a `let` substituted
//! away), `simpl` (index expressions simplified under their context), `simpl_guard`
//! (guards decided under their context) and `check` (the program unchanged; the checks
//! every step gets are the point). `window` has a module of its own.

use std::collections::BTreeMap;

use atl_lang::ast;
use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{self, Expr, ExprKind};
use atl_lang::poly;
use atl_lang::shapes;
use atl_solver::Verdict;

use crate::context::{
    Context, Env, StepOutcome, map_with_context, replace_at, reserved_names, show, sites,
};
use crate::matcher;
use crate::record::{ConditionRecord, StepRecord};

/// `unfold NAME`: replaces every reference to definition NAME by its body;
/// `unfold A as FORMAT`: every reference to the sparse matrix A by the matrix its
/// storage in FORMAT encodes (the same matrix: a file given for A fills every
/// storage). Either is refused where the definition would then read two storages of
/// one matrix, whose agreement no kernel could check.
pub fn unfold(
    env: &Env<'_>,
    root: &Expr,
    name: &ast::Ident,
    storage: Option<&ast::Ident>,
    derived: &BTreeMap<String, Expr>,
) -> Result<StepOutcome, Diagnostic> {
    let body = match storage {
        Some(format) => storage_body(env.program, name, format)?,
        None => derived
            .get(&name.name)
            .cloned()
            .or_else(|| env.program.def(&name.name).map(|d| d.body.clone()))
            .ok_or_else(|| {
                Diagnostic::error("E0813", format!("no definition named `{}`", name.name))
                    .at(name.span, "cannot unfold")
            })?,
    };
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
    let read = env.program.storages_read(&name.name, &replaced);
    if read.len() > 1 {
        let formats: Vec<String> = read
            .iter()
            .map(|s| format!("`{}`", s.format.name))
            .collect();
        return Err(Diagnostic::error(
            "E0813",
            format!(
                "after this step the definition would read `{}` stored as {}",
                name.name,
                formats.join(" and ")
            ),
        )
        .at(name.span, "a second storage of the same matrix")
        .with_note("a kernel cannot check that two storages hold the same matrix, so one definition reads one of them")
        .with_help(format!(
            "unfold every reference to `{}` the same way (`unfold {} as FORMAT` replaces them all)",
            name.name, name.name
        )));
    }
    let expr = matcher::uniquify(&replaced, &reserved_names(env.program));
    // Like a rule step: the site (the first reference, in pre-order) before and after;
    // the certificate carries the definitions, so a checker can compare the body.
    let command = match storage {
        Some(f) => format!("unfold {} as {}", name.name, f.name),
        None => format!("unfold {}", name.name),
    };
    let mut record = StepRecord::tactic(
        command,
        paths.first().cloned().unwrap_or_default(),
        name.name.clone(),
        show(&expr),
    );
    record.after_site = show(&body);
    Ok(StepOutcome { record, expr })
}

/// The matrix that the sparse matrix `name`'s storage in `format` encodes.
fn storage_body(
    program: &ir::Program,
    name: &ast::Ident,
    format: &ast::Ident,
) -> Result<Expr, Diagnostic> {
    let storages: Vec<&ir::SparseDecl> = program.storages(&name.name).collect();
    if storages.is_empty() {
        return Err(Diagnostic::error(
            "E0813",
            format!("`{}` is not a sparse matrix", name.name),
        )
        .at(name.span, "not declared by a `sparse` item")
        .with_help(format!(
            "`unfold {} as FORMAT` reads another storage of a matrix declared `sparse {} : […] as FORMAT(…), FORMAT(…)`; `unfold {}` unfolds a definition",
            name.name, name.name, name.name
        )));
    }
    storages
        .iter()
        .find(|s| s.format.name == format.name)
        .map(|s| s.body.clone())
        .ok_or_else(|| {
            let formats: Vec<String> = storages
                .iter()
                .map(|s| format!("`{}`", s.format.name))
                .collect();
            Diagnostic::error(
                "E0813",
                format!("`{}` is not stored as `{}`", name.name, format.name),
            )
            .at(format.span, "not one of its storages")
            .with_help(format!(
                "`{}` is stored as {}; add a storage to its `sparse` item to read it otherwise",
                name.name,
                formats.join(", ")
            ))
        })
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

/// `check`: leaves the program as it is; the step exists for the checks every step
/// gets (size, shape discipline, shape), run by [`crate::step::run_step`].
pub fn check(root: &Expr) -> StepOutcome {
    StepOutcome {
        expr: root.clone(),
        record: StepRecord::tactic("check".to_string(), Vec::new(), show(root), show(root)),
    }
}
