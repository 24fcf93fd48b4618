//! Bounded semantic checking of rules: instantiate a rule's metavariables with random
//! well-shaped expressions, let the engine apply the rule at the root (so the same
//! matcher, scoping and side-condition proofs are exercised as in a derivation), and
//! compare both sides with the reference interpreter at several size assignments.
//!
//! A rule passes if every instance the engine accepts evaluates equal on both sides —
//! bit for bit for `exact` rules, within rounding for `real` ones — and at least one
//! instance was accepted. Side conditions are proved symbolically for all sizes, so any
//! accepted instance may be compared at any sizes.
//!
//! The generator is deterministic (a splitmix64 stream from the given seed).

use std::collections::{BTreeMap, BTreeSet};

use atl_lang::ast;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::interp::{EvalOptions, Tensor, eval_def, input_shapes};
use atl_lang::ir::{BinOp, Expr, ExprKind};
use atl_lang::span::Span;
use atl_solver::Solver;

use crate::context::Env;
use crate::library::Library;
use crate::matcher::{self, Bindings};
use crate::rewrite::{Direction, RewriteRequest, rewrite};
use crate::rule::{Condition, EXAMPLE_PRELUDE, Grade, Rule, metas_of};

/// The outcome of checking one rule.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleCheck {
    /// `instances` random instances were accepted and agreed (out of `tried`).
    Passed { instances: usize, tried: usize },
    /// No random instance was accepted by the engine (the examples still apply).
    NoInstance { tried: usize },
    /// An accepted instance whose two sides differ: a wrong rule.
    Failed {
        lhs: String,
        rhs: String,
        sizes: String,
        detail: String,
    },
}

/// The shared deterministic generator; seeds keep their meaning across the project.
type Rng = atl_lang::rng::SplitMix64;

/// The example environment's inputs: name and shape.
fn inputs() -> Vec<(&'static str, Vec<IndexExpr>)> {
    let n = || IndexExpr::var("n");
    let m = || IndexExpr::var("m");
    vec![
        ("f", vec![n()]),
        ("v", vec![n()]),
        ("g", vec![n(), m()]),
        ("h", vec![m(), n()]),
        ("u", vec![m()]),
        ("t", vec![n(), m(), IndexExpr::Const(3)]),
        ("s", vec![]),
    ]
}

struct Generator {
    rng: Rng,
    fresh: usize,
}

impl Generator {
    fn index(&mut self, scope: &[String], depth: usize) -> IndexExpr {
        let leaf = |g: &mut Generator| -> IndexExpr {
            match g.rng.below(6) {
                0 | 1 if !scope.is_empty() => {
                    IndexExpr::var(scope[g.rng.below(scope.len())].clone())
                }
                0 => IndexExpr::var("n"),
                2 => IndexExpr::var("n"),
                3 => IndexExpr::var("m"),
                _ => IndexExpr::Const(g.rng.below(4) as i64),
            }
        };
        if depth == 0 || self.rng.chance(55) {
            return leaf(self);
        }
        let a = self.index(scope, depth - 1);
        match self.rng.below(4) {
            0 => IndexExpr::add(a, IndexExpr::Const(1 + self.rng.below(2) as i64)),
            1 => IndexExpr::sub(a, IndexExpr::Const(1)),
            2 => IndexExpr::mul(IndexExpr::Const(2), a),
            _ => IndexExpr::add(a, self.index(scope, depth - 1)),
        }
    }

    fn pred(&mut self, scope: &[String]) -> Pred {
        let op = [
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Eq,
            CmpOp::Ne,
            CmpOp::Gt,
            CmpOp::Ge,
        ][self.rng.below(6)];
        let p = Pred::cmp(op, self.index(scope, 1), self.index(scope, 1));
        if self.rng.chance(20) {
            Pred::and(
                p,
                Pred::cmp(CmpOp::Lt, self.index(scope, 1), IndexExpr::var("n")),
            )
        } else {
            p
        }
    }

    fn fresh(&mut self) -> String {
        self.fresh += 1;
        format!("r{}", self.fresh)
    }

    /// A random expression of the given shape, mentioning only `scope` as binders.
    fn expr(&mut self, shape: &[IndexExpr], scope: &mut Vec<String>, depth: usize) -> Expr {
        let matching: Vec<&'static str> = inputs()
            .into_iter()
            .filter(|(_, s)| {
                s.len() == shape.len()
                    && s.iter().zip(shape).all(|(a, b)| atl_lang::poly::same(a, b))
            })
            .map(|(n, _)| n)
            .collect();
        if shape.is_empty() {
            let choice = if depth == 0 {
                self.rng.below(3)
            } else {
                self.rng.below(8)
            };
            return match choice {
                0 => Expr::lit([0.5, -1.25, 2.0, 3.0][self.rng.below(4)]),
                1 => {
                    // Read an input at random indices (possibly out of range: zero).
                    let (name, s) = inputs()[self.rng.below(6)].clone();
                    let mut e = Expr::input(name);
                    for _ in 0..s.len() {
                        e = Expr::access(e, self.index(scope, 1));
                    }
                    e
                }
                2 => Expr::input("s"),
                3 | 4 => {
                    let op = [BinOp::Add, BinOp::Sub, BinOp::Mul][self.rng.below(3)];
                    let a = self.expr(shape, scope, depth - 1);
                    let b = self.expr(shape, scope, depth - 1);
                    Expr::binary(op, a, b)
                }
                5 => {
                    let p = self.pred(scope);
                    Expr::guard(p, self.expr(shape, scope, depth - 1))
                }
                6 => {
                    let v = self.fresh();
                    let hi = if self.rng.chance(50) {
                        IndexExpr::var("n")
                    } else {
                        IndexExpr::Const(1 + self.rng.below(3) as i64)
                    };
                    scope.push(v.clone());
                    let body = self.expr(shape, scope, depth - 1);
                    scope.pop();
                    Expr::sum(v, IndexExpr::Const(0), hi, body)
                }
                _ => Expr::synth(ExprKind::Neg(Box::new(self.expr(shape, scope, depth - 1)))),
            };
        }
        let choice = if depth == 0 { 0 } else { self.rng.below(6) };
        match choice {
            1 | 2 if !matching.is_empty() => Expr::input(matching[self.rng.below(matching.len())]),
            3 => {
                let p = self.pred(scope);
                Expr::guard(p, self.expr(shape, scope, depth - 1))
            }
            4 => {
                let a = self.expr(shape, scope, depth - 1);
                let b = self.expr(shape, scope, depth - 1);
                Expr::binary(BinOp::Add, a, b)
            }
            _ => {
                let v = self.fresh();
                scope.push(v.clone());
                let body = self.expr(&shape[1..], scope, depth.saturating_sub(1));
                scope.pop();
                Expr::gen_(v, IndexExpr::Const(0), shape[0].clone(), body)
            }
        }
    }

    fn shape(&mut self) -> Vec<IndexExpr> {
        let n = IndexExpr::var("n");
        let m = IndexExpr::var("m");
        match self.rng.below(7) {
            0 | 1 => vec![],
            2 => vec![n],
            3 => vec![m],
            4 => vec![n, m],
            5 => vec![m, n],
            _ => vec![n, m, IndexExpr::Const(3)],
        }
    }
}

/// Random bindings for the metavariables of the rule's left side (and its parameters).
fn random_bindings(rule: &Rule, g: &mut Generator) -> (Bindings, BTreeMap<String, IndexExpr>) {
    let mut b = Bindings::default();
    let mut lhs_metas = BTreeSet::new();
    metas_of(&rule.lhs, &mut lhs_metas);
    let scope_of = |m: &str| -> Vec<String> {
        rule.scopes
            .get(m)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    };
    // Index metavariables first: shape conditions may refer to them.
    for m in &lhs_metas {
        if let Some(p) = m.strip_prefix("pred:") {
            let scope = scope_of(m);
            b.preds.insert(p.to_string(), g.pred(&scope));
        }
    }
    let mut expr_metas = BTreeSet::new();
    rule.lhs.walk(&mut |e| {
        if let ExprKind::Meta(m) = &e.kind {
            expr_metas.insert(m.clone());
        }
    });
    for m in &lhs_metas {
        if m.starts_with("pred:") || expr_metas.contains(m) {
            continue;
        }
        let scope = scope_of(m);
        let v = if g.rng.chance(30) {
            IndexExpr::Const(1 + g.rng.below(4) as i64)
        } else {
            g.index(&scope, 1)
        };
        b.indices.insert(m.clone(), v);
    }
    let scalars = scalar_metas(&rule.lhs);
    for m in &expr_metas {
        let mut scope = scope_of(m);
        // A shape condition on this metavariable decides its leading dimensions; an
        // operand of `*` or `/` is a scalar.
        let mut shape = if scalars.contains(m) {
            Vec::new()
        } else {
            g.shape()
        };
        for c in &rule.conditions {
            if let Condition::Shape {
                meta, dims, open, ..
            } = c
                && meta == m
            {
                let mut s: Vec<IndexExpr> = dims
                    .iter()
                    .map(|d| {
                        matcher::instantiate_index(d, &b).unwrap_or_else(|| {
                            [
                                IndexExpr::var("n"),
                                IndexExpr::var("m"),
                                IndexExpr::Const(3),
                            ][g.rng.below(3)]
                            .clone()
                        })
                    })
                    .collect();
                if *open && g.rng.chance(40) {
                    s.push(IndexExpr::var("m"));
                }
                shape = s;
            }
        }
        let e = g.expr(&shape, &mut scope, 2);
        b.exprs.insert(m.clone(), e);
    }
    let mut params = BTreeMap::new();
    for p in &rule.params {
        if !lhs_metas.contains(p) {
            let v = if g.rng.chance(50) {
                IndexExpr::Const(g.rng.below(5) as i64)
            } else {
                g.index(&[], 1)
            };
            params.insert(p.clone(), v);
        }
    }
    (b, params)
}

/// Expression metavariables that the pattern forces to be scalars: operands of `*` and
/// `/`, and what sits in scalar position below them (guard bodies, negations, sums,
/// operands of `+`/`-`).
fn scalar_metas(p: &Expr) -> BTreeSet<String> {
    fn go(e: &Expr, scalar: bool, out: &mut BTreeSet<String>) {
        match &e.kind {
            ExprKind::Meta(m) if scalar => {
                out.insert(m.clone());
            }
            ExprKind::Binary {
                op: BinOp::Mul | BinOp::Div,
                lhs,
                rhs,
            } => {
                go(lhs, true, out);
                go(rhs, true, out);
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                go(lhs, scalar, out);
                go(rhs, scalar, out);
            }
            ExprKind::Guard { body, .. } | ExprKind::Sum { body, .. } => go(body, scalar, out),
            // A max-reduction's body is a scalar (E0416).
            ExprKind::MaxRed { body, .. } => go(body, true, out),
            ExprKind::Neg(a) => go(a, scalar, out),
            // A scalar function's arguments are scalars.
            ExprKind::Call { args, .. } => {
                for a in args {
                    go(a, true, out);
                }
            }
            ExprKind::Let { value, body, .. } => {
                go(value, false, out);
                go(body, scalar, out);
            }
            _ => {
                for c in e.children() {
                    go(c, false, out);
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    go(p, false, &mut out);
    out
}

fn show(e: &Expr) -> String {
    atl_lang::pretty::expr_to_string(e, Default::default())
}

/// Checks one rule with `attempts` random instances.
pub fn check_rule(
    rule: &Rule,
    library: &Library,
    solver: &Solver,
    attempts: usize,
    seed: u64,
) -> RuleCheck {
    let mut g = Generator {
        rng: Rng::new(seed ^ 0x5EED),
        fresh: 0,
    };
    let mut accepted = 0;
    // The declarations of the example environment, resolved once.
    let (base, _) = atl_lang::check_source(EXAMPLE_PRELUDE);
    let Some(base) = base else {
        return RuleCheck::NoInstance { tried: 0 };
    };
    for _ in 0..attempts {
        let (bindings, params) = random_bindings(rule, &mut g);
        let Ok(lhs) = matcher::instantiate(
            rule,
            &rule.lhs,
            &bindings,
            &BTreeSet::new(),
            &BTreeMap::new(),
        ) else {
            continue;
        };
        let mut program = base.program.clone();
        program.defs.push(atl_lang::ir::Def {
            name: "start".into(),
            name_span: Span::DUMMY,
            body: lhs.clone(),
            span: Span::DUMMY,
            hints: Vec::new(),
            vector_width: None,
            storage: Vec::new(),
        });
        let mut shapes = base.shapes.clone();
        let Ok(shape) = atl_lang::shapes::infer(&shapes, &lhs) else {
            continue; // ill-shaped instance
        };
        shapes.globals.insert("start".into(), shape);
        let env = Env {
            program: &program,
            shapes: &shapes,
            library,
            solver,
        };
        let with: Vec<(ast::Ident, ast::SIndex)> = params
            .iter()
            .filter_map(|(k, v)| {
                let parsed = atl_lang::parser::parse_index_ast(&v.to_string()).ok()?;
                Some((
                    ast::Ident {
                        name: k.clone(),
                        span: Span::DUMMY,
                    },
                    parsed,
                ))
            })
            .collect();
        let site = ast::SiteSelector {
            path: Some((Vec::new(), Span::DUMMY)),
            ..Default::default()
        };
        let rule_ident = ast::Ident {
            name: rule.name.clone(),
            span: Span::DUMMY,
        };
        let Ok(outcome) = rewrite(
            &env,
            &lhs,
            &RewriteRequest {
                rule: &rule_ident,
                direction: Direction::Forward,
                site: &site,
                with: &with,
                span: Span::DUMMY,
            },
        ) else {
            continue; // no match at the root, or a side condition that does not hold
        };
        // The shape discipline: an instance whose left side is ill-shaped cannot
        // occur. One whose right side is ill-shaped (or changes the shape) is refused
        // by the engine at every use (E0844, E0845), so it is no threat from a rule
        // proved in Rocq (e.g. `let_hoist_sum` over a backwards range); an unproved
        // rule (a user rule, a wrong rule) that produces one is suspicious and is
        // still evaluated below, where the interpreter refuses the negative extent
        // (E0508) and the rule fails.
        if crate::well_shaped::check_expr(&program, &shapes, solver, &lhs).is_err() {
            continue;
        }
        if rule.status == crate::rule::Status::Proved {
            let mut known = std::collections::HashSet::new();
            let result_well_shaped = crate::well_shaped::check_preserved(
                &program,
                &shapes,
                solver,
                &[],
                &lhs,
                &outcome.expr,
                false,
                Span::DUMMY,
                &rule.name,
            )
            .is_ok()
                && crate::well_shaped::check_step(
                    &program,
                    &shapes,
                    solver,
                    &outcome.expr,
                    Span::DUMMY,
                    &rule.name,
                    &mut known,
                )
                .is_ok();
            if !result_well_shaped {
                continue;
            }
        }
        program.defs.push(atl_lang::ir::Def {
            name: "result".into(),
            name_span: Span::DUMMY,
            body: outcome.expr.clone(),
            span: Span::DUMMY,
            hints: Vec::new(),
            vector_width: None,
            storage: Vec::new(),
        });
        for (n, m) in [(1, 1), (2, 3), (4, 2), (5, 5)] {
            let sizes: BTreeMap<String, i64> = [("n".to_string(), n), ("m".to_string(), m)].into();
            let options = EvalOptions {
                max_elements: 1 << 16,
                ..EvalOptions::default()
            };
            let Ok(in_shapes) = input_shapes(&program, &sizes, &options) else {
                continue;
            };
            let inputs: BTreeMap<String, Tensor> = in_shapes
                .into_iter()
                .enumerate()
                .map(|(k, (name, s))| {
                    (
                        name.clone(),
                        atl_lang::interp::random_input_named(
                            &program,
                            &name,
                            s,
                            &sizes,
                            7 + k as u64 + 13 * n as u64,
                        ),
                    )
                })
                .collect();
            let a = eval_def(&program, "start", &sizes, &inputs, &options);
            let b = eval_def(&program, "result", &sizes, &inputs, &options);
            let (a, b) = match (a, b) {
                (Ok(a), Ok(b)) => (a, b),
                // Both sides failing the same way (e.g. a division by zero) is agreement.
                (Err(x), Err(y)) if x.code == y.code => continue,
                (a, b) => {
                    return RuleCheck::Failed {
                        lhs: show(&lhs),
                        rhs: show(&outcome.expr),
                        sizes: format!("n={n}, m={m}"),
                        detail: format!(
                            "one side fails to evaluate: {:?} / {:?}",
                            a.err().map(|d| d.message),
                            b.err().map(|d| d.message)
                        ),
                    };
                }
            };
            let agree = a.shape == b.shape
                && a.data.iter().zip(&b.data).all(|(x, y)| match rule.grade {
                    Grade::Exact => x.to_bits() == y.to_bits(),
                    // Equal values agree, infinities too (an empty max-reduction's
                    // -inf), where the difference is NaN.
                    Grade::Real => x == y || (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs())),
                });
            if !agree {
                return RuleCheck::Failed {
                    lhs: show(&lhs),
                    rhs: show(&outcome.expr),
                    sizes: format!("n={n}, m={m}"),
                    detail: format!(
                        "left {:?} {:?}, right {:?} {:?}",
                        a.shape, a.data, b.shape, b.data
                    ),
                };
            }
        }
        accepted += 1;
    }
    if accepted == 0 {
        RuleCheck::NoInstance { tried: attempts }
    } else {
        RuleCheck::Passed {
            instances: accepted,
            tried: attempts,
        }
    }
}

/// Checks every rule of a library in parallel; results in library order.
pub fn check_library(
    library: &Library,
    solver: &Solver,
    attempts: usize,
    seed: u64,
) -> Vec<(String, RuleCheck)> {
    use rayon::prelude::*;
    library
        .rules()
        .par_iter()
        .enumerate()
        .map(|(k, rule)| {
            (
                rule.name.clone(),
                check_rule(
                    rule,
                    library,
                    solver,
                    attempts,
                    seed.wrapping_mul(1000).wrapping_add(k as u64),
                ),
            )
        })
        .collect()
}

/// Necessity of side conditions: for each index condition of `rule`, the rule with that
/// condition dropped is checked the same way. A dropped condition that yields no
/// counterexample is reported (by name): it may be stronger than needed, or the random
/// instances may just not reach the cases it excludes — a warning, not a verdict.
pub fn unnecessary_conditions(
    rule: &Rule,
    solver: &Solver,
    attempts: usize,
    seed: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, c) in rule.conditions.iter().enumerate() {
        if !matches!(c, Condition::Pred { .. }) {
            continue;
        }
        let mut weaker = rule.clone();
        weaker.conditions.remove(k);
        let lib = Library::from_rules([weaker.clone()]);
        if !matches!(
            check_rule(&weaker, &lib, solver, attempts, seed.wrapping_add(k as u64)),
            RuleCheck::Failed { .. }
        ) {
            out.push(c.name().to_string());
        }
    }
    out
}
