//! The reference interpreter: evaluates core-IR expressions to dense, row-major `f64`
//! tensors with exactly the semantics of DESIGN §3.2. Rewrites, lowering and the C
//! backend are all tested against it, so it favours structure that is easy to check
//! against the definitions, while staying fast enough for test-sized kernels.
//!
//! # How it works
//!
//! 1. **Validation** (`eval_def`, `eval_expr`, `concrete_shape`): every declared size has
//!    a value `>= 1` and every `assume` holds at those values.
//! 2. **Compilation** to a private tree of `Node`s: sizes become constants, `gen`/`sum`
//!    binders become positions in a small `Vec<i64>`, `let` variables positions in a
//!    `Vec<Arc<…>>`, inputs and definitions positions in vectors (no name lookups at run
//!    time; inner binders shadow outer ones). Every node gets its **concrete shape**,
//!    computed once from the IR structure with every binder at its lower bound — which
//!    is what gives an empty `gen`/`sum` or a false guard the shape of its zero. Shapes
//!    of well-shaped programs do not depend on binder values; if a program's do (a
//!    jagged tensor), the run-time checks below notice and report E0505. Every node's
//!    concrete shape is also compared with its **static shape** (shape inference's rule
//!    for that node, `shapes::infer_with_lets`, applied to the node with its children's
//!    static shapes) evaluated at the sizes: a negative static extent is E0508 (a range
//!    is never clamped to empty), any other difference E0507. This covers nodes that are
//!    never evaluated (bodies of empty ranges and false guards) and costs one shape
//!    comparison per node, not per element. Nodes without a static shape (ill-shaped
//!    programs, which `atl check` refuses) are left to the run-time checks. Definitions
//!    are compiled in program order before the expression, so a chain of definitions
//!    does not nest the compiler's recursion. Every node's
//!    element count is checked against `EvalOptions::max_elements` here, before anything
//!    is allocated.
//! 3. **Evaluation** is destination-passing: a node writes its value into a slice the
//!    caller allocated from the static shape. An access `e[k]` is not materialized:
//!    `k` is pushed on a stack of pending indices that the nodes below consume — a `gen`
//!    evaluates only its k-th body, an input or `let` value copies one slice, reshape
//!    operators remap the indices — so `gen i: (gen j: f[j])[i - 1]` or
//!    `gen i: flatten(split(4, v))[i]` stay linear. This is the `get_gen`-style identity
//!    `(op e)[k] = …`, exact including out-of-bounds accesses (zeros); the only
//!    observable difference from eager evaluation is that a division by zero in an
//!    element that is never read is not reported.
//!    Definitions reachable from the evaluated expression are evaluated once per call,
//!    in program order, and shared via `Arc`; `let` values are shared the same way.
//!    Large `gen`s run their iterations on rayon; each output element is still computed
//!    by the same sequential code (sums accumulate in iteration order, starting from
//!    `0.0`), so results are bit-identical with and without parallelism, and the error
//!    reported is always the one of the first failing iteration.
//!
//! # Edge cases (decisions)
//!
//! - Reshape amounts are evaluated at the sizes (and binders); a negative amount, a
//!   `split` by `k <= 0`, or a `trunc_l`/`trunc_r` of more elements than the extent is a
//!   run-time error (E0504) rather than a silently clamped result. `split(k, e)` with
//!   `k > |e|` is fine (one row, zero tail), as are `trunc` of exactly `|e|` elements
//!   (an empty tensor) and amounts of 0.
//! - `x / 0` on scalars (including `0 / 0` and a divisor of `-0.0`) is E0501.
//! - Out-of-bounds accesses give `+0.0` zeros of the element shape, also under `-e`.
//! - A `let` value that depends on an enclosing binder is computed every time the `let`
//!   is evaluated, as written; one that does not is computed once, the first time it is
//!   needed, and reused. Definitions are computed once per call, before the expression,
//!   even if they are referenced only under a false guard.
//! - The element limit applies to every node's shape, including nodes that are only
//!   ever read through an access, so the check is a property of the program and the
//!   sizes, not of the data.
//!
//! # Error codes
//!
//! `E0501` scalar division by zero, `E0502` index arithmetic overflow, `E0503` a tensor
//! larger than `max_elements`, `E0504` an invalid reshape amount, `E0505` a shape
//! mismatch at run time (an ill-shaped or jagged program that escaped the shape
//! checker), `E0506` a name or metavariable that cannot be evaluated (an unresolved
//! program), `E0507` a concrete shape that differs from the static shape at the sizes,
//! `E0508` a static extent that is negative at the sizes, `E0509` a loop that would run
//! more than `max_iterations` iterations (with the loops around it); `E0601` missing size, `E0602` size below 1, `E0603` failed `assume`,
//! `E0604` missing input, `E0605` input of the wrong shape, `E0606` unknown definition.

// The API returns the project's `Diagnostic` by value (the CLI and tests expect exactly
// that type); errors are the cold path, so the size of the `Err` variant does not matter.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rayon::prelude::*;

use crate::diag::Diagnostic;
use crate::index::{CmpOp, IndexEvalError, IndexExpr, IndexOp, Pred, apply_index_op};
use crate::ir::{AmountOp, BinOp, Expr, ExprKind, Program};
use crate::monitor::Monitor;
use crate::reshape::{self, Concrete, ReshapeOp};
use crate::shapes::{Shape, ShapeEnv, infer_with_lets, show_shape};
use crate::span::Span;
// `Tensor` lives in its own module; these paths stay for the crates that name them here.
pub use crate::tensor::{Tensor, shape_numel};

// ---------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------

/// Knobs of an evaluation.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// The largest number of elements any tensor (result or intermediate) may have;
    /// larger ones are reported (E0503) before anything is allocated.
    pub max_elements: usize,
    /// The largest number of iterations any loop (`gen`, `sum`, `max`) may run, counted
    /// with the iterations of the loops around it (a `sum` of 2^40 terms inside a `gen`
    /// of 8 counts 2^43); more is reported (E0509) before the loop starts. The count
    /// depends only on the sizes and the loop bounds, so the error is deterministic,
    /// also with `parallel`. A guard against runaway evaluations, not a time limit.
    pub max_iterations: u64,
    /// Evaluate the iterations of large `gen`s in parallel (results are bit-identical).
    pub parallel: bool,
    /// Cancellation and progress: every loop iteration checks the flag (a cancelled
    /// evaluation stops with E0609), and the outermost `gen` of each evaluated
    /// definition reports its iterations.
    pub monitor: Option<Arc<Monitor>>,
}

impl Default for EvalOptions {
    fn default() -> EvalOptions {
        EvalOptions {
            max_elements: 1 << 27,
            // About 7 * 10^10: minutes of interpretation, far more than any size a
            // kernel is checked at (matmul at 1024^3 is 2^30).
            max_iterations: 1 << 36,
            parallel: true,
            monitor: None,
        }
    }
}

/// Evaluates the definition `def_name` of `program` at the given sizes and inputs.
pub fn eval_def(
    program: &Program,
    def_name: &str,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
    options: &EvalOptions,
) -> Result<Tensor, Diagnostic> {
    let size_env = validate_sizes(program, sizes)?;
    let pos = find_def(program, def_name)?;
    let mut compiler = Compiler::new(program, &size_env, options.max_elements, pos);
    compiler.precompile_defs(&program.defs[pos].body);
    let node = compiler.compile(&program.defs[pos].body)?;
    run(compiler, &node, inputs, options)
}

/// Evaluates an expression in the scope of `program`: it may mention sizes, inputs and
/// any definition of the program.
pub fn eval_expr(
    program: &Program,
    expr: &Expr,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
    options: &EvalOptions,
) -> Result<Tensor, Diagnostic> {
    let size_env = validate_sizes(program, sizes)?;
    let mut compiler = Compiler::new(program, &size_env, options.max_elements, program.defs.len());
    compiler.precompile_defs(expr);
    let node = compiler.compile(expr)?;
    run(compiler, &node, inputs, options)
}

/// The concrete shape of an expression (in the scope of `program`) at the given sizes,
/// without evaluating any data. Sizes and assumptions are validated as for evaluation;
/// no element limit applies beyond what fits in memory addresses.
pub fn concrete_shape(
    program: &Program,
    expr: &Expr,
    sizes: &BTreeMap<String, i64>,
) -> Result<Vec<usize>, Diagnostic> {
    let size_env = validate_sizes(program, sizes)?;
    let mut compiler = Compiler::new(program, &size_env, usize::MAX, program.defs.len());
    compiler.precompile_defs(expr);
    Ok(compiler.compile(expr)?.shape)
}

/// Checks that every declared size has a value `>= 1` (E0601, E0602) and that every
/// `assume` holds (E0603). The evaluation entry points do this themselves; the CLI can
/// call it to report problems before building inputs.
pub fn check_sizes(program: &Program, sizes: &BTreeMap<String, i64>) -> Result<(), Diagnostic> {
    validate_sizes(program, sizes).map(|_| ())
}

/// The declared shape of every input at the given sizes (after [`check_sizes`]), each
/// checked against the element limit, so a caller can build random inputs without
/// risking an out-of-memory abort on huge sizes.
pub fn input_shapes(
    program: &Program,
    sizes: &BTreeMap<String, i64>,
    options: &EvalOptions,
) -> Result<BTreeMap<String, Vec<usize>>, Diagnostic> {
    let size_env = validate_sizes(program, sizes)?;
    let compiler = Compiler::new(program, &size_env, options.max_elements, 0);
    let mut out = BTreeMap::new();
    for pos in 0..program.inputs.len() {
        let shape = compiler.input_shape(pos)?;
        out.insert(program.inputs[pos].name.clone(), shape);
    }
    Ok(out)
}

/// Random values for the input `decl` of shape `shape` (at the sizes `size` gives):
/// [`Tensor::random`] for a tensor; for an index array, integers drawn uniformly from
/// its declared range (clamped to `int32_t`), sorted when it is `sorted` — values its
/// declaration admits whenever the range is not empty. What `random:SEED` means.
pub fn random_input(
    decl: &crate::ir::InputDecl,
    shape: Vec<usize>,
    seed: u64,
    size: &dyn Fn(&str) -> Option<i64>,
) -> Tensor {
    let Some(facts) = &decl.index_array else {
        return Tensor::random(shape, seed);
    };
    let bound = |e: &IndexExpr, default: i64| {
        e.eval(size)
            .unwrap_or(default)
            .clamp(i64::from(i32::MIN), i64::from(i32::MAX) + 1)
    };
    let lo = bound(&facts.lo, 0);
    let hi = bound(&facts.hi, lo + 1).max(lo + 1);
    let n = shape_numel(&shape).unwrap_or(0);
    let mut rng = crate::rng::SplitMix64::new(seed);
    let mut data: Vec<f64> = (0..n).map(|_| rng.range(lo, hi - 1) as f64).collect();
    if facts.sorted {
        data.sort_by(f64::total_cmp);
    }
    Tensor { shape, data }
}

/// [`random_input`] for the input named `name` of `program` at `sizes`
/// ([`Tensor::random`] if no input has that name).
pub fn random_input_named(
    program: &Program,
    name: &str,
    shape: Vec<usize>,
    sizes: &BTreeMap<String, i64>,
    seed: u64,
) -> Tensor {
    match program.input(name) {
        Some(decl) => random_input(decl, shape, seed, &|n| sizes.get(n).copied()),
        None => Tensor::random(shape, seed),
    }
}

/// Checks an index array's values against its declaration: integers that fit in
/// `int32_t` (the kernels' element type), in the declared range, and never decreasing
/// when `sorted`. The message (for E0610) names the first bad element. The
/// interpreter, the loop-IR interpreter and (in C) every kernel check the same on
/// entry.
pub fn check_index_array(
    name: &str,
    facts: &crate::ir::IndexArray,
    values: &[f64],
    size: &dyn Fn(&str) -> Option<i64>,
) -> Result<(), String> {
    let bound = |e: &IndexExpr| {
        e.eval(size)
            .map_err(|e| format!("index array `{name}`: its range cannot be computed ({e})"))
    };
    let (lo, hi) = (bound(&facts.lo)?, bound(&facts.hi)?);
    let bad = |detail: String| {
        format!(
            "index array `{name}`: {detail} (its declaration requires every value v to have {} <= v < {}{})",
            facts.lo,
            facts.hi,
            if facts.sorted {
                ", in non-decreasing order"
            } else {
                ""
            }
        )
    };
    for (k, &v) in values.iter().enumerate() {
        if v.fract() != 0.0 || !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&v) {
            return Err(bad(format!("element {k} is {v}, not a 32-bit integer")));
        }
        let v = v as i64;
        if v < lo || v >= hi {
            return Err(bad(format!("element {k} is {v}, outside {lo}..{hi}")));
        }
        if facts.sorted && k > 0 && (values[k - 1] as i64) > v {
            return Err(bad(format!(
                "element {k} is {v}, less than element {} ({})",
                k - 1,
                values[k - 1]
            )));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Diagnostics
// ---------------------------------------------------------------------------------------

/// Attaches `span` as the primary label unless it is the dummy span of a synthesized
/// node, which would point at the start of the file.
fn at(d: Diagnostic, span: Span, label: impl Into<String>) -> Diagnostic {
    if span.is_dummy() {
        d
    } else {
        d.at(span, label)
    }
}

fn overflow(span: Span) -> Diagnostic {
    at(
        Diagnostic::error("E0502", "index arithmetic overflows 64 bits"),
        span,
        "while evaluating an index expression here",
    )
}

fn mismatch(span: Span, detail: impl std::fmt::Display) -> Diagnostic {
    at(
        Diagnostic::error("E0505", format!("shape mismatch at run time: {detail}")),
        span,
        "in this expression",
    )
    .with_note("well-shaped programs never hit this; the shape checker should have rejected it")
}

fn unbound(span: Span, message: impl Into<String>) -> Diagnostic {
    at(
        Diagnostic::error("E0506", message),
        span,
        "cannot be evaluated",
    )
}

fn bad_amount(span: Span, message: impl Into<String>) -> Diagnostic {
    at(Diagnostic::error("E0504", message), span, "in this reshape")
}

/// An invariant of the interpreter failed; reported, never a panic.
fn internal(span: Span, what: &str) -> Diagnostic {
    mismatch(span, format!("internal interpreter inconsistency ({what})"))
}

fn fmt_shape(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

fn fmt_index_shape(shape: &[IndexExpr]) -> String {
    let parts: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

fn too_big(span: Span, shape: &[usize], limit: usize) -> Diagnostic {
    let total = shape
        .iter()
        .fold(1u128, |acc, &n| acc.saturating_mul(n as u128));
    let message = if limit == usize::MAX {
        format!(
            "this expression would have {total} elements (shape {}), more than can be addressed",
            fmt_shape(shape)
        )
    } else {
        format!(
            "this expression would have {total} elements (shape {}), more than the limit of {limit}",
            fmt_shape(shape)
        )
    };
    at(Diagnostic::error("E0503", message), span, "too large").with_help(
        "evaluate at smaller sizes, or raise the interpreter's element limit (`max_elements`)",
    )
}

fn too_long(span: Span, total: u128, limit: u64) -> Diagnostic {
    at(
        Diagnostic::error(
            "E0509",
            format!(
                "evaluating this loop would take {total} iterations, counted with the loops around it, more than the limit of {limit}"
            ),
        ),
        span,
        "too many iterations",
    )
    .with_help(
        "evaluate at smaller sizes: the limit stops evaluations that would run for hours (a program using the library sets it with `EvalOptions::max_iterations`)",
    )
}

// ---------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------

/// The values of the declared sizes, after checking them and the assumptions.
fn validate_sizes(
    program: &Program,
    sizes: &BTreeMap<String, i64>,
) -> Result<HashMap<String, i64>, Diagnostic> {
    let missing: Vec<_> = program
        .sizes
        .iter()
        .filter(|s| !sizes.contains_key(&s.name))
        .collect();
    if let Some(first) = missing.first() {
        let names: Vec<String> = missing.iter().map(|s| format!("`{}`", s.name)).collect();
        let example: Vec<String> = missing.iter().map(|s| format!("{}=…", s.name)).collect();
        let message = if missing.len() == 1 {
            format!("size {} has no value", names[0])
        } else {
            format!("sizes {} have no value", names.join(", "))
        };
        return Err(at(
            Diagnostic::error("E0601", message),
            first.span,
            "declared here",
        )
        .with_help(format!(
            "give every size a value with `--sizes {}`",
            example.join(",")
        )));
    }
    let mut env = HashMap::new();
    for s in &program.sizes {
        let v = sizes.get(&s.name).copied().unwrap_or(0);
        if v < 1 {
            return Err(at(
                Diagnostic::error(
                    "E0602",
                    format!("size `{}` must be at least 1, got {v}", s.name),
                ),
                s.span,
                "declared here",
            )
            .with_help("sizes are extents of tensors; pass a positive value with `--sizes`"));
        }
        env.insert(s.name.clone(), v);
    }
    for a in &program.assumes {
        match a.pred.eval(&|name| env.get(name).copied()) {
            Ok(true) => {}
            Ok(false) => {
                let values: Vec<String> = a
                    .pred
                    .vars()
                    .iter()
                    .map(|v| format!("{v} = {}", env.get(v).copied().unwrap_or(0)))
                    .collect();
                return Err(at(
                    Diagnostic::error(
                        "E0603",
                        format!(
                            "assumption `{}` does not hold at {}",
                            a.pred,
                            values.join(", ")
                        ),
                    ),
                    a.span,
                    "this assumption is false",
                )
                .with_help("choose sizes that satisfy every `assume` of the program"));
            }
            Err(IndexEvalError::Overflow) => return Err(overflow(a.span)),
            Err(e) => return Err(unbound(a.span, format!("cannot check assumption: {e}"))),
        }
    }
    Ok(env)
}

/// The position of the definition called `name` (the last one, if repeated), E0606 if
/// there is none.
fn find_def(program: &Program, name: &str) -> Result<usize, Diagnostic> {
    if let Some(pos) = program.defs.iter().rposition(|d| d.name == name) {
        return Ok(pos);
    }
    let mut d = Diagnostic::error("E0606", format!("there is no definition named `{name}`"));
    if program.derive(name).is_some() {
        d = d.with_note(format!(
            "`{name}` is a derivation; run its steps first to obtain its definition"
        ));
    }
    let names: Vec<&str> = program.defs.iter().map(|d| d.name.as_str()).collect();
    Err(if names.is_empty() {
        d.with_help("the program has no definitions")
    } else {
        d.with_help(format!("the definitions are: {}", names.join(", ")))
    })
}

mod compile;
mod eval;
#[cfg(test)]
mod tests;

use compile::*;
use eval::*;
