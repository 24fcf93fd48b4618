//! The reshape operators in one table: per operator its surface name, how many tensor
//! operands it takes, the rank it needs, and its shape rule, written once over a
//! dimension arithmetic ([`DimArith`]) so that the three places that compute shapes
//! share it: shape inference (`shapes.rs`, normalized index expressions over the
//! sizes), lowering's run-time shapes (`atl-lower`'s `shape.rs`, the same with clamped
//! extents) and the interpreter (`interp/`, concrete `usize` extents). The
//! requirements the shape discipline collects for an amount operator live here too
//! ([`amount_requirements`]). Each stage keeps its own wording of errors (their codes
//! and messages are part of the interface); the rule only says when a dimension cannot
//! be computed.

use crate::index::{CmpOp, IndexExpr, IndexOp, Pred};

/// Reshape operators that take an amount (an index expression over the sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmountOp {
    /// `split(k, e)`: `[n, …]` → `[cdiv(n, k), k, …]`, zero tail.
    Split,
    /// `pad_l(k, e)`: `k` zero elements on the left.
    PadL,
    /// `pad_r(k, e)`: `k` zero elements on the right.
    PadR,
    /// `trunc_l(k, e)`: drop `k` elements on the left.
    TruncL,
    /// `trunc_r(k, e)`: drop `k` elements on the right.
    TruncR,
}

impl AmountOp {
    pub fn name(self) -> &'static str {
        match self {
            AmountOp::Split => "split",
            AmountOp::PadL => "pad_l",
            AmountOp::PadR => "pad_r",
            AmountOp::TruncL => "trunc_l",
            AmountOp::TruncR => "trunc_r",
        }
    }

    /// The operator named `name` (its surface spelling), if there is one.
    pub fn from_name(name: &str) -> Option<AmountOp> {
        AmountOp::ALL.into_iter().find(|op| op.name() == name)
    }

    pub const ALL: [AmountOp; 5] = [
        AmountOp::Split,
        AmountOp::PadL,
        AmountOp::PadR,
        AmountOp::TruncL,
        AmountOp::TruncR,
    ];
}

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

/// Whether an amount operator's amount must be at most the leading extent (a
/// truncation cannot drop more elements than there are).
pub fn amount_at_most_extent(op: AmountOp) -> bool {
    matches!(op, AmountOp::TruncL | AmountOp::TruncR)
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
    if amount_at_most_extent(op) {
        out.push((
            Pred::cmp(CmpOp::Le, k.clone(), n.clone()),
            format!("the amount `{k}` of `{name}` (at most the extent `{n}`)"),
        ));
    }
    out
}

/// The arithmetic an amount operator's read-side index map ([`amount_read`]) computes
/// with: symbolic index expressions (lowering's normalization) or concrete `i64`
/// positions (the interpreters). The operations build terms as written; `norm` puts
/// one in normal form where the rule says so (which keeps the symbolic terms exactly
/// as lowering has always built them).
pub trait IndexArith {
    type Index: Clone;
    type Cond;
    fn constant(&self, c: i64) -> Self::Index;
    fn add(&self, a: Self::Index, b: Self::Index) -> Self::Index;
    fn sub(&self, a: Self::Index, b: Self::Index) -> Self::Index;
    fn mul(&self, a: Self::Index, b: Self::Index) -> Self::Index;
    fn norm(&self, a: Self::Index) -> Self::Index;
    fn cmp(&self, op: CmpOp, a: Self::Index, b: Self::Index) -> Self::Cond;
}

/// Where an element of an amount operator's result is read from: the argument at
/// leading index `index` when `guard` holds (no guard: always), otherwise zero. A
/// read outside the argument's leading extent is zero too (ATL's semantics of an
/// access out of range), so the guard is only what that does not already give.
#[derive(Clone, Debug, PartialEq)]
pub struct AmountRead<I, C> {
    pub index: I,
    pub guard: Option<C>,
}

/// Whether the result of `op` has a dimension more than its argument, right after the
/// first (`split`'s rows of `k`), so that an element is named by two indices.
pub fn adds_inner_dim(op: AmountOp) -> bool {
    op == AmountOp::Split
}

/// Whether [`amount_read`] needs the argument's leading extent for `op`.
pub fn read_needs_extent(op: AmountOp) -> bool {
    matches!(op, AmountOp::Split | AmountOp::TruncR)
}

/// The read-side index map of every amount operator: element `outer` (for `split`,
/// `[outer][inner]`) of `op(k, arg)`, where `n` is the argument's leading extent.
///
/// # Panics
///
/// If `n` is missing where [`read_needs_extent`] says it is needed, or `inner` where
/// [`adds_inner_dim`] says there is one (a caller's bug).
pub fn amount_read<A: IndexArith>(
    arith: &A,
    op: AmountOp,
    k: &A::Index,
    n: Option<&A::Index>,
    outer: &A::Index,
    inner: Option<&A::Index>,
) -> AmountRead<A::Index, A::Cond> {
    let extent = || n.expect("the leading extent of the argument").clone();
    let (i, k) = (outer.clone(), k.clone());
    match op {
        // split(k, e)[i][j] = [i*k + j < n] * e[i*k + j].
        AmountOp::Split => {
            let j = inner.expect("the index within a row of `split`").clone();
            let pos = arith.norm(arith.add(arith.mul(i, k), j));
            AmountRead {
                guard: Some(arith.cmp(CmpOp::Lt, pos.clone(), extent())),
                index: pos,
            }
        }
        // pad_l(k, e)[i] = e[i - k] (negative positions read zero).
        AmountOp::PadL => AmountRead {
            index: arith.norm(arith.sub(i, k)),
            guard: None,
        },
        // pad_r(k, e)[i] = e[i] (positions from n on read zero).
        AmountOp::PadR => AmountRead {
            index: i,
            guard: None,
        },
        // trunc_l(k, e)[i] = [0 <= i] * e[i + k].
        AmountOp::TruncL => AmountRead {
            guard: Some(arith.cmp(CmpOp::Le, arith.constant(0), i.clone())),
            index: arith.norm(arith.add(i, k)),
        },
        // trunc_r(k, e)[i] = [i < n - k] * e[i].
        AmountOp::TruncR => AmountRead {
            guard: Some(arith.cmp(CmpOp::Lt, i.clone(), arith.norm(arith.sub(extent(), k)))),
            index: i,
        },
    }
}

/// The argument row each row of an amount operator's result reads, in row-major order,
/// derived from [`amount_read`]: a row is an element of the dimensions after the
/// argument's first (`split`'s result counts its rows of `k` such rows), `None` is a
/// row of zeros. `n` is the argument's leading extent and `k` the amount; `None` if
/// the amount is invalid for `n` or the result's extent overflows.
pub fn row_sources(op: AmountOp, k: usize, n: usize) -> Option<Vec<Option<usize>>> {
    if (k as i64) < min_amount(op) || (amount_at_most_extent(op) && k > n) {
        return None;
    }
    let shape = result_shape(&Concrete, ReshapeOp::Amount(op), &[&[n]], Some(&k))?;
    let rows = shape
        .iter()
        .try_fold(1usize, |acc, d| acc.checked_mul(*d))?;
    let (ki, ni) = (i64::try_from(k).ok()?, i64::try_from(n).ok()?);
    let source = |r: usize| {
        let (outer, inner) = if adds_inner_dim(op) {
            (r / k, Some((r % k) as i64))
        } else {
            (r, None)
        };
        let read = amount_read(
            &ConcreteIndex,
            op,
            &ki,
            Some(&ni),
            &(outer as i64),
            inner.as_ref(),
        );
        let kept = read.guard.unwrap_or(true) && (0..ni).contains(&read.index);
        kept.then_some(read.index as usize)
    };
    Some((0..rows).map(source).collect())
}

/// Symbolic indices: index expressions, normalized by [`crate::poly::normalize`], and
/// guards as predicates.
#[derive(Clone, Copy, Debug)]
pub struct SymbolicIndex;

impl IndexArith for SymbolicIndex {
    type Index = IndexExpr;
    type Cond = Pred;

    fn constant(&self, c: i64) -> IndexExpr {
        IndexExpr::Const(c)
    }

    fn add(&self, a: IndexExpr, b: IndexExpr) -> IndexExpr {
        IndexExpr::add(a, b)
    }

    fn sub(&self, a: IndexExpr, b: IndexExpr) -> IndexExpr {
        IndexExpr::sub(a, b)
    }

    fn mul(&self, a: IndexExpr, b: IndexExpr) -> IndexExpr {
        IndexExpr::mul(a, b)
    }

    fn norm(&self, a: IndexExpr) -> IndexExpr {
        crate::poly::normalize(&a)
    }

    fn cmp(&self, op: CmpOp, a: IndexExpr, b: IndexExpr) -> Pred {
        Pred::cmp(op, a, b)
    }
}

/// Concrete positions: saturating `i64` arithmetic (a saturated position is out of
/// every extent, so it reads zero as the exact one would) and guards as booleans.
#[derive(Clone, Copy, Debug)]
pub struct ConcreteIndex;

impl IndexArith for ConcreteIndex {
    type Index = i64;
    type Cond = bool;

    fn constant(&self, c: i64) -> i64 {
        c
    }

    fn add(&self, a: i64, b: i64) -> i64 {
        a.saturating_add(b)
    }

    fn sub(&self, a: i64, b: i64) -> i64 {
        a.saturating_sub(b)
    }

    fn mul(&self, a: i64, b: i64) -> i64 {
        a.saturating_mul(b)
    }

    fn norm(&self, a: i64) -> i64 {
        a
    }

    fn cmp(&self, op: CmpOp, a: i64, b: i64) -> bool {
        op.holds(a, b)
    }
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
