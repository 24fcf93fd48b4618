//! The one error type of the layout algebra. Every operation that can fail returns it
//! instead of panicking: a malformed layout, a coordinate that does not fit a shape, an
//! operation with no layout as its result, or arithmetic beyond 64 bits.

use std::fmt;

/// Why a layout operation has no result. The message says what failed and why, in
/// terms of the operands, so that a front end can show it as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The shape and stride are not congruent, an extent is negative, or a tuple is
    /// empty: the pair is not a layout.
    Malformed(String),
    /// A coordinate or index that the layout cannot interpret (negative, or a tuple
    /// where the shape has an integer).
    Coordinate(String),
    /// `compose(A, B)` is not a layout, or not one that agrees with `A ∘ B`.
    Compose(String),
    /// `complement(A, M)` has no result.
    Complement(String),
    /// A size, stride or value does not fit in 64 bits.
    Overflow(String),
    /// A check that enumerates a domain was asked for one too large to enumerate.
    TooLarge(String),
}

impl LayoutError {
    /// The message, without the kind.
    pub fn message(&self) -> &str {
        match self {
            LayoutError::Malformed(m)
            | LayoutError::Coordinate(m)
            | LayoutError::Compose(m)
            | LayoutError::Complement(m)
            | LayoutError::Overflow(m)
            | LayoutError::TooLarge(m) => m,
        }
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for LayoutError {}

/// The result of a layout operation.
pub type Result<T> = std::result::Result<T, LayoutError>;

/// An error about a text: layout notation or an expression ([`crate::notation`],
/// [`crate::expr`]), with the byte range of the text it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    /// Byte offsets into the text, `start..end` (empty at the end of the text).
    pub span: std::ops::Range<usize>,
    pub kind: TextErrorKind,
    pub message: String,
}

/// What kind of problem a [`TextError`] is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextErrorKind {
    /// The text does not parse.
    Syntax,
    /// An unknown operation, the wrong number of arguments, or an argument of the
    /// wrong kind (an integer where a layout is expected or the reverse).
    Arguments,
    /// A layout literal that is not a layout, or an operation without a result.
    Layout(LayoutError),
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.span.start, self.message)
    }
}

impl std::error::Error for TextError {}
