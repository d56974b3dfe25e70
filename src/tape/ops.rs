//! Every recorded operation, defined in one place: its name, its shape rule,
//! its forward computation and its per-link rule (the local derivative the
//! reverse walk applies).
//!
//! Forward functions are pure: they take the input values and return the
//! output, so that the same code runs when a statement executes and when a
//! tape is replayed. Selectors (row numbers, ids, targets) live inside the
//! [`Op`] itself; blame never flows to them.

use std::rc::Rc;

use ndarray::{Array2, ArrayView1, ArrayView2, Axis, Zip, s};

use super::matmul::product;
use smallvec::{SmallVec, smallvec};

/// The blame each input receives from one record (`None`: no blame flows).
pub type Blames = SmallVec<[Option<Tensor>; 2]>;

/// Numbers an operation's forward worked out that its per-link rule needs
/// again ([`Op::forward_keeping`]): for `CrossEntropy`, each row's shifted
/// exps (e^(x - max)) row after row, then each row's sum of them; for
/// `LayerNorm`, each row's 1/std. The rule given them skips that work and
/// gives the same bits.
pub type Kept = Rc<[f64]>;

/// A value on the tape: a number or a matrix.
#[derive(Debug, Clone, PartialEq)]
pub enum Tensor {
    Scalar(f64),
    Matrix(Rc<Array2<f64>>),
}

impl Tensor {
    /// How many numbers it holds.
    pub fn len(&self) -> usize {
        match self {
            Tensor::Scalar(_) => 1,
            Tensor::Matrix(m) => m.len(),
        }
    }

    /// Whether it holds no number: only the stand-in for a value the tape
    /// let go of.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn shape(&self) -> (usize, usize) {
        match self {
            Tensor::Scalar(_) => (1, 1),
            Tensor::Matrix(m) => m.dim(),
        }
    }

    /// The value as a matrix view (a number as 1×1).
    pub fn view(&self) -> ArrayView2<'_, f64> {
        match self {
            Tensor::Scalar(x) => {
                ArrayView2::from_shape((1, 1), std::slice::from_ref(x)).expect("1x1")
            }
            Tensor::Matrix(m) => m.view(),
        }
    }

    pub fn matrix(m: Array2<f64>) -> Tensor {
        Tensor::Matrix(Rc::new(m))
    }

    /// Zeros of the same kind and shape.
    pub fn zeros_like(&self) -> Tensor {
        match self {
            Tensor::Scalar(_) => Tensor::Scalar(0.0),
            Tensor::Matrix(m) => Tensor::matrix(Array2::zeros(m.dim())),
        }
    }

    /// Ones of the same kind and shape: the blame the walk starts from.
    pub fn ones_like(&self) -> Tensor {
        match self {
            Tensor::Scalar(_) => Tensor::Scalar(1.0),
            Tensor::Matrix(m) => Tensor::matrix(Array2::ones(m.dim())),
        }
    }

    /// The first (row, column), 1-based, that holds a NaN.
    pub fn first_nan(&self) -> Option<(usize, usize)> {
        match self {
            Tensor::Scalar(x) => x.is_nan().then_some((1, 1)),
            Tensor::Matrix(m) => {
                let cols = m.ncols();
                if let Some(values) = m.as_slice_memory_order()
                    && !super::kernels::any_nan(values)
                {
                    return None;
                }
                m.iter()
                    .position(|x| x.is_nan())
                    .map(|k| (k / cols + 1, k % cols + 1))
            }
        }
    }

    /// The largest magnitude of an element: NaN if any is a NaN, infinity if
    /// any is infinite (see [`super::kernels::bound`]).
    pub fn bound(&self) -> f64 {
        match self {
            Tensor::Scalar(x) => x.abs(),
            Tensor::Matrix(m) => match m.as_slice_memory_order() {
                Some(values) => super::kernels::bound(values),
                None => m.iter().fold(0.0, |b: f64, x| {
                    if b.is_nan() || x.is_nan() {
                        f64::NAN
                    } else {
                        b.max(x.abs())
                    }
                }),
            },
        }
    }

    /// Adds `other` (same shape) into `self`: how blame adds up where a value is used twice.
    pub fn accumulate(&mut self, other: Tensor) {
        match (self, other) {
            (Tensor::Scalar(a), Tensor::Scalar(b)) => *a += b,
            (Tensor::Matrix(a), b) => {
                if let Some(a) = Rc::get_mut(a) {
                    *a += &b.view();
                    return;
                }
                // The blame held here is shared (an addition hands the same
                // blame to both its inputs): rather than copy it and then
                // add, add it into the share when that is not shared, or
                // else make the sum in one pass. y + x is x + y, bit for bit.
                if let Tensor::Matrix(mut share) = b {
                    if share.dim() == a.dim()
                        && let Some(sum) = Rc::get_mut(&mut share)
                    {
                        *sum += &**a;
                        *a = share;
                    } else {
                        *a = Rc::new(&**a + &*share);
                    }
                    return;
                }
                *a = Rc::new(&**a + &b.view());
            }
            (Tensor::Scalar(a), Tensor::Matrix(b)) => *a += b.sum(),
        }
    }
}

/// "2×3", or "a number".
pub fn describe_shape(t: &Tensor) -> String {
    match t {
        Tensor::Scalar(_) => "a number".to_string(),
        Tensor::Matrix(m) => format!("a {}×{}", m.nrows(), m.ncols()),
    }
}

/// Why an operation cannot run on the values it was given: a message, and
/// for each input it concerns, a label (inputs counted from 0).
#[derive(Debug, Clone, PartialEq)]
pub struct OpError {
    pub message: String,
    pub labels: Vec<(usize, String)>,
    pub hint: Option<String>,
}

impl OpError {
    fn new(message: impl Into<String>) -> OpError {
        OpError {
            message: message.into(),
            labels: Vec::new(),
            hint: None,
        }
    }
    fn label(mut self, input: usize, text: impl Into<String>) -> OpError {
        self.labels.push((input, text.into()));
        self
    }
    fn hint(mut self, text: impl Into<String>) -> OpError {
        self.hint = Some(text.into());
        self
    }
}

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
        }
    }

    pub fn apply(self, x: f64) -> f64 {
        match self {
            Unary::Tanh => super::kernels::tanh(x),
            Unary::Exp => super::kernels::exp(x),
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
        }
    }

    /// Whether `slope` reads the input: for the others the output alone
    /// gives it, and the per-link rule does not read the input at all (one
    /// pass over memory fewer).
    fn slope_reads_input(self) -> bool {
        matches!(self, Unary::Log | Unary::ReLU | Unary::Abs)
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
        }
    }
}

/// Elementwise operations of two values, which broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elementwise {
    Add,
    Sub,
    Div,
    /// `Hadamard(a, b)`, and `*` of a number with anything.
    Mul,
}

impl Elementwise {
    #[inline(always)]
    fn apply(self, x: f64, y: f64) -> f64 {
        match self {
            Elementwise::Add => x + y,
            Elementwise::Sub => x - y,
            Elementwise::Div => x / y,
            Elementwise::Mul => x * y,
        }
    }
}

/// `$body` once per variant of `$ty`, with `$kind` a constant of that
/// variant: the loops inside are compiled for each variant alone, so they
/// vectorise instead of asking at every element which one it is. (A `const`
/// rather than a `let`: a closure in `$body` would capture a `let` binding
/// and read it at run time.)
macro_rules! fixed_kind {
    ($value:expr, $ty:ident { $($variant:ident),* }, |$kind:ident| $body:expr) => {
        match $value {
            $($ty::$variant => {
                #[allow(non_upper_case_globals)]
                const $kind: $ty = $ty::$variant;
                $body
            })*
        }
    };
}

/// What an operation's per-link rule reads besides the blame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    /// The numbers of its inputs, not only their shapes (and whether each
    /// is a number).
    pub inputs: bool,
    /// Its own output.
    pub output: bool,
}

/// The operations the tape records.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A value that was not made on this tape: a variable read for the first
    /// time, or a constant.
    Leaf,
    Elementwise(Elementwise),
    Neg,
    MatMul,
    Transpose,
    Sum,
    Mean,
    RowSum,
    RowMean,
    ColSum,
    RowSoftmax,
    Unary(Unary),
    LayerNorm,
    /// Row numbers, 0-based, already checked against the table.
    Embed(Rc<Vec<usize>>),
    /// Column numbers, 0-based, already checked against the logits.
    CrossEntropy(Rc<Vec<usize>>),
    /// 0-based first row and count.
    RowRange(usize, usize),
    ColRange(usize, usize),
    HStack,
    VStack,
    /// One element, 0-based.
    Element(usize, usize),
    /// A matrix literal of this shape, from its elements row by row.
    Literal(usize, usize),
}

/// A bound on the size of every element of a matrix product whose left
/// and right inputs have no element larger than `a` and `b`, with `inner`
/// terms in each sum. Finite only when no sum can overflow, so that the
/// product holds no infinity and no NaN; twice the exact bound, which
/// covers the rounding of the sums (at most `inner`·ε relative).
pub fn product_bound(a: f64, b: f64, inner: usize) -> f64 {
    a * b * inner as f64 * 2.0
}

/// A bound on the size of every element of `x + y`, for `x` and `y` no
/// larger than `a` and `b` (twice the exact bound, for the rounding).
pub fn sum_bound(a: f64, b: f64) -> f64 {
    (a + b) * 2.0
}

/// Below this many elements a value is scanned for NaN rather than its
/// bound proved ([`Op::output_bound`], [`Op::share_bounds`]): for so few,
/// the scan costs less.
pub const PROVE_FROM: usize = 64;

/// `LayerNorm`'s epsilon, inside the square root.
pub const LAYER_NORM_EPSILON: f64 = 1e-5;

impl Op {
    /// The name a learner knows the operation by.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Leaf => "leaf",
            Op::Elementwise(Elementwise::Add) => "+",
            Op::Elementwise(Elementwise::Sub) => "-",
            Op::Elementwise(Elementwise::Div) => "/",
            Op::Elementwise(Elementwise::Mul) => "*",
            Op::Neg => "negate",
            Op::MatMul => "matrix product",
            Op::Transpose => "Transpose",
            Op::Sum => "Sum",
            Op::Mean => "Mean",
            Op::RowSum => "RowSum",
            Op::RowMean => "RowMean",
            Op::ColSum => "ColSum",
            Op::RowSoftmax => "RowSoftmax",
            Op::Unary(u) => u.name(),
            Op::LayerNorm => "LayerNorm",
            Op::Embed(_) => "Embed",
            Op::CrossEntropy(_) => "CrossEntropy",
            Op::RowRange(..) => "RowRange",
            Op::ColRange(..) => "ColRange",
            Op::HStack => "HStack",
            Op::VStack => "VStack",
            Op::Element(..) => "element",
            Op::Literal(..) => "matrix literal",
        }
    }

    /// Computes the output from the inputs (in the order they were recorded).
    pub fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor, OpError> {
        match self {
            Op::Leaf => Ok(inputs[0].clone()),
            Op::Elementwise(kind) => elementwise(*kind, inputs[0], inputs[1]),
            Op::Neg => Ok(map(inputs[0], |x| -x)),
            Op::MatMul => matmul(inputs[0], inputs[1]),
            Op::Transpose => Ok(Tensor::matrix(inputs[0].view().t().to_owned())),
            Op::Sum => Ok(Tensor::Scalar(inputs[0].view().sum())),
            Op::Mean => {
                let v = inputs[0].view();
                Ok(Tensor::Scalar(v.sum() / v.len() as f64))
            }
            Op::RowSum => Ok(Tensor::matrix(
                inputs[0].view().sum_axis(Axis(1)).insert_axis(Axis(1)),
            )),
            Op::RowMean => {
                let v = inputs[0].view();
                let n = v.ncols() as f64;
                Ok(Tensor::matrix(
                    v.sum_axis(Axis(1)).insert_axis(Axis(1)).mapv(|x| x / n),
                ))
            }
            Op::ColSum => Ok(Tensor::matrix(
                inputs[0].view().sum_axis(Axis(0)).insert_axis(Axis(0)),
            )),
            Op::RowSoftmax => row_softmax(inputs[0]),
            Op::Unary(u @ (Unary::Tanh | Unary::Exp)) => Ok(match inputs[0] {
                Tensor::Matrix(m) if m.is_standard_layout() => {
                    let from = m.as_slice().expect("standard layout");
                    let values = match u {
                        Unary::Tanh => super::kernels::tanh_slice(from),
                        _ => super::kernels::exp_slice(from),
                    };
                    Tensor::matrix(Array2::from_shape_vec(m.dim(), values).expect("same size"))
                }
                other => map(other, |x| u.apply(x)),
            }),
            Op::Unary(u) => Ok(map(inputs[0], |x| u.apply(x))),
            Op::LayerNorm | Op::CrossEntropy(_) => self.forward_keeping(inputs).map(|(out, _)| out),
            Op::Embed(ids) => {
                let table = inputs[0].view();
                let mut out = Vec::with_capacity(ids.len() * table.ncols());
                for &id in ids.iter() {
                    let row = table.row(id);
                    match row.as_slice() {
                        Some(values) => out.extend_from_slice(values),
                        None => out.extend(row.iter()),
                    }
                }
                Ok(Tensor::matrix(
                    Array2::from_shape_vec((ids.len(), table.ncols()), out).expect("rows × width"),
                ))
            }
            Op::RowRange(first, count) => Ok(Tensor::matrix(
                inputs[0]
                    .view()
                    .slice(s![*first..first + count, ..])
                    .to_owned(),
            )),
            Op::ColRange(first, count) => Ok(Tensor::matrix(
                inputs[0]
                    .view()
                    .slice(s![.., *first..first + count])
                    .to_owned(),
            )),
            Op::HStack => stack(Axis(1), inputs[0], inputs[1]),
            Op::VStack => stack(Axis(0), inputs[0], inputs[1]),
            Op::Element(i, j) => Ok(Tensor::Scalar(inputs[0].view()[(*i, *j)])),
            Op::Literal(rows, cols) => {
                let values: Vec<f64> = inputs.iter().map(|t| t.view()[(0, 0)]).collect();
                Ok(Tensor::matrix(
                    Array2::from_shape_vec((*rows, *cols), values).expect("literal shape"),
                ))
            }
        }
    }

    /// Whether [`Op::forward_keeping`] keeps anything: `CrossEntropy` and
    /// `LayerNorm`.
    pub fn keeps(&self) -> bool {
        matches!(self, Op::CrossEntropy(_) | Op::LayerNorm)
    }

    /// [`Op::forward`], and what it worked out on the way that the per-link
    /// rule would otherwise work out again (see [`Kept`]).
    pub fn forward_keeping(&self, inputs: &[&Tensor]) -> Result<(Tensor, Option<Kept>), OpError> {
        match self {
            Op::CrossEntropy(targets) => {
                let logits = inputs[0].view();
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
                Ok((
                    Tensor::Scalar(loss / targets.len() as f64),
                    Some(kept.into()),
                ))
            }
            Op::LayerNorm => {
                let (out, rstd) = layer_norm(&inputs[0].view());
                Ok((Tensor::matrix(out), Some(rstd.into())))
            }
            _ => Ok((self.forward(inputs)?, None)),
        }
    }

    /// What the per-link rule reads besides the blame. The tape lets go
    /// early of a value that no rule reads
    /// ([`crate::tape::Tape::release_unread`]).
    pub fn reads(&self) -> Reads {
        let (inputs, output) = match self {
            Op::Elementwise(Elementwise::Mul | Elementwise::Div)
            | Op::MatMul
            | Op::CrossEntropy(_) => (true, false),
            Op::LayerNorm => (true, true),
            Op::RowSoftmax => (false, true),
            Op::Unary(u) => (u.slope_reads_input(), true),
            Op::Elementwise(Elementwise::Add | Elementwise::Sub)
            | Op::Leaf
            | Op::Neg
            | Op::Transpose
            | Op::Sum
            | Op::Mean
            | Op::RowSum
            | Op::RowMean
            | Op::ColSum
            | Op::Embed(_)
            | Op::RowRange(..)
            | Op::ColRange(..)
            | Op::HStack
            | Op::VStack
            | Op::Element(..)
            | Op::Literal(..) => (false, false),
        };
        Reads { inputs, output }
    }

    /// A bound on the size of every element of the output that the inputs'
    /// bounds prove, so that the output need not be read for a NaN:
    /// `inputs[k]` bounds input `k`'s elements (`None`: not known), and
    /// `shapes[k]` is its shape. `None` where nothing is proved.
    ///
    /// A bound may be infinite where the output only copies its inputs
    /// (some element may be infinite; none is NaN); a bound that rests on
    /// arithmetic is finite or `None`. A NaN bound (a number input that is
    /// NaN) is handed on where the output copies it.
    pub fn output_bound(&self, inputs: &[Option<f64>], shapes: &[(usize, usize)]) -> Option<f64> {
        let finite = |b: f64| Some(b).filter(|b| b.is_finite());
        let input = |k: usize| inputs.get(k).copied().flatten();
        match self {
            Op::MatMul => finite(product_bound(input(0)?, input(1)?, shapes[0].1)),
            Op::Elementwise(Elementwise::Add | Elementwise::Sub) => {
                finite(sum_bound(input(0)?, input(1)?))
            }
            Op::Elementwise(Elementwise::Mul) => finite(product_bound(input(0)?, input(1)?, 1)),
            // The output's elements are some of the input's, or their negations.
            Op::Neg
            | Op::Transpose
            | Op::RowRange(..)
            | Op::ColRange(..)
            | Op::Element(..)
            | Op::Embed(_)
            | Op::Unary(Unary::Abs | Unary::ReLU) => input(0),
            Op::HStack | Op::VStack => {
                let (a, b) = (input(0)?, input(1)?);
                finite(a.max(b)).filter(|_| !a.is_nan() && !b.is_nan())
            }
            // tanh and the logistic function of any number but NaN lie in
            // [-1, 1].
            Op::Unary(Unary::Tanh | Unary::Sigmoid) => {
                input(0).filter(|b| !b.is_nan()).map(|_| 1.0)
            }
            // e^(x - max) / (a sum that holds e^0 = 1): in [0, 1] when the
            // row's largest element is finite (2 leaves room for rounding).
            Op::RowSoftmax => finite(input(0)?).map(|_| 2.0),
            // |x - mean| is at most √n standard deviations; an input below
            // 1e100 keeps every square finite, and ε keeps the divisor from 0.
            Op::LayerNorm => input(0)
                .filter(|&b| b < 1e100)
                .map(|_| 2.0 * (shapes[0].1 as f64).sqrt() + 1.0),
            Op::Leaf
            | Op::Elementwise(Elementwise::Div)
            | Op::Unary(Unary::Exp | Unary::Log | Unary::Sqrt)
            | Op::Sum
            | Op::Mean
            | Op::RowSum
            | Op::RowMean
            | Op::ColSum
            | Op::CrossEntropy(_)
            | Op::Literal(..) => None,
        }
    }

    /// Bounds on the shares the per-link rule hands its inputs that the
    /// blame's bound `g`, the inputs' bounds and the output's bound prove,
    /// so that the shares need not be read for a NaN; `None` where nothing
    /// is proved. `shapes` are the inputs' shapes and `out` the output's.
    ///
    /// As for [`Op::output_bound`], a share that only copies the blame (or
    /// its negation, or parts of it) keeps `g` even when it is infinite; a
    /// bound that rests on arithmetic is finite or `None`.
    pub fn share_bounds(
        &self,
        g: f64,
        inputs: &[f64],
        output: f64,
        shapes: &[(usize, usize)],
        out: (usize, usize),
    ) -> [Option<f64>; 2] {
        let finite = |b: f64| Some(b).filter(|b| b.is_finite());
        // How many of the blame's elements are summed into each element of
        // input k's share (more than one where the input was broadcast).
        let summed = |k: usize| (out.0 * out.1) / (shapes[k].0 * shapes[k].1).max(1);
        let each = |b: Option<f64>| [b, b];
        match self {
            Op::Leaf => [None, None],
            Op::MatMul => [
                finite(product_bound(g, inputs[1], out.1)),
                finite(product_bound(inputs[0], g, out.0)),
            ],
            Op::Elementwise(Elementwise::Add | Elementwise::Sub) => {
                [0, 1].map(|k| match summed(k) {
                    1 => Some(g),
                    terms => finite(product_bound(g, 1.0, terms)),
                })
            }
            Op::Elementwise(Elementwise::Mul) => {
                [0, 1].map(|k| finite(product_bound(g, inputs[1 - k], summed(k))))
            }
            Op::Elementwise(Elementwise::Div) => [None, None],
            // Copies of the blame, its negation, parts of it, or it scaled by
            // at most 1, with zeros.
            Op::Neg
            | Op::Transpose
            | Op::Sum
            | Op::Mean
            | Op::RowSum
            | Op::RowMean
            | Op::ColSum
            | Op::RowRange(..)
            | Op::ColRange(..)
            | Op::HStack
            | Op::VStack
            | Op::Element(..)
            | Op::Literal(..) => [Some(g), Some(g)],
            // g·(1 - y²), g·y, g·y(1 - y): the slope is bounded by the output's.
            Op::Unary(Unary::Tanh) => each(finite(product_bound(g, 1.0 + output * output, 1))),
            Op::Unary(Unary::Exp) => each(finite(product_bound(g, output, 1))),
            Op::Unary(Unary::Sigmoid) => each(finite(product_bound(g, output * (1.0 + output), 1))),
            // g times 1, -1 or 0: finite blame only, as inf · 0 is NaN.
            Op::Unary(Unary::ReLU | Unary::Abs) => each(finite(g)),
            Op::Unary(Unary::Log | Unary::Sqrt) => [None, None],
            // y·(g - Σ y·g) over a row of n.
            Op::RowSoftmax => each(finite(2.0 * g * output * (1.0 + out.1 as f64 * output))),
            // (g - mean g - ŷ·mean(g·ŷ)) / std: 1/std is at most 1/√ε < 317.
            Op::LayerNorm => each(finite(g * (2.0 + output * output) * 640.0)),
            // Each table row sums the blame of each place its row was used.
            Op::Embed(ids) => each(finite(product_bound(g, 1.0, ids.len()))),
            // (softmax - one-hot)·g/n, with each softmax element in [0, 1].
            Op::CrossEntropy(_) => each(finite(4.0 * g)),
        }
    }

    /// The per-link rule: given the inputs, the output and the blame that
    /// reached the output, the blame each input receives (`None` where no
    /// blame flows).
    pub fn per_link_rule(
        &self,
        inputs: &[&Tensor],
        shapes: &[(usize, usize)],
        output: &Tensor,
        kept: Option<&[f64]>,
        blame: &Tensor,
    ) -> Blames {
        let g = blame.view();
        match self {
            Op::Leaf => smallvec![],
            Op::Elementwise(kind) => {
                let (a, b) = (inputs[0], inputs[1]);
                let (ga, gb) = match kind {
                    // The blame passes through unchanged: share it where no
                    // broadcast has to be summed back.
                    Elementwise::Add => {
                        return smallvec![
                            Some(pass_through(blame, a, shapes[0])),
                            Some(pass_through(blame, b, shapes[1]))
                        ];
                    }
                    Elementwise::Sub => (g.to_owned(), g.mapv(|x| -x)),
                    Elementwise::Mul => (
                        broadcast_zip(&g, &b.view(), |g, b| g * b),
                        broadcast_zip(&g, &a.view(), |g, a| g * a),
                    ),
                    Elementwise::Div => {
                        let ga = broadcast_zip(&g, &b.view(), |g, b| g / b);
                        let (out_rows, out_cols) = g.dim();
                        let a_full = a.view();
                        let a_full = a_full
                            .broadcast((out_rows, out_cols))
                            .expect("shape checked forward");
                        let mut gb = broadcast_zip(&g, &b.view(), |g, b| -g / (b * b));
                        gb.zip_mut_with(&a_full, |x, a| *x *= a);
                        (ga, gb)
                    }
                };
                smallvec![
                    Some(reduce_to(ga, a, shapes[0])),
                    Some(reduce_to(gb, b, shapes[1]))
                ]
            }
            Op::Neg => smallvec![Some(map(blame, |x| -x))],
            Op::MatMul => {
                let (a, b) = (inputs[0].view(), inputs[1].view());
                smallvec![
                    Some(Tensor::matrix(product(g.view(), b.t()))),
                    Some(Tensor::matrix(product(a.t(), g.view()))),
                ]
            }
            Op::Transpose => smallvec![Some(Tensor::matrix(g.t().to_owned()))],
            Op::Sum | Op::Mean => {
                let shape = shapes[0];
                let each = match self {
                    Op::Mean => g[(0, 0)] / (shape.0 * shape.1) as f64,
                    _ => g[(0, 0)],
                };
                smallvec![Some(Tensor::matrix(Array2::from_elem(shape, each)))]
            }
            Op::RowSum | Op::RowMean => {
                let shape = shapes[0];
                let scale = if *self == Op::RowMean {
                    1.0 / shape.1 as f64
                } else {
                    1.0
                };
                let out = g
                    .broadcast(shape)
                    .expect("m×1 against m×n")
                    .mapv(|x| x * scale);
                smallvec![Some(Tensor::matrix(out))]
            }
            Op::ColSum => {
                let shape = shapes[0];
                smallvec![Some(Tensor::matrix(
                    g.broadcast(shape).expect("1×n against m×n").to_owned(),
                ))]
            }
            Op::RowSoftmax => {
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
            Op::Unary(u) => {
                let out = match (inputs[0], output) {
                    (Tensor::Scalar(x), Tensor::Scalar(y)) => {
                        Tensor::Scalar(g[(0, 0)] * u.slope(*x, *y))
                    }
                    _ => {
                        let (x, y) = (inputs[0].view(), output.view());
                        let d = fixed_kind!(
                            u,
                            Unary {
                                Tanh,
                                Exp,
                                Log,
                                Sqrt,
                                ReLU,
                                Sigmoid,
                                Abs
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
            Op::LayerNorm => {
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
                        None => row_statistics(&inputs[0].view().row(row)).1,
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
            Op::Embed(ids) => {
                let mut out = Array2::zeros(shapes[0]);
                for (t, &id) in ids.iter().enumerate() {
                    let mut row = out.row_mut(id);
                    row += &g.row(t);
                }
                smallvec![Some(Tensor::matrix(out))]
            }
            Op::CrossEntropy(targets) => {
                let (rows, cols) = shapes[0];
                let scale = g[(0, 0)] / targets.len() as f64;
                let mut out = Array2::zeros((rows, cols));
                for (i, mut o) in out.rows_mut().into_iter().enumerate() {
                    let o = o.as_slice_mut().expect("a row of a fresh matrix");
                    // The forward's shifted exps and their sum, kept or found again.
                    let total = match kept {
                        Some(kept) => {
                            o.copy_from_slice(&kept[i * cols..(i + 1) * cols]);
                            kept[rows * cols + i]
                        }
                        None => shifted_exp(inputs[0].view().row(i), o).1,
                    };
                    for e in o.iter_mut() {
                        *e = *e / total * scale;
                    }
                    o[targets[i]] -= scale;
                }
                smallvec![Some(Tensor::matrix(out))]
            }
            Op::RowRange(first, count) => {
                let mut out = Array2::zeros(shapes[0]);
                out.slice_mut(s![*first..first + count, ..]).assign(&g);
                smallvec![Some(Tensor::matrix(out))]
            }
            Op::ColRange(first, count) => {
                let mut out = Array2::zeros(shapes[0]);
                out.slice_mut(s![.., *first..first + count]).assign(&g);
                smallvec![Some(Tensor::matrix(out))]
            }
            Op::HStack => {
                let left = shapes[0].1;
                smallvec![
                    Some(Tensor::matrix(g.slice(s![.., ..left]).to_owned())),
                    Some(Tensor::matrix(g.slice(s![.., left..]).to_owned())),
                ]
            }
            Op::VStack => {
                let top = shapes[0].0;
                smallvec![
                    Some(Tensor::matrix(g.slice(s![..top, ..]).to_owned())),
                    Some(Tensor::matrix(g.slice(s![top.., ..]).to_owned())),
                ]
            }
            Op::Element(i, j) => {
                let mut out = Array2::zeros(shapes[0]);
                out[(*i, *j)] = g[(0, 0)];
                smallvec![Some(Tensor::matrix(out))]
            }
            Op::Literal(_, cols) => (0..inputs.len())
                .map(|k| Some(Tensor::Scalar(g[(k / cols, k % cols)])))
                .collect(),
        }
    }
}

fn map(t: &Tensor, f: impl Fn(f64) -> f64) -> Tensor {
    match t {
        Tensor::Scalar(x) => Tensor::Scalar(f(*x)),
        Tensor::Matrix(m) => Tensor::matrix(m.mapv(f)),
    }
}

fn verb(kind: Elementwise) -> &'static str {
    match kind {
        Elementwise::Add => "add",
        Elementwise::Sub => "subtract",
        Elementwise::Div => "divide",
        Elementwise::Mul => "multiply elementwise",
    }
}

/// The shape two operands broadcast to, if they do.
pub fn broadcast_shape(a: (usize, usize), b: (usize, usize)) -> Option<(usize, usize)> {
    let dim = |x: usize, y: usize| {
        if x == y {
            Some(x)
        } else if x == 1 {
            Some(y)
        } else if y == 1 {
            Some(x)
        } else {
            None
        }
    };
    let shape = (dim(a.0, b.0)?, dim(a.1, b.1)?);
    // A 1×n row stretches down, an m×1 column across, a 1×1 both ways; a 1×n
    // row against an m×1 column is not one of the allowed forms.
    let stretches =
        |x: (usize, usize)| x == shape || x == (1, 1) || x == (1, shape.1) || x == (shape.0, 1);
    (stretches(a) && stretches(b) && (a == shape || b == shape)).then_some(shape)
}

fn elementwise(kind: Elementwise, a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
    if let (Tensor::Scalar(x), Tensor::Scalar(y)) = (a, b) {
        return Ok(Tensor::Scalar(kind.apply(*x, *y)));
    }
    let (sa, sb) = (a.shape(), b.shape());
    let shape = match (a, b) {
        (Tensor::Scalar(_), _) => sb,
        (_, Tensor::Scalar(_)) => sa,
        _ => broadcast_shape(sa, sb).ok_or_else(|| {
            OpError::new(format!("cannot {} {} and {}", verb(kind), describe_shape(a), describe_shape(b)))
                .label(0, format!("this is {}", describe_shape(a)))
                .label(1, format!("this is {}", describe_shape(b)))
                .hint("the shapes must be equal, or one side a number, a 1×1, a 1×n row or an m×1 column that matches the other")
        })?,
    };
    let (a, b) = (a.view(), b.view());
    let out = fixed_kind!(kind, Elementwise { Add, Sub, Div, Mul }, |kind| {
        combine(&a, &b, shape, |x, y| kind.apply(x, y))
    });
    Ok(Tensor::matrix(out))
}

/// `a` and `b`, each broadcast to `shape`, combined element by element. The
/// common cases (equal shapes, or one side a single number) run over plain
/// slices, which vectorise; the rest goes through ndarray's `Zip`.
pub fn combine(
    a: &ArrayView2<f64>,
    b: &ArrayView2<f64>,
    shape: (usize, usize),
    f: impl Fn(f64, f64) -> f64,
) -> Array2<f64> {
    fn whole<'a>(v: &ArrayView2<'a, f64>, shape: (usize, usize)) -> Option<&'a [f64]> {
        if v.dim() == shape { v.to_slice() } else { None }
    }
    let single = |v: &ArrayView2<f64>| (v.dim() == (1, 1)).then(|| v[(0, 0)]);
    let values: Option<Vec<f64>> = match (whole(a, shape), whole(b, shape)) {
        (Some(xs), Some(ys)) => Some(xs.iter().zip(ys).map(|(&x, &y)| f(x, y)).collect()),
        (Some(xs), None) => single(b).map(|y| xs.iter().map(|&x| f(x, y)).collect()),
        (None, Some(ys)) => single(a).map(|x| ys.iter().map(|&y| f(x, y)).collect()),
        (None, None) => None,
    };
    if let Some(values) = values {
        return Array2::from_shape_vec(shape, values).expect("the shape's own size");
    }
    let a = a.broadcast(shape).expect("shape checked");
    let b = b.broadcast(shape).expect("shape checked");
    Zip::from(&a).and(&b).map_collect(|&x, &y| f(x, y))
}

/// Each element of the blame `g` times the slope at its input `x` and
/// output `y` (all three of one shape).
fn times_slope(
    g: &ArrayView2<f64>,
    x: &ArrayView2<f64>,
    y: &ArrayView2<f64>,
    slope: impl Fn(f64, f64) -> f64,
) -> Array2<f64> {
    if let (Some(gs), Some(xs), Some(ys)) = (g.to_slice(), x.to_slice(), y.to_slice()) {
        let values = gs
            .iter()
            .zip(xs)
            .zip(ys)
            .map(|((&g, &x), &y)| g * slope(x, y))
            .collect();
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
    slope: impl Fn(f64) -> f64,
) -> Array2<f64> {
    if let (Some(gs), Some(ys)) = (g.to_slice(), y.to_slice()) {
        let values = gs.iter().zip(ys).map(|(&g, &y)| g * slope(y)).collect();
        return Array2::from_shape_vec(g.dim(), values).expect("the blame's own size");
    }
    let mut d = g.to_owned();
    Zip::from(&mut d).and(y).for_each(|d, &y| *d *= slope(y));
    d
}

/// `g` combined elementwise with `other` broadcast to `g`'s shape.
fn broadcast_zip(
    g: &ArrayView2<f64>,
    other: &ArrayView2<f64>,
    f: impl Fn(f64, f64) -> f64,
) -> Array2<f64> {
    combine(g, other, g.dim(), f)
}

/// The blame of an input to `+`, of that shape: the output's blame itself
/// (shared, not copied) when the shapes match, else summed back over the
/// broadcast.
fn pass_through(blame: &Tensor, input: &Tensor, shape: (usize, usize)) -> Tensor {
    match (blame, input) {
        (Tensor::Matrix(_), Tensor::Matrix(_)) if shape == blame.shape() => blame.clone(),
        _ => reduce_to(blame.view().to_owned(), input, shape),
    }
}

/// Sums blame back over the axes along which `input`, of that shape, was
/// stretched (of `input` itself only whether it is a number is read).
fn reduce_to(mut blame: Array2<f64>, input: &Tensor, (rows, cols): (usize, usize)) -> Tensor {
    if let Tensor::Scalar(_) = input {
        return Tensor::Scalar(blame.sum());
    }
    if blame.nrows() != rows {
        blame = blame.sum_axis(Axis(0)).insert_axis(Axis(0));
    }
    if blame.ncols() != cols {
        blame = blame.sum_axis(Axis(1)).insert_axis(Axis(1));
    }
    Tensor::matrix(blame)
}

fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.1 != sb.0 {
        return Err(OpError::new(format!(
            "cannot multiply a {}×{} by a {}×{}: the left has {} columns but the right has {} rows",
            sa.0, sa.1, sb.0, sb.1, sa.1, sb.0
        ))
        .label(0, format!("this is a {}×{}", sa.0, sa.1))
        .label(1, format!("this is a {}×{}", sb.0, sb.1))
        .hint("`*` of two matrices is the matrix product; use `Hadamard(a, b)` to multiply element by element"));
    }
    Ok(Tensor::matrix(product(a.view(), b.view())))
}

fn row_softmax(a: &Tensor) -> Result<Tensor, OpError> {
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
fn shifted_exp(row: ArrayView1<f64>, out: &mut [f64]) -> (f64, f64) {
    // A row of a standard-layout matrix is a plain slice: read it as one.
    let max = match row.as_slice() {
        Some(xs) => shift_by_max(xs.iter().copied(), out),
        None => shift_by_max(row.iter().copied(), out),
    };
    super::kernels::exp_in_place(out);
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

fn stack(axis: Axis, a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// Blame adds up the same whether the blame held is shared or not, and
    /// whether the share is; no other holder of either sees a change.
    #[test]
    fn accumulate_adds_without_touching_other_holders() {
        let held = array![[1.0, 2.0], [3.0, 4.0]];
        let share = array![[0.5, -1.0], [1e-17, 8.0]];
        let sum = array![[1.5, 1.0], [3.0, 12.0]];
        for held_shared in [false, true] {
            for share_shared in [false, true] {
                let mut blame = Tensor::matrix(held.clone());
                let other_holder = held_shared.then(|| blame.clone());
                let given = Tensor::matrix(share.clone());
                let share_holder = share_shared.then(|| given.clone());
                blame.accumulate(given);
                assert_eq!(
                    blame.view(),
                    sum,
                    "held shared {held_shared}, share shared {share_shared}"
                );
                if let Some(h) = other_holder {
                    assert_eq!(h.view(), held);
                }
                if let Some(h) = share_holder {
                    assert_eq!(h.view(), share);
                }
            }
        }
        // A number's share spreads over the matrix.
        let mut blame = Tensor::matrix(held.clone());
        let _holder = blame.clone();
        blame.accumulate(Tensor::Scalar(1.0));
        assert_eq!(blame.view(), held.mapv(|x| x + 1.0));
    }
}
