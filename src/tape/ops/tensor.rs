//! The values operations take and give (`Tensor`), and what the families
//! of operations share: the blames a rule gives, what a forward keeps, why
//! an operation cannot run.

use std::rc::Rc;

use ndarray::{Array2, ArrayView2};
use smallvec::SmallVec;

/// The blame each input receives from one record (`None`: no blame flows).
pub type Blames = SmallVec<[Option<Tensor>; 2]>;

/// Numbers an operation's forward worked out that its per-link rule needs
/// again ([`super::Op::forward_keeping`]): for `CrossEntropy`, each row's shifted
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
                    && !super::super::kernels::any_nan(values)
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
    /// any is infinite (see [`super::super::kernels::bound`]).
    pub fn bound(&self) -> f64 {
        match self {
            Tensor::Scalar(x) => x.abs(),
            Tensor::Matrix(m) => match m.as_slice_memory_order() {
                Some(values) => super::super::kernels::bound(values),
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
    pub(super) fn new(message: impl Into<String>) -> OpError {
        OpError {
            message: message.into(),
            labels: Vec::new(),
            hint: None,
        }
    }
    pub(super) fn label(mut self, input: usize, text: impl Into<String>) -> OpError {
        self.labels.push((input, text.into()));
        self
    }
    pub(super) fn hint(mut self, text: impl Into<String>) -> OpError {
        self.hint = Some(text.into());
        self
    }
}

pub(super) fn map(t: &Tensor, f: impl Fn(f64) -> f64) -> Tensor {
    match t {
        Tensor::Scalar(x) => Tensor::Scalar(f(*x)),
        Tensor::Matrix(m) => Tensor::matrix(m.mapv(f)),
    }
}
