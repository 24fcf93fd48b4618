//! The complement `complement(A, M)`: the layout of the offsets below `M` that A does
//! not reach, so that `(A, complement(A, M))` enumerates `[0, N)` once, with `N >= M`.
//! Chapter 6 of the thesis does not define it; this is CuTe's definition (Cecka, "CuTe
//! layout representation and algebra").
//!
//! A's modes of extent > 1 are sorted by stride; below, between and above them the
//! complement puts the gaps: with `c` the extent times stride of the modes so far
//! (starting at 1), a mode `s:d` needs `c | d` and adds the gap `d/c : c`, then
//! `c = s*d`; at the end `ceil(M/c) : c`. The result is coalesced.
//!
//! It has a result when A's strides are `>= 0`, A has no broadcast mode (stride 0,
//! extent > 1), its size is > 0, `M >= 1`, and every sorted stride is a multiple of
//! the `c` before it (which also makes A injective). Then `(A, complement(A, M))` is a
//! bijection from its domain onto `[0, N)`, `N = c * ceil(M/c)` for the final `c`; the
//! image is exactly `[0, M)` when `c` divides `M`.

use crate::arith;
use crate::coalesce::coalesce;
use crate::error::{LayoutError, Result};
use crate::layout::Layout;

/// `complement(A, M)`, or why A has none.
pub fn complement(a: &Layout, m: i64) -> Result<Layout> {
    if m < 1 {
        return Err(LayoutError::Complement(format!(
            "the bound of `complement({a}, {m})` must be at least 1"
        )));
    }
    if a.size() == 0 {
        return Err(LayoutError::Complement(format!(
            "`{a}` has size 0: it has no complement"
        )));
    }
    let mut modes: Vec<(i64, i64)> = a.modes().into_iter().filter(|&(s, _)| s > 1).collect();
    if let Some(&(s, d)) = modes.iter().find(|&&(_, d)| d <= 0) {
        return Err(LayoutError::Complement(format!(
            "`{a}` has the mode {s}:{d}: a complement needs strides > 0 (a stride-0 mode is not injective)"
        )));
    }
    modes.sort_by_key(|&(s, d)| (d, s));
    let mut gaps = Vec::with_capacity(modes.len() + 1);
    let mut covered = 1i64;
    for (s, d) in modes {
        if d % covered != 0 {
            return Err(LayoutError::Complement(format!(
                "the modes of `{a}` overlap or leave no room for a layout between them: sorted by stride, the mode {s}:{d} starts at a stride that is not a multiple of {covered}, the extent times stride of the modes below it"
            )));
        }
        gaps.push((d / covered, covered));
        covered = arith::mul(s, d, "the complement's stride")?;
    }
    gaps.push((arith::ceil_div(m, covered), covered));
    coalesce(&Layout::from_modes(&gaps)?)
}
