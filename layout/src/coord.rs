//! Indices and coordinates (thesis §6.3.1–6.3.3). A shape's coordinates are
//! colexicographic: the first mode varies fastest. `idx_crd` turns a 1-D index into a
//! coordinate congruent to the shape, `crd_idx` back, and `lift_crd` turns a
//! coordinate that is only compatible with the shape (an integer standing for a whole
//! sub-tuple) into a congruent one.
//!
//! The last mode absorbs overflow: `idx_crd((2,3), 7) = (1,3)`, not an error. This is
//! the thesis's definition (its `idx_crd_list` keeps the rest in the last element), and
//! it is why an index beyond the size still has a value, and why laws such as
//! coalesce's hold on `[0, size)` only.

use crate::arith;
use crate::error::{LayoutError, Result};
use crate::tuple::IntTuple;

/// The coordinate of index `i` in `shape`, congruent to it.
pub fn idx_crd(shape: &IntTuple, i: i64) -> Result<IntTuple> {
    if i < 0 {
        return Err(LayoutError::Coordinate(format!(
            "the index {i} is negative"
        )));
    }
    let extents = shape.leaves();
    let mut digits = Vec::with_capacity(extents.len());
    let mut rest = i;
    for (k, &n) in extents.iter().enumerate() {
        if k + 1 == extents.len() {
            // The last mode takes what is left, however large.
            digits.push(rest);
        } else if n == 0 {
            return Err(LayoutError::Coordinate(format!(
                "the shape `{shape}` has extent 0 in mode {k}: its domain is empty, so the index {i} has no coordinate"
            )));
        } else {
            digits.push(rest % n);
            rest /= n;
        }
    }
    // `digits` has one entry per leaf, so this cannot fail.
    shape
        .with_leaves(&digits)
        .ok_or_else(|| LayoutError::Coordinate("internal: coordinate length".to_string()))
}

/// The index of a coordinate of `shape` (compatible with it; see [`lift_crd`]): the
/// inverse of [`idx_crd`].
pub fn crd_idx(shape: &IntTuple, crd: &IntTuple) -> Result<i64> {
    let digits = lift_crd(shape, crd)?.leaves();
    let mut index = 0i64;
    let mut place = 1i64;
    for (k, (&c, &n)) in digits.iter().zip(&shape.leaves()).enumerate() {
        index = arith::add(index, arith::mul(c, place, "an index")?, "an index")?;
        if k + 1 < digits.len() {
            place = arith::mul(place, n, "an index")?;
        }
    }
    Ok(index)
}

/// The coordinate congruent to `shape` that `crd` stands for. Where `crd` has an
/// integer and `shape` a tuple, the integer is an index into that whole sub-shape.
///
/// The thesis's definition lifts it into the first half of the sub-tuple only
/// (`Tup s1 s2, Singleton c => idx_crd s1 c`); the intended case, implemented here,
/// is `Tup s, Singleton c => idx_crd s c`. A tuple where the shape has an integer, or
/// tuples of different lengths, are errors (the thesis returns the coordinate
/// unchanged and then ignores it).
pub fn lift_crd(shape: &IntTuple, crd: &IntTuple) -> Result<IntTuple> {
    match (shape, crd) {
        (IntTuple::Int(_), IntTuple::Int(c)) => {
            if *c < 0 {
                Err(LayoutError::Coordinate(format!(
                    "the coordinate {c} is negative"
                )))
            } else {
                Ok(IntTuple::Int(*c))
            }
        }
        (IntTuple::Tuple(_), IntTuple::Int(c)) => idx_crd(shape, *c),
        (IntTuple::Tuple(ss), IntTuple::Tuple(cs)) if ss.len() == cs.len() => Ok(IntTuple::Tuple(
            ss.iter()
                .zip(cs)
                .map(|(s, c)| lift_crd(s, c))
                .collect::<Result<_>>()?,
        )),
        _ => Err(LayoutError::Coordinate(format!(
            "the coordinate `{crd}` is not compatible with the shape `{shape}`"
        ))),
    }
}
