//! The `Layout` type: a shape and a stride, congruent hierarchical tuples, checked when
//! a layout is made so that every other operation may rely on it. A layout is a
//! function from the indices `[0, size)` (or coordinates of its shape) to offsets:
//! see `apply.rs`.
//!
//! Degenerate cases, defined here once:
//! - an extent may be 0; the layout's size is then 0, its domain empty and its cosize 0;
//! - an extent of 1 contributes nothing whatever its stride;
//! - strides may be 0 (a broadcast mode) or negative; the cosize is the largest value
//!   on the domain plus 1, so a negative stride never raises it.

use std::fmt;

use crate::arith;
use crate::error::{LayoutError, Result};
use crate::tuple::IntTuple;

/// A CuTe layout `shape:stride`. The fields are private: a `Layout` is always well
/// formed (congruent, extents `>= 0`, no empty tuple) and its size and every value on
/// its domain fit in 64 bits (so evaluating it on `[0, size)` cannot overflow).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: IntTuple,
    stride: IntTuple,
}

impl Layout {
    /// The layout `shape:stride`, or why the pair is not one.
    pub fn new(shape: IntTuple, stride: IntTuple) -> Result<Layout> {
        if shape.has_empty_tuple() || stride.has_empty_tuple() {
            return Err(LayoutError::Malformed(format!(
                "`{shape}:{stride}` has an empty tuple; a tuple has at least one element"
            )));
        }
        if !shape.congruent(&stride) {
            return Err(LayoutError::Malformed(format!(
                "the shape `{shape}` and the stride `{stride}` are not congruent (they must have the same tuple structure)"
            )));
        }
        if let Some(bad) = shape.leaves().into_iter().find(|&s| s < 0) {
            return Err(LayoutError::Malformed(format!(
                "the shape `{shape}` has the negative extent {bad}"
            )));
        }
        let layout = Layout { shape, stride };
        let size = arith::product(layout.shape.leaves(), "the size of the layout")?;
        if size > 0 {
            // The largest and smallest values on the domain: each mode at its last
            // coordinate when its stride has that sign. Every partial sum of a value
            // lies between them, so once they fit, evaluation on the domain cannot
            // overflow; the cosize (largest + 1) must fit too.
            let (mut hi, mut lo) = (0i64, 0i64);
            for (s, d) in layout.modes() {
                let term = arith::mul(s - 1, d, "a value of the layout")?;
                if term > 0 {
                    hi = arith::add(hi, term, "a value of the layout")?;
                } else {
                    lo = arith::add(lo, term, "a value of the layout")?;
                }
            }
            arith::add(hi, 1, "the cosize of the layout")?;
        }
        Ok(layout)
    }

    /// The layout with one mode, `s:d`.
    pub fn leaf(s: i64, d: i64) -> Result<Layout> {
        Layout::new(IntTuple::Int(s), IntTuple::Int(d))
    }

    /// The layout of the flat list of modes `(extent, stride)`: one mode is an integer
    /// layout `s:d`, several a flat tuple, none the empty-domain-free `1:0`.
    pub fn from_modes(modes: &[(i64, i64)]) -> Result<Layout> {
        match modes {
            [] => Layout::leaf(1, 0),
            [(s, d)] => Layout::leaf(*s, *d),
            _ => Layout::new(
                IntTuple::Tuple(modes.iter().map(|&(s, _)| IntTuple::Int(s)).collect()),
                IntTuple::Tuple(modes.iter().map(|&(_, d)| IntTuple::Int(d)).collect()),
            ),
        }
    }

    pub fn shape(&self) -> &IntTuple {
        &self.shape
    }

    pub fn stride(&self) -> &IntTuple {
        &self.stride
    }

    /// The flattened modes `(extent, stride)`, left to right.
    pub fn modes(&self) -> Vec<(i64, i64)> {
        self.shape
            .leaves()
            .into_iter()
            .zip(self.stride.leaves())
            .collect()
    }

    /// The top-level modes: the elements of the shape's tuple as layouts (a layout
    /// whose shape is an integer is its own only mode).
    pub fn top_modes(&self) -> Vec<Layout> {
        match (&self.shape, &self.stride) {
            (IntTuple::Tuple(ss), IntTuple::Tuple(ds)) => ss
                .iter()
                .zip(ds)
                .map(|(s, d)| Layout {
                    shape: s.clone(),
                    stride: d.clone(),
                })
                .collect(),
            _ => vec![self.clone()],
        }
    }

    /// The number of elements of the domain: the product of the extents. It fits in
    /// 64 bits by construction.
    pub fn size(&self) -> i64 {
        self.shape.leaves().into_iter().product()
    }

    /// The largest value on the domain plus 1 (the length of a buffer the layout
    /// indexes when no stride is negative); 0 when the size is 0.
    pub fn cosize(&self) -> i64 {
        if self.size() == 0 {
            return 0;
        }
        // In range by construction (`new` checked the same sum).
        self.modes()
            .into_iter()
            .map(|(s, d)| (s - 1) * d)
            .filter(|&t| t > 0)
            .sum::<i64>()
            + 1
    }
}

/// CuTe notation `shape:stride`, e.g. `((2,3),4):((1,2),6)`.
impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.shape, self.stride)
    }
}
