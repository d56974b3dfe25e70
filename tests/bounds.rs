//! The bounds that spare the tape its NaN scans hold: whatever an
//! operation's output bound (`Op::output_bound`) or share bounds
//! (`Op::share_bounds`) claim, the values they stand for obey — no element
//! larger than a finite bound, no NaN under an infinite one. The inputs and
//! blames range over sizes from 1e-300 to 1e300, with zeros, negative
//! zeros and infinities among them.

mod common;

use std::rc::Rc;

use common::{run_within, shape};
use ndarray::Array2;
use tapec::eval::random::Random;
use tapec::tape::ops::{Elementwise, Op, Tensor, Unary};

/// One element: a normal number scaled by a power of ten from 1e-300 to
/// 1e300, or now and then a zero, a negative zero or an infinity.
fn element(rng: &mut Random, infinities: bool) -> f64 {
    let pick = rng.int_in(0, 39);
    match pick {
        0 => 0.0,
        1 => -0.0,
        2 if infinities => f64::INFINITY,
        3 if infinities => f64::NEG_INFINITY,
        _ => {
            let scales = [1e-300, 1e-8, 1.0, 1.0, 1.0, 1e8, 1e100, 1e155, 1e300];
            rng.normal() * scales[rng.int_in(0, scales.len() as i64 - 1) as usize]
        }
    }
}

fn matrix(rng: &mut Random, (rows, cols): (usize, usize), infinities: bool) -> Tensor {
    Tensor::matrix(Array2::from_shape_simple_fn((rows, cols), || {
        element(rng, infinities)
    }))
}

/// A matrix of one of a few characters: all ordinary, all one scale, or
/// mixed sizes, with infinities in some.
fn input(rng: &mut Random, shape: (usize, usize)) -> Tensor {
    match rng.int_in(0, 3) {
        0 => Tensor::matrix(Array2::from_shape_simple_fn(shape, || rng.normal())),
        1 => {
            let scale = [1e-300, 1e100, 1e200][rng.int_in(0, 2) as usize];
            Tensor::matrix(Array2::from_shape_simple_fn(shape, || rng.normal() * scale))
        }
        2 => matrix(rng, shape, false),
        _ => matrix(rng, shape, true),
    }
}

/// Whether the claim `claimed` holds for values whose largest size is
/// `actual` (NaN if any is NaN).
fn holds(claimed: f64, actual: f64) -> bool {
    if claimed.is_nan() {
        actual.is_nan()
    } else if claimed.is_finite() {
        actual <= claimed
    } else {
        !actual.is_nan()
    }
}

/// Checks both claims of `op` at `inputs`, with a blame of the output's
/// shape drawn as the inputs are. Returns whether the forward gave a value
/// without NaN (the only kind the tape records).
fn check(op: &Op, inputs: &[Tensor], rng: &mut Random) -> bool {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let Ok(out) = op.forward(&refs) else {
        return false;
    };
    let shapes: Vec<(usize, usize)> = inputs.iter().map(Tensor::shape).collect();
    let in_bounds: Vec<f64> = inputs.iter().map(Tensor::bound).collect();
    let actual = out.bound();
    let known: Vec<Option<f64>> = in_bounds.iter().copied().map(Some).collect();
    let claimed = op.output_bound(&known, &shapes);
    if let Some(c) = claimed {
        assert!(
            holds(c, actual),
            "{op:?}: output bound {c} but the output's largest is {actual}; inputs {inputs:?}"
        );
    }
    if actual.is_nan() || in_bounds.iter().any(|b| b.is_nan()) {
        return false;
    }
    let blame = match &out {
        Tensor::Scalar(_) => Tensor::Scalar(element(rng, true)),
        Tensor::Matrix(m) => input(rng, m.dim()),
    };
    let g = blame.bound();
    let shares = op.per_link_rule(&refs, &shapes, &out, None, &blame);
    // The record holds the claimed bound where there is one, else the scan's.
    for out_bound in [Some(actual), claimed].into_iter().flatten() {
        let claims = op.share_bounds(g, &in_bounds, out_bound, &shapes, out.shape());
        for (k, (claim, share)) in claims.iter().zip(&shares).enumerate() {
            if let (Some(c), Some(share)) = (claim, share) {
                let actual = share.bound();
                assert!(
                    holds(*c, actual),
                    "{op:?}: share {k} bound {c} but its largest is {actual}; \
                     inputs {inputs:?}, blame {blame:?}"
                );
            }
        }
    }
    true
}

const ROUNDS: usize = 400;

#[test]
fn elementwise_operations_and_products() {
    let mut rng = Random::default();
    let mut recorded = 0;
    for _ in 0..ROUNDS {
        let (m, n) = shape(&mut rng);
        let k = rng.int_in(1, 4) as usize;
        let a = input(&mut rng, (m, n));
        let others = [
            input(&mut rng, (m, n)),
            input(&mut rng, (1, n)),
            input(&mut rng, (m, 1)),
            input(&mut rng, (1, 1)),
            Tensor::Scalar(element(&mut rng, true)),
        ];
        for kind in [
            Elementwise::Add,
            Elementwise::Sub,
            Elementwise::Mul,
            Elementwise::Hadamard,
            Elementwise::Div,
        ] {
            for b in &others {
                for pair in [[a.clone(), b.clone()], [b.clone(), a.clone()]] {
                    recorded += usize::from(check(&Op::Elementwise(kind), &pair, &mut rng));
                }
            }
        }
        let b = input(&mut rng, (n, k));
        recorded += usize::from(check(&Op::MatMul, &[a.clone(), b], &mut rng));
        for op in [Op::Neg, Op::Transpose] {
            recorded += usize::from(check(&op, std::slice::from_ref(&a), &mut rng));
        }
    }
    assert!(recorded > ROUNDS, "most draws reach the walk: {recorded}");
}

#[test]
fn reductions_functions_and_normalisations() {
    let mut rng = Random::default();
    let mut recorded = 0;
    for _ in 0..ROUNDS {
        let (m, n) = shape(&mut rng);
        let mut a = input(&mut rng, (m, n));
        // A causal mask's -inf above the diagonal, now and then.
        if rng.int_in(0, 3) == 0
            && let Tensor::Matrix(values) = &mut a
        {
            let values = Rc::make_mut(values);
            for i in 0..m {
                for j in i + 1..n {
                    values[(i, j)] = f64::NEG_INFINITY;
                }
            }
        }
        for op in [
            Op::Sum,
            Op::Mean,
            Op::RowSum,
            Op::RowMean,
            Op::ColSum,
            Op::RowSoftmax,
            Op::LayerNorm,
        ] {
            recorded += usize::from(check(&op, std::slice::from_ref(&a), &mut rng));
        }
        for u in tapec::declarations::unary_functions() {
            recorded += usize::from(check(&Op::Unary(u), std::slice::from_ref(&a), &mut rng));
            recorded += usize::from(check(
                &Op::Unary(u),
                &[Tensor::Scalar(element(&mut rng, true))],
                &mut rng,
            ));
        }
        let targets: Vec<usize> = (0..m)
            .map(|_| rng.int_in(0, n as i64 - 1) as usize)
            .collect();
        recorded += usize::from(check(
            &Op::CrossEntropy(Rc::new(targets)),
            std::slice::from_ref(&a),
            &mut rng,
        ));
    }
    assert!(recorded > ROUNDS, "most draws reach the walk: {recorded}");
}

#[test]
fn selections_stacks_embeddings_and_literals() {
    let mut rng = Random::default();
    let mut recorded = 0;
    for _ in 0..ROUNDS {
        let (m, n) = shape(&mut rng);
        let a = input(&mut rng, (m, n));
        let (first, count) = run_within(&mut rng, m);
        recorded += usize::from(check(
            &Op::RowRange(first, count),
            std::slice::from_ref(&a),
            &mut rng,
        ));
        let (first, count) = run_within(&mut rng, n);
        recorded += usize::from(check(
            &Op::ColRange(first, count),
            std::slice::from_ref(&a),
            &mut rng,
        ));
        let cols = rng.int_in(1, 3) as usize;
        let beside = input(&mut rng, (m, cols));
        recorded += usize::from(check(&Op::HStack, &[a.clone(), beside], &mut rng));
        let rows = rng.int_in(1, 3) as usize;
        let below = input(&mut rng, (rows, n));
        recorded += usize::from(check(&Op::VStack, &[a.clone(), below], &mut rng));
        let (i, j) = (
            rng.int_in(0, m as i64 - 1) as usize,
            rng.int_in(0, n as i64 - 1) as usize,
        );
        recorded += usize::from(check(
            &Op::Element(i, j),
            std::slice::from_ref(&a),
            &mut rng,
        ));
        let ids: Vec<usize> = (0..rng.int_in(1, 6))
            .map(|_| rng.int_in(0, m as i64 - 1) as usize)
            .collect();
        recorded += usize::from(check(
            &Op::Embed(Rc::new(ids)),
            std::slice::from_ref(&a),
            &mut rng,
        ));
        let elements: Vec<Tensor> = (0..m * n)
            .map(|_| Tensor::Scalar(element(&mut rng, true)))
            .collect();
        recorded += usize::from(check(&Op::Literal(m, n), &elements, &mut rng));
    }
    assert!(recorded > ROUNDS, "most draws reach the walk: {recorded}");
}

/// A claim that cannot fail would pass the tests above: these bounds are
/// known, and smaller than the largest element would make `holds` fail.
#[test]
fn the_claims_are_made_and_checked() {
    let x = Tensor::matrix(Array2::from_shape_vec((1, 3), vec![-3.0, 0.5, 2.0]).expect("1×3"));
    assert_eq!(
        Op::Unary(Unary::Tanh).output_bound(&[Some(3.0)], &[(1, 3)]),
        Some(1.0)
    );
    assert_eq!(
        Op::Transpose.output_bound(&[Some(3.0)], &[(1, 3)]),
        Some(3.0)
    );
    assert_eq!(Op::Transpose.output_bound(&[None], &[(1, 3)]), None);
    assert_eq!(
        Op::Elementwise(Elementwise::Add)
            .output_bound(&[Some(3.0), Some(f64::INFINITY)], &[(1, 3), (1, 3)]),
        None,
        "an infinite input's sum may be NaN"
    );
    assert!(!holds(2.9, x.bound()));
    assert!(holds(3.0, x.bound()));
    assert!(!holds(f64::INFINITY, f64::NAN));
    let [tanh_share, _] = Op::Unary(Unary::Tanh).share_bounds(5.0, &[3.0], 1.0, &[(1, 3)], (1, 3));
    assert_eq!(tanh_share, Some(20.0), "5 · (1 + 1²), twice for rounding");
    let [share, _] =
        Op::Unary(Unary::Tanh).share_bounds(f64::INFINITY, &[3.0], 1.0, &[(1, 3)], (1, 3));
    assert_eq!(share, None, "inf · 0 is NaN");
}
