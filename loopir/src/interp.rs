//! The loop-IR interpreter: runs a [`Kernel`] on concrete sizes and inputs, with the
//! meaning the C emitter gives it, and checks on the way what C would leave undefined
//! or silently wrong:
//!
//! - every load and store hits an element of its buffer (E0921), and its flat index is
//!   exactly the row-major flattening of the coordinates it records, each of which is
//!   in range (E0924) — a run-time check of the reindexers;
//! - C's truncating `/` and `%` are only used on a non-negative numerator and a
//!   positive divisor (E0924);
//! - no element is read before it is written (E0922): allocations that are not zeroed
//!   start uninitialized, and so does the output;
//! - the kernel writes every element of the output (E0923), as the ABI promises;
//! - the placement of temporaries holds (`atl-lower`'s placement pass): a hoisted
//!   `alloc` finds its buffer declared by the loop it names, with the same
//!   parallelism, and asks for the same length at every execution (E0921). A hoisted buffer is fresh at every
//!   execution of its `alloc` (uninitialized or zeroed), as any other, so E0922 still
//!   catches a read of what an earlier execution left; a shared one outlives the
//!   iterations of the loops inside its loop (E0925 applies to it), a per-thread one
//!   is private to each iteration of its parallel loop.
//!
//! Values are `f64`, so a run compares with the reference interpreter up to the
//! order of floating-point operations. Size and input problems are reported with the
//! reference interpreter's codes (E0601–E0605, E0504).

use std::collections::{BTreeMap, HashMap};

use atl_lang::diag::Diagnostic;
use atl_lang::index::{IndexExpr, floor_div, floor_mod};
use atl_lang::interp::Tensor;
use atl_lang::ir::BinOp;

use crate::ir::{
    Cond, Coord, For, Ix, IxOp, Kernel, PreconditionKind, Stmt, Storage, StoreOp, Val,
};
use crate::print::ix_to_string;

/// The concrete shapes of a call: size values in ABI order, input shapes in ABI order,
/// the output shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallShapes {
    pub sizes: Vec<i64>,
    pub inputs: Vec<Vec<usize>>,
    pub output: Vec<usize>,
}

/// Checks a call of `kernel` before running it (here or compiled): every size has a
/// value, the preconditions hold (so every access of the kernel stays inside buffers
/// of the shapes returned), and every input has its declared shape.
pub fn check_call(
    kernel: &Kernel,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<CallShapes, Diagnostic> {
    let mut m = Machine {
        vars: Vec::new(),
        scalars: Vec::new(),
        bufs: Vec::new(),
        folds: Vec::new(),
        parallel: Vec::new(),
        hoisted: Vec::new(),
        stores: StoreCounts::new(),
    };
    let mut values = Vec::new();
    for s in &kernel.sizes {
        let Some(v) = sizes.get(s) else {
            return Err(
                Diagnostic::error("E0601", format!("no value for size `{s}`"))
                    .with_help(format!("pass `--sizes {s}=…`")),
            );
        };
        m.vars.push((s.clone(), *v));
        values.push(*v);
    }
    for pre in &kernel.preconditions {
        let holds = pre
            .pred
            .eval(&|n| m.var(n))
            .map_err(|e| Diagnostic::error("E0502", e.to_string()))?;
        if !holds {
            let code = match pre.kind {
                PreconditionKind::Size => "E0602",
                PreconditionKind::Assume => "E0603",
                PreconditionKind::Amount => "E0504",
                PreconditionKind::InputExtent => "E0605",
                PreconditionKind::IndexRange => "E0937",
            };
            return Err(Diagnostic::error(
                code,
                format!("the sizes break a precondition: {}", pre.reason),
            ));
        }
    }
    let mut input_shapes = Vec::new();
    for decl in &kernel.inputs {
        // Inputs are given in the program's order of dimensions.
        let shape = m.shape(&decl.program_shape())?;
        let Some(t) = inputs.get(&decl.name) else {
            return Err(Diagnostic::error(
                "E0604",
                format!("no value for input `{}`", decl.name),
            ));
        };
        if t.shape != shape {
            return Err(Diagnostic::error(
                "E0605",
                format!(
                    "input `{}` has shape {:?}, expected {:?}",
                    decl.name, t.shape, shape
                ),
            ));
        }
        if let Some(facts) = &decl.index_array {
            atl_lang::interp::check_index_array(&decl.name, facts, &t.data, &|n| m.var(n))
                .map_err(|message| Diagnostic::error("E0610", message))?;
        }
        input_shapes.push(m.shape(&decl.shape)?);
    }
    let output = m.shape(&kernel.output.shape)?;
    if atl_lang::interp::shape_numel(&output).is_none() {
        return Err(Diagnostic::error("E0503", "the output is too large"));
    }
    Ok(CallShapes {
        sizes: values,
        inputs: input_shapes,
        output,
    })
}

/// The array the kernel receives for input `decl`, given its value `t` in the
/// program's order of dimensions: `t` itself, or for an input declared with a layout
/// its elements in storage order.
pub fn stored_input<'t>(
    decl: &crate::ir::BufferDecl,
    t: &'t Tensor,
) -> Result<std::borrow::Cow<'t, Tensor>, Diagnostic> {
    match &decl.order {
        None => Ok(std::borrow::Cow::Borrowed(t)),
        Some(order) => t
            .to_storage(order)
            .map(std::borrow::Cow::Owned)
            .ok_or_else(|| {
                Diagnostic::error(
                    "E0605",
                    format!(
                        "the storage order of input `{}` is not a permutation of its dimensions",
                        decl.name
                    ),
                )
            }),
    }
}

/// Runs `kernel` at the given sizes on the given inputs and returns the output.
pub fn run_kernel(
    kernel: &Kernel,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<Tensor, Diagnostic> {
    run_kernel_counting(kernel, sizes, inputs).map(|(out, _)| out)
}

/// How many element stores (`buf[i] = …`, `+=`, `max=`; not fills) a run made into each
/// buffer, by name: the values a schedule computes of each stage (a stage computed
/// per tile counts each tile's values, its halo included).
pub type StoreCounts = BTreeMap<String, u64>;

/// [`run_kernel`], also returning the stores the run made into each buffer.
pub fn run_kernel_counting(
    kernel: &Kernel,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<(Tensor, StoreCounts), Diagnostic> {
    let call = check_call(kernel, sizes, inputs)?;
    let mut m = Machine {
        vars: kernel
            .sizes
            .iter()
            .cloned()
            .zip(call.sizes.iter().copied())
            .collect(),
        scalars: Vec::new(),
        bufs: Vec::new(),
        folds: Vec::new(),
        parallel: Vec::new(),
        hoisted: Vec::new(),
        stores: StoreCounts::new(),
    };
    for decl in &kernel.inputs {
        let t = stored_input(decl, &inputs[&decl.name])?;
        m.bufs
            .push((decl.name.clone(), t.data.iter().map(|&x| Some(x)).collect()));
    }
    let out_shape = call.output;
    let len = atl_lang::interp::shape_numel(&out_shape)
        .ok_or_else(|| Diagnostic::error("E0503", "the output is too large"))?;
    m.bufs.push((kernel.output.name.clone(), vec![None; len]));
    m.block(&kernel.body)?;
    let (_, data) = m
        .bufs
        .pop()
        .ok_or_else(|| fault("E0923", "the output buffer vanished".to_string()))?;
    let mut out = Vec::with_capacity(len);
    for (i, x) in data.into_iter().enumerate() {
        match x {
            Some(x) => out.push(x),
            None => {
                return Err(fault(
                    "E0923",
                    format!(
                        "the kernel did not write element {i} of `{}`",
                        kernel.output.name
                    ),
                ));
            }
        }
    }
    let out = Tensor::new(out_shape, out)
        .ok_or_else(|| fault("E0923", "output length mismatch".to_string()))?;
    Ok((out, m.stores))
}

/// A defect of the lowered code (never of the user's program).
fn fault(code: &'static str, message: String) -> Diagnostic {
    Diagnostic::error(code, format!("loop IR: {message}"))
        .with_help("this is a bug in the lowering; please report it with the program")
}

struct Machine {
    /// Sizes, then loop variables (innermost last).
    vars: Vec<(String, i64)>,
    /// Scalar temporaries (innermost last); `None` until assigned.
    scalars: Vec<(String, Option<f64>)>,
    /// Inputs, then allocations, the output among them.
    bufs: Vec<(String, Vec<Option<f64>>)>,
    /// The annotated loops being run (outermost first), whose iterations must write
    /// disjoint elements of the buffers that existed when the loop started.
    parallel: Vec<DisjointWrites>,
    /// The hoisted buffers declared by the loops being run (outermost first).
    hoisted: Vec<HoistedBuffer>,
    /// The element stores made so far, by buffer name.
    stores: StoreCounts,
    /// The fold of each allocation in scope (innermost last), by buffer name.
    folds: Vec<(String, Option<i64>)>,
}

/// A buffer declared around a loop ([`For::hoisted_buffers`]) for the hoisted
/// `alloc`s of its body.
struct HoistedBuffer {
    name: String,
    /// The loop declaring it, and whether that loop is parallel (one per thread).
    loop_var: String,
    per_thread: bool,
    /// Its entry in [`Machine::bufs`]: empty except while one of its `alloc`s runs.
    pos: usize,
    /// The length of its first allocation.
    len: Option<usize>,
    /// Whether one of its `alloc`s is running.
    live: bool,
}

/// The writes of a `parallel` or `vector` loop, by iteration.
struct DisjointWrites {
    var: String,
    /// Buffers at positions below this one outlive an iteration.
    outer_bufs: usize,
    iteration: i64,
    /// (buffer position, element) → the iteration that wrote it.
    written: HashMap<(usize, usize), i64>,
}

impl Machine {
    fn var(&self, name: &str) -> Option<i64> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    fn shape(&self, dims: &[IndexExpr]) -> Result<Vec<usize>, Diagnostic> {
        dims.iter()
            .map(|d| {
                let v = d
                    .eval(&|n| self.var(n))
                    .map_err(|e| Diagnostic::error("E0502", e.to_string()))?;
                usize::try_from(v).map_err(|_| {
                    Diagnostic::error("E0605", format!("the extent {d} is negative ({v})"))
                })
            })
            .collect()
    }

    fn ix(&self, ix: &Ix) -> Result<i64, Diagnostic> {
        let overflow = || Diagnostic::error("E0502", "index arithmetic overflows 64 bits");
        Ok(match ix {
            Ix::Const(c) => *c,
            Ix::Var(v) => self
                .var(v)
                .ok_or_else(|| fault("E0924", format!("unbound index variable `{v}`")))?,
            Ix::Neg(a) => self.ix(a)?.checked_neg().ok_or_else(overflow)?,
            Ix::Load(array, a) => {
                let k = self.ix(a)?;
                let pos = self
                    .bufs
                    .iter()
                    .rposition(|(n, _)| n == array)
                    .ok_or_else(|| {
                        fault("E0921", format!("index array `{array}` is not an input"))
                    })?;
                let value = usize::try_from(k)
                    .ok()
                    .and_then(|k| self.bufs[pos].1.get(k).copied())
                    .ok_or_else(|| self.outside(array, pos, &format!("`{array}[{k}]`")))?;
                // Index arrays are inputs, checked on entry to hold 32-bit integers.
                value.map_or(0, |v| v as i64)
            }
            Ix::Bin(op, a, b) => {
                let (x, y) = (self.ix(a)?, self.ix(b)?);
                match op {
                    IxOp::Add => x.checked_add(y).ok_or_else(overflow)?,
                    IxOp::Sub => x.checked_sub(y).ok_or_else(overflow)?,
                    IxOp::Mul => x.checked_mul(y).ok_or_else(overflow)?,
                    IxOp::DivNat | IxOp::ModNat => {
                        if x < 0 || y <= 0 {
                            return Err(fault(
                                "E0924",
                                format!(
                                    "C division `{}` on {x} and {y}, where floor division differs",
                                    ix_to_string(ix)
                                ),
                            ));
                        }
                        if *op == IxOp::DivNat { x / y } else { x % y }
                    }
                    IxOp::FloorDiv => floor_div(x, y).ok_or_else(overflow)?,
                    IxOp::FloorMod => floor_mod(x, y).ok_or_else(overflow)?,
                    IxOp::CeilDiv => atl_lang::index::ceil_div(x, y).ok_or_else(overflow)?,
                    IxOp::Min => x.min(y),
                    IxOp::Max => x.max(y),
                }
            }
        })
    }

    fn cond(&self, c: &Cond) -> Result<bool, Diagnostic> {
        Ok(match c {
            Cond::Bool(b) => *b,
            Cond::Cmp(op, a, b) => op.holds(self.ix(a)?, self.ix(b)?),
            Cond::And(a, b) => self.cond(a)? && self.cond(b)?,
            Cond::Or(a, b) => self.cond(a)? || self.cond(b)?,
            Cond::Not(a) => !self.cond(a)?,
        })
    }

    /// Checks an access: coordinates in range, flat index their row-major flattening,
    /// inside the buffer. Returns the buffer position and the element index.
    fn locate(
        &self,
        buf: &str,
        index: &Ix,
        coords: &[Coord],
    ) -> Result<(usize, usize), Diagnostic> {
        let flat = self.ix(index)?;
        // A folded buffer's first coordinate is stored modulo the fold.
        let fold = self
            .folds
            .iter()
            .rev()
            .find(|(n, _)| n == buf)
            .and_then(|(_, f)| *f);
        let mut expect: i64 = 0;
        for (k, c) in coords.iter().enumerate() {
            // A coordinate may read an index array (`v[crd[p]]`): from its buffer,
            // out of range a fault (the C would read outside it).
            let load = |array: &str, k: i64| {
                let pos = self.bufs.iter().rposition(|(n, _)| n == array)?;
                let value = self.bufs[pos].1.get(usize::try_from(k).ok()?).copied()?;
                Some(value.map_or(0, |v| v as i64))
            };
            let eval = |e: &IndexExpr| {
                e.eval_with(&|n| self.var(n), &load)
                    .map_err(|e| fault("E0924", e.to_string()))
            };
            let (i, d) = (eval(&c.index)?, eval(&c.extent)?);
            if i < 0 || i >= d {
                return Err(fault(
                    "E0924",
                    format!(
                        "`{buf}` accessed at coordinate {} = {i} outside 0..{d}",
                        c.index
                    ),
                ));
            }
            let (i, d) = match fold {
                Some(f) if k == 0 => (i.rem_euclid(f), f),
                _ => (i, d),
            };
            expect = expect
                .checked_mul(d)
                .and_then(|x| x.checked_add(i))
                .ok_or_else(|| Diagnostic::error("E0502", "index arithmetic overflows"))?;
        }
        if expect != flat {
            return Err(fault(
                "E0924",
                format!(
                    "`{buf}[{}]` is element {flat}, but its coordinates flatten to {expect}",
                    ix_to_string(index)
                ),
            ));
        }
        let pos = self
            .bufs
            .iter()
            .rposition(|(n, _)| n == buf)
            .ok_or_else(|| fault("E0921", format!("buffer `{buf}` is not allocated")))?;
        let len = self.bufs[pos].1.len();
        match usize::try_from(flat) {
            Ok(k) if k < len => Ok((pos, k)),
            _ => Err(self.outside(buf, pos, &format!("`{buf}[{flat}]`"))),
        }
    }

    /// The fault of an access of `what` outside the buffer at `pos`.
    fn outside(&self, buf: &str, pos: usize, what: &str) -> Diagnostic {
        if self.hoisted.iter().any(|h| h.pos == pos && !h.live) {
            return fault(
                "E0921",
                format!("{what}: the hoisted buffer `{buf}` is only live inside its `alloc`"),
            );
        }
        let len = self.bufs[pos].1.len();
        fault("E0921", format!("{what} is outside its {len} elements"))
    }

    fn val(&self, v: &Val) -> Result<f64, Diagnostic> {
        Ok(match v {
            Val::Lit(x) => *x,
            // As the interpreter of the source does: exact up to 2^53.
            Val::Coord(ix) => self.ix(ix)? as f64,
            Val::Scalar(s) => {
                let found = self.scalars.iter().rev().find(|(n, _)| n == s);
                match found {
                    Some((_, Some(x))) => *x,
                    Some((_, None)) => {
                        return Err(fault(
                            "E0922",
                            format!("scalar `{s}` read before it is set"),
                        ));
                    }
                    None => return Err(fault("E0922", format!("scalar `{s}` is not declared"))),
                }
            }
            Val::Load(l) => {
                let (pos, k) = self.locate(&l.buf, &l.index, &l.coords)?;
                self.bufs[pos].1[k].ok_or_else(|| {
                    fault(
                        "E0922",
                        format!("`{}[{k}]` is read before it is written", l.buf),
                    )
                })?
            }
            Val::Neg(a) => -self.val(a)?,
            Val::Call(func, args) => {
                let values = args
                    .iter()
                    .map(|a| self.val(a))
                    .collect::<Result<Vec<f64>, Diagnostic>>()?;
                func.apply(&values)
            }
            Val::Bin(op, a, b) => {
                let (x, y) = (self.val(a)?, self.val(b)?);
                match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div => x / y,
                }
            }
            Val::Blend(c, a) => {
                // The value first, unconditionally: its loads must be in bounds
                // whatever the condition says (the claim a blend makes).
                let x = self.val(a)?;
                if self.cond(c)? { x } else { 0.0 }
            }
            Val::Select(c, a) => {
                if self.cond(c)? {
                    self.val(a)?
                } else {
                    0.0
                }
            }
        })
    }

    /// Checks a write against the annotated loops being run: two iterations of a
    /// `parallel` or `vector` loop must never write the same element of a buffer that
    /// outlives them (that is what makes the annotation meaning-preserving).
    fn record_write(&mut self, pos: usize, k: usize) -> Result<(), Diagnostic> {
        for w in &mut self.parallel {
            if pos >= w.outer_bufs {
                continue;
            }
            match w.written.insert((pos, k), w.iteration) {
                Some(before) if before != w.iteration => {
                    return Err(fault(
                        "E0925",
                        format!(
                            "iterations {} = {before} and {} = {} of an annotated loop both \
                             write element {k} of `{}`",
                            w.var, w.var, w.iteration, self.bufs[pos].0
                        ),
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Declares the hoisted buffers of loop `l` (unallocated).
    fn declare_hoisted(&mut self, l: &For) {
        for name in &l.hoisted_buffers {
            self.hoisted.push(HoistedBuffer {
                name: name.clone(),
                loop_var: l.var.clone(),
                per_thread: l.parallel,
                pos: self.bufs.len(),
                len: None,
                live: false,
            });
            self.bufs.push((name.clone(), Vec::new()));
        }
    }

    /// The position in `bufs` of the hoisted buffer an `alloc` of `buf` with `n`
    /// elements uses, placed in the loop over `loop_var` (`per_thread`), after
    /// checking the placement: declared by that loop, not shadowed, not in use, and
    /// of the same length at every execution.
    fn hoisted_buffer(
        &mut self,
        buf: &str,
        loop_var: &str,
        per_thread: bool,
        n: usize,
    ) -> Result<usize, Diagnostic> {
        let whose = if per_thread { "per-thread " } else { "" };
        let found = self.hoisted.iter().rposition(|h| h.name == buf);
        let Some(k) = found.filter(|&k| {
            let h = &self.hoisted[k];
            h.loop_var == loop_var
                && h.per_thread == per_thread
                && self.bufs.iter().rposition(|(b, _)| b == buf) == Some(h.pos)
        }) else {
            return Err(fault(
                "E0921",
                format!(
                    "`{buf}` is placed in the {whose}buffer of the loop over `{loop_var}`, \
                     which no enclosing loop declares"
                ),
            ));
        };
        let h = &mut self.hoisted[k];
        if h.live {
            return Err(fault(
                "E0921",
                format!("the hoisted buffer `{buf}` is allocated again while in use"),
            ));
        }
        match h.len {
            Some(before) if before != n => Err(fault(
                "E0921",
                format!(
                    "the hoisted buffer `{buf}` is allocated with {before} elements, then \
                     with {n}: one buffer cannot serve both"
                ),
            )),
            _ => {
                h.len = Some(n);
                h.live = true;
                Ok(h.pos)
            }
        }
    }

    /// Ends the use of a hoisted buffer by its `alloc` (at `pos` in `bufs`).
    fn release_hoisted(&mut self, pos: usize) {
        self.bufs[pos].1 = Vec::new();
        if let Some(h) = self.hoisted.iter_mut().rfind(|h| h.pos == pos) {
            h.live = false;
        }
    }

    /// Runs `body` with the buffer `buf` of `len` elements allocated.
    fn alloc(
        &mut self,
        buf: &str,
        len: &Ix,
        zeroed: bool,
        storage: &Storage,
        body: &[Stmt],
    ) -> Result<(), Diagnostic> {
        let n = self.ix(len)?;
        let n = usize::try_from(n)
            .map_err(|_| fault("E0921", format!("`{buf}` has negative length {n}")))?;
        let init = if zeroed { Some(0.0) } else { None };
        match storage {
            Storage::Heap => {}
            Storage::Stack => {
                if !matches!(len, Ix::Const(_)) {
                    return Err(fault(
                        "E0921",
                        format!(
                            "`{buf}` is a stack array of non-constant length {}",
                            ix_to_string(len)
                        ),
                    ));
                }
            }
            Storage::Hoisted {
                loop_var,
                per_thread,
            } => {
                // Fresh at every execution, in the buffer declared around the
                // loop: the same meaning as an allocation here.
                let pos = self.hoisted_buffer(buf, loop_var, *per_thread, n)?;
                self.bufs[pos].1 = vec![init; n];
                let r = self.block(body);
                self.release_hoisted(pos);
                return r;
            }
        }
        self.bufs.push((buf.to_string(), vec![init; n]));
        let r = self.block(body);
        self.bufs.pop();
        r
    }

    fn block(&mut self, stmts: &[Stmt]) -> Result<(), Diagnostic> {
        let mark = self.scalars.len();
        for s in stmts {
            self.stmt(s)?;
        }
        self.scalars.truncate(mark);
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), Diagnostic> {
        match s {
            Stmt::For(l) => {
                let (lo, hi) = (self.ix(&l.lo)?, self.ix(&l.hi)?);
                let checked = l.parallel || l.vector;
                // Each thread of a parallel loop has its own hoisted buffers, so they
                // are private to an iteration: declared after the loop's record of
                // the buffers that outlive an iteration. Shared ones (a sequential
                // loop, or lanes of a `vector` loop) are declared before it.
                let private = l.parallel && !l.vector;
                let (bufs_mark, hoisted_mark) = (self.bufs.len(), self.hoisted.len());
                if !private {
                    self.declare_hoisted(l);
                }
                if checked {
                    self.parallel.push(DisjointWrites {
                        var: l.var.clone(),
                        outer_bufs: self.bufs.len(),
                        iteration: lo,
                        written: HashMap::new(),
                    });
                }
                if private {
                    self.declare_hoisted(l);
                }
                let mut i = lo;
                let mut result = Ok(());
                while i < hi {
                    if let Some(w) = self.parallel.last_mut().filter(|_| checked) {
                        w.iteration = i;
                    }
                    self.vars.push((l.var.clone(), i));
                    result = self.block(&l.body);
                    self.vars.pop();
                    if result.is_err() {
                        break;
                    }
                    i += 1;
                }
                if checked {
                    self.parallel.pop();
                }
                self.bufs.truncate(bufs_mark);
                self.hoisted.truncate(hoisted_mark);
                result?;
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                if self.cond(cond)? {
                    self.block(then_branch)?;
                } else {
                    self.block(else_branch)?;
                }
            }
            Stmt::Alloc {
                buf,
                len,
                zeroed,
                storage,
                fold,
                body,
                ..
            } => {
                self.folds.push((buf.clone(), *fold));
                let r = self.alloc(buf, len, *zeroed, storage, body);
                self.folds.pop();
                r?;
            }
            Stmt::Decl { name, init } => {
                let v = match init {
                    Some(v) => Some(self.val(v)?),
                    None => None,
                };
                self.scalars.push((name.clone(), v));
            }
            Stmt::SetScalar { name, op, value } => {
                let x = self.val(value)?;
                let slot = self
                    .scalars
                    .iter_mut()
                    .rev()
                    .find(|(n, _)| n == name)
                    .ok_or_else(|| fault("E0922", format!("scalar `{name}` is not declared")))?;
                slot.1 = Some(match (op, slot.1) {
                    (StoreOp::Assign, _) => x,
                    (StoreOp::Accumulate, Some(old)) => old + x,
                    (StoreOp::Accumulate, None) => {
                        return Err(fault(
                            "E0922",
                            format!("`{name} += …` before `{name}` is set"),
                        ));
                    }
                    (StoreOp::Max, Some(old)) => atl_lang::functions::max_step(old, x),
                    (StoreOp::Max, None) => {
                        return Err(fault(
                            "E0922",
                            format!("`{name} max= …` before `{name}` is set"),
                        ));
                    }
                });
            }
            Stmt::Store {
                buf,
                index,
                coords,
                op,
                value,
            } => {
                let x = self.val(value)?;
                let (pos, k) = self.locate(buf, index, coords)?;
                self.record_write(pos, k)?;
                *self.stores.entry(buf.clone()).or_default() += 1;
                let slot = &mut self.bufs[pos].1[k];
                *slot = Some(match (op, *slot) {
                    (StoreOp::Assign, _) => x,
                    (StoreOp::Accumulate, Some(old)) => old + x,
                    (StoreOp::Accumulate, None) => {
                        return Err(fault(
                            "E0922",
                            format!("`{buf}[{k}] += …` before the element is written"),
                        ));
                    }
                    (StoreOp::Max, Some(old)) => atl_lang::functions::max_step(old, x),
                    (StoreOp::Max, None) => {
                        return Err(fault(
                            "E0922",
                            format!("`{buf}[{k}] max= …` before the element is written"),
                        ));
                    }
                });
            }
            // The call's index arrays were checked against their declarations before
            // the run (`check_call`), so a check at a read that fails is too strict.
            Stmt::Fail { array } => {
                return Err(fault(
                    "E0926",
                    format!(
                        "the check of a value read from `{array}` failed, but the array \
                         satisfies its declaration"
                    ),
                ));
            }
            Stmt::Fill { buf, len, value } => {
                let n = self.ix(len)?;
                let pos = self
                    .bufs
                    .iter()
                    .rposition(|(b, _)| b == buf)
                    .ok_or_else(|| fault("E0921", format!("buffer `{buf}` is not allocated")))?;
                if usize::try_from(n).ok() != Some(self.bufs[pos].1.len()) {
                    return Err(self.outside(
                        buf,
                        pos,
                        &format!("a fill of {n} elements of `{buf}`"),
                    ));
                }
                let data = &mut self.bufs[pos].1;
                data.iter_mut().for_each(|x| *x = Some(*value));
                for k in 0..self.bufs[pos].1.len() {
                    self.record_write(pos, k)?;
                }
            }
        }
        Ok(())
    }
}
