//! The matrix product, the one place the tape spends most of its time.
//!
//! It calls the `gemm` crate (pure Rust, runtime-dispatched AVX2/AVX-512
//! kernels, one thread) on strided views, so a transposed operand is read in
//! place rather than copied.

use ndarray::{Array2, ArrayView2};

/// `a · b`; `a`'s columns must equal `b`'s rows (checked by the caller).
pub fn product(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
    let (m, k) = a.dim();
    let n = b.ncols();
    debug_assert_eq!(k, b.nrows());
    let mut out = Array2::<f64>::uninit((m, n));
    let (a_rs, a_cs) = (a.strides()[0], a.strides()[1]);
    let (b_rs, b_cs) = (b.strides()[0], b.strides()[1]);
    // SAFETY: `out` is an m×n standard-layout array, so element (i, j) is at
    // i*n + j; `a` and `b` are valid views whose pointers and strides
    // describe m×k and k×n elements; the operands do not overlap `out`, which
    // is freshly allocated; `read_dst` is false, so `out` is only written,
    // every element of it (k ≥ 1: there are no empty matrices).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr().cast::<f64>(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            a_cs,
            a_rs,
            b.as_ptr(),
            b_cs,
            b_rs,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
    // SAFETY: gemm wrote all m×n elements above.
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
