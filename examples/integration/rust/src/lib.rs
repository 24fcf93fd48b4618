//! The example crate of docs/integration.md ("Rust (atl-build)"): `build.rs` compiles
//! two kernels of `kernels.atl`, and their generated bindings are included here.
//!
//! - [`demo_matvec`] (`f32`): `out[i] = sum_j A[i, j] * x[j]`, the derivation
//!   `matvec_blocked` (rows in blocks of 4, the blocks on parallel threads);
//! - [`demo_rownorm`] (`f64`): `out[i, j] = A[i, j] / sum_k A[i, k]`.
//!
//! Each takes the sizes `n`, `m` (`i64`), then the inputs its definition reads as slices
//! (`A`: `n * m` elements, row-major; `x`: `m`, read by `demo_matvec` only), then the
//! output slice, and returns `Err(CallError)` instead of calling the kernel when a size
//! or a length is wrong.

include!(concat!(env!("OUT_DIR"), "/demo_matvec.rs"));
include!(concat!(env!("OUT_DIR"), "/demo_rownorm.rs"));
