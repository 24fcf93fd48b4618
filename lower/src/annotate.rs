//! Scheduling annotations of the loop IR: which loops may run on several threads, in
//! SIMD lanes, or unrolled (DESIGN §7). They never change what a kernel computes; each
//! is justified by an invariant lowering already guarantees, and the loop-IR
//! interpreter re-checks the parallel ones at run time (iterations of an annotated
//! loop must write disjoint elements of every buffer that outlives an iteration).
//!
//! - `parallel`: an outermost `gen` loop (not nested in any other loop). Its iterations
//!   write disjoint elements of the destination because reindexers are injective
//!   (thesis §4.4); everything else an iteration writes — scalar temporaries, `let`
//!   buffers — is declared inside the iteration. Never a `sum` loop (its iterations
//!   accumulate into the same elements) and never a zero-filling loop of a buffer
//!   declared outside (those are cheap and not worth a thread team).
//! - `vector`: an innermost `gen` or zero-filling loop whose iterations touch only
//!   their own destination elements and scalars declared inside them. A scalar `sum`
//!   (a reduction into one accumulator) is not vectorized: that would reassociate the
//!   additions and change the floating-point result.
//! - `unroll`: a loop with a constant trip count between 2 and [`UNROLL_MAX`] that is
//!   not vectorized (a register tile's row loop, a 3-tap stencil's sum), as long as its
//!   body unrolled with the loops unrolled inside it is at most
//!   [`UNROLLED_COPIES_MAX`] copies of their statements (a 3 x 3 window around a
//!   2-row tile unrolls the tile and one tap loop, not both taps).
//!
//! A derived definition may carry loop hints (`parallel x`, `vectorize x`, `unroll x`
//! in its derivation; `atl_lang::ir::LoopHint`). They name loops by binder, which
//! lowering keeps as the loop variable, and override the automatic choice for those
//! loops: a hinted loop gets exactly the hinted annotations, and a loop enclosing a
//! hinted `parallel` loop is not parallel (OpenMP's nested parallelism is off);
//! `unroll x off` alone only removes the unrolling, the loop's other annotations stay
//! automatic. Each
//! hint is checked on the kernel by the same criteria as above (a `gen` loop whose
//! iterations write only their own elements; `vector` innermost too; `unroll` constant
//! bounds), and one that names no loop of the kernel, or fails a criterion, is an error
//! (E0913), never silently dropped.

use std::collections::HashSet;

use atl_lang::diag::Diagnostic;
use atl_lang::ir::{HintKind, LoopHint};

use crate::UNROLLED_COPIES_MAX;
use crate::ir::{For, Ix, LoopOrigin, Stmt};

/// Longest constant trip count marked for unrolling.
pub(crate) const UNROLL_MAX: i64 = 16;

/// Shortest constant trip count worth SIMD lanes.
const VECTOR_MIN: i64 = 4;

/// Sets the annotations of every loop of a kernel body.
pub(crate) fn annotate(body: &mut [Stmt]) {
    annotate_block(body, false);
}

fn annotate_block(stmts: &mut [Stmt], in_loop: bool) {
    for s in stmts {
        match s {
            Stmt::For(l) => annotate_loop(l, in_loop),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                annotate_block(then_branch, in_loop);
                annotate_block(else_branch, in_loop);
            }
            Stmt::Alloc { body, .. } => annotate_block(body, in_loop),
            Stmt::Decl { .. }
            | Stmt::SetScalar { .. }
            | Stmt::Store { .. }
            | Stmt::Fill { .. }
            | Stmt::Fail { .. } => {}
        }
    }
}

fn annotate_loop(l: &mut For, in_loop: bool) {
    let trip = constant_trip_count(l);
    l.parallel = !in_loop
        && l.origin == LoopOrigin::Gen
        && trip.is_none_or(|n| n > 1)
        && iteration_private(&l.body);
    annotate_block(&mut l.body, true);
    l.vector = matches!(l.origin, LoopOrigin::Gen | LoopOrigin::Zero)
        && innermost(&l.body)
        && trip.is_none_or(|n| n >= VECTOR_MIN)
        && iteration_private(&l.body);
    l.unroll = !l.vector
        && trip.is_some_and(|n| {
            (2..=UNROLL_MAX).contains(&n) && n * unrolled_copies(&l.body) <= UNROLLED_COPIES_MAX
        });
}

/// The copies of a statement the unrolled loops in `stmts` make: the largest product of
/// the trip counts of unrolled loops nested along one path.
fn unrolled_copies(stmts: &[Stmt]) -> i64 {
    stmts
        .iter()
        .map(|s| match s {
            Stmt::For(l) => {
                let inner = unrolled_copies(&l.body);
                match constant_trip_count(l) {
                    Some(n) if l.unroll => n.saturating_mul(inner),
                    _ => inner,
                }
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => unrolled_copies(then_branch).max(unrolled_copies(else_branch)),
            Stmt::Alloc { body, .. } => unrolled_copies(body),
            Stmt::Decl { .. }
            | Stmt::SetScalar { .. }
            | Stmt::Store { .. }
            | Stmt::Fill { .. }
            | Stmt::Fail { .. } => 1,
        })
        .max()
        .unwrap_or(1)
}

/// Applies the loop hints of a definition over the automatic annotations of `body`
/// (see the module documentation); every hint must name a loop of the kernel.
pub(crate) fn apply_hints(body: &mut [Stmt], hints: &[LoopHint]) -> Result<(), Diagnostic> {
    if hints.is_empty() {
        return Ok(());
    }
    let mut found = vec![0usize; hints.len()];
    hint_block(body, hints, None, &mut found)?;
    if let Some((h, _)) = hints.iter().zip(&found).find(|(_, n)| **n == 0) {
        return Err(refused(
            h,
            format!("no loop `{}` in the lowered kernel", h.var),
            "lowering removed the loop (an empty range, a loop that normalization replaced by its body, or a one-hot generator `gen i: [i == f] * …`, written as one store at `f`: a scatter)",
        ));
    }
    Ok(())
}

fn refused(h: &LoopHint, message: String, note: &str) -> Diagnostic {
    Diagnostic::error("E0913", message)
        .at(h.span, format!("`{} {}`", h.kind.directive(), h.var))
        .with_note(note.to_string())
}

/// Applies the hints in `stmts`; `in_parallel` is the hinted parallel loop around
/// them. Returns whether a hinted parallel loop is among them.
fn hint_block(
    stmts: &mut [Stmt],
    hints: &[LoopHint],
    in_parallel: Option<&LoopHint>,
    found: &mut [usize],
) -> Result<bool, Diagnostic> {
    let mut any = false;
    for s in stmts {
        any |= match s {
            Stmt::For(l) => hint_loop(l, hints, in_parallel, found)?,
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                let a = hint_block(then_branch, hints, in_parallel, found)?;
                hint_block(else_branch, hints, in_parallel, found)? || a
            }
            Stmt::Alloc { body, .. } => hint_block(body, hints, in_parallel, found)?,
            Stmt::Decl { .. }
            | Stmt::SetScalar { .. }
            | Stmt::Store { .. }
            | Stmt::Fill { .. }
            | Stmt::Fail { .. } => false,
        };
    }
    Ok(any)
}

fn hint_loop(
    l: &mut For,
    hints: &[LoopHint],
    in_parallel: Option<&LoopHint>,
    found: &mut [usize],
) -> Result<bool, Diagnostic> {
    let mut mine = Vec::new();
    for (k, h) in hints.iter().enumerate() {
        if h.var == l.var {
            found[k] += 1;
            mine.push(h);
        }
    }
    let hinted = |kind| mine.iter().copied().find(|h| h.kind == kind);
    let parallel = hinted(HintKind::Parallel);
    if let Some(h) = parallel {
        if let Some(outer) = in_parallel {
            return Err(refused(
                h,
                format!(
                    "loop `{}` is nested in the parallel loop `{}`",
                    h.var, outer.var
                ),
                "OpenMP's nested parallelism is off: the inner loop would run on one thread",
            ));
        }
        if l.origin != LoopOrigin::Gen {
            return Err(refused(
                h,
                format!("loop `{}` of the kernel is not a `gen` loop", h.var),
                "only the iterations of a `gen` write disjoint elements",
            ));
        }
        if !iteration_private(&l.body) {
            return Err(refused(
                h,
                format!(
                    "the iterations of loop `{}` share a scalar or a buffer",
                    h.var
                ),
                "threads may only run iterations that write their own elements",
            ));
        }
    }
    let inner_parallel = hint_block(&mut l.body, hints, parallel.or(in_parallel), found)?;
    // `unroll x off` alone leaves the loop's other annotations automatic.
    let only_unroll_off = !mine.is_empty() && mine.iter().all(|h| h.kind == HintKind::UnrollOff);
    if mine.is_empty() || only_unroll_off {
        // A loop enclosing a hinted parallel loop runs its iterations in sequence.
        if inner_parallel {
            l.parallel = false;
        }
        if only_unroll_off {
            l.unroll = false;
        }
        return Ok(inner_parallel);
    }
    if let Some(h) = hinted(HintKind::Vector)
        && (l.origin != LoopOrigin::Gen
            || !innermost_but_max_folds(&l.body)
            || !iteration_private(&l.body))
    {
        return Err(refused(
            h,
            format!(
                "loop `{}` of the kernel is not an innermost, iteration-private `gen` loop",
                h.var
            ),
            "SIMD lanes run consecutive iterations at once: each must be straight-line code writing its own element",
        ));
    }
    if let Some(h) = hinted(HintKind::Unroll)
        && constant_trip_count(l).is_none_or(|n| n < 2)
    {
        return Err(refused(
            h,
            format!(
                "loop `{}` of the kernel has no constant trip count of at least 2",
                h.var
            ),
            "the unroll pragma is written with the loop's constant trip count",
        ));
    }
    l.parallel = parallel.is_some();
    l.vector = hinted(HintKind::Vector).is_some();
    l.unroll = hinted(HintKind::Unroll).is_some();
    Ok(inner_parallel || l.parallel)
}

/// The trip count of a loop with constant bounds.
pub(crate) fn constant_trip_count(l: &For) -> Option<i64> {
    match (&l.lo, &l.hi) {
        (Ix::Const(lo), Ix::Const(hi)) => Some(hi.saturating_sub(*lo).max(0)),
        _ => None,
    }
}

/// Whether no statement of the body is a loop, an allocation or a fill.
fn innermost(body: &[Stmt]) -> bool {
    let mut found = false;
    for s in body {
        s.walk(&mut |n| {
            found |= matches!(n, Stmt::For(_) | Stmt::Alloc { .. } | Stmt::Fill { .. })
        });
    }
    !found
}

/// Whether the body is straight-line code but for max-reduction loops of straight-line
/// code (the partial maxima of `rfactor`): a lane runs such a loop on its own
/// accumulator, declared in the body, folding its values in their order, so SIMD
/// changes neither the values nor their order (`omp simd` vectorizes the outer loop).
fn innermost_but_max_folds(body: &[Stmt]) -> bool {
    let mut ok = true;
    for s in body {
        s.walk(&mut |n| match n {
            Stmt::For(inner) => ok &= inner.origin == LoopOrigin::Max && innermost(&inner.body),
            Stmt::Alloc { .. } | Stmt::Fill { .. } => ok = false,
            _ => {}
        });
    }
    ok
}

/// Whether every scalar the body sets is declared in the body, and every buffer it
/// fills as a whole is allocated in the body: then one iteration's writes outside
/// its own declarations are stores into buffer elements only.
fn iteration_private(body: &[Stmt]) -> bool {
    let mut declared = HashSet::new();
    let mut allocated = HashSet::new();
    for s in body {
        s.walk(&mut |n| match n {
            Stmt::Decl { name, .. } => {
                declared.insert(name.clone());
            }
            Stmt::Alloc { buf, .. } => {
                allocated.insert(buf.clone());
            }
            _ => {}
        });
    }
    let mut private = true;
    for s in body {
        s.walk(&mut |n| match n {
            Stmt::SetScalar { name, .. } => private &= declared.contains(name),
            Stmt::Fill { buf, .. } => private &= allocated.contains(buf),
            _ => {}
        });
    }
    private
}

/// Whether the parallel loop `l` shares its iterations with its inner loop: its body is
/// exactly one `gen` loop, sequential and not unrolled, whose bounds do not depend on
/// `l` and which declares no hoisted buffers.
pub(crate) fn collapsible(l: &For) -> bool {
    l.parallel
        && matches!(l.body.as_slice(), [Stmt::For(inner)]
            if inner.origin == LoopOrigin::Gen
                && !inner.vector
                && !inner.unroll
                && !inner.parallel
                && !inner.lo.mentions(&l.var)
                && !inner.hi.mentions(&l.var)
                && inner.hoisted_buffers.is_empty())
}

/// Marks [`For::collapse`] on every parallel loop whose body is exactly one more `gen`
/// loop, without annotations or hoisted buffers of its own, with bounds independent
/// of the outer variable: sharing the iterations of both among the threads lets a short
/// outer extent (a batch of 8) still give every thread work. The inner loop's
/// iterations then run in parallel too, which `gen` iterations may (they write disjoint
/// elements); the translation validator checks it as a parallel loop.
pub fn collapse(stmts: &mut [Stmt]) {
    for s in stmts {
        match s {
            Stmt::For(l) => {
                l.collapse = collapsible(l);
                collapse(&mut l.body);
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                collapse(then_branch);
                collapse(else_branch);
            }
            Stmt::Alloc { body, .. } => collapse(body),
            _ => {}
        }
    }
}
