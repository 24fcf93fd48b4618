//! Where the C code allocates heap temporaries: once around the loops they sit in,
//! and once per thread around a parallel loop, instead of once per iteration.
//!
//! In the loop IR an [`Stmt::Alloc`] gives a fresh buffer for its body on every
//! execution: uninitialized (the loop-IR interpreter faults on a read before a write,
//! E0922, so no kernel depends on what an uninitialized buffer holds) or zeroed. So
//! one buffer may serve every execution of an `Alloc` that runs in sequence, as long
//! as its length is the same each time and a zeroed one is zeroed again each time.
//! The printer therefore declares such a buffer (as `NULL`) in a block around the
//! outermost enclosing loop whose iterations all see the same length, allocates it at
//! the first execution of the `Alloc` (lazily: a loop that never runs allocates
//! nothing, as before) and frees it after that loop. A parallel loop is a boundary:
//! its block becomes an `omp parallel` region whose threads each declare their own
//! buffer, and the loop becomes its worksharing `omp for` — executions on one thread
//! are in sequence, so the argument above holds per thread. Without OpenMP the region
//! is an ordinary block.
//!
//! Lengths are index expressions over sizes and loop variables (and shapes are over
//! sizes only, so in practice every length is loop-invariant); the plan still checks
//! that no loop it moves an allocation across is mentioned in the length. It only
//! moves buffers whose name is declared once in the whole kernel, so the C name it
//! declares in the outer block can neither clash with nor be shadowed by another
//! declaration in between.

use std::collections::{HashMap, HashSet};

use atl_lower::ir::{For, Ix, Kernel, Stmt};

use crate::cprint::ix_mentions;

/// The allocation placement of one kernel.
#[derive(Default)]
pub(crate) struct HoistPlan {
    /// Loops (by address: the plan lives no longer than the borrowed kernel) that get
    /// a block declaring these buffers: per thread when the loop is parallel.
    regions: HashMap<*const For, Vec<String>>,
    /// The buffers whose `Alloc` reuses the one declared in a region, with the
    /// variable of that region's loop.
    hoisted: HashMap<String, HoistedAt>,
}

/// Where a hoisted buffer is declared.
#[derive(Clone, Debug)]
pub(crate) struct HoistedAt {
    /// The variable of the loop the buffer's block encloses.
    pub loop_var: String,
    /// Whether that loop is parallel (one buffer per thread).
    pub per_thread: bool,
}

impl HoistPlan {
    /// The buffers declared in a block around `l`, if any.
    pub(crate) fn region(&self, l: &For) -> Option<&[String]> {
        self.regions.get(&(l as *const For)).map(Vec::as_slice)
    }

    /// Where the `Alloc` of `buf` gets its buffer, when not at the `Alloc` itself.
    pub(crate) fn hoisted(&self, buf: &str) -> Option<&HoistedAt> {
        self.hoisted.get(buf)
    }
}

/// Plans where the heap temporaries of `k` are allocated; `on_heap` says which
/// lengths the printer allocates on the heap (the others are stack arrays, which cost
/// nothing to "allocate" per iteration).
pub(crate) fn plan(k: &Kernel, on_heap: &dyn Fn(&Ix) -> bool) -> HoistPlan {
    let mut plan = HoistPlan::default();
    let once = declared_once(k);
    let mut stack = Vec::new();
    walk(&k.body, &mut stack, &once, on_heap, &mut plan);
    plan
}

fn walk<'a>(
    stmts: &'a [Stmt],
    stack: &mut Vec<&'a For>,
    once: &HashSet<String>,
    on_heap: &dyn Fn(&Ix) -> bool,
    plan: &mut HoistPlan,
) {
    for s in stmts {
        match s {
            Stmt::For(l) => {
                stack.push(l);
                walk(&l.body, stack, once, on_heap, plan);
                stack.pop();
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                walk(then_branch, stack, once, on_heap, plan);
                walk(else_branch, stack, once, on_heap, plan);
            }
            Stmt::Alloc { buf, len, body, .. } => {
                if on_heap(len) && once.contains(buf) {
                    // Outward from the innermost enclosing loop: cross loops whose
                    // variable the length does not mention; stop at a parallel loop
                    // (its threads need buffers of their own).
                    let mut target: Option<&For> = None;
                    for l in stack.iter().rev() {
                        if ix_mentions(len, &l.var) {
                            break;
                        }
                        target = Some(l);
                        if l.parallel {
                            break;
                        }
                    }
                    if let Some(l) = target {
                        plan.regions
                            .entry(l as *const For)
                            .or_default()
                            .push(buf.clone());
                        plan.hoisted.insert(
                            buf.clone(),
                            HoistedAt {
                                loop_var: l.var.clone(),
                                per_thread: l.parallel,
                            },
                        );
                    }
                }
                walk(body, stack, once, on_heap, plan);
            }
            _ => {}
        }
    }
}

/// Names declared exactly once in the kernel (parameters, loop variables, scalars and
/// buffers counted together).
fn declared_once(k: &Kernel) -> HashSet<String> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for n in k
        .sizes
        .iter()
        .chain(k.inputs.iter().map(|i| &i.name))
        .chain(std::iter::once(&k.output.name))
    {
        *count.entry(n.clone()).or_default() += 1;
    }
    k.walk(&mut |s| {
        let name = match s {
            Stmt::For(l) => &l.var,
            Stmt::Alloc { buf, .. } => buf,
            Stmt::Decl { name, .. } => name,
            _ => return,
        };
        *count.entry(name.clone()).or_default() += 1;
    });
    count
        .into_iter()
        .filter(|&(_, c)| c == 1)
        .map(|(n, _)| n)
        .collect()
}
