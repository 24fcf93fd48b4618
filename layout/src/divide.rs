//! Division and product, defined from composition and complement as CuTe defines them
//! (thesis ch. 6 names them without definitions):
//! - `logical_divide(A, B) = A ∘ (B, complement(B, size A))`: mode 0 is A seen
//!   through the tile B, mode 1 the tiles' positions;
//! - `zipped_divide(A, B)`: with B of rank 1, `logical_divide`; with B a tuple of
//!   `r` modes (a tiler, one per mode of A), each of A's first `r` top modes is divided
//!   by its tile and the result is `((tile_0, …), (rest_0, …, A's other modes))`;
//! - `logical_product(A, B) = (A, complement(A, size A * cosize B) ∘ B)`: A repeated
//!   at the places B gives.
//!
//! Each fails where its compose or complement does.

use crate::arith;
use crate::complement::complement;
use crate::compose::compose;
use crate::concat::concat;
use crate::error::{LayoutError, Result};
use crate::layout::Layout;

/// `A ∘ (B, complement(B, size A))`.
pub fn logical_divide(a: &Layout, b: &Layout) -> Result<Layout> {
    let rest = complement(b, a.size())?;
    compose(a, &concat(&[b.clone(), rest])?)
}

/// `(A, complement(A, size A * cosize B) ∘ B)`.
pub fn logical_product(a: &Layout, b: &Layout) -> Result<Layout> {
    let bound = arith::mul(
        a.size(),
        b.cosize(),
        "the bound of the product's complement",
    )?;
    let rest = complement(a, bound)?;
    concat(&[a.clone(), compose(&rest, b)?])
}

/// The divide with the tiles gathered in mode 0 and the rests in mode 1.
pub fn zipped_divide(a: &Layout, b: &Layout) -> Result<Layout> {
    let tiles = b.top_modes();
    if tiles.len() == 1 {
        return logical_divide(a, b);
    }
    let modes = a.top_modes();
    if modes.len() < tiles.len() {
        return Err(LayoutError::Malformed(format!(
            "`zipped_divide`: the tiler `{b}` has {} modes but `{a}` only {}",
            tiles.len(),
            modes.len()
        )));
    }
    let mut inner = Vec::with_capacity(tiles.len());
    let mut outer = Vec::with_capacity(modes.len());
    for (mode, tile) in modes.iter().zip(&tiles) {
        let divided = logical_divide(mode, tile)?.top_modes();
        // `logical_divide` composes with a pair, so its result has two top modes.
        let [t, r] = <[Layout; 2]>::try_from(divided).map_err(|_| {
            LayoutError::Malformed("internal: a logical divide without two modes".to_string())
        })?;
        inner.push(t);
        outer.push(r);
    }
    outer.extend(modes[tiles.len()..].iter().cloned());
    concat(&[concat(&inner)?, concat(&outer)?])
}
