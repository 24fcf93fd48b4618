//! Hierarchical integer tuples (`IntTuple`), the shapes, strides and coordinates of
//! layouts: an integer, or a tuple of hierarchical tuples. The thesis's tuples are
//! binary trees; ours are n-ary, as CuTe's are, so that `(4,2,3)` and `(4,(2,3))` are
//! different shapes (both print as written).

use std::fmt;

/// An integer or a tuple of `IntTuple`s. A tuple of a layout is never empty
/// ([`crate::Layout::new`] refuses one).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntTuple {
    Int(i64),
    Tuple(Vec<IntTuple>),
}

impl IntTuple {
    /// A tuple of integers: `IntTuple::ints(&[3, 4])` is `(3,4)`.
    pub fn ints(values: &[i64]) -> IntTuple {
        IntTuple::Tuple(values.iter().map(|&v| IntTuple::Int(v)).collect())
    }

    /// The leaves, left to right (the thesis's `tuple_to_list`).
    pub fn leaves(&self) -> Vec<i64> {
        let mut out = Vec::new();
        self.push_leaves(&mut out);
        out
    }

    fn push_leaves(&self, out: &mut Vec<i64>) {
        match self {
            IntTuple::Int(v) => out.push(*v),
            IntTuple::Tuple(items) => items.iter().for_each(|t| t.push_leaves(out)),
        }
    }

    /// The number of leaves (the thesis's `rank`: the modes of the flattened tuple).
    pub fn rank(&self) -> usize {
        match self {
            IntTuple::Int(_) => 1,
            IntTuple::Tuple(items) => items.iter().map(IntTuple::rank).sum(),
        }
    }

    /// Same tree structure (the thesis's congruence): shape and stride of a layout must
    /// be congruent.
    pub fn congruent(&self, other: &IntTuple) -> bool {
        match (self, other) {
            (IntTuple::Int(_), IntTuple::Int(_)) => true,
            (IntTuple::Tuple(a), IntTuple::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.congruent(y))
            }
            _ => false,
        }
    }

    /// Whether some tuple of this tree is empty.
    pub fn has_empty_tuple(&self) -> bool {
        match self {
            IntTuple::Int(_) => false,
            IntTuple::Tuple(items) => items.is_empty() || items.iter().any(Self::has_empty_tuple),
        }
    }

    /// The tuple congruent to `self` with its leaves taken from `leaves` in order (the
    /// thesis's `list_to_tuple`). `None` when the counts differ.
    pub fn with_leaves(&self, leaves: &[i64]) -> Option<IntTuple> {
        if leaves.len() != self.rank() {
            return None;
        }
        let mut next = leaves.iter().copied();
        Some(self.rebuild(&mut next))
    }

    fn rebuild(&self, next: &mut impl Iterator<Item = i64>) -> IntTuple {
        match self {
            // `with_leaves` checked the count, so the iterator cannot run dry; 0 keeps
            // this total anyway.
            IntTuple::Int(_) => IntTuple::Int(next.next().unwrap_or(0)),
            IntTuple::Tuple(items) => {
                IntTuple::Tuple(items.iter().map(|t| t.rebuild(next)).collect())
            }
        }
    }
}

impl From<i64> for IntTuple {
    fn from(v: i64) -> IntTuple {
        IntTuple::Int(v)
    }
}

/// CuTe notation: `3`, `(3,4)`, `((2,3),4)`, without spaces.
impl fmt::Display for IntTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntTuple::Int(v) => write!(f, "{v}"),
            IntTuple::Tuple(items) => {
                f.write_str("(")?;
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str(")")
            }
        }
    }
}
