//! The matrix product, the one place the tape spends most of its time.
//!
//! It calls `faer`'s matrix product (pure Rust, runtime-dispatched AVX2 and
//! AVX-512 kernels, one thread) on strided views, so a transposed operand is
//! read in place rather than copied.

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{Array2, ArrayView2};

/// A square side from which a triangular operand is worth looking for.
const TRIANGLE_FROM: usize = 64;

/// Which half of a square operand is all zeros.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Zeros {
    /// Above the diagonal (a causal softmax's weights and their blame).
    Above,
    /// Below the diagonal (the same, transposed).
    Below,
}

impl Zeros {
    /// The part of the operand the product reads: the other half.
    fn read(self) -> BlockStructure {
        match self {
            Zeros::Above => BlockStructure::TriangularLower,
            Zeros::Below => BlockStructure::TriangularUpper,
        }
    }
}

/// `a · b`; `a`'s columns must equal `b`'s rows (checked by the caller).
///
/// When one side is a large square matrix whose half above or below the
/// diagonal is exactly zero, as a causal attention's weights are, and the
/// other side has no infinity or NaN (so no 0 · inf is skipped), the product
/// is `faer`'s triangular one, which never reads the zero half: about 30%
/// less time at 128×128, the same result but for the order of the additions.
pub fn product(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
    let (m, k) = a.dim();
    let n = b.ncols();
    debug_assert_eq!(k, b.nrows());
    let left = if m == k && k >= TRIANGLE_FROM {
        zeros(&a).filter(|_| all_finite(&b))
    } else {
        None
    };
    let right = if left.is_none() && k == n && k >= TRIANGLE_FROM {
        zeros(&b).filter(|_| all_finite(&a))
    } else {
        None
    };
    let structure = |half: Option<Zeros>| half.map_or(BlockStructure::Rectangular, Zeros::read);
    let mut out = Array2::<f64>::uninit((m, n));
    // SAFETY: `a` and `b` are valid views whose pointers and strides describe
    // m×k and k×n elements, alive for this call; `out` is a fresh m×n block
    // in standard layout that overlaps neither, and the product writes every
    // element of it and reads none (`Accum::Replace`, a rectangular `dst`;
    // k ≥ 1, as there are no empty matrices).
    unsafe {
        let lhs = MatRef::from_raw_parts(a.as_ptr(), m, k, a.strides()[0], a.strides()[1]);
        let rhs = MatRef::from_raw_parts(b.as_ptr(), k, n, b.strides()[0], b.strides()[1]);
        let dst = MatMut::from_raw_parts_mut(out.as_mut_ptr().cast::<f64>(), m, n, n as isize, 1);
        triangular::matmul(
            dst,
            BlockStructure::Rectangular,
            Accum::Replace,
            lhs,
            structure(left),
            rhs,
            structure(right),
            1.0,
            Par::Seq,
        );
        out.assume_init()
    }
}

/// Which half of the square `x` is all zeros, if either is. The two corners
/// are looked at first, so most matrices are turned away at once. A
/// transposed view is read as the matrix it views, row by row in memory,
/// with the halves swapped.
fn zeros(x: &ArrayView2<f64>) -> Option<Zeros> {
    let flip = |half| match half {
        Zeros::Above => Zeros::Below,
        Zeros::Below => Zeros::Above,
    };
    if let Some(values) = x.as_slice() {
        zeros_in_rows(values, x.nrows())
    } else if let Some(values) = x.t().as_slice() {
        zeros_in_rows(values, x.nrows()).map(flip)
    } else {
        let last = x.nrows() - 1;
        let zero = |i: usize, j: usize| x[(i, j)] == 0.0;
        if (0..last).all(|i| (i + 1..=last).all(|j| zero(i, j))) {
            Some(Zeros::Above)
        } else {
            (1..=last)
                .all(|i| (0..i).all(|j| zero(i, j)))
                .then_some(Zeros::Below)
        }
    }
}

/// `zeros` for a square matrix of side `n` stored row after row. Each row's
/// part is looked at whole, without stopping early, so that it vectorises.
fn zeros_in_rows(values: &[f64], n: usize) -> Option<Zeros> {
    let rows = || values.chunks_exact(n).enumerate();
    let clear = |part: &[f64]| !part.iter().fold(false, |nonzero, v| nonzero | (*v != 0.0));
    if values[n - 1] == 0.0 && rows().all(|(i, row)| clear(&row[i + 1..])) {
        return Some(Zeros::Above);
    }
    (values[(n - 1) * n] == 0.0 && rows().all(|(i, row)| clear(&row[..i]))).then_some(Zeros::Below)
}

fn all_finite(x: &ArrayView2<f64>) -> bool {
    match x.as_slice_memory_order() {
        Some(values) => super::kernels::all_finite(values),
        None => x.iter().all(|v| v.is_finite()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, s};

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
            // A transposed view is read in its own memory order.
            assert_eq!(zeros(&lower.t()), Some(Zeros::Below));
            assert_eq!(zeros(&upper.t()), Some(Zeros::Above));
            // One number off the diagonal, anywhere in the zero half, is enough.
            for (i, j) in [(0, 1), (size / 2, size - 1), (size - 2, size - 1)] {
                let mut almost = lower.clone();
                almost[(i, j)] = 1e-300;
                assert_eq!(zeros(&almost.view()), None);
                assert_eq!(zeros(&almost.t()), None);
            }
            // A view that is neither: every other row and column of a larger
            // triangle.
            let mut big = filled(2 * size, 2 * size, 7);
            for i in 0..2 * size {
                for j in i + 1..2 * size {
                    big[(i, j)] = 0.0;
                }
            }
            let strided = big.slice(s![..;2, ..;2]);
            assert_eq!(zeros(&strided), Some(Zeros::Above));
            assert_eq!(zeros(&strided.t()), Some(Zeros::Below));
            let side = filled(size, 48, 8);
            assert!(close(
                &product(strided, side.view()),
                &definition(strided, side.view())
            ));
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
