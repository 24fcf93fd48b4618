//! `atl-lang`: the ATL front end — spans, lexer, parser, surface AST, core IR,
//! diagnostics, shape inference, pretty printer and the reference interpreter.
//!
//! Library code never prints: everything returns data or writes to a caller's
//! `io::Write`.

pub mod ast;
pub mod codes;
pub mod diag;
pub mod fork_guard;
pub mod formats;
pub mod functions;
pub mod index;
pub mod interp;
pub mod ir;
pub mod lexer;
pub mod monitor;
pub mod parser;
pub mod poly;
pub mod pretty;
pub mod reshape;
pub mod resolve;
pub mod rng;
pub mod scatter;
pub mod shapes;
pub mod span;
pub mod sparse;
pub mod steps;
pub mod suggest;
pub mod tensor;

use diag::Diagnostic;
use ir::Program;
use shapes::ShapeEnv;

pub use tensor::Tensor;

/// A program that parsed, resolved and shape-checked, with the shapes of its inputs
/// and definitions.
#[derive(Clone, Debug)]
pub struct Checked {
    pub program: Program,
    pub shapes: ShapeEnv,
}

/// Runs the front end on a source text: lexing, parsing, name resolution and shape
/// inference. Returns the checked program when there is no error, and every diagnostic
/// found either way.
pub fn check_source(source: &str) -> (Option<Checked>, Vec<Diagnostic>) {
    let (file, mut diags) = parser::parse_file(source);
    let program = resolve::resolve(&file, &mut diags);
    let (shapes, shape_diags) = shapes::check_program(&program);
    diags.extend(shape_diags);
    // Report in source order (stages find problems in their own order); positionless
    // diagnostics last.
    diags.sort_by_key(|d| d.primary.as_ref().map_or(usize::MAX, |l| l.span.start));
    if diag::has_errors(&diags) {
        (None, diags)
    } else {
        (Some(Checked { program, shapes }), diags)
    }
}
