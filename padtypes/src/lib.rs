//! `atl-padtypes`: symbolic pad-set types and access safety, the gate before lowering
//! (DESIGN §5, thesis §4.3.1 and §5.5).
//!
//! - [`pad_predicate`] / [`def_pad_type`]: the pad predicate of an expression, a
//!   formula over its output coordinates that holds only at positions guaranteed to be
//!   padding (never written by the lowered code). The rules are in [`infer`]'s
//!   documentation; the formula type in [`pred`].
//! - [`check_program`]: for every definition (plain and derived), every `trunc_l` /
//!   `trunc_r` drops only padding, every access index is provably in bounds, and every
//!   reshape amount is valid — each a solver query under the context of the subterm
//!   (binder ranges, guards, `assume`s, sizes >= 1). "Unknown" is a failure.
//! - [`check_definition`]: the same for one definition and the definitions it uses:
//!   what lowering calls before lowering that definition.
//! - [`marked`]: an evaluator that marks padding values (thesis §5.5.1), the semantics
//!   the pad predicates are tested against.
//!
//! Diagnostic codes `E09xx` (docs/errors.md). Library code never prints.

mod check;
pub mod infer;
pub mod marked;
pub mod pred;

use std::collections::{BTreeSet, HashSet};
use std::fmt;

use atl_lang::diag::Diagnostic;
use atl_lang::ir::{Expr, ExprKind, Program};
use atl_lang::shapes::{Shape, ShapeEnv, show_shape};
use atl_solver::Solver;

pub use check::CheckStats;
pub use pred::PadPred;

use crate::infer::{Analyzer, Obligation};

/// The pad-set type of an expression: its shape and its pad predicate over the
/// coordinates `$0 .. $(rank-1)`.
#[derive(Clone, Debug, PartialEq)]
pub struct PadType {
    pub shape: Shape,
    pub pred: PadPred,
}

impl PadType {
    /// Whether the type claims that the position `pos` (concrete, in bounds) is
    /// padding at the given sizes. Quantifiers are enumerated.
    pub fn is_padding_at(&self, sizes: &dyn Fn(&str) -> Option<i64>, pos: &[i64]) -> Option<bool> {
        let env = |name: &str| match pred::coord_dim(name) {
            Some(d) => pos.get(d).copied(),
            None => sizes(name),
        };
        self.pred.eval(&env).ok()
    }
}

/// `{ [$0, $1] < [n, m] | $1 >= m - 2 }`.
impl fmt::Display for PadType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let coords: Vec<String> = (0..self.shape.len()).map(pred::coord).collect();
        write!(
            f,
            "{{ [{}] < {} | {} }}",
            coords.join(", "),
            show_shape(&self.shape),
            self.pred
        )
    }
}

/// Checks every definition of `program` (derived ones included, as added by
/// `atl_rewrites::with_derived`): pad types of truncations, access safety, reshape
/// amounts. Returns one diagnostic per failing subterm, definitions in program order,
/// subterms in pre-order. `shapes` must be the shape environment of `program` (with
/// every definition's shape); definitions whose shape is unknown are skipped (the front
/// end has reported them).
pub fn check_program(program: &Program, shapes: &ShapeEnv, solver: &Solver) -> Vec<Diagnostic> {
    check_program_with_stats(program, shapes, solver).0
}

/// [`check_program`] with counters (for benchmarks and `atl check --stats`-style
/// output).
pub fn check_program_with_stats(
    program: &Program,
    shapes: &ShapeEnv,
    solver: &Solver,
) -> (Vec<Diagnostic>, CheckStats) {
    let names: Vec<&str> = program.defs.iter().map(|d| d.name.as_str()).collect();
    check_defs(program, shapes, solver, &names)
}

/// Checks definition `name` and every definition it refers to (transitively): the
/// precondition of lowering `name`. An unknown name gives no diagnostic (the caller
/// reports unknown definitions).
pub fn check_definition(
    program: &Program,
    shapes: &ShapeEnv,
    solver: &Solver,
    name: &str,
) -> Vec<Diagnostic> {
    let mut needed = BTreeSet::new();
    let mut stack = vec![name.to_string()];
    while let Some(n) = stack.pop() {
        let Some(def) = program.def(&n) else { continue };
        if !needed.insert(n.clone()) {
            continue;
        }
        def.body.walk(&mut |e| {
            if let ExprKind::DefRef(r) = &e.kind {
                stack.push(r.clone());
            }
        });
    }
    let names: Vec<&str> = program
        .defs
        .iter()
        .map(|d| d.name.as_str())
        .filter(|n| needed.contains(*n))
        .collect();
    check_defs(program, shapes, solver, &names).0
}

fn check_defs(
    program: &Program,
    shapes: &ShapeEnv,
    solver: &Solver,
    names: &[&str],
) -> (Vec<Diagnostic>, CheckStats) {
    let mut analyzer = Analyzer::new(program, shapes);
    let mut stats = CheckStats::default();
    let mut obligations: Vec<Obligation<'_>> = Vec::new();
    for name in names {
        let Some(def) = program.defs.iter().find(|d| d.name == *name) else {
            continue;
        };
        if !shapes.globals.contains_key(&def.name) {
            continue;
        }
        stats.definitions += 1;
        let mut own: Vec<Obligation<'_>> = Vec::new();
        if analyzer.check_def(&def.name, &def.body, &mut own).is_err() {
            // Only reachable by a program that escaped the shape checker.
            continue;
        }
        own.sort_by_key(|o| o.order);
        obligations.extend(own);
    }
    let mut diags = Vec::new();
    let mut seen = HashSet::new();
    for d in check::discharge_all(program, &shapes.sizes, solver, &obligations, &mut stats) {
        // Derived programs often repeat a subterm; one report per place is enough.
        let key = (
            d.code,
            d.message.clone(),
            d.primary.as_ref().map(|l| (l.span, l.message.clone())),
        );
        if seen.insert(key) {
            diags.push(d);
        }
    }
    (diags, stats)
}

/// The pad-set type of a closed expression in the scope of `program` (it may mention
/// sizes, inputs and definitions). Does not check anything. `Err` only for an
/// expression that is not well-shaped.
pub fn pad_predicate(
    program: &Program,
    shapes: &ShapeEnv,
    expr: &Expr,
) -> Result<PadType, Diagnostic> {
    let mut analyzer = Analyzer::new(program, shapes);
    analyzer
        .infer_expr(expr)
        .map(|(shape, pred)| PadType { shape, pred })
        .map_err(|reason| {
            Diagnostic::error("E0907", format!("no pad type: {reason}"))
                .at(expr.span, "this expression")
                .with_help("check the expression's shapes first (`atl check`)")
        })
}

/// A more readable equivalent of a pad type (for display, e.g. the REPL's `:pads`):
/// every atom is simplified by the solver's index simplifier under the sizes, the
/// `assume`s and the coordinate ranges, so that `64 * ($0 / 64) + $0 % 64 >= H` reads
/// `$0 >= H`. Checking never needs this.
pub fn simplify_pad_type(
    ty: &PadType,
    program: &Program,
    shapes: &ShapeEnv,
    solver: &Solver,
) -> PadType {
    let mut facts: Vec<atl_lang::index::Pred> =
        program.assumes.iter().map(|a| a.pred.clone()).collect();
    facts.extend(infer::coord_ranges(&ty.shape, 0));
    let facts = atl_solver::Facts {
        sizes: shapes.sizes.clone(),
        facts,
        arrays: atl_solver::IndexArrayFacts::of_program(program),
    };
    let pred = ty
        .pred
        .map_atoms(&mut |p| atl_solver::simplify_pred(p, &facts, solver));
    PadType {
        shape: ty.shape.clone(),
        pred,
    }
}

/// The pad-set type of definition `name`, if it exists and is well-shaped.
pub fn def_pad_type(program: &Program, shapes: &ShapeEnv, name: &str) -> Option<PadType> {
    let def = program.def(name)?;
    pad_predicate(program, shapes, &def.body).ok()
}
