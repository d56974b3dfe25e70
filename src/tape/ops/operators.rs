//! The operators: `+ - * /` elementwise with broadcasting (and `*` of a
//! number, and `Hadamard`), unary minus, and the matrix product. Each
//! operation's forward and its per-link rule are side by side.

use ndarray::{Array2, ArrayView2, Axis, Zip};
use smallvec::smallvec;

use super::super::kernels::filled;
use super::super::matmul::{product, two_products};
use super::tensor::{Blames, OpError, Tensor, describe_shape, map};

/// Elementwise operations of two values, which broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elementwise {
    Add,
    Sub,
    Div,
    /// `*` of a number with anything.
    Mul,
    /// `Hadamard(a, b)`: the same arithmetic as `Mul`, named as the call.
    Hadamard,
}

impl Elementwise {
    #[inline(always)]
    fn apply(self, x: f64, y: f64) -> f64 {
        match self {
            Elementwise::Add => x + y,
            Elementwise::Sub => x - y,
            Elementwise::Div => x / y,
            Elementwise::Mul | Elementwise::Hadamard => x * y,
        }
    }
}

fn verb(kind: Elementwise) -> &'static str {
    match kind {
        Elementwise::Add => "add",
        Elementwise::Sub => "subtract",
        Elementwise::Div => "divide",
        Elementwise::Mul | Elementwise::Hadamard => "multiply elementwise",
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

/// `a + b`, `a - b`, `a / b` or `Hadamard(a, b)`, broadcast.
pub(super) fn elementwise_forward(
    kind: Elementwise,
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor, OpError> {
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
    let out = fixed_kind!(
        kind,
        Elementwise {
            Add,
            Sub,
            Div,
            Mul,
            Hadamard
        },
        |kind| combine(&a, &b, shape, |x, y| kind.apply(x, y))
    );
    Ok(Tensor::matrix(out))
}

/// The blame of `a` and `b` of an elementwise operation: through `+` and `-`
/// as it is (negated for `-b`), through `*` times the other side, through
/// `/` by the quotient rule; summed back where a side was broadcast.
pub(super) fn elementwise_rule(
    kind: Elementwise,
    inputs: &[&Tensor],
    shapes: &[(usize, usize)],
    blame: &Tensor,
) -> Blames {
    let g = blame.view();
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
        Elementwise::Mul | Elementwise::Hadamard => (
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

/// `-a`.
pub(super) fn neg_forward(a: &Tensor) -> Tensor {
    map(a, |x| -x)
}

/// The blame of `a` is the blame of `-a`, negated.
pub(super) fn neg_rule(blame: &Tensor) -> Blames {
    smallvec![Some(map(blame, |x| -x))]
}

/// `a * b` of two matrices: the matrix product.
pub(super) fn matmul_forward(a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.1 != sb.0 {
        let error = OpError::new(format!(
            "cannot multiply a {}×{} by a {}×{}: the left has {} but the right has {}",
            sa.0,
            sa.1,
            sb.0,
            sb.1,
            crate::diagnostic::counted(sa.1, "column"),
            crate::diagnostic::counted(sb.0, "row")
        ))
        .label(0, format!("this is a {}×{}", sa.0, sa.1))
        .label(1, format!("this is a {}×{}", sb.0, sb.1));
        // Suggest what would fit: a transposed side, or the elementwise
        // product of two matrices of one shape; where nothing does, the rule.
        let hint = if sa == sb {
            format!(
                "`*` of two matrices is the matrix product: use `Hadamard(a, b)` to multiply \
                 element by element, or `a * Transpose(b)` for a {}×{} by a {}×{}",
                sa.0, sa.1, sb.1, sb.0
            )
        } else if sa.1 == sb.1 {
            format!(
                "`a * Transpose(b)` fits: a {}×{} by a {}×{}",
                sa.0, sa.1, sb.1, sb.0
            )
        } else if sa.0 == sb.0 {
            format!(
                "`Transpose(a) * b` fits: a {}×{} by a {}×{}",
                sa.1, sa.0, sb.0, sb.1
            )
        } else {
            format!(
                "`*` of two matrices is the matrix product, which needs as many rows on the \
                 right as columns on the left: a {}×{} can multiply only a {}×n",
                sa.0, sa.1, sa.1
            )
        };
        return Err(error.hint(hint));
    }
    Ok(Tensor::matrix(product(a.view(), b.view())))
}

/// The blame of `a` is G·bᵀ, of `b` is aᵀ·G.
pub(super) fn matmul_rule(inputs: &[&Tensor], blame: &Tensor) -> Blames {
    let g = blame.view();
    let (a, b) = (inputs[0].view(), inputs[1].view());
    let (of_a, of_b) = two_products((g.view(), b.t()), (a.t(), g.view()));
    smallvec![Some(Tensor::matrix(of_a)), Some(Tensor::matrix(of_b))]
}

/// `a` and `b`, each broadcast to `shape`, combined element by element. The
/// common cases (equal shapes, or one side a single number) run over plain
/// slices, which vectorise; the rest goes through ndarray's `Zip`.
pub fn combine(
    a: &ArrayView2<f64>,
    b: &ArrayView2<f64>,
    shape: (usize, usize),
    f: impl Fn(f64, f64) -> f64 + Sync,
) -> Array2<f64> {
    fn whole<'a>(v: &ArrayView2<'a, f64>, shape: (usize, usize)) -> Option<&'a [f64]> {
        if v.dim() == shape { v.to_slice() } else { None }
    }
    let single = |v: &ArrayView2<f64>| (v.dim() == (1, 1)).then(|| v[(0, 0)]);
    let len = shape.0 * shape.1;
    let f = &f;
    let values: Option<Vec<f64>> = match (whole(a, shape), whole(b, shape)) {
        (Some(xs), Some(ys)) => Some(filled(len, |at| {
            xs[at.clone()].iter().zip(&ys[at]).map(|(&x, &y)| f(x, y))
        })),
        (Some(xs), None) => {
            single(b).map(|y| filled(len, |at| xs[at].iter().map(move |&x| f(x, y))))
        }
        (None, Some(ys)) => {
            single(a).map(|x| filled(len, |at| ys[at].iter().map(move |&y| f(x, y))))
        }
        (None, None) => None,
    };
    if let Some(values) = values {
        return Array2::from_shape_vec(shape, values).expect("the shape's own size");
    }
    let a = a.broadcast(shape).expect("shape checked");
    let b = b.broadcast(shape).expect("shape checked");
    Zip::from(&a).and(&b).map_collect(|&x, &y| f(x, y))
}

/// `g` combined elementwise with `other` broadcast to `g`'s shape.
fn broadcast_zip(
    g: &ArrayView2<f64>,
    other: &ArrayView2<f64>,
    f: impl Fn(f64, f64) -> f64 + Sync,
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
pub(super) fn reduce_to(
    mut blame: Array2<f64>,
    input: &Tensor,
    (rows, cols): (usize, usize),
) -> Tensor {
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
