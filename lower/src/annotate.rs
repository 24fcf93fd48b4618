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
//!   not vectorized (a register tile's row loop, a 3-tap stencil's sum).

use std::collections::HashSet;

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
            Stmt::Decl { .. } | Stmt::SetScalar { .. } | Stmt::Store { .. } | Stmt::Fill { .. } => {
            }
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
    l.unroll = !l.vector && trip.is_some_and(|n| (2..=UNROLL_MAX).contains(&n));
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
