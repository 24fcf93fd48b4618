//! The loop annotations (`parallel`, `vector`, `unroll`): which loops get them, and
//! that the loop-IR interpreter rejects an annotation that would be wrong — two
//! iterations writing the same element — so the differential tests, which run every
//! example through it, would catch a lowering that broke the invariant.

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
