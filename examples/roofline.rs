//! This machine's float64 matrix-product roofline: the best rate tapec's
//! product reaches, on as many threads as `TAPEC_THREADS` says (all the
//! cores by default), on large square products and on every product of one
//! training step of `bench/gpt.tape` at the size given (V T d h, size L by
//! default). `bench/compare` runs it on one thread and on all to put each
//! step beside the time its products would take at that rate.
//!
//!     cargo run --release --example roofline [V T d h]

use std::time::Instant;

use ndarray::Array2;
use tapec::tape::matmul::product;

fn filled(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
    let mut s = seed;
    Array2::from_shape_simple_fn((rows, cols), || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    })
}

/// The best time of `a · b` (m×k by k×n; either side read transposed, as
/// the reverse walk reads it) over several timed batches.
fn best_seconds(m: usize, k: usize, n: usize, a_t: bool, b_t: bool) -> f64 {
    let a = if a_t {
        filled(k, m, 1)
    } else {
        filled(m, k, 1)
    };
    let b = if b_t {
        filled(n, k, 2)
    } else {
        filled(k, n, 2)
    };
    let (a, b) = (
        if a_t { a.t() } else { a.view() },
        if b_t { b.t() } else { b.view() },
    );
    let reps = (4e7 / (2.0 * (m * k * n) as f64)).clamp(2.0, 10_000.0) as usize;
    (0..7)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(product(a, b));
            }
            start.elapsed().as_secs_f64() / reps as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    tapec::threads::run(1 << 24, measure);
}

fn measure() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("V T d h are whole numbers"))
        .collect();
    let [v, t, d, h] = <[usize; 4]>::try_from(args).unwrap_or([65, 128, 256, 1024]);
    // (m, k, n, left transposed, right transposed): the forward products of
    // one step, then the two products of each one's per-link rule.
    let forward = [
        (t, d, d),
        (t, d, d),
        (t, d, d),
        (t, d, t),
        (t, t, d),
        (t, d, h),
        (t, h, d),
        (t, d, v),
    ];
    let mut shapes = Vec::new();
    for &(m, k, n) in &forward {
        shapes.push((m, k, n, false, false));
        shapes.push((m, n, k, false, true)); // blame · rightᵀ
        shapes.push((k, m, n, true, false)); // leftᵀ · blame
    }
    // The first shape timed pays for the threads' and `faer`'s first
    // products (twice the time of its later runs, all seven batches):
    // timed once before, so that `step_products_ms` holds the step's
    // products only.
    let (m, k, n, a_t, b_t) = shapes[0];
    best_seconds(m, k, n, a_t, b_t);
    let mut flops = 0.0;
    let mut step_seconds = 0.0;
    let mut peak: f64 = 0.0;
    for &(m, k, n, a_t, b_t) in &shapes {
        let seconds = best_seconds(m, k, n, a_t, b_t);
        let work = 2.0 * (m * k * n) as f64;
        flops += work;
        step_seconds += seconds;
        peak = peak.max(work / seconds);
    }
    for size in [512, 1024] {
        let seconds = best_seconds(size, size, size, false, false);
        peak = peak.max(2.0 * (size * size * size) as f64 / seconds);
    }
    println!("step_product_mflop {:.1}", flops / 1e6);
    println!("step_products_ms {:.3}", step_seconds * 1e3);
    println!("peak_gflops {:.1}", peak / 1e9);
    println!("roofline_ms {:.3}", flops / peak * 1e3);
}
