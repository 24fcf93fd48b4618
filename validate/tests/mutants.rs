//! Mutants: kernels lowered from the examples, then edited the way a wrong lowering
//! would have built them, each rejected with a counterexample that names the faulty
//! obligation — and kernels written by hand (not by the lowerer) that are accepted.
//!
//! "Accepted" means, in this increment, that every bounds, flattening and
//! well-formedness obligation is proved, so the verdict is `NotValidated` with the one
//! reason [`NOT_CHECKED_YET`].

mod common;

use common::{assert_accepted, decl, edit_blocks, ivar, refutations, var};

use atl_lang::index::{CmpOp, IndexExpr};
use atl_loopir::ir::{
    BufferDecl, Coord, For, Ix, IxOp, Kernel, Load, LoopOrigin, Stmt, StoreOp, Val,
};
use atl_validate::{ObligationKind, Refutation};

fn find(refuted: &[Refutation], wanted: impl Fn(&ObligationKind) -> bool) -> &Refutation {
    refuted
        .iter()
        .find(|r| wanted(&r.obligation.kind))
        .unwrap_or_else(|| {
            let all: Vec<String> = refuted
                .iter()
                .map(|r| format!("{} ({})", r.obligation, r.counterexample))
                .collect();
            panic!("not among the refutations: {}", all.join("; "))
        })
}

fn is_bounds(kind: &ObligationKind, buffer: &str, wanted_dim: usize) -> bool {
    matches!(kind, ObligationKind::Bounds { access, dim } if access.buffer == buffer && *dim == wanted_dim)
}

fn is_flattening(kind: &ObligationKind, buffer: &str) -> bool {
    matches!(kind, ObligationKind::Flattening { access } if access.buffer == buffer)
}

// ---- editing kernels ------------------------------------------------------------

/// Applies `f` to every statement of the body.
fn edit_stmts(kernel: &mut Kernel, f: &mut dyn FnMut(&mut Stmt)) {
    edit_blocks(&mut kernel.body, &mut |block| {
        block.iter_mut().for_each(&mut *f)
    });
}

/// Applies `f` to every value of the body (store and scalar values), outermost first.
fn edit_vals(kernel: &mut Kernel, f: &mut dyn FnMut(&mut Val)) {
    fn walk(v: &mut Val, f: &mut dyn FnMut(&mut Val)) {
        f(v);
        match v {
            Val::Neg(a) | Val::Select(_, a) | Val::Blend(_, a) => walk(a, f),
            Val::Bin(_, a, b) => {
                walk(a, f);
                walk(b, f);
            }
            _ => {}
        }
    }
    edit_stmts(kernel, &mut |s| match s {
        Stmt::Store { value, .. } | Stmt::SetScalar { value, .. } => walk(value, f),
        Stmt::Decl { init: Some(v), .. } => walk(v, f),
        _ => {}
    });
}

fn plus_one(ix: &Ix) -> Ix {
    Ix::bin(IxOp::Add, ix.clone(), Ix::Const(1))
}

#[test]
fn a_loop_bound_plus_one_is_rejected() {
    let mut k = common::example_kernel("matmul/matmul.atl", "matmul");
    edit_stmts(&mut k, &mut |s| {
        if let Stmt::For(l) = s
            && l.var == "j"
        {
            l.hi = plus_one(&l.hi);
        }
    });
    let refuted = refutations(&k);
    let r = find(&refuted, |o| is_bounds(o, "out", 1));
    assert_eq!(
        r.counterexample.get("j"),
        r.counterexample.get("N"),
        "{}",
        r.counterexample
    );
    find(&refuted, |o| is_bounds(o, "B", 1));
}

#[test]
fn a_store_index_plus_one_is_rejected() {
    // `out[i + j*n + 1] @ (j, i + 1)`: consistent flattening, out of bounds at i = n-1.
    let mut k = common::example_kernel("transpose/transpose.atl", "transpose_gen");
    edit_stmts(&mut k, &mut |s| {
        if let Stmt::Store { index, coords, .. } = s {
            *index = plus_one(index);
            coords[1].index = IndexExpr::add(coords[1].index.clone(), IndexExpr::Const(1));
        }
    });
    let refuted = refutations(&k);
    let r = find(&refuted, |o| is_bounds(o, "out", 1));
    assert_eq!(
        r.counterexample.get("i").map(|i| i + 1),
        r.counterexample.get("n")
    );
}

#[test]
fn a_flat_index_plus_one_is_rejected() {
    // Only the flat index moves: the coordinates no longer describe the access.
    let mut k = common::example_kernel("transpose/transpose.atl", "transpose_gen");
    edit_stmts(&mut k, &mut |s| {
        if let Stmt::Store { index, .. } = s {
            *index = plus_one(index);
        }
    });
    let refuted = refutations(&k);
    find(&refuted, |o| is_flattening(o, "out"));
}

#[test]
fn a_stride_n_for_an_n_by_m_buffer_is_rejected_with_n_not_m() {
    // `a[i*m + j]` written `a[i*n + j]` for `a: [n, m]`.
    let mut k = common::example_kernel("transpose/transpose.atl", "transpose_gen");
    edit_vals(&mut k, &mut |v| {
        if let Val::Load(l) = v
            && l.buf == "a"
        {
            l.index = Ix::bin(IxOp::Add, Ix::bin(IxOp::Mul, var("i"), var("n")), var("j"));
        }
    });
    let refuted = refutations(&k);
    let r = find(&refuted, |o| is_flattening(o, "a"));
    assert_ne!(
        r.counterexample.get("n"),
        r.counterexample.get("m"),
        "{}",
        r.counterexample
    );
}

#[test]
fn a_dropped_guard_in_a_tiled_kernel_is_rejected() {
    // matmul tiled by 8 with the row tile's bound `min(8, M - 8*io)` (the guard
    // `ii + 8*io < M` lowered as the bound) made `8`: rows past M are written.
    let mut k = common::example_kernel("matmul/matmul.atl", "tiled");
    let mut dropped = 0;
    edit_blocks(&mut k.body, &mut |block| {
        for s in block.iter_mut() {
            if let Stmt::For(l) = s
                && let Ix::Bin(IxOp::Min, factor, limit) = &l.hi
                && limit.mentions("io")
            {
                l.hi = (**factor).clone();
                dropped += 1;
            }
        }
    });
    assert_eq!(dropped, 1, "the row guard");
    let refuted = refutations(&k);
    let r = find(&refuted, |o| is_bounds(o, "out", 0));
    let m = r.counterexample.get("M").expect("M in the counterexample");
    assert_ne!(m % 8, 0, "{}", r.counterexample);
}

#[test]
fn a_guarded_read_made_a_blend_is_rejected() {
    // `(0 <= x - 1 ? a[x - 1] : 0)` as a blend reads `a[-1]`: a blend's value is
    // computed whatever its condition.
    let mut k = common::example_kernel("halide/halide.atl", "g_inline");
    let mut changed = 0;
    edit_vals(&mut k, &mut |v| {
        if let Val::Select(c, a) = v {
            *v = Val::Blend(c.clone(), a.clone());
            changed += 1;
        }
    });
    assert!(changed > 0);
    let refuted = refutations(&k);
    let r = find(&refuted, |o| is_bounds(o, "a", 0));
    assert_eq!(r.counterexample.get("xi"), Some(0), "{}", r.counterexample);
}

#[test]
fn a_c_division_of_a_possibly_negative_numerator_is_rejected() {
    // The tile loop's bound `(M + 7) / 8` (C's `/`) made `(M - 9) / 8`, negative for
    // small M: C truncates where ATL floors.
    let mut k = common::example_kernel("matmul/matmul.atl", "tiled");
    let mut changed = 0;
    edit_stmts(&mut k, &mut |s| {
        if let Stmt::For(l) = s
            && l.var == "io"
        {
            l.hi = Ix::bin(
                IxOp::DivNat,
                Ix::bin(IxOp::Sub, var("M"), Ix::Const(9)),
                Ix::Const(8),
            );
            changed += 1;
        }
    });
    assert_eq!(changed, 1);
    let refuted = refutations(&k);
    let r = find(&refuted, |o| {
        matches!(o, ObligationKind::NaturalDivision { .. })
    });
    assert!(
        r.counterexample.get("M").is_some_and(|m| m < 9),
        "{}",
        r.counterexample
    );
}

#[test]
fn a_store_to_an_input_is_rejected() {
    let mut k = common::example_kernel("transpose/transpose.atl", "transpose_gen");
    edit_stmts(&mut k, &mut |s| {
        if let Stmt::Store {
            buf, index, coords, ..
        } = s
        {
            // `a[i*m + j] @ (i, j)`: in bounds, well flattened, but `a` is an input.
            *buf = "a".to_string();
            *index = Ix::bin(IxOp::Add, Ix::bin(IxOp::Mul, var("i"), var("m")), var("j"));
            coords.swap(0, 1);
            coords[0].extent = ivar("n");
            coords[1].extent = ivar("m");
        }
    });
    let refuted = refutations(&k);
    // The store to an input, and (since it was the only store) the output is never
    // written: nothing else is wrong.
    assert_eq!(refuted.len(), 2, "the store to an input and the coverage");
    find(&refuted, |o| matches!(o, ObligationKind::WellFormed { .. }));
    find(&refuted, |o| matches!(o, ObligationKind::Coverage { .. }));
}

// ---- kernels written by hand ---------------------------------------------------

fn lt(a: Ix, b: Ix) -> atl_loopir::ir::Cond {
    atl_loopir::ir::Cond::Cmp(CmpOp::Lt, a, b)
}

fn for_loop(v: &str, lo: Ix, hi: Ix, body: Vec<Stmt>) -> Stmt {
    Stmt::For(For {
        var: v.to_string(),
        lo,
        hi,
        body,
        origin: LoopOrigin::Gen,
        parallel: false,
        vector: false,
        unroll: false,
        collapse: false,
        hoisted_buffers: Vec::new(),
    })
}

fn kernel(sizes: &[&str], inputs: Vec<BufferDecl>, output: BufferDecl, body: Vec<Stmt>) -> Kernel {
    Kernel {
        name: "by_hand".to_string(),
        sizes: sizes.iter().map(|s| s.to_string()).collect(),
        inputs,
        output,
        preconditions: Vec::new(),
        vector_width: None,
        body,
        source: atl_lang::ir::Expr::lit(0.0),
    }
}

fn coord(index: IndexExpr, extent: IndexExpr) -> Coord {
    Coord { index, extent }
}

/// `o[4*io + ii] = a[4*io + ii]` over `io < (n + 3) / 4` (C's `/`), `ii < 4`, guarded
/// by `4*io + ii < n` unless `guard` is false.
fn tiled_copy(guard: bool) -> Kernel {
    let x = Ix::bin(
        IxOp::Add,
        Ix::bin(IxOp::Mul, Ix::Const(4), var("io")),
        var("ii"),
    );
    let xe = IndexExpr::add(IndexExpr::mul(IndexExpr::Const(4), ivar("io")), ivar("ii"));
    let store = Stmt::Store {
        buf: "o".to_string(),
        index: x.clone(),
        coords: vec![coord(xe.clone(), ivar("n"))],
        op: StoreOp::Assign,
        value: Val::Load(Load {
            buf: "a".to_string(),
            index: x.clone(),
            coords: vec![coord(xe, ivar("n"))],
        }),
    };
    let inner = if guard {
        Stmt::If {
            cond: lt(x, var("n")),
            then_branch: vec![store],
            else_branch: Vec::new(),
        }
    } else {
        store
    };
    let tiles = Ix::bin(
        IxOp::DivNat,
        Ix::bin(IxOp::Add, var("n"), Ix::Const(3)),
        Ix::Const(4),
    );
    kernel(
        &["n"],
        vec![decl("a", vec![ivar("n")])],
        decl("o", vec![ivar("n")]),
        vec![for_loop(
            "io",
            Ix::Const(0),
            tiles,
            vec![for_loop("ii", Ix::Const(0), Ix::Const(4), vec![inner])],
        )],
    )
}

#[test]
fn a_tiled_copy_written_by_hand_is_accepted() {
    assert_accepted(&tiled_copy(true));
}

#[test]
fn the_hand_written_tiled_copy_without_its_guard_is_rejected() {
    let refuted = refutations(&tiled_copy(false));
    let r = find(&refuted, |o| is_bounds(o, "o", 0));
    let n = r.counterexample.get("n").expect("n");
    assert_ne!(n % 4, 0, "{}", r.counterexample);
}

/// `o[j][i] = t[i][j]` through a temporary `t = a` of shape `[n, m]` allocated inside
/// nothing, with a reversed read `a[n - 1 - i][j]` guarded by a select: a transposing
/// copy written by hand, with floor operations and a stack of scopes.
fn transposing_copy_through_a_temporary() -> Kernel {
    let (n, m) = (ivar("n"), ivar("m"));
    let row = Ix::bin(
        IxOp::Sub,
        Ix::bin(IxOp::Sub, var("n"), Ix::Const(1)),
        var("i"),
    );
    let row_e = IndexExpr::sub(IndexExpr::sub(n.clone(), IndexExpr::Const(1)), ivar("i"));
    let fill_t = for_loop(
        "i",
        Ix::Const(0),
        var("n"),
        vec![for_loop(
            "j",
            Ix::Const(0),
            var("m"),
            vec![Stmt::Store {
                buf: "t".to_string(),
                index: Ix::bin(IxOp::Add, Ix::bin(IxOp::Mul, var("i"), var("m")), var("j")),
                coords: vec![coord(ivar("i"), n.clone()), coord(ivar("j"), m.clone())],
                op: StoreOp::Assign,
                value: Val::Select(
                    atl_loopir::ir::Cond::Cmp(CmpOp::Ge, row.clone(), Ix::Const(0)),
                    Box::new(Val::Load(Load {
                        buf: "a".to_string(),
                        index: Ix::bin(IxOp::Add, Ix::bin(IxOp::Mul, row, var("m")), var("j")),
                        coords: vec![coord(row_e, n.clone()), coord(ivar("j"), m.clone())],
                    })),
                ),
            }],
        )],
    );
    // Read back in a flattened loop over r < n*m: t[r / m][r % m] (floor ops).
    let r_div = Ix::bin(IxOp::FloorDiv, var("r"), var("m"));
    let r_mod = Ix::bin(IxOp::FloorMod, var("r"), var("m"));
    let r_div_e = IndexExpr::bin(atl_lang::index::IndexOp::Div, ivar("r"), m.clone());
    let r_mod_e = IndexExpr::bin(atl_lang::index::IndexOp::Mod, ivar("r"), m.clone());
    let read_back = for_loop(
        "r",
        Ix::Const(0),
        Ix::bin(IxOp::Mul, var("n"), var("m")),
        vec![Stmt::Store {
            buf: "o".to_string(),
            index: Ix::bin(
                IxOp::Add,
                Ix::bin(IxOp::Mul, r_mod.clone(), var("n")),
                r_div.clone(),
            ),
            coords: vec![
                coord(r_mod_e.clone(), m.clone()),
                coord(r_div_e.clone(), n.clone()),
            ],
            op: StoreOp::Assign,
            value: Val::Load(Load {
                buf: "t".to_string(),
                index: var("r"),
                coords: vec![coord(r_div_e, n.clone()), coord(r_mod_e, m.clone())],
            }),
        }],
    );
    kernel(
        &["n", "m"],
        vec![decl("a", vec![n.clone(), m.clone()])],
        decl("o", vec![m.clone(), n.clone()]),
        vec![Stmt::Alloc {
            buf: "t".to_string(),
            shape: vec![n.clone(), m.clone()],
            len: Ix::bin(IxOp::Mul, var("n"), var("m")),
            zeroed: false,
            storage: atl_loopir::ir::Storage::Heap,
            fold: None,
            body: vec![fill_t, read_back],
        }],
    )
}

#[test]
fn a_transposing_copy_through_a_temporary_written_by_hand_is_accepted() {
    assert_accepted(&transposing_copy_through_a_temporary());
}

#[test]
fn the_hand_written_temporary_one_element_short_is_rejected() {
    let mut k = transposing_copy_through_a_temporary();
    if let Stmt::Alloc { len, .. } = &mut k.body[0] {
        *len = Ix::bin(IxOp::Sub, len.clone(), Ix::Const(1));
    }
    let refuted = refutations(&k);
    find(&refuted, |o| {
        matches!(o, ObligationKind::AllocLength { .. })
    });
}

// ---- races, double writes, coverage ----------------------------------------------

fn is_race(kind: &ObligationKind, loop_var: &str) -> bool {
    matches!(kind, ObligationKind::Race { loop_var: v, .. } if v == loop_var)
}

fn is_double_write(kind: &ObligationKind) -> bool {
    matches!(kind, ObligationKind::DoubleWrite { .. })
}

fn is_coverage(kind: &ObligationKind) -> bool {
    matches!(kind, ObligationKind::Coverage { .. })
}

/// Sets `parallel` on the loops over `var`; how many.
fn make_parallel(k: &mut Kernel, var: &str) -> usize {
    let mut changed = 0;
    edit_stmts(k, &mut |s| {
        if let Stmt::For(l) = s
            && l.var == var
        {
            l.parallel = true;
            changed += 1;
        }
    });
    changed
}

#[test]
fn parallel_on_a_reduction_loop_accumulating_into_the_output_is_a_race() {
    // conv1d_scatter: `for c in 0..C  # sum` around `out[n, k, p] += ...`.
    let mut k = common::example_kernel("conv1d_scatter/conv1d_scatter.atl", "conv1d_scatter");
    assert_eq!(make_parallel(&mut k, "c"), 1);
    let refuted = refutations(&k);
    assert!(
        refuted.iter().all(|r| is_race(&r.obligation.kind, "c")),
        "only the race"
    );
    let r = find(&refuted, |o| is_race(o, "c"));
    let cex = &r.counterexample;
    assert_ne!(cex.get("c#1"), cex.get("c#2"), "{cex}");
    assert!(cex.get("C").is_some_and(|c| c >= 2), "{cex}");
}

#[test]
fn parallel_on_a_reduction_loop_into_a_scalar_accumulator_is_a_race() {
    // conv1d_gather: `scalar acc = 0; for c in 0..C  # sum { ... acc += ... }`.
    let mut k = common::example_kernel("conv1d_gather/conv1d_gather.atl", "conv1d_gather");
    assert_eq!(make_parallel(&mut k, "c"), 1);
    let refuted = refutations(&k);
    let r = find(&refuted, |o| {
        matches!(o, ObligationKind::Race { loop_var, write, .. }
            if loop_var == "c" && write.buffer == "acc")
    });
    assert_ne!(r.counterexample.get("c#1"), r.counterexample.get("c#2"));
}

#[test]
fn a_hoisted_temporary_shared_between_threads_is_a_race() {
    // blur strips: `bx` hoisted around the parallel loop `yo`, per thread; made one
    // buffer for all threads.
    let mut k = common::example_kernel("blur/blur.atl", "strips_staged");
    let mut changed = 0;
    edit_stmts(&mut k, &mut |s| {
        if let Stmt::Alloc {
            storage: atl_loopir::ir::Storage::Hoisted { per_thread, .. },
            ..
        } = s
        {
            *per_thread = false;
            changed += 1;
        }
    });
    assert_eq!(changed, 1);
    let refuted = refutations(&k);
    let r = find(
        &refuted,
        |o| matches!(o, ObligationKind::Race { loop_var, write, .. } if loop_var == "yo" && write.buffer == "bx"),
    );
    assert_ne!(r.counterexample.get("yo#1"), r.counterexample.get("yo#2"));
}

/// `for i in 0..2n { o[i / 2] = a[i / 2] }` (C's `/`), `o, a: [n]`; the loop parallel
/// or not.
fn halving_copy(parallel: bool) -> Kernel {
    let half = Ix::bin(IxOp::DivNat, var("i"), Ix::Const(2));
    let half_e = IndexExpr::bin(
        atl_lang::index::IndexOp::Div,
        ivar("i"),
        IndexExpr::Const(2),
    );
    let store = Stmt::Store {
        buf: "o".to_string(),
        index: half.clone(),
        coords: vec![coord(half_e.clone(), ivar("n"))],
        op: StoreOp::Assign,
        value: Val::Load(Load {
            buf: "a".to_string(),
            index: half,
            coords: vec![coord(half_e, ivar("n"))],
        }),
    };
    let mut l = for_loop(
        "i",
        Ix::Const(0),
        Ix::bin(IxOp::Mul, Ix::Const(2), var("n")),
        vec![store],
    );
    if let Stmt::For(f) = &mut l {
        f.parallel = parallel;
    }
    kernel(
        &["n"],
        vec![decl("a", vec![ivar("n")])],
        decl("o", vec![ivar("n")]),
        vec![l],
    )
}

#[test]
fn two_iterations_of_a_parallel_loop_writing_one_element_are_a_race() {
    let refuted = refutations(&halving_copy(true));
    let r = find(&refuted, |o| is_race(o, "i"));
    let (i1, i2) = (
        r.counterexample.get("i#1").unwrap(),
        r.counterexample.get("i#2").unwrap(),
    );
    assert_ne!(i1, i2);
    assert_eq!(i1 / 2, i2 / 2, "{}", r.counterexample);
    find(&refuted, is_double_write);
}

#[test]
fn an_assignment_loop_writing_one_element_twice_is_a_double_write() {
    let refuted = refutations(&halving_copy(false));
    assert!(refuted.iter().all(|r| is_double_write(&r.obligation.kind)));
    let r = find(&refuted, is_double_write);
    let (i1, i2) = (
        r.counterexample.get("i#1").unwrap(),
        r.counterexample.get("i#2").unwrap(),
    );
    assert_ne!(i1, i2);
    assert_eq!(i1 / 2, i2 / 2, "{}", r.counterexample);
}

#[test]
fn a_tiled_copy_with_a_floor_outer_bound_misses_elements() {
    // `io < n / 4` instead of `(n + 3) / 4`: the last partial tile is never written.
    let mut k = tiled_copy(true);
    edit_stmts(&mut k, &mut |s| {
        if let Stmt::For(l) = s
            && l.var == "io"
        {
            l.hi = Ix::bin(IxOp::DivNat, var("n"), Ix::Const(4));
        }
    });
    let refuted = refutations(&k);
    assert_eq!(refuted.len(), 1, "only the coverage");
    let r = find(&refuted, is_coverage);
    let n = r.counterexample.get("n").unwrap();
    let c = r.counterexample.get("c#0").unwrap();
    assert!(
        n % 4 != 0 && c >= 4 * (n / 4) && c < n,
        "{}",
        r.counterexample
    );
}

#[test]
fn a_loop_to_n_minus_one_misses_the_last_element() {
    // transpose_gen with `i < n - 1`: column n-1 of `out` is never written.
    let mut k = common::example_kernel("transpose/transpose.atl", "transpose_gen");
    edit_stmts(&mut k, &mut |s| {
        if let Stmt::For(l) = s
            && l.var == "i"
        {
            l.hi = Ix::bin(IxOp::Sub, l.hi.clone(), Ix::Const(1));
        }
    });
    let refuted = refutations(&k);
    assert_eq!(refuted.len(), 1, "only the coverage");
    let r = find(&refuted, is_coverage);
    assert_eq!(
        r.counterexample.get("c#1").map(|c| c + 1),
        r.counterexample.get("n"),
        "{}",
        r.counterexample
    );
}

#[test]
fn a_parallel_vector_tiled_copy_written_by_hand_is_accepted() {
    let mut k = tiled_copy(true);
    edit_stmts(&mut k, &mut |s| {
        if let Stmt::For(l) = s {
            l.parallel = l.var == "io";
            l.vector = l.var == "ii";
        }
    });
    assert_accepted(&k);
}

#[test]
fn an_if_else_pair_covering_the_output_written_by_hand_is_accepted() {
    // `for i in 0..n parallel { if i < n - 2 { o[i] = a[i] } else { o[i] = 0 } }`.
    let store = |value: Val| Stmt::Store {
        buf: "o".to_string(),
        index: var("i"),
        coords: vec![coord(ivar("i"), ivar("n"))],
        op: StoreOp::Assign,
        value,
    };
    let read = Val::Load(Load {
        buf: "a".to_string(),
        index: var("i"),
        coords: vec![coord(ivar("i"), ivar("n"))],
    });
    let mut l = for_loop(
        "i",
        Ix::Const(0),
        var("n"),
        vec![Stmt::If {
            cond: lt(var("i"), Ix::bin(IxOp::Sub, var("n"), Ix::Const(2))),
            then_branch: vec![store(read)],
            else_branch: vec![store(Val::Lit(0.0))],
        }],
    );
    if let Stmt::For(f) = &mut l {
        f.parallel = true;
        f.vector = true;
    }
    let k = kernel(
        &["n"],
        vec![decl("a", vec![ivar("n")])],
        decl("o", vec![ivar("n")]),
        vec![l],
    );
    assert_accepted(&k);
}

#[test]
fn a_temporary_renamed_as_the_input_it_reads_is_rejected_on_its_name_alone() {
    // The mutation fuzzer (seed 31, case 1761) renamed blur's per-strip buffer `bx` to
    // `img`, the input it is computed from: the validator chased the buffer's reads of
    // itself until memory ran out (24 GiB). The names are now checked first, and a
    // clash rejects the kernel before any other analysis reads them.
    let kernel = common::example_kernel("blur/blur.atl", "strips_staged");
    let text = atl_loopir::print::kernel_to_text(&kernel);
    let body = text.find("\n{").expect("a body");
    assert!(text[body..].contains("bx["), "{text}");
    let renamed = format!("{}{}", &text[..body], text[body..].replace("bx", "img"));
    let mutant = atl_loopir::parse_kernel(&renamed).expect("parses");
    let report = common::report_against_example(&mutant, "blur/blur.atl", "strips_staged");
    let atl_validate::KernelVerdict::Rejected { refuted, .. } = &report.verdict else {
        panic!("not rejected:\n{report}");
    };
    assert!(
        refuted.iter().any(|r| matches!(&r.obligation.kind,
            ObligationKind::WellFormed { problem } if problem.contains("hides the input `img`"))),
        "{report}"
    );
    // Only the names were checked.
    assert!(
        report.obligations.iter().all(|c| matches!(
            c.obligation.kind,
            ObligationKind::WellFormed { .. } | ObligationKind::CName { .. }
        )),
        "{report}"
    );
}
