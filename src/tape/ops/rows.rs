//! The operations over each row that the attention and the loss are made
//! of: `RowSoftmax`, `LayerNorm` and `CrossEntropy`. Each forward, what it
//! keeps for its rule, and its per-link rule side by side.

use ndarray::{Array2, ArrayView1, ArrayView2, Zip};
use smallvec::smallvec;

use super::tensor::{Blames, Kept, OpError, Tensor};

/// `LayerNorm`'s epsilon, inside the square root.
pub const LAYER_NORM_EPSILON: f64 = 1e-5;

/// `RowSoftmax(a)`: each row's e^(x - max) over their sum.
pub(super) fn row_softmax_forward(a: &Tensor) -> Result<Tensor, OpError> {
    let v = a.view();
    let mut out = Array2::zeros(v.dim());
    for (i, (row, o)) in v.rows().into_iter().zip(out.rows_mut()).enumerate() {
        let o = o.into_slice().expect("a row of a fresh matrix");
        let (max, total) = shifted_exp(row, o);
        if max == f64::NEG_INFINITY {
            return Err(
                OpError::new(format!("row {} of RowSoftmax's input is all -Inf", i + 1))
                    .label(0, format!("row {} has no finite value", i + 1))
                    .hint("a softmax row needs at least one value above -Inf to share its weight"),
            );
        }
        for e in o {
            *e /= total;
        }
    }
    Ok(Tensor::matrix(out))
}

/// Each element's e^(x - max) into `out`, and their sum; `max` is the row's largest.
pub(super) fn shifted_exp(row: ArrayView1<f64>, out: &mut [f64]) -> (f64, f64) {
    // A row of a standard-layout matrix is a plain slice: read it as one.
    let max = match row.as_slice() {
        Some(xs) => shift_by_max(xs.iter().copied(), out),
        None => shift_by_max(row.iter().copied(), out),
    };
    super::super::kernels::exp_in_place(out);
    (max, out.iter().sum())
}

/// Each value minus the largest, into `out`; gives the largest.
fn shift_by_max(values: impl Iterator<Item = f64> + Clone, out: &mut [f64]) -> f64 {
    let max = values.clone().fold(f64::NEG_INFINITY, f64::max);
    for (o, x) in out.iter_mut().zip(values) {
        *o = x - max;
    }
    max
}

/// y·(g - Σ y·g) over each row, from the output y alone.
pub(super) fn row_softmax_rule(output: &Tensor, blame: &Tensor) -> Blames {
    let g = blame.view();
    let y = output.view();
    let mut out = Array2::zeros(y.dim());
    Zip::from(out.rows_mut())
        .and(y.rows())
        .and(g.rows())
        .for_each(|mut o, y, g| {
            let dot: f64 = y.iter().zip(g.iter()).map(|(y, g)| y * g).sum();
            Zip::from(&mut o)
                .and(&y)
                .and(&g)
                .for_each(|o, &y, &g| *o = y * (g - dot));
        });
    smallvec![Some(Tensor::matrix(out))]
}

/// A row's mean and 1/std (with epsilon), the same bits wherever asked.
fn row_statistics(row: &ArrayView1<f64>) -> (f64, f64) {
    let n = row.len() as f64;
    let mean = row.sum() / n;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, 1.0 / (var + LAYER_NORM_EPSILON).sqrt())
}

/// Each row less its mean, over its standard deviation; and each row's
/// 1/std.
fn layer_norm(x: &ArrayView2<f64>) -> (Array2<f64>, Vec<f64>) {
    let mut out = Array2::zeros(x.dim());
    let mut rstds = Vec::with_capacity(x.nrows());
    for (row, mut o) in x.rows().into_iter().zip(out.rows_mut()) {
        let (mean, rstd) = row_statistics(&row);
        rstds.push(rstd);
        Zip::from(&mut o)
            .and(&row)
            .for_each(|o, &v| *o = (v - mean) * rstd);
    }
    (out, rstds)
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
    let mut out = Array2::zeros(xhat.dim());
    for (row, ((h_row, g_row), mut o)) in xhat
        .rows()
        .into_iter()
        .zip(g.rows())
        .zip(out.rows_mut())
        .enumerate()
    {
        let rstd = match kept {
            Some(rstd) => rstd[row],
            None => row_statistics(&input.view().row(row)).1,
        };
        let mean_g = g_row.sum() / n;
        let mean_gh: f64 = g_row
            .iter()
            .zip(h_row.iter())
            .map(|(g, h)| g * h)
            .sum::<f64>()
            / n;
        Zip::from(&mut o)
            .and(&g_row)
            .and(&h_row)
            .for_each(|o, &g, &h| *o = rstd * (g - mean_g - h * mean_gh));
    }
    smallvec![Some(Tensor::matrix(out))]
}

/// `CrossEntropy(logits, targets)`: the mean over rows of
/// log Σ e^x - x[target], keeping each row's shifted exps and their sum.
pub(super) fn cross_entropy_forward(logits: &Tensor, targets: &[usize]) -> (Tensor, Option<Kept>) {
    let logits = logits.view();
    let (rows, cols) = logits.dim();
    let mut kept = vec![0.0; rows * cols + rows];
    let (exps, totals) = kept.split_at_mut(rows * cols);
    let mut loss = 0.0;
    for (i, (row, e)) in logits
        .rows()
        .into_iter()
        .zip(exps.chunks_mut(cols))
        .enumerate()
    {
        let (max, total) = shifted_exp(row, e);
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
