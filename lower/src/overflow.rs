//! The entry bounds that keep a kernel's `int64_t` index arithmetic from overflowing.
//!
//! C's signed overflow is undefined behaviour, and index expressions can overflow at
//! sizes the kernel would otherwise accept: a ceiling division by a large constant
//! (`(n + c - 1) / c`), a guard `[i * 4611686018427387904 < n]`, an index
//! `f[(i * 4611686018427387904) % n]`, an `assume` with a product. The analysis of
//! what fits is `atl_loopir::int64` (intervals and magnitude polynomials over every
//! index expression the C evaluates, flat indices of loads and stores included); this
//! pass only *proposes* the entry check `size <= B` for the sizes that need it
//! (largest `B` that works, checked right after `size >= 1`, E0937). It is not
//! trusted: the translation validator proves that every index expression fits under
//! the kernel's preconditions, so a bound forgotten here makes the kernel not
//! validated. A kernel that would need a bound below
//! `atl_loopir::int64::min_index_range_bound` (an ordinary size refused) is refused
//! here, E0938, naming the expression.

use atl_lang::diag::Diagnostic;
use atl_loopir::int64::{Env, INT64_MAX, OVERFLOW_HELP, first_overflow, min_index_range_bound};

use crate::ir::Kernel;

/// The sizes that need an entry check `size <= bound` for the kernel's index
/// arithmetic not to overflow, with the largest such bound (none needed: empty).
/// E0938 when only sizes below the least bound a kernel may set would do.
pub(crate) fn size_bounds(k: &Kernel) -> Result<Vec<(String, i64)>, Diagnostic> {
    if first_overflow(k, INT64_MAX).is_none() {
        return Ok(Vec::new());
    }
    let least = i128::from(min_index_range_bound(k.sizes.len()));
    if let Some(what) = first_overflow(k, least) {
        return Err(Diagnostic::error(
            "E0938",
            format!(
                "the kernel of `{}` may overflow 64-bit index arithmetic: {what} is not \
                 shown to stay within int64_t even when every size is at most {least}",
                k.name
            ),
        )
        .with_help(OVERFLOW_HELP));
    }
    // The largest bound that works: fitting is monotone in it.
    let (mut good, mut bad) = (least, INT64_MAX);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if first_overflow(k, mid).is_none() {
            good = mid;
        } else {
            bad = mid;
        }
    }
    let bound = i64::try_from(good).unwrap_or(i64::MAX);
    let entry = Env::new(k);
    Ok(k.sizes
        .iter()
        .filter(|s| entry.size_cap(s) > good)
        .map(|s| (s.clone(), bound))
        .collect())
}
