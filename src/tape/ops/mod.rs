//! Every recorded operation: its name, its forward computation, its
//! per-link rule (the local derivative the reverse walk applies), what the
//! rule reads, and the bounds that spare a NaN scan.
//!
//! The operations live by family, each operation's forward beside its
//! per-link rule: the operators (`operators.rs`), the elementwise
//! functions (`functions.rs`), the reductions (`reductions.rs`), the
//! row-wise softmax, layer norm and cross-entropy (`rows.rs`), and the
//! operations that only move elements (`selection.rs`). This file holds the
//! values (`Tensor`), the `Op` enum and its dispatch to the families, and
//! the facts that are a line per operation (what the rule reads, bounds).
//!
//! Forward functions are pure: they take the input values and return the
//! output, so that the same code runs when a statement executes and when a
//! tape is replayed. Selectors (row numbers, ids, targets) live inside the
//! [`Op`] itself; blame never flows to them.

use std::rc::Rc;

use ndarray::Axis;
use smallvec::smallvec;

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

mod functions;
mod operators;
mod reductions;
mod rows;
mod selection;
mod tensor;

pub use functions::Unary;
pub use operators::{Elementwise, broadcast_shape, combine};
pub use rows::LAYER_NORM_EPSILON;
pub use tensor::{Blames, Kept, OpError, Tensor, describe_shape};

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
    /// `Power(a, p)`, with its exponent; and for an Integer exponent of
    /// more than 2^53 (where every f64 is even), whether it is odd.
    Power(f64, Option<bool>),
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

impl Op {
    /// The name a learner knows the operation by.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Leaf => "leaf",
            Op::Elementwise(Elementwise::Add) => "+",
            Op::Elementwise(Elementwise::Sub) => "-",
            Op::Elementwise(Elementwise::Div) => "/",
            Op::Elementwise(Elementwise::Mul) => "*",
            Op::Elementwise(Elementwise::Hadamard) => "Hadamard",
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
            Op::Power(..) => "Power",
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
        Ok(match self {
            Op::Leaf => inputs[0].clone(),
            Op::Elementwise(kind) => operators::elementwise_forward(*kind, inputs[0], inputs[1])?,
            Op::Neg => operators::neg_forward(inputs[0]),
            Op::MatMul => operators::matmul_forward(inputs[0], inputs[1])?,
            Op::Unary(u) => functions::forward(*u, inputs[0]),
            Op::Power(p, odd) => functions::power_forward(*p, *odd, inputs[0]),
            Op::Sum => reductions::sum_forward(inputs[0], false),
            Op::Mean => reductions::sum_forward(inputs[0], true),
            Op::RowSum => reductions::row_sum_forward(inputs[0], false),
            Op::RowMean => reductions::row_sum_forward(inputs[0], true),
            Op::ColSum => reductions::col_sum_forward(inputs[0]),
            Op::RowSoftmax => rows::row_softmax_forward(inputs[0])?,
            Op::LayerNorm | Op::CrossEntropy(_) => self.forward_keeping(inputs)?.0,
            Op::Transpose => selection::transpose_forward(inputs[0]),
            Op::Embed(ids) => selection::embed_forward(inputs[0], ids),
            Op::RowRange(first, count) => selection::range_forward(inputs[0], true, *first, *count),
            Op::ColRange(first, count) => {
                selection::range_forward(inputs[0], false, *first, *count)
            }
            Op::HStack => selection::stack_forward(Axis(1), inputs[0], inputs[1])?,
            Op::VStack => selection::stack_forward(Axis(0), inputs[0], inputs[1])?,
            Op::Element(i, j) => selection::element_forward(inputs[0], *i, *j),
            Op::Literal(rows, cols) => selection::literal_forward(inputs, *rows, *cols),
        })
    }

    /// Whether [`Op::forward_keeping`] keeps anything: `CrossEntropy` and
    /// `LayerNorm`.
    pub fn keeps(&self) -> bool {
        matches!(self, Op::CrossEntropy(_) | Op::LayerNorm)
    }

    /// The most elements the output of the operation on inputs of these
    /// shapes holds, with what [`Op::forward_keeping`] keeps beside it:
    /// the memory it asks for before it runs
    /// ([`crate::memory::room_for`]).
    pub fn most_elements(&self, shapes: &[(usize, usize)]) -> usize {
        let size = |(rows, cols): (usize, usize)| rows.saturating_mul(cols);
        let largest = shapes.iter().map(|&s| size(s)).max().unwrap_or(1);
        match self {
            Op::Leaf
            | Op::Elementwise(_)
            | Op::Neg
            | Op::Transpose
            | Op::RowSoftmax
            | Op::Unary(_)
            | Op::Power(..) => largest,
            Op::MatMul => size((shapes[0].0, shapes[1].1)),
            Op::Sum | Op::Mean | Op::Element(..) => 1,
            Op::RowSum | Op::RowMean => shapes[0].0,
            Op::ColSum => shapes[0].1,
            Op::Embed(ids) => size((ids.len(), shapes[0].1)),
            Op::RowRange(_, count) => size((*count, shapes[0].1)),
            Op::ColRange(_, count) => size((shapes[0].0, *count)),
            Op::HStack | Op::VStack => shapes.iter().map(|&s| size(s)).sum(),
            Op::Literal(rows, cols) => size((*rows, *cols)),
            // LayerNorm keeps a number per row beside its output;
            // CrossEntropy gives one number and keeps the probabilities
            // and a number per row and one more.
            Op::LayerNorm | Op::CrossEntropy(_) => {
                largest.saturating_add(shapes[0].0).saturating_add(2)
            }
        }
    }

    /// [`Op::forward`], and what it worked out on the way that the per-link
    /// rule would otherwise work out again (see [`Kept`]).
    pub fn forward_keeping(&self, inputs: &[&Tensor]) -> Result<(Tensor, Option<Kept>), OpError> {
        match self {
            Op::CrossEntropy(targets) => Ok(rows::cross_entropy_forward(inputs[0], targets)),
            Op::LayerNorm => Ok(rows::layer_norm_forward(inputs[0])),
            _ => Ok((self.forward(inputs)?, None)),
        }
    }

    /// What the per-link rule reads besides the blame. The tape lets go
    /// early of a value that no rule reads
    /// ([`crate::tape::Tape::release_unread`]).
    pub fn reads(&self) -> Reads {
        let (inputs, output) = match self {
            Op::Elementwise(Elementwise::Mul | Elementwise::Hadamard | Elementwise::Div)
            | Op::MatMul
            | Op::CrossEntropy(_) => (true, false),
            Op::LayerNorm => (true, true),
            Op::RowSoftmax => (false, true),
            Op::Unary(u) => (u.slope_reads_input(), true),
            Op::Power(..) => (true, false),
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
            Op::Elementwise(Elementwise::Mul | Elementwise::Hadamard) => {
                finite(product_bound(input(0)?, input(1)?, 1))
            }
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
            | Op::Unary(Unary::Exp | Unary::Log | Unary::Sqrt | Unary::Sqr)
            | Op::Power(..)
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
            Op::Elementwise(Elementwise::Mul | Elementwise::Hadamard) => {
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
            Op::Unary(Unary::Log | Unary::Sqrt | Unary::Sqr) | Op::Power(..) => [None, None],
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

    /// The element of its input (0-based row and column) that the whole
    /// of an operation's share lands on: an element read's. The walk adds
    /// such a share in place instead of making a matrix of zeros around it.
    pub fn one_element(&self) -> Option<(usize, usize)> {
        match self {
            Op::Element(i, j) => Some((*i, *j)),
            _ => None,
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
        match self {
            Op::Leaf => smallvec![],
            Op::Elementwise(kind) => operators::elementwise_rule(*kind, inputs, shapes, blame),
            Op::Neg => operators::neg_rule(blame),
            Op::MatMul => operators::matmul_rule(inputs, blame),
            Op::Unary(u) => functions::rule(*u, inputs[0], output, blame),
            Op::Power(p, odd) => functions::power_rule(*p, *odd, inputs[0], blame),
            Op::Sum => reductions::sum_rule(shapes[0], blame, false),
            Op::Mean => reductions::sum_rule(shapes[0], blame, true),
            Op::RowSum => reductions::row_sum_rule(shapes[0], blame, false),
            Op::RowMean => reductions::row_sum_rule(shapes[0], blame, true),
            Op::ColSum => reductions::col_sum_rule(shapes[0], blame),
            Op::RowSoftmax => rows::row_softmax_rule(output, blame),
            Op::LayerNorm => rows::layer_norm_rule(inputs[0], output, kept, blame),
            Op::CrossEntropy(targets) => {
                rows::cross_entropy_rule(inputs[0], shapes[0], targets, kept, blame)
            }
            Op::Transpose => selection::transpose_rule(blame),
            Op::Embed(ids) => selection::embed_rule(shapes[0], ids, blame),
            Op::RowRange(first, count) => {
                selection::range_rule(shapes[0], true, *first, *count, blame)
            }
            Op::ColRange(first, count) => {
                selection::range_rule(shapes[0], false, *first, *count, blame)
            }
            Op::HStack => selection::stack_rule(Axis(1), shapes, blame),
            Op::VStack => selection::stack_rule(Axis(0), shapes, blame),
            Op::Element(i, j) => selection::element_rule(shapes[0], *i, *j, blame),
            Op::Literal(_, cols) => selection::literal_rule(inputs.len(), *cols, blame),
        }
    }
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

    /// Every operation's output, with what it keeps, holds no more
    /// elements than `most_elements` says: the memory asked for before it
    /// runs is never less than it takes.
    #[test]
    fn most_elements_bounds_every_output() {
        let m = |rows: usize, cols: usize| {
            Tensor::matrix(ndarray::Array2::from_shape_fn((rows, cols), |(r, c)| {
                (r * cols + c) as f64 * 0.1 + 0.5
            }))
        };
        let (a, b, row, col, x) = (m(3, 4), m(3, 4), m(1, 4), m(3, 1), Tensor::Scalar(2.0));
        let (w, square) = (m(4, 5), m(3, 3));
        let cases: Vec<(Op, Vec<&Tensor>)> = vec![
            (Op::Leaf, vec![&a]),
            (Op::Elementwise(Elementwise::Add), vec![&a, &b]),
            (Op::Elementwise(Elementwise::Sub), vec![&row, &a]),
            (Op::Elementwise(Elementwise::Div), vec![&a, &col]),
            (Op::Elementwise(Elementwise::Mul), vec![&x, &a]),
            (Op::Elementwise(Elementwise::Hadamard), vec![&a, &b]),
            (Op::Neg, vec![&a]),
            (Op::MatMul, vec![&a, &w]),
            (Op::MatMul, vec![&col, &row]),
            (Op::Transpose, vec![&a]),
            (Op::Sum, vec![&a]),
            (Op::Mean, vec![&a]),
            (Op::RowSum, vec![&a]),
            (Op::RowMean, vec![&a]),
            (Op::ColSum, vec![&a]),
            (Op::RowSoftmax, vec![&a]),
            (Op::Unary(Unary::Tanh), vec![&a]),
            (Op::Unary(Unary::Sqr), vec![&x]),
            (Op::Power(3.0, None), vec![&a]),
            (Op::LayerNorm, vec![&a]),
            (Op::Embed(Rc::new(vec![0, 2, 2, 1, 0])), vec![&square]),
            (Op::CrossEntropy(Rc::new(vec![0, 3, 1])), vec![&a]),
            (Op::CrossEntropy(Rc::new(vec![0, 0, 0])), vec![&col]),
            (Op::LayerNorm, vec![&col]),
            (Op::RowRange(1, 2), vec![&a]),
            (Op::ColRange(0, 3), vec![&a]),
            (Op::HStack, vec![&a, &col]),
            (Op::VStack, vec![&a, &row]),
            (Op::Element(1, 2), vec![&a]),
            (Op::Literal(2, 2), vec![&x, &x, &x, &x]),
        ];
        for (op, inputs) in cases {
            let shapes: Vec<_> = inputs.iter().map(|t| t.shape()).collect();
            let (output, kept) = op.forward_keeping(&inputs).expect("inputs that fit");
            let taken = output.len() + kept.map_or(0, |k| k.len());
            let bound = op.most_elements(&shapes);
            assert!(taken <= bound, "{op:?}: {taken} elements, bound {bound}");
        }
    }
}
