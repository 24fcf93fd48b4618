//! The obligations of a kernel, collected by walking it: for every access, its bounds
//! per dimension and its flattening; for every C `/` and `%`, its natural-number side
//! condition; for every allocation and fill, its length; and well-formedness (every
//! name bound, every access of a buffer in scope with one coordinate per dimension,
//! no store to an input).
//!
//! Each obligation carries its context: the sizes (each `>= 1`), the kernel's
//! preconditions in the target's own arithmetic (what the C kernel checks on entry),
//! the ranges of the enclosing loops, the conditions of the enclosing `if`s (negated
//! in an `else`) and of the enclosing `select`s — but not of a `blend`, whose value is
//! evaluated whatever its condition. An assignment satisfying the context is therefore
//! a point the kernel reaches, and a counterexample is a real faulty execution.
//!
//! Extents are always the buffer's *declared* shape (the kernel's input and output
//! declarations, an `alloc`'s shape), never the extents an access records: those are
//! claims of the lowering, checked against the declaration by their own obligation.

use std::fmt;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_loopir::ir::{Coord, Ix, Kernel, Stmt, StoreOp, Val};
use atl_solver::{Facts, IndexArrayFacts};

use crate::int64::Evaluation;
use crate::sites::{Binding, BindingRole, LoopRef, Path, Site};
use crate::term::Term;
use crate::translate::{Scope, Translation};

/// Which memory operation an obligation is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    Load,
    Store,
    /// A read of a scalar temporary (only in race obligations).
    ScalarRead,
    /// An assignment of a scalar temporary (only in race obligations).
    ScalarWrite,
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessKind::Load => "load",
            AccessKind::Store => "store",
            AccessKind::ScalarRead => "scalar read",
            AccessKind::ScalarWrite => "scalar write",
        })
    }
}

/// One access: which operation, on which buffer, and its ordinal among the kernel's
/// accesses of that kind (in the order of a depth-first walk, from 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub kind: AccessKind,
    pub buffer: String,
    pub ordinal: usize,
    /// The access as printed (`o[i*m + j] @ (i, j)`).
    pub text: String,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} #{} `{}`", self.kind, self.ordinal, self.text)
    }
}

/// What an obligation states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObligationKind {
    /// (a) `0 <= coordinate < declared extent` in dimension `dim`.
    Bounds { access: Access, dim: usize },
    /// The extent an access records in dimension `dim` is the declared one.
    RecordedExtent { access: Access, dim: usize },
    /// (b) the flat index is the row-major position of the coordinates in the
    /// declared shape.
    Flattening { access: Access },
    /// A C `/` or `%` (the loop IR's `DivNat`/`ModNat`) has a numerator `>= 0` and a
    /// divisor `>= 1`, so it equals the floor operation it is translated to.
    NaturalDivision { operation: String },
    /// A read `pos[e]` of an index array in an index expression is inside the array:
    /// `0 <= e < extent`.
    IndexArrayRead { read: String },
    /// A value read from an index array checked where read
    /// ([`atl_loopir::ir::BufferDecl::checked_where_read`]) is inside the declared
    /// range wherever the kernel evaluates it: under the checks around it (proved
    /// without assuming the declaration), or, read by a check's own condition, when
    /// that condition holds.
    CheckedWhereRead { read: String },
    /// A check of index arrays (an `if` whose `else` only records failures) holds on
    /// every input that satisfies the declarations: a validated kernel never fails a
    /// valid call.
    CheckHolds { check: String },
    /// An `alloc`'s length is the number of elements of its declared shape.
    AllocLength { buffer: String },
    /// (j) An `int64_t` expression the C evaluates (`expr`, translated) and each of
    /// its intermediate results fit in `int64_t` ([`crate::int64`]).
    Int64 { what: String, expr: String },
    /// A fill `buf[0..len]` stays within the buffer.
    FillLength { buffer: String },
    /// Something that must not happen at all (an unbound name, an access to no
    /// buffer or with the wrong number of coordinates, a store to an input): the goal
    /// is `false`, so it is proved only where the context is unreachable.
    WellFormed { problem: String },
    /// A name of the kernel is reserved in C or is no C identifier
    /// ([`crate::names`]): the goal is `false`, as for [`ObligationKind::WellFormed`].
    CName { problem: String },
    /// No race: two different iterations of the `parallel` or `vector` loop over
    /// `loop_var` never touch the same element of a buffer (or the same scalar) that
    /// outlives an iteration, when one of them (`write`) writes it. The goal is "the
    /// coordinates differ" (`false` for a scalar) under the contexts of both
    /// operations, each with its own copy of the loop variables from `loop_var` in
    /// (suffixed `#1` and `#2`), and `loop_var#1 != loop_var#2`.
    Race {
        loop_var: String,
        write: Access,
        other: Access,
    },
    /// No double write: two executions of assignment stores (`=`) — two stores, or
    /// one store at two different iteration points — never write the same element
    /// within one lifetime of the buffer (the kernel's run for the output, one
    /// execution of the `alloc` for a temporary).
    DoubleWrite { first: Access, second: Access },
    /// A folded buffer's rows are not overwritten before they are read
    /// ([`crate::folding`]): when `first` writes before `second` reads (`reads`), its
    /// row is below the read's plus the fold; when before `second` writes, the later
    /// row is above the earlier minus the fold.
    Folding {
        first: Access,
        second: Access,
        reads: bool,
    },
    /// Coverage: every element of the buffer (the output) is written by an assignment
    /// store or a fill. The goal is a disjunction, over the candidate writes, of "this
    /// write's loops, at the iteration computed from the coordinate (the witness),
    /// reach it and write that coordinate" (see [`crate::coverage`]).
    Coverage { buffer: String },
    /// Reads after writes ([`crate::reads`]): the element a read reads, or a `+=`
    /// accumulates into, was assigned (by `=`, a fill, a scalar's declaration) earlier
    /// in the same lifetime of its buffer — for a scalar `+=`, in the same iteration of
    /// every non-`sum` loop around it inside the scalar's scope. The goal is a
    /// disjunction, over the assignments that precede the access in program order, of
    /// "this assignment, at the iteration computed from the element (the witness),
    /// runs and writes it".
    Initialised { access: Access },
    /// The value check ([`crate::values`]): the element `write` assigns to the output
    /// ends with the source definition's value there.
    Value { write: String },
    /// A declaration of the kernel is the source's: the shape of an input or the output, an
    /// index array's declaration, an input's storage order (`what` says which).
    SourceShape { what: String },
    /// A precondition's statement (`pred`, what the header and the bindings show and
    /// check) is equivalent to the condition the C checks (`cond`).
    PreconditionText { pred: String, cond: String },
    /// A precondition of the kernel holds wherever the program's declarations do (an
    /// index-range one: it has the form `size <= bound` with a large bound).
    /// `index_range`: the least bound such a precondition may set.
    Precondition {
        text: String,
        index_range: Option<i64>,
    },
}

impl fmt::Display for ObligationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObligationKind::Bounds { access, dim } => {
                write!(f, "bounds of {access}, dimension {dim}")
            }
            ObligationKind::RecordedExtent { access, dim } => {
                write!(f, "recorded extent of {access}, dimension {dim}")
            }
            ObligationKind::Flattening { access } => write!(f, "flattening of {access}"),
            ObligationKind::NaturalDivision { operation } => {
                write!(f, "C division `{operation}` on naturals")
            }
            ObligationKind::IndexArrayRead { read } => {
                write!(f, "read `{read}` inside its index array")
            }
            ObligationKind::CheckedWhereRead { read } => {
                write!(f, "value `{read}` checked before it is used")
            }
            ObligationKind::CheckHolds { check } => {
                write!(f, "check `{check}` holds on valid inputs")
            }
            ObligationKind::AllocLength { buffer } => write!(f, "length of alloc `{buffer}`"),
            ObligationKind::Int64 { what, expr } => {
                write!(f, "fits in int64_t: the {what}, `{expr}`")
            }
            ObligationKind::FillLength { buffer } => write!(f, "length of fill of `{buffer}`"),
            ObligationKind::WellFormed { problem } => write!(f, "well-formed: {problem}"),
            ObligationKind::Folding {
                first,
                second,
                reads: true,
            } => write!(
                f,
                "folding: a row {first} writes before {second} reads is less than a fold above the row read"
            ),
            ObligationKind::Folding {
                first,
                second,
                reads: false,
            } => write!(
                f,
                "folding: a row {second} writes after {first} is more than a fold below the row written first"
            ),
            ObligationKind::CName { problem } => write!(f, "a C name: {problem}"),
            ObligationKind::Race {
                loop_var,
                write,
                other,
            } => write!(
                f,
                "no race in loop `{loop_var}` between {write} and {other}"
            ),
            ObligationKind::DoubleWrite { first, second } => {
                if first == second {
                    write!(f, "no double write by {first}")
                } else {
                    write!(f, "no double write by {first} and {second}")
                }
            }
            ObligationKind::Coverage { buffer } => {
                write!(f, "coverage: every element of `{buffer}` is written")
            }
            ObligationKind::Initialised { access } => {
                write!(f, "initialised before {access}")
            }
            ObligationKind::Precondition { text, index_range } => {
                if let Some(least) = index_range {
                    write!(
                        f,
                        "the index-range precondition `{text}` bounds one size by at least {least}"
                    )
                } else {
                    write!(
                        f,
                        "the precondition `{text}` holds wherever the program is defined"
                    )
                }
            }
            ObligationKind::PreconditionText { pred, cond } => write!(
                f,
                "the precondition `{pred}` is the condition the kernel checks, `{cond}`"
            ),
            ObligationKind::SourceShape { what } => write!(f, "{what} is the source's"),
            ObligationKind::Value { write } => {
                write!(f, "value: the element {write} writes is the source's")
            }
        }
    }
}

/// A goal to prove under a context.
#[derive(Clone, Debug, PartialEq)]
pub struct Obligation {
    pub kind: ObligationKind,
    /// Where in the kernel (`for i > for j > if`).
    pub location: String,
    pub context: Facts,
    pub goal: Pred,
    /// A sufficient condition that is easier for the solver, tried first (see
    /// [`Lemma`]); the obligation itself is what a counterexample refutes.
    pub lemma: Option<Lemma>,
}

/// A claim that implies an obligation: proved, it proves the obligation; unproved, it
/// says nothing (the obligation is then decided on its own). The race and
/// double-write obligations of one store against itself use it: "the coordinates
/// determine the loop variables" (each variable equals a function of the coordinates,
/// the witness of [`crate::coverage`]) is a query over one copy of the context, where
/// the obligation needs two.
#[derive(Clone, Debug, PartialEq)]
pub struct Lemma {
    pub context: Facts,
    pub goal: Pred,
}

impl fmt::Display for Obligation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.goal)?;
        if !self.location.is_empty() {
            write!(f, " [in {}]", self.location)?;
        }
        Ok(())
    }
}

/// Who a buffer in scope is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Input,
    Output,
    Temporary,
}

struct Buffer {
    name: String,
    /// The declared shape, in the solver's names.
    shape: Vec<IndexExpr>,
    role: Role,
    /// Index into `Collector::bindings`.
    binding: usize,
    /// An input's storage order ([`atl_loopir::ir::BufferDecl::order`]).
    order: Option<Vec<usize>>,
}

/// What one walk of a kernel finds: the obligations about single operations (bounds,
/// flattening, divisions, lengths, well-formedness), and the accesses with their
/// contexts for the obligations that relate several ([`crate::interference`],
/// [`crate::coverage`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Walk {
    pub obligations: Vec<Obligation>,
    pub sites: Vec<Site>,
    pub bindings: Vec<Binding>,
    /// The output's index in `bindings`.
    pub output: usize,
    pub sizes: Vec<String>,
    /// The preconditions, in the solver's terms (the start of every site's facts).
    pub preconditions: Vec<Pred>,
    /// Fills: (binding, length, context, location).
    pub fills: Vec<Fill>,
    /// The initialisations of scalars by their declaration (`double s = v;`), as
    /// assignment writes: kept apart from `sites`, whose writes are statements.
    pub scalar_inits: Vec<Site>,
    /// Every `int64_t` expression the C evaluates ([`crate::int64`]).
    pub evaluations: Vec<Evaluation>,
    /// The declarations of the kernel's index arrays (facts for their loads; the
    /// kernel checks them, and they are the program's, `shape_obligations`): for what
    /// is claimed of valid inputs only (values, coverage, reads after writes).
    pub arrays: Vec<IndexArrayFacts>,
    /// What holds of the index arrays on every input ([`safety_arrays`]): for what
    /// is claimed of every input (no race, no overflow).
    pub safety_arrays: Vec<IndexArrayFacts>,
}

/// A `fill` of a buffer in scope.
#[derive(Clone, Debug, PartialEq)]
pub struct Fill {
    pub binding: usize,
    pub len: IndexExpr,
    /// The value every element gets.
    pub value: f64,
    pub facts: Vec<Pred>,
    pub loops: Vec<LoopRef>,
    pub path: Path,
}

/// Every obligation of `kernel`: those of single operations in the order of a
/// depth-first walk, then the races ([`crate::interference::races`]) and the double
/// writes ([`crate::interference::double_writes`]). Coverage, whose discharge is not
/// a single query, is [`crate::coverage::check`].
pub fn collect(kernel: &Kernel) -> Vec<Obligation> {
    let w = walk(kernel);
    let mut out = w.obligations.clone();
    out.extend(crate::interference::races(&w));
    out.extend(crate::interference::double_writes(&w));
    out
}

/// Walks `kernel` once: the obligations of single operations, and the sites.
pub fn walk(kernel: &Kernel) -> Walk {
    let mut c = Collector {
        scope: Scope::new(&kernel.sizes)
            .with_arrays(
                kernel
                    .inputs
                    .iter()
                    .filter(|b| b.index_array.is_some())
                    .filter_map(|b| Some((b.name.clone(), b.shape.first()?.clone())))
                    .collect(),
            )
            .with_checked_where_read(
                index_arrays(kernel)
                    .into_iter()
                    .filter(|a| checked_where_read(kernel, &a.name))
                    .map(|a| (a.name, a.lo, a.hi))
                    .collect(),
            ),
        sizes: kernel.sizes.clone(),
        // Every obligation of the walk is one of safety, proved for every input.
        arrays: safety_arrays(kernel),
        declared: index_arrays(kernel),
        facts: Vec::new(),
        buffers: Vec::new(),
        path: Vec::new(),
        out: Vec::new(),
        loads: 0,
        stores: 0,
        scalar_reads: 0,
        scalar_writes: 0,
        loops: Vec::new(),
        next_loop: 0,
        bindings: Vec::new(),
        scalars: Vec::new(),
        sites: Vec::new(),
        fills: Vec::new(),
        scalar_inits: Vec::new(),
        order: Vec::new(),
        next_block: 0,
        blends: 0,
        collapsed_inner: false,
        int64: atl_loopir::int64::Env::new(kernel),
        evaluations: Vec::new(),
    };
    // Preconditions, left to right as C checks them: each one's side conditions under
    // the earlier ones, then it joins the context.
    for pre in &kernel.preconditions {
        let mut t = Translation::default();
        let p = t.cond(&c.scope, &Pred::Bool(true), &pre.cond);
        c.finish(t, "precondition");
        c.int64.assume(&pre.cond);
        c.facts.push(p);
    }
    // The index arrays' entry checks evaluate their extents and ranges (over the
    // sizes) after the preconditions; the C derives them from the declarations that
    // `shape_obligations` ties to the program's.
    for check in kernel.array_checks() {
        let Some(check) = check else {
            c.push(
                ObligationKind::WellFormed {
                    problem: "an index array's declaration has no entry check".to_string(),
                },
                &Pred::Bool(true),
                Pred::Bool(false),
            );
            continue;
        };
        let mut t = Translation::default();
        for ix in [&check.len, &check.lo, &check.hi] {
            t.ix(&c.scope, &Pred::Bool(true), ix);
        }
        c.finish(
            t,
            &format!("entry check of the index array `{}`", check.buf),
        );
    }
    // Only a range can be checked where read: an order needs the whole array.
    for b in &kernel.inputs {
        if b.checked_where_read && b.index_array.as_ref().is_none_or(|a| a.sorted) {
            c.push(
                ObligationKind::WellFormed {
                    problem: format!(
                        "`{}` is checked where read but is no unsorted index array",
                        b.name
                    ),
                },
                &Pred::Bool(true),
                Pred::Bool(false),
            );
        }
    }
    for (decl, role) in kernel
        .inputs
        .iter()
        .map(|d| (d, Role::Input))
        .chain(std::iter::once((&kernel.output, Role::Output)))
    {
        let mut t = Translation::default();
        let shape: Vec<IndexExpr> = decl.shape.iter().map(|e| t.index(&c.scope, e)).collect();
        c.finish(t, &format!("shape of `{}`", decl.name));
        let binding = c.bind(
            &decl.name,
            if role == Role::Input {
                BindingRole::Input
            } else {
                BindingRole::Output
            },
            shape.clone(),
            false,
        );
        c.buffers.push(Buffer {
            name: decl.name.clone(),
            shape,
            role,
            binding,
            order: decl.order.clone(),
        });
    }
    let preconditions = c.facts.clone();
    let output = c.buffers.last().map_or(0, |b| b.binding);
    c.block(&kernel.body);
    Walk {
        obligations: c.out,
        sites: c.sites,
        bindings: c.bindings,
        output,
        sizes: kernel.sizes.clone(),
        preconditions,
        fills: c.fills,
        scalar_inits: c.scalar_inits,
        evaluations: c.evaluations,
        arrays: index_arrays(kernel),
        safety_arrays: c.arrays,
    }
}

/// Whether the kernel checks the index array `name` where it reads it.
pub fn checked_where_read(kernel: &Kernel, name: &str) -> bool {
    kernel
        .inputs
        .iter()
        .any(|b| b.name == name && b.index_array.is_some() && b.checked_where_read)
}

/// What holds of the kernel's index arrays on every input: the declarations of those
/// checked on entry (the kernel returns before the body otherwise), and for one
/// checked where read, only what its C type guarantees (`int32_t`). That such an
/// array's values are in range where they are used is proved at each use
/// ([`ObligationKind::CheckedWhereRead`]).
pub fn safety_arrays(kernel: &Kernel) -> Vec<IndexArrayFacts> {
    index_arrays(kernel)
        .into_iter()
        .map(|mut a| {
            if checked_where_read(kernel, &a.name) {
                a.lo = IndexExpr::Const(i64::from(i32::MIN));
                a.hi = IndexExpr::Const(i64::from(i32::MAX) + 1);
            }
            a
        })
        .collect()
}

/// The solver's facts about the kernel's index arrays: their declarations.
pub fn index_arrays(kernel: &Kernel) -> Vec<IndexArrayFacts> {
    kernel
        .inputs
        .iter()
        .filter_map(|b| {
            let a = b.index_array.as_ref()?;
            Some(IndexArrayFacts {
                name: b.name.clone(),
                len: b.shape.first()?.clone(),
                lo: a.lo.clone(),
                hi: a.hi.clone(),
                sorted: a.sorted,
            })
        })
        .collect()
}

struct Collector {
    scope: Scope,
    sizes: Vec<String>,
    /// What holds of the index arrays on every input ([`safety_arrays`]).
    arrays: Vec<IndexArrayFacts>,
    /// Their declarations ([`index_arrays`]), for [`ObligationKind::CheckHolds`].
    declared: Vec<IndexArrayFacts>,
    /// The context: preconditions, loop ranges, `if` conditions.
    facts: Vec<Pred>,
    buffers: Vec<Buffer>,
    path: Vec<String>,
    out: Vec<Obligation>,
    loads: usize,
    stores: usize,
    scalar_reads: usize,
    scalar_writes: usize,
    /// The enclosing loops, outermost first.
    loops: Vec<LoopRef>,
    next_loop: usize,
    bindings: Vec<Binding>,
    /// Scalars in scope: (name, binding), innermost last.
    scalars: Vec<(String, usize)>,
    sites: Vec<Site>,
    fills: Vec<Fill>,
    scalar_inits: Vec<Site>,
    /// The program-order position of the statement being walked.
    order: Path,
    next_block: usize,
    /// How many `blend`s the value being walked is in.
    blends: usize,
    /// The loop about to be walked is the inner loop of a `collapse`d parallel loop:
    /// its iterations run in parallel too.
    collapsed_inner: bool,
    /// The interval and magnitude analysis at the statement being walked.
    int64: atl_loopir::int64::Env,
    evaluations: Vec<Evaluation>,
}

/// `a && b`, dropping a `true`.
fn conj(a: &Pred, b: Pred) -> Pred {
    match (a, &b) {
        (Pred::Bool(true), _) => b,
        (_, Pred::Bool(true)) => a.clone(),
        _ => Pred::and(a.clone(), b),
    }
}

fn le(a: IndexExpr, b: IndexExpr) -> Pred {
    Pred::cmp(CmpOp::Le, a, b)
}

fn lt(a: IndexExpr, b: IndexExpr) -> Pred {
    Pred::cmp(CmpOp::Lt, a, b)
}

/// The number of elements of a shape (`1` for rank 0).
fn numel(shape: &[IndexExpr]) -> IndexExpr {
    shape
        .iter()
        .cloned()
        .reduce(|a, b| IndexExpr::bin(IndexOp::Mul, a, b))
        .unwrap_or(IndexExpr::Const(1))
}

impl Collector {
    fn location(&self) -> String {
        self.path.join(" > ")
    }

    /// An obligation under the current context and `guard`, for every input.
    fn push(&mut self, kind: ObligationKind, guard: &Pred, goal: Pred) {
        self.push_with(kind, guard, goal, self.arrays.clone());
    }

    /// An obligation under the current context and `guard`, with `arrays` for facts
    /// about the index arrays.
    fn push_with(
        &mut self,
        kind: ObligationKind,
        guard: &Pred,
        goal: Pred,
        arrays: Vec<IndexArrayFacts>,
    ) {
        let mut facts = self.facts.clone();
        if *guard != Pred::Bool(true) {
            facts.push(guard.clone());
        }
        self.out.push(Obligation {
            kind,
            location: self.location(),
            context: Facts {
                sizes: self.sizes.clone(),
                facts,
                arrays,
            },
            goal,
            lemma: None,
        });
    }

    /// The obligations a translation left: side conditions, unbound names, and the
    /// expressions the C evaluates.
    fn finish(&mut self, t: Translation, what: &str) {
        for ev in t.evaluated {
            let by_magnitude = self.int64.fits(&ev.ix);
            self.evaluations.push(Evaluation {
                what: what.to_string(),
                expr: ev.expr,
                facts: self.context(&ev.guard),
                location: self.location(),
                by_magnitude,
            });
        }
        for sc in t.side_conditions {
            self.push(
                ObligationKind::NaturalDivision {
                    operation: sc.operation,
                },
                &sc.guard,
                sc.goal,
            );
        }
        for sc in t.array_reads {
            self.push(
                ObligationKind::IndexArrayRead { read: sc.operation },
                &sc.guard,
                sc.goal,
            );
        }
        for sc in t.checked_reads {
            self.push(
                ObligationKind::CheckedWhereRead { read: sc.operation },
                &sc.guard,
                sc.goal,
            );
        }
        for name in t.unbound {
            self.push(
                ObligationKind::WellFormed {
                    problem: format!("`{name}` in the {what} is bound by nothing"),
                },
                &Pred::Bool(true),
                Pred::Bool(false),
            );
        }
    }

    fn ix(&mut self, guard: &Pred, ix: &Ix, what: &str) -> IndexExpr {
        let mut t = Translation::default();
        let e = t.ix(&self.scope, guard, ix);
        self.finish(t, what);
        e
    }

    fn block(&mut self, stmts: &[Stmt]) {
        // A scalar lives until the end of the block that declares it.
        let scalars = self.scalars.len();
        let block = self.next_block;
        self.next_block += 1;
        for (index, s) in stmts.iter().enumerate() {
            self.order.push((block, index));
            self.stmt(s);
            self.order.pop();
        }
        self.scalars.truncate(scalars);
    }

    fn bind(
        &mut self,
        name: &str,
        role: BindingRole,
        shape: Vec<IndexExpr>,
        zeroed: bool,
    ) -> usize {
        self.bindings.push(Binding {
            name: name.to_string(),
            role,
            shape,
            loops: self.loops.clone(),
            zeroed,
            fold: None,
        });
        self.bindings.len() - 1
    }

    /// The context of an operation evaluated under `guard`.
    fn context(&self, guard: &Pred) -> Vec<Pred> {
        let mut facts = self.facts.clone();
        if *guard != Pred::Bool(true) {
            facts.push(guard.clone());
        }
        facts
    }

    /// Records a read (`op` is `None`) or a write of the scalar `name`; the site's index,
    /// or `None` when no scalar of that name is in scope.
    fn scalar_site(
        &mut self,
        name: &str,
        op: Option<StoreOp>,
        guard: &Pred,
        value: Option<Term>,
    ) -> Option<usize> {
        let &(_, binding) = self.scalars.iter().rev().find(|(n, _)| n == name)?;
        let (kind, ordinal) = if op.is_some() {
            self.scalar_writes += 1;
            (AccessKind::ScalarWrite, self.scalar_writes - 1)
        } else {
            self.scalar_reads += 1;
            (AccessKind::ScalarRead, self.scalar_reads - 1)
        };
        self.sites.push(Site {
            access: Access {
                kind,
                buffer: name.to_string(),
                ordinal,
                text: name.to_string(),
            },
            op,
            binding,
            coords: Vec::new(),
            facts: self.context(guard),
            loops: self.loops.clone(),
            location: self.location(),
            path: self.order.clone(),
            discarded: self.blends > 0,
            value,
        });
        Some(self.sites.len() - 1)
    }

    fn stmt(&mut self, s: &Stmt) {
        let yes = Pred::Bool(true);
        match s {
            Stmt::For(l) => {
                let collapsed = std::mem::replace(&mut self.collapsed_inner, false);
                // OpenMP's `collapse(2)` needs the two loops perfectly nested with
                // nothing between them, not even the inner loop's own pragma (GCC:
                // "not enough perfectly nested loops"): the inner loop carries no
                // annotation and declares no hoisted buffers.
                let perfect = matches!(l.body.as_slice(), [Stmt::For(inner)]
                    if !inner.lo.mentions(&l.var) && !inner.hi.mentions(&l.var)
                        && !inner.parallel && !inner.vector && !inner.unroll
                        && !inner.collapse && inner.hoisted_buffers.is_empty());
                if l.collapse && !(l.parallel && perfect) {
                    self.push(
                        ObligationKind::WellFormed {
                            problem: format!(
                                "loop `{}` is collapsed but is not a parallel loop around exactly \
                                 one loop with bounds independent of it and no annotation or \
                                 hoisted buffer of its own",
                                l.var
                            ),
                        },
                        &yes,
                        Pred::Bool(false),
                    );
                }
                let lo = self.ix(&yes, &l.lo, &format!("lower bound of loop `{}`", l.var));
                let hi = self.ix(&yes, &l.hi, &format!("upper bound of loop `{}`", l.var));
                if let Some(count) = atl_loopir::int64::collapsed_count(l) {
                    let what = format!("iteration count of the loops collapsed at `{}`", l.var);
                    self.ix(&yes, &count, &what);
                }
                let var = self.scope.bind(&l.var);
                self.int64.push_loop(l);
                let v = IndexExpr::var(var.clone());
                self.facts
                    .push(Pred::and(le(lo.clone(), v.clone()), lt(v, hi.clone())));
                self.path.push(format!("for {var}"));
                self.loops.push(LoopRef {
                    id: self.next_loop,
                    kernel_var: l.var.clone(),
                    var: var.clone(),
                    lo,
                    hi,
                    origin: l.origin,
                    parallel: l.parallel || collapsed,
                    vector: l.vector,
                    collapsed_inner: collapsed,
                });
                self.next_loop += 1;
                self.collapsed_inner = l.collapse;
                self.block(&l.body);
                self.collapsed_inner = false;
                self.int64.pop_loop();
                self.loops.pop();
                self.path.pop();
                self.facts.pop();
                self.scope.unbind();
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let mut t = Translation::default();
                let c = t.cond(&self.scope, &yes, cond);
                // A check (its `else` only records failures): the values it reads
                // from arrays checked where read must be in range when it passes,
                // and it must pass on valid inputs.
                let check = !else_branch.is_empty()
                    && else_branch.iter().all(|s| matches!(s, Stmt::Fail { .. }));
                if check {
                    for sc in &mut t.checked_reads {
                        sc.guard = c.clone();
                    }
                    self.push_with(
                        ObligationKind::CheckHolds {
                            check: atl_loopir::print::cond_to_string(cond),
                        },
                        &yes,
                        c.clone(),
                        self.declared.clone(),
                    );
                }
                self.finish(t, "condition");
                self.facts.push(c.clone());
                self.path.push(format!("if {c}"));
                self.block(then_branch);
                self.path.pop();
                self.facts.pop();
                if !else_branch.is_empty() {
                    self.facts.push(Pred::not(c.clone()));
                    self.path.push(format!("else of if {c}"));
                    self.block(else_branch);
                    self.path.pop();
                    self.facts.pop();
                }
            }
            Stmt::Alloc {
                buf,
                shape,
                len,
                body,
                storage,
                zeroed,
                fold,
            } => {
                let raw_shape = shape;
                let mut t = Translation::default();
                let shape: Vec<IndexExpr> = shape.iter().map(|e| t.index(&self.scope, e)).collect();
                self.finish(t, &format!("shape of `{buf}`"));
                let len = self.ix(&yes, len, "allocation length");
                // A folded buffer holds `fold` rows.
                let stored: Vec<IndexExpr> = match fold {
                    Some(f) => std::iter::once(IndexExpr::Const(*f))
                        .chain(shape.iter().skip(1).cloned())
                        .collect(),
                    None => shape.clone(),
                };
                self.push(
                    ObligationKind::AllocLength {
                        buffer: buf.clone(),
                    },
                    &yes,
                    Pred::cmp(CmpOp::Eq, len, numel(&stored)),
                );
                let binding = self.bind(
                    buf,
                    BindingRole::Temporary(storage.clone()),
                    shape.clone(),
                    *zeroed,
                );
                self.bindings[binding].fold = *fold;
                self.buffers.push(Buffer {
                    name: buf.clone(),
                    shape,
                    role: Role::Temporary,
                    binding,
                    order: None,
                });
                self.path.push(format!("alloc {buf}"));
                self.int64.push_alloc(raw_shape);
                self.block(body);
                self.int64.pop_alloc();
                self.path.pop();
                self.buffers.pop();
            }
            Stmt::Decl { name, init } => {
                let value = init.as_ref().map(|v| self.val(v, &yes));
                let binding = self.bind(name, BindingRole::Scalar, Vec::new(), false);
                self.scalars.push((name.clone(), binding));
                if init.is_some() {
                    self.scalar_inits.push(Site {
                        access: Access {
                            kind: AccessKind::ScalarWrite,
                            buffer: name.clone(),
                            ordinal: self.scalar_inits.len(),
                            text: format!("double {name} = ..."),
                        },
                        op: Some(StoreOp::Assign),
                        binding,
                        coords: Vec::new(),
                        facts: self.context(&yes),
                        loops: self.loops.clone(),
                        location: self.location(),
                        path: self.order.clone(),
                        discarded: self.blends > 0,
                        value,
                    });
                }
            }
            Stmt::SetScalar { name, op, value } => {
                let value = self.val(value, &yes);
                self.scalar_site(name, Some(*op), &yes, Some(value));
            }
            Stmt::Store {
                buf,
                index,
                coords,
                value,
                op,
            } => {
                let value = self.val(value, &yes);
                let access = Access {
                    kind: AccessKind::Store,
                    buffer: buf.clone(),
                    ordinal: self.stores,
                    text: access_text(buf, index, coords),
                };
                self.stores += 1;
                self.access(access, index, coords, &yes, Some((*op, value)));
            }
            Stmt::Fail { array } => {
                let problem = if !self.scope.is_checked_where_read(array) {
                    Some(format!(
                        "`fail {array}`, but `{array}` is no index array checked where read"
                    ))
                } else if self.loops.iter().any(|l| l.vector) {
                    Some(format!("`fail {array}` in a vector loop"))
                } else {
                    None
                };
                if let Some(problem) = problem {
                    self.push(
                        ObligationKind::WellFormed { problem },
                        &yes,
                        Pred::Bool(false),
                    );
                }
            }
            Stmt::Fill { buf, len, value } => {
                let len = self.ix(&yes, len, "fill length");
                if let Some(b) = self.buffer(buf) {
                    let fill = Fill {
                        binding: b.binding,
                        len: len.clone(),
                        value: *value,
                        facts: self.facts.clone(),
                        loops: self.loops.clone(),
                        path: self.order.clone(),
                    };
                    self.fills.push(fill);
                }
                let goal = match self.buffer(buf) {
                    Some(b) if b.role != Role::Input => Some(Pred::and(
                        le(IndexExpr::Const(0), len.clone()),
                        le(len, numel(&b.shape)),
                    )),
                    _ => None,
                };
                match goal {
                    Some(goal) => self.push(
                        ObligationKind::FillLength {
                            buffer: buf.clone(),
                        },
                        &yes,
                        goal,
                    ),
                    None => self.push(
                        ObligationKind::WellFormed {
                            problem: format!(
                                "fill of `{buf}`, which is no writable buffer in scope"
                            ),
                        },
                        &yes,
                        Pred::Bool(false),
                    ),
                }
            }
        }
    }

    /// The loads of a value; `guard` is what must hold for it to be evaluated. Returns
    /// the value as a [`Term`] in the solver's names: an input element for a load of an
    /// input, a [`Term::Read`] of the load's site for anything else, [`Term::Unknown`]
    /// for a read of nothing in scope (itself an obligation that fails).
    fn val(&mut self, v: &Val, guard: &Pred) -> Term {
        match v {
            Val::Lit(x) => Term::Lit(*x),
            Val::Coord(ix) => Term::Coord(self.ix(guard, ix, "coordinate used as a value")),
            Val::Scalar(name) => match self.scalar_site(name, None, guard, None) {
                Some(site) => Term::Read {
                    site,
                    subst: Default::default(),
                },
                None => Term::Unknown(format!("the scalar `{name}`, which is not in scope")),
            },
            Val::Load(l) => {
                let access = Access {
                    kind: AccessKind::Load,
                    buffer: l.buf.clone(),
                    ordinal: self.loads,
                    text: access_text(&l.buf, &l.index, &l.coords),
                };
                self.loads += 1;
                match self.access(access, &l.index, &l.coords, guard, None) {
                    Some(Accessed::Input(coords)) => Term::Input {
                        name: l.buf.clone(),
                        coords,
                    },
                    Some(Accessed::Site(site)) => Term::Read {
                        site,
                        subst: Default::default(),
                    },
                    None => Term::Unknown(format!("a load of `{}`, which is not in scope", l.buf)),
                }
            }
            Val::Neg(a) => Term::Neg(Box::new(self.val(a, guard))),
            Val::Call(func, args) => {
                Term::Call(*func, args.iter().map(|a| self.val(a, guard)).collect())
            }
            Val::Bin(op, a, b) => {
                let a = self.val(a, guard);
                let b = self.val(b, guard);
                Term::bin(*op, a, b)
            }
            Val::Select(c, a) => {
                let mut t = Translation::default();
                let p = t.cond(&self.scope, guard, c);
                self.finish(t, "select condition");
                let a = self.val(a, &conj(guard, p.clone()));
                Term::guarded(p, a)
            }
            Val::Blend(c, a) => {
                // The value is computed whatever the condition: it guards nothing.
                let mut t = Translation::default();
                let p = t.cond(&self.scope, guard, c);
                self.finish(t, "blend condition");
                self.blends += 1;
                let a = self.val(a, guard);
                self.blends -= 1;
                Term::guarded(p, a)
            }
        }
    }

    fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().rev().find(|b| b.name == name)
    }

    fn access(
        &mut self,
        access: Access,
        index: &Ix,
        coords: &[Coord],
        guard: &Pred,
        write: Option<(StoreOp, Term)>,
    ) -> Option<Accessed> {
        let flat = self.ix(guard, index, &format!("index of {access}"));
        let (shape, role, binding) = match self.buffer(&access.buffer) {
            Some(b) => (b.shape.clone(), b.role, b.binding),
            None => {
                let problem = format!("{access} names no buffer in scope");
                self.push(
                    ObligationKind::WellFormed { problem },
                    guard,
                    Pred::Bool(false),
                );
                return None;
            }
        };
        if access.kind == AccessKind::Store && role == Role::Input {
            let problem = format!("{access} writes an input");
            self.push(
                ObligationKind::WellFormed { problem },
                guard,
                Pred::Bool(false),
            );
        }
        if coords.len() != shape.len() {
            let problem = format!(
                "{access} has {} coordinates for a buffer of rank {}",
                coords.len(),
                shape.len()
            );
            self.push(
                ObligationKind::WellFormed { problem },
                guard,
                Pred::Bool(false),
            );
            return None;
        }
        let mut t = Translation::default();
        let indices: Vec<IndexExpr> = coords
            .iter()
            .map(|c| t.index(&self.scope, &c.index))
            .collect();
        let recorded: Vec<IndexExpr> = coords
            .iter()
            .map(|c| t.index(&self.scope, &c.extent))
            .collect();
        self.finish(t, &format!("coordinates of {access}"));
        for (dim, ((i, extent), rec)) in indices.iter().zip(&shape).zip(recorded).enumerate() {
            self.push(
                ObligationKind::Bounds {
                    access: access.clone(),
                    dim,
                },
                guard,
                Pred::and(
                    le(IndexExpr::Const(0), i.clone()),
                    lt(i.clone(), extent.clone()),
                ),
            );
            self.push(
                ObligationKind::RecordedExtent {
                    access: access.clone(),
                    dim,
                },
                guard,
                Pred::cmp(CmpOp::Eq, rec, extent.clone()),
            );
        }
        let (op, value) = match write {
            Some((op, value)) => (Some(op), Some(value)),
            None => (None, None),
        };
        let accessed = if role == Role::Input {
            // The element of the program's input at these storage coordinates.
            let order = self.buffer(&access.buffer).and_then(|b| b.order.clone());
            Accessed::Input(atl_loopir::ir::program_order(order.as_deref(), &indices))
        } else {
            Accessed::Site(self.sites.len())
        };
        if role != Role::Input {
            self.sites.push(Site {
                access: access.clone(),
                op,
                binding,
                coords: indices.clone(),
                facts: self.context(guard),
                loops: self.loops.clone(),
                location: self.location(),
                path: self.order.clone(),
                discarded: self.blends > 0,
                value,
            });
        }
        // Row-major: ((i0 * e1 + i1) * e2 + i2) ..., of the stored coordinates (the
        // first one modulo the fold, for a folded buffer: the first extent is then
        // not used).
        let mut position = IndexExpr::Const(0);
        let stored = self.bindings[binding].physical(&indices);
        for (dim, i) in stored.into_iter().enumerate() {
            position = if dim == 0 {
                i
            } else {
                IndexExpr::add(IndexExpr::mul(position, shape[dim].clone()), i)
            };
        }
        self.push(
            ObligationKind::Flattening { access },
            guard,
            Pred::cmp(CmpOp::Eq, flat, position),
        );
        Some(accessed)
    }
}

/// What an access reads or writes: an input element (its coordinates) or a site.
enum Accessed {
    Input(Vec<IndexExpr>),
    Site(usize),
}

/// `buf[index] @ (coordinates)`, as the loop-IR printer shows an access.
fn access_text(buf: &str, index: &Ix, coords: &[Coord]) -> String {
    let coords: Vec<String> = coords.iter().map(|c| c.index.to_string()).collect();
    format!(
        "{buf}[{}] @ ({})",
        atl_loopir::print::ix_to_string(index),
        coords.join(", ")
    )
}
