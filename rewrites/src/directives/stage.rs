//! `stage X into XT order 1, 0`: a copy of the matrix `X` stored transposed, computed
//! once at the root, which the program then reads instead of `X` (Halide's
//! `X.in().reorder_storage(…)`, or a BLAS kernel's transposed operand). `A · Bᵀ` reads
//! `B[j, k]` along `k` for each `j`; after `stage B into BT order 1, 0` it reads
//! `BT[k, j]`, contiguous along `j`, so that the `j` loop can be a vector loop.
//!
//! `order` lists, for each dimension of the copy (outermost first), the dimension of `X`
//! it holds. For a matrix that is `1, 0` (the transpose) or `0, 1` (a plain copy). Each
//! read `X[a, b]` is rewritten by the rules, none of them new:
//!
//! - `rw<- transpose_transpose` at `X`: `transpose(transpose(X))[a][b]`;
//! - `rw transpose_def` at the inner transpose: `transpose(gen i < c: gen j < r: X[j][i])`;
//! - `rw let_intro with x := XT` there, `rw transpose_let` at the outer transpose:
//!   `(let XT = gen … in transpose(XT))[a][b]`;
//! - `compute_root XT` for an input; for a stage, `XT` is lifted to just inside `let X`
//!   (a stage computed per iteration of a loop gets its copy there too); then
//!   `rw get_transpose` at the read: `XT[b][a]`.
//!
//! (`0, 1` is `let_intro` and `compute_root` alone.) Several reads of `X` share one copy:
//! each is staged into a copy of its own, and the later copies are recognized as the
//! first (`let_share`, the same rules give the same value) and inlined.

use atl_lang::diag::Diagnostic;
use atl_lang::ir::ExprKind;
use atl_lang::span::Span;

use super::boundary::{reads_of, shown};
use super::{Applier, Call, find_path, let_path, name_index, rw};

fn refuse(span: Span, msg: String) -> Diagnostic {
    Diagnostic::error("E0834", msg).at(span, "no staged copy made")
}

/// `stage X into XT order P0, P1`.
pub(super) fn stage_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let [x, "into", xt, "order", order @ ..] = call.text.as_slice() else {
        return Err(call.usage());
    };
    let order: Vec<usize> = order
        .iter()
        .map(|w| w.parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| call.usage())?;
    let transposed = match order.as_slice() {
        [0, 1] => false,
        [1, 0] => true,
        _ => {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            let permutation = sorted.iter().copied().eq(0..order.len());
            return Err(refuse(
                call.span,
                if permutation {
                    format!(
                        "`order {}`: `stage` re-orders the storage of matrices only (`order 1, 0`: transposed; `order 0, 1`: a plain copy)",
                        join(&order)
                    )
                } else {
                    format!(
                        "`order {}` is not a permutation of the dimensions 0 to {}",
                        join(&order),
                        order.len().saturating_sub(1)
                    )
                },
            )
            .with_help(call.info.usage));
        }
    };
    applier.stage(x, xt, transposed, call.span)
}

fn join(order: &[usize]) -> String {
    order
        .iter()
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Applier<'_, '_> {
    /// The copy `xt` of `x` is computed once: at the root for an input, and right
    /// inside `let x` for a stage (lifted out of every construct between them, so that
    /// a stage computed per iteration of a loop gets its copy per iteration too).
    fn place_copy(&mut self, x: &str, xt: &str, span: Span) -> Result<(), Diagnostic> {
        if let_path(&self.expr, x, span).is_err() {
            return self.compute_root(xt, span);
        }
        let mut path = let_path(&self.expr, xt, span)?;
        while let Some((&k, parent)) = path.split_last() {
            match self.node(parent).map(|n| &n.kind) {
                Some(ExprKind::Let { var, .. }) if var == x && k == 1 => break,
                _ => path = self.lift_once(xt, &path, span)?,
            }
        }
        Ok(())
    }

    fn stage(&mut self, x: &str, xt: &str, transposed: bool, span: Span) -> Result<(), Diagnostic> {
        self.check_fresh(&[xt], span)?;
        let reads = reads_of(&self.expr, x, &[]);
        if reads.is_empty() {
            return Err(refuse(span, format!("`{x}` is not read in the program"))
                .with_help("name an input or a stage (`let`) that the program reads"));
        }
        for read in &reads {
            if read.indices.len() != 2 {
                return Err(refuse(
                    span,
                    if read.indices.is_empty() {
                        format!("`{x}` is used as a whole tensor, not read by index")
                    } else {
                        format!(
                            "the read `{}` has {} indices; `stage` copies matrices, read with 2",
                            shown(x, read),
                            read.indices.len()
                        )
                    },
                ));
            }
        }
        let mut names: Vec<String> = Vec::new();
        for k in 0..reads.len() {
            let name = self.copy_name(xt, k, span);
            let read = reads_of(&self.expr, x, &names)
                .into_iter()
                .next()
                .expect("a read of the tensor is left");
            let base = read.base.clone();
            let with_name = || vec![("x", name_index(&name, span))];
            if transposed {
                let mut inner = base.clone();
                inner.push(0);
                self.apply(rw("transpose_transpose", true, base.clone(), vec![], span))?;
                self.apply(rw("transpose_def", false, inner.clone(), vec![], span))?;
                self.apply(rw("let_intro", false, inner, with_name(), span))?;
                self.apply(rw("transpose_let", false, base, vec![], span))?;
            } else {
                self.apply(rw("let_intro", false, base, with_name(), span))?;
            }
            self.place_copy(x, &name, span)?;
            if transposed {
                // The read `transpose(XT)[a][b]` becomes `XT[b][a]`.
                let expr = self.expr.clone();
                let found = find_path(&expr, &mut |e| match &e.kind {
                    ExprKind::Access { tensor, .. } => match &tensor.kind {
                        ExprKind::Access { tensor, .. } => match &tensor.kind {
                            ExprKind::Transpose(t) if matches!(&t.kind, ExprKind::Var(v) if *v == name) => {
                                Some(())
                            }
                            _ => None,
                        },
                        _ => None,
                    },
                    _ => None,
                });
                let Some((path, ())) = found else {
                    return Err(refuse(
                        span,
                        format!(
                            "the read `{}` did not become a read of `{name}`",
                            shown(x, &read)
                        ),
                    ));
                };
                self.apply(rw("get_transpose", false, path, vec![], span))?;
            }
            names.push(name);
        }
        for name in &names[1..] {
            self.share(xt, name, span)?;
        }
        Ok(())
    }
}
