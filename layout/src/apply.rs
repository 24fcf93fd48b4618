//! Layouts as functions (thesis §6.3.3, `interpret`): a coordinate is lifted to one
//! congruent to the shape and its inner product with the stride is the offset. A 1-D
//! index is the coordinate that is one integer.

use crate::arith;
use crate::coord::lift_crd;
use crate::error::Result;
use crate::layout::Layout;
use crate::tuple::IntTuple;

impl Layout {
    /// The offset of a coordinate compatible with the shape. Coordinates are not
    /// checked against their extents: beyond them the layout's formula goes on (the
    /// last mode absorbs an index's overflow), which may overflow 64 bits (an error).
    pub fn at(&self, crd: &IntTuple) -> Result<i64> {
        let lifted = lift_crd(self.shape(), crd)?;
        let mut offset = 0i64;
        for (c, d) in lifted.leaves().into_iter().zip(self.stride().leaves()) {
            offset = arith::add(offset, arith::mul(c, d, "an offset")?, "an offset")?;
        }
        Ok(offset)
    }

    /// The offset of the 1-D index `i`. On `[0, size)` it cannot fail.
    pub fn apply(&self, i: i64) -> Result<i64> {
        self.at(&IntTuple::Int(i))
    }

    /// The values on `[0, min(size, limit))`, in index order.
    pub fn values(&self, limit: usize) -> Vec<i64> {
        let count = usize::try_from(self.size())
            .unwrap_or(usize::MAX)
            .min(limit);
        let modes = self.modes();
        let mut digits = vec![0i64; modes.len()];
        let mut out = Vec::with_capacity(count);
        // An odometer over the flattened coordinate, first mode fastest: no division
        // per value. Within the domain no sum overflows (`Layout::new`).
        for _ in 0..count {
            out.push(digits.iter().zip(&modes).map(|(c, (_, d))| c * d).sum());
            for (c, (s, _)) in digits.iter_mut().zip(&modes) {
                *c += 1;
                if *c < *s {
                    break;
                }
                *c = 0;
            }
        }
        out
    }
}
