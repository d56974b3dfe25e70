//! The matrix product, the one place the tape spends most of its time.
//!
//! It calls `faer`'s matrix product (pure Rust, runtime-dispatched AVX2 and
//! AVX-512 kernels, one thread) on strided views, so a transposed operand is
//! read in place rather than copied.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{Array2, ArrayView2, s};

/// A square side from which a triangular operand is worth looking for.
const TRIANGLE_FROM: usize = 64;
/// Rows (or columns) per block when a triangle is skipped.
const TRIANGLE_BLOCK: usize = 32;

/// Which half of a square operand is all zeros.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Zeros {
    /// Above the diagonal (a causal softmax's weights and their blame).
    Above,
    /// Below the diagonal (the same, transposed).
    Below,
}

/// `a · b`; `a`'s columns must equal `b`'s rows (checked by the caller).
///
/// When one side is a large square matrix whose half above or below the
/// diagonal is exactly zero, as a causal attention's weights are, and the
/// other side has no infinity or NaN (so no 0 · inf is skipped), the product
/// is made in blocks that leave the zero half out: about 40% fewer
/// multiply-adds, the same result but for the order of the additions.
pub fn product(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
    let (m, k) = a.dim();
    let n = b.ncols();
    debug_assert_eq!(k, b.nrows());
    let mut out = Array2::<f64>::uninit((m, n));
    let dst = out.as_mut_ptr().cast::<f64>();
    let stride = n as isize;
    let left = if m == k && k >= TRIANGLE_FROM {
        zeros(&a)
    } else {
        None
    };
    let right = if left.is_none() && k == n && k >= TRIANGLE_FROM {
        zeros(&b)
    } else {
        None
    };
    let block = TRIANGLE_BLOCK;
    // SAFETY (each call): the blocks below tile `out` exactly once, and each
    // is written whole (see `product_into`).
    unsafe {
        match (left, right) {
            (Some(half), _) if all_finite(&b) => {
                for r0 in (0..m).step_by(block) {
                    let r1 = (r0 + block).min(m);
                    let (p0, p1) = match half {
                        Zeros::Above => (0, r1),
                        Zeros::Below => (r0, k),
                    };
                    product_into(
                        a.slice(s![r0..r1, p0..p1]),
                        b.slice(s![p0..p1, ..]),
                        dst.offset(r0 as isize * stride),
                        stride,
                    );
                }
            }
            (_, Some(half)) if all_finite(&a) => {
                for c0 in (0..n).step_by(block) {
                    let c1 = (c0 + block).min(n);
                    // Column j of `b` is zero above row j (Zeros::Above) or
                    // below it (Zeros::Below).
                    let (p0, p1) = match half {
                        Zeros::Above => (c0, k),
                        Zeros::Below => (0, c1),
                    };
                    product_into(
                        a.slice(s![.., p0..p1]),
                        b.slice(s![p0..p1, c0..c1]),
                        dst.add(c0),
                        stride,
                    );
                }
            }
            _ => product_into(a, b, dst, stride),
        }
        // SAFETY: the product wrote all m×n elements above.
        out.assume_init()
    }
}

/// Writes `a · b` into the m×n block at `dst` whose rows are `stride` apart.
///
/// # Safety
/// `dst` must point to such a block of a live allocation, overlapping
/// neither `a` nor `b`; every element of it is written and none is read
/// (`Accum::Replace`; k ≥ 1, as there are no empty matrices).
unsafe fn product_into(a: ArrayView2<f64>, b: ArrayView2<f64>, dst: *mut f64, stride: isize) {
    let (m, k) = a.dim();
    let n = b.ncols();
    // SAFETY: `a` and `b` are valid views whose pointers and strides describe
    // m×k and k×n elements, alive for this call; `dst` as the caller promises.
    unsafe {
        let lhs = MatRef::from_raw_parts(a.as_ptr(), m, k, a.strides()[0], a.strides()[1]);
        let rhs = MatRef::from_raw_parts(b.as_ptr(), k, n, b.strides()[0], b.strides()[1]);
        let dst = MatMut::from_raw_parts_mut(dst, m, n, stride, 1);
        matmul(dst, Accum::Replace, lhs, rhs, 1.0, Par::Seq);
    }
}

/// Which half of the square `x` is all zeros, if either is. The two corners
/// are looked at first, so most matrices are turned away at once.
fn zeros(x: &ArrayView2<f64>) -> Option<Zeros> {
    let last = x.nrows() - 1;
    let above =
        x[(0, last)] == 0.0 && (0..last).all(|i| x.slice(s![i, i + 1..]).iter().all(|v| *v == 0.0));
    if above {
        return Some(Zeros::Above);
    }
    let below =
        x[(last, 0)] == 0.0 && (1..=last).all(|i| x.slice(s![i, ..i]).iter().all(|v| *v == 0.0));
    below.then_some(Zeros::Below)
}

fn all_finite(x: &ArrayView2<f64>) -> bool {
    match x.as_slice_memory_order() {
        Some(values) => values.iter().fold(true, |ok, v| ok & v.is_finite()),
        None => x.iter().all(|v| v.is_finite()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn filled(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
        let mut s = seed;
        Array2::from_shape_simple_fn((rows, cols), || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
    }

    fn definition(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
        Array2::from_shape_fn((a.nrows(), b.ncols()), |(i, j)| {
            (0..a.ncols()).map(|p| a[(i, p)] * b[(p, j)]).sum()
        })
    }

    fn close(x: &Array2<f64>, y: &Array2<f64>) -> bool {
        x.iter()
            .zip(y)
            .all(|(x, y)| x == y || (x - y).abs() <= 1e-12 || (x.is_nan() && y.is_nan()))
    }

    /// Triangular operands on either side, either half zero, as they are and
    /// transposed, against the plain definition; an infinity on the other
    /// side turns the skipping off, so 0 · inf still makes its NaN.
    #[test]
    fn triangular_operands_give_the_dense_product() {
        for size in [64, 100, 128] {
            let mut lower = filled(size, size, 3);
            for i in 0..size {
                for j in i + 1..size {
                    lower[(i, j)] = 0.0;
                }
            }
            let upper = lower.t().to_owned();
            assert_eq!(zeros(&lower.view()), Some(Zeros::Above));
            assert_eq!(zeros(&upper.view()), Some(Zeros::Below));
            assert_eq!(zeros(&filled(size, size, 4).view()), None);
            let other = filled(size, 48, 5);
            let other_t = filled(48, size, 6);
            for tri in [lower.view(), upper.view(), lower.t(), upper.t()] {
                assert!(close(
                    &product(tri, other.view()),
                    &definition(tri, other.view())
                ));
                assert!(close(
                    &product(other_t.view(), tri),
                    &definition(other_t.view(), tri)
                ));
            }
            let mut with_inf = other.clone();
            with_inf[(size - 1, 0)] = f64::INFINITY;
            let c = product(lower.view(), with_inf.view());
            assert!(
                c[(0, 0)].is_nan(),
                "0 · inf in the zero half still gives NaN"
            );
            assert!(close(&c, &definition(lower.view(), with_inf.view())));
        }
    }

    #[test]
    fn products_of_plain_and_transposed_views() {
        let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let b = array![[1.0, 0.5], [0.0, -1.0], [2.0, 1.0]];
        assert_eq!(product(a.view(), b.view()), a.dot(&b));
        assert_eq!(product(b.t(), a.t()), b.t().dot(&a.t()));
        assert_eq!(product(a.t(), a.view()), a.t().dot(&a));
    }
}
