//! The operations that move elements without arithmetic: `Transpose`,
//! `Embed`, row and column ranges (`Row`, `Col`, `RowRange`, `ColRange`),
//! `HStack` and `VStack`, one element `m[i, j]`, and a matrix literal. The
//! blame goes back to where each element came from.

use ndarray::{Array2, Axis, s};
use smallvec::smallvec;

use super::tensor::{Blames, OpError, Tensor};

/// `Transpose(a)`.
pub(super) fn transpose_forward(a: &Tensor) -> Tensor {
    Tensor::matrix(a.view().t().to_owned())
}

pub(super) fn transpose_rule(blame: &Tensor) -> Blames {
    smallvec![Some(Tensor::matrix(blame.view().t().to_owned()))]
}

/// `Embed(table, ids)`: the rows the ids name, one under the other.
pub(super) fn embed_forward(table: &Tensor, ids: &[usize]) -> Tensor {
    let table = table.view();
    let mut out = Vec::with_capacity(ids.len() * table.ncols());
    for &id in ids {
        let row = table.row(id);
        match row.as_slice() {
            Some(values) => out.extend_from_slice(values),
            None => out.extend(row.iter()),
        }
    }
    Tensor::matrix(Array2::from_shape_vec((ids.len(), table.ncols()), out).expect("rows × width"))
}

/// Each table row sums the blame of each place it was used.
pub(super) fn embed_rule(shape: (usize, usize), ids: &[usize], blame: &Tensor) -> Blames {
    let g = blame.view();
    let mut out = Array2::zeros(shape);
    for (t, &id) in ids.iter().enumerate() {
        let mut row = out.row_mut(id);
        row += &g.row(t);
    }
    smallvec![Some(Tensor::matrix(out))]
}

/// `count` rows from `first` (0-based), or columns when `!rows`.
pub(super) fn range_forward(a: &Tensor, rows: bool, first: usize, count: usize) -> Tensor {
    let v = a.view();
    Tensor::matrix(if rows {
        v.slice(s![first..first + count, ..]).to_owned()
    } else {
        v.slice(s![.., first..first + count]).to_owned()
    })
}

/// The blame in place of the range, zeros elsewhere.
pub(super) fn range_rule(
    shape: (usize, usize),
    rows: bool,
    first: usize,
    count: usize,
    blame: &Tensor,
) -> Blames {
    let g = blame.view();
    let mut out = Array2::zeros(shape);
    if rows {
        out.slice_mut(s![first..first + count, ..]).assign(&g);
    } else {
        out.slice_mut(s![.., first..first + count]).assign(&g);
    }
    smallvec![Some(Tensor::matrix(out))]
}

/// `HStack(a, b)` along `Axis(1)`, `VStack(a, b)` along `Axis(0)`.
pub(super) fn stack_forward(axis: Axis, a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
    let (sa, sb) = (a.shape(), b.shape());
    let (name, ok, what) = if axis == Axis(1) {
        ("HStack", sa.0 == sb.0, "rows")
    } else {
        ("VStack", sa.1 == sb.1, "columns")
    };
    if !ok {
        return Err(OpError::new(format!(
            "{name} needs both sides to have the same number of {what}, but got a {}×{} and a {}×{}",
            sa.0, sa.1, sb.0, sb.1
        ))
        .label(0, format!("this is a {}×{}", sa.0, sa.1))
        .label(1, format!("this is a {}×{}", sb.0, sb.1)));
    }
    let joined = ndarray::concatenate(axis, &[a.view(), b.view()]).expect("checked");
    Ok(Tensor::matrix(joined))
}

/// Each side gets its part of the blame.
pub(super) fn stack_rule(axis: Axis, shapes: &[(usize, usize)], blame: &Tensor) -> Blames {
    let g = blame.view();
    if axis == Axis(1) {
        let left = shapes[0].1;
        smallvec![
            Some(Tensor::matrix(g.slice(s![.., ..left]).to_owned())),
            Some(Tensor::matrix(g.slice(s![.., left..]).to_owned())),
        ]
    } else {
        let top = shapes[0].0;
        smallvec![
            Some(Tensor::matrix(g.slice(s![..top, ..]).to_owned())),
            Some(Tensor::matrix(g.slice(s![top.., ..]).to_owned())),
        ]
    }
}

/// `m[i, j]` (0-based).
pub(super) fn element_forward(m: &Tensor, i: usize, j: usize) -> Tensor {
    Tensor::Scalar(m.view()[(i, j)])
}

pub(super) fn element_rule(shape: (usize, usize), i: usize, j: usize, blame: &Tensor) -> Blames {
    let mut out = Array2::zeros(shape);
    out[(i, j)] = blame.view()[(0, 0)];
    smallvec![Some(Tensor::matrix(out))]
}

/// A matrix literal of this shape, from its elements row by row.
pub(super) fn literal_forward(elements: &[&Tensor], rows: usize, cols: usize) -> Tensor {
    let values: Vec<f64> = elements.iter().map(|t| t.view()[(0, 0)]).collect();
    Tensor::matrix(Array2::from_shape_vec((rows, cols), values).expect("literal shape"))
}

/// Each element's expression gets the blame of its place.
pub(super) fn literal_rule(elements: usize, cols: usize, blame: &Tensor) -> Blames {
    let g = blame.view();
    (0..elements)
        .map(|k| Some(Tensor::Scalar(g[(k / cols, k % cols)])))
        .collect()
}
