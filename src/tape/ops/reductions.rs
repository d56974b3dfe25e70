//! The reductions: `Sum` and `Mean` of all elements, `RowSum` and
//! `RowMean` of each row, `ColSum` of each column. Each forward and its
//! per-link rule (the blame spread back over what was summed) side by side.

use ndarray::{Array2, Axis};
use smallvec::smallvec;

use super::tensor::{Blames, Tensor};

/// `Sum(a)`, or `Mean(a)` when `mean`: one Real.
pub(super) fn sum_forward(a: &Tensor, mean: bool) -> Tensor {
    let v = a.view();
    if mean {
        Tensor::Scalar(mean_of(v.sum(), v.iter(), v.len()))
    } else {
        Tensor::Scalar(v.sum())
    }
}

/// The mean of `n` values whose sum is `sum`: the sum over the count, or,
/// where that sum overflows though every value is finite (`Mean` of
/// `[[1e308, 1e308]]`), the sum of each value over the count.
fn mean_of<'a>(sum: f64, values: impl Iterator<Item = &'a f64>, n: usize) -> f64 {
    let n = n as f64;
    if sum.is_finite() {
        return sum / n;
    }
    let parts: Vec<f64> = values.copied().collect();
    if parts.iter().all(|x| x.is_finite()) {
        parts.iter().map(|x| x / n).sum()
    } else {
        sum / n
    }
}

/// Every element of `a` gets the blame (over the count, for `Mean`).
pub(super) fn sum_rule(shape: (usize, usize), blame: &Tensor, mean: bool) -> Blames {
    let g = blame.view();
    let each = if mean {
        g[(0, 0)] / (shape.0 * shape.1) as f64
    } else {
        g[(0, 0)]
    };
    smallvec![Some(Tensor::matrix(Array2::from_elem(shape, each)))]
}

/// `RowSum(a)`, or `RowMean(a)` when `mean`: an m×1 column.
pub(super) fn row_sum_forward(a: &Tensor, mean: bool) -> Tensor {
    let v = a.view();
    let sums = v.sum_axis(Axis(1)).insert_axis(Axis(1));
    if mean {
        let means = ndarray::Zip::from(sums.rows())
            .and(v.rows())
            .map_collect(|sum, row| mean_of(sum[0], row.iter(), row.len()));
        Tensor::matrix(means.insert_axis(Axis(1)))
    } else {
        Tensor::matrix(sums)
    }
}

/// Each element of a row gets its row's blame (over the row's length, for
/// `RowMean`).
pub(super) fn row_sum_rule(shape: (usize, usize), blame: &Tensor, mean: bool) -> Blames {
    let scale = if mean { 1.0 / shape.1 as f64 } else { 1.0 };
    let out = blame
        .view()
        .broadcast(shape)
        .expect("m×1 against m×n")
        .mapv(|x| x * scale);
    smallvec![Some(Tensor::matrix(out))]
}

/// `ColSum(a)`: a 1×n row.
pub(super) fn col_sum_forward(a: &Tensor) -> Tensor {
    Tensor::matrix(a.view().sum_axis(Axis(0)).insert_axis(Axis(0)))
}

/// Each element of a column gets its column's blame.
pub(super) fn col_sum_rule(shape: (usize, usize), blame: &Tensor) -> Blames {
    smallvec![Some(Tensor::matrix(
        blame
            .view()
            .broadcast(shape)
            .expect("1×n against m×n")
            .to_owned(),
    ))]
}
