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

// ---------------------------------------------------------------------------------------
// Compiled form
// ---------------------------------------------------------------------------------------

/// An index expression with sizes folded to constants and binders as slots.
#[derive(Clone, Debug, PartialEq)]
enum CIdx {
    Const(i64),
    /// Position in the environment of `gen`/`sum` binder values (outermost first).
    Slot(usize),
    /// `c + Σ coeff * slot`: the linear parts of index expressions (nearly all of them)
    /// are collected at compile time, because walking boxed trees dominated the run
    /// time of stencils. Like the unbounded integers of DESIGN §3.2, the linear form
    /// has no intermediate results that could overflow where the final value does not.
    Affine(i64, Box<[(usize, i64)]>),
    Neg(Box<CIdx>),
    Bin(IndexOp, Box<CIdx>, Box<CIdx>),
    /// An element of the index array that is input `pos` (0 out of range, as in the
    /// semantics; the values were checked to be integers on entry).
    Load(usize, Box<CIdx>),
}

/// A linear form under construction: constant and (slot, coefficient) terms, sorted by
/// slot, without zero coefficients.
type Linear = (i64, Vec<(usize, i64)>);

impl CIdx {
    /// `None` on overflow (the slot always exists by construction). `arrays` holds the
    /// inputs' values by position; with none (shape computation at compile time, where
    /// no value may matter) a load stands for 0.
    #[inline]
    fn eval(&self, env: &[i64], arrays: &[&[f64]]) -> Option<i64> {
        match self {
            CIdx::Const(c) => Some(*c),
            CIdx::Slot(s) => env.get(*s).copied(),
            CIdx::Affine(c, terms) => terms.iter().try_fold(*c, |acc, &(s, k)| {
                acc.checked_add(env.get(s)?.checked_mul(k)?)
            }),
            CIdx::Neg(a) => a.eval(env, arrays)?.checked_neg(),
            CIdx::Bin(op, a, b) => apply_index_op(*op, a.eval(env, arrays)?, b.eval(env, arrays)?),
            CIdx::Load(pos, a) => {
                let at = a.eval(env, arrays)?;
                let values = arrays.get(*pos).copied().unwrap_or(&[]);
                // Integral and within `int32_t` (checked on entry), so exact.
                Some(
                    usize::try_from(at)
                        .ok()
                        .and_then(|k| values.get(k))
                        .map_or(0, |v| *v as i64),
                )
            }
        }
    }

    fn is_const(&self) -> bool {
        matches!(self, CIdx::Const(_))
    }

    /// The linear form, if the expression is linear in the binders (and folding the
    /// coefficients does not overflow).
    fn linear(&self) -> Option<Linear> {
        match self {
            CIdx::Const(c) => Some((*c, Vec::new())),
            CIdx::Slot(s) => Some((0, vec![(*s, 1)])),
            CIdx::Affine(c, terms) => Some((*c, terms.to_vec())),
            CIdx::Neg(a) => scale_linear(a.linear()?, -1),
            CIdx::Bin(IndexOp::Add, a, b) => add_linear(a.linear()?, b.linear()?),
            CIdx::Bin(IndexOp::Sub, a, b) => {
                add_linear(a.linear()?, scale_linear(b.linear()?, -1)?)
            }
            CIdx::Bin(IndexOp::Mul, a, b) => match (a.linear()?, b.linear()?) {
                ((k, t), other) | (other, (k, t)) if t.is_empty() => scale_linear(other, k),
                _ => None,
            },
            CIdx::Bin(..) | CIdx::Load(..) => None,
        }
    }

    /// The cheapest equivalent form: linear expressions become `Const`, `Slot` or
    /// `Affine`; anything else is kept as it is.
    fn simplify(self) -> CIdx {
        let Some((c, terms)) = self.linear() else {
            return self;
        };
        match terms.as_slice() {
            [] => CIdx::Const(c),
            [(s, 1)] if c == 0 => CIdx::Slot(*s),
            _ => CIdx::Affine(c, terms.into_boxed_slice()),
        }
    }
}

fn scale_linear((c, terms): Linear, k: i64) -> Option<Linear> {
    let c = c.checked_mul(k)?;
    let mut out = Vec::with_capacity(terms.len());
    for (s, x) in terms {
        let x = x.checked_mul(k)?;
        if x != 0 {
            out.push((s, x));
        }
    }
    Some((c, out))
}

fn add_linear((c1, t1): Linear, (c2, t2): Linear) -> Option<Linear> {
    let mut terms: BTreeMap<usize, i64> = t1.into_iter().collect();
    for (s, x) in t2 {
        let e = terms.entry(s).or_insert(0);
        *e = e.checked_add(x)?;
    }
    let terms = terms.into_iter().filter(|&(_, x)| x != 0).collect();
    Some((c1.checked_add(c2)?, terms))
}

#[derive(Clone, Debug)]
enum CPred {
    Bool(bool),
    Cmp(CmpOp, CIdx, CIdx),
    And(Box<CPred>, Box<CPred>),
    Or(Box<CPred>, Box<CPred>),
    Not(Box<CPred>),
}

impl CPred {
    /// Short-circuits like `Pred::eval`. `None` on overflow.
    fn eval(&self, env: &[i64], arrays: &[&[f64]]) -> Option<bool> {
        match self {
            CPred::Bool(b) => Some(*b),
            CPred::Cmp(op, a, b) => Some(op.holds(a.eval(env, arrays)?, b.eval(env, arrays)?)),
            CPred::And(a, b) => Some(a.eval(env, arrays)? && b.eval(env, arrays)?),
            CPred::Or(a, b) => Some(a.eval(env, arrays)? || b.eval(env, arrays)?),
            CPred::Not(a) => Some(!a.eval(env, arrays)?),
        }
    }
}

/// Where a stored tensor lives at run time.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// Position in `Program::inputs`.
    Input(usize),
    /// Position in `Program::defs`.
    Def(usize),
    /// Position in the environment of `let` values (outermost first).
    Let(usize),
}

#[derive(Debug)]
struct Node {
    kind: Kind,
    shape: Vec<usize>,
    /// `suffix[d]` = number of elements of `shape[d..]`; `suffix[rank] = 1`.
    suffix: Vec<usize>,
    /// Whether this node or one below has a run-time shape check (a `gen` bound or a
    /// reshape amount that mentions a binder). Such nodes are evaluated even when their
    /// output is empty, so that `gen i < 3: gen j < i: …` (jagged, but with an empty
    /// representative row) is reported instead of evaluating to an empty tensor.
    checks: bool,
    /// The static shape of the node's expression (shape inference, `shapes.rs`, one
    /// node at a time), `None` where it has none (an ill-shaped program, which the
    /// run-time checks report instead).
    stat: Option<Shape>,
    span: Span,
}

impl Node {
    fn numel(&self) -> usize {
        self.suffix.first().copied().unwrap_or(0)
    }

    /// Extent of dimension `d` (0 for a dimension that does not exist, which the
    /// compiler rules out).
    fn dim(&self, d: usize) -> usize {
        self.shape.get(d).copied().unwrap_or(0)
    }

    /// Elements of the sub-tensor below dimension `d`.
    fn stride(&self, d: usize) -> usize {
        self.suffix.get(d).copied().unwrap_or(0)
    }
}

#[derive(Debug)]
enum Kind {
    Lit(f64),
    Load(Src),
    /// The extent is `shape[0]`.
    Gen {
        lo: CIdx,
        hi: CIdx,
        body: Box<Node>,
        /// For a one-hot generator ([`crate::scatter`]), the one binder value where
        /// the body may be non-zero (compiled outside the binder): the generator is
        /// evaluated there only, and a sum of such generators adds each in place.
        one_hot: Option<CIdx>,
    },
    Sum {
        lo: CIdx,
        hi: CIdx,
        body: Box<Node>,
    },
    /// A max-reduction of a scalar body.
    MaxRed {
        lo: CIdx,
        hi: CIdx,
        body: Box<Node>,
    },
    Guard {
        pred: CPred,
        body: Box<Node>,
    },
    Let {
        value: Box<Node>,
        body: Box<Node>,
        /// For a value that mentions no enclosing binder or `let` variable: its value,
        /// computed the first time the `let` is evaluated (values are pure, so this only
        /// saves recomputing it in every iteration of an enclosing `gen`/`sum`).
        cache: Option<OnceLock<Arc<Vec<f64>>>>,
    },
    Access {
        tensor: Box<Node>,
        index: CIdx,
    },
    Neg(Box<Node>),
    /// A scalar function of scalar arguments.
    Call {
        func: crate::functions::ScalarFn,
        args: Vec<Node>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    Concat(Box<Node>, Box<Node>),
    Transpose(Box<Node>),
    Flatten(Box<Node>),
    Amount {
        op: AmountOp,
        amount: CIdx,
        /// The amount at compile time (validated); a run-time value that differs means
        /// the amount depends on a binder, which makes the tensor jagged.
        k: usize,
        arg: Box<Node>,
    },
}

/// Turns IR into `Node`s, computing concrete shapes.
struct Compiler<'a> {
    program: &'a Program,
    sizes: &'a HashMap<String, i64>,
    limit: usize,
    /// `gen`/`sum` binders in scope, outermost first, with their representative value
    /// (the lower bound) used to compute shapes.
    idx_names: Vec<&'a str>,
    idx_rep: Vec<i64>,
    /// `let` variables in scope, outermost first, with the shape of their value.
    lets: Vec<(&'a str, Vec<usize>)>,
    /// The static shapes of the `let` values in scope, parallel to `lets`.
    lets_static: Vec<Option<Shape>>,
    /// Shape inference's environment (sizes, input shapes) for the static shapes.
    shape_env: ShapeEnv,
    /// References may only name definitions at positions below this (earlier ones),
    /// which also rules out cycles.
    def_limit: usize,
    /// Compiled definitions reachable from the compiled expression, by position.
    defs: Vec<Option<Node>>,
    /// Definitions whose compilation failed, by position (reported when reached).
    def_errors: Vec<Option<Diagnostic>>,
    /// Declared shapes of referenced inputs, by position.
    inputs: Vec<Option<Vec<usize>>>,
    /// The index arrays read by the compiled index expressions, by position (marked
    /// from `index`, which only borrows the compiler).
    arrays_read: std::cell::RefCell<Vec<bool>>,
}

impl<'a> Compiler<'a> {
    fn new(
        program: &'a Program,
        sizes: &'a HashMap<String, i64>,
        limit: usize,
        def_limit: usize,
    ) -> Compiler<'a> {
        Compiler {
            program,
            sizes,
            limit,
            idx_names: Vec::new(),
            idx_rep: Vec::new(),
            lets: Vec::new(),
            lets_static: Vec::new(),
            shape_env: ShapeEnv::of_program(program),
            def_limit,
            defs: (0..program.defs.len()).map(|_| None).collect(),
            def_errors: vec![None; program.defs.len()],
            inputs: vec![None; program.inputs.len()],
            arrays_read: std::cell::RefCell::new(vec![false; program.inputs.len()]),
        }
    }

    fn node(&self, kind: Kind, shape: Vec<usize>, span: Span) -> Result<Node, Diagnostic> {
        let mut suffix = vec![1usize; shape.len() + 1];
        for d in (0..shape.len()).rev() {
            suffix[d] = shape[d]
                .checked_mul(suffix[d + 1])
                .filter(|&n| n <= self.limit)
                .ok_or_else(|| too_big(span, &shape, self.limit))?;
        }
        let checks = match &kind {
            Kind::Lit(_) | Kind::Load(_) => false,
            Kind::Gen { lo, hi, body, .. } => !lo.is_const() || !hi.is_const() || body.checks,
            Kind::Amount { amount, arg, .. } => !amount.is_const() || arg.checks,
            Kind::Sum { body, .. } | Kind::MaxRed { body, .. } | Kind::Guard { body, .. } => {
                body.checks
            }
            Kind::Access { tensor: a, .. }
            | Kind::Neg(a)
            | Kind::Transpose(a)
            | Kind::Flatten(a) => a.checks,
            Kind::Let {
                value: a, body: b, ..
            }
            | Kind::Binary { lhs: a, rhs: b, .. }
            | Kind::Concat(a, b) => a.checks || b.checks,
            Kind::Call { args, .. } => args.iter().any(|a| a.checks),
        };
        Ok(Node {
            kind,
            shape,
            suffix,
            checks,
            stat: None,
            span,
        })
    }

    fn index(&self, e: &IndexExpr, span: Span) -> Result<CIdx, Diagnostic> {
        Ok(match e {
            IndexExpr::Const(c) => CIdx::Const(*c),
            IndexExpr::Var(name) => {
                if let Some(slot) = self.idx_names.iter().rposition(|n| n == name) {
                    CIdx::Slot(slot)
                } else if let Some(v) = self.sizes.get(name) {
                    CIdx::Const(*v)
                } else {
                    return Err(unbound(
                        span,
                        format!("index variable `{name}` is neither a size nor a binder in scope"),
                    ));
                }
            }
            IndexExpr::Meta(name) => {
                return Err(unbound(
                    span,
                    format!("metavariable `?{name}` cannot be evaluated"),
                ));
            }
            IndexExpr::Load(array, a) => {
                let Some(pos) = self
                    .program
                    .inputs
                    .iter()
                    .position(|i| &i.name == array && i.index_array.is_some())
                else {
                    return Err(unbound(
                        span,
                        format!("there is no index array named `{array}`"),
                    ));
                };
                self.arrays_read.borrow_mut()[pos] = true;
                CIdx::Load(pos, Box::new(self.index(a, span)?))
            }
            // An overflowing fold stays unfolded (`linear` gives up on it), so it is
            // reported only if it is ever evaluated.
            IndexExpr::Neg(a) => CIdx::Neg(Box::new(self.index(a, span)?)).simplify(),
            IndexExpr::Bin(op, a, b) => {
                let a = self.index(a, span)?;
                let b = self.index(b, span)?;
                match (&a, &b) {
                    (CIdx::Const(x), CIdx::Const(y)) => match apply_index_op(*op, *x, *y) {
                        Some(v) => CIdx::Const(v),
                        None => CIdx::Bin(*op, Box::new(a), Box::new(b)),
                    },
                    _ => CIdx::Bin(*op, Box::new(a), Box::new(b)).simplify(),
                }
            }
        })
    }

    fn pred(&self, p: &Pred, span: Span) -> Result<CPred, Diagnostic> {
        Ok(match p {
            Pred::Bool(b) => CPred::Bool(*b),
            Pred::Cmp(op, a, b) => match (self.index(a, span)?, self.index(b, span)?) {
                (CIdx::Const(x), CIdx::Const(y)) => CPred::Bool(op.holds(x, y)),
                (a, b) => CPred::Cmp(*op, a, b),
            },
            // Folding only on the left keeps the evaluation order (and so which overflow
            // is reported) the same as `Pred::eval`.
            Pred::And(a, b) => match self.pred(a, span)? {
                CPred::Bool(false) => CPred::Bool(false),
                CPred::Bool(true) => self.pred(b, span)?,
                a => CPred::And(Box::new(a), Box::new(self.pred(b, span)?)),
            },
            Pred::Or(a, b) => match self.pred(a, span)? {
                CPred::Bool(true) => CPred::Bool(true),
                CPred::Bool(false) => self.pred(b, span)?,
                a => CPred::Or(Box::new(a), Box::new(self.pred(b, span)?)),
            },
            Pred::Not(a) => match self.pred(a, span)? {
                CPred::Bool(b) => CPred::Bool(!b),
                a => CPred::Not(Box::new(a)),
            },
        })
    }

    /// Value of an index at the representative binder values (for shapes).
    fn rep(&self, c: &CIdx, span: Span) -> Result<i64, Diagnostic> {
        c.eval(&self.idx_rep, &[]).ok_or_else(|| overflow(span))
    }

    /// Compiles both bounds of a `gen`/`sum` and returns them with the representative
    /// lower bound and extent.
    fn range(
        &self,
        lo: &IndexExpr,
        hi: &IndexExpr,
        span: Span,
    ) -> Result<(CIdx, CIdx, i64, usize), Diagnostic> {
        let lo = self.index(lo, span)?;
        let hi = self.index(hi, span)?;
        let lo_r = self.rep(&lo, span)?;
        let hi_r = self.rep(&hi, span)?;
        let extent = if hi_r > lo_r {
            hi_r.checked_sub(lo_r).ok_or_else(|| overflow(span))?
        } else {
            0
        };
        let extent = usize::try_from(extent).map_err(|_| too_big(span, &[], self.limit))?;
        Ok((lo, hi, lo_r, extent))
    }

    fn input_shape(&self, pos: usize) -> Result<Vec<usize>, Diagnostic> {
        let decl = &self.program.inputs[pos];
        let mut shape = Vec::with_capacity(decl.shape.len());
        for dim in &decl.shape {
            let v = dim
                .eval(&|name| self.sizes.get(name).copied())
                .map_err(|e| match e {
                    IndexEvalError::Overflow => overflow(decl.span),
                    e => unbound(
                        decl.span,
                        format!("cannot compute the shape of input `{}`: {e}", decl.name),
                    ),
                })?;
            let v = usize::try_from(v).map_err(|_| {
                at(
                    Diagnostic::error(
                        "E0605",
                        format!(
                            "input `{}` is declared with shape {}, which has the negative extent {v} at these sizes",
                            decl.name,
                            fmt_index_shape(&decl.shape)
                        ),
                    ),
                    decl.span,
                    "declared here",
                )
                .with_help("choose sizes for which every input extent is non-negative")
            })?;
            shape.push(v);
        }
        if shape.iter().any(|&n| n > self.limit)
            || shape_numel(&shape).is_none_or(|n| n > self.limit)
        {
            return Err(too_big(decl.span, &shape, self.limit));
        }
        Ok(shape)
    }

    /// Compiles `e` and checks its concrete shape against its static shape at these
    /// sizes (E0507, E0508). Every node is checked, also those that are never
    /// evaluated (the bodies of empty `gen`s and `sum`s, of false guards, values only
    /// read out of bounds), because their shapes are observed all the same.
    fn compile(&mut self, e: &'a Expr) -> Result<Node, Diagnostic> {
        let mut node = self.compile_node(e)?;
        let stat = self.static_shape(e, &node);
        if let Some(stat) = &stat {
            self.check_static(e, stat, &node.shape)?;
        }
        node.stat = stat;
        Ok(node)
    }

    /// The static shape of `e`, from shape inference (`shapes::infer_with_lets`) applied
    /// to `e` alone, with its children replaced by variables that have the children's
    /// static shapes: the same rules as for the whole program, at one node's cost.
    fn static_shape(&self, e: &Expr, node: &Node) -> Option<Shape> {
        let children: Vec<&Node> = match &node.kind {
            Kind::Lit(_) => return Some(Vec::new()),
            Kind::Load(Src::Input(pos)) => {
                return self
                    .shape_env
                    .globals
                    .get(&self.program.inputs.get(*pos)?.name)
                    .cloned();
            }
            Kind::Load(Src::Def(pos)) => {
                return self.defs.get(*pos)?.as_ref()?.stat.clone();
            }
            Kind::Load(Src::Let(slot)) => return self.lets_static.get(*slot)?.clone(),
            Kind::Gen { body, .. }
            | Kind::Sum { body, .. }
            | Kind::MaxRed { body, .. }
            | Kind::Guard { body, .. } => {
                vec![body]
            }
            Kind::Let { value, body, .. } => vec![value, body],
            Kind::Access { tensor: a, .. }
            | Kind::Neg(a)
            | Kind::Transpose(a)
            | Kind::Flatten(a)
            | Kind::Amount { arg: a, .. } => vec![a],
            Kind::Binary { lhs: a, rhs: b, .. } | Kind::Concat(a, b) => vec![a, b],
            Kind::Call { args, .. } => args.iter().collect(),
        };
        // Placeholder names cannot clash with program names (they contain a control
        // character).
        let names: Vec<String> = (0..children.len()).map(|k| format!("\u{1}{k}")).collect();
        let mut lets: Vec<(String, Shape)> = Vec::with_capacity(children.len());
        for (name, child) in names.iter().zip(&children) {
            lets.push((name.clone(), child.stat.clone()?));
        }
        let hole = |k: usize| Box::new(Expr::var(names[k].clone()));
        let kind = match &e.kind {
            ExprKind::Gen { var, lo, hi, .. } => ExprKind::Gen {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: hole(0),
            },
            ExprKind::Sum { var, lo, hi, .. } => ExprKind::Sum {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: hole(0),
            },
            ExprKind::MaxRed { var, lo, hi, .. } => ExprKind::MaxRed {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: hole(0),
            },
            ExprKind::Guard { pred, .. } => ExprKind::Guard {
                pred: pred.clone(),
                body: hole(0),
            },
            ExprKind::Let { var, .. } => ExprKind::Let {
                var: var.clone(),
                value: hole(0),
                body: hole(1),
            },
            ExprKind::Access { index, .. } => ExprKind::Access {
                tensor: hole(0),
                index: index.clone(),
            },
            ExprKind::Neg(_) => ExprKind::Neg(hole(0)),
            ExprKind::Transpose(_) => ExprKind::Transpose(hole(0)),
            ExprKind::Flatten(_) => ExprKind::Flatten(hole(0)),
            ExprKind::Amount { op, amount, .. } => ExprKind::Amount {
                op: *op,
                amount: amount.clone(),
                arg: hole(0),
            },
            ExprKind::Binary { op, .. } => ExprKind::Binary {
                op: *op,
                lhs: hole(0),
                rhs: hole(1),
            },
            ExprKind::Concat(..) => ExprKind::Concat(hole(0), hole(1)),
            ExprKind::Call { func, args } => ExprKind::Call {
                func: *func,
                args: (0..args.len()).map(|k| *hole(k)).collect(),
            },
            // Leaves were handled above; a mismatch of node and expression is a bug
            // that the shape comparison cannot judge.
            _ => return None,
        };
        infer_with_lets(&self.shape_env, &mut lets, &Expr::new(kind, e.span)).ok()
    }

    /// `n = 2, m = 3` for the sizes the expressions mention ("all sizes" if none).
    fn size_values<'e>(&self, exprs: impl Iterator<Item = &'e IndexExpr>) -> String {
        let mut names = std::collections::BTreeSet::new();
        for e in exprs {
            names.extend(e.vars());
        }
        let parts: Vec<String> = names
            .iter()
            .filter_map(|n| self.sizes.get(n).map(|v| format!("{n} = {v}")))
            .collect();
        if parts.is_empty() {
            "all sizes".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// Compares a node's concrete shape with its static shape evaluated at the sizes:
    /// a negative static extent is E0508 (the interpreter does not clamp it to an
    /// empty range), any other difference E0507.
    fn check_static(
        &self,
        e: &Expr,
        stat: &[IndexExpr],
        concrete: &[usize],
    ) -> Result<(), Diagnostic> {
        let sizes = |name: &str| self.sizes.get(name).copied();
        let mut values = Vec::with_capacity(stat.len());
        for extent in stat {
            match extent.eval(&sizes) {
                Ok(v) => values.push(v),
                Err(IndexEvalError::Overflow) => return Err(overflow(e.span)),
                // Static shapes mention only sizes; anything else has no value to
                // compare with.
                Err(_) => return Ok(()),
            }
        }
        let at_sizes = || self.size_values(stat.iter());
        if let Some(d) = values.iter().position(|&v| v < 0) {
            let message = match &e.kind {
                ExprKind::Gen { var, lo, hi, .. } if d == 0 => format!(
                    "the range `{lo}..{hi}` of `gen {var}` has the negative length {} at {}",
                    values[0],
                    at_sizes()
                ),
                _ => format!(
                    "this expression has the static shape {}, with the negative extent {} at {}",
                    show_shape(stat),
                    values[d],
                    at_sizes()
                ),
            };
            return Err(at(
                Diagnostic::error("E0508", message),
                e.span,
                "negative extent",
            )
            .with_note("an extent is never clamped to 0: the shape of a value is observed even where the value is not (an empty `gen`, a false guard)")
            .with_help("choose sizes where every extent is non-negative, or add an `assume` that rules these sizes out"));
        }
        let same = values.len() == concrete.len()
            && values
                .iter()
                .zip(concrete)
                .all(|(&v, &c)| u64::try_from(v).ok() == u64::try_from(c).ok());
        if !same {
            return Err(at(
                Diagnostic::error(
                    "E0507",
                    format!(
                        "the interpreter computed the shape {} where the static shape {} is {} at {}",
                        fmt_shape(concrete),
                        show_shape(stat),
                        fmt_shape(&values.iter().map(|&v| v as usize).collect::<Vec<_>>()),
                        at_sizes()
                    ),
                ),
                e.span,
                "in this expression",
            )
            .with_note("the interpreter and shape inference disagree; this is a bug in one of them")
            .with_help("report it with this program and these sizes"));
        }
        Ok(())
    }

    fn compile_node(&mut self, e: &'a Expr) -> Result<Node, Diagnostic> {
        let span = e.span;
        match &e.kind {
            ExprKind::Lit(v) => self.node(Kind::Lit(*v), Vec::new(), span),
            ExprKind::Input(name) => {
                let Some(pos) = self.program.inputs.iter().position(|i| &i.name == name) else {
                    return Err(unbound(span, format!("there is no input named `{name}`")));
                };
                let shape = match &self.inputs[pos] {
                    Some(shape) => shape.clone(),
                    None => {
                        let shape = self.input_shape(pos)?;
                        self.inputs[pos] = Some(shape.clone());
                        shape
                    }
                };
                self.node(Kind::Load(Src::Input(pos)), shape, span)
            }
            ExprKind::DefRef(name) => {
                let earlier = &self.program.defs[..self.def_limit.min(self.program.defs.len())];
                let Some(pos) = earlier.iter().rposition(|d| &d.name == name) else {
                    let message = if self.program.def(name).is_some() {
                        format!("definition `{name}` is used before it is defined")
                    } else {
                        format!("there is no definition named `{name}`")
                    };
                    return Err(unbound(span, message));
                };
                if self.defs[pos].is_none() {
                    if let Some(d) = &self.def_errors[pos] {
                        return Err(d.clone());
                    }
                    self.compile_def(pos)?;
                }
                let shape = match &self.defs[pos] {
                    Some(def) => def.shape.clone(),
                    None => return Err(internal(span, "definition not compiled")),
                };
                self.node(Kind::Load(Src::Def(pos)), shape, span)
            }
            ExprKind::Var(name) => {
                let Some(slot) = self.lets.iter().rposition(|(n, _)| n == name) else {
                    return Err(unbound(
                        span,
                        format!("variable `{name}` is not bound by an enclosing `let`"),
                    ));
                };
                let shape = self.lets[slot].1.clone();
                self.node(Kind::Load(Src::Let(slot)), shape, span)
            }
            ExprKind::Meta(name) => Err(unbound(
                span,
                format!("metavariable `?{name}` cannot be evaluated"),
            )),
            ExprKind::Gen { var, lo, hi, body }
            | ExprKind::Sum { var, lo, hi, body }
            | ExprKind::MaxRed { var, lo, hi, body } => {
                let (lo, hi, lo_r, extent) = self.range(lo, hi, span)?;
                // A backwards `gen` range is a negative extent, never an empty one (a
                // backwards `sum` range is an empty sum: no extent is involved). This
                // also covers ranges without a static shape (constant ones like `4..2`
                // are refused by shape inference, E0402).
                if let ExprKind::Gen {
                    var, lo: l, hi: h, ..
                } = &e.kind
                    && extent == 0
                    && self.rep(&hi, span)? < lo_r
                {
                    let length = i128::from(self.rep(&hi, span)?) - i128::from(lo_r);
                    return Err(at(
                        Diagnostic::error(
                            "E0508",
                            format!(
                                "the range `{l}..{h}` of `gen {var}` has the negative length {length} at {}",
                                self.size_values([l, h].into_iter())
                            ),
                        ),
                        span,
                        "negative extent",
                    )
                    .with_note("an extent is never clamped to 0: the shape of a value is observed even where the value is not (an empty `gen`, a false guard)")
                    .with_help("choose sizes where every extent is non-negative, or add an `assume` that rules these sizes out"));
                }
                let one_hot = match &e.kind {
                    ExprKind::Gen { var, body, .. } => crate::scatter::one_hot(var, body)
                        .map(|hot| self.index(&hot.target, span))
                        .transpose()?,
                    _ => None,
                };
                // Shapes are computed with the binder at its lower bound, also when the
                // range is empty: that is where an empty gen/sum gets its element shape.
                self.idx_names.push(var);
                self.idx_rep.push(lo_r);
                let body = self.compile(body);
                self.idx_names.pop();
                self.idx_rep.pop();
                let body = Box::new(body?);
                match e.kind {
                    ExprKind::Gen { .. } => {
                        let mut shape = vec![extent];
                        shape.extend_from_slice(&body.shape);
                        self.node(
                            Kind::Gen {
                                lo,
                                hi,
                                body,
                                one_hot,
                            },
                            shape,
                            span,
                        )
                    }
                    ExprKind::Sum { .. } => {
                        let shape = body.shape.clone();
                        self.node(Kind::Sum { lo, hi, body }, shape, span)
                    }
                    _ => {
                        // Shape inference refuses a tensor body (E0416).
                        let shape = body.shape.clone();
                        self.node(Kind::MaxRed { lo, hi, body }, shape, span)
                    }
                }
            }
            ExprKind::Guard { pred, body } => {
                let pred = self.pred(pred, span)?;
                let body = Box::new(self.compile(body)?);
                let shape = body.shape.clone();
                self.node(Kind::Guard { pred, body }, shape, span)
            }
            ExprKind::Let { var, value, body } => {
                let closed = value.free_tensor_vars().is_empty()
                    && value
                        .free_index_vars()
                        .iter()
                        .all(|name| !self.idx_names.contains(&name.as_str()));
                let cache = closed.then(OnceLock::new);
                let value = Box::new(self.compile(value)?);
                self.lets.push((var, value.shape.clone()));
                self.lets_static.push(value.stat.clone());
                let body = self.compile(body);
                self.lets.pop();
                self.lets_static.pop();
                let body = Box::new(body?);
                let shape = body.shape.clone();
                self.node(Kind::Let { value, body, cache }, shape, span)
            }
            ExprKind::Access { tensor, index } => {
                let tensor = Box::new(self.compile(tensor)?);
                if tensor.shape.is_empty() {
                    return Err(mismatch(span, "cannot index a scalar"));
                }
                let index = self.index(index, span)?;
                let shape = tensor.shape[1..].to_vec();
                self.node(Kind::Access { tensor, index }, shape, span)
            }
            ExprKind::Neg(a) => {
                let a = Box::new(self.compile(a)?);
                let shape = a.shape.clone();
                self.node(Kind::Neg(a), shape, span)
            }
            ExprKind::Call { func, args } => {
                let args = args
                    .iter()
                    .map(|a| self.compile(a))
                    .collect::<Result<Vec<Node>, Diagnostic>>()?;
                if args.iter().any(|a| !a.shape.is_empty()) {
                    return Err(mismatch(
                        span,
                        format!("`{}` applies to scalars", func.name()),
                    ));
                }
                self.node(Kind::Call { func: *func, args }, Vec::new(), span)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let lhs = Box::new(self.compile(lhs)?);
                let rhs = Box::new(self.compile(rhs)?);
                let shape = match op {
                    BinOp::Add | BinOp::Sub => {
                        if lhs.shape != rhs.shape {
                            return Err(mismatch(
                                span,
                                format!(
                                    "the operands of `{}` have shapes {} and {}",
                                    op.symbol(),
                                    fmt_shape(&lhs.shape),
                                    fmt_shape(&rhs.shape)
                                ),
                            ));
                        }
                        lhs.shape.clone()
                    }
                    BinOp::Mul | BinOp::Div => {
                        if !lhs.shape.is_empty() || !rhs.shape.is_empty() {
                            return Err(mismatch(
                                span,
                                format!(
                                    "`{}` applies to scalars, but the operands have shapes {} and {}",
                                    op.symbol(),
                                    fmt_shape(&lhs.shape),
                                    fmt_shape(&rhs.shape)
                                ),
                            ));
                        }
                        Vec::new()
                    }
                };
                self.node(Kind::Binary { op: *op, lhs, rhs }, shape, span)
            }
            ExprKind::Concat(a, b) => {
                let a = Box::new(self.compile(a)?);
                let b = Box::new(self.compile(b)?);
                let (Some((_, ra)), Some((_, rb))) = (a.shape.split_first(), b.shape.split_first())
                else {
                    return Err(mismatch(span, "`concat` needs two tensors, not scalars"));
                };
                if ra != rb {
                    return Err(mismatch(
                        span,
                        format!(
                            "`concat` needs equal element shapes, got {} and {}",
                            fmt_shape(ra),
                            fmt_shape(rb)
                        ),
                    ));
                }
                let shape = reshape::result_shape(
                    &Concrete,
                    ReshapeOp::Concat,
                    &[&a.shape, &b.shape],
                    None,
                )
                .ok_or_else(|| too_big(span, &[], self.limit))?;
                self.node(Kind::Concat(a, b), shape, span)
            }
            ExprKind::Transpose(a) => {
                let a = Box::new(self.compile(a)?);
                if a.shape.len() < 2 {
                    return Err(mismatch(
                        span,
                        format!(
                            "`transpose` needs two dimensions, got shape {}",
                            fmt_shape(&a.shape)
                        ),
                    ));
                }
                let shape =
                    reshape::result_shape(&Concrete, ReshapeOp::Transpose, &[&a.shape], None)
                        .ok_or_else(|| internal(span, "a transposition"))?;
                self.node(Kind::Transpose(a), shape, span)
            }
            ExprKind::Flatten(a) => {
                let a = Box::new(self.compile(a)?);
                let [_, _, ..] = a.shape.as_slice() else {
                    return Err(mismatch(
                        span,
                        format!(
                            "`flatten` needs two dimensions, got shape {}",
                            fmt_shape(&a.shape)
                        ),
                    ));
                };
                let shape = reshape::result_shape(&Concrete, ReshapeOp::Flatten, &[&a.shape], None)
                    .ok_or_else(|| too_big(span, &a.shape, self.limit))?;
                self.node(Kind::Flatten(a), shape, span)
            }
            ExprKind::Amount { op, amount, arg } => self.compile_amount(*op, amount, arg, span),
        }
    }

    /// Compiles definition `pos`. A definition is closed: it is compiled in empty
    /// scopes, allowing only references to definitions before it.
    fn compile_def(&mut self, pos: usize) -> Result<(), Diagnostic> {
        let program = self.program;
        let body = &program.defs[pos].body;
        let saved = (
            std::mem::take(&mut self.idx_names),
            std::mem::take(&mut self.idx_rep),
            std::mem::take(&mut self.lets),
            std::mem::take(&mut self.lets_static),
            self.def_limit,
        );
        self.def_limit = pos;
        let compiled = self.compile(body);
        (
            self.idx_names,
            self.idx_rep,
            self.lets,
            self.lets_static,
            self.def_limit,
        ) = saved;
        self.defs[pos] = Some(compiled?);
        Ok(())
    }

    /// Compiles the definitions `root` reaches, in program order, before `root`
    /// itself, keeping their errors for the reference that reaches them first. Each
    /// definition then finds the ones it uses already compiled, so a chain of
    /// definitions does not nest the compiler's recursion: its depth is that of one
    /// body, which the front end bounds.
    fn precompile_defs(&mut self, root: &'a Expr) {
        let program = self.program;
        let mut reached = vec![false; program.defs.len()];
        let mut work: Vec<(&'a Expr, usize)> = vec![(root, self.def_limit)];
        while let Some((e, limit)) = work.pop() {
            e.walk(&mut |n| {
                if let ExprKind::DefRef(name) = &n.kind
                    && let Some(pos) = program.defs[..limit.min(program.defs.len())]
                        .iter()
                        .rposition(|d| &d.name == name)
                    && !reached[pos]
                {
                    reached[pos] = true;
                    work.push((&program.defs[pos].body, pos));
                }
            });
        }
        for (pos, reached) in reached.into_iter().enumerate() {
            if reached
                && self.defs[pos].is_none()
                && self.def_errors[pos].is_none()
                && let Err(d) = self.compile_def(pos)
            {
                self.def_errors[pos] = Some(d);
            }
        }
    }

    fn compile_amount(
        &mut self,
        op: AmountOp,
        amount: &IndexExpr,
        arg: &'a Expr,
        span: Span,
    ) -> Result<Node, Diagnostic> {
        let arg = Box::new(self.compile(arg)?);
        let Some(&n) = arg.shape.first() else {
            return Err(mismatch(
                span,
                format!("`{}` needs a tensor, not a scalar", op.name()),
            ));
        };
        let amount = self.index(amount, span)?;
        let k = self.rep(&amount, span)?;
        let Ok(k) = usize::try_from(k) else {
            return Err(bad_amount(
                span,
                format!(
                    "the amount of `{}` must not be negative, got {k}",
                    op.name()
                ),
            ));
        };
        if op == AmountOp::Split && k == 0 {
            return Err(bad_amount(
                span,
                "`split` needs a row length of at least 1, got 0",
            ));
        }
        let shape =
            reshape::result_shape(&Concrete, ReshapeOp::Amount(op), &[&arg.shape], Some(&k))
                .ok_or_else(|| match op {
                    AmountOp::TruncL | AmountOp::TruncR => bad_amount(
                        span,
                        format!(
                            "`{}` cannot drop {k} elements from an extent of {n}",
                            op.name()
                        ),
                    ),
                    // Otherwise the extent overflowed (a pad; a `split` by a positive
                    // length always has a shape).
                    _ => too_big(span, &arg.shape, self.limit),
                })?;
        self.node(Kind::Amount { op, amount, k, arg }, shape, span)
    }
}

// ---------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------

/// Below this many output elements a `gen` is evaluated sequentially: the rayon
/// overhead would dominate.
const PAR_MIN_ELEMENTS: usize = 4096;

/// Checks the inputs, evaluates the reachable definitions in program order, then `node`.
fn run(
    compiler: Compiler<'_>,
    node: &Node,
    inputs: &BTreeMap<String, Tensor>,
    options: &EvalOptions,
) -> Result<Tensor, Diagnostic> {
    let program = compiler.program;
    let mut slices: Vec<&[f64]> = vec![&[]; program.inputs.len()];
    let arrays_read = compiler.arrays_read.borrow().clone();
    for pos in 0..program.inputs.len() {
        let declared = match &compiler.inputs[pos] {
            Some(shape) => shape.clone(),
            None if arrays_read[pos] => compiler.input_shape(pos)?,
            None => continue,
        };
        let declared = &declared;
        let decl = &program.inputs[pos];
        let Some(tensor) = inputs.get(&decl.name) else {
            return Err(at(
                Diagnostic::error("E0604", format!("input `{}` has no value", decl.name)),
                decl.span,
                "declared here",
            )
            .with_help(format!(
                "supply it with `--input {0}=random:SEED` or `--input {0}=PATH.npy`",
                decl.name
            )));
        };
        if &tensor.shape != declared {
            return Err(at(
                Diagnostic::error(
                    "E0605",
                    format!(
                        "input `{}` has shape {}, expected {} (declared as {})",
                        decl.name,
                        fmt_shape(&tensor.shape),
                        fmt_shape(declared),
                        fmt_index_shape(&decl.shape)
                    ),
                ),
                decl.span,
                "declared here",
            ));
        }
        if shape_numel(&tensor.shape) != Some(tensor.data.len()) {
            return Err(at(
                Diagnostic::error(
                    "E0605",
                    format!(
                        "input `{}` has {} values, but its shape {} needs {}",
                        decl.name,
                        tensor.data.len(),
                        fmt_shape(&tensor.shape),
                        node_count_text(&tensor.shape)
                    ),
                ),
                decl.span,
                "declared here",
            ));
        }
        if let Some(facts) = &decl.index_array {
            let sizes = compiler.sizes;
            check_index_array(&decl.name, facts, &tensor.data, &|n| sizes.get(n).copied())
                .map_err(|message| {
                    at(
                        Diagnostic::error("E0610", message),
                        decl.span,
                        "declared here",
                    )
                })?;
        }
        slices[pos] = &tensor.data;
    }
    let mut ctx = Ctx {
        inputs: slices,
        defs: vec![None; program.defs.len()],
        parallel: options.parallel,
        max_iterations: options.max_iterations,
        monitor: options.monitor.as_deref(),
    };
    // A definition only refers to earlier ones, so program order is dependency order.
    for (pos, def) in compiler.defs.iter().enumerate() {
        if let Some(def) = def {
            let value = ctx.eval_full(def)?;
            ctx.defs[pos] = Some(Arc::new(value));
        }
    }
    let data = ctx.eval_full(node)?;
    Ok(Tensor {
        shape: node.shape.clone(),
        data,
    })
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

fn node_count_text(shape: &[usize]) -> String {
    shape_numel(shape).map_or_else(
        || "more than can be addressed".to_string(),
        |n| n.to_string(),
    )
}

/// The evaluation environment of one thread.
#[derive(Clone, Debug)]
struct Env {
    /// Values of the `gen`/`sum` binders in scope, outermost first.
    idx: Vec<i64>,
    /// Values of the `let` variables in scope, outermost first.
    lets: Vec<Arc<Vec<f64>>>,
    /// Indices applied to the node being evaluated, innermost first: the last entry is
    /// the index into the node's outermost dimension. A node evaluated with `p` pending
    /// indices writes `node[pending[p-1]]…[pending[0]]`, of shape `shape[p..]`.
    pending: Vec<i64>,
    /// The iterations the enclosing loops run in all (the product of their trip
    /// counts): what one more iteration of the node being evaluated is multiplied by.
    outer_iterations: u128,
}

impl Default for Env {
    fn default() -> Env {
        Env {
            idx: Vec::new(),
            lets: Vec::new(),
            pending: Vec::new(),
            outer_iterations: 1,
        }
    }
}

/// Run-time values shared by all threads.
struct Ctx<'a> {
    inputs: Vec<&'a [f64]>,
    defs: Vec<Option<Arc<Vec<f64>>>>,
    parallel: bool,
    max_iterations: u64,
    monitor: Option<&'a Monitor>,
}

/// Whether `k` is a valid position in an extent of `n`.
fn in_range(k: i64, n: usize) -> bool {
    usize::try_from(k).is_ok_and(|k| k < n)
}

fn split_out(
    out: &mut [f64],
    at: usize,
    span: Span,
) -> Result<(&mut [f64], &mut [f64]), Diagnostic> {
    out.split_at_mut_checked(at)
        .ok_or_else(|| internal(span, "buffer split out of range"))
}

impl Ctx<'_> {
    /// Evaluates a closed node (no binders, lets or pending indices) into a new buffer.
    fn eval_full(&self, node: &Node) -> Result<Vec<f64>, Diagnostic> {
        let mut data = vec![0.0; node.numel()];
        self.eval(node, &mut Env::default(), &mut data)?;
        Ok(data)
    }

    fn index(&self, c: &CIdx, env: &Env, span: Span) -> Result<i64, Diagnostic> {
        c.eval(&env.idx, &self.inputs).ok_or_else(|| overflow(span))
    }

    /// E0609 once the monitor's cancellation flag is set.
    fn check_cancel(&self, span: Span) -> Result<(), Diagnostic> {
        match self.monitor {
            Some(m) if m.is_cancelled() => Err(at(
                Diagnostic::error("E0609", "the evaluation was interrupted"),
                span,
                "while evaluating this",
            )),
            _ => Ok(()),
        }
    }

    /// Counts a loop of `trips` iterations inside the enclosing ones: the new count of
    /// `env.outer_iterations` for its body (the caller restores the old one), or E0509.
    fn enter_loop(&self, trips: u128, env: &Env, span: Span) -> Result<u128, Diagnostic> {
        let total = env.outer_iterations.saturating_mul(trips);
        if total > u128::from(self.max_iterations) {
            return Err(too_long(span, total, self.max_iterations));
        }
        Ok(total)
    }

    /// Writes the value of `node`, indexed by the pending indices of `env`, into `out`.
    /// On success `env` is as it was; after an error it may not be (the caller aborts or,
    /// in a parallel loop, resets it).
    fn eval(&self, node: &Node, env: &mut Env, out: &mut [f64]) -> Result<(), Diagnostic> {
        if node.suffix.get(env.pending.len()) != Some(&out.len()) {
            return Err(internal(
                node.span,
                "output buffer does not match the shape",
            ));
        }
        if out.is_empty() && !node.checks {
            // Nothing to compute (an element shape with a zero extent).
            return Ok(());
        }
        let span = node.span;
        match &node.kind {
            Kind::Lit(v) => {
                out.fill(*v);
                Ok(())
            }
            Kind::Load(src) => self.load(node, *src, env, out),
            Kind::Gen {
                lo,
                hi,
                body,
                one_hot,
            } => {
                let extent = node.dim(0);
                let lo_v = self.gen_lower_bound(node, lo, hi, extent, env)?;
                match env.pending.pop() {
                    Some(k) => {
                        let r = if in_range(k, extent) {
                            // lo + k < hi, so it cannot overflow.
                            env.idx.push(lo_v + k);
                            let r = self.eval(body, env, out);
                            env.idx.pop();
                            r
                        } else {
                            out.fill(0.0);
                            Ok(())
                        };
                        env.pending.push(k);
                        r
                    }
                    None if one_hot.is_some() && !body.checks => {
                        out.fill(0.0);
                        self.add_one_hot(node, lo_v, env, out)
                    }
                    None => {
                        let outer = env.outer_iterations;
                        env.outer_iterations = self.enter_loop(extent as u128, env, span)?;
                        let r = self.gen_loop(lo_v, extent, body, env, out);
                        env.outer_iterations = outer;
                        r
                    }
                }
            }
            Kind::Sum { lo, hi, body } => {
                let lo_v = self.index(lo, env, span)?;
                let hi_v = self.index(hi, env, span)?;
                out.fill(0.0);
                let trips = u128::try_from(i128::from(hi_v) - i128::from(lo_v)).unwrap_or(0);
                let outer = env.outer_iterations;
                env.outer_iterations = self.enter_loop(trips, env, span)?;
                let r = self.sum_loop(lo_v, hi_v, body, env, out);
                env.outer_iterations = outer;
                r
            }
            Kind::MaxRed { lo, hi, body } => {
                // Scalar bodies only (E0416): `out` is one element.
                let lo_v = self.index(lo, env, span)?;
                let hi_v = self.index(hi, env, span)?;
                let trips = u128::try_from(i128::from(hi_v) - i128::from(lo_v)).unwrap_or(0);
                let outer = env.outer_iterations;
                env.outer_iterations = self.enter_loop(trips, env, span)?;
                let r = self.max_loop(lo_v, hi_v, body, env);
                env.outer_iterations = outer;
                out.fill(r?);
                Ok(())
            }
            Kind::Guard { pred, body } => {
                if pred
                    .eval(&env.idx, &self.inputs)
                    .ok_or_else(|| overflow(span))?
                {
                    self.eval(body, env, out)
                } else {
                    out.fill(0.0);
                    Ok(())
                }
            }
            Kind::Let { value, body, cache } => {
                let buf = match cache.as_ref().and_then(OnceLock::get) {
                    Some(buf) => Arc::clone(buf),
                    None => {
                        // The value is a whole tensor: evaluate it without the pending
                        // indices.
                        let saved = std::mem::take(&mut env.pending);
                        // A cached value is computed once, whatever loops it is in.
                        let outer = env.outer_iterations;
                        if cache.is_some() {
                            env.outer_iterations = 1;
                        }
                        let mut buf = vec![0.0; value.numel()];
                        let r = self.eval(value, env, &mut buf);
                        env.pending = saved;
                        env.outer_iterations = outer;
                        r?;
                        let buf = Arc::new(buf);
                        if let Some(cache) = cache {
                            // Another thread may have filled it meanwhile, with the same
                            // value.
                            let _ = cache.set(Arc::clone(&buf));
                        }
                        buf
                    }
                };
                env.lets.push(buf);
                let r = self.eval(body, env, out);
                env.lets.pop();
                r
            }
            Kind::Access { tensor, index } => {
                let k = self.index(index, env, span)?;
                env.pending.push(k);
                let r = self.eval(tensor, env, out);
                env.pending.pop();
                r
            }
            Kind::Neg(a) => {
                // `(-e)[k]` out of bounds is the zero `+0.0`, not `-(+0.0)`.
                let oob = env
                    .pending
                    .iter()
                    .rev()
                    .enumerate()
                    .any(|(d, &k)| !in_range(k, node.dim(d)));
                if oob {
                    out.fill(0.0);
                } else {
                    self.eval(a, env, out)?;
                    for x in out.iter_mut() {
                        *x = -*x;
                    }
                }
                Ok(())
            }
            Kind::Binary { op, lhs, rhs } => self.binary(node, *op, lhs, rhs, env, out),
            Kind::Call { func, args } => {
                let [slot] = out else {
                    return Err(internal(span, "scalar function with a tensor result"));
                };
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    let mut v = [0.0];
                    self.eval(a, env, &mut v)?;
                    values.push(v[0]);
                }
                *slot = func.apply(&values);
                Ok(())
            }
            Kind::Concat(a, b) => {
                let na = a.dim(0);
                match env.pending.last().copied() {
                    Some(k) if k < na as i64 => self.eval(a, env, out),
                    Some(k) => {
                        // k >= na >= 0, so this cannot overflow.
                        self.with_top(env, k - na as i64, |env| self.eval(b, env, out))
                    }
                    None => {
                        let (head, tail) = split_out(out, a.numel(), span)?;
                        self.eval(a, env, head)?;
                        self.eval(b, env, tail)
                    }
                }
            }
            Kind::Transpose(a) => self.transpose(node, a, env, out),
            Kind::Flatten(a) => match env.pending.pop() {
                Some(k) => {
                    let (n, m) = (a.dim(0), a.dim(1));
                    let r = if in_range(k, n * m) {
                        let m = m as i64;
                        env.pending.push(k % m);
                        env.pending.push(k / m);
                        let r = self.eval(a, env, out);
                        env.pending.truncate(env.pending.len().saturating_sub(2));
                        r
                    } else {
                        out.fill(0.0);
                        Ok(())
                    };
                    env.pending.push(k);
                    r
                }
                // Flattening does not move data in row-major order.
                None => self.eval(a, env, out),
            },
            Kind::Amount { op, amount, k, arg } => {
                self.amount(node, *op, amount, *k, arg, env, out)
            }
        }
    }

    /// Replaces the outermost pending index by `k` while running `f`.
    fn with_top(
        &self,
        env: &mut Env,
        k: i64,
        f: impl FnOnce(&mut Env) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let Some(top) = env.pending.last_mut() else {
            return Ok(());
        };
        let saved = std::mem::replace(top, k);
        let r = f(env);
        if let Some(top) = env.pending.last_mut() {
            *top = saved;
        }
        r
    }

    fn load(&self, node: &Node, src: Src, env: &Env, out: &mut [f64]) -> Result<(), Diagnostic> {
        let data: Option<&[f64]> = match src {
            Src::Input(p) => self.inputs.get(p).copied(),
            Src::Def(p) => self
                .defs
                .get(p)
                .and_then(|d| d.as_deref())
                .map(Vec::as_slice),
            Src::Let(l) => env.lets.get(l).map(|v| v.as_slice()),
        };
        let data = data.ok_or_else(|| internal(node.span, "stored tensor missing"))?;
        let mut offset = 0usize;
        for (d, &k) in env.pending.iter().rev().enumerate() {
            if !in_range(k, node.dim(d)) {
                out.fill(0.0);
                return Ok(());
            }
            offset += k as usize * node.stride(d + 1);
        }
        let missing = || internal(node.span, "stored tensor has the wrong size");
        if let [o] = out {
            // The common case (a scalar read) without a `memcpy` call.
            *o = *data.get(offset).ok_or_else(missing)?;
        } else {
            out.copy_from_slice(data.get(offset..offset + out.len()).ok_or_else(missing)?);
        }
        Ok(())
    }

    /// Evaluates the bounds of a `gen`, checks that its extent is the one its shape was
    /// computed with, and returns the lower bound.
    fn gen_lower_bound(
        &self,
        node: &Node,
        lo: &CIdx,
        hi: &CIdx,
        extent: usize,
        env: &Env,
    ) -> Result<i64, Diagnostic> {
        let lo_v = self.index(lo, env, node.span)?;
        if lo.is_const() && hi.is_const() {
            // Checked at compile time.
            return Ok(lo_v);
        }
        let hi_v = self.index(hi, env, node.span)?;
        let actual = if hi_v > lo_v {
            hi_v.checked_sub(lo_v).ok_or_else(|| overflow(node.span))?
        } else {
            0
        };
        if !usize::try_from(actual).is_ok_and(|a| a == extent) {
            return Err(mismatch(
                node.span,
                format!(
                    "this `gen` has {actual} elements here but {extent} where its shape was \
                     computed (its bounds depend on an enclosing binder: a jagged tensor)"
                ),
            ));
        }
        Ok(lo_v)
    }

    /// Evaluates every iteration of a `gen` into consecutive chunks of `out`.
    /// The terms of a `sum` over `lo..hi`, added into `out` (zeroed by the caller).
    fn sum_loop(
        &self,
        lo_v: i64,
        hi_v: i64,
        body: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        if let [acc] = out {
            let mut t = [0.0];
            for v in lo_v..hi_v {
                self.check_cancel(body.span)?;
                env.idx.push(v);
                self.eval(body, env, &mut t)?;
                env.idx.pop();
                *acc += t[0];
            }
        } else if let Kind::Gen {
            lo,
            hi,
            one_hot: Some(_),
            ..
        } = &body.kind
            && !body.checks
        {
            // A sum of one-hot generators (a scatter): each term adds its one
            // non-zero element in place. The other elements would add exact zeros,
            // which change nothing: a sum that starts at +0 never holds -0.
            for v in lo_v..hi_v {
                self.check_cancel(body.span)?;
                env.idx.push(v);
                let r = self
                    .gen_lower_bound(body, lo, hi, body.dim(0), env)
                    .and_then(|lo| self.add_one_hot(body, lo, env, out));
                env.idx.pop();
                r?;
            }
        } else {
            let mut t = vec![0.0; out.len()];
            for v in lo_v..hi_v {
                self.check_cancel(body.span)?;
                env.idx.push(v);
                self.eval(body, env, &mut t)?;
                env.idx.pop();
                for (o, x) in out.iter_mut().zip(&t) {
                    *o += x;
                }
            }
        }
        Ok(())
    }

    /// Adds the value of the one-hot generator `node` (from `lo_v`) into `out`: its
    /// body at the one binder value where it may be non-zero, added into that
    /// element's chunk; nothing when that value is outside the generator.
    fn add_one_hot(
        &self,
        node: &Node,
        lo_v: i64,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        let Kind::Gen {
            body,
            one_hot: Some(target),
            ..
        } = &node.kind
        else {
            return Err(internal(
                node.span,
                "a one-hot generator without its target",
            ));
        };
        let t = self.index(target, env, node.span)?;
        let k = i128::from(t) - i128::from(lo_v);
        let extent = node.dim(0);
        if k < 0 || k >= extent as i128 {
            return Ok(());
        }
        let elem = body.numel();
        let k = k as usize;
        let mut chunk = vec![0.0; elem];
        env.idx.push(t);
        let r = self.eval(body, env, &mut chunk);
        env.idx.pop();
        r?;
        for (o, x) in out[k * elem..(k + 1) * elem].iter_mut().zip(&chunk) {
            *o += x;
        }
        Ok(())
    }

    /// The largest of the (scalar) terms over `lo..hi`; `-inf` when there are none.
    fn max_loop(
        &self,
        lo_v: i64,
        hi_v: i64,
        body: &Node,
        env: &mut Env,
    ) -> Result<f64, Diagnostic> {
        let mut acc = crate::functions::MAX_EMPTY;
        let mut t = [0.0];
        for v in lo_v..hi_v {
            self.check_cancel(body.span)?;
            env.idx.push(v);
            self.eval(body, env, &mut t)?;
            env.idx.pop();
            acc = crate::functions::max_step(acc, t[0]);
        }
        Ok(acc)
    }

    fn gen_loop(
        &self,
        lo_v: i64,
        extent: usize,
        body: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        let elem = body.numel();
        if elem == 0 {
            // Empty elements: only the run-time shape checks below can say anything.
            if body.checks {
                for t in 0..extent {
                    env.idx.push(lo_v + t as i64);
                    self.eval(body, env, &mut [])?;
                    env.idx.pop();
                }
            }
            return Ok(());
        }
        // The outermost loop of an evaluation reports its iterations as progress.
        let progress = self.monitor.filter(|_| env.idx.is_empty());
        if let Some(m) = progress {
            m.restart_count(extent as u64);
        }
        // The binder values lo..lo+extent fit in i64: lo + extent is the checked `hi`.
        if !(self.parallel && extent >= 2 && out.len() >= PAR_MIN_ELEMENTS) {
            for (t, chunk) in out.chunks_mut(elem).enumerate() {
                self.check_cancel(body.span)?;
                env.idx.push(lo_v + t as i64);
                self.eval(body, env, chunk)?;
                env.idx.pop();
                if let Some(m) = progress {
                    m.advance(1);
                }
            }
            return Ok(());
        }
        let base_idx = env.idx.len();
        let base_lets = env.lets.len();
        let template: &Env = env;
        // Iterations after a known failure are skipped, but earlier ones still run, so
        // the reported error is the first in iteration order, as in a sequential run.
        let first_failure = AtomicUsize::new(usize::MAX);
        let failure: Mutex<Option<(usize, Diagnostic)>> = Mutex::new(None);
        out.par_chunks_mut(elem).enumerate().for_each_init(
            || template.clone(),
            |local, (t, chunk)| {
                if t > first_failure.load(Ordering::Relaxed) {
                    return;
                }
                // An earlier failed iteration may have left the environment dirty.
                local.idx.truncate(base_idx);
                local.lets.truncate(base_lets);
                local.pending.clear();
                local.idx.push(lo_v + t as i64);
                let result = self
                    .check_cancel(body.span)
                    .and_then(|()| self.eval(body, local, chunk));
                if let Some(m) = progress {
                    m.advance(1);
                }
                if let Err(e) = result {
                    first_failure.fetch_min(t, Ordering::Relaxed);
                    let mut slot = failure.lock().unwrap_or_else(PoisonError::into_inner);
                    if slot.as_ref().is_none_or(|(u, _)| t < *u) {
                        *slot = Some((t, e));
                    }
                }
            },
        );
        match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    fn binary(
        &self,
        node: &Node,
        op: BinOp,
        lhs: &Node,
        rhs: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        match op {
            BinOp::Add | BinOp::Sub => {
                self.eval(lhs, env, out)?;
                let mut small = [0.0];
                let mut big = Vec::new();
                let t: &mut [f64] = if out.len() == 1 {
                    &mut small
                } else {
                    big.resize(out.len(), 0.0);
                    &mut big
                };
                self.eval(rhs, env, t)?;
                if op == BinOp::Add {
                    out.iter_mut().zip(t.iter()).for_each(|(o, x)| *o += x);
                } else {
                    out.iter_mut().zip(t.iter()).for_each(|(o, x)| *o -= x);
                }
                Ok(())
            }
            BinOp::Mul | BinOp::Div => {
                let [slot] = out else {
                    return Err(internal(node.span, "scalar operation on a tensor"));
                };
                let mut a = [0.0];
                let mut b = [0.0];
                self.eval(lhs, env, &mut a)?;
                self.eval(rhs, env, &mut b)?;
                *slot = if op == BinOp::Mul {
                    a[0] * b[0]
                } else {
                    if b[0] == 0.0 {
                        return Err(at(
                            Diagnostic::error("E0501", format!("division by zero ({} / 0)", a[0])),
                            node.span,
                            "the divisor is 0 here",
                        )
                        .with_help(
                            "a guard `[p] * (x / d)` skips the division wherever `p` is false; \
                             use one to exclude the positions where the divisor is 0",
                        ));
                    }
                    a[0] / b[0]
                };
                Ok(())
            }
        }
    }

    fn transpose(
        &self,
        node: &Node,
        a: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        let p = env.pending.len();
        if p >= 2 {
            // transpose(e)[i][j] = e[j][i].
            env.pending.swap(p - 1, p - 2);
            let r = self.eval(a, env, out);
            env.pending.swap(p - 1, p - 2);
            return r;
        }
        let n = a.dim(0);
        let m = a.dim(1);
        let r = a.stride(2);
        if r == 0 {
            return Ok(());
        }
        if let Some(i) = env.pending.pop() {
            // transpose(e)[i] = gen j < |e|: e[j][i].
            let mut result = Ok(());
            for (j, chunk) in out.chunks_mut(r).enumerate() {
                env.pending.push(i);
                env.pending.push(j as i64);
                result = self.eval(a, env, chunk);
                env.pending.truncate(p - 1);
                if result.is_err() {
                    break;
                }
            }
            env.pending.push(i);
            return result;
        }
        let mut tmp = vec![0.0; a.numel()];
        self.eval(a, env, &mut tmp)?;
        for i in 0..n {
            for j in 0..m {
                let src = tmp.get((i * m + j) * r..(i * m + j + 1) * r);
                let dst = out.get_mut((j * n + i) * r..(j * n + i + 1) * r);
                match (src, dst) {
                    (Some(src), Some(dst)) => dst.copy_from_slice(src),
                    _ => return Err(internal(node.span, "transpose out of range")),
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn amount(
        &self,
        node: &Node,
        op: AmountOp,
        amount: &CIdx,
        k: usize,
        arg: &Node,
        env: &mut Env,
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        let span = node.span;
        if !amount.is_const() {
            let actual = self.index(amount, env, span)?;
            if !usize::try_from(actual).is_ok_and(|a| a == k) {
                return Err(mismatch(
                    span,
                    format!(
                        "the amount of this `{}` is {actual} here but {k} where its shape was \
                         computed (it depends on an enclosing binder: a jagged tensor)",
                        op.name()
                    ),
                ));
            }
        }
        let n = arg.dim(0);
        let elem = arg.stride(1);
        let ki = k as i64;
        let p = env.pending.len();
        match op {
            AmountOp::Split => {
                let rows = node.dim(0);
                if p >= 2 {
                    // split(k, e)[i][j] = [i*k + j < |e|] * e[i*k + j] for 0 <= j < k.
                    let i = env.pending[p - 1];
                    let j = env.pending[p - 2];
                    if !(in_range(i, rows) && in_range(j, k)) {
                        out.fill(0.0);
                        return Ok(());
                    }
                    // i < cdiv(n, k) and j < k, so t < n + k: no overflow.
                    let t = i * ki + j;
                    if !in_range(t, n) {
                        out.fill(0.0);
                        return Ok(());
                    }
                    env.pending.truncate(p - 2);
                    env.pending.push(t);
                    let r = self.eval(arg, env, out);
                    env.pending.pop();
                    env.pending.push(j);
                    env.pending.push(i);
                    return r;
                }
                if let Some(i) = env.pending.pop() {
                    let mut result = Ok(());
                    if in_range(i, rows) {
                        for (j, chunk) in out.chunks_mut(elem.max(1)).enumerate() {
                            let t = i * ki + j as i64;
                            if in_range(t, n) {
                                env.pending.push(t);
                                result = self.eval(arg, env, chunk);
                                env.pending.pop();
                                if result.is_err() {
                                    break;
                                }
                            } else {
                                chunk.fill(0.0);
                            }
                        }
                    } else {
                        out.fill(0.0);
                    }
                    env.pending.push(i);
                    return result;
                }
                // Row-major, split(k, e) is e's data followed by a zero tail.
                let (head, tail) = split_out(out, arg.numel(), span)?;
                self.eval(arg, env, head)?;
                tail.fill(0.0);
                Ok(())
            }
            AmountOp::PadL => match env.pending.last().copied() {
                Some(i) if i < ki => {
                    out.fill(0.0);
                    Ok(())
                }
                Some(i) => self.with_top(env, i - ki, |env| self.eval(arg, env, out)),
                None => {
                    let (head, tail) = split_out(out, k * elem, span)?;
                    head.fill(0.0);
                    self.eval(arg, env, tail)
                }
            },
            AmountOp::PadR => match env.pending.last().copied() {
                Some(i) if in_range(i, n) => self.eval(arg, env, out),
                Some(_) => {
                    out.fill(0.0);
                    Ok(())
                }
                None => {
                    let (head, tail) = split_out(out, arg.numel(), span)?;
                    self.eval(arg, env, head)?;
                    tail.fill(0.0);
                    Ok(())
                }
            },
            AmountOp::TruncL | AmountOp::TruncR => {
                let kept = node.dim(0);
                let skip = if op == AmountOp::TruncL { k } else { 0 };
                match env.pending.last().copied() {
                    Some(i) if in_range(i, kept) => {
                        self.with_top(env, i + skip as i64, |env| self.eval(arg, env, out))
                    }
                    Some(_) => {
                        out.fill(0.0);
                        Ok(())
                    }
                    None => {
                        let mut tmp = vec![0.0; arg.numel()];
                        self.eval(arg, env, &mut tmp)?;
                        let start = skip * elem;
                        let src = tmp
                            .get(start..start + out.len())
                            .ok_or_else(|| internal(span, "truncation out of range"))?;
                        out.copy_from_slice(src);
                        Ok(())
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexExpr as I;
    use crate::ir::{Assume, Def, InputDecl, SizeDecl};

    // ---- builders -------------------------------------------------------------------

    fn c(v: i64) -> I {
        I::Const(v)
    }

    fn v(name: &str) -> I {
        I::var(name)
    }

    fn ibin(op: IndexOp, a: I, b: I) -> I {
        I::bin(op, a, b)
    }

    fn inp(name: &str) -> Expr {
        Expr::input(name)
    }

    fn get(t: Expr, i: I) -> Expr {
        Expr::access(t, i)
    }

    fn get2(t: Expr, i: I, j: I) -> Expr {
        get(get(t, i), j)
    }

    fn gen_(var: &str, n: I, body: Expr) -> Expr {
        Expr::gen_(var, c(0), n, body)
    }

    fn sum_(var: &str, n: I, body: Expr) -> Expr {
        Expr::sum(var, c(0), n, body)
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::binary(op, a, b)
    }

    fn neg(a: Expr) -> Expr {
        Expr::synth(ExprKind::Neg(Box::new(a)))
    }

    fn amount(op: AmountOp, k: I, arg: Expr) -> Expr {
        Expr::synth(ExprKind::Amount {
            op,
            amount: k,
            arg: Box::new(arg),
        })
    }

    fn concat(a: Expr, b: Expr) -> Expr {
        Expr::synth(ExprKind::Concat(Box::new(a), Box::new(b)))
    }

    fn transpose(a: Expr) -> Expr {
        Expr::synth(ExprKind::Transpose(Box::new(a)))
    }

    fn flatten(a: Expr) -> Expr {
        Expr::synth(ExprKind::Flatten(Box::new(a)))
    }

    fn def_ref(name: &str) -> Expr {
        Expr::synth(ExprKind::DefRef(name.to_string()))
    }

    fn cmp(op: CmpOp, a: I, b: I) -> Pred {
        Pred::cmp(op, a, b)
    }

    fn with_span(mut e: Expr, start: usize, end: usize) -> Expr {
        e.span = Span::new(start, end);
        e
    }

    fn def(name: &str, body: Expr) -> Def {
        Def {
            name: name.to_string(),
            name_span: Span::DUMMY,
            body,
            span: Span::DUMMY,
            hints: Vec::new(),
            vector_width: None,
        }
    }

    /// `size n, m; input f: [n]; input A: [n, m]; input B: [m, n]; input s: []`.
    fn program() -> Program {
        let size = |name: &str, at: usize| SizeDecl {
            name: name.to_string(),
            span: Span::new(at, at + 6),
        };
        let input = |name: &str, shape: Vec<I>, at: usize| InputDecl {
            name: name.to_string(),
            shape,
            index_array: None,
            span: Span::new(at, at + 10),
        };
        Program {
            sizes: vec![size("n", 0), size("m", 10)],
            inputs: vec![
                input("f", vec![v("n")], 20),
                input("A", vec![v("n"), v("m")], 40),
                input("B", vec![v("m"), v("n")], 60),
                input("s", vec![], 80),
            ],
            ..Program::default()
        }
    }

    fn sizes(n: i64, m: i64) -> BTreeMap<String, i64> {
        BTreeMap::from([("n".to_string(), n), ("m".to_string(), m)])
    }

    /// n = 5, m = 3; f = [1, 2, 3, 4, 5]; A[i][j] = 10 i + j; B random; s = 7.
    fn inputs() -> BTreeMap<String, Tensor> {
        inputs_at(5, 3)
    }

    fn inputs_at(n: usize, m: usize) -> BTreeMap<String, Tensor> {
        let f = Tensor::new(vec![n], (1..=n).map(|x| x as f64).collect()).unwrap();
        let a_data = (0..n * m).map(|k| (10 * (k / m) + k % m) as f64).collect();
        let a = Tensor::new(vec![n, m], a_data).unwrap();
        BTreeMap::from([
            ("f".to_string(), f),
            ("A".to_string(), a),
            ("B".to_string(), Tensor::random(vec![m, n], 9)),
            ("s".to_string(), Tensor::scalar(7.0)),
        ])
    }

    fn seq() -> EvalOptions {
        EvalOptions {
            parallel: false,
            ..EvalOptions::default()
        }
    }

    fn eval(e: &Expr) -> Tensor {
        eval_with(&program(), e, &sizes(5, 3), &inputs())
    }

    fn eval_with(
        p: &Program,
        e: &Expr,
        sizes: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Tensor {
        match eval_expr(p, e, sizes, inputs, &EvalOptions::default()) {
            Ok(t) => t,
            Err(d) => panic!("evaluation failed: {d:?}"),
        }
    }

    fn eval_err(e: &Expr) -> Diagnostic {
        match eval_expr(
            &program(),
            e,
            &sizes(5, 3),
            &inputs(),
            &EvalOptions::default(),
        ) {
            Ok(t) => panic!("expected an error, got {t:?}"),
            Err(d) => d,
        }
    }

    fn t(shape: Vec<usize>, data: Vec<f64>) -> Tensor {
        Tensor::new(shape, data).expect("consistent tensor")
    }

    fn a_at(i: i64, j: i64) -> f64 {
        (10 * i + j) as f64
    }

    /// Checks every single and double access `e[i]`, `e[i][j]` (including out-of-bounds
    /// ones) against slices of the fully evaluated `e`: the lazy access paths must agree
    /// with materialization.
    fn assert_accesses_agree(e: &Expr) {
        let full = eval(e);
        let Some(&n) = full.shape.first() else {
            return;
        };
        let row = full.shape[1..].iter().product::<usize>();
        for i in -2..n as i64 + 2 {
            let got = eval(&get(e.clone(), c(i)));
            let want: Vec<f64> = if (0..n as i64).contains(&i) {
                full.data[i as usize * row..(i as usize + 1) * row].to_vec()
            } else {
                vec![0.0; row]
            };
            assert_eq!(got.shape, full.shape[1..].to_vec(), "shape of e[{i}]");
            assert_eq!(got.data, want, "e[{i}] of {e:?}");
            if let Some(&m) = full.shape.get(1) {
                let inner = full.shape[2..].iter().product::<usize>();
                for j in -2..m as i64 + 2 {
                    let got = eval(&get2(e.clone(), c(i), c(j)));
                    let want: Vec<f64> = if (0..m as i64).contains(&j) {
                        want[j as usize * inner..(j as usize + 1) * inner].to_vec()
                    } else {
                        vec![0.0; inner]
                    };
                    assert_eq!(got.data, want, "e[{i}][{j}] of {e:?}");
                }
            }
        }
    }

    // ---- constructs -------------------------------------------------------------------

    #[test]
    fn scalar_arithmetic_inputs_and_negation() {
        // f[2] * 2 + s / 2 - (-1) = 6 + 3.5 + 1
        let e = bin(
            BinOp::Sub,
            bin(
                BinOp::Add,
                bin(BinOp::Mul, get(inp("f"), c(2)), Expr::lit(2.0)),
                bin(BinOp::Div, inp("s"), Expr::lit(2.0)),
            ),
            neg(Expr::lit(1.0)),
        );
        assert_eq!(eval(&e), Tensor::scalar(10.5));
        assert_eq!(
            eval(&neg(inp("f"))),
            t(vec![5], vec![-1.0, -2.0, -3.0, -4.0, -5.0])
        );
        assert_eq!(eval(&inp("s")), Tensor::scalar(7.0));
    }

    #[test]
    fn gen_stacks_the_body_over_its_range() {
        let sq = |i: &str| bin(BinOp::Mul, get(inp("f"), v(i)), get(inp("f"), v(i)));
        let e = Expr::gen_("i", c(2), v("n"), sq("i"));
        assert_eq!(eval(&e), t(vec![3], vec![9.0, 16.0, 25.0]));
        // Pointwise tensor `-` on matrix rows, nested gens.
        let e = gen_(
            "i",
            v("n"),
            gen_(
                "j",
                v("m"),
                bin(
                    BinOp::Sub,
                    get2(inp("A"), v("i"), v("j")),
                    get(inp("f"), v("i")),
                ),
            ),
        );
        let mut want = Vec::new();
        for i in 0..5 {
            for j in 0..3 {
                want.push(a_at(i, j) - (i + 1) as f64);
            }
        }
        assert_eq!(eval(&e), t(vec![5, 3], want));
    }

    #[test]
    fn sum_adds_scalars_and_tensors() {
        assert_eq!(
            eval(&sum_("k", v("n"), get(inp("f"), v("k")))),
            Tensor::scalar(15.0)
        );
        // Column sums of A, summing whole rows (tensor +).
        let want: Vec<f64> = (0..3).map(|j| (0..5).map(|i| a_at(i, j)).sum()).collect();
        assert_eq!(
            eval(&sum_("i", v("n"), get(inp("A"), v("i")))),
            t(vec![3], want)
        );
        // A sum with a nonzero lower bound.
        assert_eq!(
            eval(&Expr::sum("k", c(3), c(5), get(inp("f"), v("k")))),
            Tensor::scalar(9.0)
        );
    }

    #[test]
    fn matmul_matches_plain_loops_bitwise() {
        let mut p = program();
        p.inputs.push(InputDecl {
            name: "C".into(),
            shape: vec![v("n"), v("m")],
            index_array: None,
            span: Span::DUMMY,
        });
        let (n, m) = (6usize, 4usize);
        let mut ins = inputs_at(n, m);
        let a = Tensor::random(vec![n, m], 1);
        ins.insert("C".into(), a.clone());
        let b = ins["B"].clone();
        // gen i < n: gen j < n: sum k < m: C[i][k] * B[k][j]
        let e = gen_(
            "i",
            v("n"),
            gen_(
                "j",
                v("n"),
                sum_(
                    "k",
                    v("m"),
                    bin(
                        BinOp::Mul,
                        get2(inp("C"), v("i"), v("k")),
                        get2(inp("B"), v("k"), v("j")),
                    ),
                ),
            ),
        );
        let got = eval_with(&p, &e, &sizes(n as i64, m as i64), &ins);
        let mut want = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let mut acc = 0.0;
                for k in 0..m {
                    acc += a.data[i * m + k] * b.data[k * n + j];
                }
                want.push(acc);
            }
        }
        assert_eq!(got.shape, vec![n, n]);
        let bits = |d: &[f64]| d.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got.data), bits(&want));
    }

    #[test]
    fn empty_gens_keep_their_element_shape() {
        // A backwards range is a negative extent (E0508), not an empty one: the shape
        // discipline (ARCHITECTURE.md) never clamps extents.
        let e = Expr::gen_("i", c(3), c(1), get(inp("A"), v("i")));
        assert_eq!(eval_err(&e).code, "E0508");
        let e = Expr::gen_("i", c(3), c(3), get(inp("A"), v("i")));
        assert_eq!(eval(&e), t(vec![0, 3], vec![]));
        let e = Expr::gen_("i", c(0), c(0), gen_("j", v("m"), get(inp("f"), v("j"))));
        assert_eq!(eval(&e), t(vec![0, 3], vec![]));
        let e = gen_(
            "i",
            c(2),
            Expr::gen_("j", c(4), c(4), get(inp("f"), v("j"))),
        );
        assert_eq!(eval(&e), t(vec![2, 0], vec![]));
    }

    #[test]
    fn empty_sums_are_zeros_of_the_body_shape() {
        let e = Expr::sum("k", c(2), c(2), get(inp("A"), v("k")));
        assert_eq!(eval(&e), Tensor::zeros(vec![3]));
        let e = Expr::sum("k", c(5), c(1), gen_("j", c(2), get(inp("f"), v("j"))));
        assert_eq!(eval(&e), Tensor::zeros(vec![2]));
        let e = Expr::sum("k", c(5), c(1), get(inp("f"), v("k")));
        assert_eq!(eval(&e), Tensor::scalar(0.0));
    }

    #[test]
    fn false_guards_of_tensors_give_zero_rows() {
        // gen i < n: [i == 1 || i >= 4] * A[i]
        let p = Pred::or(cmp(CmpOp::Eq, v("i"), c(1)), cmp(CmpOp::Ge, v("i"), c(4)));
        let e = gen_("i", v("n"), Expr::guard(p, get(inp("A"), v("i"))));
        let mut want = Vec::new();
        for i in 0..5 {
            for j in 0..3 {
                want.push(if i == 1 || i == 4 { a_at(i, j) } else { 0.0 });
            }
        }
        assert_eq!(eval(&e), t(vec![5, 3], want));
        let e = Expr::guard(Pred::Bool(false), inp("A"));
        assert_eq!(eval(&e), Tensor::zeros(vec![5, 3]));
    }

    #[test]
    fn out_of_bounds_rows_are_zero_rows() {
        assert_eq!(eval(&get(inp("A"), c(-1))), Tensor::zeros(vec![3]));
        assert_eq!(eval(&get(inp("A"), c(5))), Tensor::zeros(vec![3]));
        assert_eq!(
            eval(&get(inp("A"), c(4))),
            t(vec![3], vec![40.0, 41.0, 42.0])
        );
        assert_eq!(eval(&get2(inp("A"), c(2), c(3))), Tensor::scalar(0.0));
        // gen i in -1..n+1: A[i][0]
        let e = Expr::gen_(
            "i",
            c(-1),
            I::add(v("n"), c(1)),
            get2(inp("A"), v("i"), c(0)),
        );
        assert_eq!(
            eval(&e),
            t(vec![7], vec![0.0, 0.0, 10.0, 20.0, 30.0, 40.0, 0.0])
        );
    }

    #[test]
    fn index_division_floors_negative_numerators() {
        // gen i < 8: f[(i - 3) / 2 + 2], f[(i - 3) % 4], f[cdiv(i - 3, 2) + 1]
        let num = || I::sub(v("i"), c(3));
        let div = gen_(
            "i",
            c(8),
            get(inp("f"), I::add(ibin(IndexOp::Div, num(), c(2)), c(2))),
        );
        let modulo = gen_("i", c(8), get(inp("f"), ibin(IndexOp::Mod, num(), c(4))));
        let cdiv = gen_(
            "i",
            c(8),
            get(inp("f"), I::add(ibin(IndexOp::CDiv, num(), c(2)), c(1))),
        );
        let f = |k: i64| {
            if (0..5).contains(&k) {
                (k + 1) as f64
            } else {
                0.0
            }
        };
        // For positive divisors, floor division is Euclidean division.
        let want_div: Vec<f64> = (0..8).map(|i| f((i - 3i64).div_euclid(2) + 2)).collect();
        let want_mod: Vec<f64> = (0..8).map(|i| f((i - 3i64).rem_euclid(4))).collect();
        let want_cdiv: Vec<f64> = (0..8)
            .map(|i| f(-(-(i - 3i64)).div_euclid(2) + 1))
            .collect();
        assert_eq!(want_div[0], f(0), "(-3) / 2 = -2, so i = 0 reads f[0]");
        assert_eq!(eval(&div).data, want_div);
        assert_eq!(eval(&modulo).data, want_mod);
        assert_eq!(eval(&cdiv).data, want_cdiv);
    }

    // ---- reshape operators ------------------------------------------------------------

    #[test]
    fn split_pads_a_non_divisible_extent_with_zeros() {
        let e = amount(AmountOp::Split, c(2), inp("f"));
        assert_eq!(eval(&e), t(vec![3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 0.0]));
        assert_eq!(eval(&get(e.clone(), c(2))), t(vec![2], vec![5.0, 0.0]));
        assert_eq!(eval(&get2(e.clone(), c(1), c(0))), Tensor::scalar(3.0));
        assert_eq!(eval(&get2(e.clone(), c(2), c(1))), Tensor::scalar(0.0));
        // j outside 0..k must not wrap into the next row.
        assert_eq!(eval(&get2(e.clone(), c(1), c(2))), Tensor::scalar(0.0));
        assert_eq!(eval(&get2(e.clone(), c(1), c(-1))), Tensor::scalar(0.0));
        assert_accesses_agree(&e);
        // k larger than the extent: one row with a zero tail.
        let e = amount(AmountOp::Split, c(7), inp("f"));
        assert_eq!(
            eval(&e),
            t(vec![1, 7], vec![1.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0])
        );
        // Splitting a matrix splits its rows.
        let e = amount(AmountOp::Split, c(2), inp("A"));
        let got = eval(&e);
        assert_eq!(got.shape, vec![3, 2, 3]);
        assert_eq!(got.get(&[1, 1, 2]), a_at(3, 2));
        assert_eq!(got.get(&[2, 1, 0]), 0.0);
        assert_accesses_agree(&e);
    }

    #[test]
    fn tiling_identity_holds_for_every_tile_size() {
        // f = trunc_r(cdiv(n, k) * k - n, flatten(split(k, f)))
        for k in 1..=7 {
            let pad = I::sub(I::mul(ibin(IndexOp::CDiv, v("n"), c(k)), c(k)), v("n"));
            let e = amount(
                AmountOp::TruncR,
                pad,
                flatten(amount(AmountOp::Split, c(k), inp("f"))),
            );
            assert_eq!(eval(&e), inputs()["f"], "k = {k}");
            // Accessed element by element (the lazy path through all three operators).
            let e = gen_("i", v("n"), get(e, v("i")));
            assert_eq!(eval(&e), inputs()["f"], "k = {k}, accessed");
        }
    }

    #[test]
    fn pad_and_trunc_add_and_drop_elements() {
        let f = |op, k| amount(op, c(k), inp("f"));
        assert_eq!(
            eval(&f(AmountOp::PadR, 2)),
            t(vec![7], vec![1.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0])
        );
        assert_eq!(
            eval(&f(AmountOp::PadL, 2)),
            t(vec![7], vec![0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
        );
        assert_eq!(
            eval(&f(AmountOp::TruncR, 2)),
            t(vec![3], vec![1.0, 2.0, 3.0])
        );
        assert_eq!(
            eval(&f(AmountOp::TruncL, 2)),
            t(vec![3], vec![3.0, 4.0, 5.0])
        );
        assert_eq!(eval(&f(AmountOp::TruncL, 5)), t(vec![0], vec![]));
        assert_eq!(eval(&f(AmountOp::PadL, 0)), inputs()["f"]);
        for op in [
            AmountOp::PadL,
            AmountOp::PadR,
            AmountOp::TruncL,
            AmountOp::TruncR,
        ] {
            assert_accesses_agree(&f(op, 2));
            assert_accesses_agree(&amount(op, c(1), inp("A")));
        }
        // The adjoint pairs.
        for k in 0..4 {
            let r = amount(
                AmountOp::TruncR,
                c(k),
                amount(AmountOp::PadR, c(k), inp("A")),
            );
            let l = amount(
                AmountOp::TruncL,
                c(k),
                amount(AmountOp::PadL, c(k), inp("A")),
            );
            assert_eq!(eval(&r), inputs()["A"]);
            assert_eq!(eval(&l), inputs()["A"]);
        }
        // Padding a matrix adds zero rows.
        let got = eval(&amount(AmountOp::PadR, c(1), inp("A")));
        assert_eq!(got.shape, vec![6, 3]);
        assert_eq!(&got.data[15..], &[0.0, 0.0, 0.0]);
    }

    #[test]
    fn concat_transpose_and_flatten() {
        let e = concat(inp("f"), amount(AmountOp::TruncR, c(2), inp("f")));
        assert_eq!(
            eval(&e),
            t(vec![8], vec![1.0, 2.0, 3.0, 4.0, 5.0, 1.0, 2.0, 3.0])
        );
        assert_accesses_agree(&e);
        assert_accesses_agree(&concat(inp("A"), inp("A")));

        let tr = eval(&transpose(inp("A")));
        assert_eq!(tr.shape, vec![3, 5]);
        for i in 0..5 {
            for j in 0..3 {
                assert_eq!(tr.get(&[j, i]), a_at(i as i64, j as i64));
            }
        }
        assert_eq!(
            eval(&get(transpose(inp("A")), c(1))),
            t(vec![5], (0..5).map(|i| a_at(i, 1)).collect())
        );
        assert_accesses_agree(&transpose(inp("A")));
        // Transposing a rank-3 tensor keeps the inner dimension in place.
        let e = transpose(amount(AmountOp::Split, c(2), inp("A")));
        let got = eval(&e);
        assert_eq!(got.shape, vec![2, 3, 3]);
        assert_eq!(got.get(&[1, 0, 2]), a_at(1, 2));
        assert_accesses_agree(&e);

        let fl = flatten(inp("A"));
        assert_eq!(eval(&fl).data, inputs()["A"].data);
        assert_eq!(eval(&fl).shape, vec![15]);
        assert_eq!(eval(&get(fl.clone(), c(7))), Tensor::scalar(a_at(2, 1)));
        assert_accesses_agree(&fl);
        assert_accesses_agree(&flatten(amount(AmountOp::Split, c(2), inp("A"))));
    }

    // ---- names --------------------------------------------------------------------------

    #[test]
    fn definitions_are_evaluated_and_referenced() {
        let mut p = program();
        let sq = gen_(
            "i",
            v("n"),
            bin(BinOp::Mul, get(inp("f"), v("i")), get(inp("f"), v("i"))),
        );
        p.defs.push(def("sq", sq));
        let twice = gen_(
            "i",
            v("n"),
            bin(
                BinOp::Add,
                get(def_ref("sq"), v("i")),
                get(def_ref("sq"), v("i")),
            ),
        );
        p.defs.push(def("twice", twice));
        let want = t(vec![5], vec![2.0, 8.0, 18.0, 32.0, 50.0]);
        let got = eval_def(&p, "twice", &sizes(5, 3), &inputs(), &seq()).unwrap();
        assert_eq!(got, want);
        // Expressions in program scope may reference any definition.
        let e = bin(BinOp::Sub, def_ref("twice"), def_ref("sq"));
        assert_eq!(
            eval_with(&p, &e, &sizes(5, 3), &inputs()),
            t(vec![5], vec![1.0, 4.0, 9.0, 16.0, 25.0])
        );
        // A definition may not refer to itself or a later one.
        p.defs.push(def("bad", def_ref("later")));
        p.defs.push(def("later", Expr::lit(1.0)));
        let err = eval_def(&p, "bad", &sizes(5, 3), &inputs(), &seq()).unwrap_err();
        assert_eq!(err.code, "E0506");
        assert!(
            err.message.contains("before it is defined"),
            "{}",
            err.message
        );
    }

    #[test]
    fn inner_binders_shadow_outer_ones() {
        // let x = f in let x = gen i < n: x[i] * 2 in x
        let e = Expr::let_(
            "x",
            inp("f"),
            Expr::let_(
                "x",
                gen_(
                    "i",
                    v("n"),
                    bin(BinOp::Mul, get(Expr::var("x"), v("i")), Expr::lit(2.0)),
                ),
                Expr::var("x"),
            ),
        );
        assert_eq!(eval(&e), t(vec![5], vec![2.0, 4.0, 6.0, 8.0, 10.0]));
        // gen i < 2: gen i < 3: f[i]
        let e = gen_("i", c(2), gen_("i", c(3), get(inp("f"), v("i"))));
        assert_eq!(eval(&e), t(vec![2, 3], vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]));
        // A let inside a gen sees the binder: gen i < 3: let y = gen j < 2: f[i + j] in y[1]
        let e = gen_(
            "i",
            c(3),
            Expr::let_(
                "y",
                gen_("j", c(2), get(inp("f"), I::add(v("i"), v("j")))),
                get(Expr::var("y"), c(1)),
            ),
        );
        assert_eq!(eval(&e), t(vec![3], vec![2.0, 3.0, 4.0]));
    }

    #[test]
    fn loop_invariant_let_values_are_cached_and_correct() {
        // gen i < n: let x = gen j < n: f[j] * 2 in x[n - 1 - i]   (x does not use i)
        let value = gen_(
            "j",
            v("n"),
            bin(BinOp::Mul, get(inp("f"), v("j")), Expr::lit(2.0)),
        );
        let e = gen_(
            "i",
            v("n"),
            Expr::let_(
                "x",
                value.clone(),
                get(Expr::var("x"), I::sub(I::sub(v("n"), c(1)), v("i"))),
            ),
        );
        assert_eq!(eval(&e), t(vec![5], vec![10.0, 8.0, 6.0, 4.0, 2.0]));
        let p = program();
        let sz = validate_sizes(&p, &sizes(5, 3)).unwrap();
        let mut comp = Compiler::new(&p, &sz, usize::MAX, 0);
        let node = comp.compile(&e).unwrap();
        let Kind::Gen { body, .. } = &node.kind else {
            panic!("expected a gen")
        };
        assert!(matches!(&body.kind, Kind::Let { cache: Some(_), .. }));
        // A value that uses the binder is not cached.
        let e = gen_(
            "i",
            v("n"),
            Expr::let_("x", get(inp("f"), v("i")), Expr::var("x")),
        );
        let node = comp.compile(&e).unwrap();
        let Kind::Gen { body, .. } = &node.kind else {
            panic!("expected a gen")
        };
        assert!(matches!(&body.kind, Kind::Let { cache: None, .. }));
        assert_eq!(eval(&e), inputs()["f"]);
    }

    #[test]
    fn the_pipeline_example_from_the_design() {
        // let buf = gen j < n: f[j] in gen i < n: [0 <= i - 1] * buf[i - 1] + buf[i]
        let buf = || Expr::var("buf");
        let e = Expr::let_(
            "buf",
            gen_("j", v("n"), get(inp("f"), v("j"))),
            gen_(
                "i",
                v("n"),
                bin(
                    BinOp::Add,
                    Expr::guard(
                        cmp(CmpOp::Le, c(0), I::sub(v("i"), c(1))),
                        get(buf(), I::sub(v("i"), c(1))),
                    ),
                    get(buf(), v("i")),
                ),
            ),
        );
        assert_eq!(eval(&e), t(vec![5], vec![1.0, 3.0, 5.0, 7.0, 9.0]));
        // Without the guard, buf[-1] is out of bounds and reads 0: the same result.
        let inline = gen_(
            "i",
            v("n"),
            bin(
                BinOp::Add,
                get(
                    gen_("j", v("n"), get(inp("f"), v("j"))),
                    I::sub(v("i"), c(1)),
                ),
                get(gen_("j", v("n"), get(inp("f"), v("j"))), v("i")),
            ),
        );
        assert_eq!(eval(&inline), eval(&e));
    }

    #[test]
    fn out_of_bounds_negation_reads_positive_zero() {
        let got = eval(&get(neg(inp("f")), c(7)));
        assert_eq!(got.data[0].to_bits(), 0.0f64.to_bits());
        let got = eval(&get(neg(inp("f")), c(1)));
        assert_eq!(got, Tensor::scalar(-2.0));
    }

    // ---- parallelism --------------------------------------------------------------------

    #[test]
    fn parallel_and_sequential_results_are_bit_identical() {
        let (n, m) = (128usize, 40usize);
        let p = program();
        let ins = inputs_at(n, m);
        let mut ins = ins;
        ins.insert("A".into(), Tensor::random(vec![n, m], 5));
        // gen i < n: gen j < n: sum k < m: A[i][k] * B[k][j]  (16384 outputs: parallel)
        let e = gen_(
            "i",
            v("n"),
            gen_(
                "j",
                v("n"),
                sum_(
                    "k",
                    v("m"),
                    bin(
                        BinOp::Mul,
                        get2(inp("A"), v("i"), v("k")),
                        get2(inp("B"), v("k"), v("j")),
                    ),
                ),
            ),
        );
        let sz = sizes(n as i64, m as i64);
        let par = eval_expr(&p, &e, &sz, &ins, &EvalOptions::default()).unwrap();
        let sq = eval_expr(&p, &e, &sz, &ins, &seq()).unwrap();
        let bits = |d: &[f64]| d.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&par.data), bits(&sq.data));
        let (a, b) = (&ins["A"].data, &ins["B"].data);
        let mut want = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let mut acc = 0.0;
                for k in 0..m {
                    acc += a[i * m + k] * b[k * n + j];
                }
                want.push(acc);
            }
        }
        assert_eq!(bits(&par.data), bits(&want));
    }

    #[test]
    fn blur_with_boundary_guards_matches_loops_in_parallel() {
        let (n, m) = (90usize, 70usize);
        let mut ins = inputs_at(n, m);
        ins.insert("A".into(), Tensor::random(vec![n, m], 11));
        let in_range_pred =
            |x: I, ext: &str| Pred::and(cmp(CmpOp::Le, c(0), x.clone()), cmp(CmpOp::Lt, x, v(ext)));
        // gen i < n: gen j < m: sum di < 3: sum dj < 3:
        //   [0 <= i+di-1 < n && 0 <= j+dj-1 < m] * A[i+di-1][j+dj-1] / 9
        let x = I::sub(I::add(v("i"), v("di")), c(1));
        let y = I::sub(I::add(v("j"), v("dj")), c(1));
        let body = Expr::guard(
            Pred::and(in_range_pred(x.clone(), "n"), in_range_pred(y.clone(), "m")),
            bin(BinOp::Div, get2(inp("A"), x, y), Expr::lit(9.0)),
        );
        let e = gen_(
            "i",
            v("n"),
            gen_("j", v("m"), sum_("di", c(3), sum_("dj", c(3), body))),
        );
        let sz = sizes(n as i64, m as i64);
        let par = eval_expr(&program(), &e, &sz, &ins, &EvalOptions::default()).unwrap();
        let sq = eval_expr(&program(), &e, &sz, &ins, &seq()).unwrap();
        let a = &ins["A"].data;
        let mut want = Vec::new();
        for i in 0..n as i64 {
            for j in 0..m as i64 {
                let mut outer = 0.0;
                for di in 0..3 {
                    let mut inner = 0.0;
                    for dj in 0..3 {
                        let (x, y) = (i + di - 1, j + dj - 1);
                        inner += if (0..n as i64).contains(&x) && (0..m as i64).contains(&y) {
                            a[x as usize * m + y as usize] / 9.0
                        } else {
                            0.0
                        };
                    }
                    outer += inner;
                }
                want.push(outer);
            }
        }
        let bits = |d: &[f64]| d.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&par.data), bits(&sq.data));
        assert_eq!(bits(&par.data), bits(&want));
    }

    #[test]
    fn parallel_errors_are_the_first_in_iteration_order() {
        // gen i < 8192: 1 / (f[i] - f[i]) fails at every i; the span is the division's.
        let mut p = program();
        p.inputs[0].shape = vec![c(8192)];
        let mut ins = inputs();
        ins.insert("f".into(), Tensor::random(vec![8192], 3));
        let div = with_span(
            bin(
                BinOp::Div,
                Expr::lit(1.0),
                bin(BinOp::Sub, get(inp("f"), v("i")), get(inp("f"), v("i"))),
            ),
            100,
            120,
        );
        let e = gen_("i", c(8192), div);
        let par = eval_expr(&p, &e, &sizes(5, 3), &ins, &EvalOptions::default()).unwrap_err();
        let sq = eval_expr(&p, &e, &sizes(5, 3), &ins, &seq()).unwrap_err();
        assert_eq!(par, sq);
        assert_eq!(par.code, "E0501");
    }

    // ---- errors -------------------------------------------------------------------------

    #[test]
    fn division_by_zero_points_at_the_division() {
        let e = with_span(
            bin(
                BinOp::Div,
                inp("s"),
                bin(BinOp::Sub, get(inp("f"), c(0)), Expr::lit(1.0)),
            ),
            30,
            45,
        );
        let d = eval_err(&e);
        assert_eq!(d.code, "E0501");
        assert_eq!(d.primary.map(|l| l.span), Some(Span::new(30, 45)));
        // A false guard skips the division.
        let e = Expr::guard(
            Pred::Bool(false),
            bin(BinOp::Div, Expr::lit(1.0), Expr::lit(0.0)),
        );
        assert_eq!(eval(&e), Tensor::scalar(0.0));
    }

    #[test]
    fn index_overflow_is_reported() {
        let e = with_span(get(inp("f"), I::add(c(i64::MAX), c(1))), 5, 9);
        let d = eval_err(&e);
        assert_eq!(d.code, "E0502");
        assert_eq!(d.primary.map(|l| l.span), Some(Span::new(5, 9)));
        let e = gen_("i", I::mul(v("n"), v("n")), Expr::lit(1.0));
        let err =
            eval_expr(&program(), &e, &sizes(i64::MAX / 2, 3), &inputs(), &seq()).unwrap_err();
        assert_eq!(err.code, "E0502");
    }

    #[test]
    fn too_large_tensors_are_refused_before_allocation() {
        let e = gen_("i", v("n"), gen_("j", v("n"), Expr::lit(1.0)));
        let err = eval_expr(
            &program(),
            &e,
            &sizes(1_000_000_000, 3),
            &inputs(),
            &EvalOptions::default(),
        )
        .unwrap_err();
        assert_eq!(err.code, "E0503");
        let small = EvalOptions {
            max_elements: 10,
            parallel: true,
            ..EvalOptions::default()
        };
        let e = gen_("i", c(4), gen_("j", c(3), Expr::lit(1.0)));
        let err = eval_expr(&program(), &e, &sizes(5, 3), &inputs(), &small).unwrap_err();
        assert_eq!(err.code, "E0503");
        // Input shapes are checked too, so a CLI can build inputs safely.
        let err =
            input_shapes(&program(), &sizes(1 << 40, 3), &EvalOptions::default()).unwrap_err();
        assert_eq!(err.code, "E0503");
        let shapes = input_shapes(&program(), &sizes(5, 3), &EvalOptions::default()).unwrap();
        assert_eq!(shapes["A"], vec![5, 3]);
        assert_eq!(shapes["s"], Vec::<usize>::new());
        // But the shape alone can be asked for.
        let shape = concrete_shape(&program(), &e, &sizes(5, 3)).unwrap();
        assert_eq!(shape, vec![4, 3]);
        let e = gen_("i", v("n"), gen_("j", v("n"), Expr::lit(1.0)));
        let shape = concrete_shape(&program(), &e, &sizes(1_000_000_000, 3)).unwrap();
        assert_eq!(shape, vec![1_000_000_000, 1_000_000_000]);
    }

    #[test]
    fn runaway_loops_are_refused_before_they_start() {
        // gen i < 8: sum j < 2^40: 1 (a split by 2^40 makes such sums): 2^43 iterations
        // counted with the gen around the sum, refused at once, also in parallel.
        let huge = gen_("i", c(8), sum_("j", c(1 << 40), Expr::lit(1.0)));
        for parallel in [false, true] {
            let options = EvalOptions {
                parallel,
                ..EvalOptions::default()
            };
            let err = eval_expr(&program(), &huge, &sizes(5, 3), &inputs(), &options).unwrap_err();
            assert_eq!(err.code, "E0509");
            assert!(
                err.message.contains("8796093022208 iterations"),
                "{}",
                err.message
            );
        }
        // The count is the product of the trip counts: 8 * 5 = 40 runs at a limit of
        // 40 and is refused at 39; a max-reduction counts the same way.
        let limit = |max_iterations| EvalOptions {
            max_iterations,
            parallel: false,
            ..EvalOptions::default()
        };
        let sum = gen_("i", c(8), sum_("j", c(5), Expr::lit(1.0)));
        let max = gen_("i", c(8), Expr::max_red("j", c(0), c(5), Expr::lit(1.0)));
        for e in [&sum, &max] {
            let ok = eval_expr(&program(), e, &sizes(5, 3), &inputs(), &limit(40)).unwrap();
            assert_eq!(ok.data.len(), 8);
            let err = eval_expr(&program(), e, &sizes(5, 3), &inputs(), &limit(39)).unwrap_err();
            assert_eq!(err.code, "E0509");
        }
        // A loop-invariant `let` value is computed once: its 5 * 5 iterations are not
        // multiplied by the 8 of the gen it sits in (8 + 25 + 8 * 1 reads).
        let value = gen_("k", c(5), sum_("l", c(5), Expr::lit(1.0)));
        let e = gen_("i", c(8), Expr::let_("x", value, get(Expr::var("x"), c(0))));
        let r = eval_expr(&program(), &e, &sizes(5, 3), &inputs(), &limit(25)).unwrap();
        assert_eq!(r.data, vec![5.0; 8]);
        // An empty or negative range costs nothing.
        let e = gen_("i", c(8), sum_("j", I::sub(c(0), c(5)), Expr::lit(1.0)));
        let r = eval_expr(&program(), &e, &sizes(5, 3), &inputs(), &limit(8)).unwrap();
        assert_eq!(r.data, vec![0.0; 8]);
    }

    #[test]
    fn invalid_reshape_amounts_are_errors() {
        for (op, k) in [
            (AmountOp::TruncR, 6),
            (AmountOp::TruncL, 6),
            (AmountOp::Split, 0),
            (AmountOp::Split, -2),
            (AmountOp::PadL, -1),
            (AmountOp::PadR, -1),
            (AmountOp::TruncL, -1),
        ] {
            let e = with_span(amount(op, c(k), inp("f")), 3, 8);
            let d = eval_err(&e);
            assert_eq!(d.code, "E0504", "{op:?} {k}");
            assert_eq!(d.primary.map(|l| l.span), Some(Span::new(3, 8)));
        }
    }

    #[test]
    fn ill_shaped_programs_are_errors_not_panics() {
        let cases = [
            bin(BinOp::Add, inp("f"), get(inp("A"), c(0))),
            get2(inp("f"), c(0), c(1)),
            bin(BinOp::Mul, inp("f"), inp("f")),
            transpose(inp("f")),
            flatten(inp("s")),
            concat(inp("f"), inp("A")),
            amount(AmountOp::Split, c(2), inp("s")),
            // Jagged: gen i < 3: gen j in 0..i+1: 1
            gen_("i", c(3), gen_("j", I::add(v("i"), c(1)), Expr::lit(1.0))),
            // Jagged with an empty representative row: gen i < 3: gen j < i: 1
            gen_("i", c(3), gen_("j", v("i"), Expr::lit(1.0))),
            // Jagged through an amount: gen i < 3: pad_r(i, f)
            gen_("i", c(3), amount(AmountOp::PadR, v("i"), inp("f"))),
        ];
        for e in cases {
            assert_eq!(eval_err(&e).code, "E0505", "{e:?}");
        }
    }

    /// The comparison with the static shape reports a difference (E0507) and a negative
    /// extent (E0508); the interpreter and shape inference agree on every program the
    /// other tests evaluate, so the difference is fed in directly here.
    #[test]
    fn static_shape_differences_are_reported() {
        let p = program();
        let size_env = validate_sizes(&p, &sizes(5, 3)).expect("sizes");
        let compiler = Compiler::new(&p, &size_env, usize::MAX, 0);
        let e = with_span(inp("A"), 3, 8);
        let stat = vec![v("n"), v("m")];
        assert!(compiler.check_static(&e, &stat, &[5, 3]).is_ok());
        for wrong in [vec![5, 4], vec![5], vec![5, 3, 1], vec![3, 5]] {
            let d = compiler
                .check_static(&e, &stat, &wrong)
                .expect_err("differs");
            assert_eq!(d.code, "E0507", "{wrong:?}");
            assert_eq!(d.primary.map(|l| l.span), Some(Span::new(3, 8)));
        }
        let negative = vec![I::sub(v("m"), v("n"))];
        let d = compiler
            .check_static(&e, &negative, &[0])
            .expect_err("negative");
        assert_eq!(d.code, "E0508");
        assert!(d.message.contains("-2"), "{}", d.message);
        // The static shape of every node is computed: a node whose concrete shape
        // came out of the clamp is caught (gen i in 4..2 at any sizes).
        let e = gen_("i", c(0), Expr::lit(1.0));
        assert_eq!(eval(&e).shape, vec![0]);
        let backwards = Expr::gen_("i", c(4), c(2), Expr::lit(1.0));
        assert_eq!(eval_err(&backwards).code, "E0508");
    }

    #[test]
    fn unbound_names_are_errors() {
        let cases = [
            get(inp("f"), v("nope")),
            Expr::var("x"),
            inp("g"),
            def_ref("nothing"),
            Expr::synth(ExprKind::Meta("e".into())),
            get(inp("f"), I::Meta("k".into())),
        ];
        for e in cases {
            assert_eq!(eval_err(&e).code, "E0506", "{e:?}");
        }
    }

    #[test]
    fn sizes_and_assumptions_are_validated() {
        let e = Expr::lit(1.0);
        let mut only_n = BTreeMap::new();
        only_n.insert("n".to_string(), 5);
        let d = eval_expr(&program(), &e, &only_n, &inputs(), &seq()).unwrap_err();
        assert_eq!(d.code, "E0601");
        assert!(d.message.contains("`m`"), "{}", d.message);
        assert!(d.help.unwrap_or_default().contains("--sizes"));
        let d = eval_expr(&program(), &e, &sizes(0, 3), &inputs(), &seq()).unwrap_err();
        assert_eq!(d.code, "E0602");
        let mut p = program();
        p.assumes.push(Assume {
            pred: cmp(CmpOp::Ge, v("n"), c(10)),
            span: Span::new(100, 115),
        });
        let d = eval_expr(&p, &e, &sizes(5, 3), &inputs(), &seq()).unwrap_err();
        assert_eq!(d.code, "E0603");
        assert_eq!(d.primary.map(|l| l.span), Some(Span::new(100, 115)));
        assert!(d.message.contains("n = 5"), "{}", d.message);
        assert!(eval_expr(&p, &e, &sizes(10, 3), &inputs(), &seq()).is_ok());
        assert_eq!(check_sizes(&p, &sizes(5, 3)).unwrap_err().code, "E0603");
        assert!(concrete_shape(&p, &e, &sizes(5, 3)).is_err());
    }

    #[test]
    fn inputs_are_validated() {
        let mut ins = inputs();
        ins.remove("A");
        // Inputs that are not referenced need no value.
        assert!(eval_expr(&program(), &inp("f"), &sizes(5, 3), &ins, &seq()).is_ok());
        let d = eval_expr(&program(), &inp("A"), &sizes(5, 3), &ins, &seq()).unwrap_err();
        assert_eq!(d.code, "E0604");
        ins.insert("A".into(), Tensor::zeros(vec![3, 5]));
        let d = eval_expr(&program(), &inp("A"), &sizes(5, 3), &ins, &seq()).unwrap_err();
        assert_eq!(d.code, "E0605");
        assert!(
            d.message.contains("[3, 5]") && d.message.contains("[5, 3]"),
            "{}",
            d.message
        );
        ins.insert(
            "A".into(),
            Tensor {
                shape: vec![5, 3],
                data: vec![0.0; 4],
            },
        );
        let d = eval_expr(&program(), &inp("A"), &sizes(5, 3), &ins, &seq()).unwrap_err();
        assert_eq!(d.code, "E0605");
    }

    #[test]
    fn unknown_definitions_are_reported() {
        let mut p = program();
        p.defs.push(def("main", Expr::lit(1.0)));
        let d = eval_def(&p, "mian", &sizes(5, 3), &inputs(), &seq()).unwrap_err();
        assert_eq!(d.code, "E0606");
        assert!(d.help.unwrap_or_default().contains("main"));
        assert_eq!(
            eval_def(&p, "main", &sizes(5, 3), &inputs(), &seq()).unwrap(),
            Tensor::scalar(1.0)
        );
    }

    // ---- tensors ------------------------------------------------------------------------

    #[test]
    fn random_tensors_are_deterministic_and_in_range() {
        let a = Tensor::random(vec![10, 100], 42);
        assert_eq!(a, Tensor::random(vec![10, 100], 42));
        assert_ne!(a, Tensor::random(vec![10, 100], 43));
        assert_eq!(a.data.len(), 1000);
        assert!(a.data.iter().all(|x| (-1.0..1.0).contains(x)));
        assert!(a.data.iter().any(|&x| x < -0.5) && a.data.iter().any(|&x| x > 0.5));
        // The first splitmix64 output for seed 0 is 0xE220A8397B1DCDAF.
        let first = (0xE220_A839_7B1D_CDAFu64 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        assert_eq!(Tensor::random(vec![], 0).data, vec![first]);
        // Row-major filling: a prefix of the stream does not depend on the shape.
        assert_eq!(
            Tensor::random(vec![3], 7).data,
            Tensor::random(vec![2, 2], 7).data[..3]
        );
    }

    #[test]
    fn linear_index_expressions_are_collected() {
        let p = program();
        let sz = validate_sizes(&p, &sizes(5, 3)).unwrap();
        let mut comp = Compiler::new(&p, &sz, usize::MAX, 0);
        comp.idx_names = vec!["i", "j"];
        comp.idx_rep = vec![0, 0];
        let compile = |e: I| comp.index(&e, Span::DUMMY).unwrap();
        // (i + n) * 2 - (j - 1) - i  =  i - j + 11  (n = 5)
        let e = I::sub(
            I::sub(I::mul(I::add(v("i"), v("n")), c(2)), I::sub(v("j"), c(1))),
            v("i"),
        );
        assert_eq!(
            compile(e),
            CIdx::Affine(11, vec![(0, 1), (1, -1)].into_boxed_slice())
        );
        assert_eq!(
            compile(I::mul(c(3), v("j"))),
            CIdx::Affine(0, vec![(1, 3)].into())
        );
        assert_eq!(
            compile(I::sub(I::add(v("j"), v("i")), v("i"))),
            CIdx::Slot(1)
        );
        assert_eq!(compile(I::mul(v("m"), v("n"))), CIdx::Const(15));
        // Non-linear parts stay trees over linear leaves; their values are unchanged.
        let e = compile(ibin(IndexOp::Div, I::sub(v("i"), c(3)), c(2)));
        assert!(matches!(e, CIdx::Bin(IndexOp::Div, _, _)), "{e:?}");
        assert_eq!(e.eval(&[0, 0], &[]), Some(-2));
        assert!(matches!(
            compile(I::mul(v("i"), v("j"))),
            CIdx::Bin(IndexOp::Mul, _, _)
        ));
        // Folding that would overflow is left for evaluation to report.
        assert_eq!(compile(I::Neg(Box::new(c(i64::MIN)))).eval(&[], &[]), None);
        assert_eq!(
            compile(I::mul(v("i"), c(i64::MAX))).eval(&[2, 0], &[]),
            None
        );
    }

    #[test]
    fn tensor_helpers() {
        let a = t(vec![2, 3], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(a.get(&[1, 2]), 5.0);
        assert_eq!(a.try_get(&[2, 0]), None);
        assert_eq!(a.get(&[2, 0]), 0.0);
        assert_eq!(a.try_get(&[1]), None);
        assert!(Tensor::new(vec![2, 2], vec![1.0]).is_none());
        assert_eq!(Tensor::zeros(vec![2, 0]).data.len(), 0);
        assert_eq!(Tensor::scalar(3.0).get(&[]), 3.0);
        assert_eq!(shape_numel(&[0, usize::MAX, 2]), Some(0));
        assert_eq!(shape_numel(&[usize::MAX, 2]), None);
    }
}
