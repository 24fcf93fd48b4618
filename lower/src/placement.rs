//! Placement of temporaries: where the memory of every `let` buffer ([`Stmt::Alloc`])
//! comes from — a stack array, a heap allocation per execution, or one heap buffer
//! allocated once around the loops it sits in (once per thread around a parallel
//! loop) instead of once per iteration. The decision is written into the loop IR
//! ([`Storage`] on each `Alloc`, [`For::hoisted_buffers`] on the loop that declares a
//! hoisted buffer), so the C printer only transcribes it and the loop-IR interpreter
//! runs what is printed.
//!
//! The rules:
//! - An `Alloc` whose length is a constant of at most [`STACK_LIMIT`] elements is a
//!   stack array ([`Storage::Stack`]): no allocation per iteration, and the C
//!   compiler may keep a register tile in registers.
//! - Any other `Alloc` is on the heap. When its name is declared once in the whole
//!   kernel and it sits in a loop, it is hoisted ([`Storage::Hoisted`]) to the
//!   outermost enclosing loop whose iterations all see the same length, going
//!   outwards from the innermost loop and stopping at the first parallel loop (which
//!   then gets per-thread buffers); otherwise it is allocated at the `Alloc` itself
//!   ([`Storage::Heap`], what lowering produced).
//!
//! Soundness. In the loop IR an `Alloc` gives a fresh buffer for its body on every
//! execution: uninitialized (the loop-IR interpreter faults on a read before a write,
//! E0922, so no kernel depends on what an uninitialized buffer holds) or zeroed. So
//! one buffer may serve every execution of an `Alloc` that runs in sequence, as long
//! as its length is the same each time and a zeroed one is zeroed again each time.
//! The C printer therefore declares a hoisted buffer (as `NULL`) in a block around
//! the loop it is hoisted to, allocates it at the first execution of the `Alloc`
//! (lazily: a loop that never runs allocates nothing, as before) and frees it after
//! that loop. A parallel loop is a boundary: its block becomes an `omp parallel`
//! region whose threads each declare their own buffer, and the loop becomes its
//! worksharing `omp for` — executions on one thread are in sequence, so the argument
//! above holds per thread. Without OpenMP the region is an ordinary block. A stack
//! array is fresh per execution by C's scoping (and `= {0}` zeroes it each time).
//!
//! Lengths are index expressions over sizes and loop variables (and shapes are over
//! sizes only, so in practice every length is loop-invariant); the pass still checks
//! that no loop it moves an allocation across is mentioned in the length. It only
//! moves buffers whose name is declared once in the whole kernel, so the C name
//! declared in the outer block can neither clash with nor be shadowed by another
//! declaration in between.
//!
//! The interpreter checks the placement as it runs (`crate::interp`): a hoisted
//! `Alloc` must find its buffer declared by the enclosing loop it names, with the
//! same parallelism; every execution must ask for the same length (E0921); the
//! buffer is fresh (uninitialized or zeroed) at every execution, so E0922 still
//! catches a read of what an earlier iteration left; and a buffer shared by the
//! iterations of an annotated loop (a sequential region around a `vector` loop)
//! counts as outliving them, so two iterations writing one element is E0925, while a
//! per-thread buffer is private to each iteration of its parallel loop.

use std::collections::{HashMap, HashSet};

use crate::ir::{For, Ix, Kernel, Stmt, Storage};

/// Temporaries with a constant length up to this many elements are stack arrays.
const STACK_LIMIT: i64 = 4096;

/// Decides the storage of every temporary of `kernel` (see the module
/// documentation) from its loops' annotations, replacing any earlier placement (so
/// it may run again after the annotations change).
pub fn place(kernel: &mut Kernel) {
    let once = declared_once(kernel);
    let mut enclosing = Vec::new();
    let left = place_block(&mut kernel.body, &mut enclosing, &once);
    // Every hoisted buffer targets an enclosing loop, which collected it.
    debug_assert!(
        left.is_empty(),
        "hoisted buffers without their loop: {left:?}"
    );
}

/// A loop enclosing the statements being placed.
struct Enclosing {
    var: String,
    parallel: bool,
}

/// Places the temporaries of `stmts`; returns the buffers hoisted to enclosing loops,
/// each with the depth of its loop in `enclosing`, in the order their `Alloc`s occur.
fn place_block(
    stmts: &mut [Stmt],
    enclosing: &mut Vec<Enclosing>,
    once: &HashSet<String>,
) -> Vec<(usize, String)> {
    let mut hoisted = Vec::new();
    for s in stmts {
        match s {
            Stmt::For(l) => hoisted.extend(place_loop(l, enclosing, once)),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                hoisted.extend(place_block(then_branch, enclosing, once));
                hoisted.extend(place_block(else_branch, enclosing, once));
            }
            Stmt::Alloc {
                buf,
                len,
                storage,
                body,
                ..
            } => {
                *storage = Storage::Heap;
                if !on_heap(len) {
                    *storage = Storage::Stack;
                } else if once.contains(buf.as_str())
                    && let Some(depth) = hoist_target(len, enclosing)
                {
                    let target = &enclosing[depth];
                    *storage = Storage::Hoisted {
                        loop_var: target.var.clone(),
                        per_thread: target.parallel,
                    };
                    hoisted.push((depth, buf.clone()));
                }
                hoisted.extend(place_block(body, enclosing, once));
            }
            Stmt::Decl { .. }
            | Stmt::SetScalar { .. }
            | Stmt::Store { .. }
            | Stmt::Fill { .. }
            | Stmt::Fail { .. } => {}
        }
    }
    hoisted
}

/// Places the temporaries of a loop's body; the buffers hoisted to this loop become
/// its [`For::hoisted_buffers`], the others are returned.
fn place_loop(
    l: &mut For,
    enclosing: &mut Vec<Enclosing>,
    once: &HashSet<String>,
) -> Vec<(usize, String)> {
    let depth = enclosing.len();
    enclosing.push(Enclosing {
        var: l.var.clone(),
        parallel: l.parallel,
    });
    let inner = place_block(&mut l.body, enclosing, once);
    enclosing.pop();
    let (here, outer): (Vec<_>, Vec<_>) = inner.into_iter().partition(|(d, _)| *d == depth);
    l.hoisted_buffers = here.into_iter().map(|(_, buf)| buf).collect();
    outer
}

/// The loop (its depth in `enclosing`) a heap buffer of length `len` is hoisted to:
/// outward from the innermost enclosing loop, cross loops whose variable the length
/// does not mention; stop at a parallel loop (its threads need buffers of their own).
/// `None` when the innermost loop is mentioned, or when there is no loop.
fn hoist_target(len: &Ix, enclosing: &[Enclosing]) -> Option<usize> {
    let mut target = None;
    for (depth, l) in enclosing.iter().enumerate().rev() {
        if len.mentions(&l.var) {
            break;
        }
        target = Some(depth);
        if l.parallel {
            break;
        }
    }
    target
}

/// Whether a temporary of this length is allocated on the heap (not a stack array).
fn on_heap(len: &Ix) -> bool {
    !matches!(len, Ix::Const(n) if *n <= STACK_LIMIT)
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

#[cfg(test)]
mod tests {
    //! The pass's decisions on small kernels, and the loop-IR interpreter's checks of
    //! a placement that breaks the argument above (each a mutation of a placed
    //! kernel).

    use std::collections::BTreeMap;

    use atl_lang::index::CmpOp;
    use atl_lang::interp::Tensor;

    use super::*;
    use crate::ir::{Cond, IxOp};

    const PROGRAM: &str = "\
size n, m, K
input f : [n, m]
input g : [K, m]
def mirror = gen i < n: let t = gen j < m: 2 * f[i, j] in gen j < m: t[j] + t[m - 1 - j]
def seq = sum k < K: let t = gen j < m: g[k, j] * 2 in gen j < m: t[j] + t[m - 1 - j]
def nest = gen i < n: gen k < K: let t = gen j < m: f[i, j] * g[k, j] in gen j < m: t[m - 1 - j]
def tile = gen i < n: let t = gen j < 4: f[i, 0] * 2 in gen j < 4: t[3 - j]
def top = let t = gen j < m: g[0, j] in gen i < n, j < m: t[j] * f[i, j]
";

    fn kernel(def: &str) -> Kernel {
        let (checked, diags) = atl_lang::check_source(PROGRAM);
        let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
        crate::lower_def(&checked.program, &checked.shapes, def, &Default::default())
            .unwrap_or_else(|d| panic!("`{def}` does not lower: {d:?}"))
    }

    fn run(k: &Kernel) -> Result<Tensor, atl_lang::diag::Diagnostic> {
        let (n, m, kk) = (3, 4, 2);
        let sizes = BTreeMap::from([
            ("n".to_string(), n),
            ("m".to_string(), m),
            ("K".to_string(), kk),
        ]);
        let inputs = BTreeMap::from([
            ("f".to_string(), Tensor::random(vec![3, 4], 1)),
            ("g".to_string(), Tensor::random(vec![2, 4], 2)),
        ]);
        crate::run_kernel(k, &sizes, &inputs)
    }

    /// Every `Alloc` of the kernel with its storage.
    fn storages(k: &Kernel) -> Vec<(String, Storage)> {
        let mut found = Vec::new();
        k.walk(&mut |s| {
            if let Stmt::Alloc { buf, storage, .. } = s {
                found.push((buf.clone(), storage.clone()));
            }
        });
        found
    }

    /// Every loop of the kernel that declares hoisted buffers, with them.
    fn regions(k: &Kernel) -> Vec<(String, bool, Vec<String>)> {
        let mut found = Vec::new();
        k.walk(&mut |s| {
            if let Stmt::For(l) = s
                && !l.hoisted_buffers.is_empty()
            {
                found.push((l.var.clone(), l.parallel, l.hoisted_buffers.clone()));
            }
        });
        found
    }

    fn hoisted(var: &str, per_thread: bool) -> Storage {
        Storage::Hoisted {
            loop_var: var.to_string(),
            per_thread,
        }
    }

    /// Applies `f` to the first `Alloc` of the kernel.
    fn with_alloc(k: &mut Kernel, f: &mut dyn FnMut(&mut Stmt)) {
        fn go(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Stmt)) -> bool {
            for s in stmts {
                let done = match s {
                    Stmt::Alloc { .. } => {
                        f(s);
                        true
                    }
                    Stmt::For(l) => go(&mut l.body, f),
                    Stmt::If {
                        then_branch,
                        else_branch,
                        ..
                    } => go(then_branch, f) || go(else_branch, f),
                    _ => false,
                };
                if done {
                    return true;
                }
            }
            false
        }
        assert!(go(&mut k.body, f), "no alloc");
    }

    /// Applies `f` to every loop of the kernel.
    fn each_loop(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut For)) {
        for s in stmts {
            match s {
                Stmt::For(l) => {
                    f(l);
                    each_loop(&mut l.body, f);
                }
                Stmt::Alloc { body, .. } => each_loop(body, f),
                Stmt::If {
                    then_branch,
                    else_branch,
                    ..
                } => {
                    each_loop(then_branch, f);
                    each_loop(else_branch, f);
                }
                _ => {}
            }
        }
    }

    #[test]
    fn temporaries_are_placed_by_length_and_loops() {
        let k = kernel("mirror");
        assert_eq!(storages(&k), [("t".to_string(), hoisted("i", true))]);
        assert_eq!(
            regions(&k),
            [("i".to_string(), true, vec!["t".to_string()])]
        );
        let k = kernel("seq");
        assert_eq!(storages(&k), [("t".to_string(), hoisted("k", false))]);
        assert_eq!(
            regions(&k),
            [("k".to_string(), false, vec!["t".to_string()])]
        );
        // Across the sequential `k` loop up to the parallel `i` loop.
        let k = kernel("nest");
        assert_eq!(storages(&k), [("t".to_string(), hoisted("i", true))]);
        let k = kernel("tile");
        assert_eq!(storages(&k), [("t".to_string(), Storage::Stack)]);
        assert!(regions(&k).is_empty());
        let k = kernel("top");
        assert_eq!(storages(&k), [("t".to_string(), Storage::Heap)]);
        assert!(regions(&k).is_empty());
    }

    #[test]
    fn placement_runs_again_to_the_same_result() {
        for def in ["mirror", "seq", "nest", "tile", "top"] {
            let k = kernel(def);
            let mut again = k.clone();
            place(&mut again);
            assert_eq!(again, k, "`{def}`");
            run(&k).unwrap_or_else(|d| panic!("`{def}` runs: {d:?}"));
        }
    }

    #[test]
    fn a_hoisted_alloc_needs_its_buffer_declared_by_its_loop() {
        let mut k = kernel("seq");
        each_loop(&mut k.body, &mut |l| l.hoisted_buffers.clear());
        let err = run(&k).expect_err("no buffer");
        assert_eq!(err.code, "E0921", "{err:?}");
        // Declared, but the alloc claims a per-thread one.
        let mut k = kernel("seq");
        with_alloc(&mut k, &mut |s| {
            if let Stmt::Alloc { storage, .. } = s {
                *storage = hoisted("k", true);
            }
        });
        let err = run(&k).expect_err("not per thread");
        assert_eq!(err.code, "E0921", "{err:?}");
    }

    #[test]
    fn a_hoisted_buffer_keeps_one_length() {
        let mut k = kernel("mirror");
        with_alloc(&mut k, &mut |s| {
            if let Stmt::Alloc { len, .. } = s {
                *len = Ix::bin(IxOp::Add, len.clone(), Ix::Var("i".into()));
            }
        });
        let err = run(&k).expect_err("lengths differ");
        assert_eq!(err.code, "E0921", "{err:?}");
    }

    #[test]
    fn a_hoisted_buffer_is_fresh_at_every_execution() {
        // The producer of `t` runs only in the first iteration: later iterations read
        // what it left, which a fresh buffer does not hold.
        let mut k = kernel("mirror");
        with_alloc(&mut k, &mut |s| {
            if let Stmt::Alloc { body, .. } = s {
                let producer = body.remove(0);
                body.insert(
                    0,
                    Stmt::If {
                        cond: Cond::Cmp(CmpOp::Eq, Ix::Var("i".into()), Ix::Const(0)),
                        then_branch: vec![producer],
                        else_branch: Vec::new(),
                    },
                );
            }
        });
        let err = run(&k).expect_err("stale read");
        assert_eq!(err.code, "E0922", "{err:?}");
    }

    #[test]
    fn a_buffer_shared_by_the_threads_of_a_parallel_loop_is_a_race() {
        // `t` hoisted to the sequential `i` loop while the `k` loop inside is
        // parallel: its iterations would share one buffer.
        let mut k = kernel("nest");
        each_loop(&mut k.body, &mut |l| l.parallel = l.var == "k");
        with_alloc(&mut k, &mut |s| {
            if let Stmt::Alloc { storage, .. } = s {
                *storage = hoisted("i", false);
            }
        });
        let err = run(&k).expect_err("race");
        assert_eq!(err.code, "E0925", "{err:?}");
        // Placed again, `t` is per thread at `k` and the kernel runs.
        place(&mut k);
        assert_eq!(storages(&k), [("t".to_string(), hoisted("k", true))]);
        run(&k).expect("runs");
    }

    #[test]
    fn a_hoisted_buffer_is_only_live_inside_its_alloc() {
        // A read of `t` moved after its `alloc`, still inside the loop declaring it.
        let mut k = kernel("seq");
        let mut moved = None;
        with_alloc(&mut k, &mut |s| {
            if let Stmt::Alloc { body, .. } = s {
                moved = body.pop();
            }
        });
        let moved = moved.expect("a consumer");
        each_loop(&mut k.body, &mut |l| {
            if l.var == "k" {
                l.body.push(moved.clone());
            }
        });
        let err = run(&k).expect_err("dead buffer");
        assert_eq!(err.code, "E0921", "{err:?}");
        assert!(err.message.contains("only live inside"), "{err:?}");
    }
}
