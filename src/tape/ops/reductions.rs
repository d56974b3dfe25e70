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
        Tensor::Scalar(v.sum() / v.len() as f64)
    } else {
        Tensor::Scalar(v.sum())
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
        let n = v.ncols() as f64;
        Tensor::matrix(sums.mapv(|x| x / n))
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
