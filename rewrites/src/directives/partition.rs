//! `partition x`: Halide's loop partitioning. For the tile loop of an earlier split
//! (`gen io < cdiv(E, K)`) it separates the full tiles from the partial last one. For
//! any other `gen` loop it separates the boundary iterations from the steady state:
//! every guard inside the loop that is linear in `x` (`[0 <= x - 1]`, `[x + 1 < W]`, a
//! tile loop's `[0 <= 2 * yt + yr + ry - 1]`, at any depth, possibly several joined by
//! `&&`; the loops inside `x` taken at the ends of their ranges, so that the guard holds
//! for all of their iterations) bounds `x` from below or above, and the
//! loop is split with `split_gen` at the tightest lower bound and at the tightest upper
//! bound, both clamped into the loop's range so that the steps hold for every size (the
//! blur's `fused_boundary`: `k := 1`, then `k := max(1, H - 1)`). `simpl_guard` then
//! drops the guards that provably hold in the steady state (and those that provably
//! fail in the prologue and the epilogue). The directive only chooses the split points:
//! both `split_gen` conditions and every guard removal are proved by the engine.

use super::{Applier, Call, find_loop, find_path, rw, to_sindex};
use atl_lang::ast::{Step, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::{Expr, ExprKind};
use atl_lang::poly::{self, Poly};
use atl_lang::span::Span;
use atl_solver::Verdict;

use crate::context::node_at;

/// A bound on the partitioned variable that a guard's conjunct implies.
enum Bound {
    /// `x >= L`.
    Lower(IndexExpr),
    /// `x < U`.
    Upper(IndexExpr),
}

pub(super) fn partition_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let [var] = call.text.as_slice() else {
        return Err(call.usage());
    };
    let span = call.span;
    let (path, is_gen) = find_loop(Some(applier.env.program), &applier.expr, var, span)?;
    // The tile loop of a split (a `gen`, or a `sum` split by `split k by Q`): its full
    // tiles apart from the last one (`split_sum` for a reduction, graded `real` as the
    // split itself).
    let Some(ExprKind::Gen { lo, hi, .. } | ExprKind::Sum { lo, hi, .. }) =
        node_at(&applier.expr, &path).map(|n| &n.kind)
    else {
        unreachable!("find_loop finds gens and sums")
    };
    let hi_n = poly::normalize(hi);
    if let (IndexExpr::Bin(IndexOp::CDiv, e, k), Some(0)) = (&hi_n, lo.as_const())
        && k.as_const().is_some_and(|k| k >= 1)
    {
        let full = IndexExpr::bin(IndexOp::Div, (**e).clone(), (**k).clone());
        applier.apply(rw(
            if is_gen { "split_gen" } else { "split_sum" },
            false,
            path,
            vec![("k", to_sindex(&full, span))],
            span,
        ))?;
        return applier.apply(Step {
            kind: StepKind::SimplGuard,
            span,
        });
    }
    let Some(ExprKind::Gen {
        var: bound,
        lo,
        hi,
        body,
    }) = node_at(&applier.expr, &path).map(|n| n.kind.clone())
    else {
        return Err(
            Diagnostic::error("E0822", format!("`{var}` is a reduction (`sum`)"))
                .at(span, "a sum")
                .with_help(
                    "`partition` splits a `gen` loop at its boundary guards, or the tile loop of a split reduction (`split k by Q into ko, ki`, then `partition ko`)",
                ),
        );
    };
    boundary(applier, var, &bound, &path, lo, hi, &body, span)
}

/// The boundary partition of loop `gen bound in lo..hi: body` at `path` (`var` as the
/// user wrote it).
#[allow(clippy::too_many_arguments)]
fn boundary(
    applier: &mut Applier<'_, '_>,
    var: &str,
    bound: &str,
    path: &[usize],
    lo: IndexExpr,
    hi: IndexExpr,
    body: &Expr,
    span: Span,
) -> Result<(), Diagnostic> {
    // A split point must be a function of the sizes: a bound mentioning a loop variable
    // (an inner one, as in a split's tail guard `io * 8 + ii < n`, or an outer one, as
    // in a triangle's `x < y`) would give parts whose extents vary with that variable,
    // which a tensor's rows cannot.
    let program = applier.env.program;
    let is_size = |v: &str| program.is_size(v);
    let mut lowers = Vec::new();
    let mut uppers = Vec::new();
    let mut mentions = Vec::new();
    let mut guards = Vec::new();
    guards_within(body, &mut Vec::new(), &mut guards);
    for (c, inner) in &guards {
        if !c.mentions(bound) {
            continue;
        }
        match bound_of(c, bound, &is_size, inner) {
            Some(Bound::Lower(l)) => lowers.push(l),
            Some(Bound::Upper(u)) => uppers.push(u),
            None => mentions.push(c.to_string()),
        }
    }
    if lowers.is_empty() && uppers.is_empty() {
        let d = Diagnostic::error(
            "E0820",
            format!("`partition {var}`: no guard in the loop `{var}` bounds `{var}`"),
        )
        .at(span, "nothing to partition");
        let copies = bounded_copies(&applier.expr, var, &is_size);
        return Err(if !copies.is_empty() {
            // An earlier step copied the loop (a `partition` of an outer loop, a
            // separated tail): the name as written stays with the first copy, where the
            // guard may have been decided, and the others were renamed.
            let listed: Vec<String> = copies.iter().map(|c| format!("`{c}`")).collect();
            d.with_note(format!(
                "an earlier step made copies of the loop `{var}`: `{var}` is the first; {} {} \
                 the guards that bound {}",
                listed.join(", "),
                if copies.len() == 1 { "has" } else { "have" },
                if copies.len() == 1 { "it" } else { "them" }
            ))
            .with_help(format!("partition the copy: `partition {}`", copies[0]))
        } else if mentions.is_empty() {
            d.with_note(format!("no guard inside the loop depends on `{var}`"))
                .with_help(
                    "`partition` splits off the iterations where a boundary guard (`[0 <= x - 1]`, \
                     `[x + 1 < W]`) fails, or the last tile of a split's tile loop; `atl derive \
                     --trace` shows the program",
                )
        } else {
            d.with_note(format!(
                "the guards that mention `{var}` are not bounds `a * {var} + e < f` or \
                 `e <= a * {var} + f` (`e` and `f` linear in the sizes and in loops inside \
                 `{var}` whose ranges are functions of the sizes): {}",
                mentions.join(", ")
            ))
            .with_help("split the loop by hand with `rw split_gen with k := …`")
        });
    }
    let lower = applier.tightest(path, lowers, true);
    let upper = applier.tightest(path, uppers, false);
    let le = |a: &IndexExpr, b: &IndexExpr| Pred::cmp(CmpOp::Le, a.clone(), b.clone());
    // The start of the steady state: the lower bound clamped into lo..hi.
    let start = match lower {
        Some(l) if !applier.proves(path, &le(&l, &lo)) => {
            let mut a = l;
            if !applier.proves(path, &le(&lo, &a)) {
                a = IndexExpr::bin(IndexOp::Max, lo.clone(), a);
            }
            if !applier.proves(path, &le(&a, &hi)) {
                a = IndexExpr::bin(IndexOp::Min, a, hi.clone());
            }
            Some(a)
        }
        _ => None,
    };
    let from = start.clone().unwrap_or_else(|| lo.clone());
    // The end of the steady state: the upper bound clamped into start..hi.
    let end = match upper {
        Some(u) if !applier.proves(path, &le(&hi, &u)) => {
            let mut b = u;
            if !applier.proves(path, &le(&from, &b)) {
                b = IndexExpr::bin(IndexOp::Max, from.clone(), b);
            }
            if !applier.proves(path, &le(&b, &hi)) {
                b = IndexExpr::bin(IndexOp::Min, b, hi.clone());
            }
            Some(b)
        }
        _ => None,
    };
    if start.is_none() && end.is_none() {
        return Err(Diagnostic::error(
            "E0820",
            format!("`partition {var}`: the guards on `{var}` already hold in the whole loop"),
        )
        .at(span, "nothing to partition")
        .with_help("`simpl_guard` removes guards that provably hold"));
    }
    split_conjunctions(applier, path, bound, span)?;
    let mut steady = path.to_vec();
    if let Some(a) = start {
        applier.apply(rw(
            "split_gen",
            false,
            steady.clone(),
            vec![("k", to_sindex(&a, span))],
            span,
        ))?;
        steady.push(1);
    }
    if let Some(b) = end {
        applier.apply(rw(
            "split_gen",
            false,
            steady,
            vec![("k", to_sindex(&b, span))],
            span,
        ))?;
    }
    applier.apply(Step {
        kind: StepKind::SimplGuard,
        span,
    })
}

/// Splits every guard on a conjunction that mentions `bound` inside the loop at `path`
/// into nested guards (`rw<- guard_and`: `[p && q] * e` is `[p] * ([q] * e)`), so that
/// `simpl_guard` can drop a conjunct on the loop variable that holds in the steady state
/// while the others stay.
fn split_conjunctions(
    applier: &mut Applier<'_, '_>,
    path: &[usize],
    bound: &str,
    span: Span,
) -> Result<(), Diagnostic> {
    loop {
        let Some(node) = node_at(&applier.expr, path) else {
            return Ok(());
        };
        let found = find_path(node, &mut |e| match &e.kind {
            ExprKind::Guard {
                pred: pred @ Pred::And(..),
                ..
            } if pred.mentions(bound) => Some(()),
            _ => None,
        });
        let Some((sub, ())) = found else {
            return Ok(());
        };
        let mut at = path.to_vec();
        at.extend(sub);
        applier.apply(rw("guard_and", true, at, vec![], span))?;
    }
}

/// A loop inside the partitioned one, with its range.
type InnerLoop = (String, IndexExpr, IndexExpr);

/// Every conjunct of every guard inside `e`, with the loops between the partitioned
/// loop and the guard (outermost first).
/// The `gen` loops of `e` other than `var` named as the derivation engine renames its
/// copies (`{var}1`, `{var}2`, …: [`atl_lang::ir::is_fresh_of`]) whose bodies have a guard bounding them, in order.
fn bounded_copies(e: &Expr, var: &str, is_size: &dyn Fn(&str) -> bool) -> Vec<String> {
    let is_copy = |name: &str| name != var && atl_lang::ir::is_fresh_of(name, var);
    let mut found: Vec<String> = Vec::new();
    e.walk(&mut |n: &Expr| {
        if let ExprKind::Gen { var: v, body, .. } = &n.kind
            && is_copy(v)
            && !found.contains(v)
        {
            let mut guards = Vec::new();
            guards_within(body, &mut Vec::new(), &mut guards);
            if guards
                .iter()
                .any(|(c, inner)| c.mentions(v) && bound_of(c, v, is_size, inner).is_some())
            {
                found.push(v.clone());
            }
        }
    });
    found
}

fn guards_within(e: &Expr, inner: &mut Vec<InnerLoop>, out: &mut Vec<(Pred, Vec<InnerLoop>)>) {
    match &e.kind {
        ExprKind::Gen { var, lo, hi, body }
        | ExprKind::Sum { var, lo, hi, body }
        | ExprKind::MaxRed { var, lo, hi, body } => {
            inner.push((var.clone(), lo.clone(), hi.clone()));
            guards_within(body, inner, out);
            inner.pop();
        }
        ExprKind::Guard { pred, body } => {
            for c in pred.conjuncts() {
                out.push((c.clone(), inner.clone()));
            }
            guards_within(body, inner, out);
        }
        _ => {
            for child in e.children() {
                guards_within(child, inner, out);
            }
        }
    }
}

/// The bound on `x` under which the comparison `c` holds for every iteration of the
/// loops `inner` (those between `x`'s loop and the guard): `c` must be linear in `x`
/// and in those loops' variables, with every other term a function of the sizes, and
/// the inner loops' ranges functions of the sizes. Each inner variable is replaced by
/// the end of its range where it makes `c` hardest to satisfy, so the bound is where
/// the guard holds throughout the inner loops (a tiled stencil's
/// `[0 <= 2 * yt + yr + ry - 1]` holds for every `yr`, `ry` once `yt >= 1`).
fn bound_of(
    c: &Pred,
    x: &str,
    is_size: &dyn Fn(&str) -> bool,
    inner: &[InnerLoop],
) -> Option<Bound> {
    let Pred::Cmp(op, a, b) = c else {
        return None;
    };
    let one = IndexExpr::Const(1);
    // `p <= 0`, in integers.
    let p = match op {
        CmpOp::Le => IndexExpr::sub(a.clone(), b.clone()),
        CmpOp::Lt => IndexExpr::add(IndexExpr::sub(a.clone(), b.clone()), one),
        CmpOp::Ge => IndexExpr::sub(b.clone(), a.clone()),
        CmpOp::Gt => IndexExpr::add(IndexExpr::sub(b.clone(), a.clone()), one),
        CmpOp::Eq | CmpOp::Ne => return None,
    };
    let xv = IndexExpr::var(x);
    let coeff = linear_coefficient(&p, x)?;
    let mut rest = poly::normalize(&IndexExpr::sub(
        p,
        IndexExpr::mul(IndexExpr::Const(coeff), xv),
    ));
    // The largest value of `rest` over the inner loops, innermost first (an inner
    // range may only mention sizes, so the order does not matter).
    for (v, lo, hi) in inner.iter().rev() {
        if !rest.mentions(v) {
            continue;
        }
        if !lo.vars().iter().chain(hi.vars().iter()).all(|n| is_size(n)) {
            return None;
        }
        let k = linear_coefficient(&rest, v)?;
        let extreme = if k > 0 {
            IndexExpr::sub(hi.clone(), IndexExpr::Const(1))
        } else {
            lo.clone()
        };
        rest = poly::normalize(&rest.subst(v, &extreme));
    }
    if !rest.vars().iter().all(|v| is_size(v)) {
        return None;
    }
    let div = |e: IndexExpr, d: i64| {
        poly::normalize(&IndexExpr::bin(IndexOp::Div, e, IndexExpr::Const(d)))
    };
    match coeff {
        // x + rest <= 0: x < 1 - rest.
        1 => Some(Bound::Upper(poly::normalize(&IndexExpr::sub(
            IndexExpr::Const(1),
            rest,
        )))),
        // rest - x <= 0: x >= rest.
        -1 => Some(Bound::Lower(rest)),
        // a * x + rest <= 0 with a > 1: x <= floor(-rest / a).
        a if a > 1 => Some(Bound::Upper(poly::normalize(&IndexExpr::add(
            div(IndexExpr::sub(IndexExpr::Const(0), rest), a),
            IndexExpr::Const(1),
        )))),
        // rest - b * x <= 0 with b > 1: x >= ceil(rest / b).
        a if a < -1 => Some(Bound::Lower(div(
            IndexExpr::add(rest, IndexExpr::Const(-a - 1)),
            -a,
        ))),
        _ => None,
    }
}

/// The coefficient of `v` in `e` when `e` is linear in it (every term that mentions
/// `v` is `k * v`); `None` otherwise or when the coefficient is 0.
fn linear_coefficient(e: &IndexExpr, v: &str) -> Option<i64> {
    let poly = Poly::from_index(e);
    let var = IndexExpr::var(v);
    let mut coefficient = None;
    for (monomial, k) in poly.terms() {
        if !monomial.iter().any(|atom| atom.mentions(v)) {
            continue;
        }
        if monomial.as_slice() != [var.clone()] {
            return None;
        }
        coefficient = Some(*k);
    }
    coefficient.filter(|k| *k != 0)
}

impl Applier<'_, '_> {
    fn proves(&self, path: &[usize], goal: &Pred) -> bool {
        self.prove_at(path, goal) == Verdict::Proved
    }

    /// The tightest of several bounds: the greatest lower bound or the least upper
    /// bound, dropping those another provably implies; `max`/`min` of the rest.
    fn tightest(&self, path: &[usize], bounds: Vec<IndexExpr>, lower: bool) -> Option<IndexExpr> {
        let mut distinct: Vec<IndexExpr> = Vec::new();
        for b in bounds {
            if !distinct.iter().any(|d| poly::same(d, &b)) {
                distinct.push(b);
            }
        }
        let implied = |a: &IndexExpr, b: &IndexExpr| {
            // With lower bounds `a` is implied by `b` when a <= b; with upper, b <= a.
            let (x, y) = if lower { (a, b) } else { (b, a) };
            self.proves(path, &Pred::cmp(CmpOp::Le, x.clone(), y.clone()))
        };
        let mut kept: Vec<IndexExpr> = Vec::new();
        for (n, b) in distinct.iter().enumerate() {
            let dominated = distinct.iter().enumerate().any(|(m, o)| {
                // Of two bounds implying each other (equal ones), keep the first.
                m != n && implied(b, o) && (m < n || !implied(o, b))
            });
            if !dominated {
                kept.push(b.clone());
            }
        }
        let op = if lower { IndexOp::Max } else { IndexOp::Min };
        kept.into_iter().reduce(|a, b| IndexExpr::bin(op, a, b))
    }
}
