//! The loop IR: what lowering produces and what the C emitter prints.
//!
//! A [`Kernel`] is one function: symbolic sizes, read-only input buffers, one output
//! buffer, and a body of statements over flat, row-major arrays. It is deliberately
//! close to the restricted C of thesis Figure 5.4 — `for`, `if`, scoped allocation,
//! scalar temporaries, assign (`=`) and accumulate (`+=`) stores — so that printing C
//! from it is a direct transcription, and so that the loop-IR interpreter
//! ([`crate::interp`]) gives the C code's meaning without a C compiler. Where each
//! temporary lives is part of the IR too ([`Storage`]: the stack, the heap, or a heap
//! buffer hoisted around a loop, [`For::hoisted_buffers`], one per thread around a
//! parallel loop), decided by the placement pass of `atl-lower`
//! (`lower/src/placement.rs`), so the C printer decides nothing.
//!
//! Index arithmetic has its own small language ([`Ix`]) because C's `/` and `%`
//! truncate while ATL's floor: lowering picks [`IxOp::DivNat`]/[`IxOp::ModNat`] (C's
//! operators) only where it proved the numerator non-negative and the divisor a
//! positive constant, and the floor helpers everywhere else.
//!
//! Every load and store keeps the multi-dimensional coordinates it stands for
//! ([`Coord`], the reindexer's output before `flatten_index`), so that a translation
//! validator can relate each memory access back to the source program; the loop-IR
//! interpreter already checks at run time that the flat index is exactly the
//! row-major flattening of those coordinates and that each coordinate is in range.

use atl_lang::functions::ScalarFn;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{BinOp, Expr};

/// A lowered definition: `void name(sizes…, inputs…, output)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The definition it was lowered from (the default C symbol).
    pub name: String,
    /// Size parameters, in declaration order (the ABI order).
    pub sizes: Vec<String>,
    /// Input buffers: the inputs the definition reads, in declaration order (the ABI
    /// order); an input it does not read is no parameter.
    pub inputs: Vec<BufferDecl>,
    /// The output buffer.
    pub output: BufferDecl,
    /// Conditions on the sizes under which the kernel is defined: sizes `>= 1`, the
    /// bounds that keep index arithmetic within `int64_t`, the program's `assume`s,
    /// valid reshape amounts, non-negative input extents, in this order (C checks
    /// them left to right, so no check overflows). The interpreter rejects sizes that
    /// break them (E0602, E0937, E0603, E0504, E0605); the C kernel returns without
    /// touching memory.
    pub preconditions: Vec<Precondition>,
    /// The SIMD width in bits the C asks the compiler to prefer (the derivation's
    /// `vector_width N`; `None`: the compiler's default). Changes no value.
    pub vector_width: Option<u32>,
    pub body: Vec<Stmt>,
    /// The normalized source expression the body was lowered from (every definition
    /// it uses bound by a `let`), for printing and translation validation.
    pub source: Expr,
}

/// A buffer with its shape over the sizes (extents clamped at zero where lowering
/// could not prove them non-negative).
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecl {
    pub name: String,
    pub shape: Vec<IndexExpr>,
    /// `Some` for an index array (an input of `int32_t`, read only by [`Ix::Load`]),
    /// with its declaration, which the kernel checks on entry after the
    /// preconditions (its range of values, and order when `sorted`).
    pub index_array: Option<atl_lang::ir::IndexArray>,
    /// Only for an index array: its range is checked where the kernel reads it, not
    /// on entry. Every load of it sits in the `then` branch (or the condition) of an
    /// `if` whose condition puts the loaded value in the declared range and whose
    /// `else` is [`Stmt::Fail`] naming the array (set by `atl-lower`'s
    /// `checks_at_use` pass: it saves the entry check's pass over the array). The
    /// validator proves that every value read from it is in range wherever it is used,
    /// without assuming the declaration.
    pub checked_where_read: bool,
    /// Only for an input stored in another order than row-major (`layout` in the
    /// program): `order[p]` is the program's dimension stored at position `p`. The
    /// buffer's `shape` and every access's coordinates are then in storage order: the
    /// program's element at coordinates `c` is the buffer's at `c[order[0]], …`.
    pub order: Option<Vec<usize>>,
}

impl BufferDecl {
    /// The shape in the program's order of dimensions.
    pub fn program_shape(&self) -> Vec<IndexExpr> {
        program_order(self.order.as_deref(), &self.shape)
    }
}

/// Coordinates (or extents) in storage order as the program's: `program[order[p]] =
/// storage[p]`. Without an order they are the same.
pub fn program_order<T: Clone>(order: Option<&[usize]>, storage: &[T]) -> Vec<T> {
    let mut out = storage.to_vec();
    for (p, &d) in order.unwrap_or_default().iter().enumerate() {
        if let (Some(slot), Some(c)) = (out.get_mut(d), storage.get(p)) {
            *slot = c.clone();
        }
    }
    out
}

/// The entry check of an index array, in target arithmetic: every element `v` of
/// `buf[0..len]` has `lo <= v < hi`, and with `sorted`, `buf[k - 1] <= buf[k]`. The
/// kernel runs it after the preconditions, reading the array and writing nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayCheck {
    pub buf: String,
    pub len: Ix,
    pub lo: Ix,
    pub hi: Ix,
    pub sorted: bool,
    /// The range is checked where the kernel reads the array
    /// ([`BufferDecl::checked_where_read`]), not by this entry check.
    pub where_read: bool,
}

impl Kernel {
    /// The entry checks of the kernel's index arrays, in input order, derived from
    /// their declarations (the one source: the C printer, the overflow analysis and
    /// the validator all call this). `None` for an array whose declaration has no
    /// target form (a metavariable or a load: resolution admits neither).
    pub fn array_checks(&self) -> Vec<Option<ArrayCheck>> {
        self.inputs
            .iter()
            .filter_map(|b| {
                let decl = b.index_array.as_ref()?;
                Some((|| {
                    Some(ArrayCheck {
                        buf: b.name.clone(),
                        len: crate::print::plain_ix(b.shape.first()?)?,
                        lo: crate::print::plain_ix(&decl.lo)?,
                        hi: crate::print::plain_ix(&decl.hi)?,
                        sorted: decl.sorted,
                        where_read: b.checked_where_read,
                    })
                })())
            })
            .collect()
    }
}

/// A condition on the sizes, with the reason it is required.
#[derive(Clone, Debug, PartialEq)]
pub struct Precondition {
    pub pred: Pred,
    /// The same condition in target arithmetic (what the C kernel checks on entry).
    pub cond: Cond,
    pub kind: PreconditionKind,
    pub reason: String,
}

/// Which check of the reference interpreter a precondition mirrors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreconditionKind {
    /// A declared size is at least 1 (E0602).
    Size,
    /// An `assume` of the program (E0603).
    Assume,
    /// A reshape amount is valid (E0504).
    Amount,
    /// An input extent is non-negative (E0605).
    InputExtent,
    /// A size is small enough for the kernel's `int64_t` index arithmetic not to
    /// overflow (`size <= bound`, computed by `atl-lower`'s overflow pass; E0937).
    /// Checked right after the sizes' `>= 1`, before any condition that computes.
    IndexRange,
}

/// One coordinate of an access: the index and the extent of its dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct Coord {
    pub index: IndexExpr,
    pub extent: IndexExpr,
}

/// Integer index expressions of the target (C `int64_t` arithmetic).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ix {
    Const(i64),
    /// A size, a loop variable.
    Var(String),
    Neg(Box<Ix>),
    Bin(IxOp, Box<Ix>, Box<Ix>),
    /// An element of an index array (an input [`BufferDecl`] with `index_array`):
    /// `(int64_t)pos[index]`; the index is proved inside the array.
    Load(String, Box<Ix>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IxOp {
    Add,
    Sub,
    Mul,
    /// C's `/`: only used where the numerator is proved `>= 0` and the divisor is a
    /// positive constant, so it equals floor division.
    DivNat,
    /// C's `%`, under the same conditions as [`IxOp::DivNat`].
    ModNat,
    /// Floor division with `a / 0 = 0` (DESIGN §3.2).
    FloorDiv,
    /// Floor modulo with `a % 0 = a`.
    FloorMod,
    /// `cdiv(a, b) = -((-a) / b)`.
    CeilDiv,
    Min,
    Max,
}

impl Ix {
    pub fn bin(op: IxOp, a: Ix, b: Ix) -> Ix {
        Ix::Bin(op, Box::new(a), Box::new(b))
    }

    /// Whether the expression mentions the variable `v`.
    pub fn mentions(&self, v: &str) -> bool {
        match self {
            Ix::Const(_) => false,
            Ix::Var(x) => x == v,
            Ix::Neg(a) | Ix::Load(_, a) => a.mentions(v),
            Ix::Bin(_, a, b) => a.mentions(v) || b.mentions(v),
        }
    }

    /// Whether any operator is one of those the C printer implements with a helper.
    pub fn uses(&self, op: IxOp) -> bool {
        match self {
            Ix::Const(_) | Ix::Var(_) => false,
            Ix::Neg(a) | Ix::Load(_, a) => a.uses(op),
            Ix::Bin(o, a, b) => *o == op || a.uses(op) || b.uses(op),
        }
    }
}

/// Boolean conditions over [`Ix`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cond {
    Bool(bool),
    Cmp(CmpOp, Ix, Ix),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

impl Cond {
    /// The conjunction of a list (`true` when empty).
    pub fn all(conds: Vec<Cond>) -> Cond {
        conds
            .into_iter()
            .reduce(|a, b| Cond::And(Box::new(a), Box::new(b)))
            .unwrap_or(Cond::Bool(true))
    }

    pub fn visit_ix(&self, f: &mut dyn FnMut(&Ix)) {
        match self {
            Cond::Bool(_) => {}
            Cond::Cmp(_, a, b) => {
                f(a);
                f(b);
            }
            Cond::And(a, b) | Cond::Or(a, b) => {
                a.visit_ix(f);
                b.visit_ix(f);
            }
            Cond::Not(a) => a.visit_ix(f),
        }
    }
}

/// The coordinates whose row-major position is an access's flat index, for a buffer
/// folded by `fold` ([`Stmt::Alloc`]): the first coordinate modulo the fold, of extent
/// the fold; the coordinates themselves otherwise.
pub fn fold_flat(fold: Option<i64>, coords: &[Coord]) -> Vec<Coord> {
    let mut out = coords.to_vec();
    if let (Some(f), Some(first)) = (fold, out.first_mut()) {
        first.index = IndexExpr::bin(
            atl_lang::index::IndexOp::Mod,
            first.index.clone(),
            IndexExpr::Const(f),
        );
        first.extent = IndexExpr::Const(f);
    }
    out
}

/// A read of one element of a buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    pub buf: String,
    /// The flat (row-major) index.
    pub index: Ix,
    /// The coordinates it flattens, with the buffer's extents.
    pub coords: Vec<Coord>,
}

/// Scalar (floating-point) expressions.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Lit(f64),
    /// An index's value as a scalar (`float(i + 1)` in the source; C converts the
    /// `int64_t` to the element type, rounding beyond 2^24 for `float`).
    Coord(Ix),
    /// A scalar temporary.
    Scalar(String),
    Load(Load),
    Neg(Box<Val>),
    Bin(BinOp, Box<Val>, Box<Val>),
    /// A scalar function of scalar values (`atl_lang::functions`), every argument
    /// evaluated.
    Call(ScalarFn, Vec<Val>),
    /// `cond ? value : 0`; the value is evaluated only when the condition holds (this is
    /// how out-of-range reads and scalar guards stay defined).
    Select(Cond, Box<Val>),
    /// `cond ? value : 0` where the value is evaluated whatever the condition: every
    /// load in it is in bounds without the condition (lowering built it so), which lets
    /// C compilers turn it into a vector blend instead of a branch.
    Blend(Cond, Box<Val>),
}

impl Val {
    pub fn visit(&self, f: &mut dyn FnMut(&Val)) {
        f(self);
        match self {
            Val::Lit(_) | Val::Coord(_) | Val::Scalar(_) | Val::Load(_) => {}
            Val::Neg(a) => a.visit(f),
            Val::Bin(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Val::Select(_, a) | Val::Blend(_, a) => a.visit(f),
            Val::Call(_, args) => args.iter().for_each(|a| a.visit(f)),
        }
    }

    /// [`Val::visit`], with each node mutable (a node is visited before its children).
    pub fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Val)) {
        f(self);
        match self {
            Val::Lit(_) | Val::Coord(_) | Val::Scalar(_) | Val::Load(_) => {}
            Val::Neg(a) => a.visit_mut(f),
            Val::Bin(_, a, b) => {
                a.visit_mut(f);
                b.visit_mut(f);
            }
            Val::Select(_, a) | Val::Blend(_, a) => a.visit_mut(f),
            Val::Call(_, args) => args.iter_mut().for_each(|a| a.visit_mut(f)),
        }
    }
}

/// `=`, `+=`, or `max=` (the step of a max-reduction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOp {
    Assign,
    Accumulate,
    /// `x max= v` is `x = max(x, v)` with the scalar `max` (`x > v ? x : v`,
    /// `atl_lang::functions::max_step`). Lowering uses it only on scalar temporaries
    /// ([`Stmt::SetScalar`]) declared with `-inf` just before a [`LoopOrigin::Max`]
    /// loop.
    Max,
}

/// Which source construct a loop comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopOrigin {
    /// A `gen`: iterations write disjoint elements (reindexers are injective).
    Gen,
    /// A `sum`: iterations accumulate into the same elements.
    Sum,
    /// A max-reduction (`max k in lo..hi: e`): iterations fold into the same scalar with
    /// [`StoreOp::Max`], in order.
    Max,
    /// Zero-filling a region nothing else writes (padding, a false guard, the zero
    /// start of a tensor-valued sum).
    Zero,
}

#[derive(Clone, Debug, PartialEq)]
pub struct For {
    pub var: String,
    pub lo: Ix,
    pub hi: Ix,
    pub body: Vec<Stmt>,
    pub origin: LoopOrigin,
    /// Scheduling annotations (set by `atl-lower`'s annotation pass,
    /// `lower/src/annotate.rs`); they never change the meaning. `parallel`:
    /// iterations may run on different threads (`omp parallel for`); `vector`:
    /// iterations may run in SIMD lanes (`omp simd`); `unroll`: a small constant trip
    /// count worth unrolling.
    pub parallel: bool,
    pub vector: bool,
    pub unroll: bool,
    /// Only on a `parallel` loop whose body is exactly one more loop: the two loops'
    /// iterations are shared among the threads together (`omp … collapse(2)`), so the
    /// inner loop's iterations run in parallel too (set by `atl-lower`'s annotation
    /// pass, after placement; printed `collapse`).
    pub collapse: bool,
    /// Heap buffers declared, not yet allocated, in a block around this loop and freed
    /// after it: the [`Stmt::Alloc`]s of its body whose storage is
    /// [`Storage::Hoisted`] naming this loop allocate them at their first execution
    /// and reuse them after (placed by `atl-lower`'s placement pass). When the loop
    /// is `parallel`, every thread has buffers of its own: the block is a parallel
    /// region (`omp parallel`) and the loop its worksharing loop (`omp for`).
    pub hoisted_buffers: Vec<String>,
}

/// Where the memory of a [`Stmt::Alloc`] comes from (decided by `atl-lower`'s
/// placement pass). Whichever it is, the buffer is fresh for every execution of the
/// `Alloc`, uninitialized or zeroed: only the cost differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Storage {
    /// Heap memory allocated when the `Alloc` starts and freed when it ends (what
    /// lowering produces, before placement).
    Heap,
    /// A stack array; the length is a constant.
    Stack,
    /// The heap buffer of the same name declared by the enclosing loop over
    /// `loop_var` ([`For::hoisted_buffers`]): allocated at the first execution of the
    /// `Alloc`, reused (and zeroed again, when zeroed) by the later ones.
    /// `per_thread`: that loop is parallel and every thread has its own buffer.
    Hoisted { loop_var: String, per_thread: bool },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `for (var = lo; var < hi; var++) body`; the bounds are evaluated once.
    For(For),
    If {
        cond: Cond,
        then_branch: Vec<Stmt>,
        else_branch: Vec<Stmt>,
    },
    /// A buffer of `len` elements live for `body` (zeroed or uninitialized), held in
    /// `storage`.
    Alloc {
        buf: String,
        shape: Vec<IndexExpr>,
        len: Ix,
        zeroed: bool,
        storage: Storage,
        /// `Some(F)`: the buffer's first dimension is folded (Halide's storage
        /// folding): the element at coordinates `(c0, c1, …)` of `shape` is stored
        /// where a `[F, shape[1], …]` buffer has `(c0 % F, c1, …)`, and `len` is that
        /// buffer's length. Accesses keep the coordinates in `shape`; their flat index
        /// is the folded one ([`fold_flat`]). Rows `F` apart share memory: the
        /// validator proves no row is overwritten before its last read.
        fold: Option<i64>,
        body: Vec<Stmt>,
    },
    /// A scalar temporary, live until the end of the enclosing block.
    Decl { name: String, init: Option<Val> },
    /// `name = value` or `name += value`.
    SetScalar {
        name: String,
        op: StoreOp,
        value: Val,
    },
    /// `buf[index] = value` or `+=`, with the coordinates the index flattens.
    Store {
        buf: String,
        index: Ix,
        coords: Vec<Coord>,
        op: StoreOp,
        value: Val,
    },
    /// `buf[0..len] = value`.
    Fill { buf: String, len: Ix, value: f64 },
    /// The kernel records that a value read from the index array `array` broke the
    /// array's declaration (an [`BufferDecl::checked_where_read`] array), goes on, and
    /// returns the array's status at the end (the output's contents are then
    /// unspecified). Reads and writes no buffer.
    Fail { array: String },
}

impl Stmt {
    /// Visits this statement and every statement nested in it, in order.
    pub fn walk(&self, f: &mut dyn FnMut(&Stmt)) {
        f(self);
        match self {
            Stmt::For(l) => l.body.iter().for_each(|s| s.walk(f)),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                then_branch.iter().for_each(|s| s.walk(f));
                else_branch.iter().for_each(|s| s.walk(f));
            }
            Stmt::Alloc { body, .. } => body.iter().for_each(|s| s.walk(f)),
            _ => {}
        }
    }

    /// [`Stmt::walk`], with each statement mutable (visited before the statements
    /// nested in it).
    pub fn walk_mut(&mut self, f: &mut dyn FnMut(&mut Stmt)) {
        f(self);
        match self {
            Stmt::For(l) => l.body.iter_mut().for_each(|s| s.walk_mut(f)),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                then_branch.iter_mut().for_each(|s| s.walk_mut(f));
                else_branch.iter_mut().for_each(|s| s.walk_mut(f));
            }
            Stmt::Alloc { body, .. } => body.iter_mut().for_each(|s| s.walk_mut(f)),
            _ => {}
        }
    }

    /// Visits every node of the scalar values held directly by this statement (not
    /// nested statements): a declaration's initial value, a stored value.
    pub fn visit_own_vals(&self, f: &mut dyn FnMut(&Val)) {
        match self {
            Stmt::Decl { init: Some(v), .. }
            | Stmt::SetScalar { value: v, .. }
            | Stmt::Store { value: v, .. } => v.visit(f),
            _ => {}
        }
    }

    /// [`Stmt::visit_own_vals`], mutable.
    pub fn visit_own_vals_mut(&mut self, f: &mut dyn FnMut(&mut Val)) {
        match self {
            Stmt::Decl { init: Some(v), .. }
            | Stmt::SetScalar { value: v, .. }
            | Stmt::Store { value: v, .. } => v.visit_mut(f),
            _ => {}
        }
    }

    /// Visits every load of a buffer element in the values held directly by this
    /// statement.
    pub fn visit_own_loads(&self, f: &mut dyn FnMut(&Load)) {
        self.visit_own_vals(&mut |v| {
            if let Val::Load(l) = v {
                f(l);
            }
        });
    }

    /// [`Stmt::visit_own_loads`], mutable.
    pub fn visit_own_loads_mut(&mut self, f: &mut dyn FnMut(&mut Load)) {
        self.visit_own_vals_mut(&mut |v| {
            if let Val::Load(l) = v {
                f(l);
            }
        });
    }

    /// Visits every index expression held directly by this statement (not nested
    /// statements): loop bounds, conditions, store and load indices, lengths.
    pub fn visit_own_ix(&self, f: &mut dyn FnMut(&Ix)) {
        let val = |v: &Val, f: &mut dyn FnMut(&Ix)| {
            v.visit(&mut |n| match n {
                Val::Load(l) => f(&l.index),
                Val::Coord(ix) => f(ix),
                Val::Select(c, _) | Val::Blend(c, _) => c.visit_ix(f),
                _ => {}
            })
        };
        match self {
            Stmt::For(l) => {
                f(&l.lo);
                f(&l.hi);
            }
            Stmt::If { cond, .. } => cond.visit_ix(f),
            Stmt::Alloc { len, .. } => f(len),
            Stmt::Decl { init, .. } => {
                if let Some(v) = init {
                    val(v, f);
                }
            }
            Stmt::SetScalar { value, .. } => val(value, f),
            Stmt::Store { index, value, .. } => {
                f(index);
                val(value, f);
            }
            Stmt::Fill { len, .. } => f(len),
            Stmt::Fail { .. } => {}
        }
    }
}

impl Kernel {
    /// Visits every statement of the body.
    pub fn walk(&self, f: &mut dyn FnMut(&Stmt)) {
        for s in &self.body {
            s.walk(f);
        }
    }

    /// Whether the body allocates.
    pub fn allocates(&self) -> bool {
        let mut found = false;
        self.walk(&mut |s| found |= matches!(s, Stmt::Alloc { .. }));
        found
    }
}
