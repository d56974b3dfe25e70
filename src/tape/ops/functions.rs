//! The elementwise functions of one value (`Tanh`, `Exp`, `Log`, `Sqrt`,
//! `ReLU`, `Sigmoid`, `Abs`), on numbers or matrices: each function's value
//! and slope side by side, and the forward and per-link rule they share.

use ndarray::{Array2, ArrayView2, Zip};
use smallvec::smallvec;

use super::super::kernels::filled;
use super::tensor::{Blames, Tensor, map};

/// Elementwise functions of one value, on numbers or matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unary {
    Tanh,
    Exp,
    Log,
    Sqrt,
    ReLU,
    Sigmoid,
    Abs,
    Sqr,
}

impl Unary {
    pub fn name(self) -> &'static str {
        match self {
            Unary::Tanh => "Tanh",
            Unary::Exp => "Exp",
            Unary::Log => "Log",
            Unary::Sqrt => "Sqrt",
            Unary::ReLU => "ReLU",
            Unary::Sigmoid => "Sigmoid",
            Unary::Abs => "Abs",
            Unary::Sqr => "Sqr",
        }
    }

    pub fn apply(self, x: f64) -> f64 {
        match self {
            Unary::Tanh => super::super::kernels::tanh(x),
            Unary::Exp => super::super::kernels::exp(x),
            Unary::Log => x.ln(),
            Unary::Sqrt => x.sqrt(),
            Unary::ReLU => {
                if x > 0.0 {
                    x
                } else {
                    0.0
                }
            }
            Unary::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Unary::Abs => x.abs(),
            Unary::Sqr => x * x,
        }
    }

    /// Whether `slope` reads the input: for the others the output alone
    /// gives it, and the per-link rule does not read the input at all (one
    /// pass over memory fewer).
    pub(super) fn slope_reads_input(self) -> bool {
        matches!(self, Unary::Log | Unary::ReLU | Unary::Abs | Unary::Sqr)
    }

    /// d output / d input, from the input `x` and the output `y`.
    #[inline(always)]
    fn slope(self, x: f64, y: f64) -> f64 {
        match self {
            Unary::Tanh => 1.0 - y * y,
            Unary::Exp => y,
            Unary::Log => 1.0 / x,
            Unary::Sqrt => 0.5 / y,
            Unary::ReLU => {
                if x > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            Unary::Sigmoid => y * (1.0 - y),
            Unary::Abs => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            Unary::Sqr => 2.0 * x,
        }
    }
}

/// `f(a)` for each element (the vectorised kernels for `Tanh` and `Exp`).
pub(super) fn forward(u: Unary, a: &Tensor) -> Tensor {
    match (u, a) {
        (Unary::Tanh | Unary::Exp, Tensor::Matrix(m)) if m.is_standard_layout() => {
            let from = m.as_slice().expect("standard layout");
            let values = match u {
                Unary::Tanh => super::super::kernels::tanh_slice(from),
                _ => super::super::kernels::exp_slice(from),
            };
            Tensor::matrix(Array2::from_shape_vec(m.dim(), values).expect("same size"))
        }
        (u, other) => map(other, |x| u.apply(x)),
    }
}

/// The blame of `a` is the blame of `f(a)` times the slope, element by
/// element.
pub(super) fn rule(u: Unary, input: &Tensor, output: &Tensor, blame: &Tensor) -> Blames {
    let g = blame.view();
    let out = match (input, output) {
        (Tensor::Scalar(x), Tensor::Scalar(y)) => Tensor::Scalar(g[(0, 0)] * u.slope(*x, *y)),
        _ => {
            let (x, y) = (input.view(), output.view());
            let d = fixed_kind!(
                u,
                Unary {
                    Tanh,
                    Exp,
                    Log,
                    Sqrt,
                    ReLU,
                    Sigmoid,
                    Abs,
                    Sqr
                },
                |u| if u.slope_reads_input() {
                    times_slope(&g, &x, &y, |x, y| u.slope(x, y))
                } else {
                    // This slope does not read its `x`.
                    times_slope_of_output(&g, &y, |y| u.slope(0.0, y))
                }
            );
            Tensor::matrix(d)
        }
    };
    smallvec![Some(out)]
}

/// Each element of the blame `g` times the slope at its input `x` and
/// output `y` (all three of one shape).
fn times_slope(
    g: &ArrayView2<f64>,
    x: &ArrayView2<f64>,
    y: &ArrayView2<f64>,
    slope: impl Fn(f64, f64) -> f64 + Sync,
) -> Array2<f64> {
    if let (Some(gs), Some(xs), Some(ys)) = (g.to_slice(), x.to_slice(), y.to_slice()) {
        let slope = &slope;
        let values = filled(gs.len(), |at| {
            gs[at.clone()]
                .iter()
                .zip(&xs[at.clone()])
                .zip(&ys[at])
                .map(|((&g, &x), &y)| g * slope(x, y))
        });
        return Array2::from_shape_vec(g.dim(), values).expect("the blame's own size");
    }
    let mut d = g.to_owned();
    Zip::from(&mut d)
        .and(x)
        .and(y)
        .for_each(|d, &x, &y| *d *= slope(x, y));
    d
}

/// Each element of the blame `g` times the slope at its output `y` (both of
/// one shape), for a function whose slope the output alone gives.
fn times_slope_of_output(
    g: &ArrayView2<f64>,
    y: &ArrayView2<f64>,
    slope: impl Fn(f64) -> f64 + Sync,
) -> Array2<f64> {
    if let (Some(gs), Some(ys)) = (g.to_slice(), y.to_slice()) {
        let slope = &slope;
        let values = filled(gs.len(), |at| {
            gs[at.clone()]
                .iter()
                .zip(&ys[at])
                .map(|(&g, &y)| g * slope(y))
        });
        return Array2::from_shape_vec(g.dim(), values).expect("the blame's own size");
    }
    let mut d = g.to_owned();
    Zip::from(&mut d).and(y).for_each(|d, &y| *d *= slope(y));
    d
}

/// `Power(a, p)`: each element to the power `p` (IEEE `pow`), except that
/// a negative base to a finite power that is not whole is a NaN (an error)
/// even when the base is -inf, where `pow` gives an infinity or 0. `odd`:
/// for an Integer exponent beyond 2^53, which `p` holds rounded to an even
/// number, whether it is odd, which gives a negative base's sign.
pub(super) fn power_forward(p: f64, odd: Option<bool>, a: &Tensor) -> Tensor {
    let whole = !p.is_finite() || p.fract() == 0.0;
    map(a, |x| {
        if x < 0.0 && !whole {
            f64::NAN
        } else if odd == Some(true) && x.is_sign_negative() {
            -x.powf(p)
        } else {
            x.powf(p)
        }
    })
}

/// The blame of `a` is the blame times `p · a^(p-1)`, exactly 0 for `p = 0`
/// (where `0 · a^-1` would make a NaN at `a = 0`), and exactly 0 for an
/// infinite `p` where `a^(p-1)` is 0: there `a^p` is 0 all around `a`
/// (`Power(0.5, Inf)`), where `inf · 0` would make a NaN. For an Integer
/// exponent beyond 2^53, a negative base's `a^(p-1)` has the sign the
/// exponent's parity gives, which `p - 1` in f64 may not have.
pub(super) fn power_rule(p: f64, odd: Option<bool>, input: &Tensor, blame: &Tensor) -> Blames {
    let slope = |x: f64| {
        if p == 0.0 {
            return 0.0;
        }
        let below = match odd {
            // `p - 1` may be odd or even: the power's sign is the parity
            // of the exponent less one.
            Some(odd) if x.is_sign_negative() => {
                let size = x.abs().powf(p - 1.0);
                if odd { size } else { -size }
            }
            _ => x.powf(p - 1.0),
        };
        if p.is_infinite() && below == 0.0 {
            0.0
        } else {
            p * below
        }
    };
    let out = match input {
        Tensor::Scalar(x) => Tensor::Scalar(blame.view()[(0, 0)] * slope(*x)),
        _ => {
            let x = input.view();
            Tensor::matrix(times_slope(&blame.view(), &x, &x, |x, _| slope(x)))
        }
    };
    smallvec![Some(out)]
}
