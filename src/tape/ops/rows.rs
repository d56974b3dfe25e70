//! The operations over each row that the attention and the loss are made
//! of: `RowSoftmax`, `LayerNorm` and `CrossEntropy`. Each forward, what it
//! keeps for its rule, and its per-link rule side by side.

use std::borrow::Cow;

use ndarray::{Array2, ArrayView1, ArrayView2};
use smallvec::{SmallVec, smallvec};

use super::super::kernels;

use super::tensor::{Blames, Kept, OpError, Tensor};

/// `LayerNorm`'s epsilon, inside the square root.
pub const LAYER_NORM_EPSILON: f64 = 1e-5;

/// `RowSoftmax(a)`: each row's e^(x - max) over their sum.
pub(super) fn row_softmax_forward(a: &Tensor) -> Result<Tensor, OpError> {
    let v = a.view();
    let mut out = vec![0.0; v.len()];
    let rows = shifted_exps(&v, &mut out);
    for (i, ((max, total), o)) in rows.into_iter().zip(out.chunks_mut(v.ncols())).enumerate() {
        if max == f64::NEG_INFINITY {
            return Err(
                OpError::new(format!("row {} of RowSoftmax's input is all -Inf", i + 1))
                    .label(0, format!("row {} has no finite value", i + 1))
                    .hint("a softmax row needs at least one value above -Inf to share its weight"),
            );
        }
        kernels::divide(o, total);
    }
    Ok(Tensor::matrix(from_rows(v.dim(), out)))
}

/// Each element's e^(x - max) into `out`, and their sum; `max` is the row's largest.
pub(super) fn shifted_exp(row: ArrayView1<f64>, out: &mut [f64]) -> (f64, f64) {
    let max = shift_by_max(row, out);
    kernels::exp_in_place(out);
    (max, kernels::sum(out))
}

/// [`shifted_exp`] of every row of `v`, into `out` row after row, with one
/// pass of e^x over the whole matrix rather than one per row (each element
/// gets the same bits either way: see [`kernels::exp_in_place`]); each
/// row's largest value and sum.
fn shifted_exps(v: &ArrayView2<f64>, out: &mut [f64]) -> SmallVec<[(f64, f64); 64]> {
    let cols = v.ncols();
    let maxes: SmallVec<[f64; 64]> = v
        .rows()
        .into_iter()
        .zip(out.chunks_mut(cols))
        .map(|(row, o)| shift_by_max(row, o))
        .collect();
    kernels::exp_in_place(out);
    maxes
        .into_iter()
        .zip(out.chunks(cols))
        .map(|(max, o)| (max, kernels::sum(o)))
        .collect()
}

/// Each value of `row` minus the largest, into `out`; gives the largest.
fn shift_by_max(row: ArrayView1<f64>, out: &mut [f64]) -> f64 {
    kernels::shift_by_largest(&row_slice(&row), out)
}

/// y·(g - Σ y·g) over each row, from the output y alone.
pub(super) fn row_softmax_rule(output: &Tensor, blame: &Tensor) -> Blames {
    let g = blame.view();
    let y = output.view();
    let mut out = Vec::with_capacity(y.len());
    for (y, g) in y.rows().into_iter().zip(g.rows()) {
        let (y, g) = (row_slice(&y), row_slice(&g));
        let dot = kernels::dot(&y, &g);
        out.extend(y.iter().zip(g.iter()).map(|(&y, &g)| y * (g - dot)));
    }
    smallvec![Some(Tensor::matrix(from_rows(y.dim(), out)))]
}

/// A matrix of `shape` from its elements in row order, each written once
/// (not zeroed first).
fn from_rows(shape: (usize, usize), elements: Vec<f64>) -> Array2<f64> {
    Array2::from_shape_vec(shape, elements).expect("the shape's own size")
}

/// A row as a slice: itself where the matrix is in standard layout, else
/// a copy (the same numbers, so the same sums).
fn row_slice<'a>(row: &ArrayView1<'a, f64>) -> Cow<'a, [f64]> {
    match row.to_slice() {
        Some(xs) => Cow::Borrowed(xs),
        None => Cow::Owned(row.to_vec()),
    }
}

/// A row's mean and 1/std (with epsilon), the same bits wherever asked.
fn row_statistics(row: &ArrayView1<f64>) -> (f64, f64) {
    let n = row.len() as f64;
    let mut mean = row.sum() / n;
    if mean.is_infinite() && row.iter().all(|x| x.is_finite()) {
        // The sum overflowed: each value over the count, summed.
        mean = row.iter().map(|x| x / n).sum();
    }
    let var = kernels::sum_squared_from(&row_slice(row), mean) / n;
    if var.is_infinite() && mean.is_finite() {
        // The squares overflowed (values past about 1e154): the distances
        // from the mean over the largest of them, squared, then the
        // standard deviation scaled back (epsilon is then far below it).
        let scale = row.iter().map(|x| (x - mean).abs()).fold(0.0, f64::max);
        if scale.is_finite() {
            let scaled = row
                .iter()
                .map(|x| ((x - mean) / scale).powi(2))
                .sum::<f64>()
                / n;
            return (mean, 1.0 / (scale * scaled.sqrt()));
        }
    }
    (mean, 1.0 / (var + LAYER_NORM_EPSILON).sqrt())
}

/// Each row less its mean, over its standard deviation; and each row's
/// 1/std.
fn layer_norm(x: &ArrayView2<f64>) -> (Array2<f64>, Vec<f64>) {
    let mut out = Vec::with_capacity(x.len());
    let mut rstds = Vec::with_capacity(x.nrows());
    for row in x.rows() {
        let (mean, rstd) = row_statistics(&row);
        rstds.push(rstd);
        out.extend(row_slice(&row).iter().map(|&v| (v - mean) * rstd));
    }
    (from_rows(x.dim(), out), rstds)
}

/// `LayerNorm(a)`, keeping each row's 1/std for the rule.
pub(super) fn layer_norm_forward(a: &Tensor) -> (Tensor, Option<Kept>) {
    let (out, rstd) = layer_norm(&a.view());
    (Tensor::matrix(out), Some(rstd.into()))
}

/// (g - mean g - ŷ·mean(g·ŷ)) / std over each row.
pub(super) fn layer_norm_rule(
    input: &Tensor,
    output: &Tensor,
    kept: Option<&[f64]>,
    blame: &Tensor,
) -> Blames {
    let g = blame.view();
    // The output is the normalised input; each row's 1/std is the
    // forward's, kept or found again by the forward's arithmetic.
    let xhat = output.view();
    let n = xhat.ncols() as f64;
    let mut out = Vec::with_capacity(xhat.len());
    for (row, (h_row, g_row)) in xhat.rows().into_iter().zip(g.rows()).enumerate() {
        let rstd = match kept {
            Some(rstd) => rstd[row],
            None => row_statistics(&input.view().row(row)).1,
        };
        let mean_g = g_row.sum() / n;
        let (g_row, h_row) = (row_slice(&g_row), row_slice(&h_row));
        let mean_gh = kernels::dot(&g_row, &h_row) / n;
        out.extend(
            g_row
                .iter()
                .zip(h_row.iter())
                .map(|(&g, &h)| rstd * (g - mean_g - h * mean_gh)),
        );
    }
    smallvec![Some(Tensor::matrix(from_rows(xhat.dim(), out)))]
}

/// `CrossEntropy(logits, targets)`: the mean over rows of
/// log Σ e^x - x[target], keeping each row's shifted exps and their sum.
pub(super) fn cross_entropy_forward(logits: &Tensor, targets: &[usize]) -> (Tensor, Option<Kept>) {
    let logits = logits.view();
    let (rows, cols) = logits.dim();
    let mut kept = vec![0.0; rows * cols + rows];
    let (exps, totals) = kept.split_at_mut(rows * cols);
    let mut loss = 0.0;
    for (i, (row, (max, total))) in logits
        .rows()
        .into_iter()
        .zip(shifted_exps(&logits, exps))
        .enumerate()
    {
        totals[i] = total;
        let log_sum_exp = if max == f64::NEG_INFINITY {
            max
        } else {
            max + total.ln()
        };
        loss += log_sum_exp - row[targets[i]];
    }
    (
        Tensor::Scalar(loss / targets.len() as f64),
        Some(kept.into()),
    )
}

/// (softmax(row) - one-hot(target))·g / rows.
pub(super) fn cross_entropy_rule(
    logits: &Tensor,
    shape: (usize, usize),
    targets: &[usize],
    kept: Option<&[f64]>,
    blame: &Tensor,
) -> Blames {
    let (rows, cols) = shape;
    let scale = blame.view()[(0, 0)] / targets.len() as f64;
    let mut out = Array2::zeros((rows, cols));
    for (i, mut o) in out.rows_mut().into_iter().enumerate() {
        let o = o.as_slice_mut().expect("a row of a fresh matrix");
        // The forward's shifted exps and their sum, kept or found again.
        let total = match kept {
            Some(kept) => {
                o.copy_from_slice(&kept[i * cols..(i + 1) * cols]);
                kept[rows * cols + i]
            }
            None => shifted_exp(logits.view().row(i), o).1,
        };
        for e in o.iter_mut() {
            *e = *e / total * scale;
        }
        o[targets[i]] -= scale;
    }
    smallvec![Some(Tensor::matrix(out))]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exps of a whole matrix in one pass are the bits of the exps of
    /// each row alone, though one row (masked with -inf, or with values
    /// whose e^x is below the fast form's range) takes e^x another way
    /// than the rest: `RowSoftmax` and `CrossEntropy` are what they were
    /// when each row had its own pass.
    #[test]
    fn exps_of_the_whole_matrix_are_each_rows_own() {
        let rows = [
            vec![0.5, -1.25, 3.0, 2.0, -0.75],
            vec![1.0, f64::NEG_INFINITY, 0.25, f64::NEG_INFINITY, -2.0],
            vec![0.0, -750.0, -1e3, 2.5, -709.5],
            vec![-3.0, 4.0, 1e-3, 7.5, -0.5],
        ];
        let m = Array2::from_shape_vec((4, 5), rows.concat()).unwrap();
        let mut whole = vec![0.0; 20];
        let sums = shifted_exps(&m.view(), &mut whole);
        for (i, row) in m.rows().into_iter().enumerate() {
            let mut alone = vec![0.0; 5];
            let (max, total) = shifted_exp(row, &mut alone);
            assert_eq!(
                (max.to_bits(), total.to_bits()),
                (sums[i].0.to_bits(), sums[i].1.to_bits())
            );
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&alone), bits(&whole[i * 5..(i + 1) * 5]), "row {i}");
        }
        // A masked entry is exactly 0, and so is one far below the max.
        assert_eq!(whole[6], 0.0);
        assert_eq!(whole[11], 0.0);
        let softmax = row_softmax_forward(&Tensor::matrix(m)).unwrap();
        for row in softmax.view().rows() {
            assert!((row.sum() - 1.0).abs() < 1e-15);
        }
    }

    /// Values whose sum or squares would overflow are normalised as
    /// smaller ones are: the row scaled by 1e150, 1e200 or 1e300 gives what
    /// it gives scaled by 1e10 (large enough that epsilon is lost in the
    /// variance, small enough that nothing overflows).
    #[test]
    fn layer_norm_of_huge_values_is_that_of_small_ones() {
        let small = [1.0, 2.0, 4.0, -3.0];
        let large: Vec<f64> = small.iter().map(|x| x * 1e10).collect();
        let (expected, _) = layer_norm(&Array2::from_shape_vec((1, 4), large).unwrap().view());
        for scale in [1e150, 1e200, 1e300] {
            let huge: Vec<f64> = small.iter().map(|x| x * scale).collect();
            let (got, rstd) = layer_norm(&Array2::from_shape_vec((1, 4), huge).unwrap().view());
            assert!(rstd[0] > 0.0 && rstd[0].is_finite(), "{scale}: {rstd:?}");
            for (g, e) in got.iter().zip(expected.iter()) {
                assert!((g - e).abs() < 1e-12, "{scale}: {got} against {expected}");
            }
        }
        // Untouched where nothing overflows: the first path's bits.
        let (mean, rstd) = row_statistics(&ndarray::arr1(&small).view());
        assert_eq!(mean, 1.0);
        assert_eq!(rstd, 1.0 / (6.5f64 + LAYER_NORM_EPSILON).sqrt());
    }
}
