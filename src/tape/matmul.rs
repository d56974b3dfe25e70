//! The matrix product, the one place the tape spends most of its time.
//!
//! It calls `faer`'s matrix product (pure Rust, runtime-dispatched AVX2 and
//! AVX-512 kernels, one thread) on strided views, so a transposed operand is
//! read in place rather than copied.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{Array2, ArrayView2};

/// `a · b`; `a`'s columns must equal `b`'s rows (checked by the caller).
pub fn product(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
    let (m, k) = a.dim();
    let n = b.ncols();
    debug_assert_eq!(k, b.nrows());
    let mut out = Array2::<f64>::uninit((m, n));
    // SAFETY: `a` and `b` are valid views whose pointers and strides describe
    // m×k and k×n elements, alive for this call; `out` is a fresh m×n
    // standard-layout array (element (i, j) at i*n + j) that overlaps
    // neither. `Accum::Replace` writes every element of `out` without
    // reading it (k ≥ 1: there are no empty matrices).
    unsafe {
        let lhs = MatRef::from_raw_parts(a.as_ptr(), m, k, a.strides()[0], a.strides()[1]);
        let rhs = MatRef::from_raw_parts(b.as_ptr(), k, n, b.strides()[0], b.strides()[1]);
        let dst = MatMut::from_raw_parts_mut(out.as_mut_ptr().cast::<f64>(), m, n, n as isize, 1);
        matmul(dst, Accum::Replace, lhs, rhs, 1.0, Par::Seq);
    }
    // SAFETY: the product wrote all m×n elements above.
    unsafe { out.assume_init() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn products_of_plain_and_transposed_views() {
        let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let b = array![[1.0, 0.5], [0.0, -1.0], [2.0, 1.0]];
        assert_eq!(product(a.view(), b.view()), a.dot(&b));
        assert_eq!(product(b.t(), a.t()), b.t().dot(&a.t()));
        assert_eq!(product(a.t(), a.view()), a.t().dot(&a));
    }
}
