//! The reshape operators in one table: per operator its surface name, how many tensor
//! operands it takes, the rank it needs, and its shape rule, written once over a
//! dimension arithmetic ([`DimArith`]) so that the three places that compute shapes
//! share it: shape inference (`shapes.rs`, normalized index expressions over the
//! sizes), lowering's run-time shapes (`atl-lower`'s `shape.rs`, the same with clamped
//! extents) and the interpreter (`interp.rs`, concrete `usize` extents). The
//! requirements the shape discipline collects for an amount operator live here too
//! ([`amount_requirements`]). Each stage keeps its own wording of errors (their codes
//! and messages are part of the interface); the rule only says when a dimension cannot
//! be computed.

use crate::index::{CmpOp, IndexExpr, IndexOp, Pred};
use crate::ir::AmountOp;

/// A reshape operator: `concat` (also `++`), `transpose`, `flatten`, or an amount
/// operator (`split`, `pad_l`, `pad_r`, `trunc_l`, `trunc_r`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReshapeOp {
    Concat,
    Transpose,
    Flatten,
    Amount(AmountOp),
}

impl ReshapeOp {
    /// Every reshape operator.
    pub const ALL: [ReshapeOp; 8] = [
        ReshapeOp::Concat,
        ReshapeOp::Transpose,
        ReshapeOp::Flatten,
        ReshapeOp::Amount(AmountOp::Split),
        ReshapeOp::Amount(AmountOp::PadL),
        ReshapeOp::Amount(AmountOp::PadR),
        ReshapeOp::Amount(AmountOp::TruncL),
        ReshapeOp::Amount(AmountOp::TruncR),
    ];

    /// The surface name (the function-call spelling).
    pub fn name(self) -> &'static str {
        match self {
            ReshapeOp::Concat => "concat",
            ReshapeOp::Transpose => "transpose",
            ReshapeOp::Flatten => "flatten",
            ReshapeOp::Amount(op) => op.name(),
        }
    }

    /// The number of tensor operands (an amount operator's amount is not one).
    pub fn arity(self) -> usize {
        match self {
            ReshapeOp::Concat => 2,
            _ => 1,
        }
    }

    /// Whether the operator takes an amount (an index expression over the sizes).
    pub fn takes_amount(self) -> bool {
        matches!(self, ReshapeOp::Amount(_))
    }

    /// The rank every operand needs at least: the leading dimensions the rule reads.
    pub fn min_rank(self) -> usize {
        match self {
            ReshapeOp::Transpose | ReshapeOp::Flatten => 2,
            ReshapeOp::Concat | ReshapeOp::Amount(_) => 1,
        }
    }
}

/// The arithmetic a shape rule computes dimensions with. `None` means the dimension
/// cannot be computed (a concrete overflow, a difference known to be negative); the
/// caller reports it in its own words, knowing the operator.
pub trait DimArith {
    type Dim: Clone;
    fn add(&self, a: &Self::Dim, b: &Self::Dim) -> Option<Self::Dim>;
    fn sub(&self, a: &Self::Dim, b: &Self::Dim) -> Option<Self::Dim>;
    fn mul(&self, a: &Self::Dim, b: &Self::Dim) -> Option<Self::Dim>;
    /// Division rounding up (`split`'s number of rows).
    fn cdiv(&self, a: &Self::Dim, b: &Self::Dim) -> Option<Self::Dim>;
}

/// The shape rule of every reshape operator. `operands` are the shapes of the tensor
/// operands ([`ReshapeOp::arity`] of them, each of rank at least
/// [`ReshapeOp::min_rank`]: callers check both and report violations themselves);
/// `amount` is the amount of an amount operator. The element shape of `concat`'s
/// second operand is not compared here either. `None` if a dimension cannot be
/// computed ([`DimArith`]).
///
/// # Panics
///
/// If the operands or the amount do not fit the operator (a caller's bug).
pub fn result_shape<A: DimArith>(
    arith: &A,
    op: ReshapeOp,
    operands: &[&[A::Dim]],
    amount: Option<&A::Dim>,
) -> Option<Vec<A::Dim>> {
    let a = operands[0];
    let (lead, rest) = match op {
        ReshapeOp::Concat => (vec![arith.add(&a[0], &operands[1][0])?], &a[1..]),
        ReshapeOp::Transpose => (vec![a[1].clone(), a[0].clone()], &a[2..]),
        ReshapeOp::Flatten => (vec![arith.mul(&a[0], &a[1])?], &a[2..]),
        ReshapeOp::Amount(amount_op) => {
            let k = amount.expect("an amount operator has an amount");
            let n = &a[0];
            let lead = match amount_op {
                AmountOp::Split => vec![arith.cdiv(n, k)?, k.clone()],
                AmountOp::PadL | AmountOp::PadR => vec![arith.add(n, k)?],
                AmountOp::TruncL | AmountOp::TruncR => vec![arith.sub(n, k)?],
            };
            (lead, &a[1..])
        }
    };
    let mut out = lead;
    out.extend(rest.iter().cloned());
    Some(out)
}

/// The least amount an amount operator accepts: a `split` needs rows of at least one
/// element, the others take any amount from 0.
pub fn min_amount(op: AmountOp) -> i64 {
    match op {
        AmountOp::Split => 1,
        AmountOp::PadL | AmountOp::PadR | AmountOp::TruncL | AmountOp::TruncR => 0,
    }
}

/// What the shape discipline requires of an amount operator's amount `k` applied to a
/// leading extent `n` (ARCHITECTURE.md, "The shape discipline"), each with the words
/// that say what is required: `split` needs a row length of at least 1, the others an
/// amount of at least 0, and a truncation at most the extent.
pub fn amount_requirements(op: AmountOp, k: &IndexExpr, n: &IndexExpr) -> Vec<(Pred, String)> {
    let name = op.name();
    let min = min_amount(op);
    let what = if op == AmountOp::Split {
        "row length"
    } else {
        "amount"
    };
    let mut out = vec![(
        Pred::cmp(CmpOp::Ge, k.clone(), IndexExpr::Const(min)),
        format!("the {what} `{k}` of `{name}` (at least {min})"),
    )];
    if matches!(op, AmountOp::TruncL | AmountOp::TruncR) {
        out.push((
            Pred::cmp(CmpOp::Le, k.clone(), n.clone()),
            format!("the amount `{k}` of `{name}` (at most the extent `{n}`)"),
        ));
    }
    out
}

/// Symbolic dimensions: index expressions over the sizes, every result normalized.
/// A difference whose normal form is a negative constant cannot be computed.
#[derive(Clone, Copy, Debug)]
pub struct Symbolic;

impl DimArith for Symbolic {
    type Dim = IndexExpr;

    fn add(&self, a: &IndexExpr, b: &IndexExpr) -> Option<IndexExpr> {
        Some(crate::poly::normalize(&IndexExpr::add(
            a.clone(),
            b.clone(),
        )))
    }

    fn sub(&self, a: &IndexExpr, b: &IndexExpr) -> Option<IndexExpr> {
        let d = crate::poly::normalize(&IndexExpr::sub(a.clone(), b.clone()));
        match crate::poly::Poly::from_index(&d).as_const() {
            Some(c) if c < 0 => None,
            _ => Some(d),
        }
    }

    fn mul(&self, a: &IndexExpr, b: &IndexExpr) -> Option<IndexExpr> {
        Some(crate::poly::normalize(&IndexExpr::mul(
            a.clone(),
            b.clone(),
        )))
    }

    fn cdiv(&self, a: &IndexExpr, b: &IndexExpr) -> Option<IndexExpr> {
        Some(crate::poly::normalize(&IndexExpr::bin(
            IndexOp::CDiv,
            a.clone(),
            b.clone(),
        )))
    }
}

/// Concrete extents: checked `usize` arithmetic (overflow, a negative difference and a
/// division by zero cannot be computed).
#[derive(Clone, Copy, Debug)]
pub struct Concrete;

impl DimArith for Concrete {
    type Dim = usize;

    fn add(&self, a: &usize, b: &usize) -> Option<usize> {
        a.checked_add(*b)
    }

    fn sub(&self, a: &usize, b: &usize) -> Option<usize> {
        a.checked_sub(*b)
    }

    fn mul(&self, a: &usize, b: &usize) -> Option<usize> {
        a.checked_mul(*b)
    }

    fn cdiv(&self, a: &usize, b: &usize) -> Option<usize> {
        (*b != 0).then(|| a.div_ceil(*b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concrete_rules() {
        let shape = |op, operands: &[&[usize]], k: Option<usize>| {
            result_shape(&Concrete, op, operands, k.as_ref())
        };
        assert_eq!(
            shape(ReshapeOp::Concat, &[&[2, 3], &[4, 3]], None),
            Some(vec![6, 3])
        );
        assert_eq!(
            shape(ReshapeOp::Transpose, &[&[2, 3, 4]], None),
            Some(vec![3, 2, 4])
        );
        assert_eq!(
            shape(ReshapeOp::Flatten, &[&[2, 3, 4]], None),
            Some(vec![6, 4])
        );
        let split = ReshapeOp::Amount(AmountOp::Split);
        assert_eq!(shape(split, &[&[7, 2]], Some(3)), Some(vec![3, 3, 2]));
        let trunc = ReshapeOp::Amount(AmountOp::TruncR);
        assert_eq!(shape(trunc, &[&[2]], Some(3)), None);
        assert_eq!(
            shape(ReshapeOp::Amount(AmountOp::PadL), &[&[2]], Some(3)),
            Some(vec![5])
        );
    }

    #[test]
    fn the_table_names_every_operator_once() {
        let names: std::collections::BTreeSet<_> =
            ReshapeOp::ALL.iter().map(|op| op.name()).collect();
        assert_eq!(names.len(), ReshapeOp::ALL.len());
    }
}
