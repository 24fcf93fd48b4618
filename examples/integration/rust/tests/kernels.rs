//! Calls the two kernels that `build.rs` compiled with atl-build through their safe
//! bindings and compares them with naive loops written here in Rust; checks that a bad
//! call (a slice of the wrong length, a size below 1) is refused with an error and
//! leaves the output untouched.

use atl_example_rust::{demo_matvec, demo_rownorm};

/// Deterministic test data: small integers (and halves), so that every sum in `f32` is
/// exact whatever the order of the additions.
fn data(len: usize, seed: u64) -> Vec<f64> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % 17) as f64 / 2.0 - 4.0
        })
        .collect()
}

fn naive_matvec(n: usize, m: usize, a: &[f32], x: &[f32]) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let mut acc = 0.0f32;
            for j in 0..m {
                acc += a[i * m + j] * x[j];
            }
            acc
        })
        .collect()
}

fn naive_rownorm(n: usize, m: usize, a: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; n * m];
    for i in 0..n {
        let mut sum = 0.0;
        for j in 0..m {
            sum += a[i * m + j];
        }
        for j in 0..m {
            out[i * m + j] = a[i * m + j] / sum;
        }
    }
    out
}

#[test]
fn matvec_matches_naive_loops() {
    // A hand-checked case first: rows [1 2 3 4], [5 6 7 8], [-1 0 1 2] times
    // x = [1 0 -1 2] give 6, 14, 2.
    let a = [1., 2., 3., 4., 5., 6., 7., 8., -1., 0., 1., 2.];
    let x = [1., 0., -1., 2.];
    let mut out = [-99.0f32; 3];
    demo_matvec(3, 4, &a, &x, &mut out).expect("a valid call");
    assert_eq!(out, [6., 14., 2.]);

    // Sizes around the block of 4 rows (tails), at 2 threads and 1.
    for threads in [2, 1] {
        demo_matvec::set_threads(threads);
        for (n, m) in [(1, 1), (3, 5), (4, 4), (7, 3), (9, 16), (33, 10)] {
            let a: Vec<f32> = data(n * m, 1).into_iter().map(|v| v as f32).collect();
            let x: Vec<f32> = data(m, 2).into_iter().map(|v| v as f32).collect();
            let mut out = vec![f32::NAN; n];
            demo_matvec(n as i64, m as i64, &a, &x, &mut out).expect("a valid call");
            assert_eq!(
                out,
                naive_matvec(n, m, &a, &x),
                "n={n} m={m} threads={threads}"
            );
        }
    }
    demo_matvec::set_threads(0);
}

#[test]
fn rownorm_matches_naive_loops() {
    // [1 3] / 4 and [2 2 ...]: hand-checked first.
    let a = [1., 3., 2., 6.];
    let mut out = [0.0f64; 4];
    demo_rownorm(2, 2, &a, &mut out).expect("a valid call");
    assert_eq!(out, [0.25, 0.75, 0.25, 0.75]);

    for (n, m) in [(1, 1), (2, 3), (5, 7), (8, 4)] {
        // Positive entries, so no row sums to zero.
        let a: Vec<f64> = data(n * m, 3).into_iter().map(|v| v + 5.0).collect();
        let mut out = vec![f64::NAN; n * m];
        demo_rownorm(n as i64, m as i64, &a, &mut out).expect("a valid call");
        let want = naive_rownorm(n, m, &a);
        for (k, (got, want)) in out.iter().zip(&want).enumerate() {
            // The same additions in the same order, then one division: exact.
            assert_eq!(got, want, "n={n} m={m} element {k}");
        }
    }
}

#[test]
fn a_wrong_length_is_an_error_not_a_crash() {
    let a = vec![1.0f32; 12];
    let x = vec![1.0f32; 4];
    let mut out = vec![-7.0f32; 3];
    // `x` one element short.
    let err = demo_matvec(3, 4, &a, &x[..3], &mut out).unwrap_err();
    assert_eq!(
        err,
        demo_matvec::CallError::Length {
            argument: "x",
            expected: 4,
            actual: 3
        }
    );
    assert!(err.to_string().contains("`x` has 3 elements"), "{err}");
    // The output too long, then `A` for other sizes.
    let mut long = vec![-7.0f32; 4];
    assert!(matches!(
        demo_matvec(3, 4, &a, &x, &mut long),
        Err(demo_matvec::CallError::Length {
            argument: "out",
            expected: 3,
            actual: 4
        })
    ));
    assert!(matches!(
        demo_matvec(4, 4, &a, &x, &mut long),
        Err(demo_matvec::CallError::Length {
            argument: "A",
            expected: 16,
            actual: 12
        })
    ));
    // Sizes below 1, and sizes whose shapes overflow, are refused before any length.
    assert!(matches!(
        demo_matvec(0, 4, &a, &x, &mut out),
        Err(demo_matvec::CallError::Precondition {
            condition: "n >= 1",
            ..
        })
    ));
    // Sizes beyond the bound that keeps the kernel's index arithmetic within 64 bits
    // are refused by that precondition; sizes within it whose shapes overflow, by the
    // length computation.
    assert!(matches!(
        demo_matvec(i64::MAX, i64::MAX, &a, &x, &mut out),
        Err(demo_matvec::CallError::Precondition { .. })
    ));
    assert!(matches!(
        demo_matvec(1 << 59, 1 << 59, &a, &x, &mut out),
        Err(demo_matvec::CallError::Overflow { .. })
    ));
    // Nothing was written by any refused call.
    assert_eq!(out, [-7.0; 3]);
    assert_eq!(long, [-7.0; 4]);
    // The lengths a caller should allocate.
    assert_eq!(demo_matvec::lengths(3, 4), Ok(([12, 4], 3)));
    // `demo_rownorm` reads `A` only, so it takes `A` only.
    assert_eq!(demo_rownorm::lengths(3, 4), Ok(([12], 12)));
}

/// The C function itself (what `call` calls after its checks) returns the number of
/// the precondition that sizes break, in the order its header lists them (`n >= 1`,
/// then `m >= 1`), and touches nothing; 0 after writing the output.
#[test]
#[allow(unsafe_code)]
fn the_c_kernel_returns_the_number_of_the_broken_precondition() {
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let x = [1.0f32, 0.0, -1.0];
    let mut out = [-7.0f32; 2];
    let call = |n: i64, m: i64, out: &mut [f32; 2]| {
        // SAFETY: `a` holds n * m, `x` m and `out` n elements at every size called with
        // (2 x 3), or the kernel refuses the sizes before touching any of them.
        unsafe { demo_matvec::ffi::demo_matvec(n, m, a.as_ptr(), x.as_ptr(), out.as_mut_ptr()) }
    };
    assert_eq!(call(2, 0, &mut out), 2);
    assert_eq!(call(0, 3, &mut out), 1);
    assert_eq!(call(-1, -1, &mut out), 1);
    assert_eq!(out, [-7.0; 2]);
    assert_eq!(call(2, 3, &mut out), 0);
    assert_eq!(out, [1.0 - 3.0, 4.0 - 6.0]);
}
