//! Reindexers as data (thesis §4.4.2, Figures 4.1, 4.4 and 4.5).
//!
//! Lowering passes down, instead of a destination index, a *reindexer* θ: a function
//! from the index of the subterm being lowered to the index of the whole destination.
//! An index is a list of `(coordinate, extent)` pairs, outermost first. Each `gen`
//! composes "prepend my coordinate" onto θ, each reshape operator composes its own
//! reindexer; at a scalar leaf, θ is applied to the empty index and the result is
//! flattened row-major ([`flatten_index`]).
//!
//! Here θ is a list of [`ReindexOp`]s, `θ = op₁ ∘ op₂ ∘ … ∘ opₘ` in the order lowering
//! met them, so applying it runs the list backwards (the innermost construct first).
//!
//! The operators follow Figure 4.5 with DESIGN §3.2's conventions, where the argument
//! of pad and trunc is always an *amount* `k`:
//!
//! | op | `(i, d) :: rest` becomes |
//! |---|---|
//! | `flatten` | `(i₁·d₂ + i₂, d₁·d₂) :: rest` (from `(i₁, d₁) :: (i₂, d₂) :: rest`; the figure's `i₁·d₂ + i₁` is a typo) |
//! | `transpose` | `(i₂, d₂) :: (i₁, d₁) :: rest` |
//! | `split k` | `(i / k, cdiv(d, k)) :: (i % k, k) :: rest` (the figure's `d / k` floors; the shape rounds up) |
//! | `pad_l k` | `(i + k, d + k) :: rest` |
//! | `pad_r k` | `(i, d + k) :: rest` |
//! | `trunc_l k` | `(i - k, d - k) :: rest`, **guarded by** `i >= k` |
//! | `trunc_r k` | `(i, d - k) :: rest`, **guarded by** `i < d - k` |
//!
//! The guards are the fix for the unsoundness of thesis §5.4: a truncation shrinks the
//! index space without shrinking the iteration space, so the elements it drops must
//! not be stored at all (they would land out of bounds, or — for an inner dimension —
//! on top of the next row). Every other operator maps in-range coordinates to in-range
//! coordinates, so the guards of the truncations are the only ones needed: a store
//! happens exactly when every guard holds.

use std::fmt;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::AmountOp;
use atl_lang::poly::normalize;

use crate::ir::Coord;

/// One step of a reindexer.
#[derive(Clone, Debug, PartialEq)]
pub enum ReindexOp {
    /// `gen`: prepend the coordinate `index` of a dimension of `extent` elements
    /// (Figure 4.1 pushes `(i - lo, hi - lo)`).
    Push {
        index: IndexExpr,
        extent: IndexExpr,
    },
    Flatten,
    Transpose,
    Split(IndexExpr),
    PadL(IndexExpr),
    PadR(IndexExpr),
    TruncL(IndexExpr),
    TruncR(IndexExpr),
}

/// A reindexer: the composition of its ops, first op outermost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reindexer {
    ops: Vec<ReindexOp>,
}

/// The result of applying a reindexer: the destination coordinates and the
/// conditions under which the element is stored at all.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub coords: Vec<Coord>,
    pub guards: Vec<Pred>,
}

/// A reindexer met an index of too low rank (only an ill-shaped program can cause it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankError {
    pub op: &'static str,
    pub rank: usize,
}

impl fmt::Display for RankError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reindexer `{}` applied to an index of rank {}",
            self.op, self.rank
        )
    }
}

impl ReindexOp {
    pub fn name(&self) -> &'static str {
        match self {
            ReindexOp::Push { .. } => "gen",
            ReindexOp::Flatten => "flatten",
            ReindexOp::Transpose => "transpose",
            ReindexOp::Split(_) => "split",
            ReindexOp::PadL(_) => "pad_l",
            ReindexOp::PadR(_) => "pad_r",
            ReindexOp::TruncL(_) => "trunc_l",
            ReindexOp::TruncR(_) => "trunc_r",
        }
    }

    /// Applies this op to `idx` (outermost first), adding any storage guard.
    pub fn apply(&self, idx: &mut Vec<Coord>, guards: &mut Vec<Pred>) -> Result<(), RankError> {
        let err = |rank| RankError {
            op: self.name(),
            rank,
        };
        let n = |e: IndexExpr| normalize(&e);
        match self {
            ReindexOp::Push { index, extent } => {
                idx.insert(
                    0,
                    Coord {
                        index: index.clone(),
                        extent: extent.clone(),
                    },
                );
            }
            ReindexOp::Flatten => {
                if idx.len() < 2 {
                    return Err(err(idx.len()));
                }
                let b = idx.remove(1);
                let a = &mut idx[0];
                a.index = n(IndexExpr::add(
                    IndexExpr::mul(a.index.clone(), b.extent.clone()),
                    b.index,
                ));
                a.extent = n(IndexExpr::mul(a.extent.clone(), b.extent));
            }
            ReindexOp::Transpose => {
                if idx.len() < 2 {
                    return Err(err(idx.len()));
                }
                idx.swap(0, 1);
            }
            ReindexOp::Split(k) => {
                let Some(first) = idx.first().cloned() else {
                    return Err(err(0));
                };
                idx[0] = Coord {
                    index: n(IndexExpr::bin(IndexOp::Div, first.index.clone(), k.clone())),
                    extent: n(IndexExpr::bin(IndexOp::CDiv, first.extent, k.clone())),
                };
                idx.insert(
                    1,
                    Coord {
                        index: n(IndexExpr::bin(IndexOp::Mod, first.index, k.clone())),
                        extent: k.clone(),
                    },
                );
            }
            ReindexOp::PadL(k)
            | ReindexOp::PadR(k)
            | ReindexOp::TruncL(k)
            | ReindexOp::TruncR(k) => {
                let Some(first) = idx.first_mut() else {
                    return Err(err(0));
                };
                match self {
                    ReindexOp::PadL(_) => {
                        first.index = n(IndexExpr::add(first.index.clone(), k.clone()));
                        first.extent = n(IndexExpr::add(first.extent.clone(), k.clone()));
                    }
                    ReindexOp::PadR(_) => {
                        first.extent = n(IndexExpr::add(first.extent.clone(), k.clone()));
                    }
                    ReindexOp::TruncL(_) => {
                        guards.push(Pred::cmp(CmpOp::Ge, first.index.clone(), k.clone()));
                        first.index = n(IndexExpr::sub(first.index.clone(), k.clone()));
                        first.extent = n(IndexExpr::sub(first.extent.clone(), k.clone()));
                    }
                    _ => {
                        first.extent = n(IndexExpr::sub(first.extent.clone(), k.clone()));
                        guards.push(Pred::cmp(
                            CmpOp::Lt,
                            first.index.clone(),
                            first.extent.clone(),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl ReindexOp {
    /// The reindexer of the amount operator `op` with amount `k`: where the elements of
    /// its argument are stored in its result (the table at the top of this module).
    pub fn for_amount(op: AmountOp, k: IndexExpr) -> ReindexOp {
        match op {
            AmountOp::Split => ReindexOp::Split(k),
            AmountOp::PadL => ReindexOp::PadL(k),
            AmountOp::PadR => ReindexOp::PadR(k),
            AmountOp::TruncL => ReindexOp::TruncL(k),
            AmountOp::TruncR => ReindexOp::TruncR(k),
        }
    }
}

/// The rows of an amount operator's result that no element of its argument is stored
/// into, so that an assigning store must zero them: rows `lo .. hi` of a leading
/// dimension of `extent` rows.
#[derive(Clone, Debug, PartialEq)]
pub struct ZeroFill {
    pub lo: IndexExpr,
    pub hi: IndexExpr,
    pub extent: IndexExpr,
    /// Whether the rows are coordinates of the argument, stored through the operator's
    /// reindexer (`split`'s zero tail), rather than coordinates of the result.
    pub through_reindexer: bool,
    /// Whether the zeros are stored before the argument's elements (the order of the
    /// emitted loops).
    pub before: bool,
}

impl ZeroFill {
    /// The zero rows of `op` with amount `k` applied to a leading extent `n`, if any.
    pub fn for_amount(op: AmountOp, n: &IndexExpr, k: &IndexExpr) -> Option<ZeroFill> {
        let padded = || normalize(&IndexExpr::add(n.clone(), k.clone()));
        match op {
            // The zero tail: positions n .. cdiv(n, k) * k of the argument.
            AmountOp::Split => Some(ZeroFill {
                lo: n.clone(),
                hi: normalize(&IndexExpr::mul(
                    IndexExpr::bin(IndexOp::CDiv, n.clone(), k.clone()),
                    k.clone(),
                )),
                extent: n.clone(),
                through_reindexer: true,
                before: false,
            }),
            AmountOp::PadL => Some(ZeroFill {
                lo: IndexExpr::Const(0),
                hi: k.clone(),
                extent: padded(),
                through_reindexer: false,
                before: true,
            }),
            AmountOp::PadR => Some(ZeroFill {
                lo: n.clone(),
                hi: padded(),
                extent: padded(),
                through_reindexer: false,
                before: false,
            }),
            AmountOp::TruncL | AmountOp::TruncR => None,
        }
    }
}

impl Reindexer {
    /// The identity reindexer (a whole buffer, written row-major).
    pub fn identity() -> Reindexer {
        Reindexer::default()
    }

    /// `self ∘ op`: `op` acts first on the index built below.
    pub fn then(&self, op: ReindexOp) -> Reindexer {
        let mut ops = self.ops.clone();
        ops.push(op);
        Reindexer { ops }
    }

    pub fn ops(&self) -> &[ReindexOp] {
        &self.ops
    }

    pub fn is_identity(&self) -> bool {
        self.ops.is_empty()
    }

    /// Applies the reindexer to an index (the innermost op first).
    pub fn apply(&self, mut idx: Vec<Coord>) -> Result<Applied, RankError> {
        let mut guards = Vec::new();
        for op in self.ops.iter().rev() {
            op.apply(&mut idx, &mut guards)?;
        }
        Ok(Applied {
            coords: idx,
            guards,
        })
    }
}

/// The row-major flat index of coordinates: `((c₀·d₁ + c₁)·d₂ + c₂)…` (the outermost
/// extent is not needed). Zero coordinates (a scalar) give index 0.
pub fn flatten_index(coords: &[Coord]) -> IndexExpr {
    let mut acc: Option<IndexExpr> = None;
    for c in coords {
        acc = Some(match acc {
            None => c.index.clone(),
            Some(a) => IndexExpr::add(IndexExpr::mul(a, c.extent.clone()), c.index.clone()),
        });
    }
    normalize(&acc.unwrap_or(IndexExpr::Const(0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use atl_lang::index::IndexExpr as I;

    fn v(n: &str) -> I {
        I::var(n)
    }

    fn push(i: &str, d: &str) -> ReindexOp {
        ReindexOp::Push {
            index: v(i),
            extent: v(d),
        }
    }

    fn eval(e: &I, env: &[(&str, i64)]) -> i64 {
        e.eval(&|n| env.iter().find(|(k, _)| *k == n).map(|(_, x)| *x))
            .unwrap()
    }

    #[test]
    fn gen_nest_flattens_row_major() {
        // gen i < n: gen j < m: s  stores at i*m + j.
        let theta = Reindexer::identity()
            .then(push("i", "n"))
            .then(push("j", "m"));
        let a = theta.apply(vec![]).unwrap();
        assert!(a.guards.is_empty());
        let flat = flatten_index(&a.coords);
        assert_eq!(eval(&flat, &[("i", 2), ("j", 3), ("m", 5)]), 13);
    }

    #[test]
    fn transpose_swaps_the_two_outer_coordinates() {
        // transpose(gen i < n: gen j < m: s): element (i, j) lands at (j, i) of [m, n].
        let theta = Reindexer::identity()
            .then(ReindexOp::Transpose)
            .then(push("i", "n"))
            .then(push("j", "m"));
        let a = theta.apply(vec![]).unwrap();
        assert_eq!(a.coords[0].index, v("j"));
        assert_eq!(a.coords[1].index, v("i"));
        let flat = flatten_index(&a.coords);
        assert_eq!(eval(&flat, &[("i", 2), ("j", 3), ("n", 4)]), 3 * 4 + 2);
    }

    #[test]
    fn split_then_flatten_is_the_identity_on_positions() {
        // flatten(split(4, gen i < n: s)): i -> (i / 4, i % 4) -> (i/4)*4 + i%4 = i.
        let theta = Reindexer::identity()
            .then(ReindexOp::Flatten)
            .then(ReindexOp::Split(I::Const(4)))
            .then(push("i", "n"));
        let a = theta.apply(vec![]).unwrap();
        for i in 0..11 {
            assert_eq!(eval(&flatten_index(&a.coords), &[("i", i), ("n", 11)]), i);
        }
    }

    #[test]
    fn truncations_guard_the_dropped_elements() {
        // trunc_l(2, gen i < n: s): stores element i at i - 2, only for i >= 2.
        let theta = Reindexer::identity()
            .then(ReindexOp::TruncL(I::Const(2)))
            .then(push("i", "n"));
        let a = theta.apply(vec![]).unwrap();
        assert_eq!(a.guards.len(), 1);
        let ok = |i| a.guards[0].eval(&|n| (n == "i").then_some(i)).unwrap();
        assert!(!ok(1) && ok(2));
        // gen i < n: trunc_r(1, gen j < m: s): row length m - 1, j < m - 1 guarded.
        let theta = Reindexer::identity()
            .then(push("i", "n"))
            .then(ReindexOp::TruncR(I::Const(1)))
            .then(push("j", "m"));
        let a = theta.apply(vec![]).unwrap();
        let env = |j| {
            move |n: &str| match n {
                "j" => Some(j),
                "m" => Some(4),
                _ => None,
            }
        };
        assert!(a.guards[0].eval(&env(2)).unwrap());
        assert!(!a.guards[0].eval(&env(3)).unwrap());
        assert_eq!(
            eval(&flatten_index(&a.coords), &[("i", 1), ("j", 2), ("m", 4)]),
            3 + 2
        );
    }

    #[test]
    fn pads_offset_and_widen() {
        let theta = Reindexer::identity()
            .then(ReindexOp::PadL(I::Const(3)))
            .then(push("i", "n"));
        let a = theta.apply(vec![]).unwrap();
        assert_eq!(eval(&a.coords[0].index, &[("i", 0)]), 3);
        assert_eq!(eval(&a.coords[0].extent, &[("n", 5)]), 8);
    }

    #[test]
    fn rank_errors_are_reported() {
        let theta = Reindexer::identity()
            .then(ReindexOp::Flatten)
            .then(push("i", "n"));
        assert!(theta.apply(vec![]).is_err());
    }
}
