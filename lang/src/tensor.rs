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

    /// The array of this tensor's elements with its dimensions stored in `order`
    /// (`order[p]` is the dimension at position `p`, outermost first): what a kernel
    /// receives for an input declared with a `layout`. `None` if `order` is not a
    /// permutation of the dimensions.
    pub fn to_storage(&self, order: &[usize]) -> Option<Tensor> {
        let rank = self.shape.len();
        let mut seen = vec![false; rank];
        for &d in order {
            if d >= rank || std::mem::replace(&mut seen[d], true) {
                return None;
            }
        }
        if order.len() != rank {
            return None;
        }
        let shape: Vec<usize> = order.iter().map(|&d| self.shape[d]).collect();
        // The row-major strides of this tensor, read in storage order.
        let mut strides = vec![1usize; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * self.shape[d + 1];
        }
        let strides: Vec<usize> = order.iter().map(|&d| strides[d]).collect();
        let mut data = Vec::with_capacity(self.data.len());
        let mut coord = vec![0usize; rank];
        for _ in 0..self.data.len() {
            let at: usize = coord.iter().zip(&strides).map(|(c, s)| c * s).sum();
            data.push(self.data[at]);
            for p in (0..rank).rev() {
                coord[p] += 1;
                if coord[p] < shape[p] {
                    break;
                }
                coord[p] = 0;
            }
        }
        Some(Tensor { shape, data })
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

#[cfg(test)]
mod tests {
    use super::Tensor;

    #[test]
    fn a_matrix_stored_column_major_lists_its_columns() {
        let t = Tensor::new(vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).expect("shape");
        let stored = t.to_storage(&[1, 0]).expect("a permutation");
        assert_eq!(stored.shape, vec![3, 2]);
        assert_eq!(stored.data, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(t.to_storage(&[0, 1]), Some(t.clone()));
    }

    #[test]
    fn a_three_dimensional_tensor_is_stored_in_any_order_of_its_dimensions() {
        // Element (a, b, c) of a [2, 3, 4] tensor is 100a + 10b + c.
        let data = (0..24).map(|k| (100 * (k / 12) + 10 * (k / 4 % 3) + k % 4) as f64);
        let t = Tensor::new(vec![2, 3, 4], data.collect()).expect("shape");
        // Stored as [b, c, a]: position (b, c, a) holds element (a, b, c).
        let stored = t.to_storage(&[1, 2, 0]).expect("a permutation");
        assert_eq!(stored.shape, vec![3, 4, 2]);
        for b in 0..3 {
            for c in 0..4 {
                for a in 0..2 {
                    let at = (b * 4 + c) * 2 + a;
                    assert_eq!(stored.data[at], (100 * a + 10 * b + c) as f64);
                }
            }
        }
    }

    #[test]
    fn an_order_that_is_not_a_permutation_has_no_storage() {
        let t = Tensor::zeros(vec![2, 3]);
        assert_eq!(t.to_storage(&[0, 0]), None);
        assert_eq!(t.to_storage(&[1]), None);
        assert_eq!(t.to_storage(&[0, 2]), None);
    }
}
