//! The sliding window (Halide's `store_root`/`store_at` with `compute_at`), as a
//! transformation of the lowered kernel. Not trusted: the translation validator proves
//! the kernel it produces (each row of the stage read by an iteration is the one an
//! earlier iteration wrote, holding the definition's value).
//!
//! A stage computed at a loop `s` is lowered as a buffer of `W` rows allocated in each
//! iteration of `s`, filled by a producer loop over its rows, then read:
//!
//! ```text
//! for s in lo..hi {
//!   alloc f[W, …] {
//!     for w in 0..W { f[w, …] = V(w, s) }      # the window of iteration s
//!     … reads of f[r, …] …
//!   }
//! }
//! ```
//!
//! When the window moves by a constant `S < W` rows per iteration (`V(w, s)` is
//! `V(w + S, s - 1)`: checked here on the producer's indices, proved by the validator),
//! the rows `S..W` of one window are the rows `0..W-S` of the next. The buffer then
//! moves out of `s` (to the storage level: the root, or the loop around `s`) with a row
//! for every row any window has, `W - S + S * (hi - lo)`, window row `w` of iteration
//! `s` being buffer row `w + S * (s - lo)`; the first iteration's first `W - S` rows are
//! computed before the loop (under `lo < hi`), and each iteration computes its last `S`
//! rows only:
//!
//! ```text
//! alloc f[W - S + S * (hi - lo), …] {
//!   if lo < hi { for w' in 0..W-S { f[w', …] = V(w', lo) } }
//!   for s in lo..hi {
//!     for w in 0..S { f[w + W - S + S * (s - lo), …] = V(w + W - S, s) }
//!     … reads of f[r + S * (s - lo), …] …
//!   }
//! }
//! ```
//!
//! The iterations of `s` now depend on each other: `s` runs sequentially (an automatic
//! `parallel` is dropped; a requested one is refused).

use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr};
use atl_lang::ir::{HintKind, LoopHint, NameSupply, StorageHint, StorageRequest};
use atl_lang::poly::{Poly, normalize};

use crate::ir::{Cond, For, Ix, IxOp, Stmt, Storage, Val};
use crate::reindex::flatten_index;
use crate::substitute::{index_of, map_ix_block, substitute_block};

/// What the pass needs from lowering: index expressions in target arithmetic, storage
/// extents clamped at zero, and fresh names.
pub(crate) struct Target<'t> {
    pub ix: &'t dyn Fn(&IndexExpr) -> Ix,
    pub clamp: &'t dyn Fn(&IndexExpr) -> IndexExpr,
    pub names: &'t mut NameSupply,
}

/// Applies every storage request of a definition to its kernel body.
pub(crate) fn slide_windows(
    body: &mut [Stmt],
    requests: &[StorageHint],
    hints: &[LoopHint],
    target: &mut Target<'_>,
) -> Result<(), Diagnostic> {
    let is_fold = |r: &StorageHint| matches!(r.request, StorageRequest::Fold(_));
    let placements: Vec<&StorageHint> = requests.iter().filter(|r| !is_fold(r)).collect();
    let folds: Vec<&StorageHint> = requests.iter().filter(|r| is_fold(r)).collect();
    let mut windows: Vec<(&str, i64)> = Vec::new();
    for (k, r) in placements.iter().copied().enumerate() {
        if let Some(earlier) = placements[..k].iter().find(|e| e.stage == r.stage) {
            return Err(refused(
                r,
                format!("the buffer of `{}` is already placed", r.stage),
                format!("by `{}`; keep one", earlier.step_text()),
            ));
        }
        let mut count = 0;
        for s in body.iter() {
            s.walk(&mut |n| {
                if matches!(n, Stmt::Alloc { buf, .. } if *buf == r.stage) {
                    count += 1;
                }
            });
        }
        match count {
            1 => {}
            0 => {
                return Err(refused(
                    r,
                    format!("stage `{}` has no buffer in the kernel", r.stage),
                    "lowering computed it without one (a scalar, or inlined)".to_string(),
                ));
            }
            n => {
                return Err(refused(
                    r,
                    format!("stage `{}` is computed in {n} places", r.stage),
                    "a `partition` or `specialize` copied the loop that computes it; store it before copying, or compute it once"
                        .to_string(),
                ));
            }
        }
        let Some(rows) = slide_in_block(body, None, r, hints, target)? else {
            return Err(refused(
                r,
                format!("stage `{}` is not computed directly in a loop", r.stage),
                "its buffer is inside a condition or another buffer's scope".to_string(),
            ));
        };
        windows.push((&r.stage, rows));
    }
    for (k, r) in folds.iter().copied().enumerate() {
        let StorageRequest::Fold(fold) = r.request else {
            unreachable!("a fold")
        };
        if let Some(earlier) = folds[..k].iter().find(|e| e.stage == r.stage) {
            return Err(refused(
                r,
                format!("the buffer of `{}` is already folded", r.stage),
                format!("by `{}`; keep one", earlier.step_text()),
            ));
        }
        let Some(&(_, rows)) = windows.iter().find(|(stage, _)| *stage == r.stage) else {
            return Err(refused(
                r,
                format!(
                    "`{}` is folded but not stored apart from its computation",
                    r.stage
                ),
                format!(
                    "a buffer allocated in each iteration holds its window only; fold the one `store_root {0}` or `store_at {0} at …` keeps",
                    r.stage
                ),
            ));
        };
        if fold < rows {
            return Err(refused(
                r,
                format!(
                    "a fold of {fold} rows is less than the {rows} rows each window of `{}` reads",
                    r.stage
                ),
                format!("fold by {rows} or more"),
            ));
        }
        for s in body.iter_mut() {
            s.walk_mut(&mut |n| {
                if let Stmt::Alloc {
                    buf,
                    shape,
                    len,
                    fold: folded,
                    body,
                    ..
                } = n
                    && *buf == r.stage
                {
                    *folded = Some(fold);
                    let stored = shape
                        .iter()
                        .skip(1)
                        .cloned()
                        .fold(IndexExpr::Const(fold), IndexExpr::mul);
                    *len = (target.ix)(&normalize(&stored));
                    refold(body, &r.stage, fold, target.ix);
                }
            });
        }
    }
    Ok(())
}

/// The flat index of every access of `f` in `block` with its first coordinate modulo
/// `fold` (C's `%`: the coordinate is a row, non-negative, which the validator
/// proves).
fn refold(block: &mut [Stmt], f: &str, fold: i64, ix: &dyn Fn(&IndexExpr) -> Ix) {
    let flat = |coords: &[crate::ir::Coord]| -> Ix {
        let mut acc: Option<Ix> = None;
        for (k, c) in coords.iter().enumerate() {
            let index = if k == 0 {
                Ix::bin(IxOp::ModNat, ix(&c.index), Ix::Const(fold))
            } else {
                ix(&c.index)
            };
            acc = Some(match acc {
                None => index,
                Some(a) => Ix::bin(IxOp::Add, Ix::bin(IxOp::Mul, a, ix(&c.extent)), index),
            });
        }
        acc.unwrap_or(Ix::Const(0))
    };
    set_flat_indices(block, f, &flat);
}

/// E0914 for request `r`.
fn refused(r: &StorageHint, message: String, note: String) -> Diagnostic {
    Diagnostic::error("E0914", message)
        .at(r.span, format!("`{}` cannot slide", r.step_text()))
        .with_note(note)
        .with_help(
            "look at the kernel without this step (`atl emit --ir`): the stage must be computed once per iteration of one sequential loop, by one loop over its rows, with a window that moves by a constant number of rows",
        )
}

/// Finds the loop whose body allocates the stage's buffer, in `block` whose nearest
/// enclosing loop is `enclosing`, and transforms it; whether it was found.
fn slide_in_block(
    block: &mut [Stmt],
    enclosing: Option<&str>,
    r: &StorageHint,
    hints: &[LoopHint],
    target: &mut Target<'_>,
) -> Result<Option<i64>, Diagnostic> {
    for stmt in block.iter_mut() {
        let found = match stmt {
            Stmt::For(l) => {
                let here = l
                    .body
                    .iter()
                    .position(|s| matches!(s, Stmt::Alloc { buf, .. } if *buf == r.stage));
                match here {
                    Some(at) => Some(at),
                    None => {
                        let var = l.var.clone();
                        if let Some(rows) =
                            slide_in_block(&mut l.body, Some(&var), r, hints, target)?
                        {
                            return Ok(Some(rows));
                        }
                        None
                    }
                }
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                if let Some(rows) = slide_in_block(then_branch, enclosing, r, hints, target)? {
                    return Ok(Some(rows));
                }
                if let Some(rows) = slide_in_block(else_branch, enclosing, r, hints, target)? {
                    return Ok(Some(rows));
                }
                None
            }
            Stmt::Alloc { body, .. } => {
                if let Some(rows) = slide_in_block(body, enclosing, r, hints, target)? {
                    return Ok(Some(rows));
                }
                None
            }
            _ => None,
        };
        let Some(at) = found else { continue };
        let Stmt::For(s) = &*stmt else {
            unreachable!("found in a loop")
        };
        let wanted = match &r.request {
            StorageRequest::At(l) => Some(l.as_str()),
            _ => None,
        };
        if enclosing != wanted {
            let level = match wanted {
                None => "the root".to_string(),
                Some(l) => format!("loop `{l}`"),
            };
            let actual = match enclosing {
                None => "no loop".to_string(),
                Some(l) => format!("loop `{l}`"),
            };
            return Err(refused(
                r,
                format!(
                    "the loop that computes `{}`, `{}`, is not directly inside {level}",
                    r.stage, s.var
                ),
                format!("in the kernel, `{}` is directly inside {actual}", s.var),
            ));
        }
        let taken = std::mem::replace(
            stmt,
            Stmt::Fail {
                array: String::new(),
            },
        );
        let Stmt::For(s) = taken else {
            unreachable!("found in a loop")
        };
        let (slid, rows) = slide(s, at, r, hints, target)?;
        *stmt = slid;
        return Ok(Some(rows));
    }
    Ok(None)
}

/// The stage's buffer, allocated at position `at` of loop `s`'s body, moved around `s`
/// with the window sliding along it; and the rows of a window.
fn slide(
    mut s: For,
    at: usize,
    r: &StorageHint,
    hints: &[LoopHint],
    target: &mut Target<'_>,
) -> Result<(Stmt, i64), Diagnostic> {
    let f = r.stage.as_str();
    if s.parallel {
        if hints
            .iter()
            .any(|h| h.var == s.var && h.kind == HintKind::Parallel)
        {
            return Err(refused(
                r,
                format!("loop `{}` is `parallel`", s.var),
                format!(
                    "each iteration of `{}` would read rows an earlier one computed: the window slides along a sequential loop; split it and make the outer loop parallel (`store_at {f} at` that loop)",
                    s.var
                ),
            ));
        }
        s.parallel = false;
        s.collapse = false;
    }
    let Stmt::Alloc {
        shape,
        zeroed,
        body: mut inner,
        ..
    } = s.body.remove(at)
    else {
        unreachable!("the position of the allocation")
    };
    // The producer: the first statement, one loop over the rows from 0 to a constant.
    let producer = match inner.first() {
        Some(Stmt::For(p)) if p.lo == Ix::Const(0) && matches!(p.hi, Ix::Const(w) if w >= 2) => {
            p.clone()
        }
        _ => {
            return Err(refused(
                r,
                format!("the rows of `{f}` are not computed by one loop of constant extent"),
                format!("the first statement of `{f}`'s scope must be the loop over its rows"),
            ));
        }
    };
    let Ix::Const(rows_in_window) = producer.hi else {
        unreachable!("checked above")
    };
    check_producer(&producer, &inner[1..], f, r)?;
    let lo = index_of(&s.lo);
    let hi = index_of(&s.hi);
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Err(refused(
            r,
            format!("the bounds of loop `{}` have no index form", s.var),
            String::new(),
        ));
    };
    let Some(indices) = producer_indices(&producer, f) else {
        return Err(refused(
            r,
            format!("an index of the loop computing `{f}` has no index form"),
            String::new(),
        ));
    };
    let step = window_step(&indices, &producer.var, &s.var, r)?;
    if step >= rows_in_window {
        return Err(refused(
            r,
            format!(
                "the windows of `{f}` at consecutive iterations of `{}` do not overlap",
                s.var
            ),
            format!(
                "each iteration computes {rows_in_window} rows and the window moves by {step}: there is nothing to reuse"
            ),
        ));
    }
    check_invariant(&indices, &producer.var, &s.var, step, r)?;
    let keep = rows_in_window - step;
    // Buffer row of window row `w` at iteration `s`: `w + step * (s - lo)`.
    let offset = IndexExpr::mul(
        IndexExpr::Const(step),
        IndexExpr::sub(IndexExpr::var(s.var.clone()), lo.clone()),
    );
    let rows = (target.clamp)(&normalize(&IndexExpr::add(
        IndexExpr::Const(keep),
        IndexExpr::mul(IndexExpr::Const(step), IndexExpr::sub(hi, lo.clone())),
    )));
    let mut new_shape = shape.clone();
    new_shape[0] = rows.clone();
    remap_rows(&mut inner, f, &offset, &rows);
    // The first window's first rows, before the loop, with `s` at its first value and
    // every name the copy declares fresh.
    let Some(Stmt::For(mut warm)) = inner.first().cloned() else {
        unreachable!("the producer")
    };
    warm.hi = Ix::Const(keep);
    let mut warm = vec![Stmt::For(warm)];
    substitute_block(&mut warm, &s.var, &s.lo, &lo);
    rename_declared(&mut warm, target.names);
    // Every later row, once: the producer's last `step` rows.
    if let Some(Stmt::For(p)) = inner.first_mut() {
        let shifted = IndexExpr::add(IndexExpr::var(p.var.clone()), IndexExpr::Const(keep));
        let shifted_ix = Ix::bin(IxOp::Add, Ix::Var(p.var.clone()), Ix::Const(keep));
        substitute_block(&mut p.body, &p.var.clone(), &shifted_ix, &shifted);
        p.hi = Ix::Const(step);
    }
    // One new row per iteration: the row loop's one iteration, without the loop (its
    // row is then a function of `s` alone, which the validator solves for).
    if step == 1
        && let Some(Stmt::For(p)) = inner.first()
    {
        let mut row = p.body.clone();
        substitute_block(&mut row, &p.var, &Ix::Const(0), &IndexExpr::Const(0));
        inner.splice(0..1, row);
    }
    let tail = s.body.split_off(at);
    s.body.extend(inner);
    s.body.extend(tail);
    // Computed only if the loop runs (its first value may be out of range otherwise).
    let first = match (&s.lo, &s.hi) {
        (Ix::Const(a), Ix::Const(b)) if a < b => warm,
        _ => vec![Stmt::If {
            cond: Cond::Cmp(CmpOp::Lt, s.lo.clone(), s.hi.clone()),
            then_branch: warm,
            else_branch: Vec::new(),
        }],
    };
    let mut body = first;
    body.push(Stmt::For(s));
    reflatten(&mut body, f, target.ix);
    // The substitutions leave sums of constants (`w + 1 + 10 * 0 - 1`): indices
    // without divisions, minima or loads are put back in normal form.
    map_ix_block(&mut body, &|x| {
        let plain = !(x.uses(IxOp::DivNat)
            || x.uses(IxOp::ModNat)
            || x.uses(IxOp::FloorDiv)
            || x.uses(IxOp::FloorMod)
            || x.uses(IxOp::CeilDiv)
            || x.uses(IxOp::Min)
            || x.uses(IxOp::Max)
            || has_load(x));
        if plain && matches!(x, Ix::Bin(..) | Ix::Neg(_)) {
            index_of(x).map(|e| (target.ix)(&normalize(&e)))
        } else {
            None
        }
    });
    let len = (target.ix)(&normalize(
        &new_shape
            .iter()
            .cloned()
            .reduce(IndexExpr::mul)
            .unwrap_or(IndexExpr::Const(1)),
    ));
    let alloc = Stmt::Alloc {
        buf: f.to_string(),
        shape: new_shape,
        len,
        zeroed,
        storage: Storage::Heap,
        fold: None,
        body,
    };
    Ok((alloc, rows_in_window))
}

/// The producer writes only rows of `f` at its own row (`f[w, …]`, assignments, or
/// accumulations into a zeroed buffer) and scalars it declares, and reads no row of
/// `f`; the statements after it do not write `f`.
fn check_producer(
    producer: &For,
    rest: &[Stmt],
    f: &str,
    r: &StorageHint,
) -> Result<(), Diagnostic> {
    let mut problem: Option<String> = None;
    let mut note = |p: String| {
        problem.get_or_insert(p);
    };
    Stmt::For(producer.clone()).walk(&mut |n| match n {
        Stmt::Store { buf, coords, .. }
            if buf == f
                && coords.first().map(|c| &c.index)
                    != Some(&IndexExpr::var(producer.var.clone())) =>
        {
            note(format!(
                "a row of `{f}` is written at a row other than the loop's `{}`",
                producer.var
            ));
        }
        Stmt::Store { buf, .. } if buf == f => {}
        Stmt::Store { buf, .. } | Stmt::Fill { buf, .. } => {
            note(format!("the loop computing `{f}` also writes `{buf}`"));
        }
        Stmt::Alloc { buf, .. } => {
            note(format!("the loop computing `{f}` allocates `{buf}`"));
        }
        _ => {}
    });
    let mut reads_f = false;
    Stmt::For(producer.clone()).walk(&mut |n| {
        n.visit_own_loads(&mut |l| reads_f |= l.buf == f);
    });
    if reads_f {
        note(format!("the loop computing `{f}` reads it"));
    }
    for s in rest {
        s.walk(&mut |n| match n {
            Stmt::Store { buf, .. } | Stmt::Fill { buf, .. } if buf == f => {
                note(format!("`{f}` is written after the loop that computes it"));
            }
            _ => {}
        });
    }
    if let Some(p) = problem {
        return Err(refused(
            r,
            format!("`{f}` is not computed by one loop over its rows"),
            p,
        ));
    }
    Ok(())
}

/// Every index expression of the producer that must move with the window: loop
/// bounds, conditions, values, and the coordinates of its reads and of its writes
/// beyond the row.
fn producer_indices(producer: &For, f: &str) -> Option<Vec<IndexExpr>> {
    let mut out = Vec::new();
    let mut ok = true;
    let mut add_ix = |ix: &Ix, out: &mut Vec<IndexExpr>| match index_of(ix) {
        Some(e) => out.push(e),
        None => ok = false,
    };
    for s in &producer.body {
        s.walk(&mut |n| {
            match n {
                Stmt::For(l) => {
                    add_ix(&l.lo, &mut out);
                    add_ix(&l.hi, &mut out);
                }
                Stmt::If { cond, .. } => cond.visit_ix(&mut |ix| add_ix(ix, &mut out)),
                Stmt::Store { buf, coords, .. } => {
                    let skip = usize::from(buf == f);
                    out.extend(coords.iter().skip(skip).map(|c| c.index.clone()));
                }
                _ => {}
            }
            n.visit_own_vals(&mut |v| match v {
                Val::Load(l) => out.extend(l.coords.iter().map(|c| c.index.clone())),
                Val::Coord(ix) => add_ix(ix, &mut out),
                Val::Select(c, _) | Val::Blend(c, _) => {
                    c.visit_ix(&mut |ix| add_ix(ix, &mut out));
                }
                _ => {}
            });
        });
    }
    ok.then_some(out)
}

/// The number of rows the window moves by per iteration of `s`: the coefficient of
/// `s` over that of the row `w` in the producer's indices that mention both, which
/// must agree.
fn window_step(
    indices: &[IndexExpr],
    w: &str,
    s: &str,
    r: &StorageHint,
) -> Result<i64, Diagnostic> {
    let coefficient = |p: &Poly, v: &str| {
        p.terms()
            .get(&vec![IndexExpr::var(v.to_string())])
            .copied()
            .unwrap_or(0)
    };
    let mut step: Option<i64> = None;
    for e in indices {
        let p = Poly::from_index(&normalize(e));
        let (cs, cw) = (coefficient(&p, s), coefficient(&p, w));
        if cs == 0 || cw == 0 {
            continue;
        }
        if cs % cw != 0 || step.is_some_and(|k| k != cs / cw) {
            return Err(not_a_window(r, s, e));
        }
        step = Some(cs / cw);
    }
    match step {
        Some(k) if k > 0 => Ok(k),
        _ => Err(refused(
            r,
            format!(
                "the window of `{}` does not move forward along `{s}`",
                r.stage
            ),
            format!(
                "no read of the loop computing `{}` moves with `{s}` and its row",
                r.stage
            ),
        )),
    }
}

/// Every index of the producer is the same at row `w + step` of iteration `s - 1`.
fn check_invariant(
    indices: &[IndexExpr],
    w: &str,
    s: &str,
    step: i64,
    r: &StorageHint,
) -> Result<(), Diagnostic> {
    for e in indices {
        let moved = e
            .subst(
                w,
                &IndexExpr::add(IndexExpr::var(w), IndexExpr::Const(step)),
            )
            .subst(s, &IndexExpr::sub(IndexExpr::var(s), IndexExpr::Const(1)));
        if normalize(&moved) != normalize(e) {
            return Err(not_a_window(r, s, e));
        }
    }
    Ok(())
}

fn not_a_window(r: &StorageHint, s: &str, e: &IndexExpr) -> Diagnostic {
    refused(
        r,
        format!(
            "the windows of `{}` at consecutive iterations of `{s}` are not the same rows moved by a constant step",
            r.stage
        ),
        format!("the index {e} does not move with the window"),
    )
}

/// Every access of `f` in `block` at row `r + offset`, of `rows` rows.
fn remap_rows(block: &mut [Stmt], f: &str, offset: &IndexExpr, rows: &IndexExpr) {
    let remap = |coords: &mut Vec<crate::ir::Coord>| {
        if let Some(c) = coords.first_mut() {
            c.index = normalize(&IndexExpr::add(c.index.clone(), offset.clone()));
            c.extent = rows.clone();
        }
    };
    for s in block {
        s.walk_mut(&mut |n| {
            if let Stmt::Store { buf, coords, .. } = n
                && buf == f
            {
                remap(coords);
            }
            n.visit_own_loads_mut(&mut |l| {
                if l.buf == f {
                    remap(&mut l.coords);
                }
            });
        });
    }
}

/// The flat index of every access of `f` in `block` recomputed from its coordinates.
fn reflatten(block: &mut [Stmt], f: &str, ix: &dyn Fn(&IndexExpr) -> Ix) {
    set_flat_indices(block, f, &|coords| ix(&flatten_index(coords)));
}

/// The flat index of every store into and load of `f` in `block`, as `flat` of its
/// coordinates.
fn set_flat_indices(block: &mut [Stmt], f: &str, flat: &dyn Fn(&[crate::ir::Coord]) -> Ix) {
    for s in block {
        s.walk_mut(&mut |n| {
            if let Stmt::Store {
                buf, coords, index, ..
            } = n
                && buf == f
            {
                *index = flat(coords);
            }
            n.visit_own_loads_mut(&mut |l| {
                if l.buf == f {
                    l.index = flat(&l.coords);
                }
            });
        });
    }
}

/// Gives every loop variable and scalar declared in `block` (a copy of statements
/// that stay in the kernel) a fresh name.
fn rename_declared(block: &mut [Stmt], names: &mut NameSupply) {
    let mut loops = Vec::new();
    let mut scalars = Vec::new();
    for s in block.iter() {
        s.walk(&mut |n| match n {
            Stmt::For(l) => loops.push(l.var.clone()),
            Stmt::Decl { name, .. } => scalars.push(name.clone()),
            _ => {}
        });
    }
    for v in loops {
        let fresh = names.fresh(&v);
        substitute_block(
            block,
            &v,
            &Ix::Var(fresh.clone()),
            &IndexExpr::var(fresh.clone()),
        );
        for s in block.iter_mut() {
            s.walk_mut(&mut |n| {
                if let Stmt::For(l) = n
                    && l.var == v
                {
                    l.var = fresh.clone();
                }
            });
        }
    }
    for v in scalars {
        let fresh = names.fresh(&v);
        for s in block.iter_mut() {
            s.walk_mut(&mut |n| {
                match n {
                    Stmt::Decl { name, .. } | Stmt::SetScalar { name, .. } if *name == v => {
                        *name = fresh.clone();
                    }
                    _ => {}
                }
                n.visit_own_vals_mut(&mut |val| {
                    if let Val::Scalar(name) = val
                        && *name == v
                    {
                        *name = fresh.clone();
                    }
                });
            });
        }
    }
}

fn has_load(x: &Ix) -> bool {
    match x {
        Ix::Const(_) | Ix::Var(_) => false,
        Ix::Load(..) => true,
        Ix::Neg(a) => has_load(a),
        Ix::Bin(_, a, b) => has_load(a) || has_load(b),
    }
}
