//! Run-time shapes, symbolically: the shape every node has when the reference
//! interpreter evaluates it.
//!
//! The checker's shapes (`atl_lang::shapes`) are polynomials such as `n - 5`; the
//! interpreter clamps an empty range to length 0, so at `n = 1` the tensor
//! `concat(gen i < n - 5: …, f)` has 1 element, not `2n - 5 = -3`. Lowering must
//! allocate and index exactly like the interpreter, so it computes shapes bottom-up
//! with every `gen` extent clamped (`max(0, hi - lo)`, or `hi - lo` where the solver
//! proves it non-negative). The rank is always the checker's.

use atl_lang::diag::Diagnostic;
use atl_lang::index::{IndexExpr, IndexOp};
use atl_lang::ir::{BinOp, Expr, ExprKind};
use atl_lang::poly::normalize;
use atl_lang::reshape::{DimArith, ReshapeOp, result_shape};
use atl_lang::shapes::{Shape, ShapeEnv};

use crate::normalize::internal;
use crate::prove::Prover;

/// The run-time shape of `e`; `lets` holds the run-time shapes of enclosing `let`s
/// (innermost last).
pub(crate) fn cshape(
    e: &Expr,
    globals: &ShapeEnv,
    lets: &mut Vec<(String, Shape)>,
    prover: &Prover<'_>,
) -> Result<Shape, Diagnostic> {
    Ok(match &e.kind {
        ExprKind::Lit(_) | ExprKind::Coord(_) => Vec::new(),
        ExprKind::Input(x) => globals
            .globals
            .get(x)
            .cloned()
            .ok_or_else(|| internal(format!("no shape for input `{x}`")))?,
        ExprKind::DefRef(x) => {
            return Err(internal(format!("definition `{x}` not bound by a let")));
        }
        ExprKind::Var(x) => lets
            .iter()
            .rev()
            .find(|(v, _)| v == x)
            .map(|(_, s)| s.clone())
            .ok_or_else(|| internal(format!("no shape for `{x}`")))?,
        ExprKind::Meta(m) => return Err(internal(format!("metavariable `?{m}`"))),
        ExprKind::Gen { lo, hi, body, .. } => {
            let mut s = vec![prover.clamp(&IndexExpr::sub(hi.clone(), lo.clone()))];
            s.extend(cshape(body, globals, lets, prover)?);
            s
        }
        ExprKind::Sum { body, .. } | ExprKind::Guard { body, .. } => {
            cshape(body, globals, lets, prover)?
        }
        ExprKind::Let { var, value, body } => {
            let vs = cshape(value, globals, lets, prover)?;
            lets.push((var.clone(), vs));
            let r = cshape(body, globals, lets, prover);
            lets.pop();
            r?
        }
        ExprKind::Access { tensor, .. } => {
            let s = cshape(tensor, globals, lets, prover)?;
            if s.is_empty() {
                return Err(internal("an access into a scalar"));
            }
            s[1..].to_vec()
        }
        ExprKind::Neg(a) => cshape(a, globals, lets, prover)?,
        ExprKind::Call { .. } | ExprKind::MaxRed { .. } => Vec::new(),
        ExprKind::Binary { op, lhs, .. } => match op {
            BinOp::Add | BinOp::Sub => cshape(lhs, globals, lets, prover)?,
            BinOp::Mul | BinOp::Div => Vec::new(),
        },
        ExprKind::Concat(a, b) => {
            let sa = cshape(a, globals, lets, prover)?;
            let sb = cshape(b, globals, lets, prover)?;
            if sa.is_empty() || sb.is_empty() {
                return Err(internal("concat of scalars"));
            }
            rule(prover, ReshapeOp::Concat, &[&sa, &sb], None)?
        }
        ExprKind::Transpose(a) => {
            let s = cshape(a, globals, lets, prover)?;
            if s.len() < 2 {
                return Err(internal("transpose of rank < 2"));
            }
            rule(prover, ReshapeOp::Transpose, &[&s], None)?
        }
        ExprKind::Flatten(a) => {
            let s = cshape(a, globals, lets, prover)?;
            if s.len() < 2 {
                return Err(internal("flatten of rank < 2"));
            }
            rule(prover, ReshapeOp::Flatten, &[&s], None)?
        }
        ExprKind::Amount { op, amount, arg } => {
            let s = cshape(arg, globals, lets, prover)?;
            if s.is_empty() {
                return Err(internal("reshape of a scalar"));
            }
            let k = normalize(amount);
            rule(prover, ReshapeOp::Amount(*op), &[&s], Some(&k))?
        }
    })
}

/// Lowering's dimension arithmetic: normalized index expressions, with `split`'s row
/// count clamped at 0 like every run-time extent.
struct RunTime<'p, 'q>(&'p Prover<'q>);

impl DimArith for RunTime<'_, '_> {
    type Dim = IndexExpr;

    fn add(&self, a: &IndexExpr, b: &IndexExpr) -> Option<IndexExpr> {
        Some(normalize(&IndexExpr::add(a.clone(), b.clone())))
    }

    fn sub(&self, a: &IndexExpr, b: &IndexExpr) -> Option<IndexExpr> {
        Some(normalize(&IndexExpr::sub(a.clone(), b.clone())))
    }

    fn mul(&self, a: &IndexExpr, b: &IndexExpr) -> Option<IndexExpr> {
        Some(normalize(&IndexExpr::mul(a.clone(), b.clone())))
    }

    fn cdiv(&self, a: &IndexExpr, b: &IndexExpr) -> Option<IndexExpr> {
        Some(
            self.0
                .clamp(&IndexExpr::bin(IndexOp::CDiv, a.clone(), b.clone())),
        )
    }
}

/// The shared shape rule of a reshape operator at run time (it cannot fail here).
fn rule(
    prover: &Prover<'_>,
    op: ReshapeOp,
    operands: &[&[IndexExpr]],
    amount: Option<&IndexExpr>,
) -> Result<Shape, Diagnostic> {
    result_shape(&RunTime(prover), op, operands, amount)
        .ok_or_else(|| internal(format!("the shape of `{}`", op.name())))
}
