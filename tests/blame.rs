//! Every recorded operation's per-link rule against central finite
//! differences in f64, over random shapes and values, including each
//! broadcast form. The loss is `Sum(Hadamard(output, W))` for a random W, so
//! the blame reaching the output is W and every element matters.

mod common;

use std::rc::Rc;

use common::{run_within, shape};
use ndarray::Array2;
use tapec::eval::random::Random;
use tapec::tape::ops::{Elementwise, Op, Tensor, Unary};

const STEP: f64 = 1e-6;

fn matrix(rng: &mut Random, rows: usize, cols: usize) -> Tensor {
    Tensor::matrix(Array2::from_shape_simple_fn((rows, cols), || rng.normal()))
}

fn positive(rng: &mut Random, rows: usize, cols: usize) -> Tensor {
    Tensor::matrix(Array2::from_shape_simple_fn((rows, cols), || {
        0.5 + 2.0 * rng.uniform()
    }))
}

fn loss(op: &Op, inputs: &[Tensor], weights: &Tensor) -> f64 {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let out = op.forward(&refs).expect("forward");
    (&out.view() * &weights.view()).sum()
}

/// Every element's bits, so that -0 and +0 differ.
fn bits(t: &Tensor) -> Vec<u64> {
    t.view().iter().map(|x| x.to_bits()).collect()
}

fn nudged(t: &Tensor, k: usize, delta: f64) -> Tensor {
    match t {
        Tensor::Scalar(x) => Tensor::Scalar(x + delta),
        Tensor::Matrix(m) => {
            let mut m = (**m).clone();
            let cols = m.ncols();
            m[(k / cols, k % cols)] += delta;
            Tensor::Matrix(Rc::new(m))
        }
    }
}

/// Checks the per-link rule of `op` at `inputs`; `selectors` are input
/// positions whose blame is not checked (none here: selectors live in the op).
fn check(op: Op, inputs: Vec<Tensor>, rng: &mut Random) {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let out = op.forward(&refs).expect("forward");
    let weights = match &out {
        Tensor::Scalar(_) => Tensor::Scalar(rng.normal()),
        Tensor::Matrix(m) => matrix(rng, m.nrows(), m.ncols()),
    };
    let shapes: Vec<(usize, usize)> = inputs.iter().map(Tensor::shape).collect();
    let blame = op.per_link_rule(&refs, &shapes, &out, None, &weights);
    assert_eq!(blame.len(), inputs.len(), "{op:?}: one blame per input");
    // A rule that does not read its inputs' numbers, or its output's, gives
    // the same blame with empty stand-ins for them, as the tape passes once
    // it has let go of such values.
    let stand_in = |t: &Tensor| match t {
        Tensor::Matrix(_) => Tensor::matrix(Array2::zeros((0, 0))),
        number => number.clone(),
    };
    let gone: Vec<Tensor> = inputs.iter().map(stand_in).collect();
    let gone_out = stand_in(&out);
    let again = op.per_link_rule(
        &if op.reads().inputs {
            refs.clone()
        } else {
            gone.iter().collect()
        },
        &shapes,
        if op.reads().output { &out } else { &gone_out },
        None,
        &weights,
    );
    assert_eq!(
        again, blame,
        "{op:?}: the same blame without what it does not read"
    );
    // What the forward keeps spares the rule its own work, bit for bit, and
    // with it the rule reads no input's numbers.
    let (kept_out, kept) = op.forward_keeping(&refs).expect("forward");
    assert_eq!(
        bits(&kept_out),
        bits(&out),
        "{op:?}: the same output when keeping"
    );
    if let Some(kept) = kept {
        let with_kept = op.per_link_rule(
            &gone.iter().collect::<Vec<_>>(),
            &shapes,
            &out,
            Some(&kept),
            &weights,
        );
        for (a, b) in with_kept.iter().zip(&blame) {
            assert_eq!(
                a.as_ref().map(bits),
                b.as_ref().map(bits),
                "{op:?}: the same blame from what the forward kept"
            );
        }
    }
    for (i, share) in blame.iter().enumerate() {
        let share = share.as_ref().expect("blame flows to every numeric input");
        assert_eq!(
            share.shape(),
            inputs[i].shape(),
            "{op:?}: blame of input {i} has the input's shape"
        );
        let (rows, cols) = inputs[i].shape();
        for k in 0..rows * cols {
            let mut up = inputs.clone();
            up[i] = nudged(&inputs[i], k, STEP);
            let mut down = inputs.clone();
            down[i] = nudged(&inputs[i], k, -STEP);
            let numeric = (loss(&op, &up, &weights) - loss(&op, &down, &weights)) / (2.0 * STEP);
            let analytic = share.view()[(k / cols, k % cols)];
            let tolerance = 1e-6 * (1.0 + analytic.abs());
            assert!(
                (numeric - analytic).abs() <= tolerance,
                "{op:?} input {i} element {k}: walk says {analytic}, finite differences say {numeric}"
            );
        }
    }
}

const ROUNDS: usize = 25;

#[test]
fn elementwise_operations_in_every_broadcast_form() {
    let mut rng = Random::default();
    for kind in [
        Elementwise::Add,
        Elementwise::Sub,
        Elementwise::Mul,
        Elementwise::Div,
    ] {
        for _ in 0..ROUNDS {
            let (m, n) = shape(&mut rng);
            let make = |rng: &mut Random, r, c| {
                if kind == Elementwise::Div {
                    positive(rng, r, c)
                } else {
                    matrix(rng, r, c)
                }
            };
            let full = matrix(&mut rng, m, n);
            let forms = [
                (full.clone(), make(&mut rng, m, n)),
                (full.clone(), make(&mut rng, 1, n)),
                (full.clone(), make(&mut rng, m, 1)),
                (full.clone(), make(&mut rng, 1, 1)),
                (full.clone(), Tensor::Scalar(1.5)),
                (
                    matrix(&mut rng, 1, n),
                    if kind == Elementwise::Div {
                        positive(&mut rng, m, n)
                    } else {
                        full.clone()
                    },
                ),
                (
                    matrix(&mut rng, m, 1),
                    if kind == Elementwise::Div {
                        positive(&mut rng, m, n)
                    } else {
                        full.clone()
                    },
                ),
                (
                    Tensor::Scalar(-0.75),
                    if kind == Elementwise::Div {
                        positive(&mut rng, m, n)
                    } else {
                        full.clone()
                    },
                ),
                (
                    Tensor::Scalar(0.3),
                    Tensor::Scalar(if kind == Elementwise::Div { 1.7 } else { -1.2 }),
                ),
            ];
            for (a, b) in forms {
                check(Op::Elementwise(kind), vec![a, b], &mut rng);
            }
        }
    }
}

#[test]
fn matrix_product_transpose_and_negation() {
    let mut rng = Random::default();
    rng.seed(1);
    for _ in 0..ROUNDS {
        let (m, k) = shape(&mut rng);
        let n = rng.int_in(1, 4) as usize;
        check(
            Op::MatMul,
            vec![matrix(&mut rng, m, k), matrix(&mut rng, k, n)],
            &mut rng,
        );
        check(Op::Transpose, vec![matrix(&mut rng, m, k)], &mut rng);
        check(Op::Neg, vec![matrix(&mut rng, m, k)], &mut rng);
        check(Op::Neg, vec![Tensor::Scalar(rng.normal())], &mut rng);
    }
}

#[test]
fn reductions() {
    let mut rng = Random::default();
    rng.seed(2);
    for _ in 0..ROUNDS {
        let (m, n) = shape(&mut rng);
        for op in [Op::Sum, Op::Mean, Op::RowSum, Op::RowMean, Op::ColSum] {
            check(op, vec![matrix(&mut rng, m, n)], &mut rng);
        }
    }
}

#[test]
fn softmax_layer_norm_and_cross_entropy() {
    let mut rng = Random::default();
    rng.seed(3);
    for _ in 0..ROUNDS {
        let (m, n) = shape(&mut rng);
        check(Op::RowSoftmax, vec![matrix(&mut rng, m, n)], &mut rng);
        let n2 = n + 1; // LayerNorm of one column has no spread to normalise
        check(Op::LayerNorm, vec![matrix(&mut rng, m, n2)], &mut rng);
        let targets: Vec<usize> = (0..m)
            .map(|_| rng.int_in(0, n as i64 - 1) as usize)
            .collect();
        check(
            Op::CrossEntropy(Rc::new(targets)),
            vec![matrix(&mut rng, m, n)],
            &mut rng,
        );
    }
}

#[test]
fn softmax_with_a_causal_mask_gives_zero_blame_to_the_future() {
    let mut rng = Random::default();
    let mut x = Array2::from_shape_simple_fn((3, 3), || rng.normal());
    for i in 0..3 {
        for j in i + 1..3 {
            x[(i, j)] = f64::NEG_INFINITY;
        }
    }
    let input = Tensor::matrix(x);
    let out = Op::RowSoftmax.forward(&[&input]).unwrap();
    assert_eq!(out.view()[(0, 1)], 0.0);
    let blame =
        Op::RowSoftmax.per_link_rule(&[&input], &[(3, 3)], &out, None, &matrix(&mut rng, 3, 3));
    let b = blame[0].as_ref().unwrap().view().to_owned();
    assert_eq!(b[(0, 1)], 0.0);
    assert_eq!(b[(0, 2)], 0.0);
    assert!(b.iter().all(|x| x.is_finite()));
}

#[test]
fn elementwise_functions_on_matrices_and_numbers() {
    let mut rng = Random::default();
    rng.seed(4);
    for u in tapec::declarations::unary_functions() {
        for _ in 0..ROUNDS {
            let (m, n) = shape(&mut rng);
            let needs_positive = matches!(u, Unary::Log | Unary::Sqrt);
            let x = if needs_positive {
                positive(&mut rng, m, n)
            } else {
                matrix(&mut rng, m, n)
            };
            check(Op::Unary(u), vec![x], &mut rng);
            let s = if needs_positive {
                0.5 + rng.uniform()
            } else {
                rng.normal()
            };
            check(Op::Unary(u), vec![Tensor::Scalar(s)], &mut rng);
        }
    }
}

/// `Power(a, Inf)` with |a| < 1 (and `Power(a, -Inf)` with |a| > 1) is 0
/// all around `a`, so its blame is 0, as the finite differences say; the
/// rule `p · a^(p-1)` alone is inf · 0, a NaN that stopped the walk.
#[test]
fn power_to_an_infinite_exponent_is_flat_where_it_is_zero() {
    for (p, a) in [
        (f64::INFINITY, 0.5),
        (f64::INFINITY, -0.5),
        (f64::INFINITY, 0.0),
        (f64::NEG_INFINITY, 2.0),
        (f64::NEG_INFINITY, -3.0),
    ] {
        let x = Tensor::Scalar(a);
        let op = Op::Power(p, None);
        let y = op.forward(&[&x]).unwrap();
        assert_eq!(y, Tensor::Scalar(0.0), "Power({a}, {p})");
        let b = op.per_link_rule(&[&x], &[(1, 1)], &y, None, &Tensor::Scalar(1.0));
        let difference = match (
            op.forward(&[&nudged(&x, 0, STEP)]),
            op.forward(&[&nudged(&x, 0, -STEP)]),
        ) {
            (Ok(up), Ok(down)) => (up.view()[(0, 0)] - down.view()[(0, 0)]) / (2.0 * STEP),
            _ => panic!("Power({a}, {p}) nudged"),
        };
        assert_eq!(b[0], Some(Tensor::Scalar(difference)), "Power({a}, {p})");
    }
    // On a matrix, each element's blame is its own.
    let x = Tensor::matrix(ndarray::array![[0.25, -0.75, 1.0, 2.0]]);
    let op = Op::Power(f64::INFINITY, None);
    let y = op.forward(&[&x]).unwrap();
    let ones = Tensor::matrix(Array2::ones((1, 4)));
    let b = op.per_link_rule(&[&x], &[(1, 4)], &y, None, &ones);
    let b = b[0].as_ref().expect("a blame").view().to_owned();
    assert_eq!(&b.as_slice().unwrap()[..2], &[0.0, 0.0]);
    assert!(b[(0, 2)] == f64::INFINITY && b[(0, 3)] == f64::INFINITY);
}

#[test]
fn relu_and_abs_have_zero_blame_at_zero() {
    for u in [Unary::ReLU, Unary::Abs] {
        let x = Tensor::Scalar(0.0);
        let y = Op::Unary(u).forward(&[&x]).unwrap();
        let b = Op::Unary(u).per_link_rule(&[&x], &[(1, 1)], &y, None, &Tensor::Scalar(1.0));
        assert_eq!(b[0], Some(Tensor::Scalar(0.0)));
    }
}

#[test]
fn selections_stacks_and_literals() {
    let mut rng = Random::default();
    rng.seed(5);
    for _ in 0..ROUNDS {
        let (m, n) = shape(&mut rng);
        let a = matrix(&mut rng, m, n);
        let (first, count) = run_within(&mut rng, m);
        check(Op::RowRange(first, count), vec![a.clone()], &mut rng);
        let (first, count) = run_within(&mut rng, n);
        check(Op::ColRange(first, count), vec![a.clone()], &mut rng);
        let other_cols = rng.int_in(1, 3) as usize;
        check(
            Op::HStack,
            vec![a.clone(), matrix(&mut rng, m, other_cols)],
            &mut rng,
        );
        check(
            Op::VStack,
            vec![a.clone(), matrix(&mut rng, other_cols, n)],
            &mut rng,
        );
        let (i, j) = (
            rng.int_in(0, m as i64 - 1) as usize,
            rng.int_in(0, n as i64 - 1) as usize,
        );
        check(Op::Element(i, j), vec![a.clone()], &mut rng);
        let ids: Vec<usize> = (0..rng.int_in(1, 6))
            .map(|_| rng.int_in(0, m as i64 - 1) as usize)
            .collect();
        check(Op::Embed(Rc::new(ids)), vec![a.clone()], &mut rng);
        let elements = (0..m * n).map(|_| Tensor::Scalar(rng.normal())).collect();
        check(Op::Literal(m, n), elements, &mut rng);
    }
}

/// An Integer exponent beyond 2^53 is rounded to an even f64: its parity
/// travels beside it, so that a negative base's power, and its blame
/// k · a^(k-1), have the signs the Integer gives.
#[test]
fn power_of_a_huge_integer_keeps_its_parity() {
    let k = 9007199254740993_i64; // 2^53 + 1: odd, held as 2^53
    for (exponent, odd, value, blame) in [
        (k, true, -1.0, k as f64),
        (k + 1, false, 1.0, -((k + 1) as f64)),
    ] {
        let op = Op::Power(exponent as f64, Some(odd));
        let x = Tensor::Scalar(-1.0);
        let y = op.forward(&[&x]).unwrap();
        assert_eq!(y, Tensor::Scalar(value), "Power(-1, {exponent})");
        let b = op.per_link_rule(&[&x], &[(1, 1)], &y, None, &Tensor::Scalar(1.0));
        assert_eq!(b[0], Some(Tensor::Scalar(blame)), "Power(-1, {exponent})");
    }
}
