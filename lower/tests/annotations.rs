//! The loop annotations (`parallel`, `vector`, `unroll`): which loops get them, and
//! that the loop-IR interpreter rejects an annotation that would be wrong — two
//! iterations writing the same element — so the differential tests, which run every
//! example through it, would catch a lowering that broke the invariant.

mod support;

use std::collections::BTreeMap;

use atl_lang::interp::Tensor;
use atl_lower::ir::{For, LoopOrigin, Stmt};
use atl_lower::{Kernel, LowerOptions, lower_def, run_kernel};

fn kernel(source: &str, def: &str) -> Kernel {
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("does not check: {diags:?}"));
    lower_def(
        &checked.program,
        &checked.shapes,
        def,
        &LowerOptions::default(),
    )
    .expect("lowers")
}

fn loops(k: &Kernel) -> Vec<For> {
    let mut out = Vec::new();
    k.walk(&mut |s| {
        if let Stmt::For(l) = s {
            out.push(l.clone());
        }
    });
    out
}

fn find<'a>(ls: &'a [For], var: &str) -> &'a For {
    ls.iter()
        .find(|l| l.var == var)
        .unwrap_or_else(|| panic!("no loop over `{var}`"))
}

const MATMUL: &str = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
    def mm = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]\n";

#[test]
fn outer_gen_is_parallel_reduction_is_not_vectorized() {
    let k = kernel(MATMUL, "mm");
    let ls = loops(&k);
    let (i, j, kk) = (find(&ls, "i"), find(&ls, "j"), find(&ls, "k"));
    assert!(i.parallel && !i.vector);
    // `j` is nested in `i`: never a second parallel region.
    assert!(!j.parallel);
    // The `k` loop accumulates into one scalar: vectorizing it would reassociate.
    assert_eq!(kk.origin, LoopOrigin::Sum);
    assert!(!kk.parallel && !kk.vector);
}

#[test]
fn register_tile_sum_accumulates_into_a_local_tile() {
    // A tensor-valued sum of constant shape 4 x 8: a local tile, zeroed, accumulated
    // by a `k` loop whose inner `ji` loop is vectorized and `ii` loop unrolled.
    let src = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
        def tile = gen io < M, jo < N: sum k < K: gen ii < 4, ji < 8: \
        A[io, k] * B[k, jo] * A[io, k]\n";
    let k = kernel(src, "tile");
    let mut tiles = Vec::new();
    k.walk(&mut |s| {
        if let Stmt::Alloc { buf, len, .. } = s {
            tiles.push((buf.clone(), len.clone()));
        }
    });
    assert_eq!(tiles.len(), 1, "one tile: {tiles:?}");
    assert_eq!(tiles[0].1, atl_lower::ir::Ix::Const(32));
    let ls = loops(&k);
    assert!(find(&ls, "ii").unroll);
    assert!(find(&ls, "ji").vector);
    assert!(find(&ls, "io").parallel);
    // And it computes the same values as the reference interpreter.
    let sizes: BTreeMap<String, i64> = [("M", 3), ("N", 2), ("K", 5)]
        .map(|(n, v)| (n.to_string(), v))
        .into();
    let a = Tensor::new(
        vec![3, 5],
        (0..15).map(|x| f64::from(x) * 0.5 - 2.0).collect(),
    )
    .expect("shape");
    let b = Tensor::new(vec![5, 2], (0..10).map(|x| f64::from(x) - 4.0).collect()).expect("shape");
    let inputs: BTreeMap<String, Tensor> =
        [("A".to_string(), a.clone()), ("B".to_string(), b.clone())].into();
    let got = run_kernel(&k, &sizes, &inputs).expect("runs");
    // Hand-computed: tile[io, jo, ii, ji] = sum_k A[io,k]^2 * B[k,jo].
    for io in 0..3 {
        for jo in 0..2 {
            let want: f64 = (0..5)
                .map(|kk| a.data[io * 5 + kk] * a.data[io * 5 + kk] * b.data[kk * 2 + jo])
                .sum();
            for e in 0..32 {
                assert_eq!(got.data[((io * 2 + jo) * 32) + e], want);
            }
        }
    }
}

#[test]
fn a_wrong_parallel_annotation_is_caught_by_the_interpreter() {
    // Mark the reduction loop of a tensor-valued sum parallel (it is not: every
    // iteration accumulates into the same row) and run the loop IR.
    let src = "size N, K\ninput A : [K, N]\ndef colsum = sum k < K: gen j < N: A[k, j]\n";
    let mut k = kernel(src, "colsum");
    fn mark_sum_parallel(stmts: &mut [Stmt]) -> bool {
        let mut done = false;
        for s in stmts {
            match s {
                Stmt::For(l) if l.origin == LoopOrigin::Sum => {
                    l.parallel = true;
                    done = true;
                }
                Stmt::For(l) => done |= mark_sum_parallel(&mut l.body),
                Stmt::Alloc { body, .. } => done |= mark_sum_parallel(body),
                Stmt::If {
                    then_branch,
                    else_branch,
                    ..
                } => {
                    done |= mark_sum_parallel(then_branch);
                    done |= mark_sum_parallel(else_branch);
                }
                _ => {}
            }
        }
        done
    }
    assert!(mark_sum_parallel(&mut k.body), "has a sum loop");
    let sizes: BTreeMap<String, i64> = [("N", 3), ("K", 2)].map(|(n, v)| (n.to_string(), v)).into();
    let a = Tensor::new(vec![2, 3], vec![1.0; 6]).expect("shape");
    let inputs: BTreeMap<String, Tensor> = [("A".to_string(), a)].into();
    let err = run_kernel(&k, &sizes, &inputs).expect_err("a wrong annotation is a fault");
    assert_eq!(err.code, "E0925", "{err:?}");
    // Unmodified, the same kernel runs and sums the columns.
    let k = kernel(src, "colsum");
    let a = Tensor::new(vec![2, 3], vec![1.0, 2.0, 3.0, 10.0, 20.0, 30.0]).expect("shape");
    let inputs: BTreeMap<String, Tensor> = [("A".to_string(), a)].into();
    let got = run_kernel(&k, &sizes, &inputs).expect("runs");
    assert_eq!(got.data, vec![11.0, 22.0, 33.0]);
}

fn derived_kernel(source: &str, def: &str) -> Result<Kernel, atl_lang::diag::Diagnostic> {
    let (program, shapes) = support::derived_program(source);
    lower_def(&program, &shapes, def, &LowerOptions::default())
}

/// Every loop of a kernel with its annotations, as `var:p/v/u` (only the set ones).
fn annotations(k: &Kernel) -> Vec<String> {
    loops(k)
        .iter()
        .map(|l| {
            let mut s = format!("{}:", l.var);
            for (on, c) in [(l.parallel, 'p'), (l.vector, 'v'), (l.unroll, 'u')] {
                if on {
                    s.push(c);
                }
            }
            s
        })
        .collect()
}

/// Runs `k` in the loop-IR interpreter (which checks that the iterations of every
/// annotated loop write disjoint elements) and compares with the reference.
fn runs_like_reference(
    program: &atl_lang::ir::Program,
    k: &Kernel,
    def: &str,
    sizes: &[(&str, i64)],
) {
    let sizes: BTreeMap<String, i64> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let shapes =
        atl_lang::interp::input_shapes(program, &sizes, &Default::default()).expect("input shapes");
    let inputs: BTreeMap<String, Tensor> = shapes
        .into_iter()
        .enumerate()
        .map(|(n, (name, shape))| {
            (
                name.clone(),
                atl_lang::interp::random_input_named(program, &name, shape, &sizes, 7 + n as u64),
            )
        })
        .collect();
    let got = run_kernel(k, &sizes, &inputs).unwrap_or_else(|d| panic!("kernel fails: {d:?}"));
    let want = atl_lang::interp::eval_def(program, def, &sizes, &inputs, &Default::default())
        .expect("reference");
    assert_eq!(got.shape, want.shape);
    for (a, b) in got.data.iter().zip(&want.data) {
        assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{a} vs {b}");
    }
}

#[test]
fn blur_hints_give_exactly_the_requested_annotations() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/blur/blur.atl");
    let source = std::fs::read_to_string(path).expect("readable");
    let (program, shapes) = support::derived_program(&source);
    let def = program.def("fast_annotated").expect("derived");
    let hints: Vec<String> = def
        .hints
        .iter()
        .map(|h| format!("{} {}", h.kind.directive(), h.var))
        .collect();
    assert_eq!(hints, ["parallel y", "vectorize x3"]);
    let k = lower_def(
        &program,
        &shapes,
        "fast_annotated",
        &LowerOptions::default(),
    )
    .expect("lowers");
    let ls = loops(&k);
    let (y, x3) = (find(&ls, "y"), find(&ls, "x3"));
    assert!(y.parallel && !y.vector && !y.unroll);
    assert!(x3.vector && !x3.parallel && !x3.unroll);
    // The other loops keep the automatic choice, which is that of `fast`.
    let auto = lower_def(&program, &shapes, "fast", &LowerOptions::default()).expect("lowers");
    assert_eq!(annotations(&k), annotations(&auto));
    runs_like_reference(&program, &k, "fast_annotated", &[("H", 6), ("W", 7)]);
}

const MATMUL_DERIVE: &str = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
    def mm = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]\n";

#[test]
fn a_parallel_hint_moves_the_parallel_loop_inward() {
    let src = format!("{MATMUL_DERIVE}derive mm_j from mm {{\n  parallel j\n}}\n");
    let k = derived_kernel(&src, "mm_j").expect("lowers");
    // `i` was parallel automatically; with `j` parallel it runs in sequence (no
    // nested parallel regions), and the reduction stays sequential.
    assert_eq!(annotations(&k), ["i:", "j:p", "k:"]);
    let (program, _) = support::derived_program(&src);
    runs_like_reference(&program, &k, "mm_j", &[("M", 3), ("N", 5), ("K", 4)]);
}

#[test]
fn a_vectorize_hint_applies_below_the_automatic_minimum() {
    // Automatically `t` (2 iterations, too short for SIMD lanes) is unrolled; the hint
    // asks for SIMD instead, and `i` stays parallel as hinted.
    let src = "size M, K\ninput A : [M, K]\n\
        def pairs = gen i < M, t < 2: A[i, t] * 2\n\
        derive pairs_h from pairs {\n  parallel i\n  vectorize t\n}\n";
    let (program, _) = support::derived_program(src);
    let auto = kernel(src, "pairs");
    assert_eq!(annotations(&auto), ["i:p", "t:u"]);
    let k = derived_kernel(src, "pairs_h").expect("lowers");
    assert_eq!(annotations(&k), ["i:p", "t:v"]);
    runs_like_reference(&program, &k, "pairs_h", &[("M", 3), ("K", 2)]);
}

#[test]
fn lowering_checks_a_vectorize_hint_on_the_kernel() {
    // `vectorize ii` is refused by the derivation (`ii` encloses `ji`); should such a
    // hint reach lowering, the kernel check refuses it as well.
    let src = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
        def tile = gen io < M, jo < N: sum k < K: gen ii < 4, ji < 8: A[io, k] * B[k, jo]\n";
    let (checked, _) = atl_lang::check_source(src);
    let mut checked = checked.expect("checks");
    checked.program.defs[0].hints.push(atl_lang::ir::LoopHint {
        var: "ii".to_string(),
        kind: atl_lang::ir::HintKind::Vector,
        span: atl_lang::span::Span::DUMMY,
    });
    let err = lower_def(
        &checked.program,
        &checked.shapes,
        "tile",
        &LowerOptions::default(),
    )
    .expect_err("ii is not innermost");
    assert_eq!(err.code, "E0913", "{err:?}");
    assert!(err.message.contains("`ii`"), "{}", err.message);
}

#[test]
fn an_unroll_hint_replaces_vectorization() {
    let src = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
        def tile = gen io < M, jo < N: sum k < K: gen ii < 4, ji < 8: A[io, k] * B[k, jo]\n\
        derive tile_u from tile {\n  unroll ji\n}\n";
    // Automatically `ji` is vectorized (as are the zeroing `z1` and copying `t1` loops
    // of the local tile); the hint makes it unrolled instead, nothing else changes.
    let auto = kernel(src, "tile");
    assert_eq!(
        annotations(&auto),
        [
            "io:p", "jo:", "z:u", "z1:v", "k:", "ii:u", "ji:v", "t:u", "t1:v"
        ]
    );
    let k = derived_kernel(src, "tile_u").expect("lowers");
    assert_eq!(
        annotations(&k),
        [
            "io:p", "jo:", "z:u", "z1:v", "k:", "ii:u", "ji:u", "t:u", "t1:v"
        ]
    );
    let (program, _) = support::derived_program(src);
    runs_like_reference(&program, &k, "tile_u", &[("M", 2), ("N", 3), ("K", 2)]);
}

#[test]
fn a_hint_naming_no_loop_of_the_kernel_is_an_error() {
    // Hints are matched by name: one whose loop lowering does not produce (here added
    // by hand; a derivation checks its names) is refused, not ignored.
    let (checked, _) = atl_lang::check_source(MATMUL_DERIVE);
    let mut checked = checked.expect("checks");
    checked.program.defs[0].hints.push(atl_lang::ir::LoopHint {
        var: "q".to_string(),
        kind: atl_lang::ir::HintKind::Parallel,
        span: atl_lang::span::Span::DUMMY,
    });
    let err = lower_def(
        &checked.program,
        &checked.shapes,
        "mm",
        &LowerOptions::default(),
    )
    .expect_err("no loop q");
    assert_eq!(err.code, "E0913");
    assert!(err.message.contains("no loop `q`"), "{}", err.message);
    // A parallel hint on the reduction, were it to reach lowering, is refused too.
    checked.program.defs[0].hints[0].var = "k".to_string();
    let err = lower_def(
        &checked.program,
        &checked.shapes,
        "mm",
        &LowerOptions::default(),
    )
    .expect_err("k is a sum");
    assert_eq!(err.code, "E0913");
}

#[test]
fn a_hint_on_a_binder_shared_with_a_used_definition_is_ambiguous() {
    // `b` uses `a`, and both bind `i`: lowering renames one of them, so `parallel i`
    // would not say which loop it means.
    let src = "size n\ninput f : [n]\ndef a = gen i < n: 2 * f[i]\n\
        def b = gen i < n: a[i] + f[i]\nderive c from b {\n  parallel i\n}\n";
    let err = derived_kernel(src, "c").expect_err("ambiguous");
    assert_eq!(err.code, "E0913");
    assert!(
        err.message.contains("also a binder of `a`"),
        "{}",
        err.message
    );
}

#[test]
fn parallel_and_vectorize_combine_on_one_loop() {
    // A one-dimensional map: `parallel i` and `vectorize i` give `omp parallel for
    // simd`; automatically the loop would be parallel and vector as well, but a hint
    // of only `parallel i` takes the lanes away.
    let src = "size n\ninput f : [n]\ndef a = gen i < n: 2 * f[i]\n\
        derive both from a {\n  parallel i\n  vectorize i\n}\n\
        derive threads from a {\n  parallel i\n}\n";
    assert_eq!(annotations(&kernel(src, "a")), ["i:pv"]);
    let k = derived_kernel(src, "both").expect("lowers");
    assert_eq!(annotations(&k), ["i:pv"]);
    let k = derived_kernel(src, "threads").expect("lowers");
    assert_eq!(annotations(&k), ["i:p"]);
    let (program, _) = support::derived_program(src);
    runs_like_reference(&program, &k, "threads", &[("n", 9)]);
}

#[test]
fn a_scalar_let_is_a_per_lane_temporary() {
    // `vectorize` refuses a tensor `let` in the body (a buffer per iteration), but a
    // scalar one is a temporary declared in the iteration.
    let src = "size n\ninput f : [n]\ndef a = gen i < n: let t = f[i] * f[i] in t + t\n\
        derive a_vec from a {\n  vectorize i\n}\n";
    let k = derived_kernel(src, "a_vec").expect("lowers");
    assert_eq!(annotations(&k), ["i:v"]);
    let (program, _) = support::derived_program(src);
    runs_like_reference(&program, &k, "a_vec", &[("n", 6)]);
}

/// `vector` on a `gen` whose body is a max-reduction of straight-line code (the partial
/// maxima of `rfactor`): each lane folds its own maximum, in order, so the hint is
/// kept on the outer loop. A max whose body has a loop, or a sum, is still refused.
#[test]
fn a_gen_of_maxima_is_vectorized_around_its_fold() {
    let hinted = |body: &str| {
        let src = format!("size n\ninput g : [n, n]\ndef d = gen j < n: {body}\n");
        let (checked, _) = atl_lang::check_source(&src);
        let mut checked = checked.expect("checks");
        checked.program.defs[0].hints.push(atl_lang::ir::LoopHint {
            var: "j".to_string(),
            kind: atl_lang::ir::HintKind::Vector,
            span: atl_lang::span::Span::DUMMY,
        });
        lower_def(
            &checked.program,
            &checked.shapes,
            "d",
            &LowerOptions::default(),
        )
    };
    let k = hinted("max i < n: 2 * g[j, i]").expect("a lane's own fold");
    let ls = loops(&k);
    let (j, i) = (find(&ls, "j"), find(&ls, "i"));
    assert!(j.vector);
    assert_eq!(i.origin, LoopOrigin::Max);
    assert!(!i.vector);
    for body in [
        "max i < n: sum k < n: g[j, k] * g[k, i]",
        "sum i < n: g[j, i]",
    ] {
        let err = hinted(body).expect_err(body);
        assert_eq!(err.code, "E0913", "{body}");
    }
}

#[test]
fn nested_unrolling_stops_at_sixteen_copies() {
    // A 3 x 3 window around a 2-row register tile (the depthwise convolution's
    // shape): the tile's rows (2) and the inner tap loop (3 x 2 = 6) are unrolled, the
    // outer tap loop is not (3 x 6 = 18 copies), while a 16-row tile alone still is.
    let src = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
        def window = gen io < M, jo < N: sum ry < 3, rx < 3: gen ii < 2, ji < 8: \
        A[io, ry] * B[rx, jo]\n\
        def tall = gen io < M, jo < N: sum k < K: gen ii < 16, ji < 8: \
        A[io, k] * B[k, jo]\n";
    let k = kernel(src, "window");
    let ls = loops(&k);
    assert!(find(&ls, "ii").unroll);
    assert!(find(&ls, "rx").unroll);
    assert!(!find(&ls, "ry").unroll);
    assert!(find(&ls, "ji").vector);
    let k = kernel(src, "tall");
    let ls = loops(&k);
    assert!(find(&ls, "ii").unroll);
    assert!(!find(&ls, "k").unroll);
}

#[test]
fn unroll_off_removes_only_the_unrolling() {
    // `unroll ii off` keeps the tile's row loop rolled; `unroll k off` on a loop that
    // was not unrolled changes nothing, and the parallel outer loop stays parallel
    // under `unroll io off`: the loop's other annotations remain automatic.
    let src = "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
        def tile = gen io < M, jo < N: sum k < K: gen ii < 4, ji < 8: A[io, k] * B[k, jo]\n\
        derive tile_r from tile {\n  unroll ii off\n  unroll k off\n  unroll io off\n}\n";
    let k = derived_kernel(src, "tile_r").expect("lowers");
    assert_eq!(
        annotations(&k),
        [
            "io:p", "jo:", "z:u", "z1:v", "k:", "ii:", "ji:v", "t:u", "t1:v"
        ]
    );
    let (program, _) = support::derived_program(src);
    runs_like_reference(&program, &k, "tile_r", &[("M", 2), ("N", 3), ("K", 2)]);
}
