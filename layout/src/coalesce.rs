//! Coalescing (thesis §6.4.2): the simplest layout with the same values on the domain.
//! Modes of extent 1 are dropped, and a mode `s1:d1` followed by `s2:d2` with
//! `d2 = s1 * d1` is merged into `s1*s2:d1` (the pair walks memory contiguously).
//!
//! The law `coalesce(L)(i) = L(i)` holds for `i` in `[0, size)` only. Beyond the size
//! the last mode absorbs the overflow, and coalescing changes which mode is last:
//! `(3,1):(1,100)` is `3:1` coalesced, and at 5 the first is 102, the second 5.
//!
//! The thesis coalesces a binary tree bottom-up and keeps the nesting of what it
//! cannot merge; here (as in CuTe) the result is flat: an integer layout, or a tuple of
//! integer modes. A layout of size 1 coalesces to `1:0`, one of size 0 to `0:0`.
//!
//! `proofs/rocq/Layouts.v` models [`coalesce_modes`] step for step (`co_step`,
//! `coalesce`) and proves the law there (`coalesce_size`, `coalesce_apply`): a change
//! here is a change there.

use crate::error::Result;
use crate::layout::Layout;

/// The coalesced layout. It has the same size, and the same values on `[0, size)`.
pub fn coalesce(layout: &Layout) -> Result<Layout> {
    Layout::from_modes(&coalesce_modes(&layout.modes()))
}

/// Coalesces a flat list of modes `(extent, stride)`.
pub fn coalesce_modes(modes: &[(i64, i64)]) -> Vec<(i64, i64)> {
    if modes.iter().any(|&(s, _)| s == 0) {
        return vec![(0, 0)];
    }
    let mut out: Vec<(i64, i64)> = Vec::new();
    for &(s, d) in modes {
        if s == 1 {
            continue;
        }
        if let Some(last) = out.last_mut() {
            // A product that overflows cannot equal a 64-bit stride: no merge. The
            // merged extent divides the size, which fits.
            if last.0.checked_mul(last.1) == Some(d) {
                last.0 *= s;
                continue;
            }
        }
        out.push((s, d));
    }
    out
}
