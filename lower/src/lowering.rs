//! Destination-passing lowering (thesis Figures 4.1 and 4.4) of a normalized
//! expression to the loop IR.
//!
//! `stmt(e, dest, mode, θ)` emits code that writes the value of `e` into `dest` through
//! the reindexer θ, either assigning (`=`) or accumulating (`+=`):
//!
//! - `gen i in lo..hi: e` — a `for` loop; θ gains the coordinate `(i - lo, hi - lo)`.
//! - `sum i in lo..hi: e` — a `for` loop lowering `e` in accumulate mode. In assign
//!   mode the destination region is first set to zero (a scalar sum uses a scalar
//!   accumulator instead, then one assignment).
//! - `[p] * e` — `if (p)`; in assign mode the `else` branch writes zeros, so that
//!   assign mode always writes *every* element of the destination region. That is
//!   the invariant that lets the kernel write all of `out` itself, and lets `let`
//!   buffers skip zero-initialization.
//! - `let x = e₁ in e₂` — a scoped allocation (or a scalar temporary) written by
//!   `e₁` with the identity reindexer, then `e₂`.
//! - `concat(a, b)` — `a` through `θ ∘ pad_r |b|`, then `b` through `θ ∘ pad_l |a|`.
//! - reshape operators — `θ ∘ θ_op` (see [`crate::reindex`]); in assign mode `pad_l`,
//!   `pad_r` and the tail of `split` also write their zero elements.
//! - a scalar — evaluated (reads of inputs and buffers are bounds-checked unless the
//!   check is proved redundant) and stored at `flatten_index(θ [])`, under the
//!   truncation guards θ produced.
//!
//! Guards, bounds checks and truncation guards that the solver proves true are
//! dropped; ones it proves false remove the code they protect.

use std::collections::{BTreeSet, HashMap, HashSet};

use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::{AmountOp, Expr, ExprKind, LoopHint, NameSupply, Program, all_names};
use atl_lang::poly::normalize;
use atl_lang::reshape;
use atl_lang::shapes::{Shape, ShapeEnv};

use crate::ir::{
    BufferDecl, Cond, Coord, For, Ix, IxOp, Kernel, Load, LoopOrigin, Precondition,
    PreconditionKind, Stmt, Storage, StoreOp, Val,
};
use crate::load_guards::nested_loads;
use crate::normalize::{internal, is_leaf_chain, normalize_def, used_defs};
use crate::prove::{Prover, Residual, negate};
use crate::reindex::{ReindexOp, Reindexer, ZeroFill, flatten_index};

/// Where a value goes.
#[derive(Clone, Debug, PartialEq)]
enum Dest {
    Buf(String),
    Scalar(String),
}

/// How lowering configures itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowerOptions {
    /// Simplify flat indices that contain division or modulo with the solver's rewrite
    /// rules (so that `split`/`flatten` index algebra collapses).
    pub simplify_indices: bool,
    /// Give every scalar `sum` reached while accumulating into an outer one its own
    /// accumulator (`t = 0; for j: t += …; dest += t`), so that the kernel adds in the
    /// grouping the definition (and the interpreter) uses. Off, the terms of nested
    /// sums are added into one accumulator, which is equal over the reals but may
    /// round differently. On under `--fp strict`, where kernels of `exact` derivations
    /// are then bit-identical to the interpreter in `f64`.
    pub group_sums_as_written: bool,
}

impl Default for LowerOptions {
    fn default() -> LowerOptions {
        LowerOptions {
            simplify_indices: true,
            group_sums_as_written: false,
        }
    }
}

/// What a name in scope is.
#[derive(Clone, Debug)]
enum Binding {
    /// A buffer with its (clamped) extents.
    Buffer(Vec<IndexExpr>),
    /// A scalar temporary.
    Scalar,
}

pub(crate) struct Lowerer<'a, 'p> {
    shapes: &'a ShapeEnv,
    prover: Prover<'p>,
    options: LowerOptions,
    lets: Vec<(String, Shape)>,
    scope: HashMap<String, Vec<Binding>>,
    supply: NameSupply,
    preconditions: Vec<Precondition>,
    /// The local tiles of the sums being lowered ([`Lowerer::sum_into_buffer`]).
    tiles: BTreeSet<String>,
    /// Of each such tile, the elements its copy reads: a condition on placeholder
    /// names of its coordinates (the guards of the truncations the copy stores
    /// through); absent where it reads every element.
    tile_reads: HashMap<String, (Vec<String>, Pred)>,
    /// While the value of a tile element is lowered, the condition under which the
    /// copy reads that element ([`Lowerer::tile_reads`] at its coordinates).
    element_read: Option<Pred>,
    /// How many sums being lowered accumulate in place into memory (not a tile).
    sums_into_memory: usize,
    /// The length of each index array read (its one extent), to check the reads of
    /// it nested in an access's coordinates ([`Lowerer::load`]).
    index_array_lengths: HashMap<String, IndexExpr>,
    /// The storage order of each input declared with a `layout` (its buffer's
    /// dimensions are the program's in this order, [`BufferDecl::order`]).
    storage_orders: HashMap<String, Vec<usize>>,
    /// The index-array reads a coordinate is being lowered under the assumption that
    /// they are inside their arrays (the first case of [`Lowerer::load`]'s split).
    reads_assumed_inside: Vec<IndexExpr>,
}

/// Lowers definition `def` to a kernel writing into a buffer named `out` (or a fresh
/// variant of it, should an input be called `out`).
pub(crate) fn lower(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    solver: &atl_solver::Solver,
    options: LowerOptions,
) -> Result<Kernel, Diagnostic> {
    let mut names: Vec<String> = program.sizes.iter().map(|s| s.name.clone()).collect();
    names.extend(program.inputs.iter().map(|i| i.name.clone()));
    // The definition's name is the kernel's default C symbol, which has a companion:
    // the names lowering makes up (the accumulators' copy loops `t`, `t1`, …) must not
    // hide them in C (the validator refuses that, `atl_validate::names`).
    names.extend(program.defs.iter().flat_map(|d| {
        [
            d.name.clone(),
            atl_loopir::cnames::set_threads_symbol(&d.name),
        ]
    }));
    let mut supply = NameSupply::new(names.iter().cloned());
    let out = supply.fresh("out");
    let prover = Prover::new(program, solver);
    let hints = loop_hints(program, def)?;
    let (expr, shape) = normalize_def(program, shapes, def, &prover, std::slice::from_ref(&out))?;
    for n in all_names(&expr) {
        supply.reserve(&n);
    }
    let mut l = Lowerer {
        shapes,
        prover,
        options,
        lets: Vec::new(),
        scope: HashMap::new(),
        supply,
        preconditions: Vec::new(),
        tiles: BTreeSet::new(),
        tile_reads: HashMap::new(),
        element_read: None,
        sums_into_memory: 0,
        index_array_lengths: HashMap::new(),
        storage_orders: HashMap::new(),
        reads_assumed_inside: Vec::new(),
    };
    // The kernel's inputs are those the definition reads (after inlining the
    // definitions it uses), in declaration order: an input the file declares for
    // another definition is no parameter, so adding one changes no other kernel.
    let mut read = HashSet::new();
    expr.walk(&mut |e| {
        if let ExprKind::Input(name) = &e.kind {
            read.insert(name.clone());
        }
    });
    // Index arrays are read by loads in index expressions.
    read.extend(expr.loaded_arrays());
    // Likewise its sizes: those the definition, the output's and the inputs' shapes
    // and the index arrays' declared ranges mention, and those an `assume` relates
    // to them (a storage of a sparse matrix that the definition does not read
    // brings sizes no caller of this kernel has).
    let sizes = used_sizes(program, &read, &expr, &shape);
    l.size_preconditions(program, &sizes);
    let mut inputs = Vec::new();
    for input in program.inputs.iter().filter(|i| read.contains(&i.name)) {
        let dims: Vec<IndexExpr> = input.shape.iter().map(normalize).collect();
        for d in &dims {
            let nonneg = Pred::cmp(CmpOp::Ge, d.clone(), IndexExpr::Const(0));
            if !l.prover.proves_globally(&nonneg) {
                l.precondition(
                    nonneg,
                    PreconditionKind::InputExtent,
                    format!("input `{}` has the non-negative extent {d}", input.name),
                );
            }
        }
        // An index array is read by `Ix::Load` only, never as a tensor: it gets no
        // binding.
        if input.index_array.is_none() {
            l.bind(&input.name, Binding::Buffer(dims.clone()));
        } else if let [len] = dims.as_slice() {
            l.index_array_lengths
                .insert(input.name.clone(), len.clone());
        }
        let order = input.layout.as_ref().map(|l| l.order.clone());
        let shape = match &order {
            None => dims,
            Some(order) => {
                l.storage_orders.insert(input.name.clone(), order.clone());
                order.iter().map(|&d| dims[d].clone()).collect()
            }
        };
        inputs.push(BufferDecl {
            name: input.name.clone(),
            shape,
            index_array: input.index_array.clone(),
            checked_where_read: false,
            order,
        });
    }
    let out_shape: Vec<IndexExpr> = shape.iter().map(|d| l.prover.clamp(d)).collect();
    let dest = Dest::Buf(out.clone());
    let body = if accumulating_root(&expr, &mut l)? {
        let len = l.ix(&product(&out_shape));
        let mut body = vec![Stmt::Fill {
            buf: out.clone(),
            len,
            value: 0.0,
        }];
        body.extend(l.stmt(&expr, &dest, StoreOp::Accumulate, &Reindexer::identity())?);
        body
    } else {
        l.stmt(&expr, &dest, StoreOp::Assign, &Reindexer::identity())?
    };
    let mut body = body;
    crate::annotate::annotate(&mut body);
    crate::annotate::apply_hints(&mut body, &hints)?;
    // Stages stored apart from their computation slide their windows (after the
    // annotations: the loop a window slides along loses an automatic `parallel`).
    let storage = program
        .def(def)
        .map(|d| d.storage.clone())
        .unwrap_or_default();
    if !storage.is_empty() {
        let mut names = std::mem::replace(&mut l.supply, NameSupply::new(Vec::new()));
        let slid = {
            let ix = |e: &IndexExpr| l.ix(e);
            let clamp = |e: &IndexExpr| l.prover.clamp(e);
            let mut target = crate::sliding::Target {
                ix: &ix,
                clamp: &clamp,
                names: &mut names,
            };
            crate::sliding::slide_windows(&mut body, &storage, &hints, &mut target)
        };
        l.supply = names;
        slid?;
    }
    // A loop whose body is a guard on its own variable stops at the guard's limit
    // (after the annotations, which an unrolled loop's constant trip count decides:
    // such a loop keeps its guard).
    crate::tail_bounds::bound_guarded_loops(&mut body);
    // A partitioned parallel loop's parts share one region (after the annotations,
    // which decide the parallel loops; before placement, which hoists temporaries
    // around them).
    crate::merge_parallel::merge_parallel_loops(&mut body, &mut l.prover);
    let mut kernel = Kernel {
        name: def.to_string(),
        sizes,
        inputs,
        output: BufferDecl {
            name: out,
            shape: out_shape,
            index_array: None,
            order: None,
            checked_where_read: false,
        },
        preconditions: l.preconditions,
        vector_width: program.def(def).and_then(|d| d.vector_width),
        body,
        source: expr,
    };
    // Where each temporary lives: on the stack, or on the heap, allocated once around
    // the loops it sits in (after the annotations, which decide the parallel loops).
    crate::placement::place(&mut kernel);
    // Which parallel loops share their iterations with their inner loop (after
    // placement: a loop declaring hoisted buffers opens a region of its own).
    crate::annotate::collapse(&mut kernel.body);
    // Index arrays checked where they are read instead of on entry (after the
    // annotations: none in a vector loop).
    crate::checks_at_use::check_where_read(&mut kernel);
    // Sizes for which some index expression (entry checks included) could overflow
    // `int64_t` are refused on entry, right after the sizes' `>= 1`.
    let bounds = crate::overflow::size_bounds(&kernel)?;
    let at = kernel
        .preconditions
        .iter()
        .take_while(|p| p.kind == PreconditionKind::Size)
        .count();
    for (k, (size, bound)) in bounds.into_iter().enumerate() {
        let pred = Pred::cmp(
            CmpOp::Le,
            IndexExpr::var(size.clone()),
            IndexExpr::Const(bound),
        );
        kernel.preconditions.insert(
            at + k,
            Precondition {
                pred,
                cond: Cond::Cmp(CmpOp::Le, Ix::Var(size.clone()), Ix::Const(bound)),
                kind: PreconditionKind::IndexRange,
                reason: format!(
                    "size `{size}` is at most {bound}, so that index arithmetic stays within \
                     64 bits"
                ),
            },
        );
    }
    Ok(kernel)
}

/// The loop hints of definition `def`. They name loops by binder, and binder names
/// survive lowering as loop variables, except that a definition's body is lowered
/// with the definitions it uses and a binder they share is renamed in one of them: a
/// hint naming such a binder would be ambiguous, so it is refused.
fn loop_hints(program: &Program, def: &str) -> Result<Vec<LoopHint>, Diagnostic> {
    let Some(d) = program.def(def) else {
        return Ok(Vec::new());
    };
    for used in used_defs(program, &d.body) {
        let Some(u) = program.def(&used) else {
            continue;
        };
        let names = all_names(&u.body);
        if let Some(h) = d.hints.iter().find(|h| names.contains(&h.var)) {
            return Err(Diagnostic::error(
                "E0913",
                format!("the loop name `{}` is also a binder of `{used}`, which `{def}` uses", h.var),
            )
            .at(h.span, format!("`{} {}`", h.kind.directive(), h.var))
            .with_note("lowering renames one of the two loops, so the hint would be ambiguous")
            .with_help(format!("`unfold {used}` in the derivation, or rename the loop (`split` or `fuse` name new loops)")));
        }
    }
    Ok(d.hints.clone())
}

/// Whether the value of `e` is best computed by zeroing its buffer and accumulating
/// (a tensor-valued `sum`, possibly under `let`s).
fn accumulating_root(e: &Expr, l: &mut Lowerer<'_, '_>) -> Result<bool, Diagnostic> {
    match &e.kind {
        ExprKind::Sum { .. } => Ok(!l.shape(e)?.is_empty()),
        ExprKind::Let { var, value, body } => {
            let vs = l.shape(value)?;
            l.lets.push((var.clone(), vs));
            let r = accumulating_root(body, l);
            l.lets.pop();
            r
        }
        _ => Ok(false),
    }
}

/// Whether a store or assignment of `stmts` selects (`c ? v : 0` with `v` evaluated
/// only where `c` holds; a blend does not count).
fn selects(stmts: &[Stmt]) -> bool {
    let mut found = false;
    for s in stmts {
        s.walk(&mut |st| {
            if let Stmt::Store { value, .. } | Stmt::SetScalar { value, .. } = st {
                value.visit(&mut |n| found |= matches!(n, Val::Select(..)));
            }
        });
    }
    found
}

/// The access chain `e` (`t[i][j]…`) with `f` applied to each of its indices.
fn map_access_indices(e: &Expr, f: &mut dyn FnMut(&IndexExpr) -> IndexExpr) -> Expr {
    match &e.kind {
        ExprKind::Access { tensor, index } => Expr::new(
            ExprKind::Access {
                tensor: Box::new(map_access_indices(tensor, f)),
                index: f(index),
            },
            e.span,
        ),
        _ => e.clone(),
    }
}

/// Whether a value has a conditional part (a select or a blend).
fn has_select(v: &Val) -> bool {
    let mut found = false;
    v.visit(&mut |n| found |= matches!(n, Val::Select(..) | Val::Blend(..)));
    found
}

/// Whether a scalar expression can be evaluated without statements (no `sum`/`max`/`let`).
fn is_pure(e: &Expr) -> bool {
    let mut pure = true;
    e.walk(&mut |n| {
        pure &= !matches!(
            n.kind,
            ExprKind::Sum { .. } | ExprKind::MaxRed { .. } | ExprKind::Let { .. }
        )
    });
    pure
}

/// Whether an expression contains a guard.
fn has_guard(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |n| found |= matches!(n.kind, ExprKind::Guard { .. }));
    found
}

/// Tensor-valued sums with at most this many elements accumulate into a local tile
/// (see `sum_into_buffer`): small enough to live on the stack (and, for a register
/// tile, in registers).
const TILE_LIMIT: i64 = 1024;

/// The element count of `shape` when every extent is a constant and the count is
/// at most [`TILE_LIMIT`].
/// A conjunct of `pred` that bounds `var` from above with coefficient 1
/// (`var + r < e`, `var + r <= e`, or the same written the other way round), as the
/// exclusive bound `e - r` (which does not mention `var`), and the other conjuncts.
fn upper_bound_of(pred: &Pred, var: &str) -> Option<(IndexExpr, Option<Pred>)> {
    fn conjuncts(p: &Pred, out: &mut Vec<Pred>) {
        match p {
            Pred::And(a, b) => {
                conjuncts(a, out);
                conjuncts(b, out);
            }
            _ => out.push(p.clone()),
        }
    }
    let mut all = Vec::new();
    conjuncts(pred, &mut all);
    let position = all.iter().position(|c| bound_of(c, var).is_some())?;
    let bound = bound_of(&all[position], var)?;
    all.remove(position);
    Some((bound, all.into_iter().reduce(Pred::and)))
}

/// The exclusive upper bound on `var` a comparison states, if it is one.
fn bound_of(c: &Pred, var: &str) -> Option<IndexExpr> {
    let Pred::Cmp(op, a, b) = c else {
        return None;
    };
    // `a < b`, `a <= b` (or `b > a`, `b >= a`) with `a - b` = var + (no var).
    let (small, large, strict) = match op {
        CmpOp::Lt => (a, b, true),
        CmpOp::Le => (a, b, false),
        CmpOp::Gt => (b, a, true),
        CmpOp::Ge => (b, a, false),
        _ => return None,
    };
    let v = IndexExpr::var(var);
    let difference = normalize(&IndexExpr::sub(small.clone(), large.clone()));
    let rest = normalize(&IndexExpr::sub(difference.clone(), v.clone()));
    if rest.mentions(var) || !difference.mentions(var) {
        return None;
    }
    // var + rest < 0  ⇔  var < -rest;  var + rest <= 0  ⇔  var < 1 - rest.
    let bound = if strict {
        IndexExpr::sub(IndexExpr::Const(0), rest)
    } else {
        IndexExpr::sub(IndexExpr::Const(1), rest)
    };
    Some(normalize(&bound))
}

fn small_constant_len(shape: &[IndexExpr], prover: &Prover<'_>) -> Option<i64> {
    let mut len: i64 = 1;
    for d in shape {
        match prover.clamp(d) {
            IndexExpr::Const(c) if c >= 0 => len = len.checked_mul(c)?,
            _ => return None,
        }
    }
    (len <= TILE_LIMIT).then_some(len)
}

fn product(dims: &[IndexExpr]) -> IndexExpr {
    normalize(
        &dims
            .iter()
            .cloned()
            .reduce(IndexExpr::mul)
            .unwrap_or(IndexExpr::Const(1)),
    )
}

impl Lowerer<'_, '_> {
    fn shape(&mut self, e: &Expr) -> Result<Shape, Diagnostic> {
        crate::shape::cshape(e, self.shapes, &mut self.lets, &self.prover)
    }

    fn bind(&mut self, name: &str, b: Binding) {
        self.scope.entry(name.to_string()).or_default().push(b);
    }

    fn unbind(&mut self, name: &str) {
        if let Some(v) = self.scope.get_mut(name) {
            v.pop();
        }
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scope.get(name).and_then(|v| v.last())
    }

    fn fresh(&mut self, base: &str) -> String {
        self.supply.fresh(base)
    }

    fn precondition(&mut self, pred: Pred, kind: PreconditionKind, reason: String) {
        if self.preconditions.iter().any(|p| p.pred == pred) {
            return;
        }
        // Checked on entry, outside every loop and guard: convert without the context.
        let context = self.prover.take_context();
        let cond = self.cond(&pred);
        self.prover.restore_context(context);
        self.preconditions.push(Precondition {
            pred,
            cond,
            kind,
            reason,
        });
    }

    fn size_preconditions(&mut self, program: &Program, sizes: &[String]) {
        for s in program.sizes.iter().filter(|s| sizes.contains(&s.name)) {
            self.precondition(
                Pred::cmp(
                    CmpOp::Ge,
                    IndexExpr::var(s.name.clone()),
                    IndexExpr::Const(1),
                ),
                PreconditionKind::Size,
                format!("size `{}` is at least 1", s.name),
            );
        }
        for a in program
            .assumes
            .iter()
            .filter(|a| a.pred.vars().iter().any(|v| sizes.contains(v)))
        {
            self.precondition(
                a.pred.clone(),
                PreconditionKind::Assume,
                format!("assume {}", a.pred),
            );
        }
    }

    // ---- index conversion ------------------------------------------------------

    /// An index expression in target arithmetic, simplified under the current facts.
    fn ix(&self, e: &IndexExpr) -> Ix {
        let e = if self.options.simplify_indices {
            self.prover.simplify(e)
        } else {
            normalize(e)
        };
        self.convert(&e)
    }

    fn convert(&self, e: &IndexExpr) -> Ix {
        match e {
            IndexExpr::Const(c) => Ix::Const(*c),
            IndexExpr::Var(v) | IndexExpr::Meta(v) => Ix::Var(v.clone()),
            IndexExpr::Load(array, a) => Ix::Load(array.clone(), Box::new(self.convert(a))),
            IndexExpr::Neg(a) => Ix::Neg(Box::new(self.convert(a))),
            IndexExpr::Bin(op, a, b) => {
                let (ca, cb) = (self.convert(a), self.convert(b));
                // C's `/` and `%` truncate; they agree with floor division when the
                // numerator is non-negative and the divisor positive.
                let natural = || {
                    let positive = match b.as_const() {
                        Some(c) => c > 0,
                        None => self.prover.proves(&Pred::cmp(
                            CmpOp::Ge,
                            (**b).clone(),
                            IndexExpr::Const(1),
                        )),
                    };
                    positive
                        && self.prover.proves(&Pred::cmp(
                            CmpOp::Ge,
                            (**a).clone(),
                            IndexExpr::Const(0),
                        ))
                };
                let op = match op {
                    IndexOp::Add => IxOp::Add,
                    IndexOp::Sub => IxOp::Sub,
                    IndexOp::Mul => IxOp::Mul,
                    IndexOp::Div if natural() => IxOp::DivNat,
                    IndexOp::Div => IxOp::FloorDiv,
                    IndexOp::Mod if natural() => IxOp::ModNat,
                    IndexOp::Mod => IxOp::FloorMod,
                    IndexOp::CDiv if natural() && b.as_const().is_some() => {
                        // cdiv(a, c) = (a + c - 1) / c for a >= 0, c > 0.
                        let c = b.as_const().unwrap_or(1);
                        return Ix::bin(
                            IxOp::DivNat,
                            self.convert(&normalize(&IndexExpr::add(
                                (**a).clone(),
                                IndexExpr::Const(c - 1),
                            ))),
                            cb,
                        );
                    }
                    IndexOp::CDiv => IxOp::CeilDiv,
                    IndexOp::Min => IxOp::Min,
                    IndexOp::Max => IxOp::Max,
                };
                Ix::bin(op, ca, cb)
            }
        }
    }

    /// The condition the kernel evaluates for `p`: its reads of index arrays at
    /// indices not proved inside are split into the cases inside and outside
    /// ([`crate::load_guards`]), so that none reads past its array.
    fn cond(&self, p: &Pred) -> Cond {
        let p = crate::load_guards::guard_loads(p, &self.index_array_lengths, &|q| {
            self.prover.proves(q)
        });
        self.cond_as_written(&p)
    }

    fn cond_as_written(&self, p: &Pred) -> Cond {
        match p {
            Pred::Bool(b) => Cond::Bool(*b),
            Pred::Cmp(op, a, b) => Cond::Cmp(*op, self.ix(a), self.ix(b)),
            Pred::And(a, b) => Cond::And(
                Box::new(self.cond_as_written(a)),
                Box::new(self.cond_as_written(b)),
            ),
            Pred::Or(a, b) => Cond::Or(
                Box::new(self.cond_as_written(a)),
                Box::new(self.cond_as_written(b)),
            ),
            Pred::Not(a) => Cond::Not(Box::new(self.cond_as_written(a))),
        }
    }

    /// The innermost index-array read in `indices` whose index is not proved inside
    /// its array, with the bounds not proved.
    fn read_not_inside(&self, indices: &[IndexExpr]) -> Option<(IndexExpr, Pred)> {
        crate::load_guards::first_read_outside(
            indices,
            &self.index_array_lengths,
            &|q| self.prover.proves(q),
            &self.reads_assumed_inside,
        )
    }

    /// Whether every index-array read in `e` is proved inside its array (a one-hot
    /// generator's target must be: outside, ATL reads 0 there, which a store at the
    /// target would not).
    fn loads_inside(&self, e: &IndexExpr) -> bool {
        crate::load_guards::first_read_outside(
            [e],
            &self.index_array_lengths,
            &|q| self.prover.proves(q),
            &[],
        )
        .is_none()
    }

    // ---- statement builders ----------------------------------------------------

    fn for_loop(
        &mut self,
        var: &str,
        lo: &IndexExpr,
        hi: &IndexExpr,
        origin: LoopOrigin,
        mut body: impl FnMut(&mut Self) -> Result<Vec<Stmt>, Diagnostic>,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        self.for_loop_dyn(var, lo, hi, origin, &mut body)
    }

    /// [`Self::for_loop`] with the body behind a reference (it recurses with the same
    /// body).
    fn for_loop_dyn(
        &mut self,
        var: &str,
        lo: &IndexExpr,
        hi: &IndexExpr,
        origin: LoopOrigin,
        body: &mut dyn FnMut(&mut Self) -> Result<Vec<Stmt>, Diagnostic>,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let (lo, hi) = (self.prover.simplify(lo), self.prover.simplify(hi));
        // A bound that reads an index array at an index not proved inside it (`sum j <
        // crd[1]` with `crd` of length `n`, which may be 1) reads 0 there: the loop is
        // split on the read being inside, the other case with the read replaced by 0,
        // so that the kernel never reads past the array (the soundness fuzzer, seed 48,
        // case 1167: the validator refused the kernel, E0951).
        if let Some((read, inside)) = self.read_not_inside(&[lo.clone(), hi.clone()]) {
            let zero = IndexExpr::Const(0);
            let (lo0, hi0) = (
                crate::load_guards::replace(&lo, &read, &zero),
                crate::load_guards::replace(&hi, &read, &zero),
            );
            let body = std::cell::RefCell::new(body);
            return self.if_(
                &inside,
                |l| l.for_loop_dyn(var, &lo, &hi, origin, &mut **body.borrow_mut()),
                |l| l.for_loop_dyn(var, &lo0, &hi0, origin, &mut **body.borrow_mut()),
            );
        }
        // An empty range (provably) emits nothing.
        if self
            .prover
            .proves(&Pred::cmp(CmpOp::Le, hi.clone(), lo.clone()))
        {
            return Ok(Vec::new());
        }
        let (ilo, ihi) = (self.ix(&lo), self.ix(&hi));
        self.prover.push_range(var, &lo, &hi);
        let body = body(self);
        self.prover.pop();
        let body = body?;
        if body.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![Stmt::For(For {
            var: var.to_string(),
            lo: ilo,
            hi: ihi,
            body,
            origin,
            parallel: false,
            vector: false,
            unroll: false,
            collapse: false,
            hoisted_buffers: Vec::new(),
        })])
    }

    /// `if (p) then else`, under the facts `p` / `!p`.
    fn if_(
        &mut self,
        p: &Pred,
        then: impl FnOnce(&mut Self) -> Result<Vec<Stmt>, Diagnostic>,
        otherwise: impl FnOnce(&mut Self) -> Result<Vec<Stmt>, Diagnostic>,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        match self.prover.residual(p) {
            Residual::True => then(self),
            Residual::False => otherwise(self),
            Residual::Check(p) => {
                self.prover.push(p.clone());
                let t = then(self);
                self.prover.pop();
                self.prover.push(negate(&p));
                let e = otherwise(self);
                self.prover.pop();
                let (t, e) = (t?, e?);
                if t.is_empty() && e.is_empty() {
                    return Ok(Vec::new());
                }
                if t.is_empty() {
                    return Ok(vec![Stmt::If {
                        cond: self.cond(&negate(&p)),
                        then_branch: e,
                        else_branch: Vec::new(),
                    }]);
                }
                Ok(vec![Stmt::If {
                    cond: self.cond(&p),
                    then_branch: t,
                    else_branch: e,
                }])
            }
        }
    }

    /// Writes zeros to a region of `shape` through θ.
    fn zeros(
        &mut self,
        shape: &[IndexExpr],
        dest: &Dest,
        theta: &Reindexer,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let Some((first, rest)) = shape.split_first() else {
            return self.store(dest, StoreOp::Assign, theta, Val::Lit(0.0));
        };
        let d = self.prover.clamp(first);
        self.zero_rows(&IndexExpr::Const(0), &d, &d, rest, dest, theta)
    }

    /// Writes zeros to the rows `lo..hi` of a first dimension of `extent` elements.
    fn zero_rows(
        &mut self,
        lo: &IndexExpr,
        hi: &IndexExpr,
        extent: &IndexExpr,
        rest: &[IndexExpr],
        dest: &Dest,
        theta: &Reindexer,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let v = self.fresh("z");
        let theta = theta.then(ReindexOp::Push {
            index: IndexExpr::var(v.clone()),
            extent: extent.clone(),
        });
        let rest = rest.to_vec();
        let dest = dest.clone();
        self.for_loop(&v, lo, hi, LoopOrigin::Zero, move |l| {
            l.zeros(&rest, &dest, &theta)
        })
    }

    /// Stores a scalar value into the destination at `θ []`.
    fn store(
        &mut self,
        dest: &Dest,
        op: StoreOp,
        theta: &Reindexer,
        value: Val,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        self.store_with(dest, op, theta, move |_| Ok((Vec::new(), value)))
    }

    /// Stores the value `value` computes (statements, then a scalar) at `θ []`. The
    /// truncation guards of θ are decided first: the value is only computed where it
    /// is stored, and is lowered knowing that the guards hold.
    fn store_with(
        &mut self,
        dest: &Dest,
        op: StoreOp,
        theta: &Reindexer,
        value: impl FnOnce(&mut Self) -> Result<(Vec<Stmt>, Val), Diagnostic>,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let buf = match dest {
            Dest::Scalar(name) => {
                if !theta.is_identity() {
                    return Err(internal("a scalar destination with a reindexer"));
                }
                let (mut pre, value) = value(self)?;
                pre.push(Stmt::SetScalar {
                    name: name.clone(),
                    op,
                    value,
                });
                return Ok(pre);
            }
            Dest::Buf(buf) => buf.clone(),
        };
        let applied = theta
            .apply(Vec::new())
            .map_err(|e| internal(e.to_string()))?;
        let mut checks = Vec::new();
        for g in &applied.guards {
            match self.prover.residual(g) {
                Residual::True => {}
                Residual::False => return Ok(Vec::new()),
                Residual::Check(p) => checks.push(p),
            }
        }
        let guard = checks.into_iter().reduce(Pred::and);
        if let Some(g) = &guard {
            self.prover.push(g.clone());
        }
        let flat = flatten_index(&applied.coords);
        let index = self.ix(&flat);
        let read = self.tile_reads.get(&buf).map(|(names, read)| {
            names
                .iter()
                .zip(&applied.coords)
                .fold(read.clone(), |p, (name, c)| p.subst(name, &c.index))
        });
        let outer_read = std::mem::replace(&mut self.element_read, read);
        let computed = value(self);
        self.element_read = outer_read;
        if guard.is_some() {
            self.prover.pop();
        }
        let (mut stmts, value) = computed?;
        stmts.push(Stmt::Store {
            buf,
            index,
            coords: applied.coords,
            op,
            value,
        });
        Ok(match guard {
            None => stmts,
            Some(g) => vec![Stmt::If {
                cond: self.cond(&g),
                then_branch: stmts,
                else_branch: Vec::new(),
            }],
        })
    }

    // ---- lowering ---------------------------------------------------------------

    fn stmt(
        &mut self,
        e: &Expr,
        dest: &Dest,
        mode: StoreOp,
        theta: &Reindexer,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let shape = self.shape(e)?;
        // `specialize`'s case split `[c] * a + [!c] * b`: one part or the other, under
        // one `if` (the sum is the part whose guard holds, plus zero).
        if let Some((pred, a, b)) = e.as_case_split()
            && !shape.is_empty()
        {
            let (d1, t1) = (dest.clone(), theta.clone());
            let (d2, t2) = (dest.clone(), theta.clone());
            return self.if_(
                pred,
                move |l| l.stmt(a, &d1, mode, &t1),
                move |l| l.stmt(b, &d2, mode, &t2),
            );
        }
        match &e.kind {
            ExprKind::Gen { var, lo, hi, body }
                if let Some(hot) = atl_lang::scatter::one_hot(var, body)
                    && self.loads_inside(&hot.target) =>
            {
                self.scatter(var, lo, hi, &hot, &shape, dest, mode, theta)
            }
            ExprKind::Gen { var, lo, hi, body } => {
                let ext = self.prover.clamp(&IndexExpr::sub(hi.clone(), lo.clone()));
                let theta = theta.then(ReindexOp::Push {
                    index: normalize(&IndexExpr::sub(IndexExpr::var(var.clone()), lo.clone())),
                    extent: ext,
                });
                let dest = dest.clone();
                let plain = {
                    let (dest, theta) = (dest.clone(), theta.clone());
                    self.for_loop(var, lo, hi, LoopOrigin::Gen, move |l| {
                        l.stmt(body, &dest, mode, &theta)
                    })?
                };
                // Accumulating, a guard that bounds the innermost loop's variable from
                // above (`[jr + 32 * jt < N] * …`, the last tile of a split) can be the
                // loop's bound: the iterations it rules out add nothing. Where the
                // guard would select around loads that may not be evaluated past the
                // bound (a select, not a blend), the loop with the tighter bound
                // vectorizes and the select does not (a batched matmul's last column
                // tile took 75% of the time). The destination's layout (θ's extent)
                // is unchanged.
                // The guard may also sit below inner `gen`s (a register tile's last
                // row tile, `gen ir: gen jr: [ir + 8 * it < M && …] * …`): the row
                // loop is bounded, and the columns keep the rest of the guard, a
                // blend where the loads are safe, so they stay whole vectors.
                if mode == StoreOp::Accumulate
                    && selects(&plain)
                    && let Some((bound, body)) = self.bounded_under_gens(body, var)?
                {
                    let hi = IndexExpr::bin(IndexOp::Min, hi.clone(), bound);
                    return self.for_loop(var, lo, &hi, LoopOrigin::Gen, move |l| {
                        l.stmt(&body, &dest, mode, &theta)
                    });
                }
                Ok(plain)
            }
            // A scalar sum added into an outer accumulation: its own accumulator first,
            // as the definition groups it (`LowerOptions::group_sums_as_written`).
            ExprKind::Sum { .. }
                if shape.is_empty()
                    && mode == StoreOp::Accumulate
                    && self.options.group_sums_as_written =>
            {
                self.store_with(dest, StoreOp::Accumulate, theta, |l| l.scalar(e))
            }
            // The same for a sum of tensors: it is computed from zero in a buffer of
            // its own, then added element by element, as the interpreter adds it.
            ExprKind::Sum { .. }
                if !shape.is_empty()
                    && mode == StoreOp::Accumulate
                    && self.options.group_sums_as_written =>
            {
                self.sum_into_buffer(e, &shape, dest, StoreOp::Accumulate, theta)
            }
            ExprKind::Sum { var, lo, hi, body }
                if !shape.is_empty() || mode == StoreOp::Accumulate =>
            {
                if mode == StoreOp::Assign && small_constant_len(&shape, &self.prover).is_some() {
                    return self.sum_into_buffer(e, &shape, dest, StoreOp::Assign, theta);
                }
                // Accumulating into memory rather than into an enclosing sum's tile
                // (`sum ko: gen io, jt: sum ki: gen ii, jl: …`, a blocked reduction),
                // the block's sum gets a tile of its own, then added: the register
                // tile stays in registers across `ki`, and the additions are grouped
                // as the definition groups them.
                if mode == StoreOp::Accumulate
                    && self.sums_into_memory > 0
                    && small_constant_len(&shape, &self.prover).is_some()
                    && matches!(dest, Dest::Buf(b) if !self.tiles.contains(b))
                {
                    return self.sum_into_buffer(e, &shape, dest, StoreOp::Accumulate, theta);
                }
                let mut out = Vec::new();
                if mode == StoreOp::Assign {
                    out.extend(self.zeros(&shape, dest, theta)?);
                }
                out.extend(self.sum_in_place(var, lo, hi, body, dest, theta)?);
                Ok(out)
            }
            // A scalar guard with a pure body that the prover cannot decide, in
            // accumulate mode, is not a branch but `dest += cond ? body : 0`: adding
            // the zero is what the semantics does (a false guard is a zero term of the
            // sum), and a select inside a reduction vectorizes where a branch around
            // the store would not (a register tile's guarded tail).
            ExprKind::Guard { pred, body }
                if !shape.is_empty()
                    || !is_pure(body)
                    || (mode == StoreOp::Accumulate
                        && !matches!(self.prover.residual(pred), Residual::Check(_))) =>
            {
                let (d1, t1) = (dest.clone(), theta.clone());
                let (d2, t2) = (dest.clone(), theta.clone());
                self.if_(
                    pred,
                    move |l| l.stmt(body, &d1, mode, &t1),
                    move |l| {
                        if mode == StoreOp::Assign {
                            l.zeros(&shape, &d2, &t2)
                        } else {
                            Ok(Vec::new())
                        }
                    },
                )
            }
            ExprKind::Let { var, value, body } => self.let_(var, value, body, dest, mode, theta),
            ExprKind::Concat(a, b) => {
                let na = self.extent_of(a)?;
                let nb = self.extent_of(b)?;
                let mut out = self.stmt(a, dest, mode, &theta.then(ReindexOp::PadR(nb)))?;
                out.extend(self.stmt(b, dest, mode, &theta.then(ReindexOp::PadL(na)))?);
                Ok(out)
            }
            ExprKind::Transpose(a) => self.stmt(a, dest, mode, &theta.then(ReindexOp::Transpose)),
            ExprKind::Flatten(a) => self.stmt(a, dest, mode, &theta.then(ReindexOp::Flatten)),
            ExprKind::Amount { op, amount, arg } => {
                self.amount(*op, amount, arg, dest, mode, theta)
            }
            _ => {
                if !shape.is_empty() {
                    return Err(internal(format!(
                        "a tensor leaf survived normalization: {}",
                        atl_lang::pretty::expr_to_string(e, Default::default())
                    )));
                }
                self.store_with(dest, mode, theta, |l| l.scalar(e))
            }
        }
    }

    /// A one-hot generator `gen var in lo..hi: [var == f && rest] * value`
    /// ([`atl_lang::scatter`]): no loop, but `value` at `var = f` added at coordinate
    /// `f - lo` where `lo <= f < hi` and `rest` hold there (in assign mode the region
    /// is zeroed first). Under a sum over `p` with `f = crd[p]` this is the thesis's
    /// scatter, `out[crd[p]] += …` (Figure 7.2). The `+=` adds exactly what the loop
    /// would have added at `var = f` (its other iterations add exact zeros), so the
    /// kernel's values are those of the loop, term for term.
    #[allow(clippy::too_many_arguments)]
    fn scatter(
        &mut self,
        var: &str,
        lo: &IndexExpr,
        hi: &IndexExpr,
        hot: &atl_lang::scatter::OneHot<'_>,
        shape: &[IndexExpr],
        dest: &Dest,
        mode: StoreOp,
        theta: &Reindexer,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let mut out = Vec::new();
        if mode == StoreOp::Assign {
            out.extend(self.zeros(shape, dest, theta)?);
        }
        let target = normalize(&hot.target);
        let ext = self.prover.clamp(&IndexExpr::sub(hi.clone(), lo.clone()));
        let theta = theta.then(ReindexOp::Push {
            index: normalize(&IndexExpr::sub(target.clone(), lo.clone())),
            extent: ext,
        });
        let value = atl_lang::ir::subst_index(hot.value, var, &target);
        let in_range = Pred::and(
            Pred::cmp(CmpOp::Le, lo.clone(), target.clone()),
            Pred::cmp(CmpOp::Lt, target.clone(), hi.clone()),
        );
        let pred = match &hot.rest {
            Some(rest) => Pred::and(in_range, rest.subst(var, &target)),
            None => in_range,
        };
        let dest = dest.clone();
        out.extend(self.if_(
            &pred,
            move |l| l.stmt(&value, &dest, StoreOp::Accumulate, &theta),
            |_| Ok(Vec::new()),
        )?);
        Ok(out)
    }

    /// The loop of `sum var in lo..hi: body`, adding each term into the destination.
    fn sum_in_place(
        &mut self,
        var: &str,
        lo: &IndexExpr,
        hi: &IndexExpr,
        body: &Expr,
        dest: &Dest,
        theta: &Reindexer,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let into_memory = matches!(dest, Dest::Buf(b) if !self.tiles.contains(b));
        self.sums_into_memory += usize::from(into_memory);
        let plain = {
            let (dest, theta) = (dest.clone(), theta.clone());
            self.for_loop(var, lo, hi, LoopOrigin::Sum, move |l| {
                l.stmt(body, &dest, StoreOp::Accumulate, &theta)
            })
        };
        self.sums_into_memory -= usize::from(into_memory);
        let plain = plain?;
        // A guard below the sum's `gen`s that bounds the sum's variable from above
        // (`sum ki < 256: gen ii, jl: [ki + 256 * ko < K] * …`, the last block of a
        // split reduction) can be the loop's bound, as for a `gen` above: the
        // iterations it rules out add nothing, and the register tile inside then has
        // no select (a k-blocked matmul ran 7x slower with it).
        if selects(&plain)
            && let Some((bound, body)) = self.bounded_under_gens(body, var)?
        {
            let hi = IndexExpr::bin(IndexOp::Min, hi.clone(), bound);
            let (dest, theta) = (dest.clone(), theta.clone());
            self.sums_into_memory += usize::from(into_memory);
            let bounded = self.for_loop(var, lo, &hi, LoopOrigin::Sum, move |l| {
                l.stmt(&body, &dest, StoreOp::Accumulate, &theta)
            });
            self.sums_into_memory -= usize::from(into_memory);
            return bounded;
        }
        Ok(plain)
    }

    /// `gen`s around a guard around a pure scalar, where the guard bounds `var` from
    /// above with a bound that mentions none of the `gen`s' variables: the bound, and
    /// the `gen`s with the rest of the guard.
    fn bounded_under_gens(
        &mut self,
        e: &Expr,
        var: &str,
    ) -> Result<Option<(IndexExpr, Expr)>, Diagnostic> {
        Ok(match &e.kind {
            ExprKind::Gen {
                var: g,
                lo,
                hi,
                body,
            } if g != var => self
                .bounded_under_gens(body, var)?
                .filter(|(bound, _)| !bound.mentions(g))
                .map(|(bound, body)| (bound, Expr::gen_(g.clone(), lo.clone(), hi.clone(), body))),
            ExprKind::Guard { pred, body } if is_pure(body) && self.shape(body)?.is_empty() => {
                upper_bound_of(pred, var).map(|(bound, rest)| {
                    let body = match rest {
                        Some(rest) => Expr::guard(rest, (**body).clone()),
                        None => (**body).clone(),
                    };
                    (bound, body)
                })
            }
            _ => None,
        })
    }

    /// A tensor-valued `sum` of a small constant shape, in assign mode: the sum
    /// accumulates into a local tile (`acc`), which is then stored through θ. The
    /// destination of a sum does not move inside it, so this is the tensor form of the
    /// scalar accumulator; with constant extents the C compiler can keep the tile in
    /// registers (a matmul register tile is `sum k: gen ii, ji: …`). The additions
    /// happen in the same order as when accumulating in place (`0 + a₁ + a₂ + …` per
    /// element), so the result is bit-identical; only assign mode qualifies, since in
    /// accumulate mode the tile would add the partial sum as one term — which is what
    /// `--fp strict` asks for (`op` = accumulate: the tile, of any shape, is added into
    /// the destination, so the sum rounds as the definition groups it).
    fn sum_into_buffer(
        &mut self,
        sum: &Expr,
        shape: &[IndexExpr],
        dest: &Dest,
        op: StoreOp,
        theta: &Reindexer,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let tile = self.fresh("acc");
        let dims: Vec<IndexExpr> = shape.iter().map(|d| self.prover.clamp(d)).collect();
        let len = match small_constant_len(&dims, &self.prover) {
            Some(len) => Ix::Const(len),
            None => self.ix(&product(&dims)),
        };
        let tile_dest = Dest::Buf(tile.clone());
        let ExprKind::Sum { var, lo, hi, body } = &sum.kind else {
            return Err(internal("a sum buffer for something other than a sum"));
        };
        self.tiles.insert(tile.clone());
        if let Some(read) = self.elements_read(&tile, &dims, theta)? {
            self.tile_reads.insert(tile.clone(), read);
        }
        let body = self.sum_in_place(var, lo, hi, body, &tile_dest, &Reindexer::identity());
        self.tile_reads.remove(&tile);
        self.tiles.remove(&tile);
        let mut body = body?;
        // `stmt` in accumulate mode does not zero: do it first.
        let mut inner = self.zeros(&dims, &tile_dest, &Reindexer::identity())?;
        inner.append(&mut body);
        self.bind(&tile, Binding::Buffer(dims.clone()));
        let copy = self.copy_tile(&tile, &dims, &[], dest, op, theta);
        self.unbind(&tile);
        inner.extend(copy?);
        Ok(vec![Stmt::Alloc {
            buf: tile,
            shape: dims,
            len,
            zeroed: false,
            storage: Storage::Heap,
            fold: None,
            body: inner,
        }])
    }

    /// Stores (or with `op` = accumulate, adds) every element of the buffer `tile` at
    /// the same coordinates of `dest` through θ: one loop per remaining extent of
    /// `dims`; `coords` are the loop variables of the enclosing copy loops.
    fn copy_tile(
        &mut self,
        tile: &str,
        dims: &[IndexExpr],
        coords: &[String],
        dest: &Dest,
        op: StoreOp,
        theta: &Reindexer,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let Some((first, rest)) = dims.split_first() else {
            let access = coords.iter().fold(Expr::var(tile), |acc, c| {
                Expr::access(acc, IndexExpr::var(c.clone()))
            });
            return self.store_with(dest, op, theta, |l| Ok((Vec::new(), l.load(&access)?)));
        };
        let v = self.fresh("t");
        let theta = theta.then(ReindexOp::Push {
            index: IndexExpr::var(v.clone()),
            extent: first.clone(),
        });
        let mut coords = coords.to_vec();
        coords.push(v.clone());
        let (rest, tile, dest) = (rest.to_vec(), tile.to_string(), dest.clone());
        self.for_loop(&v, &IndexExpr::Const(0), first, LoopOrigin::Gen, move |l| {
            l.copy_tile(&tile, &rest, &coords, &dest, op, &theta)
        })
    }

    /// The elements of the tile `tile` (of extents `dims`) its copy through θ reads:
    /// placeholder names for its coordinates and the condition on them, `None`
    /// where the copy reads every element. Lanes it does not read (the columns of a
    /// last tile past the extent, truncated away) need not hold the definition's
    /// value: a guard that only zeroes them is left out of their sum
    /// ([`Lowerer::element_read`]), so the last tile adds whole vectors.
    fn elements_read(
        &mut self,
        tile: &str,
        dims: &[IndexExpr],
        theta: &Reindexer,
    ) -> Result<Option<(Vec<String>, Pred)>, Diagnostic> {
        let mut names = Vec::with_capacity(dims.len());
        let mut theta = theta.clone();
        for d in dims {
            let name = self.fresh(&format!("{tile}_lane"));
            theta = theta.then(ReindexOp::Push {
                index: IndexExpr::var(name.clone()),
                extent: d.clone(),
            });
            names.push(name);
        }
        let applied = theta
            .apply(Vec::new())
            .map_err(|e| internal(e.to_string()))?;
        Ok(applied
            .guards
            .into_iter()
            .reduce(Pred::and)
            .map(|read| (names, read)))
    }

    /// Whether `p` holds wherever the tile element being computed is read.
    fn read_elements_satisfy(&mut self, p: &Pred) -> bool {
        let Some(read) = self.element_read.clone() else {
            return false;
        };
        self.prover.push(read);
        let holds = self.prover.proves(p);
        self.prover.pop();
        holds
    }

    fn extent_of(&mut self, e: &Expr) -> Result<IndexExpr, Diagnostic> {
        let s = self.shape(e)?;
        let d = s.first().ok_or_else(|| internal("extent of a scalar"))?;
        Ok(self.prover.clamp(d))
    }

    fn let_(
        &mut self,
        var: &str,
        value: &Expr,
        body: &Expr,
        dest: &Dest,
        mode: StoreOp,
        theta: &Reindexer,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let value_shape = self.shape(value)?;
        if value_shape.is_empty() {
            let mut out = vec![Stmt::Decl {
                name: var.to_string(),
                init: None,
            }];
            out.extend(self.stmt(
                value,
                &Dest::Scalar(var.to_string()),
                StoreOp::Assign,
                &Reindexer::identity(),
            )?);
            self.lets.push((var.to_string(), value_shape));
            self.bind(var, Binding::Scalar);
            let b = self.stmt(body, dest, mode, theta);
            self.unbind(var);
            self.lets.pop();
            out.extend(b?);
            return Ok(out);
        }
        let dims: Vec<IndexExpr> = value_shape.iter().map(|d| self.prover.clamp(d)).collect();
        let zeroed = accumulating_root(value, self)?;
        let value_mode = if zeroed {
            StoreOp::Accumulate
        } else {
            StoreOp::Assign
        };
        let mut inner = self.stmt(
            value,
            &Dest::Buf(var.to_string()),
            value_mode,
            &Reindexer::identity(),
        )?;
        self.lets.push((var.to_string(), value_shape));
        self.bind(var, Binding::Buffer(dims.clone()));
        let b = self.stmt(body, dest, mode, theta);
        self.unbind(var);
        self.lets.pop();
        inner.extend(b?);
        let len = self.ix(&product(&dims));
        Ok(vec![Stmt::Alloc {
            buf: var.to_string(),
            shape: dims,
            len,
            zeroed,
            storage: Storage::Heap,
            fold: None,
            body: inner,
        }])
    }

    fn amount(
        &mut self,
        op: AmountOp,
        amount: &IndexExpr,
        arg: &Expr,
        dest: &Dest,
        mode: StoreOp,
        theta: &Reindexer,
    ) -> Result<Vec<Stmt>, Diagnostic> {
        let k = normalize(amount);
        let arg_shape = self.shape(arg)?;
        let Some((first, rest)) = arg_shape.split_first() else {
            return Err(internal("a reshape operator on a scalar"));
        };
        let n = self.prover.clamp(first);
        let rest = rest.to_vec();
        // The interpreter rejects invalid amounts at these sizes (E0504); so does the
        // kernel, on entry.
        let min = reshape::min_amount(op);
        let what = match min {
            0 => "non-negative".to_string(),
            1 => "positive".to_string(),
            _ => format!("at least {min}"),
        };
        let valid = Pred::cmp(CmpOp::Ge, k.clone(), IndexExpr::Const(min));
        if !self.prover.proves_globally(&valid) {
            self.precondition(
                valid,
                PreconditionKind::Amount,
                format!("the amount {k} of `{}` is {what}", op.name()),
            );
        }
        if reshape::amount_at_most_extent(op) {
            let fits = Pred::cmp(CmpOp::Le, k.clone(), n.clone());
            if !self.prover.proves_globally(&fits) {
                self.precondition(
                    fits,
                    PreconditionKind::Amount,
                    format!("`{}` drops {k} of at most {n} elements", op.name()),
                );
            }
        }
        // The operator's reindexer, and the rows of the destination it leaves to be
        // zeroed (when the store assigns), both from `reindex.rs`'s table.
        let fill = ZeroFill::for_amount(op, &n, &k);
        let reindexed = theta.then(ReindexOp::for_amount(op, k));
        let assign = mode == StoreOp::Assign;
        let mut out = Vec::new();
        let zeros = |l: &mut Self, out: &mut Vec<Stmt>| -> Result<(), Diagnostic> {
            if let Some(fill) = &fill
                && assign
            {
                let through = if fill.through_reindexer {
                    &reindexed
                } else {
                    theta
                };
                out.extend(l.zero_rows(&fill.lo, &fill.hi, &fill.extent, &rest, dest, through)?);
            }
            Ok(())
        };
        if fill.as_ref().is_some_and(|f| f.before) {
            zeros(self, &mut out)?;
        }
        out.extend(self.stmt(arg, dest, mode, &reindexed)?);
        if fill.as_ref().is_some_and(|f| !f.before) {
            zeros(self, &mut out)?;
        }
        Ok(out)
    }

    /// Lowers a scalar expression: statements computing temporaries, then the value.
    fn scalar(&mut self, e: &Expr) -> Result<(Vec<Stmt>, Val), Diagnostic> {
        match &e.kind {
            ExprKind::Lit(v) => Ok((Vec::new(), Val::Lit(*v))),
            ExprKind::Coord(index) => Ok((Vec::new(), Val::Coord(self.ix(index)))),
            ExprKind::Var(x) if matches!(self.lookup(x), Some(Binding::Scalar)) => {
                Ok((Vec::new(), Val::Scalar(x.clone())))
            }
            ExprKind::Input(_) | ExprKind::Var(_) | ExprKind::Access { .. } if is_leaf_chain(e) => {
                Ok((Vec::new(), self.load(e)?))
            }
            ExprKind::Neg(a) => {
                let (pre, v) = self.scalar(a)?;
                Ok((pre, Val::Neg(Box::new(v))))
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (mut pre, a) = self.scalar(lhs)?;
                let (pre_b, b) = self.scalar(rhs)?;
                pre.extend(pre_b);
                Ok((pre, Val::Bin(*op, Box::new(a), Box::new(b))))
            }
            ExprKind::Call { func, args } => {
                let mut pre = Vec::new();
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    let (p, v) = self.scalar(a)?;
                    pre.extend(p);
                    values.push(v);
                }
                Ok((pre, Val::Call(*func, values)))
            }
            ExprKind::Guard { pred, body } => match self.prover.residual(pred) {
                Residual::True => self.scalar(body),
                Residual::False => Ok((Vec::new(), Val::Lit(0.0))),
                Residual::Check(p) => {
                    let cond = self.cond(&p);
                    // Lowered without the guard's fact, a pure body whose loads all
                    // stay in bounds anyway (no check left in it) may be evaluated
                    // whatever the guard: a blend, which vectorizes where a branch
                    // does not. Only tried for a body without guards of its own: one
                    // would almost always leave a select (so no blend), and trying at
                    // every level of nested guards would lower the innermost body
                    // 2^depth times.
                    if is_pure(body) && !has_guard(body) {
                        let (pre, v) = self.scalar(body)?;
                        if pre.is_empty() && !has_select(&v) {
                            // Where the guard holds on every element the tile's copy
                            // reads, the elements it zeroes are never read.
                            if self.read_elements_satisfy(&p) {
                                return Ok((Vec::new(), v));
                            }
                            return Ok((Vec::new(), Val::Blend(cond, Box::new(v))));
                        }
                    }
                    self.prover.push(p.clone());
                    let inner = self.scalar(body);
                    self.prover.pop();
                    let (pre, v) = inner?;
                    if pre.is_empty() {
                        return Ok((Vec::new(), Val::Select(cond, Box::new(v))));
                    }
                    // A guarded computation: only run it when the guard holds.
                    let t = self.fresh("g");
                    let mut then_branch = pre;
                    then_branch.push(Stmt::SetScalar {
                        name: t.clone(),
                        op: StoreOp::Assign,
                        value: v,
                    });
                    let stmts = vec![
                        Stmt::Decl {
                            name: t.clone(),
                            init: Some(Val::Lit(0.0)),
                        },
                        Stmt::If {
                            cond,
                            then_branch,
                            else_branch: Vec::new(),
                        },
                    ];
                    Ok((stmts, Val::Scalar(t)))
                }
            },
            ExprKind::Sum { var, lo, hi, body } => {
                let acc = self.fresh("acc");
                let mut stmts = vec![Stmt::Decl {
                    name: acc.clone(),
                    init: Some(Val::Lit(0.0)),
                }];
                let dest = Dest::Scalar(acc.clone());
                stmts.extend(self.for_loop(var, lo, hi, LoopOrigin::Sum, move |l| {
                    l.stmt(body, &dest, StoreOp::Accumulate, &Reindexer::identity())
                })?);
                Ok((stmts, Val::Scalar(acc)))
            }
            // `acc = -inf; for k: acc max= body` (scalar bodies only, E0416). The body
            // is lowered as a scalar, never through `stmt`: a false guard in it is the
            // value 0, which `max` must see (in a sum, `stmt` may skip adding it).
            ExprKind::MaxRed { var, lo, hi, body } => {
                let acc = self.fresh("mx");
                let mut stmts = vec![Stmt::Decl {
                    name: acc.clone(),
                    init: Some(Val::Lit(atl_lang::functions::MAX_EMPTY)),
                }];
                let name = acc.clone();
                stmts.extend(self.for_loop(var, lo, hi, LoopOrigin::Max, move |l| {
                    let (mut pre, value) = l.scalar(body)?;
                    pre.push(Stmt::SetScalar {
                        name: name.clone(),
                        op: StoreOp::Max,
                        value,
                    });
                    Ok(pre)
                })?);
                Ok((stmts, Val::Scalar(acc)))
            }
            ExprKind::Let { .. } => {
                let t = self.fresh("v");
                let mut stmts = vec![Stmt::Decl {
                    name: t.clone(),
                    init: None,
                }];
                stmts.extend(self.stmt(
                    e,
                    &Dest::Scalar(t.clone()),
                    StoreOp::Assign,
                    &Reindexer::identity(),
                )?);
                Ok((stmts, Val::Scalar(t)))
            }
            _ => Err(internal(format!(
                "unexpected scalar expression after normalization: {}",
                atl_lang::pretty::expr_to_string(e, Default::default())
            ))),
        }
    }

    /// A bounds-checked read of an input or buffer element.
    fn load(&mut self, e: &Expr) -> Result<Val, Diagnostic> {
        let mut indices = Vec::new();
        let mut base = e;
        while let ExprKind::Access { tensor, index } = &base.kind {
            indices.push(normalize(index));
            base = tensor;
        }
        indices.reverse();
        let name = match &base.kind {
            ExprKind::Input(x) | ExprKind::Var(x) => x.clone(),
            _ => return Err(internal("an access whose base is not a buffer")),
        };
        let storage_order = match &base.kind {
            ExprKind::Input(x) => self.storage_orders.get(x).cloned(),
            _ => None,
        };
        let dims = match self.lookup(&name) {
            Some(Binding::Buffer(d)) => d.clone(),
            _ => return Err(internal(format!("`{name}` is not a buffer in scope"))),
        };
        if dims.len() != indices.len() {
            return Err(internal(format!(
                "`{name}` has rank {} but is read with {} indices",
                dims.len(),
                indices.len()
            )));
        }
        // A coordinate that reads an index array at an index not proved inside it:
        // ATL reads 0 there (`f[crd[p + 1]]` is `f[0]` at the last `p`), and the
        // kernel must not read past the array. So the read is the two cases, each
        // a select that evaluates only its side (never a blend): `inside ? f[crd[e]]
        // : 0` plus `!inside ? f[0] : 0`, split on the innermost such read first.
        if let Some((array_read, inside)) = self.read_not_inside(&indices) {
            // Assumed inside from here on whether or not the prover can use the fact
            // (one that mentions reads may be of no use to it): each read is split
            // once.
            self.reads_assumed_inside.push(array_read.clone());
            self.prover.push(inside.clone());
            let kept = self.load(e);
            self.prover.pop();
            self.reads_assumed_inside.pop();
            let kept = kept?;
            // The read is found in the normalized indices: replaced there (the
            // indices as written may spell it otherwise), so the second case has one
            // read fewer and the recursion ends.
            let mut changed = false;
            let zeroed = map_access_indices(e, &mut |ix| {
                let ix = normalize(ix);
                let z = crate::load_guards::replace(&ix, &array_read, &IndexExpr::Const(0));
                changed |= z != ix;
                z
            });
            if !changed {
                return Err(internal(format!(
                    "the read `{array_read}` is not in the coordinates it was found in"
                )));
            }
            let zeroed = self.load(&zeroed)?;
            return Ok(Val::Bin(
                atl_lang::ir::BinOp::Add,
                Box::new(Val::Select(self.cond(&inside), Box::new(kept))),
                Box::new(Val::Select(self.cond(&Pred::not(inside)), Box::new(zeroed))),
            ));
        }
        // The reads of index arrays in the coordinates come first: the coordinates'
        // own checks read them, and C's `&&` evaluates left to right. Every one is
        // inside its array here (above), so these are proved and vanish; one the
        // prover decides otherwise stays a check rather than a read past the array.
        let mut checks = Vec::new();
        for (array, at) in indices.iter().flat_map(nested_loads) {
            let Some(len) = self.index_array_lengths.get(&array).cloned() else {
                return Err(internal(format!(
                    "`{array}` is not an index array in scope"
                )));
            };
            for p in [
                Pred::cmp(CmpOp::Le, IndexExpr::Const(0), at.clone()),
                Pred::cmp(CmpOp::Lt, at.clone(), len),
            ] {
                match self.prover.residual(&p) {
                    Residual::True => {}
                    Residual::False => checks.push(p),
                    Residual::Check(p) => checks.push(p),
                }
            }
        }
        for (k, d) in indices.iter().zip(&dims) {
            for p in [
                Pred::cmp(CmpOp::Le, IndexExpr::Const(0), k.clone()),
                Pred::cmp(CmpOp::Lt, k.clone(), d.clone()),
            ] {
                match self.prover.residual(&p) {
                    Residual::True => {}
                    // Out of range at every execution: ATL reads a zero.
                    Residual::False => return Ok(Val::Lit(0.0)),
                    Residual::Check(p) => checks.push(p),
                }
            }
        }
        let mut coords: Vec<Coord> = indices
            .into_iter()
            .zip(dims)
            .map(|(index, extent)| Coord { index, extent })
            .collect();
        // An input stored in another order is read at its storage coordinates.
        if let Some(order) = storage_order {
            coords = order.iter().map(|&d| coords[d].clone()).collect();
        }
        let flat = flatten_index(&coords);
        let guard = checks.into_iter().reduce(Pred::and);
        if let Some(g) = &guard {
            self.prover.push(g.clone());
        }
        let index = self.ix(&flat);
        if guard.is_some() {
            self.prover.pop();
        }
        let load = Val::Load(Load {
            buf: name,
            index,
            coords,
        });
        Ok(match guard {
            None => load,
            Some(g) => Val::Select(self.cond(&g), Box::new(load)),
        })
    }
}

/// The sizes a kernel of `expr` (reading the inputs `read`, of shape `shape`) takes,
/// in declaration order: those its index expressions, its output's and inputs' shapes
/// and the read index arrays' ranges mention, closed under the `assume`s (one that
/// mentions a size taken brings its other sizes).
fn used_sizes(
    program: &Program,
    read: &HashSet<String>,
    expr: &Expr,
    shape: &[IndexExpr],
) -> Vec<String> {
    let mut used: BTreeSet<String> = expr.free_index_vars();
    for d in shape {
        d.collect_vars(&mut used);
    }
    for input in program.inputs.iter().filter(|i| read.contains(&i.name)) {
        for d in &input.shape {
            d.collect_vars(&mut used);
        }
        if let Some(a) = &input.index_array {
            a.lo.collect_vars(&mut used);
            a.hi.collect_vars(&mut used);
        }
    }
    loop {
        let before = used.len();
        for a in &program.assumes {
            let vars = a.pred.vars();
            if vars.iter().any(|v| used.contains(v)) {
                used.extend(vars);
            }
        }
        if used.len() == before {
            break;
        }
    }
    program
        .sizes
        .iter()
        .filter(|s| used.contains(&s.name))
        .map(|s| s.name.clone())
        .collect()
}
