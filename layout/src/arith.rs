//! Checked 64-bit arithmetic. Layouts come from user text, so any extent or stride can
//! be near `i64::MAX`; every product and sum the algebra computes goes through here and
//! becomes a [`LayoutError::Overflow`] instead of wrapping or panicking.

use crate::error::{LayoutError, Result};

fn overflow(what: &str, a: i64, op: &str, b: i64) -> LayoutError {
    LayoutError::Overflow(format!("{what}: {a} {op} {b} does not fit in 64 bits"))
}

/// `a * b`, or an overflow error naming `what` was being computed.
pub fn mul(a: i64, b: i64, what: &str) -> Result<i64> {
    a.checked_mul(b).ok_or_else(|| overflow(what, a, "*", b))
}

/// `a + b`, or an overflow error naming `what` was being computed.
pub fn add(a: i64, b: i64, what: &str) -> Result<i64> {
    a.checked_add(b).ok_or_else(|| overflow(what, a, "+", b))
}

/// The product of `values`, checked.
pub fn product(values: impl IntoIterator<Item = i64>, what: &str) -> Result<i64> {
    values.into_iter().try_fold(1, |acc, v| mul(acc, v, what))
}

/// `ceil(a / b)` for `a >= 0`, `b >= 1` (no overflow is possible there).
pub fn ceil_div(a: i64, b: i64) -> i64 {
    a / b + i64::from(a % b != 0)
}
