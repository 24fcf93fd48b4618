//! The CuTe layout algebra of thesis chapter 6, as a library: hierarchical layouts
//! `shape:stride`, their interpretation as functions from indices (or coordinates) to
//! offsets, and the operations concat, coalesce, compose, complement, logical divide,
//! zipped divide and logical product, with CuTe's notation and an expression language
//! over them. `atl layout` (the CLI) evaluates such expressions; docs/layouts.md is
//! the user's description.
//!
//! Map: [`tuple`] (hierarchical integer tuples), [`layout`] (the `Layout` type and its
//! well-formedness, size and cosize), [`coord`] (`idx_crd`, `crd_idx`, `lift_crd`),
//! [`apply`] (evaluating a layout), [`concat`], [`coalesce`], [`compose`],
//! [`complement`], [`divide`] (divide and product), [`conditions`] (the loop
//! conditions of §6.5), [`notation`] (reading CuTe notation), [`expr`] (expressions),
//! [`error`], [`arith`] (checked arithmetic).
//!
//! Every operation is total: what has no result is a [`LayoutError`], never a panic or
//! an overflow. The library never prints.

pub mod apply;
pub mod arith;
pub mod coalesce;
pub mod complement;
pub mod compose;
pub mod concat;
pub mod conditions;
pub mod coord;
pub mod divide;
pub mod error;
pub mod expr;
pub mod layout;
pub mod notation;
pub mod tuple;

pub use coalesce::coalesce;
pub use complement::complement;
pub use compose::compose;
pub use concat::concat;
pub use coord::{crd_idx, idx_crd, lift_crd};
pub use divide::{logical_divide, logical_product, zipped_divide};
pub use error::{LayoutError, Result, TextError, TextErrorKind};
pub use expr::evaluate;
pub use layout::Layout;
pub use notation::{parse_layout, parse_tuple};
pub use tuple::IntTuple;
