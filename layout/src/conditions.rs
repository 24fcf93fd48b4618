//! The conditions of thesis §6.5 under which a loop `for i in [0, n)` may be
//! rewritten to run over `P(i)` instead of `i` (a permuting layout `P` composed into
//! the loop's layouts), for the case of the same bounds before and after and no
//! guard (the predicate always true):
//! - *range*: every `P(i)`, `i` in `[0, n)`, lies in `[0, n)` (no new index is computed);
//! - *injectivity*: no two `i` in `[0, n)` have the same `P(i)` (nothing is computed twice);
//! - *surjectivity*: every `j` in `[0, n)` is some `P(i)` (nothing is left out).
//!
//! The thesis's printed formulas are garbled (the range condition applies `interpret`
//! to `i` without `P`; surjectivity quantifies over the new range and asks for a
//! preimage in the old one, the wrong way round); these are the intended statements.
//! They are decided by enumeration, so `n` is limited to [`MAX_DOMAIN`].

use crate::error::{LayoutError, Result};
use crate::layout::Layout;

/// The largest domain the checks enumerate.
pub const MAX_DOMAIN: i64 = 1 << 24;

/// A condition's outcome: it holds, or the witness of its failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    /// `P(index) = value` is outside `[0, n)`.
    OutOfRange {
        index: i64,
        value: i64,
    },
    /// `P(first) = P(second) = value`, `first < second`.
    Collision {
        first: i64,
        second: i64,
        value: i64,
    },
    /// No index of the domain is mapped to `value`.
    Missed {
        value: i64,
    },
}

/// The values of `p` on `[0, n)` (beyond `size p` the last mode goes on).
fn values(p: &Layout, n: i64) -> Result<Vec<i64>> {
    if !(0..=MAX_DOMAIN).contains(&n) {
        return Err(LayoutError::TooLarge(format!(
            "the domain [0, {n}) is negative or larger than {MAX_DOMAIN}, the most these checks enumerate"
        )));
    }
    if n <= p.size() {
        // `n` is at most MAX_DOMAIN, so it is a valid count.
        return Ok(p.values(n as usize));
    }
    (0..n).map(|i| p.apply(i)).collect()
}

/// The range condition of `p` on `[0, n)`.
pub fn range(p: &Layout, n: i64) -> Result<Verdict> {
    let vals = values(p, n)?;
    Ok(vals
        .iter()
        .enumerate()
        .find(|&(_, &v)| !(0..n).contains(&v))
        .map_or(Verdict::Holds, |(i, &v)| Verdict::OutOfRange {
            index: i as i64,
            value: v,
        }))
}

/// The injectivity condition of `p` on `[0, n)`.
pub fn injectivity(p: &Layout, n: i64) -> Result<Verdict> {
    let vals = values(p, n)?;
    let mut first = std::collections::HashMap::with_capacity(vals.len());
    for (i, &v) in vals.iter().enumerate() {
        if let Some(&earlier) = first.get(&v) {
            return Ok(Verdict::Collision {
                first: earlier,
                second: i as i64,
                value: v,
            });
        }
        first.insert(v, i as i64);
    }
    Ok(Verdict::Holds)
}

/// The surjectivity condition of `p` onto `[0, n)`.
pub fn surjectivity(p: &Layout, n: i64) -> Result<Verdict> {
    let vals = values(p, n)?;
    let mut hit = vec![false; vals.len()];
    for &v in &vals {
        if (0..n).contains(&v) {
            hit[v as usize] = true;
        }
    }
    Ok(hit
        .iter()
        .position(|&h| !h)
        .map_or(Verdict::Holds, |j| Verdict::Missed { value: j as i64 }))
}
