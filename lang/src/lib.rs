//! `atl-lang`: the ATL front end — spans, lexer, parser, surface AST, core IR,
//! diagnostics, shape inference, pretty printer and the reference interpreter.
//!
//! Library code never prints: everything returns data or writes to a caller's
//! `io::Write`.

pub mod ast;
pub mod diag;
pub mod index;
pub mod ir;
pub mod poly;
pub mod span;
