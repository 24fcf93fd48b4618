//! Composition (thesis §6.4.3): `compose(A, B)` is a layout `R` with the shape of `B`
//! (each of B's modes refined) such that `R(i) = A(B(i))` for `i` in `[0, size B)`.
//!
//! B's modes are composed one at a time and the results put in B's tree. For one mode
//! `s:d` the thesis's two steps are applied to A's flattened modes:
//! - *divide* by `d` (`div_layout`): walk A's modes with `k = d`; a mode `x:n` with
//!   `x | k` is used up (`k /= x`); one with `k | x` becomes `x/k : k*n` and the walk
//!   is done (`k = 1`); anything else is a divisibility failure;
//! - coalesce, then *keep* `s` elements (`mod_layout`): walk the modes with `k = s`; a
//!   mode `x:n` with `x <= k` must divide `k` (`k /= x`); a longer one is cut to `k`.
//!
//! The thesis proves `interpret (A ∘ B) = interpret A . interpret B` for the cases
//! where its partial function returns a layout, but that is not true of every such
//! case, so `compose` also refuses these (each refusal is tested):
//! - a mode of B with stride 0 and extent > 1: the thesis's walk with `k = 0` uses up
//!   every mode of A and returns a layout of size 1, not `s`;
//! - B's image outside `[0, size A)`: the thesis's `mod_layout` silently returns fewer
//!   than `s` elements when A runs out; here the largest value of B must be below
//!   `size A` (a negative stride of B is refused too);
//! - composing B's modes separately (distributing over concatenation) is only right
//!   when `A(Σ t_k) = Σ A(t_k)` for the terms `t_k` of B's modes. The thesis states it
//!   for an injective B, which is neither necessary (`20:2 ∘ (2,2):(1,1)` is fine)
//!   nor sufficient: `(6,2):(1,10) ∘ (2,3):(3,2)` is injective, every mode composes,
//!   yet at 5 the result is 7 and `A(B(5)) = A(7) = 11`. The condition checked here is
//!   exact for carries: at every boundary between A's (coalesced) modes, the terms'
//!   remainders can never add up past it.
//!
//! A mode of B of extent 1 composes to `1:0` without conditions (its one coordinate
//! is 0, and `A(0) = 0`). When B's size is 0 the result is B's shape with zero strides.

use crate::arith;
use crate::coalesce::{coalesce, coalesce_modes};
use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::tuple::IntTuple;

/// `A ∘ B`, or why it is not a layout that agrees with `A(B(i))` on `[0, size B)`.
pub fn compose(a: &Layout, b: &Layout) -> Result<Layout> {
    let b_modes = b.modes();
    if b.size() == 0 {
        let zeros = vec![0; b_modes.len()];
        let stride = b.shape().with_leaves(&zeros).unwrap_or(IntTuple::Int(0));
        return Layout::new(b.shape().clone(), stride);
    }
    for &(s, d) in &b_modes {
        if s > 1 && d < 0 {
            return Err(LayoutError::Compose(format!(
                "`{b}` has the negative stride {d}; composition is defined here for strides >= 0"
            )));
        }
        if s > 1 && d == 0 {
            return Err(LayoutError::Compose(format!(
                "`{b}` has the mode {s}:0 (stride 0, extent > 1): the thesis's composition gives it extent 1 instead of {s}, so it has no result here"
            )));
        }
    }
    let last = b.cosize() - 1;
    if last >= a.size() {
        return Err(LayoutError::Compose(format!(
            "the image of `{b}` reaches {last}, outside the domain [0, {}) of `{a}`",
            a.size()
        )));
    }
    let a_modes = a.modes();
    let mut results = Vec::with_capacity(b_modes.len());
    for &(s, d) in &b_modes {
        results.push(compose_mode(&a_modes, s, d, a, b)?);
    }
    check_distributive(a, b, &b_modes)?;
    // Put each mode's result where the mode was in B's tree.
    let mut next = results.into_iter();
    let (shape, stride) = graft(b.shape(), &mut next);
    Layout::new(shape, stride)
}

/// The composition of A (its flat modes) with the one mode `s:d` of B: divide, then
/// keep `s` elements, each coalesced.
fn compose_mode(a_modes: &[(i64, i64)], s: i64, d: i64, a: &Layout, b: &Layout) -> Result<Layout> {
    if s == 1 {
        return Layout::leaf(1, 0);
    }
    // Divide by d.
    let mut k = d;
    let mut divided = Vec::with_capacity(a_modes.len());
    for &(x, n) in a_modes {
        if k % x == 0 {
            // The mode is used up. Its stride no longer matters (extent 1), and
            // `x * n` could overflow, so it is 0.
            divided.push((1, 0));
            k /= x;
        } else if x % k == 0 {
            divided.push((x / k, arith::mul(k, n, "a stride of the composition")?));
            k = 1;
        } else {
            return Err(LayoutError::Compose(format!(
                "the stride {d} of `{b}` does not fit the extents of `{a}`: at the mode {x}:{n} the remaining stride {k} neither divides {x} nor is divisible by it"
            )));
        }
    }
    // Keep s elements.
    let mut k = s;
    let mut kept = Vec::new();
    for (x, n) in coalesce_modes(&divided) {
        if k <= 1 {
            break;
        }
        if x <= k {
            if k % x != 0 {
                return Err(LayoutError::Compose(format!(
                    "the extent {s} of the mode {s}:{d} of `{b}` does not fit `{a}`: after dividing by the stride, the remaining extent {k} is not a multiple of the extent {x}"
                )));
            }
            kept.push((x, n));
            k /= x;
        } else {
            kept.push((k, n));
            k = 1;
        }
    }
    if k > 1 {
        // Ruled out by the image check; kept so that a wrong size is never returned.
        return Err(LayoutError::Compose(format!(
            "the mode {s}:{d} of `{b}` runs past the end of `{a}`"
        )));
    }
    coalesce(&Layout::from_modes(&kept)?)
}

/// Refuses a composition whose modes, composed separately, would not add up to
/// `A(B(i))`: A is additive on sums of B's terms when no sum carries across a boundary
/// between A's modes. With `A` coalesced, its boundaries are the partial products
/// `P` of its extents; B's term of a mode `s:d` has remainder `(c*d) mod P`, and the
/// sums cannot carry when the largest remainders add up to less than `P`.
fn check_distributive(a: &Layout, b: &Layout, b_modes: &[(i64, i64)]) -> Result<()> {
    let terms: Vec<(i64, i64)> = b_modes.iter().copied().filter(|&(s, _)| s > 1).collect();
    if terms.len() < 2 {
        return Ok(());
    }
    let a_modes = coalesce(a)?.modes();
    let mut boundary = 1i64;
    for &(x, _) in a_modes.iter().take(a_modes.len().saturating_sub(1)) {
        // Partial products divide the size, which fits.
        boundary *= x;
        let mut total = 0i64;
        for &(s, d) in &terms {
            let most = largest_remainder(s, d, boundary);
            total = total.saturating_add(most);
        }
        if total >= boundary {
            return Err(LayoutError::Compose(format!(
                "the modes of `{b}` do not compose separately with `{a}`: their offsets can add up past {boundary}, where `{a}` changes mode, so A(B(i)) is not the sum of the modes' compositions"
            )));
        }
    }
    Ok(())
}

/// The largest `(c * d) mod p` for `c` in `[0, s)`.
fn largest_remainder(s: i64, d: i64, p: i64) -> i64 {
    if d % p == 0 {
        0
    } else if p % d == 0 {
        // c*d mod p runs through the multiples of d below p.
        (s - 1).min(p / d - 1) * d
    } else {
        // Not reached when the stride passed the divide step; the bound is safe.
        p - 1
    }
}

/// B's shape with its leaves replaced, in order, by the given layouts' shapes, and the
/// same for strides.
fn graft(shape: &IntTuple, next: &mut impl Iterator<Item = Layout>) -> (IntTuple, IntTuple) {
    match shape {
        IntTuple::Int(_) => match next.next() {
            Some(l) => (l.shape().clone(), l.stride().clone()),
            None => (IntTuple::Int(1), IntTuple::Int(0)),
        },
        IntTuple::Tuple(items) => {
            let (ss, ds) = items.iter().map(|t| graft(t, next)).unzip();
            (IntTuple::Tuple(ss), IntTuple::Tuple(ds))
        }
    }
}
