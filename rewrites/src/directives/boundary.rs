//! `boundary X into XP`: Halide's `BoundaryConditions::constant_exterior` with the
//! bordered input staged once (`compute_root`). The read of `X` (an input or a stage of
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
struct TensorRead {
    path: Vec<usize>,
    indices: Vec<IndexExpr>,
    loops: Vec<Loop>,
    base: Vec<usize>,
}

/// Every read `x[i1]…[ik]` (an input or a `let` variable named `x`) of `e`, with `k` the
/// length of the chain of accesses; a use of `x` that is not read by index has `k = 0`.
fn reads_of(e: &Expr, x: &str) -> Vec<TensorRead> {
    fn go(
        e: &Expr,
        x: &str,
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
            path.push(k);
            go(c, x, path, loops, out);
            path.pop();
        }
        if binder.is_some() {
            loops.pop();
        }
    }
    let mut out = Vec::new();
    go(e, x, &mut Vec::new(), &mut Vec::new(), &mut out);
    out
}

fn refuse(span: Span, msg: String) -> Diagnostic {
    Diagnostic::error("E0839", msg).at(span, "no bordered copy made")
}

/// `boundary X into XP`.
pub(super) fn boundary_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let [x, "into", xp] = call.text.as_slice() else {
        return Err(call.usage());
    };
    applier.boundary(x, xp, call.span)
}

impl Applier<'_, '_> {
    fn boundary(&mut self, x: &str, xp: &str, span: Span) -> Result<(), Diagnostic> {
        self.check_fresh(&[xp], span)?;
        let reads = reads_of(&self.expr, x);
        let read = match reads.as_slice() {
            [] => {
                return Err(refuse(span, format!("`{x}` is not read in the program"))
                    .with_help("name an input or a stage (`let`) that the program reads"));
            }
            [r] => r,
            more => {
                return Err(refuse(
                    span,
                    format!("`{x}` is read {} times; `boundary` stages one read", more.len()),
                )
                .with_note(
                    "each read would get its own copy: one copy shared by several reads is not implemented yet",
                )
                .with_help("give each read a copy of its own with `rw pad_halo1`, `pad_halo2` or `pad_halo3` at its guard (then `compute_root`), or read the tensor once"));
            }
        };
        let shown = || {
            format!(
                "{x}[{}]",
                read.indices
                    .iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let rank = read.indices.len();
        if rank == 0 || rank > MAX_RANK {
            return Err(refuse(
                span,
                if rank == 0 {
                    format!("`{x}` is used as a whole tensor, not read by index")
                } else {
                    format!(
                        "the read `{}` has {rank} indices; `boundary` stages reads of at most {MAX_RANK}",
                        shown()
                    )
                },
            ));
        }
        // The extents of the dimensions read, from the tensor's shape at the read.
        let all = sites(self.env.shapes, &self.expr);
        let site = all
            .iter()
            .find(|s| s.path == read.base)
            .expect("the read is in the program");
        let shape = atl_lang::shapes::infer_with_lets(
            self.env.shapes,
            &mut site.ctx.lets.clone(),
            site.expr,
        )
        .map_err(|d| {
            refuse(span, format!("cannot infer the shape of `{x}`")).with_note(d.message)
        })?;
        drop(all);
        // The halo of each dimension: how far the read reaches before 0 and past the
        // extent, over the loops around it.
        let mut halos = Vec::new();
        for (k, index) in read.indices.iter().enumerate() {
            let (mut lo, mut hi) = (index.clone(), index.clone());
            for (v, vlo, vhi) in read.loops.iter().rev() {
                let nonlinear = || {
                    refuse(
                        span,
                        format!(
                            "the read `{}` is not linear in the loop variable `{v}`",
                            shown()
                        ),
                    )
                };
                lo = extreme(&lo, v, vlo, vhi, false).ok_or_else(nonlinear)?;
                hi = extreme(&hi, v, vlo, vhi, true).ok_or_else(nonlinear)?;
            }
            let before = poly::normalize(&IndexExpr::Neg(Box::new(lo)));
            let after = poly::normalize(&IndexExpr::sub(
                IndexExpr::add(hi, IndexExpr::Const(1)),
                shape[k].clone(),
            ));
            let dim = k + 1;
            halos.push((
                self.amount(&before, dim, "before", &shown(), span)?,
                self.amount(&after, dim, "after", &shown(), span)?,
            ));
        }
        // The guard directly around the read, if any; `[true]` otherwise.
        let parent = &read.path[..read.path.len().saturating_sub(1)];
        let guarded = !read.path.is_empty()
            && read.path.last() == Some(&0)
            && matches!(
                self.node(parent).map(|n| &n.kind),
                Some(ExprKind::Guard { .. })
            );
        let guard_path = if guarded {
            let Some(ExprKind::Guard { pred, .. }) = self.node(parent).map(|n| &n.kind) else {
                unreachable!("checked above")
            };
            // The guard must hold wherever the read is in bounds: otherwise it drops
            // elements of `x` that the copy would read.
            let bounds = read
                .indices
                .iter()
                .zip(&shape)
                .map(|(i, n)| {
                    Pred::and(
                        Pred::cmp(CmpOp::Le, IndexExpr::Const(0), i.clone()),
                        Pred::cmp(CmpOp::Lt, i.clone(), n.clone()),
                    )
                })
                .reduce(Pred::and)
                .expect("at least one index");
            // For the message: the bounds that the loops do not already give.
            let mut needed = Vec::new();
            for (i, n) in read.indices.iter().zip(&shape) {
                for atom in [
                    Pred::cmp(CmpOp::Le, IndexExpr::Const(0), i.clone()),
                    Pred::cmp(CmpOp::Lt, i.clone(), n.clone()),
                ] {
                    if self.prove_at(parent, &atom) != Verdict::Proved {
                        needed.push(atom);
                    }
                }
            }
            let shown_bounds = needed
                .into_iter()
                .reduce(Pred::and)
                .map_or_else(|| "true".to_string(), |p| p.to_string());
            let covers = Pred::or(Pred::not(bounds.clone()), pred.clone());
            match self.prove_at(parent, &covers) {
                Verdict::Proved => {}
                verdict => {
                    let why = match verdict {
                        Verdict::Refuted(cex) => format!("counterexample: {cex}"),
                        Verdict::Unknown(r) => format!("the solver could not decide it ({r})"),
                        Verdict::Proved => String::new(),
                    };
                    return Err(refuse(
                        span,
                        format!(
                            "the guard `[{pred}]` of the read `{}` is not the read's bounds",
                            shown()
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
                    )));
                }
            }
            parent.to_vec()
        } else {
            self.apply(rw("guard_true", true, read.path.clone(), vec![], span))?;
            read.path.clone()
        };
        let mut with: Vec<(String, IndexExpr)> = Vec::new();
        for (k, (l, r)) in halos.iter().enumerate() {
            with.push((format!("l{}", k + 1), l.clone()));
            with.push((format!("r{}", k + 1), r.clone()));
        }
        let rule = format!("pad_halo{rank}");
        let mut step = rw(
            &rule,
            false,
            guard_path,
            with.iter()
                .map(|(k, v)| (k.as_str(), to_sindex(v, span)))
                .collect(),
            span,
        );
        if let StepKind::Rewrite { with, .. } = &mut step.kind {
            with.push((ident("x", span), name_index(xp, span)));
        }
        self.apply(step)?;
        self.compute_root(xp, span)?;
        self.apply(Step {
            kind: StepKind::Simpl,
            span,
        })
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
