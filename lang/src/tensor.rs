//! Dense row-major `f64` tensors: the values the reference interpreter computes and the
//! value type that lowering's interpreter, the C harness and the tests exchange. Kept
//! apart from the interpreter so its users need not read the evaluator to find it.

use crate::rng::SplitMix64;

/// A dense tensor of `f64`, row-major. Shape `[]` is a scalar with exactly one value.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

/// Number of elements of a shape, `None` if it does not fit in `usize`. A zero extent
/// anywhere makes the product zero even if the other extents would overflow.
pub fn shape_numel(shape: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n))
}

impl Tensor {
    /// A tensor of zeros. The shape must be allocatable: check it first (for example with
    /// [`input_shapes`](crate::interp::input_shapes), which applies the element limit).
    pub fn zeros(shape: Vec<usize>) -> Tensor {
        let n = shape_numel(&shape).unwrap_or(usize::MAX);
        Tensor {
            shape,
            data: vec![0.0; n],
        }
    }

    pub fn scalar(v: f64) -> Tensor {
        Tensor {
            shape: Vec::new(),
            data: vec![v],
        }
    }

    /// A tensor from its shape and row-major data; `None` if the lengths disagree.
    pub fn new(shape: Vec<usize>, data: Vec<f64>) -> Option<Tensor> {
        (shape_numel(&shape) == Some(data.len())).then_some(Tensor { shape, data })
    }

    /// Deterministic pseudo-random values in `[-1, 1)`: the `splitmix64` stream seeded
    /// with `seed`, each value `(x >> 11) / 2^53 * 2 - 1` (exact in `f64`), filled in
    /// row-major order. Like [`Tensor::zeros`], the shape must be allocatable.
    pub fn random(shape: Vec<usize>, seed: u64) -> Tensor {
        let n = shape_numel(&shape).unwrap_or(usize::MAX);
        let mut rng = SplitMix64::new(seed);
        let data = (0..n).map(|_| rng.uniform_signed_unit()).collect();
        Tensor { shape, data }
    }

    pub fn numel(&self) -> usize {
        self.data.len()
    }

    /// The scalar at a full coordinate, `None` if the coordinate has the wrong rank or is
    /// out of bounds.
    pub fn try_get(&self, index: &[usize]) -> Option<f64> {
        if index.len() != self.shape.len() {
            return None;
        }
        let mut offset = 0usize;
        for (&k, &n) in index.iter().zip(&self.shape) {
            if k >= n {
                return None;
            }
            offset = offset.checked_mul(n)?.checked_add(k)?;
        }
        self.data.get(offset).copied()
    }

    /// The scalar at a full coordinate. Like an ATL access, an out-of-bounds coordinate
    /// reads `0.0` (as does a coordinate of the wrong rank); use [`Tensor::try_get`] to
    /// tell the cases apart.
    pub fn get(&self, index: &[usize]) -> f64 {
        self.try_get(index).unwrap_or(0.0)
    }
}
