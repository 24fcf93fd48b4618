//! Contexts and sites: what is known at a point of a program, and the addressing of its
//! subterms by paths (child indices from the root).
//!
//! On the way down to a site the engine collects the *context* (thesis §4.2.2): the
//! range of every enclosing `gen`/`sum`, every enclosing guard's predicate, the shapes of
//! enclosing `let`s and the names bound around the point; [`Env::facts`] adds the
//! program's `assume`s and sizes >= 1. This module also holds the vocabulary every step
//! shares: the [`Env`] a step runs in and the [`StepOutcome`] it returns.

use std::collections::BTreeSet;

use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{Expr, ExprKind, Program};
use atl_lang::pretty::{Style, expr_to_string};
use atl_lang::shapes::{self, Shape, ShapeEnv};
use atl_solver::{Facts, Solver};

use crate::library::Library;
use crate::record::StepRecord;

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

pub(crate) fn range_fact(var: &str, lo: &IndexExpr, hi: &IndexExpr) -> Pred {
    Pred::and(
        Pred::cmp(CmpOp::Le, lo.clone(), IndexExpr::var(var)),
        Pred::cmp(CmpOp::Lt, IndexExpr::var(var), hi.clone()),
    )
}

/// The context inside child `k` of `e`, given the context at `e`.
pub(crate) fn child_context(env: &ShapeEnv, e: &Expr, k: usize, ctx: &Context) -> Context {
    let mut c = ctx.clone();
    match &e.kind {
        ExprKind::Gen { var, lo, hi, .. }
        | ExprKind::Sum { var, lo, hi, .. }
        | ExprKind::MaxRed { var, lo, hi, .. } => {
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

/// A program or subterm as the pretty printer writes it (records and messages).
pub(crate) fn show(e: &Expr) -> String {
    expr_to_string(e, Style::default())
}

/// The program's global names (sizes, inputs, definitions): never used for a fresh
/// binder.
pub(crate) fn reserved_names(p: &Program) -> BTreeSet<String> {
    p.sizes
        .iter()
        .map(|s| s.name.clone())
        .chain(p.inputs.iter().map(|s| s.name.clone()))
        .chain(p.defs.iter().map(|s| s.name.clone()))
        .collect()
}

/// Rebuilds `e` bottom-up, giving `f` each node with its context.
pub(crate) fn map_with_context(
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
