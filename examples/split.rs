//! Where splitting a matrix product over two threads starts to pay: each
//! product of one training step of `bench/gpt.tape` at sizes S, M and L,
//! and square products from 32 to 512, timed on one thread and split over
//! two (whatever their size), with the ratio. `tape/matmul.rs` splits from
//! `SPLIT_FROM` multiply-adds, chosen from this table.
//!
//!     cargo run --release --example split

use std::time::Instant;

use ndarray::Array2;
use tapec::tape::matmul::{SPLIT_FROM, product_split_from};

fn filled(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
    let mut s = seed;
    Array2::from_shape_simple_fn((rows, cols), || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    })
}

/// The best time of m×k by k×n on `threads`, over several timed batches.
fn best_seconds(m: usize, k: usize, n: usize, threads: usize) -> f64 {
    let (a, b) = (filled(m, k, 1), filled(k, n, 2));
    let reps = (2e7 / (2.0 * (m * k * n) as f64)).clamp(3.0, 20_000.0) as usize;
    (0..7)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(product_split_from(a.view(), b.view(), threads, 0));
            }
            start.elapsed().as_secs_f64() / reps as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    tapec::threads::run(1 << 24, measure);
}

fn measure() {
    let mut shapes = Vec::new();
    for [v, t, d, h] in [[27, 8, 16, 64], [65, 32, 64, 256], [65, 128, 256, 1024]] {
        for (m, k, n) in [
            (t, d, d),
            (t, d, t),
            (t, t, d),
            (t, d, h),
            (t, h, d),
            (t, d, v),
        ] {
            shapes.push((m, k, n));
            shapes.push((k, m, n));
            shapes.push((m, n, k));
        }
    }
    for size in [32, 48, 64, 96, 128, 192, 256, 512] {
        shapes.push((size, size, size));
    }
    shapes.sort_by_key(|&(m, k, n)| m * k * n);
    shapes.dedup();
    println!("split from {SPLIT_FROM} multiply-adds");
    println!(
        "{:>16} {:>12} {:>12} {:>12} {:>7}",
        "m×k×n", "multiply-adds", "1 thread µs", "2 threads µs", "1 / 2"
    );
    for (m, k, n) in shapes {
        let one = best_seconds(m, k, n, 1);
        let two = best_seconds(m, k, n, 2);
        println!(
            "{:>16} {:>12} {:>12.2} {:>12.2} {:>6.2}x",
            format!("{m}×{k}×{n}"),
            m * k * n,
            one * 1e6,
            two * 1e6,
            one / two
        );
    }
}
