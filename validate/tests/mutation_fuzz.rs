//! A mutation fuzzer for the validator's soundness: every example kernel (as
//! `examples.rs` lowers them) is mutated at random from a catalogue of small edits —
//! loop bounds and starts, `=`/`+=`, literals, operators, conditions, coordinates
//! shifted together with their flat index, loop variables swapped or renamed after a
//! sibling nest, statements moved, duplicated or deleted, reads of temporaries moved to
//! another element, `parallel`, `vector` and `collapse` annotations — and each mutant is
//! validated against the definition it was lowered from. Whenever a mutant is
//! `Validated`, it is run by the loop-IR interpreter and the definition by the reference
//! interpreter at sizes larger than the validator's own concrete runs (every size 23,
//! every size 41, random mixes up to 64), on random inputs: a validated mutant that
//! disagrees (or faults) is a soundness bug of the validator, and the test fails with
//! the kernel, the mutation, the sizes and the mutant's text.
//!
//! Non-finite values (issue 28): mutations also add a term that is zero over the reals
//! but NaN when a part of it overflows (`v + (t * t) * 0`, `v + (x - x)`), and a
//! validated mutant is also run, at its first sizes, on inputs a third of which are
//! multiplied by `1e200`: NaN where the definition has a number (or the reverse) fails.
//!
//! Index arrays (issue 31): the reads of an index array in a kernel's indices and
//! bounds are moved to a neighbouring element or to another array, and an array's
//! declaration in the kernel is weakened (a wider range, `sorted` dropped); kernels
//! that read index arrays (the examples' and `lower/tests/support/index_arrays.atl`)
//! get these two times in five.
//!
//! Storage layouts (issue 33): an input declared with a layout has its storage order
//! dropped or two of its positions exchanged in the kernel's declaration; kernels with
//! such an input (`examples/colmajor`) get this three times in ten.
//!
//! Folded storage (issue 32): a folded buffer's fold is changed with its length and
//! indices (`examples/blur`'s `rows_folded`, three times in ten).
//!
//! Name edits (a loop, scalar or buffer renamed after another name of the kernel or a
//! name of C, a declaration duplicated) leave the loop IR's meaning alone where C,
//! with one namespace, changes it: a validated mutant with a name edit is also
//! compiled (`double`, through `atl-emit-c`; a harness under AddressSanitizer and
//! UBSan with `ATL_SANITIZE=1`) and run against the definition, and must compile and
//! agree. `ATL_VALIDATE_FUZZ_C=all` does so for every validated mutant.
//!
//! Deterministic: case `k` mutates kernel `k mod #kernels` with a seed derived from `k`.
//! `ATL_VALIDATE_FUZZ_CASES` sets the number of cases (default [`DEFAULT_CASES`], for
//! CI); `ATL_VALIDATE_FUZZ_SEED` changes the seed; `ATL_VALIDATE_FUZZ_DUMP=DIR` writes
//! every validated mutant's text there. The counts (validated, rejected, not validated)
//! are printed with `--nocapture`.

mod common;

use std::collections::BTreeMap;
use std::time::Instant;

use atl_lang::index::{CmpOp, IndexExpr};
use atl_lang::interp::EvalOptions;
use atl_lang::ir::BinOp;
use atl_lang::rng::SplitMix64;
use atl_loopir::ir::{Cond, Coord, For, Ix, IxOp, Kernel, Load, Stmt, Storage, StoreOp, Val};
use atl_validate::{KernelVerdict, Source, validate};

use common::support;

/// Mutants in the default (CI) run.
const DEFAULT_CASES: usize = 120;

/// The largest product of the sizes a run of a validated mutant may have (keeps the
/// debug-build interpreters quick).
const COST_LIMIT: i64 = 40_000;

// ---- walking a kernel mutably ---------------------------------------------------------

fn each_block(stmts: &mut Vec<Stmt>, f: &mut dyn FnMut(&mut Vec<Stmt>)) {
    common::edit_blocks(stmts, f)
}

fn each_stmt(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Stmt)) {
    for s in stmts.iter_mut() {
        f(s);
        match s {
            Stmt::For(l) => each_stmt(&mut l.body, f),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                each_stmt(then_branch, f);
                each_stmt(else_branch, f);
            }
            Stmt::Alloc { body, .. } => each_stmt(body, f),
            _ => {}
        }
    }
}

/// Every loop, with its depth among loops (0 for the outermost of a nest).
fn each_for(stmts: &mut [Stmt], depth: usize, f: &mut dyn FnMut(&mut For, usize)) {
    for s in stmts.iter_mut() {
        match s {
            Stmt::For(l) => {
                f(l, depth);
                each_for(&mut l.body, depth + 1, f);
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                each_for(then_branch, depth, f);
                each_for(else_branch, depth, f);
            }
            Stmt::Alloc { body, .. } => each_for(body, depth, f),
            _ => {}
        }
    }
}

fn each_val_in(v: &mut Val, f: &mut dyn FnMut(&mut Val)) {
    f(v);
    match v {
        Val::Lit(_) | Val::Coord(_) | Val::Scalar(_) | Val::Load(_) => {}
        Val::Neg(a) | Val::Select(_, a) | Val::Blend(_, a) => each_val_in(a, f),
        Val::Bin(_, a, b) => {
            each_val_in(a, f);
            each_val_in(b, f);
        }
        Val::Call(_, args) => {
            for a in args {
                each_val_in(a, f);
            }
        }
    }
}

/// Every scalar expression (and sub-expression) of the body.
fn each_val(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Val)) {
    each_stmt(stmts, &mut |s| match s {
        Stmt::Decl { init: Some(v), .. }
        | Stmt::SetScalar { value: v, .. }
        | Stmt::Store { value: v, .. } => each_val_in(v, f),
        _ => {}
    });
}

/// Every condition of the body: of `if`s, selections and blends.
fn each_cond(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Cond)) {
    each_stmt(stmts, &mut |s| {
        if let Stmt::If { cond, .. } = s {
            f(cond);
        }
    });
    each_val(stmts, &mut |v| {
        if let Val::Select(c, _) | Val::Blend(c, _) = v {
            f(c);
        }
    });
}

fn each_cmp_in(c: &mut Cond, f: &mut dyn FnMut(&mut Cond)) {
    match c {
        Cond::Bool(_) => {}
        Cond::Cmp(..) => f(c),
        Cond::And(a, b) | Cond::Or(a, b) => {
            each_cmp_in(a, f);
            each_cmp_in(b, f);
        }
        Cond::Not(a) => each_cmp_in(a, f),
    }
}

/// An access: the buffer, the flat index and the coordinates.
enum Access<'a> {
    Load(&'a mut Load),
    Store(&'a str, &'a mut Ix, &'a mut Vec<Coord>),
}

fn each_access(stmts: &mut [Stmt], f: &mut dyn FnMut(Access<'_>)) {
    each_stmt(stmts, &mut |s| {
        if let Stmt::Store {
            buf, index, coords, ..
        } = s
        {
            f(Access::Store(buf, index, coords));
        }
    });
    each_val(stmts, &mut |v| {
        if let Val::Load(l) = v {
            f(Access::Load(l));
        }
    });
}

/// A visit of items: calls its argument on each.
type Visit<'a, T> = dyn FnMut(&mut dyn FnMut(&mut T)) + 'a;

/// How many items of a visit satisfy `pred`.
fn count<T: ?Sized>(visit: &mut Visit<'_, T>, pred: &dyn Fn(&T) -> bool) -> usize {
    let mut k = 0;
    visit(&mut |x| {
        if pred(x) {
            k += 1;
        }
    });
    k
}

/// Picks one item of a visit satisfying `pred` at random and edits it; `false` when
/// there is none.
fn edit_one<T: ?Sized>(
    rng: &mut SplitMix64,
    visit: &mut Visit<'_, T>,
    pred: &dyn Fn(&T) -> bool,
    edit: &mut dyn FnMut(&mut T),
) -> bool {
    let total = count(visit, pred);
    if total == 0 {
        return false;
    }
    let target = rng.below(total);
    let mut k = 0;
    visit(&mut |x| {
        if pred(x) {
            if k == target {
                edit(x);
            }
            k += 1;
        }
    });
    true
}

// ---- renaming loop variables ------------------------------------------------------------

fn rename_ix(e: &mut Ix, map: &BTreeMap<String, String>) {
    match e {
        Ix::Const(_) => {}
        Ix::Var(v) => {
            if let Some(to) = map.get(v) {
                *v = to.clone();
            }
        }
        Ix::Neg(a) | Ix::Load(_, a) => rename_ix(a, map),
        Ix::Bin(_, a, b) => {
            rename_ix(a, map);
            rename_ix(b, map);
        }
    }
}

fn rename_ie(e: &IndexExpr, map: &BTreeMap<String, String>) -> IndexExpr {
    match e {
        IndexExpr::Var(v) => IndexExpr::var(map.get(v).cloned().unwrap_or_else(|| v.clone())),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(rename_ie(a, map))),
        IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(rename_ie(a, map))),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, rename_ie(a, map), rename_ie(b, map)),
        _ => e.clone(),
    }
}

fn rename_cond(c: &mut Cond, map: &BTreeMap<String, String>) {
    match c {
        Cond::Bool(_) => {}
        Cond::Cmp(_, a, b) => {
            rename_ix(a, map);
            rename_ix(b, map);
        }
        Cond::And(a, b) | Cond::Or(a, b) => {
            rename_cond(a, map);
            rename_cond(b, map);
        }
        Cond::Not(a) => rename_cond(a, map),
    }
}

fn rename_coords(coords: &mut [Coord], map: &BTreeMap<String, String>) {
    for c in coords {
        c.index = rename_ie(&c.index, map);
        c.extent = rename_ie(&c.extent, map);
    }
}

fn rename_val(v: &mut Val, map: &BTreeMap<String, String>) {
    each_val_in(v, &mut |v| match v {
        Val::Load(l) => {
            rename_ix(&mut l.index, map);
            rename_coords(&mut l.coords, map);
        }
        Val::Select(c, _) | Val::Blend(c, _) => rename_cond(c, map),
        _ => {}
    });
}

/// Renames index variables simultaneously (a permutation is fine) in a statement and
/// everything in it: loop variables, bounds, conditions, accesses, shapes, the loops a
/// hoisted allocation names.
fn rename_stmt(s: &mut Stmt, map: &BTreeMap<String, String>) {
    match s {
        Stmt::For(l) => {
            if let Some(to) = map.get(&l.var) {
                l.var = to.clone();
            }
            rename_ix(&mut l.lo, map);
            rename_ix(&mut l.hi, map);
            for s in &mut l.body {
                rename_stmt(s, map);
            }
        }
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => {
            rename_cond(cond, map);
            for s in then_branch.iter_mut().chain(else_branch.iter_mut()) {
                rename_stmt(s, map);
            }
        }
        Stmt::Alloc {
            shape,
            len,
            storage,
            body,
            ..
        } => {
            for e in shape.iter_mut() {
                *e = rename_ie(e, map);
            }
            rename_ix(len, map);
            if let Storage::Hoisted { loop_var, .. } = storage
                && let Some(to) = map.get(loop_var)
            {
                *loop_var = to.clone();
            }
            for s in body {
                rename_stmt(s, map);
            }
        }
        Stmt::Decl { init, .. } => {
            if let Some(v) = init {
                rename_val(v, map);
            }
        }
        Stmt::SetScalar { value, .. } => rename_val(value, map),
        Stmt::Store {
            index,
            coords,
            value,
            ..
        } => {
            rename_ix(index, map);
            rename_coords(coords, map);
            rename_val(value, map);
        }
        Stmt::Fill { len, .. } => rename_ix(len, map),
        Stmt::Fail { .. } => {}
    }
}

/// The variables of a loop nest: the loop and the loops nested in it (depth first).
fn nest_vars(l: &For) -> Vec<String> {
    let mut out = vec![l.var.clone()];
    let mut body = l.body.clone();
    each_for(&mut body, 0, &mut |m, _| out.push(m.var.clone()));
    out
}

// ---- index helpers ------------------------------------------------------------------------

fn ix_add(a: Ix, b: Ix) -> Ix {
    Ix::bin(IxOp::Add, a, b)
}

/// The row-major flat index of the coordinates, in the target's arithmetic.
fn flat_of(coords: &[Coord]) -> Option<Ix> {
    let mut flat: Option<Ix> = None;
    for c in coords {
        let idx = atl_loopir::print::plain_ix(&c.index)?;
        let ext = atl_loopir::print::plain_ix(&c.extent)?;
        flat = Some(match flat {
            None => idx,
            Some(f) => ix_add(Ix::bin(IxOp::Mul, f, ext), idx),
        });
    }
    Some(flat.unwrap_or(Ix::Const(0)))
}

/// Edits one coordinate of an access and recomputes its flat index from the
/// coordinates (so the flattening obligation still holds).
fn edit_coord(index: &mut Ix, coords: &mut [Coord], d: usize, new: IndexExpr) {
    coords[d].index = new;
    if let Some(f) = flat_of(coords) {
        *index = f;
    }
}

fn other_op(op: CmpOp, rng: &mut SplitMix64) -> CmpOp {
    match op {
        CmpOp::Lt => *rng.pick(&[CmpOp::Le, CmpOp::Gt, CmpOp::Ne]),
        CmpOp::Le => *rng.pick(&[CmpOp::Lt, CmpOp::Ge, CmpOp::Eq]),
        CmpOp::Gt => *rng.pick(&[CmpOp::Ge, CmpOp::Lt]),
        CmpOp::Ge => *rng.pick(&[CmpOp::Gt, CmpOp::Le]),
        CmpOp::Eq => *rng.pick(&[CmpOp::Ne, CmpOp::Le]),
        CmpOp::Ne => *rng.pick(&[CmpOp::Eq, CmpOp::Lt]),
    }
}

/// A short description of a statement.
fn summary(s: &Stmt) -> String {
    match s {
        Stmt::For(l) => format!("for {} in …", l.var),
        Stmt::If { cond, .. } => format!("if {} …", atl_loopir::print::cond_to_string(cond)),
        Stmt::Alloc { buf, .. } => format!("alloc {buf} …"),
        Stmt::Decl { name, init } => format!(
            "decl {name} = {}",
            init.as_ref()
                .map_or("-".into(), atl_loopir::print::val_to_string)
        ),
        Stmt::SetScalar { name, op, value } => {
            format!("{name} {op:?} {}", atl_loopir::print::val_to_string(value))
        }
        Stmt::Store {
            buf,
            index,
            op,
            value,
            ..
        } => format!(
            "{buf}[{}] {op:?} {}",
            atl_loopir::print::ix_to_string(index),
            atl_loopir::print::val_to_string(value)
        ),
        Stmt::Fill { buf, value, .. } => format!("fill {buf} with {value}"),
        Stmt::Fail { array } => format!("fail {array}"),
    }
}

// ---- the catalogue ----------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Mutation {
    /// A loop's upper bound `±1`.
    BoundDelta,
    /// A loop's upper bound `min(hi, C)`, `C` in 20..60.
    BoundMin,
    /// A loop's start `+1`.
    StartPlusOne,
    /// `=` ↔ `+=` in a store or a scalar assignment.
    SwapStoreOp,
    /// A literal (of a value, a fill) changed, or a coordinate used as a value moved
    /// by one.
    ChangeLiteral,
    /// A comparison of a condition flipped or its operand moved by one.
    FlipComparison,
    /// A condition `c` made `c && size < C`.
    GuardBySize,
    /// One coordinate of an access `±1`, and its flat index with it.
    ShiftCoordinate,
    /// Two loops of one nest exchange their variables' names (not their uses).
    SwapLoopVars,
    /// Two loops of one nest exchange their names everywhere (an alpha-renaming).
    AlphaSwapLoopVars,
    /// The loops of one nest renamed after a sibling nest's, in another order.
    RenameLikeSibling,
    /// A statement moved before its predecessor.
    MoveBefore,
    /// A store or scalar assignment duplicated.
    DuplicateStore,
    /// A statement deleted.
    DeleteStatement,
    /// A read of a temporary moved to another element (flat index consistent).
    OtherTemporaryElement,
    /// An inner (or any) loop made `parallel` or `vector`.
    Parallelize,
    /// `collapse` set on a loop whose body is one loop.
    Collapse,
    /// A binary operator of a value changed, or its operands swapped.
    ChangeOperator,
    /// A zeroed allocation made uninitialized, or the reverse.
    FlipZeroed,
    /// The bounds of two nested loops exchanged.
    SwapLoopBounds,
    /// A fill's or an allocation's length `±1`.
    LengthDelta,
    // -- non-finite values (issue 28): see the block "non-finite values" below.
    /// A stored value `v` made `v + (t * t * …) * 0` (or `(t + t) * 0`) for a load or
    /// scalar `t` of it: a term that overflows for large inputs (NaN times zero).
    GrowingTimesZero,
    /// A stored value `v` made `v + (x - x)` for a part `x` of it (NaN for an
    /// infinite `x`).
    SubtractSelf,
    /// A loop renamed (with its uses) after another name of the kernel (a size, an
    /// input, the output, another loop, a scalar, a buffer, the kernel) or a name of C
    /// (a keyword, a libm function, a C library name, the printer's prefix).
    RenameLoop,
    /// A scalar renamed (every declaration and use of its name) the same way.
    RenameScalar,
    /// A temporary buffer renamed (its `alloc`s, hoisting, loads, stores and fills) the
    /// same way.
    RenameBuffer,
    /// A scalar declaration or a hoisted buffer declared twice.
    DuplicateDeclaration,
    // -- index arrays (issue 31): edits of the kernel's text, see [`mutate_index_arrays`].
    /// A read of an index array moved to the next or previous element (`crd[p]` →
    /// `crd[1 + p]`), at one place or at every place it is read with that index.
    LoadIndexShift,
    /// A read of an index array made a read of another index array of the kernel.
    LoadArraySwap,
    /// An index array's declaration in the kernel weakened: its range one wider at
    /// either end, or `sorted` dropped (the entry checks follow the declaration), or
    /// where its range is checked switched (on entry ↔ where read).
    ArrayDeclEdit,
    /// A check of index arrays where they are read (an `if` whose `else` records a
    /// failure) weakened: removed around its body, its `else` dropped, or one of its
    /// conjuncts made `true`.
    WeakenCheck,
    // -- storage layouts (issue 33).
    /// An input's storage order in the kernel's declaration dropped or two of its
    /// positions exchanged (the shape as it was): the kernel then claims to read the
    /// program's elements elsewhere than the caller stores them.
    StorageOrderEdit,
    // -- folded storage (issue 32).
    /// A folded buffer's fold changed (one or two rows fewer, or one more), its
    /// length and every index of it with it: a consistent kernel whose rows may now
    /// overwrite each other before they are read.
    FoldEdit,
}

impl Mutation {
    /// Whether the mutation edits names (its validated mutants are also run in C).
    fn edits_names(self) -> bool {
        matches!(
            self,
            Mutation::RenameLoop
                | Mutation::RenameScalar
                | Mutation::RenameBuffer
                | Mutation::DuplicateDeclaration
        )
    }
}

const CATALOGUE: &[Mutation] = &[
    Mutation::BoundDelta,
    Mutation::BoundMin,
    Mutation::StartPlusOne,
    Mutation::SwapStoreOp,
    Mutation::ChangeLiteral,
    Mutation::FlipComparison,
    Mutation::GuardBySize,
    Mutation::ShiftCoordinate,
    Mutation::SwapLoopVars,
    Mutation::AlphaSwapLoopVars,
    Mutation::RenameLikeSibling,
    Mutation::MoveBefore,
    Mutation::DuplicateStore,
    Mutation::DeleteStatement,
    Mutation::OtherTemporaryElement,
    Mutation::Parallelize,
    Mutation::Collapse,
    Mutation::ChangeOperator,
    Mutation::FlipZeroed,
    Mutation::SwapLoopBounds,
    Mutation::LengthDelta,
    // -- non-finite values (issue 28).
    Mutation::GrowingTimesZero,
    Mutation::SubtractSelf,
    Mutation::RenameLoop,
    Mutation::RenameScalar,
    Mutation::RenameBuffer,
    Mutation::DuplicateDeclaration,
    // -- index arrays (issue 31).
    Mutation::LoadIndexShift,
    Mutation::LoadArraySwap,
    Mutation::ArrayDeclEdit,
    Mutation::WeakenCheck,
    // -- storage layouts (issue 33).
    Mutation::StorageOrderEdit,
    // -- folded storage (issue 32).
    Mutation::FoldEdit,
];

/// Names of C a renaming may pick: keywords, libm functions (as the printer calls
/// them), C library names, the printer's own prefix.
const C_NAMES: &[&str] = &[
    "int", "for", "double", "restrict", "sqrt", "expf", "fabs", "log", "free", "NULL", "INFINITY",
    "atl__k", "main",
];

/// Every name the kernel declares, and some names of C: what a renaming picks from.
fn rename_targets(k: &Kernel) -> Vec<String> {
    let mut names: Vec<String> = k.sizes.clone();
    names.extend(k.inputs.iter().map(|i| i.name.clone()));
    names.push(k.output.name.clone());
    names.push(k.name.clone());
    k.walk(&mut |s| match s {
        Stmt::For(l) => {
            names.push(l.var.clone());
            names.extend(l.hoisted_buffers.iter().cloned());
        }
        Stmt::Alloc { buf, .. } => names.push(buf.clone()),
        Stmt::Decl { name, .. } => names.push(name.clone()),
        _ => {}
    });
    names.extend(C_NAMES.iter().map(|s| s.to_string()));
    names.sort();
    names.dedup();
    names
}

/// Renames the scalar `from` to `to` everywhere (declarations, reads, writes).
fn rename_scalar(stmts: &mut [Stmt], from: &str, to: &str) {
    each_stmt(stmts, &mut |s| match s {
        Stmt::Decl { name, .. } | Stmt::SetScalar { name, .. } if name == from => {
            *name = to.to_string();
        }
        _ => {}
    });
    each_val(stmts, &mut |v| match v {
        Val::Scalar(name) if name == from => *name = to.to_string(),
        _ => {}
    });
}

/// Renames the temporary buffer `from` to `to` everywhere (allocations, hoisting,
/// loads, stores, fills).
fn rename_buffer(stmts: &mut [Stmt], from: &str, to: &str) {
    each_stmt(stmts, &mut |s| match s {
        Stmt::Alloc { buf, .. } | Stmt::Store { buf, .. } | Stmt::Fill { buf, .. }
            if buf == from =>
        {
            *buf = to.to_string();
        }
        Stmt::For(l) => {
            for b in l.hoisted_buffers.iter_mut().filter(|b| *b == from) {
                *b = to.to_string();
            }
        }
        _ => {}
    });
    each_val(stmts, &mut |v| match v {
        Val::Load(l) if l.buf == from => l.buf = to.to_string(),
        _ => {}
    });
}

/// Applies `m` at a random place of the kernel; a description of the edit, or `None`
/// when the kernel has no place for it.
fn mutate(k: &mut Kernel, m: Mutation, rng: &mut SplitMix64) -> Option<String> {
    if matches!(
        m,
        Mutation::LoadIndexShift
            | Mutation::LoadArraySwap
            | Mutation::ArrayDeclEdit
            | Mutation::WeakenCheck
    ) {
        return mutate_index_arrays(k, m, rng);
    }
    if matches!(m, Mutation::StorageOrderEdit) {
        return mutate_storage_order(k, rng);
    }
    if matches!(m, Mutation::FoldEdit) {
        return mutate_fold(k, rng);
    }
    let sizes = k.sizes.clone();
    let temporaries: Vec<String> = {
        let mut t = Vec::new();
        each_stmt(&mut k.body, &mut |s| {
            if let Stmt::Alloc { buf, .. } = s {
                t.push(buf.clone());
            }
        });
        t
    };
    let targets = rename_targets(k);
    let body = &mut k.body;
    let mut what = String::new();
    let done = match m {
        Mutation::BoundDelta | Mutation::BoundMin | Mutation::StartPlusOne => {
            let delta = if rng.chance(50) { 1 } else { -1 };
            let c = rng.range(20, 60);
            edit_one::<For>(
                rng,
                &mut |f| each_for(body, 0, &mut |l, _| f(l)),
                &|_| true,
                &mut |l| {
                    match m {
                        Mutation::BoundDelta => {
                            l.hi = ix_add(l.hi.clone(), Ix::Const(delta));
                            what = format!("loop `{}`: upper bound {delta:+}", l.var);
                        }
                        Mutation::BoundMin => {
                            l.hi = Ix::bin(IxOp::Min, l.hi.clone(), Ix::Const(c));
                            what = format!("loop `{}`: upper bound min(…, {c})", l.var);
                        }
                        _ => {
                            l.lo = ix_add(l.lo.clone(), Ix::Const(1));
                            what = format!("loop `{}`: start +1", l.var);
                        }
                    };
                },
            )
        }
        Mutation::SwapStoreOp => edit_one::<Stmt>(
            rng,
            &mut |f| each_stmt(body, f),
            &|s| matches!(s, Stmt::Store { .. } | Stmt::SetScalar { .. }),
            &mut |s| {
                if let Stmt::Store { op, buf: name, .. } | Stmt::SetScalar { op, name, .. } = s {
                    *op = match op {
                        StoreOp::Assign => StoreOp::Accumulate,
                        StoreOp::Accumulate => StoreOp::Assign,
                        // A max-reduction's step made a sum's.
                        StoreOp::Max => StoreOp::Accumulate,
                    };
                    what = format!("a store into `{name}` made {op:?}");
                }
            },
        ),
        Mutation::ChangeLiteral => {
            let choice = rng.below(3);
            let fills = count::<Stmt>(&mut |f| each_stmt(body, f), &|s| {
                matches!(s, Stmt::Fill { .. })
            });
            let coords = count::<Val>(&mut |f| each_val(body, f), &|v| matches!(v, Val::Coord(_)));
            if coords > 0 && rng.chance(40) {
                // A coordinate used as a value (`float(i)`, issue 32) moved by one.
                let delta = if rng.chance(50) { 1 } else { -1 };
                edit_one::<Val>(
                    rng,
                    &mut |f| each_val(body, f),
                    &|v| matches!(v, Val::Coord(_)),
                    &mut |v| {
                        if let Val::Coord(ix) = v {
                            let old = ix.clone();
                            *ix = Ix::bin(IxOp::Add, old.clone(), Ix::Const(delta));
                            what = format!(
                                "the value float({}) moved by {delta}",
                                atl_loopir::print::ix_to_string(&old)
                            );
                        }
                    },
                )
            } else if fills > 0 && rng.chance(30) {
                edit_one::<Stmt>(
                    rng,
                    &mut |f| each_stmt(body, f),
                    &|s| matches!(s, Stmt::Fill { .. }),
                    &mut |s| {
                        if let Stmt::Fill { value, buf, .. } = s {
                            *value += 1.0;
                            what = format!("a fill of `{buf}` with {value}");
                        }
                    },
                )
            } else {
                edit_one::<Val>(
                    rng,
                    &mut |f| each_val(body, f),
                    &|v| matches!(v, Val::Lit(_)),
                    &mut |v| {
                        if let Val::Lit(x) = v {
                            let old = *x;
                            *x = match choice {
                                0 => old + 1.0,
                                1 if old != 0.0 => 0.0,
                                _ => 2.0 * old + 0.5,
                            };
                            what = format!("literal {old} made {x}");
                        }
                    },
                )
            }
        }
        Mutation::FlipComparison => {
            let which = rng.below(3);
            let delta = if rng.chance(50) { 1 } else { -1 };
            let mut inner = SplitMix64::new(rng.next_u64());
            edit_one::<Cond>(
                rng,
                &mut |f| each_cond(body, &mut |c| each_cmp_in(c, f)),
                &|_| true,
                &mut |c| {
                    if let Cond::Cmp(op, a, b) = c {
                        let before = atl_loopir::print::cond_to_string(&Cond::Cmp(
                            *op,
                            a.clone(),
                            b.clone(),
                        ));
                        match which {
                            0 => *op = other_op(*op, &mut inner),
                            1 => *a = ix_add(a.clone(), Ix::Const(delta)),
                            _ => *b = ix_add(b.clone(), Ix::Const(delta)),
                        }
                        what = format!(
                            "condition `{before}` made `{}`",
                            atl_loopir::print::cond_to_string(c)
                        );
                    }
                },
            )
        }
        Mutation::GuardBySize => {
            let size = rng.pick(&sizes).clone();
            let c = rng.range(20, 60);
            edit_one::<Cond>(rng, &mut |f| each_cond(body, f), &|_| true, &mut |cond| {
                *cond = Cond::And(
                    Box::new(cond.clone()),
                    Box::new(Cond::Cmp(CmpOp::Lt, Ix::Var(size.clone()), Ix::Const(c))),
                );
                what = format!(
                    "condition made `{}`",
                    atl_loopir::print::cond_to_string(cond)
                );
            })
        }
        Mutation::ShiftCoordinate | Mutation::OtherTemporaryElement => {
            let only_temporaries = matches!(m, Mutation::OtherTemporaryElement);
            let r1 = rng.next_u64();
            let r2 = rng.next_u64();
            let total = {
                let mut n = 0;
                each_access(body, &mut |a| {
                    let (buf, coords) = match &a {
                        Access::Load(l) => (l.buf.as_str(), &l.coords),
                        Access::Store(b, _, c) => (*b, &**c),
                    };
                    let is_load = matches!(a, Access::Load(_));
                    if !coords.is_empty()
                        && (!only_temporaries || (is_load && temporaries.iter().any(|t| t == buf)))
                    {
                        n += 1;
                    }
                });
                n
            };
            if total == 0 {
                false
            } else {
                let target = rng.below(total);
                let mut n = 0;
                each_access(body, &mut |a| {
                    let is_load = matches!(a, Access::Load(_));
                    let (buf, index, coords): (String, &mut Ix, &mut Vec<Coord>) = match a {
                        Access::Load(l) => (l.buf.clone(), &mut l.index, &mut l.coords),
                        Access::Store(b, i, c) => (b.to_string(), i, c),
                    };
                    if coords.is_empty()
                        || (only_temporaries && !(is_load && temporaries.contains(&buf)))
                    {
                        return;
                    }
                    if n == target {
                        let d = (r1 % coords.len() as u64) as usize;
                        let old = coords[d].index.clone();
                        let new = match (only_temporaries, r2 % 3) {
                            (true, 0) => IndexExpr::Const(0),
                            (true, 1) => {
                                IndexExpr::sub(coords[d].extent.clone(), IndexExpr::Const(1))
                            }
                            (_, 2) => IndexExpr::sub(old.clone(), IndexExpr::Const(1)),
                            _ => IndexExpr::add(old.clone(), IndexExpr::Const(1)),
                        };
                        what = format!(
                            "{} of `{buf}`: coordinate {d} `{old}` made `{new}`",
                            if is_load { "a load" } else { "a store" }
                        );
                        edit_coord(index, coords, d, new);
                    }
                    n += 1;
                });
                true
            }
        }
        Mutation::SwapLoopVars | Mutation::AlphaSwapLoopVars => {
            let pick = rng.next_u64();
            edit_one::<For>(
                rng,
                &mut |f| each_for(body, 0, &mut |l, _| f(l)),
                &|l| nest_vars(l).len() >= 2,
                &mut |l| {
                    let vars = nest_vars(l);
                    let other = vars[1 + (pick % (vars.len() as u64 - 1)) as usize].clone();
                    let a = l.var.clone();
                    if matches!(m, Mutation::SwapLoopVars) {
                        // Only the loops' own names.
                        l.var = other.clone();
                        each_for(&mut l.body, 0, &mut |inner, _| {
                            if inner.var == other {
                                inner.var = a.clone();
                            }
                        });
                        what = format!("loops `{a}` and `{other}` exchange their names only");
                    } else {
                        let map: BTreeMap<String, String> =
                            [(a.clone(), other.clone()), (other.clone(), a.clone())].into();
                        let mut s = Stmt::For(l.clone());
                        rename_stmt(&mut s, &map);
                        if let Stmt::For(new) = s {
                            *l = new;
                        }
                        what = format!("loops `{a}` and `{other}` exchange their names everywhere");
                    }
                },
            )
        }
        Mutation::RenameLikeSibling => {
            // Nests at the top of some block, with their variables.
            let mut nests: Vec<Vec<String>> = Vec::new();
            each_block(body, &mut |b| {
                for s in b.iter() {
                    if let Stmt::For(l) = s {
                        nests.push(nest_vars(l));
                    }
                }
            });
            if nests.len() < 2 {
                false
            } else {
                let a = rng.below(nests.len());
                let mut b = rng.below(nests.len() - 1);
                if b >= a {
                    b += 1;
                }
                let mut names = nests[b].clone();
                if rng.chance(50) {
                    names.reverse();
                } else {
                    names.rotate_left(1);
                }
                let map: BTreeMap<String, String> = nests[a]
                    .iter()
                    .cloned()
                    .zip(names.iter().cloned())
                    .collect();
                let mut k = 0;
                each_block(body, &mut |blk| {
                    for s in blk.iter_mut() {
                        if let Stmt::For(_) = s {
                            if k == a {
                                rename_stmt(s, &map);
                            }
                            k += 1;
                        }
                    }
                });
                what = format!("nest {:?} renamed {:?}", nests[a], map);
                true
            }
        }
        Mutation::MoveBefore => {
            let r = rng.next_u64();
            edit_one::<Vec<Stmt>>(
                rng,
                &mut |f| each_block(body, f),
                &|b| b.len() >= 2,
                &mut |b| {
                    let i = 1 + (r % (b.len() as u64 - 1)) as usize;
                    b.swap(i - 1, i);
                    what = format!(
                        "statement {i} of a block of {} moved before its predecessor",
                        b.len()
                    );
                },
            )
        }
        Mutation::DuplicateStore | Mutation::DeleteStatement => {
            let r = rng.next_u64();
            let dup = matches!(m, Mutation::DuplicateStore);
            let ok = move |b: &Vec<Stmt>| {
                if dup {
                    b.iter()
                        .any(|s| matches!(s, Stmt::Store { .. } | Stmt::SetScalar { .. }))
                } else {
                    !b.is_empty()
                }
            };
            edit_one::<Vec<Stmt>>(rng, &mut |f| each_block(body, f), &ok, &mut |b| {
                let candidates: Vec<usize> = (0..b.len())
                    .filter(|&i| {
                        !dup || matches!(b[i], Stmt::Store { .. } | Stmt::SetScalar { .. })
                    })
                    .collect();
                let i = candidates[(r % candidates.len() as u64) as usize];
                let first = summary(&b[i]);
                if dup {
                    let s = b[i].clone();
                    b.insert(i + 1, s);
                    what = format!("statement `{first}` duplicated");
                } else {
                    b.remove(i);
                    what = format!("statement `{first}` deleted");
                }
            })
        }
        Mutation::Parallelize => {
            let vector = rng.chance(30);
            let inner_only = rng.chance(70);
            edit_one::<(For, usize)>(
                rng,
                &mut |f| {
                    each_for(body, 0, &mut |l, d| {
                        let mut pair = (l.clone(), d);
                        f(&mut pair);
                        *l = pair.0;
                    })
                },
                &|(l, d)| (!inner_only || *d >= 1) && !(if vector { l.vector } else { l.parallel }),
                &mut |(l, _)| {
                    if vector {
                        l.vector = true;
                    } else {
                        l.parallel = true;
                    }
                    what = format!(
                        "loop `{}` made {}",
                        l.var,
                        if vector { "vector" } else { "parallel" }
                    );
                },
            )
        }
        Mutation::Collapse => edit_one::<For>(
            rng,
            &mut |f| each_for(body, 0, &mut |l, _| f(l)),
            &|l| !l.collapse && l.body.len() == 1 && matches!(l.body[0], Stmt::For(_)),
            &mut |l| {
                l.collapse = true;
                l.parallel = true;
                what = format!("loop `{}` made parallel, collapse", l.var);
            },
        ),
        Mutation::ChangeOperator => {
            let swap = rng.chance(40);
            let to = *rng.pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul]);
            edit_one::<Val>(
                rng,
                &mut |f| each_val(body, f),
                &|v| matches!(v, Val::Bin(..)),
                &mut |v| {
                    if let Val::Bin(op, a, b) = v {
                        if swap {
                            std::mem::swap(a, b);
                            what = format!("operands of a {op:?} swapped");
                        } else {
                            what = format!("{op:?} made {to:?}");
                            *op = to;
                        }
                    }
                },
            )
        }
        Mutation::FlipZeroed => edit_one::<Stmt>(
            rng,
            &mut |f| each_stmt(body, f),
            &|s| matches!(s, Stmt::Alloc { .. }),
            &mut |s| {
                if let Stmt::Alloc { zeroed, buf, .. } = s {
                    *zeroed = !*zeroed;
                    what = format!("alloc `{buf}` zeroed: {zeroed}");
                }
            },
        ),
        Mutation::SwapLoopBounds => edit_one::<For>(
            rng,
            &mut |f| each_for(body, 0, &mut |l, _| f(l)),
            &|l| l.body.iter().any(|s| matches!(s, Stmt::For(_))),
            &mut |l| {
                let outer = l.var.clone();
                let (lo, hi) = (l.lo.clone(), l.hi.clone());
                for s in l.body.iter_mut() {
                    if let Stmt::For(inner) = s {
                        if inner.lo.mentions(&outer) || inner.hi.mentions(&outer) {
                            continue;
                        }
                        l.lo = inner.lo.clone();
                        l.hi = inner.hi.clone();
                        inner.lo = lo;
                        inner.hi = hi;
                        what = format!("loops `{outer}` and `{}` exchange bounds", inner.var);
                        break;
                    }
                }
            },
        ),
        Mutation::LengthDelta => {
            let delta = if rng.chance(50) { 1 } else { -1 };
            edit_one::<Stmt>(
                rng,
                &mut |f| each_stmt(body, f),
                &|s| matches!(s, Stmt::Fill { .. } | Stmt::Alloc { .. }),
                &mut |s| {
                    if let Stmt::Fill { len, buf, .. } | Stmt::Alloc { len, buf, .. } = s {
                        *len = ix_add(len.clone(), Ix::Const(delta));
                        what = format!("length of `{buf}` {delta:+}");
                    }
                },
            )
        }
        Mutation::GrowingTimesZero | Mutation::SubtractSelf => {
            match mutate_non_finite(body, m, rng) {
                Some(w) => {
                    what = w;
                    true
                }
                None => false,
            }
        }
        Mutation::RenameLoop => {
            let to = rng.pick(&targets).clone();
            edit_one::<Stmt>(
                rng,
                &mut |f| each_stmt(body, f),
                &|s| matches!(s, Stmt::For(l) if l.var != to),
                &mut |s| {
                    if let Stmt::For(l) = s {
                        what = format!("loop `{}` renamed `{to}`", l.var);
                        let map = BTreeMap::from([(l.var.clone(), to.clone())]);
                        rename_stmt(s, &map);
                    }
                },
            )
        }
        Mutation::RenameScalar | Mutation::RenameBuffer => {
            let to = rng.pick(&targets).clone();
            let scalar = matches!(m, Mutation::RenameScalar);
            let mut from = None;
            let found = edit_one::<Stmt>(
                rng,
                &mut |f| each_stmt(body, f),
                &|s| match s {
                    Stmt::Decl { name, .. } => scalar && *name != to,
                    Stmt::Alloc { buf, .. } => !scalar && *buf != to,
                    _ => false,
                },
                &mut |s| {
                    if let Stmt::Decl { name: x, .. } | Stmt::Alloc { buf: x, .. } = s {
                        from = Some(x.clone());
                    }
                },
            );
            if let (true, Some(from)) = (found, from) {
                if scalar {
                    rename_scalar(body, &from, &to);
                    what = format!("scalar `{from}` renamed `{to}`");
                } else {
                    rename_buffer(body, &from, &to);
                    what = format!("buffer `{from}` renamed `{to}`");
                }
            }
            found
        }
        Mutation::DuplicateDeclaration => {
            let decls = count::<Stmt>(&mut |f| each_stmt(body, f), &|s| {
                matches!(s, Stmt::Decl { .. })
            });
            if decls > 0 && rng.chance(75) {
                let target = rng.below(decls);
                let mut k = 0;
                each_block(body, &mut |block| {
                    let mut at = None;
                    for (i, s) in block.iter().enumerate() {
                        if let Stmt::Decl { name, .. } = s {
                            if k == target {
                                at = Some(i);
                                what = format!("scalar `{name}` declared twice");
                            }
                            k += 1;
                        }
                    }
                    if let Some(i) = at {
                        let copy = block[i].clone();
                        block.insert(i + 1, copy);
                    }
                });
                true
            } else {
                edit_one::<For>(
                    rng,
                    &mut |f| each_for(body, 0, &mut |l, _| f(l)),
                    &|l| !l.hoisted_buffers.is_empty(),
                    &mut |l| {
                        let b = l.hoisted_buffers[0].clone();
                        what = format!("buffer `{b}` hoisted twice around loop `{}`", l.var);
                        l.hoisted_buffers.push(b);
                    },
                )
            }
        }
        // Handled above, on the kernel's text.
        Mutation::LoadIndexShift
        | Mutation::LoadArraySwap
        | Mutation::ArrayDeclEdit
        | Mutation::WeakenCheck
        | Mutation::StorageOrderEdit
        | Mutation::FoldEdit => false,
    };
    (done && !what.is_empty()).then_some(what)
}

// ---- index arrays (issue 31) ---------------------------------------------------------------
//
// Reads of index arrays sit inside index expressions (`v[crd[p] @ (crd[p])]`, loop
// bounds `pos[i]..pos[i + 1]`), so these mutations edit the kernel's text (which the
// loop IR reads back) rather than its tree: every place an array is read is a place
// `NAME[` in the body's lines. The `source:` line (the definition) is never edited.

/// The byte offsets in `text` just after each `name[` in a body line (not the header
/// nor the `source:` line), for every index array `name`.
fn array_reads(text: &str, arrays: &[String]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let body_line = !line.starts_with("kernel ")
            && !trimmed.starts_with("source:")
            && !trimmed.starts_with("requires ");
        if body_line {
            for name in arrays {
                let pattern = format!("{name}[");
                for (k, _) in line.match_indices(&pattern) {
                    let before = line[..k].chars().next_back();
                    if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
                        out.push((offset + k + pattern.len(), name.clone()));
                    }
                }
            }
        }
        offset += line.len();
    }
    out.sort();
    out
}

/// The text of the index at `start` (just after `[`) up to its matching `]`.
fn bracketed(text: &str, start: usize) -> Option<&str> {
    let mut depth = 0usize;
    for (k, c) in text[start..].char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' if depth > 0 => depth -= 1,
            ']' => return Some(&text[start..start + k]),
            _ => {}
        }
    }
    None
}

/// [`Mutation::FoldEdit`] on one of the folded buffers.
fn mutate_fold(k: &mut Kernel, rng: &mut SplitMix64) -> Option<String> {
    let mut folded: Vec<(String, i64)> = Vec::new();
    each_stmt(&mut k.body, &mut |s| {
        if let Stmt::Alloc {
            buf, fold: Some(f), ..
        } = s
        {
            folded.push((buf.clone(), *f));
        }
    });
    if folded.is_empty() {
        return None;
    }
    let (buf, from) = rng.pick(&folded).clone();
    let to = match rng.below(3) {
        0 => from - 1,
        1 => from - 2,
        _ => from + 1,
    };
    if to < 1 {
        return None;
    }
    fn refold(ix: &mut Ix, from: i64, to: i64) {
        match ix {
            Ix::Bin(IxOp::ModNat, a, b) if **b == Ix::Const(from) => {
                **b = Ix::Const(to);
                refold(a, from, to);
            }
            Ix::Bin(_, a, b) => {
                refold(a, from, to);
                refold(b, from, to);
            }
            Ix::Neg(a) | Ix::Load(_, a) => refold(a, from, to),
            Ix::Const(_) | Ix::Var(_) => {}
        }
    }
    each_stmt(&mut k.body, &mut |s| {
        if let Stmt::Alloc {
            buf: b,
            fold,
            len,
            shape,
            ..
        } = s
            && *b == buf
        {
            *fold = Some(to);
            let rest = shape
                .iter()
                .skip(1)
                .cloned()
                .fold(IndexExpr::Const(to), IndexExpr::mul);
            if let Some(l) = atl_loopir::print::plain_ix(&atl_lang::poly::normalize(&rest)) {
                *len = l;
            }
        }
        if let Stmt::Store { buf: b, index, .. } = s
            && *b == buf
        {
            refold(index, from, to);
        }
        s.visit_own_loads_mut(&mut |l| {
            if l.buf == buf {
                refold(&mut l.index, from, to);
            }
        });
    });
    Some(format!("`{buf}` folded by {to} instead of {from}"))
}

/// [`Mutation::StorageOrderEdit`] on one of the inputs declared with a layout.
fn mutate_storage_order(k: &mut Kernel, rng: &mut SplitMix64) -> Option<String> {
    let laid_out: Vec<usize> = (0..k.inputs.len())
        .filter(|&i| k.inputs[i].order.is_some())
        .collect();
    if laid_out.is_empty() {
        return None;
    }
    let b = &mut k.inputs[*rng.pick(&laid_out)];
    let order = b.order.as_mut()?;
    if order.len() < 2 || rng.chance(50) {
        b.order = None;
        return Some(format!("`{}`: its storage order dropped", b.name));
    }
    let (i, j) = (rng.below(order.len()), rng.below(order.len()));
    if i == j {
        return None;
    }
    order.swap(i, j);
    Some(format!("`{}`: storage order {order:?}", b.name))
}

fn mutate_index_arrays(k: &mut Kernel, m: Mutation, rng: &mut SplitMix64) -> Option<String> {
    let arrays: Vec<String> = k
        .inputs
        .iter()
        .filter(|b| b.index_array.is_some())
        .map(|b| b.name.clone())
        .collect();
    if arrays.is_empty() {
        return None;
    }
    if matches!(m, Mutation::ArrayDeclEdit) {
        let pick = rng.below(arrays.len());
        let b = k
            .inputs
            .iter_mut()
            .filter(|b| b.index_array.is_some())
            .nth(pick)?;
        if rng.chance(25) {
            b.checked_where_read = !b.checked_where_read;
            return Some(format!(
                "`{}`: checked {}",
                b.name,
                if b.checked_where_read {
                    "where read"
                } else {
                    "on entry"
                }
            ));
        }
        let decl = b.index_array.as_mut()?;
        let what = match rng.below(3) {
            0 => {
                decl.hi = IndexExpr::add(decl.hi.clone(), IndexExpr::Const(1));
                format!("`{}`: range one wider at the top", b.name)
            }
            1 => {
                decl.lo = IndexExpr::add(decl.lo.clone(), IndexExpr::Const(-1));
                format!("`{}`: range one wider at the bottom", b.name)
            }
            _ if decl.sorted => {
                decl.sorted = false;
                format!("`{}`: `sorted` dropped", b.name)
            }
            _ => return None,
        };
        return Some(what);
    }
    if matches!(m, Mutation::WeakenCheck) {
        return weaken_check(k, rng);
    }
    let text = atl_loopir::print::kernel_to_text(k);
    let (edited, what) = {
        let reads = array_reads(&text, &arrays);
        if reads.is_empty() {
            return None;
        }
        let (at, name) = reads[rng.below(reads.len())].clone();
        let index = bracketed(&text, at)?.to_string();
        // One place, or every place this array is read at this index.
        let everywhere = rng.chance(50);
        let places: Vec<usize> = if everywhere {
            reads
                .iter()
                .filter(|(p, n)| *n == name && bracketed(&text, *p) == Some(index.as_str()))
                .map(|(p, _)| *p)
                .collect()
        } else {
            vec![at]
        };
        let (new_name, new_index, what) = if matches!(m, Mutation::LoadIndexShift) {
            let delta = if rng.chance(50) { 1 } else { -1 };
            (
                name.clone(),
                format!("{delta} + {index}"),
                format!("`{name}[{index}]` read at `{delta} + {index}`"),
            )
        } else {
            let others: Vec<&String> = arrays.iter().filter(|a| **a != name).collect();
            if others.is_empty() {
                return None;
            }
            let other = others[rng.below(others.len())].clone();
            let what = format!("`{name}[{index}]` read from `{other}`");
            (other, index.clone(), what)
        };
        let mut out = String::with_capacity(text.len() + 16);
        let mut last = 0;
        for p in places {
            let name_start = p - name.len() - 1;
            out.push_str(&text[last..name_start]);
            out.push_str(&format!("{new_name}[{new_index}"));
            last = p + index.len();
        }
        out.push_str(&text[last..]);
        let scope = if everywhere { ", everywhere" } else { "" };
        (out, format!("{what}{scope}"))
    };
    *k = atl_loopir::parse::parse_kernel(&edited).ok()?;
    Some(what)
}

// ---- non-finite values (issue 28) ---------------------------------------------------------
//
// Mutations that add a term which is zero over the reals but NaN in floating point when
// a part of it is infinite (a product of large inputs overflows): a validator that
// simplifies `x * 0` or `x - x` for such an `x` validates a kernel that gives NaN where
// the definition does not. Validated mutants are also run on large inputs
// ([`large_inputs`]), where these terms overflow.

/// The loads and scalar reads of a value (the terms a mutation may grow).
fn leaves(v: &Val) -> Vec<Val> {
    let mut out = Vec::new();
    v.visit(&mut |x| {
        if matches!(x, Val::Load(_) | Val::Scalar(_)) {
            out.push(x.clone());
        }
    });
    out
}

/// The parts of a value that are loads, scalar reads or operations on them.
fn parts(v: &Val) -> Vec<Val> {
    let mut out = Vec::new();
    v.visit(&mut |x| {
        if matches!(
            x,
            Val::Load(_) | Val::Scalar(_) | Val::Bin(..) | Val::Call(..)
        ) {
            out.push(x.clone());
        }
    });
    out
}

/// [`Mutation::GrowingTimesZero`] or [`Mutation::SubtractSelf`] on one stored value
/// (of a store or a scalar assignment) that reads something; a description, or `None`
/// when there is no such value.
fn mutate_non_finite(body: &mut [Stmt], m: Mutation, rng: &mut SplitMix64) -> Option<String> {
    let factors = rng.range(2, 3);
    let as_sum = rng.chance(20);
    let pick = rng.next_u64();
    let mut what = String::new();
    let done = edit_one::<Stmt>(
        rng,
        &mut |f| each_stmt(body, f),
        &|s| match s {
            Stmt::Store { value, .. } | Stmt::SetScalar { value, .. } => !leaves(value).is_empty(),
            _ => false,
        },
        &mut |s| {
            let (Stmt::Store { value, .. } | Stmt::SetScalar { value, .. }) = s else {
                return;
            };
            let added = if let Mutation::GrowingTimesZero = m {
                let candidates = leaves(value);
                let t = candidates[(pick % candidates.len() as u64) as usize].clone();
                let grown = if as_sum {
                    Val::Bin(BinOp::Add, Box::new(t.clone()), Box::new(t))
                } else {
                    (1..factors).fold(t.clone(), |acc, _| {
                        Val::Bin(BinOp::Mul, Box::new(acc), Box::new(t.clone()))
                    })
                };
                Val::Bin(BinOp::Mul, Box::new(grown), Box::new(Val::Lit(0.0)))
            } else {
                let candidates = parts(value);
                let x = candidates[(pick % candidates.len() as u64) as usize].clone();
                Val::Bin(BinOp::Sub, Box::new(x.clone()), Box::new(x))
            };
            what = format!(
                "`{}` added to a stored value",
                atl_loopir::print::val_to_string(&added)
            );
            let old = std::mem::replace(value, Val::Lit(0.0));
            *value = Val::Bin(BinOp::Add, Box::new(old), Box::new(added));
        },
    );
    (done && !what.is_empty()).then_some(what)
}

/// `inputs` with about a third of the elements multiplied by `1e200` (a product of two
/// of them overflows to an infinity): a validated kernel must compute what the
/// definition computes on them too, NaN and infinities included.
fn large_inputs(
    inputs: &BTreeMap<String, atl_lang::tensor::Tensor>,
    rng: &mut SplitMix64,
) -> BTreeMap<String, atl_lang::tensor::Tensor> {
    let mut out = inputs.clone();
    for t in out.values_mut() {
        for x in t.data.iter_mut() {
            if rng.chance(33) {
                *x *= 1e200;
            }
        }
    }
    out
}

// ---- running validated mutants ----------------------------------------------------------

/// The size assignments a validated mutant is run at: every size 23, every size 41,
/// and random mixes up to 64 — those the program accepts, cut down to the cost limit.
fn run_sizes(
    program: &atl_lang::ir::Program,
    names: &[String],
    rng: &mut SplitMix64,
) -> Vec<BTreeMap<String, i64>> {
    let mut out = Vec::new();
    let mut tries: Vec<BTreeMap<String, i64>> = [23, 41]
        .iter()
        .map(|&v| names.iter().map(|n| (n.clone(), v)).collect())
        .collect();
    for _ in 0..4 {
        tries.push(
            names
                .iter()
                .map(|n| {
                    let v = if rng.chance(60) {
                        rng.range(20, 64)
                    } else {
                        rng.range(1, 19)
                    };
                    (n.clone(), v)
                })
                .collect(),
        );
    }
    for mut sizes in tries {
        // Too costly: shrink the smallest sizes first (keeping the large ones large).
        while sizes.values().product::<i64>() > COST_LIMIT {
            let (name, v) = sizes
                .iter()
                .filter(|(_, v)| **v > 1)
                .min_by_key(|(_, v)| **v)
                .map(|(k, v)| (k.clone(), *v))
                .expect("some size above 1");
            sizes.insert(name, (v / 3).max(1));
        }
        if atl_lang::interp::check_sizes(program, &sizes).is_ok() && !out.contains(&sizes) {
            out.push(sizes);
        }
        if out.len() >= 4 {
            break;
        }
    }
    out
}

/// Runs a validated mutant against the reference at large sizes: the first
/// disagreement, if any.
fn disagreement(
    kernel: &Kernel,
    program: &atl_lang::ir::Program,
    def: &str,
    rng: &mut SplitMix64,
) -> Option<String> {
    let mut runs = Vec::new();
    for (k, sizes) in run_sizes(program, &kernel.sizes, rng)
        .into_iter()
        .enumerate()
    {
        let seed = rng.next_u64() % 1000;
        let inputs = support::inputs(program, &sizes, seed);
        // At the first sizes, large inputs too (non-finite values, issue 28).
        if k == 0 {
            let large = large_inputs(&inputs, rng);
            runs.push((sizes.clone(), format!("{seed}, a third times 1e200"), large));
        }
        runs.push((sizes, seed.to_string(), inputs));
    }
    for (sizes, seed, inputs) in runs {
        let want = match atl_lang::interp::eval_def(
            program,
            def,
            &sizes,
            &inputs,
            &EvalOptions {
                parallel: false,
                ..EvalOptions::default()
            },
        ) {
            Ok(t) => t,
            Err(_) => continue,
        };
        match atl_loopir::interp::run_kernel(kernel, &sizes, &inputs) {
            Err(d) if d.code == "E0937" => continue,
            Err(d) => {
                return Some(format!(
                    "at sizes {sizes:?} (inputs seed {seed}) the kernel faults: {} {}",
                    d.code, d.message
                ));
            }
            Ok(got) => {
                if got.shape != want.shape {
                    return Some(format!(
                        "at sizes {sizes:?}: shape {:?} where the source has {:?}",
                        got.shape, want.shape
                    ));
                }
                let err = support::max_error(&got, &want);
                if err > 1e-9 {
                    let at = got
                        .data
                        .iter()
                        .zip(&want.data)
                        .position(|(g, w)| {
                            (g - w).abs() / (1.0 + w.abs()) > 1e-9 || g.is_nan() != w.is_nan()
                        })
                        .unwrap_or(0);
                    return Some(format!(
                        "at sizes {sizes:?} (inputs seed {seed}): flat element {at} is {} where \
                         the source gives {} (max relative error {err:e})",
                        got.data[at], want.data[at]
                    ));
                }
            }
        }
    }
    None
}

/// Whether this is the sanitizer run (`ATL_SANITIZE=1`, as `.ci/run` sets it).
fn sanitize() -> bool {
    std::env::var_os("ATL_SANITIZE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Compiles a validated mutant's C (`double`; a harness executable, under
/// AddressSanitizer and UBSan in the sanitizer run, with OpenMP otherwise) and runs it at one size assignment against the reference: the C is what
/// the validator's verdict is for, and the loop-IR interpreter keeps index variables,
/// scalars and buffers apart where C has one namespace. The first problem, if any.
fn c_disagreement(
    kernel: &Kernel,
    program: &atl_lang::ir::Program,
    def: &str,
    rng: &mut SplitMix64,
) -> Option<String> {
    use atl_emit_c::{Backend, CompileOptions, Dtype, EmitOptions};
    let options = EmitOptions {
        dtype: Dtype::F64,
        symbol: Some(atl_emit_c::internal_symbol(&kernel.name)),
        ..EmitOptions::default()
    };
    let compile = if sanitize() {
        CompileOptions {
            backend: Backend::Harness,
            sanitize: true,
            opt_level: 1,
            ..CompileOptions::default()
        }
    } else {
        // An executable, not a shared object loaded into this process: a mutant whose C
        // crashes is then a reported failure of its case, not the end of the test.
        CompileOptions {
            backend: Backend::Harness,
            openmp: true,
            opt_level: 1,
            ..CompileOptions::default()
        }
    };
    let compiled = match atl_emit_c::compile(kernel, &options, &compile) {
        Ok(c) => c,
        Err(d) => {
            return Some(format!(
                "its C does not compile: {} {}\n{}",
                d.code,
                d.message,
                d.notes.join("\n")
            ));
        }
    };
    let sizes = run_sizes(program, &kernel.sizes, rng).into_iter().next()?;
    let seed = rng.next_u64() % 1000;
    let inputs = support::inputs(program, &sizes, seed);
    let want =
        atl_lang::interp::eval_def(program, def, &sizes, &inputs, &EvalOptions::default()).ok()?;
    match compiled.run(&sizes, &inputs) {
        Err(d) => Some(format!(
            "at sizes {sizes:?} (inputs seed {seed}) its C fails: {} {}\n{}",
            d.code,
            d.message,
            d.notes.join("\n")
        )),
        Ok(got) => {
            let err = support::max_error(&got.output, &want);
            (err > 1e-9).then(|| {
                format!(
                    "at sizes {sizes:?} (inputs seed {seed}) its C computes something else \
                     (max relative error {err:e})"
                )
            })
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// What became of one case.
enum Outcome {
    NoPlace,
    Verdict {
        kind: Mutation,
        /// 0 validated, 1 rejected, 2 not validated.
        verdict: usize,
        failure: Option<String>,
    },
}

/// Mutates, validates and (when validated) runs one case.
#[allow(clippy::print_stderr)] // slow cases, with `ATL_VALIDATE_FUZZ_SLOW`
fn run_case(
    case: usize,
    seed: u64,
    example: &support::Example,
    def: &str,
    original: &Kernel,
    solver: &atl_solver::Solver,
) -> Outcome {
    let mut rng = SplitMix64::new(SplitMix64::case_seed(seed, case as u64));
    // A mutation with no place in this kernel (or that changes nothing): another.
    let mut found = None;
    // A kernel that reads index arrays gets their mutations two times in five (the
    // catalogue has three among thirty).
    let reads_arrays = original.inputs.iter().any(|b| b.index_array.is_some());
    // Likewise a kernel with an input declared with a layout, its order's edits.
    let laid_out = original.inputs.iter().any(|b| b.order.is_some());
    // And a kernel with a folded buffer, its fold's edits.
    let mut folded = false;
    for s in &original.body {
        s.walk(&mut |n| folded |= matches!(n, Stmt::Alloc { fold: Some(_), .. }));
    }
    for _ in 0..8 {
        let m = if laid_out && rng.chance(30) {
            Mutation::StorageOrderEdit
        } else if folded && rng.chance(30) {
            Mutation::FoldEdit
        } else if reads_arrays && rng.chance(40) {
            *rng.pick(&[
                Mutation::LoadIndexShift,
                Mutation::LoadArraySwap,
                Mutation::ArrayDeclEdit,
                Mutation::WeakenCheck,
            ])
        } else {
            *rng.pick(CATALOGUE)
        };
        let mut mutant = original.clone();
        if let Some(what) = mutate(&mut mutant, m, &mut rng)
            && mutant != *original
        {
            found = Some((m, what, mutant));
            break;
        }
    }
    let Some((m, mut what, mut mutant)) = found else {
        return Outcome::NoPlace;
    };
    let mut named = m.edits_names();
    // Sometimes a second edit on top (a wrong kernel may need two to look right).
    if rng.chance(25) {
        let second = *rng.pick(CATALOGUE);
        let mut twice = mutant.clone();
        if let Some(more) = mutate(&mut twice, second, &mut rng) {
            mutant = twice;
            what = format!("{what}; then {second:?}: {more}");
            named |= second.edits_names();
        }
    }
    let source = Source {
        program: &example.program,
        shapes: &example.shapes,
        def,
    };
    let t0 = Instant::now();
    let report = validate(&mutant, Some(&source), solver);
    let t_validate = t0.elapsed();
    let file = example
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let mut failure = None;
    let verdict = match report.verdict {
        KernelVerdict::Validated => {
            if let Ok(dir) = std::env::var("ATL_VALIDATE_FUZZ_DUMP") {
                let name = format!(
                    "{dir}/case{case}_{}_{def}.ir",
                    file.trim_end_matches(".atl")
                );
                let _ = std::fs::write(
                    name,
                    format!(
                        "# {file} `{def}`: {m:?}: {what}\n{}",
                        atl_loopir::print::kernel_to_text(&mutant)
                    ),
                );
            }
            let in_c = named || std::env::var("ATL_VALIDATE_FUZZ_C").is_ok_and(|v| v == "all");
            let wrong = disagreement(&mutant, &example.program, def, &mut rng).or_else(|| {
                in_c.then(|| c_disagreement(&mutant, &example.program, def, &mut rng))
                    .flatten()
            });
            if let Some(why) = wrong {
                failure = Some(format!(
                    "case {case}: {file} `{def}`, mutation {m:?} ({what}) is VALIDATED but \
                     wrong {why}\n{}",
                    atl_loopir::print::kernel_to_text(&mutant)
                ));
            }
            0
        }
        KernelVerdict::Rejected { .. } => 1,
        KernelVerdict::NotValidated { .. } => 2,
    };
    if std::env::var("ATL_VALIDATE_FUZZ_SLOW").is_ok() && t0.elapsed().as_secs_f64() > 1.0 {
        eprintln!(
            "slow case {case}: {file} `{def}` {m:?} ({what}): validated in {t_validate:.2?}, \
             {:.2?} in total, verdict {verdict}",
            t0.elapsed()
        );
    }
    Outcome::Verdict {
        kind: m,
        verdict,
        failure,
    }
}

#[test]
#[allow(clippy::print_stderr)] // the counts (`--nocapture`)
fn validated_mutants_compute_their_definition() {
    let start = Instant::now();
    let cases = env_u64("ATL_VALIDATE_FUZZ_CASES").map_or(DEFAULT_CASES, |c| c as usize);
    let seed = env_u64("ATL_VALIDATE_FUZZ_SEED").unwrap_or(0x6d75_7461_6e74);
    let threads = env_u64("ATL_VALIDATE_FUZZ_THREADS").map_or(2, |t| t.max(1) as usize);

    let mut examples = Vec::new();
    let mut kernels: Vec<(usize, String, Kernel)> = Vec::new();
    for path in support::example_files() {
        let example = support::load(&path);
        for (def, kernel) in common::kernels_of(&path) {
            kernels.push((examples.len(), def, kernel));
        }
        examples.push(example);
    }
    let loaded = start.elapsed();

    // Cases are shared among worker threads (each with its own solver); the outcome of
    // a case does not depend on which thread runs it.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let outcomes: Vec<(usize, Outcome)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let solver = atl_solver::Solver::new();
                    let mut out = Vec::new();
                    loop {
                        let case = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if case >= cases {
                            break;
                        }
                        let (ex, def, original) = &kernels[case % kernels.len()];
                        out.push((
                            case,
                            run_case(case, seed, &examples[*ex], def, original, &solver),
                        ));
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a worker panicked"))
            .collect()
    });

    let mut counts = [0usize; 3];
    let mut no_place = 0;
    let mut per_kind: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    let mut failures: Vec<(usize, String)> = Vec::new();
    for (case, outcome) in outcomes {
        match outcome {
            Outcome::NoPlace => no_place += 1,
            Outcome::Verdict {
                kind,
                verdict,
                failure,
            } => {
                counts[verdict] += 1;
                per_kind.entry(format!("{kind:?}")).or_default()[verdict] += 1;
                if let Some(f) = failure {
                    failures.push((case, f));
                }
            }
        }
    }
    failures.sort();
    eprintln!(
        "mutation fuzz: {cases} cases over {} kernels (loaded in {loaded:.2?}), {} validated \
         (each run at large sizes), {} rejected, {} not validated, {no_place} without a place \
         for a mutation; {:.2?} in total on {threads} threads",
        kernels.len(),
        counts[0],
        counts[1],
        counts[2],
        start.elapsed()
    );
    for (kind, [v, r, n]) in &per_kind {
        eprintln!("  {kind:<22} validated {v:>4}  rejected {r:>4}  not validated {n:>4}");
    }
    assert!(
        failures.is_empty(),
        "{} validated mutants compute something else than their definition:\n\n{}",
        failures.len(),
        failures
            .into_iter()
            .map(|(_, f)| f)
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

/// Whether `s` is a check of index arrays where they are read.
fn is_check(s: &Stmt) -> bool {
    matches!(s, Stmt::If { else_branch, .. }
        if !else_branch.is_empty() && else_branch.iter().all(|t| matches!(t, Stmt::Fail { .. })))
}

/// [`Mutation::WeakenCheck`] at a random check of the kernel.
fn weaken_check(k: &mut Kernel, rng: &mut SplitMix64) -> Option<String> {
    let mut checks = 0;
    each_stmt(&mut k.body, &mut |s| checks += usize::from(is_check(s)));
    if checks == 0 {
        return None;
    }
    let (target, how) = (rng.below(checks), rng.below(3));
    let mut what = None;
    let mut seen = 0;
    let mut edit = |stmts: &mut Vec<Stmt>| {
        for s in stmts.iter_mut() {
            if !is_check(s) {
                continue;
            }
            seen += 1;
            if seen - 1 != target {
                continue;
            }
            let Stmt::If {
                cond, else_branch, ..
            } = s
            else {
                continue;
            };
            let text = atl_loopir::print::cond_to_string(cond);
            what = Some(match how {
                0 => {
                    else_branch.clear();
                    format!("check `{text}`: `else` dropped")
                }
                1 => {
                    // The leftmost conjunct made `true`.
                    let mut c = &mut *cond;
                    while let Cond::And(a, _) = c {
                        c = a;
                    }
                    *c = Cond::Bool(true);
                    format!("check `{text}`: its first conjunct made `true`")
                }
                _ => {
                    *cond = Cond::Bool(true);
                    format!("check `{text}` removed")
                }
            });
        }
    };
    each_block(&mut k.body, &mut edit);
    what
}
