//! Reads after writes ([`atl_validate::reads`]): mutants of lowered kernels that read
//! or accumulate into memory nothing assigned first — each rejected with a
//! counterexample, or (where the sufficient rule cannot confirm the fault) left
//! unknown, never proved — and kernels written by hand that are accepted.

mod common;

use common::{assert_accepted, decl, edit_blocks, ivar, refutations, report, var};

use atl_lang::index::IndexExpr;
use atl_loopir::ir::{Coord, For, Ix, IxOp, Kernel, Load, LoopOrigin, Stmt, StoreOp, Val};
use atl_solver::Verdict;
use atl_validate::{
    AccessKind, CheckedObligation, KernelVerdict, ObligationKind, Refutation, Report,
};

fn initialised<'a>(
    report: &'a Report,
    buffer: &str,
    kind: AccessKind,
) -> Vec<&'a CheckedObligation> {
    report
        .obligations
        .iter()
        .filter(|c| {
            matches!(&c.obligation.kind, ObligationKind::Initialised { access }
                if access.buffer == buffer && access.kind == kind)
        })
        .collect()
}

/// The refutation of an initialisation obligation of `buffer` of kind `kind`, and
/// that nothing else is refuted (but the coverage of the output, when
/// `coverage_too`: a kernel that never assigns its output does not cover it either).
fn initialisation_refuted(
    refuted: &[Refutation],
    buffer: &str,
    kind: AccessKind,
    coverage_too: bool,
) -> Refutation {
    let all: Vec<String> = refuted
        .iter()
        .map(|r| format!("{} ({})", r.obligation, r.counterexample))
        .collect();
    assert!(
        refuted.iter().all(|r| match r.obligation.kind {
            ObligationKind::Initialised { .. } => true,
            ObligationKind::Coverage { .. } => coverage_too,
            _ => false,
        }),
        "only initialisation refuted: {}",
        all.join("; ")
    );
    refuted
        .iter()
        .find(|r| {
            matches!(&r.obligation.kind, ObligationKind::Initialised { access }
            if access.buffer == buffer && access.kind == kind)
        })
        .cloned()
        .unwrap_or_else(|| panic!("not among the refutations: {}", all.join("; ")))
}

// ---- mutants of lowered kernels ------------------------------------------------

#[test]
fn an_output_never_zeroed_before_accumulation_is_rejected() {
    // conv1d_scatter accumulates into `out` after a fill of zeros at the top.
    let mut k = common::example_kernel("conv1d_scatter/conv1d_scatter.atl", "conv1d_scatter");
    assert_accepted(&k);
    let before = k.body.len();
    k.body.retain(|s| !matches!(s, Stmt::Fill { .. }));
    assert_eq!(k.body.len(), before - 1, "one fill removed");
    let r = initialisation_refuted(&refutations(&k), "out", AccessKind::Store, true);
    assert!(
        r.counterexample.get("c#0").is_some(),
        "{}",
        r.counterexample
    );
}

#[test]
fn a_scalar_accumulator_declared_outside_its_gen_and_not_reset_is_not_proved() {
    // matmul: `for i { for j { scalar acc = 0; for k { acc += ... } out = acc } }`,
    // with the declaration moved before the `i` loop: `acc` is zero for the first
    // element only. Its `+=` follows an assignment (so it reads no uninitialised
    // memory) but not in the same iteration of the `gen` loops: unknown, not
    // refuted (whether the stale sum changes a value depends on the values).
    let mut k = common::example_kernel("matmul/matmul.atl", "matmul");
    assert_accepted(&k);
    let mut moved = None;
    edit_blocks(&mut k.body, &mut |block| {
        if let Some(at) = block.iter().position(|s| matches!(s, Stmt::Decl { .. })) {
            moved = Some(block.remove(at));
        }
    });
    k.body.insert(0, moved.expect("a scalar declaration"));
    // As lowered, the `i` loop is parallel: the shared accumulator is a race.
    let refuted = refutations(&k);
    assert!(
        refuted
            .iter()
            .any(|r| matches!(r.obligation.kind, ObligationKind::Race { .. })),
        "a race"
    );
    // Sequential, only the reads-after-writes rule stands in its way.
    edit_blocks(&mut k.body, &mut |block| {
        for s in block.iter_mut() {
            if let Stmt::For(l) = s {
                l.parallel = false;
                l.collapse = false;
                l.vector = false;
            }
        }
    });
    let report = report(&k);
    assert!(!report.is_rejected(), "{report}");
    let acc = initialised(&report, "acc", AccessKind::ScalarWrite);
    assert_eq!(acc.len(), 1, "{report}");
    assert!(matches!(acc[0].verdict, Verdict::Unknown(_)), "{report}");
    assert!(
        matches!(report.verdict, KernelVerdict::NotValidated { ref reasons } if reasons.len() == 2)
    );

    // Declared there without a value, it is read uninitialised: rejected.
    if let Stmt::Decl { init, .. } = &mut k.body[0] {
        *init = None;
    }
    initialisation_refuted(&refutations(&k), "acc", AccessKind::ScalarWrite, false);
}

#[test]
fn a_padded_buffer_read_but_not_zeroed_is_rejected() {
    // conv1d_kit `fast_rules`: `wp` has K + 5 rows, the last 5 zeroed by the `else` of
    // `if i1 < K`; drop that `else`, the kernel reads those rows uninitialised.
    let mut k = common::example_kernel("conv1d_kit/conv1d_kit.atl", "fast_rules");
    let mut dropped = 0;
    edit_blocks(&mut k.body, &mut |block| {
        for s in block.iter_mut() {
            if let Stmt::If { else_branch, .. } = s
                && else_branch
                    .iter()
                    .any(|e| matches!(e, Stmt::For(l) if l.origin == LoopOrigin::Zero))
            {
                else_branch.clear();
                dropped += 1;
            }
        }
    });
    assert_eq!(dropped, 1);
    let r = initialisation_refuted(&refutations(&k), "wp", AccessKind::Load, false);
    let (row, kk) = (r.counterexample.get("c#0"), r.counterexample.get("K"));
    assert!(
        matches!((row, kk), (Some(row), Some(kk)) if row >= kk),
        "{}",
        r.counterexample
    );
}

#[test]
fn a_consumer_before_its_producer_is_rejected() {
    // blur: `alloc bx { producer nest; consumer nest }`, swapped.
    let mut k = common::example_kernel("blur/blur.atl", "blur");
    assert_accepted(&k);
    let Stmt::Alloc { body, .. } = &mut k.body[0] else {
        panic!("blur starts with the alloc of its first stage")
    };
    assert_eq!(body.len(), 2);
    body.swap(0, 1);
    initialisation_refuted(&refutations(&k), "bx", AccessKind::Load, false);
}

#[test]
fn a_staged_blur_with_its_stages_swapped_is_rejected() {
    // strips_staged: `for yo { alloc bx { producer; consumer } }`, the stages swapped
    // inside the strip loop (one lifetime of `bx` per strip).
    let mut k = common::example_kernel("blur/blur.atl", "strips_staged");
    assert_accepted(&k);
    let mut swapped = 0;
    edit_blocks(&mut k.body, &mut |block| {
        if let [Stmt::Alloc { body, .. }] = block.as_mut_slice()
            && body.len() == 2
            && swapped == 0
        {
            body.swap(0, 1);
            swapped += 1;
        }
    });
    assert_eq!(swapped, 1);
    initialisation_refuted(&refutations(&k), "bx", AccessKind::Load, false);
}

// ---- kernels written by hand ---------------------------------------------------

fn for_loop(v: &str, hi: Ix, origin: LoopOrigin, body: Vec<Stmt>) -> Stmt {
    Stmt::For(For {
        var: v.to_string(),
        lo: Ix::Const(0),
        hi,
        body,
        origin,
        parallel: false,
        vector: false,
        unroll: false,
        collapse: false,
        hoisted_buffers: Vec::new(),
    })
}

/// `buf[a*ext_b + b] @ (a, b)` of an `[ext_a, ext_b]` buffer.
fn at2(buf: &str, a: &str, b: &str, ext_a: &str, ext_b: &str) -> (String, Ix, Vec<Coord>) {
    (
        buf.to_string(),
        Ix::bin(IxOp::Add, Ix::bin(IxOp::Mul, var(a), var(ext_b)), var(b)),
        vec![
            Coord {
                index: ivar(a),
                extent: ivar(ext_a),
            },
            Coord {
                index: ivar(b),
                extent: ivar(ext_b),
            },
        ],
    )
}

fn load2(buf: &str, a: &str, b: &str, ext_a: &str, ext_b: &str) -> Val {
    let (buf, index, coords) = at2(buf, a, b, ext_a, ext_b);
    Val::Load(Load { buf, index, coords })
}

fn store2(buf: &str, a: &str, b: &str, ext_a: &str, ext_b: &str, op: StoreOp, value: Val) -> Stmt {
    let (buf, index, coords) = at2(buf, a, b, ext_a, ext_b);
    Stmt::Store {
        buf,
        index,
        coords,
        op,
        value,
    }
}

/// `out[i, j] = 0; for k: out[i, j] += A[i, k] * B[k, j]` — with the zeroing in the
/// `j` loop (`sibling == false`) or in a loop nest of its own before the
/// accumulation's (`sibling == true`); without it when `zero == false`.
fn matmul_into_the_output(zero: bool, sibling: bool) -> Kernel {
    let product = Val::Bin(
        atl_lang::ir::BinOp::Mul,
        Box::new(load2("A", "i", "k", "M", "K")),
        Box::new(load2("B", "k", "j", "K", "N")),
    );
    let accumulate = for_loop(
        "k",
        var("K"),
        LoopOrigin::Sum,
        vec![store2(
            "out",
            "i",
            "j",
            "M",
            "N",
            StoreOp::Accumulate,
            product,
        )],
    );
    let zeroing = store2("out", "i", "j", "M", "N", StoreOp::Assign, Val::Lit(0.0));
    let nest = |body: Vec<Stmt>| {
        for_loop(
            "i",
            var("M"),
            LoopOrigin::Gen,
            vec![for_loop("j", var("N"), LoopOrigin::Gen, body)],
        )
    };
    let body = match (zero, sibling) {
        (false, _) => vec![nest(vec![accumulate])],
        (true, false) => vec![nest(vec![zeroing, accumulate])],
        (true, true) => vec![nest(vec![zeroing]), nest(vec![accumulate])],
    };
    Kernel {
        name: "by_hand".to_string(),
        sizes: ["M", "N", "K"].iter().map(|s| s.to_string()).collect(),
        inputs: vec![
            decl("A", vec![ivar("M"), ivar("K")]),
            decl("B", vec![ivar("K"), ivar("N")]),
        ],
        output: decl("out", vec![ivar("M"), ivar("N")]),
        preconditions: Vec::new(),
        vector_width: None,
        body,
        source: atl_lang::ir::Expr::lit(0.0),
    }
}

#[test]
fn a_matmul_zeroing_each_element_before_its_sum_written_by_hand_is_accepted() {
    assert_accepted(&matmul_into_the_output(true, false));
}

#[test]
fn a_matmul_zeroing_the_output_in_a_nest_of_its_own_written_by_hand_is_accepted() {
    assert_accepted(&matmul_into_the_output(true, true));
}

#[test]
fn the_hand_written_matmul_without_its_zeroing_is_rejected() {
    let r = initialisation_refuted(
        &refutations(&matmul_into_the_output(false, false)),
        "out",
        AccessKind::Store,
        true,
    );
    assert!(
        r.counterexample.get("c#1").is_some(),
        "{}",
        r.counterexample
    );
}

#[test]
fn a_zeroing_after_the_accumulation_is_rejected() {
    // The sibling nests swapped: the zeroing comes after every `+=`.
    let mut k = matmul_into_the_output(true, true);
    k.body.swap(0, 1);
    initialisation_refuted(&refutations(&k), "out", AccessKind::Store, false);
}

/// `alloc t[n + 1] { for i < n: t[i] = a[i]; for i < n: o[i] = g(i + 1 < n, t[i + 1]) }`
/// where `g` is a `select` (`blend == false`) or a `blend`: `t[n]` is never written,
/// and read at `i = n - 1` only by the blend, which discards its value.
fn shifted_copy_through_a_temporary(blend: bool) -> Kernel {
    let at1 = |buf: &str, index: Ix, coord: IndexExpr, extent: IndexExpr| {
        (
            buf.to_string(),
            index,
            vec![Coord {
                index: coord,
                extent,
            }],
        )
    };
    let n1 = IndexExpr::add(ivar("n"), IndexExpr::Const(1));
    let (buf, index, coords) = at1("t", var("i"), ivar("i"), n1.clone());
    let produce = for_loop(
        "i",
        var("n"),
        LoopOrigin::Gen,
        vec![Stmt::Store {
            buf,
            index,
            coords,
            op: StoreOp::Assign,
            value: Val::Load(Load {
                buf: "a".to_string(),
                index: var("i"),
                coords: vec![Coord {
                    index: ivar("i"),
                    extent: ivar("n"),
                }],
            }),
        }],
    );
    let next = Ix::bin(IxOp::Add, var("i"), Ix::Const(1));
    let (buf, index, coords) = at1(
        "t",
        next.clone(),
        IndexExpr::add(ivar("i"), IndexExpr::Const(1)),
        n1.clone(),
    );
    let read = Box::new(Val::Load(Load { buf, index, coords }));
    let cond = atl_loopir::ir::Cond::Cmp(atl_lang::index::CmpOp::Lt, next, var("n"));
    let (buf, index, coords) = at1("o", var("i"), ivar("i"), ivar("n"));
    let consume = for_loop(
        "i",
        var("n"),
        LoopOrigin::Gen,
        vec![Stmt::Store {
            buf,
            index,
            coords,
            op: StoreOp::Assign,
            value: if blend {
                Val::Blend(cond, read)
            } else {
                Val::Select(cond, read)
            },
        }],
    );
    Kernel {
        name: "by_hand".to_string(),
        sizes: vec!["n".to_string()],
        inputs: vec![decl("a", vec![ivar("n")])],
        output: decl("o", vec![ivar("n")]),
        preconditions: Vec::new(),
        vector_width: None,
        body: vec![Stmt::Alloc {
            buf: "t".to_string(),
            shape: vec![n1],
            len: Ix::bin(IxOp::Add, var("n"), Ix::Const(1)),
            zeroed: false,
            storage: atl_loopir::ir::Storage::Heap,
            fold: None,
            body: vec![produce, consume],
        }],
        source: atl_lang::ir::Expr::lit(0.0),
    }
}

#[test]
fn a_guarded_read_of_a_partly_written_temporary_written_by_hand_is_accepted() {
    assert_accepted(&shifted_copy_through_a_temporary(false));
}

#[test]
fn a_blended_read_of_an_unwritten_element_is_unknown_not_rejected() {
    let report = report(&shifted_copy_through_a_temporary(true));
    assert!(!report.is_rejected(), "{report}");
    let t = initialised(&report, "t", AccessKind::Load);
    assert_eq!(t.len(), 1, "{report}");
    assert!(matches!(t[0].verdict, Verdict::Unknown(_)), "{report}");
}
