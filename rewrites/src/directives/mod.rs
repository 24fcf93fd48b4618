//! Halide-style scheduling directives as macros over checked rules. A directive names
//! loops by their binder variables (and stages by their `let` names), finds them in the
//! current program, and applies ordinary steps (rule rewrites, and the `window`, `simpl`
//! and `check` tactics) at their paths; each expanded step is recorded (and certified)
//! like any other, with the directive as its `origin`. Nothing here is trusted: a
//! directive can only choose steps, and every step is checked by the engine and again by
//! `atl verify`. `docs/directives.md` maps every Halide directive to its expansion.
//!
//! - `split i by K into io, ii [tail guard|round|shift]`: `rw<- tile_id with k := K`,
//!   `rw split_def` naming the new loops, `rw get_gen`. Tails are guarded and the padding
//!   dropped by `trunc_r` (GuardWithIf). RoundUp and ShiftInwards differ from it only
//!   when the extent is not a multiple of K; so they are accepted exactly when the
//!   extent is provably a multiple (the tail guard is then removed with `guard_elim`),
//!   and refused otherwise: RoundUp would compute and store past the end, and
//!   ShiftInwards recomputes overlapping elements (reading before the start when the
//!   extent is below K), which has no counterpart in value semantics.
//!   On a `sum`, `split` tiles the reduction (`rw sum_tile`); `rfactor` makes partial
//!   sums over a new pure loop and `grade exact` refuses reassociation (`reduce.rs`).
//! - `tile i, j by A, B`: `split i by A into io, ii` then `split j by B into jo, ji`.
//! - `reorder a, b`: exchanges two directly nested loops (`gen_swap`, `sum_swap`,
//!   `gen_sum`, `sum_gen`); a guard between them (a split's tail guard) is first moved
//!   into the inner loop (`rw<- guard_lift_gen`/`guard_lift_sum`).
//! - `fuse i, j into t`: two directly nested loops from 0 become one over the product:
//!   gens with `rw<- split_flatten` then `rw flatten_gen` (the storage layout is kept by
//!   the `split`), sums with `rw sum_fuse`.
//! - `compute_root x`: lifts `let x` out of every enclosing loop with the let-lifting
//!   rules.
//! - `compute_inline x`: `rw unfold_let`, then reads of the inlined generator are
//!   resolved with `get_gen` (or `get_gen_guard` where the read is not provably in range).
//! - `compute_at x at io`: moves `let x` to the body of loop `io` (let-lifting rules in
//!   either direction), then shrinks it with `window` to the rows the body reads (and,
//!   in each further dimension every read indexes, the columns and so on, where they
//!   are not the whole extent), bounds computed here from the reads and proved by the
//!   `window` step, then `simpl` and `get_gen` on the windowed producer.
//! - `partition x` (`partition.rs`): Halide's loop partitioning — `split_gen` at the
//!   bounds that the guards linear in `x` put on it (clamped into the loop's range),
//!   then `simpl_guard`, so that the steady state has no guard on `x`; for the tile
//!   loop of a split, its full tiles apart from the last one.
//! - `boundary X into XP`: the guarded read of `X` becomes an unguarded read of a copy
//!   with zeros around it (`rw pad_halo1..3`, halos computed from the read's loops),
//!   made once (`compute_root XP`); see `boundary.rs`.
//! - `bound v to N`: proves that loop `v` (or size `v`) has extent `N`; records `check`.
//! - `vector_width N` (`vector_width.rs`): records `check` with the SIMD width the
//!   kernel's C asks the compiler to prefer.
//!
//! - `parallel x`, `vectorize x`, `unroll x` (`hints.rs`): no rewrite. The directive checks that the
//!   annotation is meaningful for loop `x` of the current program and records a loop
//!   hint (binder name and kind) on a step that leaves the program unchanged; lowering
//!   applies the hints of the derived definition, checking them again on the kernel.
//!
//! - `specialize COND { steps }` (`specialize.rs`): the program as its version under a
//!   condition on sizes, scheduled by the block's steps, and its general version
//!   (`rw spec_lt`/`spec_le`/`spec_eq`/`spec_ne` with the comparison's operands).
//!
//! - `store_root x`, `store_at x at yo`, `fold_storage x by F` (`storage.rs`): no
//!   rewrite; a `check` step carrying the request, which lowering applies (the
//!   sliding window, the folded rows) and the validator proves.
//!
//! Refused: directives with no sound counterpart here (`compute_with`, …).

mod boundary;
pub mod hints;
mod partition;
mod specialize;
mod stage;
mod storage;
pub mod vector_width;

use std::collections::BTreeMap;

use atl_lang::ast::{self, DirectiveArg, Ident, SIndex, SIndexKind, SiteSelector, Step, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::functions::ScalarFn;
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::{AmountOp, BinOp, Expr, ExprKind, NameSupply, Program, all_names};
use atl_lang::poly::{self, Poly};
use atl_lang::pretty::{Style, expr_to_string};
use atl_lang::shapes::Shape;
use atl_lang::span::Span;
use atl_lang::steps::{self, StepInfo};
use atl_solver::Verdict;

use crate::context::{Env, StepOutcome, node_at, sites};
use crate::step::run_step;

mod across_split;
mod reduce;
pub use reduce::{check_declared_exact, declared_exact};
pub use specialize::specialize;

fn usage(name: &ast::Ident, text: &str) -> Diagnostic {
    Diagnostic::error("E0820", format!("malformed `{}` directive", name.name))
        .at(name.span, "here")
        .with_help(text.to_string())
}

/// Words and integers of a directive, commas dropped.
fn words(args: &[DirectiveArg]) -> Vec<(String, Span)> {
    args.iter()
        .filter_map(|a| match a {
            DirectiveArg::Word(w) => Some((w.name.clone(), w.span)),
            DirectiveArg::Int(v, s) => Some((v.to_string(), *s)),
            DirectiveArg::Comma(_) => None,
        })
        .collect()
}

fn ident(name: &str, span: Span) -> ast::Ident {
    ast::Ident {
        name: name.to_string(),
        span,
    }
}

fn int(v: i64, span: Span) -> SIndex {
    SIndex {
        kind: SIndexKind::Int(v),
        span,
    }
}

fn name_index(n: &str, span: Span) -> SIndex {
    SIndex {
        kind: SIndexKind::Name(n.to_string()),
        span,
    }
}

/// An index expression as surface syntax (for steps built here, such as `window`).
fn to_sindex(e: &IndexExpr, span: Span) -> SIndex {
    let kind = match e {
        IndexExpr::Const(c) => SIndexKind::Int(*c),
        IndexExpr::Var(v) => SIndexKind::Name(v.clone()),
        IndexExpr::Meta(m) => SIndexKind::Meta(m.clone()),
        IndexExpr::Neg(a) => SIndexKind::Neg(Box::new(to_sindex(a, span))),
        IndexExpr::Load(array, a) => SIndexKind::Load(
            Ident {
                name: array.clone(),
                span,
            },
            Box::new(to_sindex(a, span)),
        ),
        IndexExpr::Bin(op, a, b) => SIndexKind::Bin(
            *op,
            Box::new(to_sindex(a, span)),
            Box::new(to_sindex(b, span)),
        ),
    };
    SIndex { kind, span }
}

/// The variable and range of the `gen` or `sum` at `path`.
fn loop_binder<'e>(
    expr: &'e Expr,
    path: &[usize],
) -> Option<(&'e str, &'e IndexExpr, &'e IndexExpr)> {
    match &node_at(expr, path)?.kind {
        ExprKind::Gen { var, lo, hi, .. } | ExprKind::Sum { var, lo, hi, .. } => {
            Some((var.as_str(), lo, hi))
        }
        _ => None,
    }
}

/// The path of the `gen`/`sum` binding `var`, and whether it is a `gen` (no written
/// names known: the hint checks, which see resolved names only).
fn loop_path(expr: &Expr, var: &str, span: Span) -> Result<(Vec<usize>, bool), Diagnostic> {
    find_loop(None, expr, var, span)
}

/// The loop a directive names, and whether it is a `gen`: by its variable, or by the
/// name the user wrote for a binder that resolution renamed (`x` for `x1`), or as
/// `stage.var`. A name that fits several loops is refused (E0832) with the loops it
/// could mean; an unknown one (E0821) with the program's loops.
fn find_loop(
    program: Option<&Program>,
    expr: &Expr,
    var: &str,
    span: Span,
) -> Result<(Vec<usize>, bool), Diagnostic> {
    let written = |resolved: &str| -> String {
        program
            .map_or(resolved, |p| p.written_name(resolved))
            .to_string()
    };
    let (stage, name) = match var.split_once('.') {
        Some((stage, name)) => (Some(stage), name),
        None => (None, var),
    };
    let all = crate::loops::loops(expr);
    let mut paths = Vec::new();
    find_all_loops(expr, &mut Vec::new(), &mut paths);
    let in_stage = |l: &crate::loops::LoopInfo| match stage {
        None => true,
        // The definition's own loops are named by the definition (or the derivation).
        Some(s) => match &l.stage {
            Some(ls) => ls == s,
            None => program.is_none_or(|p| p.def(s).is_some() || p.derive(s).is_some()),
        },
    };
    let exact: Vec<usize> = (0..all.len())
        .filter(|&k| all[k].var == name && in_stage(&all[k]))
        .collect();
    let by_written: Vec<usize> = (0..all.len())
        .filter(|&k| all[k].var != name && written(&all[k].var) == name && in_stage(&all[k]))
        .collect();
    // The loop with exactly that variable, unless a loop of *another* stage was also
    // written with that name (the producer's `x` and the consumer's `x`, renamed `x1`):
    // then the name is ambiguous.
    let same_stage = |k: usize, j: usize| all[k].stage == all[j].stage;
    let chosen: Vec<usize> = if exact.len() == 1
        && (stage.is_some() || by_written.iter().all(|&j| same_stage(exact[0], j)))
    {
        exact
    } else if exact.is_empty() && by_written.len() == 1 {
        by_written
    } else {
        exact.into_iter().chain(by_written).collect()
    };
    match chosen.as_slice() {
        [k] => Ok((paths[*k].0.clone(), paths[*k].1)),
        [] => {
            let d = Diagnostic::error("E0821", format!("no loop binds `{var}`"))
                .at(span, "unknown loop")
                .with_note(crate::loops::listing_written(&all, program));
            let names: Vec<&str> = all.iter().map(|l| l.var.as_str()).collect();
            Err(
                match atl_lang::suggest::closest(
                    name,
                    names.iter().copied(),
                    name.len().div_ceil(3).max(1),
                ) {
                    Some(c) => d.with_help(format!("did you mean `{c}`?")),
                    None => d.with_help(
                        "loops are named by their binder variables, as listed above (the REPL's \
                     `:loops` prints them), or as `stage.var`",
                    ),
                },
            )
        }
        several => {
            // Each candidate as the user can write it: `stage.var` for a stage's loop,
            // the printed name for the definition's own (renamed) loop.
            let spellings: Vec<String> = several
                .iter()
                .map(|&k| {
                    let l = &all[k];
                    match &l.stage {
                        Some(stage) => format!("`{stage}.{}`", written(&l.var)),
                        None => format!("`{}`", l.var),
                    }
                })
                .collect();
            let lines: Vec<String> = several
                .iter()
                .zip(&spellings)
                .map(|(&k, spelling)| {
                    let l = &all[k];
                    match &l.stage {
                        Some(stage) => format!("{spelling} (the loop of stage `{stage}`)"),
                        None if written(&l.var) != l.var => format!(
                            "{spelling} (the definition's own loop, written `{}`)",
                            written(&l.var)
                        ),
                        None => format!("{spelling} (the definition's own loop)"),
                    }
                })
                .collect();
            Err(
                Diagnostic::error("E0832", format!("`{var}` names {} loops", several.len()))
                    .at(span, "ambiguous loop")
                    .with_note(format!("it may mean: {}", lines.join(", ")))
                    .with_help(format!(
                        "name one loop: {} (a stage's loop as `stage.var`, the definition's own \
                 loops also as `NAME.var` with the definition's name)",
                        spellings.join(" or ")
                    )),
            )
        }
    }
}

/// Every `gen`/`sum` of `e` in pre-order (the order of [`crate::loops::loops`]), with
/// its path and whether it is a `gen`.
fn find_all_loops(e: &Expr, path: &mut Vec<usize>, out: &mut Vec<(Vec<usize>, bool)>) {
    match &e.kind {
        ExprKind::Gen { .. } => out.push((path.clone(), true)),
        ExprKind::Sum { .. } => out.push((path.clone(), false)),
        _ => {}
    }
    for (k, c) in e.children().into_iter().enumerate() {
        path.push(k);
        find_all_loops(c, path, out);
        path.pop();
    }
}

/// The path of `let var`.
fn let_path(expr: &Expr, var: &str, span: Span) -> Result<Vec<usize>, Diagnostic> {
    find_path(expr, &mut |e| match &e.kind {
        ExprKind::Let { var: v, .. } if v == var => Some(()),
        _ => None,
    })
    .map(|(p, ())| p)
    .ok_or_else(|| {
        Diagnostic::error("E0826", format!("no `let {var}` in the program"))
            .at(span, "unknown stage")
            .with_help("stages are the `let`-bound tensors, named as printed by `atl derive --trace` or the REPL")
    })
}

/// The first node in pre-order for which `f` says something, with its path.
fn find_path<T>(expr: &Expr, f: &mut dyn FnMut(&Expr) -> Option<T>) -> Option<(Vec<usize>, T)> {
    fn go<T>(
        e: &Expr,
        path: &mut Vec<usize>,
        f: &mut dyn FnMut(&Expr) -> Option<T>,
    ) -> Option<(Vec<usize>, T)> {
        if let Some(t) = f(e) {
            return Some((path.clone(), t));
        }
        for (k, c) in e.children().into_iter().enumerate() {
            path.push(k);
            let found = go(c, path, f);
            path.pop();
            if found.is_some() {
                return found;
            }
        }
        None
    }
    go(expr, &mut Vec::new(), f)
}

/// Paths (pre-order) of every use of the tensor variable `name` below `e`.
fn uses(e: &Expr, name: &str) -> Vec<Vec<usize>> {
    fn go(e: &Expr, name: &str, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if matches!(&e.kind, ExprKind::Var(v) if v == name) {
            out.push(path.clone());
        }
        for (k, c) in e.children().into_iter().enumerate() {
            path.push(k);
            go(c, name, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    go(e, name, &mut Vec::new(), &mut out);
    out
}

fn rw(rule: &str, backward: bool, path: Vec<usize>, with: Vec<(&str, SIndex)>, span: Span) -> Step {
    Step {
        kind: StepKind::Rewrite {
            backward,
            rule: ident(rule, span),
            site: SiteSelector {
                path: Some((path.into_iter().map(|p| p as u64).collect(), span)),
                ..Default::default()
            },
            with: with.into_iter().map(|(k, v)| (ident(k, span), v)).collect(),
        },
        span,
    }
}

/// A one-line description of an expanded step, for the notes of a failure.
fn describe(step: &Step) -> String {
    match &step.kind {
        StepKind::Rewrite {
            backward,
            rule,
            site,
            ..
        } => {
            let path = site
                .path
                .as_ref()
                .map(|(p, _)| {
                    format!(
                        " in [{}]",
                        p.iter()
                            .map(|k| k.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
                .unwrap_or_default();
            format!(
                "{} {}{path}",
                if *backward { "rw<-" } else { "rw" },
                rule.name
            )
        }
        StepKind::Window { var, dims } => {
            let ranges: Result<Vec<String>, _> = dims
                .iter()
                .map(|(lo, hi)| {
                    Ok::<_, Diagnostic>(format!(
                        "{}..{}",
                        atl_lang::resolve::lower_index_free(lo)?,
                        atl_lang::resolve::lower_index_free(hi)?
                    ))
                })
                .collect();
            match ranges {
                Ok(r) => format!("window {} in {}", var.name, r.join(", ")),
                Err(_) => format!("window {}", var.name),
            }
        }
        StepKind::Simpl => "simpl".to_string(),
        StepKind::Check => "check".to_string(),
        _ => "a step".to_string(),
    }
}

/// Whether a failed step failed on a side condition (refuted or unknown), as opposed to
/// not matching at all.
fn condition_failed(d: &Diagnostic) -> bool {
    d.code == "E0811" || d.code == "E0812"
}

/// The rule that lifts a `let` out of argument `k` of a call of `func`, forward:
/// rules/library/let.rules has one per function and argument position, named from the
/// function (`let_lift_sqrt`, `let_lift_max_l`/`_r`, and for `select(a OP b, x, y)`,
/// one function per comparison, `let_lift_select_gt_a`/`_b`/`_then`/`_else`).
pub fn call_lift_rule(func: ScalarFn, k: usize) -> String {
    let name = func.ident_name();
    match (func, func.arity()) {
        (ScalarFn::Select(_), _) => {
            let position = ["a", "b", "then", "else"][k];
            format!("let_lift_{name}_{position}")
        }
        (_, 1) => format!("let_lift_{name}"),
        _ => format!("let_lift_{name}_{}", if k == 0 { "l" } else { "r" }),
    }
}

/// The rule that lifts a `let` out of the construct `parent` (its child `k`), forward.
fn lift_rule(parent: &Expr, k: usize) -> Option<String> {
    match &parent.kind {
        ExprKind::Call { func, .. } => Some(call_lift_rule(*func, k)),
        _ => construct_lift_rule(parent, k).map(str::to_string),
    }
}

/// The rule that lifts a `let` out of the construct `parent` (its child `k`), forward,
/// for the constructs other than calls.
fn construct_lift_rule(parent: &Expr, k: usize) -> Option<&'static str> {
    Some(match (&parent.kind, k) {
        (ExprKind::Gen { .. }, _) => "let_lift_gen",
        (ExprKind::Sum { .. }, _) => "let_lift_sum",
        (ExprKind::Guard { .. }, _) => "let_lift_guard",
        (ExprKind::Access { .. }, _) => "let_lift_access",
        (ExprKind::Binary { op: BinOp::Add, .. }, 0) => "let_lift_add_l",
        (ExprKind::Binary { op: BinOp::Add, .. }, _) => "let_lift_add_r",
        (ExprKind::Binary { op: BinOp::Mul, .. }, 0) => "let_lift_mul_l",
        (ExprKind::Binary { op: BinOp::Mul, .. }, _) => "let_lift_mul_r",
        (ExprKind::Binary { op: BinOp::Sub, .. }, 0) => "let_lift_sub_l",
        (ExprKind::Binary { op: BinOp::Sub, .. }, _) => "let_lift_sub_r",
        (ExprKind::Binary { op: BinOp::Div, .. }, 0) => "let_lift_div_l",
        (ExprKind::Binary { op: BinOp::Div, .. }, _) => "let_lift_div_r",
        (ExprKind::Neg(_), _) => "let_lift_neg",
        (ExprKind::Transpose(_), _) => "transpose_let",
        (ExprKind::Flatten(_), _) => "flatten_let",
        (
            ExprKind::Amount {
                op: AmountOp::TruncR,
                ..
            },
            _,
        ) => "trunc_r_let",
        (
            ExprKind::Amount {
                op: AmountOp::Split,
                ..
            },
            _,
        ) => "split_let",
        (ExprKind::Let { .. }, 0) => "let_lift_let",
        (ExprKind::Let { .. }, _) => "let_swap",
        _ => return None,
    })
}

/// A construct's name for diagnostics.
fn construct(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Gen { var, .. } => format!("`gen {var}`"),
        ExprKind::Sum { var, .. } => format!("`sum {var}`"),
        ExprKind::MaxRed { var, .. } => format!("`max {var}`"),
        ExprKind::Let { var, .. } => format!("`let {var}`"),
        ExprKind::Guard { .. } => "a guard".to_string(),
        ExprKind::Access { .. } => "an access".to_string(),
        ExprKind::Neg(_) => "a negation".to_string(),
        ExprKind::Binary { op, .. } => format!("`{}`", op.symbol()),
        ExprKind::Concat(..) => "`++`".to_string(),
        ExprKind::Transpose(_) => "`transpose`".to_string(),
        ExprKind::Flatten(_) => "`flatten`".to_string(),
        ExprKind::Amount { op, .. } => format!("`{}`", op.name()),
        ExprKind::Call { func, .. } => format!("`{}`", func.name()),
        _ => "this construct".to_string(),
    }
}

fn no_lift_rule(x: &str, parent: &Expr, span: Span) -> Diagnostic {
    Diagnostic::error(
        "E0827",
        format!(
            "no rule moves `let {x}` across {} (the construct between the stage and the loop)",
            construct(parent)
        ),
    )
    .at(span, "cannot move the stage")
    .with_help("rewrite the program so that only gens, sums, guards, accesses, `+`, `-`, `*`, `/`, negations, scalar functions' arguments, `transpose`, `flatten`, `split`, `trunc_r` and lets separate the stage from the loop (`++`, `pad`, `trunc_l` and max-reductions are not crossed: bind the stage outside them)")
}

/// A loop: its variable and range.
type Loop = (String, IndexExpr, IndexExpr);

/// A read of a stage: its indices (first dimension first), and the loops between the
/// stage and the read (outermost first).
type Read = (Vec<IndexExpr>, Vec<Loop>);

/// Applies `steps` one after the other, recording `origin` on each.
struct Applier<'a, 'e> {
    env: &'a Env<'e>,
    shape: &'a Shape,
    derived: &'a BTreeMap<String, Expr>,
    origin: String,
    expr: Expr,
    outcomes: Vec<StepOutcome>,
}

impl Applier<'_, '_> {
    fn apply(&mut self, step: Step) -> Result<(), Diagnostic> {
        let o = self.try_apply(&step).map_err(|d| {
            d.with_note(format!(
                "while expanding `{}`, at its step `{}`",
                self.origin,
                describe(&step)
            ))
        })?;
        self.expr = o.expr.clone();
        self.outcomes.push(o);
        Ok(())
    }

    /// Runs a step without committing it.
    fn try_apply(&self, step: &Step) -> Result<StepOutcome, Diagnostic> {
        let mut o = run_step(self.env, &self.expr, step, self.shape, self.derived)?;
        o.record.origin = Some(self.origin.clone());
        Ok(o)
    }

    fn commit(&mut self, o: StepOutcome) {
        self.expr = o.expr.clone();
        self.outcomes.push(o);
    }

    fn node(&self, path: &[usize]) -> Option<&Expr> {
        node_at(&self.expr, path)
    }

    /// Proves `goal` in the context of the node at `path`.
    fn prove_at(&self, path: &[usize], goal: &Pred) -> Verdict {
        let all = sites(self.env.shapes, &self.expr);
        let ctx = all
            .iter()
            .find(|s| s.path == path)
            .map(|s| s.ctx.clone())
            .unwrap_or_default();
        self.env.solver.prove(&self.env.facts(&ctx), goal)
    }

    /// `split var by k into outer, inner` with the given tail strategy.
    fn split(
        &mut self,
        var: &str,
        k: i64,
        outer: &str,
        inner: &str,
        tail: &str,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if k < 1 {
            return Err(Diagnostic::error(
                "E0820",
                format!("a split factor must be at least 1, got {k}"),
            )
            .at(span, "bad factor"));
        }
        let (path, is_gen) =
            match reduce::find_loop_or_max(self.env.program, &self.expr, var, span)? {
                reduce::Named::Loop(path, is_gen) => (path, is_gen),
                // A max-reduction is split by its own rule.
                reduce::Named::Max(path) => {
                    self.check_fresh(&[outer, inner], span)?;
                    return self.split_max(path, var, k, (outer, inner), span);
                }
            };
        self.check_fresh(&[outer, inner], span)?;
        if !is_gen {
            return self.split_reduction(path, var, k, (outer, inner), tail, span);
        }
        // RoundUp and ShiftInwards coincide with the guarded split when the extent is a
        // multiple of the factor (no tail), and only then have a sound counterpart.
        if tail != "guard" {
            self.check_no_tail(&path, var, k, tail, span)?;
        }
        self.apply(rw(
            "tile_id",
            true,
            path.clone(),
            vec![("k", int(k, span))],
            span,
        ))?;
        let mut split_path = path.clone();
        split_path.extend([0, 0]);
        self.apply(rw(
            "split_def",
            false,
            split_path.clone(),
            vec![
                ("io", name_index(outer, span)),
                ("ii", name_index(inner, span)),
            ],
            span,
        ))?;
        // gen outer: gen inner: [guard] * (gen var: …)[outer * k + inner]
        let mut guard = split_path;
        guard.extend([0, 0]);
        let mut access = guard.clone();
        access.push(0);
        self.apply(rw("get_gen", false, access, vec![], span))?;
        if tail != "guard" {
            // No tail: the guard holds everywhere and is dropped.
            self.apply(rw("guard_elim", false, guard, vec![], span))?;
        }
        Ok(())
    }

    /// E0803 in the user's words when a name a directive introduces is already used
    /// in the program (a binder of the current program, a size, an input or a
    /// definition) — not the rule's metavariable and `with` syntax the expanded step
    /// would report.
    fn check_fresh(&self, names: &[&str], span: Span) -> Result<(), Diagnostic> {
        let mut used = std::collections::BTreeSet::new();
        self.expr.walk(&mut |e| {
            if let Some((v, _)) = e.binder() {
                used.insert(v.to_string());
            }
        });
        let p = self.env.program;
        for name in names {
            let global = p.is_size(name) || p.input(name).is_some() || p.def(name).is_some();
            if used.contains(*name) || global {
                return Err(Diagnostic::error(
                    "E0803",
                    format!("the new name `{name}` is already used in the program"),
                )
                .at(span, "not a fresh name")
                .with_help(format!(
                    "choose names the program does not use yet, e.g. `{name}2` (the REPL's \
                     `:loops` lists the loops)"
                )));
            }
        }
        Ok(())
    }

    /// `split … tail separate`: the guarded split, then the full tiles apart from the
    /// partial last one — `rw split_gen with k := extent / K` at the outer loop, so that
    /// `gen outer` becomes the full tiles `++` the last tile, then `simpl_guard`, which
    /// drops the tail guard where it provably holds (in the full tiles). The steady
    /// state carries no guard; the last tile keeps it.
    fn split_separate(
        &mut self,
        var: &str,
        k: i64,
        outer: &str,
        inner: &str,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let (path, is_gen) =
            match reduce::find_loop_or_max(self.env.program, &self.expr, var, span)? {
                reduce::Named::Loop(path, is_gen) => (path, is_gen),
                // A max-reduction has no partial tile to separate: it is split only
                // when its extent is a multiple of the factor.
                reduce::Named::Max(path) => {
                    self.check_fresh(&[outer, inner], span)?;
                    return self.split_max(path, var, k, (outer, inner), span);
                }
            };
        if !is_gen {
            self.check_fresh(&[outer, inner], span)?;
            return self.split_reduction(path, var, k, (outer, inner), "separate", span);
        }
        let Some(ExprKind::Gen { lo, hi, .. }) = self.node(&path).map(|n| n.kind.clone()) else {
            unreachable!("find_loop found a gen")
        };
        let extent = poly::normalize(&IndexExpr::sub(hi, lo));
        self.split(var, k, outer, inner, "guard", span)?;
        let (outer_path, _) = find_loop(Some(self.env.program), &self.expr, outer, span)?;
        let full_tiles = IndexExpr::bin(IndexOp::Div, extent, IndexExpr::Const(k));
        self.apply(rw(
            "split_gen",
            false,
            outer_path,
            vec![("k", to_sindex(&full_tiles, span))],
            span,
        ))?;
        self.apply(Step {
            kind: StepKind::SimplGuard,
            span,
        })
    }

    /// For `tail round`/`tail shift`: the extent of the loop at `path` must be provably a
    /// multiple of `k`; otherwise the strategy is refused, saying why.
    fn check_no_tail(
        &self,
        path: &[usize],
        var: &str,
        k: i64,
        tail: &str,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let Some(ExprKind::Gen { lo, hi, .. }) = self.node(path).map(|n| &n.kind) else {
            return Ok(());
        };
        let extent = poly::normalize(&IndexExpr::sub(hi.clone(), lo.clone()));
        let multiple = Pred::cmp(
            CmpOp::Eq,
            IndexExpr::bin(IndexOp::Mod, extent.clone(), IndexExpr::Const(k)),
            IndexExpr::Const(0),
        );
        let verdict = self.prove_at(path, &multiple);
        if verdict == Verdict::Proved {
            return Ok(());
        }
        let why = match &verdict {
            Verdict::Refuted(cex) => format!("counterexample: {cex}"),
            Verdict::Unknown(r) => format!("the solver could not decide it ({r})"),
            Verdict::Proved => String::new(),
        };
        let (strategy, note) = if tail == "round" {
            // A loop inside a let's value computes a stage; any other loop, the output.
            let in_stage = (0..path.len()).any(|n| {
                path[n] == 0
                    && matches!(
                        self.node(&path[..n]).map(|a| &a.kind),
                        Some(ExprKind::Let { .. })
                    )
            });
            let consequence = if in_stage {
                "on this stage it would compute values past its end, which its consumers would then read instead of zeros"
            } else {
                "on the output that writes past its end"
            };
            (
                "RoundUp",
                format!(
                    "RoundUp computes the last tile in full, up to cdiv({extent}, {k}) * {k}, past the end of `gen {var}`: {consequence}"
                ),
            )
        } else {
            let small = Pred::cmp(CmpOp::Le, IndexExpr::Const(k), extent.clone());
            let note = if self.prove_at(path, &small) == Verdict::Proved {
                format!(
                    "ShiftInwards shifts the last tile to start at {extent} - {k} and recomputes the elements it overlaps; a value-semantics program has one value per element and cannot express the overlapping writes"
                )
            } else {
                format!(
                    "ShiftInwards would start the last tile at {extent} - {k}, which may be negative (the extent may be smaller than the factor): it would read and write out of bounds"
                )
            };
            ("ShiftInwards", note)
        };
        Err(Diagnostic::error(
            "E0823",
            format!(
                "tail strategy `{tail}` ({strategy}) is refused: the extent {extent} of `{var}` is not provably a multiple of {k}"
            ),
        )
        .at(span, "has a partial last tile")
        .with_note(why)
        .with_note(note)
        .with_help("use the default `tail guard`, or a factor that divides the extent (an `assume` can state it)"))
    }

    /// `fuse a, b into t`: two directly nested loops from 0 become one.
    fn fuse(&mut self, a: &str, b: &str, t: &str, span: Span) -> Result<(), Diagnostic> {
        let (pa, ga) = find_loop(Some(self.env.program), &self.expr, a, span)?;
        let (pb, gb) = find_loop(Some(self.env.program), &self.expr, b, span)?;
        let (outer, outer_gen, inner, inner_gen) =
            if pb.len() == pa.len() + 1 && pb.starts_with(&pa) {
                (pa, ga, pb, gb)
            } else if pa.len() == pb.len() + 1 && pa.starts_with(&pb) {
                (pb, gb, pa, ga)
            } else {
                return Err(Diagnostic::error(
                    "E0825",
                    format!("`{a}` and `{b}` are not directly nested loops"),
                )
                .at(span, "cannot fuse")
                .with_note("fuse makes one loop of a loop and the loop that is its whole body")
                .with_help("reorder the loops first so that one is directly inside the other"));
            };
        if outer_gen != inner_gen {
            return Err(Diagnostic::error(
                "E0825",
                format!("`{a}` and `{b}` are a gen and a sum, which cannot be fused"),
            )
            .at(span, "cannot fuse")
            .with_note("the fused loop would be part output dimension, part reduction"));
        }
        for p in [&outer, &inner] {
            if let Some(ExprKind::Gen { var, lo, .. } | ExprKind::Sum { var, lo, .. }) =
                self.node(p).map(|n| &n.kind)
                && !poly::same(lo, &IndexExpr::Const(0))
            {
                return Err(Diagnostic::error(
                    "E0825",
                    format!("loop `{var}` starts at {lo}, not 0"),
                )
                .at(span, "cannot fuse")
                .with_help(format!(
                    "shift it to start at 0 first: `rw gen_lo_zero` (or `rw shift_sum`) at `{var}`"
                )));
            }
        }
        if outer_gen {
            // gen i < n: gen j < m: e  =  split(m, flatten(…))  =  split(m, gen t < n * m: …)
            self.apply(rw("split_flatten", true, outer.clone(), vec![], span))?;
            let mut flatten = outer;
            flatten.push(0);
            self.apply(rw(
                "flatten_gen",
                false,
                flatten,
                vec![("k", name_index(t, span))],
                span,
            ))
        } else {
            self.apply(rw(
                "sum_fuse",
                false,
                outer,
                vec![("k", name_index(t, span))],
                span,
            ))
        }
    }

    /// Lifts `let x` (at `path`) one level, out of its parent; returns the new path.
    fn lift_once(&mut self, x: &str, path: &[usize], span: Span) -> Result<Vec<usize>, Diagnostic> {
        let (k, parent) = path.split_last().expect("a let below the root");
        let parent_node = self.node(parent).expect("the parent exists");
        // A stage that reads the variable of the loop around it cannot leave that loop
        // (the lifting rule's scoping would refuse it, in the rule's own words).
        if let ExprKind::Gen { var, .. } | ExprKind::Sum { var, .. } = &parent_node.kind
            && let Some(ExprKind::Let { value, .. }) = self.node(path).map(|n| &n.kind)
            && value.free_index_vars().contains(var)
        {
            let written = self.env.program.written_name(var).to_string();
            return Err(Diagnostic::error(
                "E0838",
                format!("`{x}` cannot leave the loop `{written}`: it reads `{written}`"),
            )
            .at(span, "the stage depends on an enclosing loop")
            .with_note(format!(
                "`{x}` is computed in every iteration of {} from the value of `{written}`",
                construct(parent_node)
            ))
            .with_note(
                "`compute_root` hoists a stage out of a `gen` or `sum` from 0 that it reads, as \
                 the generator of its values over the loop; this loop does not start at 0",
            )
            .with_help(format!(
                "compute it at that loop or inside it (`compute_at {x} at {written}`), or leave it where it is"
            )));
        }
        // A stage that reads the stage around it cannot leave it: that one moves first.
        if let ExprKind::Let { var: outer, .. } = &parent_node.kind
            && *k == 1
            && let Some(ExprKind::Let { value, .. }) = self.node(path).map(|n| &n.kind)
            && !uses(value, outer).is_empty()
        {
            return Err(Diagnostic::error(
                "E0827",
                format!("`{x}` cannot move out of the stage `{outer}`: it reads `{outer}`"),
            )
            .at(span, "the stage depends on the stage around it")
            .with_note(format!(
                "`{outer}` is computed where `{x}` is (its `let` encloses `{x}`'s), and `{x}` reads it"
            ))
            .with_help(format!(
                "move `{outer}` first, to the same place or further out (`compute_at {outer} at …` or `compute_root {outer}` before this step), then `{x}`"
            )));
        }
        let rule = lift_rule(parent_node, *k).ok_or_else(|| no_lift_rule(x, parent_node, span))?;
        self.apply(rw(&rule, false, parent.to_vec(), vec![], span))?;
        Ok(parent.to_vec())
    }

    /// Pushes `let x` (at `path`) one level into child `k` of its body; returns the new
    /// path of the let.
    fn sink_once(
        &mut self,
        x: &str,
        path: &[usize],
        k: usize,
        span: Span,
    ) -> Result<Vec<usize>, Diagnostic> {
        let mut body = path.to_vec();
        body.push(1);
        let body_node = self.node(&body).expect("the let has a body");
        let rule = lift_rule(body_node, k).ok_or_else(|| no_lift_rule(x, body_node, span))?;
        self.apply(rw(&rule, true, path.to_vec(), vec![], span))?;
        let mut out = path.to_vec();
        out.push(k);
        Ok(out)
    }

    /// The hoisting rule for `let` (at `path`) directly inside a `gen` or `sum` from 0
    /// whose variable its value reads: the stage is computed for every iteration at
    /// once, as a generator over the loop (Halide's `compute_root` of a function the
    /// loop's iterations each evaluate at their own point).
    fn hoist_rule(&self, path: &[usize]) -> Option<&'static str> {
        let (_, parent) = path.split_last()?;
        let Some(ExprKind::Let { value, .. }) = self.node(path).map(|n| &n.kind) else {
            return None;
        };
        let (var, lo, rule) = match &self.node(parent)?.kind {
            ExprKind::Gen { var, lo, .. } => (var, lo, "let_hoist_gen"),
            ExprKind::Sum { var, lo, .. } => (var, lo, "let_hoist_sum"),
            _ => return None,
        };
        (poly::same(lo, &IndexExpr::Const(0)) && value.free_index_vars().contains(var))
            .then_some(rule)
    }

    /// Hoists `let name` (at `path`) out of the loop around it as the generator of its
    /// values, bound to a fresh name (`let_hoist_gen`/`let_hoist_sum`), and unfolds the
    /// alias `let name = T[i]` left inside; returns the new let's path and name.
    fn hoist_once(
        &mut self,
        name: &str,
        path: &[usize],
        rule: &str,
        span: Span,
    ) -> Result<(Vec<usize>, String), Diagnostic> {
        let parent = path[..path.len() - 1].to_vec();
        let mut used: Vec<String> = all_names(&self.expr).into_iter().collect();
        used.extend(self.env.program.declared_names().map(str::to_string));
        let fresh = NameSupply::new(used).fresh(name);
        self.apply(rw(
            rule,
            false,
            parent.clone(),
            vec![("y", name_index(&fresh, span))],
            span,
        ))?;
        // `let T = gen i: v in gen i: let name = T[i] in b`: the alias is the body's body.
        let mut alias = parent.clone();
        alias.extend([1, 0]);
        self.apply(rw("unfold_let", false, alias, vec![], span))?;
        Ok((parent, fresh))
    }

    /// `compute_root x`: no loop encloses `let x` any more.
    fn compute_root(&mut self, x: &str, span: Span) -> Result<(), Diagnostic> {
        let mut path = let_path(&self.expr, x, span)?;
        let mut name = x.to_string();
        let in_loop = |e: &Expr, path: &[usize]| {
            (0..path.len()).any(|n| {
                matches!(
                    node_at(e, &path[..n]).map(|a| &a.kind),
                    Some(ExprKind::Gen { .. } | ExprKind::Sum { .. } | ExprKind::MaxRed { .. })
                )
            })
        };
        let before = self.outcomes.len();
        while in_loop(&self.expr, &path) {
            if let Some(rule) = self.hoist_rule(&path) {
                (path, name) = self.hoist_once(&name, &path, rule, span)?;
            } else {
                path = self.lift_once(&name, &path, span)?;
            }
        }
        if name != x {
            // The stage hoisted out of loops it reads was bound to a fresh name; it gets
            // the user's back (free again: its alias was unfolded): `let T = G in b`
            // becomes `let x = G in b[T := x]`.
            let mut value = path.clone();
            value.push(0);
            let mut body = path.clone();
            body.push(1);
            self.apply(rw(
                "let_intro",
                false,
                value,
                vec![("x", name_index(x, span))],
                span,
            ))?;
            self.apply(rw("let_lift_let", false, path.clone(), vec![], span))?;
            self.apply(rw("unfold_let", false, body, vec![], span))?;
        }
        // Out of every loop, the stage is computed once; it is lifted further, where a
        // rule allows, to the chain of lets at the root, so that the program reads as
        // stages followed by the output (no failure here: the schedule is already
        // reached).
        let at_root_chain = |e: &Expr, path: &[usize]| {
            (0..path.len()).all(|n| {
                path[n] == 1
                    && matches!(
                        node_at(e, &path[..n]).map(|a| &a.kind),
                        Some(ExprKind::Let { .. })
                    )
            })
        };
        while !at_root_chain(&self.expr, &path) {
            let (k, parent) = path.split_last().expect("not at the root");
            let Some(rule) = self.node(parent).and_then(|p| lift_rule(p, *k)) else {
                break;
            };
            let Ok(o) = self.try_apply(&rw(&rule, false, parent.to_vec(), vec![], span)) else {
                break;
            };
            self.commit(o);
            path = parent.to_vec();
        }
        if self.outcomes.len() == before {
            // Already computed once, in full, at the root: the directive is recorded
            // as a `check` so that the trace and the certificate show it.
            self.apply(Step {
                kind: StepKind::Check,
                span,
            })?;
        }
        Ok(())
    }

    /// `compute_inline x`: the stage is substituted into its consumers and their reads of
    /// it resolved.
    fn compute_inline(&mut self, x: &str, span: Span) -> Result<(), Diagnostic> {
        let path = let_path(&self.expr, x, span)?;
        let Some(ExprKind::Let { body, .. }) = self.node(&path).map(|n| &n.kind) else {
            unreachable!("let_path found a let")
        };
        let occurrences = uses(body, x);
        self.apply(rw("unfold_let", false, path.clone(), vec![], span))?;
        // The body now stands where the let was; each use became a copy of the value.
        for occ in occurrences {
            let mut cur = path.clone();
            cur.extend(occ);
            self.resolve_reads(cur, span)?;
        }
        Ok(())
    }

    /// Reads `(gen …)[k]` and `([p] * …)[k]` of the tensor at `cur`, outwards, are
    /// resolved: `get_gen` where the index is provably in range, else `get_gen_guard`.
    fn resolve_reads(&mut self, mut cur: Vec<usize>, span: Span) -> Result<(), Diagnostic> {
        loop {
            let Some((0, parent)) = cur.split_last().map(|(k, p)| (*k, p.to_vec())) else {
                return Ok(());
            };
            if !matches!(
                self.node(&parent).map(|n| &n.kind),
                Some(ExprKind::Access { .. })
            ) {
                return Ok(());
            }
            match self.node(&cur).map(|n| &n.kind) {
                Some(ExprKind::Gen { lo, .. }) if poly::same(lo, &IndexExpr::Const(0)) => {
                    let step = rw("get_gen", false, parent.clone(), vec![], span);
                    match self.try_apply(&step) {
                        Ok(o) => {
                            self.commit(o);
                            cur = parent;
                        }
                        Err(d) if condition_failed(&d) => {
                            // `[0 <= k && k < n] * e[i := k]`: the guard is resolved
                            // by `get_guard` if an outer access reads it.
                            self.apply(rw("get_gen_guard", false, parent.clone(), vec![], span))?;
                            cur = parent;
                        }
                        Err(d) => {
                            return Err(d.with_note(format!(
                                "while expanding `{}`, at its step `{}`",
                                self.origin,
                                describe(&step)
                            )));
                        }
                    }
                }
                Some(ExprKind::Guard { .. }) => {
                    self.apply(rw("get_guard", false, parent.clone(), vec![], span))?;
                    cur = parent;
                    cur.extend([0, 0]);
                }
                _ => return Ok(()),
            }
        }
    }

    /// `compute_at x at l`: `let x` moves to the body of loop `l`, and is shrunk to the
    /// rows that body reads.
    fn compute_at(&mut self, x: &str, l: &str, span: Span) -> Result<(), Diagnostic> {
        let lp = self.place_at(x, l, span)?;
        // A scalar stage has no window: moved to the loop, it is computed once per
        // iteration, which is all `compute_at` asks.
        if self.stage_is_scalar(&lp) {
            return Ok(());
        }
        self.shrink_to_window(x, lp, span)
    }

    /// `let x` moved to the body of loop `l` (or to the chain of `let`s there), whole;
    /// the path of the `let`.
    fn place_at(&mut self, x: &str, l: &str, span: Span) -> Result<Vec<usize>, Diagnostic> {
        let mut lp = let_path(&self.expr, x, span)?;
        let (loop_p, _) = find_loop(Some(self.env.program), &self.expr, l, span)?;
        let mut loop_body = loop_p.clone();
        loop_body.push(0);
        // Every use must be inside the loop, and the loop inside the let's scope (or the
        // let already inside the loop).
        let all_uses = uses(&self.expr, x);
        let mut let_body = lp.clone();
        let_body.push(1);
        let dominated = |u: &Vec<usize>| u.starts_with(&loop_body);
        if let Some(u) = all_uses.iter().find(|u| !dominated(u)) {
            let outside = node_at(&self.expr, &u[..u.len().saturating_sub(1)])
                .map(|e| expr_to_string(e, Style::default()))
                .unwrap_or_default();
            return Err(Diagnostic::error(
                "E0828",
                format!("loop `{l}` does not enclose every use of `{x}`"),
            )
            .at(span, "cannot compute the stage there")
            .with_note(format!("a use outside the loop: {outside}"))
            .with_help("choose a loop that encloses all the stage's consumers (Halide: the compute level must dominate every use)"));
        }
        if all_uses.is_empty() {
            return Err(Diagnostic::error("E0828", format!("`{x}` is never used"))
                .at(span, "nothing to compute at")
                .with_help(format!(
                    "drop the stage with `rw unfold_let` or `compute_inline {x}`"
                )));
        }
        if loop_p.starts_with(&let_body) {
            // The loop is inside the let's body: push the let down to the loop's body.
            loop {
                let mut body = lp.clone();
                body.push(1);
                let rel = loop_p[body.len()..].to_vec();
                let k = rel.first().copied().unwrap_or(0);
                lp = self.sink_once(x, &lp, k, span)?;
                if rel.is_empty() {
                    break;
                }
            }
        } else if lp.starts_with(&loop_body) {
            // The let is deeper inside the loop: lift it up to the loop's body, or to
            // the chain of `let`s that starts there (each one's body the next), where
            // it is computed once per iteration too: a stage that reads an earlier
            // stage of the chain (a softmax's row sum reads the row's maximum) cannot
            // be lifted above it.
            let in_chain = |e: &Expr, lp: &[usize]| {
                lp.len() > loop_body.len()
                    && (loop_body.len()..lp.len()).all(|n| {
                        lp[n] == 1
                            && matches!(
                                node_at(e, &lp[..n]).map(|a| &a.kind),
                                Some(ExprKind::Let { .. })
                            )
                    })
            };
            while lp != loop_body && !in_chain(&self.expr, &lp) {
                lp = self.lift_once(x, &lp, span)?;
            }
        } else {
            return Err(Diagnostic::error(
                "E0828",
                format!("loop `{l}` is not in the scope of `let {x}`"),
            )
            .at(span, "cannot compute the stage there")
            .with_help("the loop must be one of the stage's consumers"));
        }
        Ok(lp)
    }

    /// The stage `let x` (at `lp`) shrunk to the window its body reads.
    fn shrink_to_window(&mut self, x: &str, lp: Vec<usize>, span: Span) -> Result<(), Diagnostic> {
        let dims = self.window_bounds(x, &lp, span)?;
        let d = dims.len();
        self.apply(Step {
            kind: StepKind::Window {
                var: ident(x, span),
                dims: dims
                    .iter()
                    .map(|(lo, hi)| (to_sindex(lo, span), to_sindex(hi, span)))
                    .collect(),
            },
            span,
        })?;
        self.apply(Step {
            kind: StepKind::Simpl,
            span,
        })?;
        // let x = gen w1 < …: … gen wd < …: [in range] * v[w1 + lo1]…[wd + lod] in …:
        // read `v` directly when it is a generator.
        let mut access = lp;
        access.push(0);
        access.extend(std::iter::repeat_n(0, d));
        access.push(0);
        // Down the chain of accesses to the innermost, whose tensor is `v`.
        access.extend(std::iter::repeat_n(0, d - 1));
        if let Some(ExprKind::Access { tensor, .. }) = self.node(&access).map(|n| &n.kind)
            && matches!(tensor.kind, ExprKind::Gen { .. })
        {
            let mut tensor_path = access;
            tensor_path.push(0);
            self.resolve_reads(tensor_path, span)?;
        }
        Ok(())
    }

    /// Whether the `let` at `lp` binds a scalar (its value has rank 0).
    fn stage_is_scalar(&self, lp: &[usize]) -> bool {
        let Some(ExprKind::Let { value, .. }) = self.node(lp).map(|n| &n.kind) else {
            return false;
        };
        sites(self.env.shapes, &self.expr)
            .iter()
            .find(|s| s.path == lp)
            .and_then(|s| {
                atl_lang::shapes::infer_with_lets(self.env.shapes, &mut s.ctx.lets.clone(), value)
                    .ok()
            })
            .is_some_and(|shape| shape.is_empty())
    }

    /// The window of `let x` (at `lp`) that its body reads, one `lo..hi` per leading
    /// dimension, over the variables around the let and the sizes: in each dimension,
    /// each read's index is bounded by the ranges of the loops between the let and the
    /// read (interval arithmetic on linear indices), and the reads must differ by
    /// constants so that the window's length is fixed. The first dimension is always
    /// windowed (or the directive is refused); a further dimension is windowed when every
    /// read indexes it, its bounds can be computed that way, and they are not the whole
    /// extent (trailing whole dimensions are left out). The `window` step proves every
    /// read inside the result.
    fn window_bounds(
        &self,
        x: &str,
        lp: &[usize],
        span: Span,
    ) -> Result<Vec<(IndexExpr, IndexExpr)>, Diagnostic> {
        let Some(ExprKind::Let { value, body, .. }) = self.node(lp).map(|n| &n.kind) else {
            unreachable!("the let was moved to this path")
        };
        let refuse = |msg: String| {
            Diagnostic::error("E0829", msg)
                .at(span, "no window computed")
                .with_help(format!(
                    "give the window by hand: `window {x} in LO..HI` (after moving the stage with the let-lifting rules)"
                ))
        };
        let mut reads: Vec<Read> = Vec::new();
        fn collect(e: &Expr, x: &str, loops: &mut Vec<Loop>, out: &mut Vec<Read>) {
            // A read `x[i1]…[ik]`: its indices, first dimension first.
            let mut indices = Vec::new();
            let mut cur = e;
            while let ExprKind::Access { tensor, index } = &cur.kind {
                indices.push(index.clone());
                cur = tensor;
            }
            if !indices.is_empty() && matches!(&cur.kind, ExprKind::Var(v) if v == x) {
                indices.reverse();
                out.push((indices, loops.clone()));
                return;
            }
            let binder = match &e.kind {
                ExprKind::Gen { var, lo, hi, .. }
                | ExprKind::Sum { var, lo, hi, .. }
                | ExprKind::MaxRed { var, lo, hi, .. } => {
                    Some((var.clone(), lo.clone(), hi.clone()))
                }
                _ => None,
            };
            if let Some(b) = binder.clone() {
                loops.push(b);
            }
            for c in e.children() {
                collect(c, x, loops, out);
            }
            if binder.is_some() {
                loops.pop();
            }
        }
        collect(body, x, &mut Vec::new(), &mut reads);
        if reads.is_empty() || reads.len() != uses(body, x).len() {
            return Err(Diagnostic::error(
                "E0829",
                format!("`{x}` is used as a whole tensor, not only read by index: a window would change it"),
            )
            .at(span, "no window computed")
            .with_help("read the stage element by element (`rw get_add`, `rw get_gen`, …) before computing it at a loop"));
        }
        // The stage's extents, to recognize a dimension that is read whole.
        let all = sites(self.env.shapes, &self.expr);
        let extents: Shape = all
            .iter()
            .find(|s| s.path == lp)
            .and_then(|s| {
                atl_lang::shapes::infer_with_lets(self.env.shapes, &mut s.ctx.lets.clone(), value)
                    .ok()
            })
            .unwrap_or_default();
        let depth = reads.iter().map(|(ix, _)| ix.len()).min().unwrap_or(1);
        let mut dims = Vec::new();
        for k in 0..depth {
            match self.dimension_bounds(x, &reads, k) {
                Ok(b) => dims.push(b),
                Err(msg) if k == 0 => return Err(refuse(msg)),
                // Windowing the leading dimensions alone is still a (larger) window.
                Err(_) => break,
            }
        }
        while dims.len() > 1 {
            let k = dims.len() - 1;
            let (lo, hi) = &dims[k];
            let whole = extents
                .get(k)
                .is_some_and(|n| poly::same(lo, &IndexExpr::Const(0)) && poly::same(hi, n));
            if !whole {
                break;
            }
            dims.pop();
        }
        Ok(dims)
    }

    /// The window `lo..hi` of dimension `k` (0 = rows) over the given reads, or why there
    /// is none.
    fn dimension_bounds(
        &self,
        x: &str,
        reads: &[Read],
        k: usize,
    ) -> Result<(IndexExpr, IndexExpr), String> {
        let mut lows: Vec<IndexExpr> = Vec::new();
        let mut highs: Vec<IndexExpr> = Vec::new();
        for (indices, loops) in reads {
            let index = &indices[k];
            let read = indices
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let (mut lo, mut hi) = (index.clone(), index.clone());
            for (v, vlo, vhi) in loops.iter().rev() {
                let nonlinear =
                    || format!("the read `{x}[{read}]` is not linear in the loop variable `{v}`");
                lo = extreme(&lo, v, vlo, vhi, false).ok_or_else(nonlinear)?;
                hi = extreme(&hi, v, vlo, vhi, true).ok_or_else(nonlinear)?;
            }
            lows.push(poly::normalize(&lo));
            highs.push(poly::normalize(&IndexExpr::add(hi, IndexExpr::Const(1))));
        }
        let pick = |v: &[IndexExpr], want_max: bool| -> Result<IndexExpr, String> {
            let mut best = v[0].clone();
            for e in &v[1..] {
                let d = Poly::from_index(&IndexExpr::sub(e.clone(), best.clone()));
                let Some(d) = d.as_const() else {
                    return Err(format!(
                        "the reads of `{x}` start at `{best}` and `{e}`{}, which differ by a non-constant amount: the window's length would not be fixed",
                        if k == 0 {
                            String::new()
                        } else {
                            format!(" in dimension {}", k + 1)
                        }
                    ));
                };
                if (want_max && d > 0) || (!want_max && d < 0) {
                    best = e.clone();
                }
            }
            Ok(best)
        };
        Ok((pick(&lows, false)?, pick(&highs, true)?))
    }

    /// `bound v to n`: the extent of loop `v` (or the size `v`) is provably `n`.
    fn bound(&mut self, v: &str, n: i64, span: Span) -> Result<(), Diagnostic> {
        let (what, goal, path) = if self.env.program.is_size(v) {
            (
                format!("size `{v}`"),
                Pred::cmp(CmpOp::Eq, IndexExpr::var(v), IndexExpr::Const(n)),
                Vec::new(),
            )
        } else {
            let (path, _) = find_loop(Some(self.env.program), &self.expr, v, span)?;
            let Some(ExprKind::Gen { lo, hi, .. } | ExprKind::Sum { lo, hi, .. }) =
                self.node(&path).map(|e| &e.kind)
            else {
                unreachable!("loop_path found a loop")
            };
            (
                format!("the extent of loop `{v}`"),
                Pred::cmp(
                    CmpOp::Eq,
                    poly::normalize(&IndexExpr::sub(hi.clone(), lo.clone())),
                    IndexExpr::Const(n),
                ),
                path,
            )
        };
        match self.prove_at(&path, &goal) {
            Verdict::Proved => self.apply(Step {
                kind: StepKind::Check,
                span,
            }),
            verdict => {
                let why = match verdict {
                    Verdict::Refuted(cex) => format!("counterexample: {cex}"),
                    Verdict::Unknown(r) => format!("the solver could not decide it ({r})"),
                    Verdict::Proved => String::new(),
                };
                Err(Diagnostic::error("E0830", format!("{what} is not provably {n}"))
                    .at(span, format!("cannot prove {goal}"))
                    .with_note(why)
                    .with_note("Halide's `bound` adds a run-time assertion and specializes the loop to it; an ATL program is a total function of its sizes, so a bound has to follow from the program's `assume`s")
                    .with_help(format!("state it as a fact: `assume {goal}`")))
            }
        }
    }
}

/// The least (`max = false`) or greatest value of `e` over `lo <= v < hi`, when `e` is
/// linear in `v` (and `v` occurs nowhere else, e.g. inside a division).
fn extreme(e: &IndexExpr, v: &str, lo: &IndexExpr, hi: &IndexExpr, max: bool) -> Option<IndexExpr> {
    let p = Poly::from_index(e);
    let var = IndexExpr::var(v);
    let mut coeff = 0;
    for (m, c) in p.terms() {
        if m.len() == 1 && m[0] == var {
            coeff = *c;
        } else if m.iter().any(|a| a.mentions(v)) {
            return None;
        }
    }
    if coeff == 0 {
        return Some(e.clone());
    }
    let at_top = (coeff > 0) == max;
    let value = if at_top {
        IndexExpr::sub(hi.clone(), IndexExpr::Const(1))
    } else {
        lo.clone()
    };
    Some(e.subst(v, &value))
}

/// Directives with no sound counterpart, and why.
fn no_counterpart(name: &str) -> Option<&'static str> {
    Some(match name {
        "compute_with" => {
            "`compute_with` fuses the loops of independent stages that write different outputs; a definition has one output, and Halide's own version was unsound and deprecated"
        }
        "align_bounds" | "bound_extent" | "align_extent" => {
            "these widen the computed region of a stage; ATL computes a stage exactly on its shape (use `window` or `compute_at` to shrink one)"
        }
        _ => return None,
    })
}

/// A directive as written: its name, its words and integers (commas dropped), its
/// span, and its entry in the step table.
struct Call<'c> {
    name: &'c ast::Ident,
    text: Vec<&'c str>,
    span: Span,
    info: &'static StepInfo,
}

impl Call<'_> {
    /// E0820 with the directive's usage text from the step table.
    fn usage(&self) -> Diagnostic {
        usage(self.name, self.info.usage)
    }

    /// An integer argument, or the usage error.
    fn int(&self, word: &str) -> Result<i64, Diagnostic> {
        word.parse().map_err(|_| self.usage())
    }
}

/// Expands one directive into the applier's steps.
type Handler = fn(&mut Applier<'_, '_>, &Call<'_>) -> Result<(), Diagnostic>;

/// The handler of every directive and loop annotation of the step table
/// ([`atl_lang::steps::STEPS`]); a test checks that the two lists agree.
const HANDLERS: &[(&str, Handler)] = &[
    ("split", split_directive),
    ("tile", tile_directive),
    ("reorder", reorder_directive),
    ("fuse", fuse_directive),
    ("compute_root", compute_root_directive),
    ("pack", pack_directive),
    ("stage", stage::stage_directive),
    ("boundary", boundary::boundary_directive),
    ("partition", partition::partition_directive),
    ("compute_inline", compute_inline_directive),
    ("compute_at", compute_at_directive),
    ("store_root", storage::storage_directive),
    ("store_at", storage::storage_directive),
    ("fold_storage", storage::storage_directive),
    ("bound", bound_directive),
    ("rfactor", reduce::rfactor_directive),
    ("grade", reduce::grade_directive),
    ("vector_width", vector_width::vector_width_directive),
    ("parallel", hints::annotation_directive),
    ("vectorize", hints::annotation_directive),
    ("unroll", hints::annotation_directive),
];

/// Expands and applies a directive; returns one outcome per expanded step.
pub fn apply_directive(
    env: &Env<'_>,
    expr: &Expr,
    name: &ast::Ident,
    args: &[DirectiveArg],
    span: Span,
    shape: &Shape,
    derived: &BTreeMap<String, Expr>,
) -> Result<Vec<StepOutcome>, Diagnostic> {
    let mut source_text = name.name.clone();
    for a in args {
        match a {
            DirectiveArg::Word(w) => source_text.push_str(&format!(" {}", w.name)),
            DirectiveArg::Int(v, _) => source_text.push_str(&format!(" {v}")),
            DirectiveArg::Comma(_) => source_text.push(','),
        }
    }
    let w = words(args);
    let text: Vec<&str> = w.iter().map(|(s, _)| s.as_str()).collect();
    let handler = steps::lookup(&name.name)
        .filter(|info| steps::is_directive(info.name))
        .and_then(|info| {
            HANDLERS
                .iter()
                .find(|(n, _)| *n == info.name)
                .map(|(_, h)| (info, *h))
        });
    let Some((info, handler)) = handler else {
        let other = name.name.as_str();
        if let Some(why) = no_counterpart(other) {
            return Err(Diagnostic::error(
                "E0831",
                format!("`{other}` has no sound counterpart here"),
            )
            .at(name.span, "refused")
            .with_note(why)
            .with_help("see docs/directives.md for what each Halide directive expands to"));
        }
        return Err(Diagnostic::error(
            "E0815",
            format!("`{other}` is not a step this version understands"),
        )
        .at(name.span, "unknown step")
        .with_help(steps::unknown_step_help()));
    };
    let mut applier = Applier {
        env,
        shape,
        derived,
        origin: source_text,
        expr: expr.clone(),
        outcomes: Vec::new(),
    };
    let call = Call {
        name,
        text,
        span,
        info,
    };
    handler(&mut applier, &call)?;
    Ok(applier.outcomes)
}

fn split_directive(applier: &mut Applier<'_, '_>, call: &Call<'_>) -> Result<(), Diagnostic> {
    let (var, k, outer, inner, rest) = match call.text.as_slice() {
        [var, "by", k, "into", outer, inner, rest @ ..] => (*var, *k, *outer, *inner, rest),
        _ => return Err(call.usage()),
    };
    let tail = match rest {
        [] => "guard",
        ["tail", t @ ("guard" | "round" | "shift" | "separate")] => *t,
        _ => return Err(call.usage()),
    };
    let k = call.int(k)?;
    if tail == "separate" {
        return applier.split_separate(var, k, outer, inner, call.span);
    }
    applier.split(var, k, outer, inner, tail, call.span)
}

/// `tile a, b by A, B`: the two splits (loops `ao, ai, bo, bi` in that order). With
/// `into ao, bo, ai, bi`, Halide's order: the tile loops outside the loops within a
/// tile — `ai` is exchanged with `b` before `b` is split, then `bi` with `ai` (each
/// exchange a `gen_swap`; the transposes keep the storage layout).
fn tile_directive(applier: &mut Applier<'_, '_>, call: &Call<'_>) -> Result<(), Diagnostic> {
    let (a, b, ka, kb, names) = match call.text.as_slice() {
        [a, b, "by", ka, kb] => (*a, *b, *ka, *kb, None),
        [a, b, "by", ka, kb, "into", ao, bo, ai, bi] => {
            (*a, *b, *ka, *kb, Some((*ao, *bo, *ai, *bi)))
        }
        _ => return Err(call.usage()),
    };
    let ka = call.int(ka)?;
    let kb = call.int(kb)?;
    let span = call.span;
    match names {
        None => {
            applier.split(a, ka, &format!("{a}o"), &format!("{a}i"), "guard", span)?;
            applier.split(b, kb, &format!("{b}o"), &format!("{b}i"), "guard", span)
        }
        Some((ao, bo, ai, bi)) => {
            applier.split(a, ka, ao, ai, "guard", span)?;
            exchange_loops(applier, ai, b, span)?;
            applier.split(b, kb, bo, bi, "guard", span)?;
            exchange_loops(applier, bi, ai, span)
        }
    }
}

/// `reorder a, b, …`: the named loops, which must be nested one in the other, end up
/// in the order given, outermost first (Halide's `reorder` lists them innermost
/// first). Two loops are exchanged directly; more are sorted by exchanging neighbours
/// (each exchange one checked step, as for two).
fn reorder_directive(applier: &mut Applier<'_, '_>, call: &Call<'_>) -> Result<(), Diagnostic> {
    let names = call.text.as_slice();
    if names.len() < 2 {
        return Err(call.usage());
    }
    for (k, a) in names.iter().enumerate() {
        if names[..k].contains(a) {
            return Err(Diagnostic::error(
                "E0820",
                format!("`reorder` names the loop `{a}` twice"),
            )
            .at(call.span, "a loop named twice")
            .with_help(call.info.usage));
        }
    }
    // Two loops already in the order given stay as they are (as in Halide): the
    // exchanges below only ever put a pair in the order asked for.
    // At most n(n-1)/2 exchanges of neighbours (bubble sort by the wanted position).
    for _ in 0..names.len() * names.len() {
        let expr = applier.expr.clone();
        let mut current: Vec<(usize, &str)> = Vec::with_capacity(names.len());
        for name in names {
            let (path, _) = find_loop(Some(applier.env.program), &expr, name, call.span)?;
            current.push((path.len(), name));
        }
        current.sort();
        let wanted = |name: &str| names.iter().position(|n| *n == name);
        // A loop directly inside a split's two loops that must end outside both of
        // them moves out of both at once: exchanged with the second first, it would
        // sit between them, where the two no longer form the split's flatten. (One
        // that ends between them, or after the second once they are exchanged, is
        // left to the exchanges of neighbours.)
        let path_of = |name: &str| find_loop(Some(applier.env.program), &expr, name, call.span);
        let mut out_of_split = None;
        for &(_, first) in &current {
            for &(_, inner) in &current {
                if wanted(inner) > wanted(first) {
                    continue;
                }
                let (first_path, inner_path) = (path_of(first)?.0, path_of(inner)?.0);
                if !across_split::is_out_of_split(&expr, &first_path, &inner_path) {
                    continue;
                }
                let second_named_before = current.iter().any(|&(_, second)| {
                    wanted(second) < wanted(inner)
                        && path_of(second).is_ok_and(|(p, _)| {
                            p.starts_with(&first_path) && inner_path.starts_with(&p)
                        })
                });
                if !second_named_before {
                    out_of_split = Some((first, inner));
                }
            }
        }
        if let Some((first, inner)) = out_of_split {
            exchange_loops(applier, first, inner, call.span)?;
            continue;
        }
        let Some(k) =
            (0..current.len() - 1).find(|&k| wanted(current[k].1) > wanted(current[k + 1].1))
        else {
            return Ok(());
        };
        exchange_loops(applier, current[k].1, current[k + 1].1, call.span)?;
    }
    Ok(())
}

/// E0824 for two loops that are not directly nested, saying what separates them when
/// one is inside the other: a loop (name it too) or a construct no exchange crosses.
fn not_directly_nested(
    applier: &Applier<'_, '_>,
    expr: &Expr,
    (a, pa): (&str, &[usize]),
    (b, pb): (&str, &[usize]),
    span: Span,
) -> Diagnostic {
    let mut help = "`reorder` exchanges loops nested one directly in the other: name every loop \
                    between them too (`reorder a, b, c`)"
        .to_string();
    let (outer, inner) = if pa.len() < pb.len() {
        (pa, pb)
    } else {
        (pb, pa)
    };
    let mut between = Vec::new();
    if inner.starts_with(outer) {
        for n in outer.len() + 1..inner.len() {
            if let Some(node) = node_at(expr, &inner[..n]) {
                between.push(node);
            }
        }
    }
    let shown: Vec<String> = between
        .iter()
        .filter(|n| !matches!(n.kind, ExprKind::Guard { .. }))
        .map(|n| construct(n))
        .collect();
    let loop_between = between
        .iter()
        .any(|n| matches!(n.kind, ExprKind::Gen { .. } | ExprKind::Sum { .. }));
    if !loop_between && !shown.is_empty() {
        help = if between
            .iter()
            .any(|n| matches!(n.kind, ExprKind::Binary { op: BinOp::Div, .. }))
        {
            "a division of the sum blocks the exchange (no rule moves `/` into a sum): write the \
             scale as a product (`* 0.125` for `/ 8`), which `reorder` moves into the sum"
                .to_string()
        } else if between
            .iter()
            .any(|n| matches!(n.kind, ExprKind::Let { .. }))
        {
            "a stage computed between them blocks the exchange: move it out first \
             (`compute_at`, `compute_root`)"
                .to_string()
        } else {
            "only guards, or a scale of a sum (`(sum d: …) * c`), may stand between the two \
             loops: rewrite the body so that the inner loop is directly inside the outer one"
                .to_string()
        };
    }
    let mut d = Diagnostic::error(
        "E0824",
        format!("`{a}` and `{b}` are not directly nested loops"),
    )
    .at(span, "cannot exchange");
    if !shown.is_empty() {
        d = d.with_note(format!("between them: {}", shown.join(", then ")));
    }
    d.with_note(crate::loops::listing_written(
        &crate::loops::loops(expr),
        Some(applier.env.program),
    ))
    .with_help(help)
}

/// The paths of the loops `a` and `b` in `expr`, the shallower first.
fn outer_and_inner(
    applier: &Applier<'_, '_>,
    expr: &Expr,
    a: &str,
    b: &str,
    span: Span,
) -> Result<(Vec<usize>, Vec<usize>), Diagnostic> {
    let (pa, _) = find_loop(Some(applier.env.program), expr, a, span)?;
    let (pb, _) = find_loop(Some(applier.env.program), expr, b, span)?;
    Ok(if pa.len() < pb.len() {
        (pa, pb)
    } else {
        (pb, pa)
    })
}

/// A scale between a `gen` and the `sum` directly in it (`gen j: (sum d: e) * c`, a
/// scaled dot product, possibly under guards) moves into the sum, so that the two loops are directly nested:
/// onto the first factor of a product (`scale_into_sum`: `(sum d: a * e) * c` is
/// `sum d: (a * c) * e`, so a tile scales the factor its inner loops do not read once),
/// else onto the body (`mul_sum_r`, `mul_sum_l` for `c * sum`). Graded `real`, as any
/// regrouping of a reduction's terms.
fn scale_into_inner_sum(
    applier: &mut Applier<'_, '_>,
    a: &str,
    b: &str,
    span: Span,
) -> Result<(), Diagnostic> {
    let expr = applier.expr.clone();
    let (outer, inner) = outer_and_inner(applier, &expr, a, b, span)?;
    // Guards may sit between the gen and the scale (a tile's tail guards).
    if inner.len() < outer.len() + 2
        || !inner.starts_with(&outer)
        || inner[outer.len()..inner.len() - 1].iter().any(|&c| c != 0)
        || (outer.len() + 1..inner.len() - 1).any(|n| {
            !matches!(
                node_at(&expr, &inner[..n]).map(|e| &e.kind),
                Some(ExprKind::Guard { .. })
            )
        })
    {
        return Ok(());
    }
    let scale = &inner[..inner.len() - 1];
    let (Some(ExprKind::Gen { .. }), Some(ExprKind::Binary { op: BinOp::Mul, .. })) = (
        node_at(&expr, &outer).map(|n| &n.kind),
        node_at(&expr, scale).map(|n| &n.kind),
    ) else {
        return Ok(());
    };
    let Some(ExprKind::Sum { body, .. }) = node_at(&expr, &inner).map(|n| &n.kind) else {
        return Ok(());
    };
    let rule = match (inner[inner.len() - 1], &body.kind) {
        (0, ExprKind::Binary { op: BinOp::Mul, .. }) => "scale_into_sum",
        (0, _) => "mul_sum_r",
        _ => "mul_sum_l",
    };
    applier.apply(rw(rule, false, scale.to_vec(), vec![], span))
}

/// Exchanges the directly nested loops `a` and `b` (one `*_swap` step, after lifting a
/// split's tail guard between them into the inner loop).
fn exchange_loops(
    applier: &mut Applier<'_, '_>,
    a: &str,
    b: &str,
    span: Span,
) -> Result<(), Diagnostic> {
    scale_into_inner_sum(applier, a, b, span)?;
    // Several guards stacked between the two loops (two splits' tail guards) are
    // first made one (`rw guard_and`).
    for _ in 0..8 {
        let expr = applier.expr.clone();
        let (outer, inner) = outer_and_inner(applier, &expr, a, b, span)?;
        let stacked = inner.len() > outer.len() + 2
            && inner.starts_with(&outer)
            && inner[outer.len()..].iter().all(|&c| c == 0)
            && (outer.len() + 1..inner.len()).all(|n| {
                matches!(
                    node_at(&expr, &inner[..n]).map(|e| &e.kind),
                    Some(ExprKind::Guard { .. })
                )
            });
        if !stacked {
            break;
        }
        let mut first = outer.clone();
        first.push(0);
        applier.apply(rw("guard_and", false, first, vec![], span))?;
    }
    // The program before the exchange (the guard lift below changes the applier's).
    let expr = &applier.expr.clone();
    let (pa, ga) = find_loop(Some(applier.env.program), expr, a, span)?;
    let (pb, gb) = find_loop(Some(applier.env.program), expr, b, span)?;
    // A guard between the two loops (a split's tail guard) is first moved into
    // the inner loop (`rw<- guard_lift_gen`/`guard_lift_sum`, whose scoping
    // refuses a guard that mentions the inner loop's variable).
    let guarded = |outer: &Vec<usize>, inner: &Vec<usize>| {
        inner.len() == outer.len() + 2
            && inner.starts_with(outer)
            && inner[outer.len()..] == [0, 0]
            && matches!(
                node_at(expr, &inner[..outer.len() + 1]).map(|n| &n.kind),
                Some(ExprKind::Guard { .. })
            )
    };
    let (pa, pb) = if guarded(&pa, &pb) || guarded(&pb, &pa) {
        let (outer, inner_gen) = if pa.len() < pb.len() {
            (&pa, gb)
        } else {
            (&pb, ga)
        };
        let mut guard = outer.clone();
        guard.push(0);
        let rule = if inner_gen {
            "guard_lift_gen"
        } else {
            "guard_lift_sum"
        };
        applier.apply(rw(rule, true, guard.clone(), vec![], span))?;
        let lift = |p: &Vec<usize>| {
            if p.len() > outer.len() + 1 {
                let mut q = p.clone();
                q.remove(outer.len() + 1);
                q
            } else {
                p.clone()
            }
        };
        (lift(&pa), lift(&pb))
    } else {
        (pa, pb)
    };
    let (outer_path, outer_gen, inner_gen) = if pb.len() == pa.len() + 1 && pb.starts_with(&pa) {
        (pa, ga, gb)
    } else if pa.len() == pb.len() + 1 && pa.starts_with(&pb) {
        (pb, gb, ga)
    } else if let Some(outer) = [(&pa, &pb), (&pb, &pa)]
        .into_iter()
        .find(|(o, i)| across_split::is_across_split(expr, o, i))
        .map(|(o, _)| o.clone())
    {
        // A split's `trunc_r(flatten(…))` between them (Halide's split, split,
        // reorder).
        return across_split::exchange_across_split(applier, &outer, span);
    } else if let Some(first) = [(&pa, &pb), (&pb, &pa)]
        .into_iter()
        .find(|(o, i)| across_split::is_out_of_split(expr, o, i))
        .map(|(o, _)| o.clone())
    {
        // The loop inside a split's two loops moves out of both (and of the
        // `trunc_r(flatten(…))`).
        return across_split::exchange_out_of_split(applier, &first, span);
    } else {
        return Err(not_directly_nested(applier, expr, (a, &pa), (b, &pb), span));
    };
    // An inner loop whose range depends on the outer loop (a triangular nest) has no
    // exchange: said here, in the user's names, rather than as the swap rule's
    // scoping refusal (which speaks of the rule's metavariables).
    if let (Some((outer_var, _, _)), Some((inner_var, lo, hi))) = (
        loop_binder(expr, &outer_path),
        loop_binder(expr, &[outer_path.as_slice(), &[0]].concat()),
    ) && (lo.mentions(outer_var) || hi.mentions(outer_var))
    {
        let (outer_name, inner_name) = if inner_var == b || b.ends_with(&format!(".{inner_var}")) {
            (a, b)
        } else {
            (b, a)
        };
        let (outer_kind, inner_kind) = (
            if outer_gen { "gen" } else { "sum" },
            if inner_gen { "gen" } else { "sum" },
        );
        return Err(Diagnostic::error(
            "E0839",
            format!("`{inner_name}` cannot move outside `{outer_name}`: its range depends on `{outer_name}`"),
        )
        .at(span, "no equivalent exchange")
        .with_note(format!(
            "the {inner_kind} over `{inner_name}` runs over {lo}..{hi}, inside the {outer_kind} over `{outer_name}`"
        ))
        .with_help(
            "a loop whose bounds depend on an enclosing loop (a triangular nest) cannot be \
             exchanged with it; give the inner loop a fixed range with a guard instead \
             (e.g. `sum k < n: [k < i + 1] * …`), which `reorder` can move",
        ));
    }
    let rule = match (outer_gen, inner_gen) {
        (true, true) => "gen_swap",
        (false, false) => "sum_swap",
        (true, false) => "gen_sum",
        (false, true) => "sum_gen",
    };
    applier.apply(rw(rule, false, outer_path, vec![], span))
}

fn fuse_directive(applier: &mut Applier<'_, '_>, call: &Call<'_>) -> Result<(), Diagnostic> {
    let [a, b, "into", t] = call.text.as_slice() else {
        return Err(call.usage());
    };
    applier.fuse(a, b, t, call.span)
}

/// `pack X by Q into XP`: the columns of the matrix `X` in zero-padded panels of `Q`
/// (`rw pack_cols around (X) with q := Q, x := XP`: `XP[jo][k][ji]` is
/// `X[k][jo*Q + ji]`, zero past the last column), computed once at the root
/// (`compute_root XP`), its reads resolved to `XP[j / Q][k][j % Q]` (`get_gen`), the
/// guards that hold dropped (`simpl_guard`). The schedule of the fast matmul starts so.
fn pack_directive(applier: &mut Applier<'_, '_>, call: &Call<'_>) -> Result<(), Diagnostic> {
    let [x, "by", q, "into", xp] = call.text.as_slice() else {
        return Err(call.usage());
    };
    let q = call.int(q)?;
    let span = call.span;
    let reads = boundary::reads_of(&applier.expr, x, &[]);
    match reads.first().map(|r| r.indices.len()) {
        None | Some(2) => {}
        // A batched operand `X[b, k, j]`: the matrix `X[b]` is packed, its copy
        // computed once per iteration of the batch loop `b`.
        Some(3) => return pack_batched(applier, x, q, xp, &reads, span),
        // `pack_cols` packs matrices: another rank is refused here, in the user's
        // words, rather than by the rule's shape condition.
        Some(_) => {
            let read = &reads[0];
            return Err(Diagnostic::error(
                "E0834",
                format!(
                    "`pack` copies matrices and batches of matrices: `{x}` is read with {} indices (`{}`)",
                    read.indices.len(),
                    boundary::shown(x, read)
                ),
            )
            .at(span, "no packed copy made")
            .with_help("pack a matrix read as `X[k, j]`, or a batch of them read as `X[b, k, j]`"));
        }
    }
    applier.apply(Step {
        kind: StepKind::Rewrite {
            backward: false,
            rule: ident("pack_cols", span),
            site: ast::SiteSelector {
                around: Some(Box::new(ast::SExpr {
                    kind: ast::SExprKind::Name(x.to_string()),
                    span,
                })),
                ..Default::default()
            },
            with: vec![
                (ident("q", span), int(q, span)),
                (ident("x", span), name_index(xp, span)),
            ],
        },
        span,
    })?;
    applier.compute_root(xp, span)?;
    resolve_packed_reads(applier, xp, span)
}

/// The packed copy's reads `(gen …: XP[…])[k][j]` resolved to `XP[j / Q][k][j % Q]`,
/// innermost generator first, then the guards that hold dropped.
fn resolve_packed_reads(
    applier: &mut Applier<'_, '_>,
    xp: &str,
    span: Span,
) -> Result<(), Diagnostic> {
    for _ in 0..16 {
        let expr = applier.expr.clone();
        let reads_xp = |e: &Expr| {
            let mut found = false;
            e.walk(&mut |n| found |= matches!(&n.kind, ExprKind::Var(v) if v == xp));
            found
        };
        let Some((mut path, ())) = find_path(&expr, &mut |e| match &e.kind {
            ExprKind::Access { tensor, .. }
                if matches!(tensor.kind, ExprKind::Gen { .. }) && reads_xp(tensor) =>
            {
                Some(())
            }
            _ => None,
        }) else {
            break;
        };
        path.push(0);
        applier.resolve_reads(path, span)?;
    }
    applier.apply(Step {
        kind: StepKind::SimplGuard,
        span,
    })
}

/// `pack X by Q into XP` of a batched operand read once as `X[b, k, j]`, `b` a loop
/// around the read: `pack_cols` of the matrix `X[b]` (`XP[jo][k][ji]` is
/// `X[b][k][jo*Q + ji]`), its copy computed at `b` (`compute_at XP at b`: one batch's
/// panels at a time, in cache while that batch is computed), its reads resolved.
fn pack_batched(
    applier: &mut Applier<'_, '_>,
    x: &str,
    q: i64,
    xp: &str,
    reads: &[boundary::TensorRead],
    span: Span,
) -> Result<(), Diagnostic> {
    let refuse = |why: String| {
        Diagnostic::error("E0834", why)
            .at(span, "no packed copy made")
            .with_help(
                "pack a batched operand read once as `X[b, k, j]`, with `b` a loop around the read",
            )
    };
    let [read] = reads else {
        return Err(refuse(format!(
            "`pack` of a batched operand packs one read: `{x}` is read {} times",
            reads.len()
        )));
    };
    let batch = match &read.indices[0] {
        IndexExpr::Var(b) if read.loops.iter().any(|(v, _, _)| v == b) => b.clone(),
        other => {
            return Err(refuse(format!(
                "`pack` of a batched operand needs its batch index to be a loop: `{}` has `{other}`",
                boundary::shown(x, read)
            )));
        }
    };
    // The matrix `X[b]`: the tensor's path without its last step.
    let mut matrix = read.base.clone();
    matrix.pop();
    applier.apply(rw(
        "pack_cols",
        false,
        matrix,
        vec![("q", int(q, span)), ("x", name_index(xp, span))],
        span,
    ))?;
    applier.place_at(xp, &batch, span)?;
    resolve_packed_reads(applier, xp, span)
}

fn compute_root_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let [x] = call.text.as_slice() else {
        return Err(call.usage());
    };
    applier.compute_root(x, call.span)
}

fn compute_inline_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let [x] = call.text.as_slice() else {
        return Err(call.usage());
    };
    applier.compute_inline(x, call.span)
}

fn compute_at_directive(applier: &mut Applier<'_, '_>, call: &Call<'_>) -> Result<(), Diagnostic> {
    let [x, "at", l] = call.text.as_slice() else {
        return Err(call.usage());
    };
    applier.compute_at(x, l, call.span)
}

fn bound_directive(applier: &mut Applier<'_, '_>, call: &Call<'_>) -> Result<(), Diagnostic> {
    let [v, "to", n] = call.text.as_slice() else {
        return Err(call.usage());
    };
    let n = call.int(n)?;
    applier.bound(v, n, call.span)
}

#[cfg(test)]
mod tests {
    use super::HANDLERS;
    use atl_lang::steps::{STEPS, is_directive};

    /// Every directive and loop annotation of the step table has a handler, and every
    /// handler belongs to one: adding a directive is a table entry plus its handler.
    #[test]
    fn every_directive_of_the_step_table_has_one_handler() {
        // `specialize` is a step kind of its own (its block of steps is parsed), run
        // by `specialize.rs`.
        for s in STEPS
            .iter()
            .filter(|s| is_directive(s.name) && s.name != "specialize")
        {
            let count = HANDLERS.iter().filter(|(n, _)| *n == s.name).count();
            assert_eq!(count, 1, "`{}` has {count} handlers", s.name);
        }
        for (name, _) in HANDLERS {
            assert!(
                is_directive(name),
                "handler `{name}` is not a directive of the step table"
            );
        }
    }
}
