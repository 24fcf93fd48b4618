//! `boundary X into XP`: Halide's `BoundaryConditions::constant_exterior` with the
//! bordered input staged once (`compute_root`). A read of `X` (an input or a stage of
//! rank 1 to 3), written with a guard that makes it provably in bounds
//! (`[0 <= q && q < W] * X[.., q]`, or a weaker guard where the other side is provable),
//! becomes an unguarded read of a copy `XP` of `X` with zeros around it, so that the
//! loops reading it need no test at the image's border.
//!
//! The halo is computed, as `compute_at` computes windows, from the read's indices over
//! the ranges of the loops around it (interval arithmetic on linear indices, guards
//! ignored, so a later reordering that moves a guard out still reads inside the copy):
//! before dimension k it is `max(0, -lo_k)`, after it `max(0, hi_k - n_k)`, each of which
//! must be a fixed amount of the sizes. Then:
//!
//! - `rw<- guard_true` at an unguarded read (a `[true]` guard covers every read);
//! - `rw pad_halo{1,2,3} with l1 := …, r1 := …, …, x := XP` at the guarded read: the
//!   rule's condition `covers` proves that the guard holds wherever the read is in
//!   bounds (outside, both sides are zero), and `lower`/`upper` that the new read is
//!   inside the copy;
//! - `compute_root XP`, then `simpl` (the read `XP[q + 1]` of `X[q - 1]` is `XP[q]`).
//!
//! Several reads (the blur's `img[y, x - 1]`, `img[y, x]`, `img[y, x + 1]`) share one
//! copy, whose halo covers them all (their reach must differ by constants): each read is
//! staged as above into a copy of its own, then the copies are brought together at the
//! root (`let_swap`), the later ones named as the first (`let_share`, whose values are
//! equal: the same rule with the same halos) and inlined (`unfold_let`).
//!
//! A guard that is stronger than the read's bounds (it drops reads that are in bounds) is
//! refused before any step, in the user's names: the copy would read those elements.

use atl_lang::ast::{Step, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{Expr, ExprKind};
use atl_lang::poly;
use atl_lang::span::Span;
use atl_solver::Verdict;

use super::{Applier, Call, Loop, extreme, ident, name_index, rw, to_sindex};
use crate::context::sites;

/// The deepest read the rules `pad_halo1` … `pad_halo3` stage.
const MAX_RANK: usize = 3;

/// A read of the tensor: the path of its outermost access, its indices (first dimension
/// first), the loops around it (outermost first) and the path of the tensor itself.
pub(super) struct TensorRead {
    pub(super) path: Vec<usize>,
    pub(super) indices: Vec<IndexExpr>,
    pub(super) loops: Vec<Loop>,
    pub(super) base: Vec<usize>,
}

/// Every read `x[i1]…[ik]` (an input or a `let` variable named `x`) of `e`, with `k` the
/// length of the chain of accesses (a use of `x` that is not read by index has `k = 0`),
/// except those in the values of the `let`s in `skip`.
pub(super) fn reads_of(e: &Expr, x: &str, skip: &[String]) -> Vec<TensorRead> {
    fn go(
        e: &Expr,
        x: &str,
        skip: &[String],
        path: &mut Vec<usize>,
        loops: &mut Vec<Loop>,
        out: &mut Vec<TensorRead>,
    ) {
        let mut indices = Vec::new();
        let mut cur = e;
        let mut base = path.clone();
        while let ExprKind::Access { tensor, index } = &cur.kind {
            indices.push(index.clone());
            cur = tensor;
            base.push(0);
        }
        if matches!(&cur.kind, ExprKind::Input(v) | ExprKind::Var(v) if v == x) {
            indices.reverse();
            out.push(TensorRead {
                path: path.clone(),
                indices,
                loops: loops.clone(),
                base,
            });
            return;
        }
        let binder = match &e.kind {
            ExprKind::Gen { var, lo, hi, .. } | ExprKind::Sum { var, lo, hi, .. } => {
                Some((var.clone(), lo.clone(), hi.clone()))
            }
            _ => None,
        };
        if let Some(b) = binder.clone() {
            loops.push(b);
        }
        for (k, c) in e.children().into_iter().enumerate() {
            // The reads inside a copy already made are the copy's own.
            if k == 0 && matches!(&e.kind, ExprKind::Let { var, .. } if skip.contains(var)) {
                continue;
            }
            path.push(k);
            go(c, x, skip, path, loops, out);
            path.pop();
        }
        if binder.is_some() {
            loops.pop();
        }
    }
    let mut out = Vec::new();
    go(e, x, skip, &mut Vec::new(), &mut Vec::new(), &mut out);
    out
}

/// A read as the user wrote it, `x[i1, …]`.
pub(super) fn shown(x: &str, read: &TensorRead) -> String {
    format!(
        "{x}[{}]",
        read.indices
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The least and the greatest-plus-one index of dimension `k` of a read, over the
/// ranges of the loops around it (innermost first).
fn reach(
    x: &str,
    read: &TensorRead,
    k: usize,
    span: Span,
) -> Result<(IndexExpr, IndexExpr), Diagnostic> {
    let index = &read.indices[k];
    let (mut lo, mut hi) = (index.clone(), index.clone());
    for (v, vlo, vhi) in read.loops.iter().rev() {
        let nonlinear = || {
            refuse(
                span,
                format!(
                    "the read `{}` is not linear in the loop variable `{v}`",
                    shown(x, read)
                ),
            )
        };
        lo = extreme(&lo, v, vlo, vhi, false).ok_or_else(nonlinear)?;
        hi = extreme(&hi, v, vlo, vhi, true).ok_or_else(nonlinear)?;
    }
    Ok((poly::normalize(&lo), poly::normalize(&hi)))
}

/// The lesser (or greater) of two bounds that differ by a constant.
fn pick(
    x: &str,
    a: IndexExpr,
    b: IndexExpr,
    max: bool,
    span: Span,
) -> Result<IndexExpr, Diagnostic> {
    let d = poly::Poly::from_index(&IndexExpr::sub(b.clone(), a.clone()));
    let Some(d) = d.as_const() else {
        return Err(refuse(
            span,
            format!(
                "the reads of `{x}` reach `{a}` and `{b}`, which differ by a non-constant amount"
            ),
        )
        .with_help("one copy serves reads whose offsets differ by constants"));
    };
    Ok(if (max && d > 0) || (!max && d < 0) {
        b
    } else {
        a
    })
}

fn refuse(span: Span, msg: String) -> Diagnostic {
    Diagnostic::error("E0833", msg).at(span, "no bordered copy made")
}

/// `boundary X into XP`.
pub(super) fn boundary_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let (x, xp, extra) = match call.text.as_slice() {
        [x, "into", xp] => (x, xp, 0),
        // `pad N`: N more zeros at the end of the innermost dimension (Halide's
        // `align_storage`-like row padding: another row stride, or room for a last
        // vector tile to read past the end).
        [x, "into", xp, "pad", n] => match n.parse::<i64>() {
            Ok(n) if (0..=4096).contains(&n) => (x, xp, n),
            _ => {
                return Err(Diagnostic::error(
                    "E0820",
                    format!("`pad {n}`: the padding is a number of elements from 0 to 4096"),
                )
                .at(call.span, "not a padding")
                .with_help(call.info.usage));
            }
        },
        _ => return Err(call.usage()),
    };
    applier.boundary(x, xp, extra, call.span)
}

impl Applier<'_, '_> {
    fn boundary(&mut self, x: &str, xp: &str, extra: i64, span: Span) -> Result<(), Diagnostic> {
        self.check_fresh(&[xp], span)?;
        let reads = reads_of(&self.expr, x, &[]);
        let Some(first) = reads.first() else {
            return Err(refuse(span, format!("`{x}` is not read in the program"))
                .with_help("name an input or a stage (`let`) that the program reads"));
        };
        let rank = first.indices.len();
        for read in &reads {
            let d = read.indices.len();
            if d == 0 || d > MAX_RANK || d != rank {
                return Err(refuse(
                    span,
                    if d == 0 {
                        format!("`{x}` is used as a whole tensor, not read by index")
                    } else if d != rank {
                        format!(
                            "the reads `{}` and `{}` have different numbers of indices",
                            shown(x, first),
                            shown(x, read)
                        )
                    } else {
                        format!(
                            "the read `{}` has {d} indices; `boundary` stages reads of at most {MAX_RANK}",
                            shown(x, read)
                        )
                    },
                ));
            }
        }
        // The extents of the dimensions read, from the tensor's shape at the first read.
        let shape = {
            let all = sites(self.env.shapes, &self.expr);
            let site = all
                .iter()
                .find(|s| s.path == first.base)
                .expect("the read is in the program");
            atl_lang::shapes::infer_with_lets(
                self.env.shapes,
                &mut site.ctx.lets.clone(),
                site.expr,
            )
            .map_err(|d| {
                refuse(span, format!("cannot infer the shape of `{x}`")).with_note(d.message)
            })?
        };
        // Every guard is checked before any step is taken.
        for read in &reads {
            self.check_guard(x, read, &shape, span)?;
        }
        // The halo of each dimension: how far the reads reach before 0 and past the
        // extent, over the loops around each.
        let mut halos = Vec::new();
        for (k, extent) in shape.iter().enumerate().take(rank) {
            let (mut least, mut greatest) = (None::<IndexExpr>, None::<IndexExpr>);
            for read in &reads {
                let (lo, hi) = reach(x, read, k, span)?;
                least = Some(match least {
                    None => lo,
                    Some(l) => pick(x, l, lo, false, span)?,
                });
                greatest = Some(match greatest {
                    None => hi,
                    Some(h) => pick(x, h, hi, true, span)?,
                });
            }
            let (lo, hi) = (least.expect("a read"), greatest.expect("a read"));
            let before = poly::normalize(&IndexExpr::Neg(Box::new(lo)));
            let after = poly::normalize(&IndexExpr::sub(
                IndexExpr::add(hi, IndexExpr::Const(1)),
                extent.clone(),
            ));
            let what = shown(x, first);
            halos.push((
                self.amount(&before, k + 1, "before", &what, span)?,
                self.amount(&after, k + 1, "after", &what, span)?,
            ));
        }
        if extra > 0
            && let Some((_, after)) = halos.last_mut()
        {
            *after = poly::normalize(&IndexExpr::add(after.clone(), IndexExpr::Const(extra)));
        }
        let mut with: Vec<(String, IndexExpr)> = Vec::new();
        for (k, (l, r)) in halos.iter().enumerate() {
            with.push((format!("l{}", k + 1), l.clone()));
            with.push((format!("r{}", k + 1), r.clone()));
        }
        // One copy per read, each computed at the root; the later ones are then
        // recognized as the first (`let_share`) and inlined (`unfold_let`).
        let mut names = Vec::new();
        for k in 0..reads.len() {
            let name = self.copy_name(xp, k, span);
            let read = reads_of(&self.expr, x, &names)
                .into_iter()
                .next()
                .expect("a read of the tensor is left");
            let guard_path = if self.guard_of(&read).is_some() {
                read.path[..read.path.len() - 1].to_vec()
            } else {
                self.apply(rw("guard_true", true, read.path.clone(), vec![], span))?;
                read.path.clone()
            };
            let mut step = rw(
                &format!("pad_halo{rank}"),
                false,
                guard_path,
                with.iter()
                    .map(|(k, v)| (k.as_str(), to_sindex(v, span)))
                    .collect(),
                span,
            );
            if let StepKind::Rewrite { with, .. } = &mut step.kind {
                with.push((ident("x", span), name_index(&name, span)));
            }
            self.apply(step)?;
            self.compute_root(&name, span)?;
            names.push(name);
        }
        for name in &names[1..] {
            self.share(xp, name, span)?;
        }
        self.apply(Step {
            kind: StepKind::Simpl,
            span,
        })
    }

    /// The guard directly around a read, if any.
    fn guard_of(&self, read: &TensorRead) -> Option<Pred> {
        let (last, parent) = read.path.split_last()?;
        match self.node(parent).map(|n| &n.kind) {
            Some(ExprKind::Guard { pred, .. }) if *last == 0 => Some(pred.clone()),
            _ => None,
        }
    }

    /// A read's guard must hold wherever the read is in bounds: otherwise it drops
    /// elements of `x` that the copy holds.
    fn check_guard(
        &self,
        x: &str,
        read: &TensorRead,
        shape: &[IndexExpr],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let Some(pred) = self.guard_of(read) else {
            return Ok(());
        };
        let parent = &read.path[..read.path.len() - 1];
        let atoms: Vec<Pred> = read
            .indices
            .iter()
            .zip(shape)
            .flat_map(|(i, n)| {
                [
                    Pred::cmp(CmpOp::Le, IndexExpr::Const(0), i.clone()),
                    Pred::cmp(CmpOp::Lt, i.clone(), n.clone()),
                ]
            })
            .collect();
        let bounds = atoms.iter().cloned().reduce(Pred::and).expect("an index");
        let covers = Pred::or(Pred::not(bounds), pred.clone());
        let verdict = self.prove_at(parent, &covers);
        if verdict == Verdict::Proved {
            return Ok(());
        }
        // For the message: the bounds that the loops do not already give.
        let shown_bounds = atoms
            .into_iter()
            .filter(|a| self.prove_at(parent, a) != Verdict::Proved)
            .reduce(Pred::and)
            .map_or_else(|| "true".to_string(), |p| p.to_string());
        let why = match verdict {
            Verdict::Refuted(cex) => format!("counterexample: {cex}"),
            Verdict::Unknown(r) => format!("the solver could not decide it ({r})"),
            Verdict::Proved => String::new(),
        };
        Err(refuse(
            span,
            format!(
                "the guard `[{pred}]` of the read `{}` is not the read's bounds",
                shown(x, read)
            ),
        )
        .with_note(format!(
            "it does not hold everywhere the read is in bounds ({shown_bounds}): {why}"
        ))
        .with_note(format!(
            "the copy of `{x}` is zero only outside its bounds, so the guard cannot be dropped"
        ))
        .with_help(format!(
            "guard the read by exactly its bounds (`[{shown_bounds}]`), and keep any further condition in a separate guard around it"
        )))
    }

    /// The name of the copy of the `k`-th read: `xp` for the first, then fresh
    /// variants (`xp_1`, …), which [`Applier::share`] folds into `xp`.
    pub(super) fn copy_name(&self, xp: &str, k: usize, span: Span) -> String {
        if k == 0 {
            return xp.to_string();
        }
        let mut n = format!("{xp}_{k}");
        while self.check_fresh(&[&n], span).is_err() {
            n.push('_');
        }
        n
    }

    /// `let xp = v in … let other = v in …`: `other` is brought next to `xp`
    /// (`let_swap` with the lets between), named as `xp` (`let_share`) and inlined
    /// (`unfold_let`).
    pub(super) fn share(&mut self, xp: &str, other: &str, span: Span) -> Result<(), Diagnostic> {
        loop {
            let path = super::let_path(&self.expr, other, span)?;
            let Some((&last, parent)) = path.split_last() else {
                break;
            };
            match self.node(parent).map(|n| &n.kind) {
                Some(ExprKind::Let { var, .. }) if last == 1 && var == xp => {
                    self.apply(rw("let_share", false, parent.to_vec(), vec![], span))?;
                    self.apply(rw("unfold_let", false, path, vec![], span))?;
                    return Ok(());
                }
                Some(ExprKind::Let { .. }) if last == 1 => {
                    self.apply(rw("let_swap", false, parent.to_vec(), vec![], span))?;
                }
                _ => break,
            }
        }
        Err(refuse(
            span,
            format!("the copies `{xp}` and `{other}` of two reads do not meet at the root"),
        ))
    }

    /// A halo: `max(0, e)` when `e` (in the sizes) is provably `<= 0` or `>= 0`.
    fn amount(
        &self,
        e: &IndexExpr,
        dim: usize,
        side: &str,
        read: &str,
        span: Span,
    ) -> Result<IndexExpr, Diagnostic> {
        if let Some(c) = e.as_const() {
            return Ok(IndexExpr::Const(c.max(0)));
        }
        let at_most_zero = Pred::cmp(CmpOp::Le, e.clone(), IndexExpr::Const(0));
        if self.prove_at(&[], &at_most_zero) == Verdict::Proved {
            return Ok(IndexExpr::Const(0));
        }
        let at_least_zero = Pred::cmp(CmpOp::Le, IndexExpr::Const(0), e.clone());
        if self.prove_at(&[], &at_least_zero) == Verdict::Proved {
            return Ok(e.clone());
        }
        Err(refuse(
            span,
            format!(
                "the read `{read}` reaches {e} elements {side} dimension {dim}, which is not provably a fixed amount (positive or zero)"
            ),
        )
        .with_help("state the missing fact about the sizes with `assume`"))
    }
}
