//! Concatenation (thesis §6.4.1): the layout whose modes are the operands, side by
//! side. Its value at a coordinate `(c1, …, cn)` is the sum of the operands' values at
//! their coordinates.

use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::tuple::IntTuple;

/// `(L1, …, Ln)`: the tuple of the operands' shapes and the tuple of their strides.
/// Fails only when there is no operand or the size overflows.
pub fn concat(layouts: &[Layout]) -> Result<Layout> {
    if layouts.is_empty() {
        return Err(LayoutError::Malformed(
            "concat needs at least one layout".to_string(),
        ));
    }
    Layout::new(
        IntTuple::Tuple(layouts.iter().map(|l| l.shape().clone()).collect()),
        IntTuple::Tuple(layouts.iter().map(|l| l.stride().clone()).collect()),
    )
}
