//! The matrix product, the one place the tape spends most of its time.
//!
//! It calls `faer`'s matrix product (pure Rust, runtime-dispatched AVX2 and
//! AVX-512 kernels, one thread per call) on strided views, so a transposed
//! operand is read in place rather than copied. A product is done in
//! tasks (ranges of its columns or rows), each the same sums as in the
//! whole, which the threads share.

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{Array2, ArrayView2, s};
use smallvec::{SmallVec, smallvec};
use std::sync::atomic::{AtomicU64, Ordering};

mod small;

/// Output columns per call when a product is done in panels (two of the
/// AVX-512 kernel's 48-wide tiles).
const PANEL: usize = 96;

/// The size of a right side, in elements, from which a product is done in
/// panels: 64Ki, a 256×256 weight.
const PANELLED_FROM: usize = 1 << 16;

/// `a · b`; `a`'s columns must equal `b`'s rows (checked by the caller),
/// on as many threads as [`crate::threads::usable`] allows.
pub fn product(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
    // A small product is never split: it needs no count of the threads.
    if let Some(out) = small::product(&a, &b) {
        return out;
    }
    product_on(a, b, crate::threads::usable())
}

/// `a · b` cut into tasks that up to `threads` threads of
/// the pool take in turn (see [`together`]): the bits are the same at any
/// `threads`.
///
/// A product of up to 32Ki multiply-adds and a depth up to 64 runs in
/// `small`'s kernels where the CPU has AVX-512 or AVX2 with FMA, with the
/// same bits; with AVX-512, so does one of up to 1Mi multiply-adds (and a
/// depth up to 256 from 64Ki).
pub fn product_on(a: ArrayView2<f64>, b: ArrayView2<f64>, threads: usize) -> Array2<f64> {
    product_split_from(a, b, threads, SPLIT_FROM)
}

/// [`product_on`], shared over the threads from `split_from` multiply-adds
/// instead of [`SPLIT_FROM`]: what `examples/split.rs` measures the
/// break-even with.
pub fn product_split_from(
    a: ArrayView2<f64>,
    b: ArrayView2<f64>,
    threads: usize,
    split_from: usize,
) -> Array2<f64> {
    if let Some(out) = small::product(&a, &b) {
        return out;
    }
    let [out] = together([(a, b)], threads, split_from);
    out
}

/// Two products at once: `first.0 · first.1` and `second.0 · second.1`.
/// Two done by `faer` share their tasks over the threads (see
/// [`together`]); otherwise, when both have at least [`TWO_FROM`]
/// multiply-adds and the caller runs in a pool, each is done whole on one
/// of two threads, and else one after the other. The bits are
/// [`product`]'s either way.
pub fn two_products(first: Pair, second: Pair) -> (Array2<f64>, Array2<f64>) {
    let threads = crate::threads::usable();
    if !small::takes(&first.0, &first.1) && !small::takes(&second.0, &second.1) {
        let [x, y] = together([first, second], threads, SPLIT_FROM);
        return (x, y);
    }
    let large = |(a, b): Pair| a.len() * b.ncols() >= TWO_FROM;
    if large(first) && large(second) && threads >= 2 {
        crate::threads::join(
            || product_on(first.0, first.1, 1),
            || product_on(second.0, second.1, 1),
        )
    } else {
        (product(first.0, first.1), product(second.0, second.1))
    }
}

/// The fewest multiply-adds each of [`two_products`] must have for the two
/// to run on two threads when `small`'s kernels take one of them.
pub const TWO_FROM: usize = 1 << 16;

/// A product's two sides.
pub type Pair<'a> = (ArrayView2<'a, f64>, ArrayView2<'a, f64>);

/// The products of `pairs`, none of them small, each cut into tasks
/// ([`tasks`]) that the threads take until none is left: the caller and,
/// when the products have `split_from` multiply-adds or more in all and it
/// runs in a pool, up to `threads - 1` other threads of the pool.
///
/// Thread `t` (the caller is 0) owns product `t mod N` and takes its tasks
/// from the front if `t < N`, else from the back; then it takes the other
/// products' tasks from the back. So of two products each thread works on
/// its own, reading only its own sides, and helps with the other's last
/// tasks when it is done; one product's tasks are taken by the caller from
/// the front and by a helper from the back, each thread's part of the
/// result in one piece. A thread that comes late or is slowed takes fewer
/// tasks, and the caller waits at most for the task a helper has in hand.
/// Each task is computed as the same part of the whole product is, so the
/// bits are the same whoever takes which task.
fn together<const N: usize>(
    pairs: [Pair; N],
    threads: usize,
    split_from: usize,
) -> [Array2<f64>; N] {
    let mut outs = pairs.map(|(a, b)| Array2::<f64>::uninit((a.nrows(), b.ncols())));
    let mut dsts = [const { Dst(std::ptr::null_mut()) }; N];
    for (dst, out) in dsts.iter_mut().zip(&mut outs) {
        dst.0 = out.as_mut_ptr().cast::<f64>();
    }
    let work: usize = pairs.iter().map(|(a, b)| a.len() * b.ncols()).sum();
    let shared = work >= split_from && rayon::current_thread_index().is_some();
    let threads = if shared { threads } else { 1 };
    let lists = pairs.map(|(a, b)| tasks(&a, &b, threads));
    // Each product's tasks not taken yet, `first..last`, as `last << 32 |
    // first`.
    let untaken: [AtomicU64; N] =
        std::array::from_fn(|i| AtomicU64::new((lists[i].1.len() as u64) << 32));
    let (lists, dsts, untaken) = (&lists, &dsts, &untaken);
    let take = move |thread: usize| {
        for turn in 0..N {
            let which = (thread + turn) % N;
            let front = turn == 0 && thread < N;
            let (a, b) = pairs[which];
            let (by_rows, list) = &lists[which];
            while let Some(i) = next_task(&untaken[which], front) {
                let (from, to) = list[i];
                // SAFETY: each task is taken once (`next_task`), and the
                // tasks of a product are disjoint columns, or rows, that
                // together make all of its output's; see `columns`. Rows
                // `from..to` of the output are the product of those rows
                // of `a`, `from` rows of `n` elements into it.
                unsafe {
                    if *by_rows {
                        let n = b.ncols();
                        let out = dsts[which].0.add(from * n);
                        columns(a.slice(s![from..to, ..]), b, out, 0, n)
                    } else {
                        columns(a, b, dsts[which].0, from, to)
                    }
                }
            }
        }
    };
    let count: usize = lists.iter().map(|(_, list)| list.len()).sum();
    let helpers = threads.min(count).saturating_sub(1);
    if helpers > 0 {
        let handoff = crate::threads::Handoff::start();
        rayon::scope(|scope| {
            let handoff = &handoff;
            for thread in 1..=helpers {
                scope.spawn(move |_| handoff.part(|| take(thread)));
            }
            handoff.part(|| take(0));
            handoff.wait_for_helpers();
        });
        handoff.end();
    } else {
        take(0);
    }
    // SAFETY: the tasks wrote every column of every row of every product.
    outs.map(|out| unsafe { out.assume_init() })
}

/// Takes a task of a product whose tasks not taken yet are `untaken`
/// (`last << 32 | first`): the first if `front`, else the last; `None`
/// when none is left.
fn next_task(untaken: &AtomicU64, front: bool) -> Option<usize> {
    let was = untaken
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |range| {
            let (first, last) = (range & 0xffff_ffff, range >> 32);
            (first < last).then(|| if front { range + 1 } else { range - (1 << 32) })
        })
        .ok()?;
    Some(if front {
        was & 0xffff_ffff
    } else {
        (was >> 32) - 1
    } as usize)
}

/// `out`'s first element, shared by the threads that write its parts.
struct Dst(*mut f64);
// SAFETY: each thread writes only its own columns (tasks are disjoint).
unsafe impl Sync for Dst {}

/// The fewest multiply-adds from which a product is split over threads:
/// below it, handing a part to another thread costs more than it saves
/// (`examples/split.rs` measures where the two meet).
pub const SPLIT_FROM: usize = 1 << 20;

/// The width of a task of a product whose left side is stored row by row.
const TASK: usize = 32;

/// The ranges product `a · b` is done in, of columns or (when the first is
/// `true`) of rows, each on the whole's path so that each element is the
/// same sum taken in the same order.
///
/// A left side stored row by row is read in place, so a task of [`TASK`]
/// columns costs no more than the same columns of the whole product (less:
/// the task's part of the right side and of the result stay in the core's
/// first caches), and the threads share the product [`TASK`] columns at a
/// time (the last task takes what is left over). Any other left side is
/// copied by every call, so there the product is cut into one part per
/// thread, of about equal size (a multiple of 8): of its rows when it has
/// more rows than columns, so that each thread copies only its part's
/// rows of `a`, else of its columns.
fn tasks(a: &ArrayView2<f64>, b: &ArrayView2<f64>, threads: usize) -> (bool, Ranges) {
    let (m, k) = a.dim();
    let n = b.ncols();
    if a.strides()[1] == 1 && n >= 2 * TASK && same_path(m, k, TASK) {
        let count = n / TASK;
        let ranges =
            (0..count).map(|i| (i * TASK, if i + 1 == count { n } else { (i + 1) * TASK }));
        return (false, ranges.collect());
    }
    let by_rows = m > n;
    let long = if by_rows { m } else { n };
    let threads = threads.min(long / 8).max(1);
    let width = long.div_ceil(threads).next_multiple_of(8);
    // The last part is the narrowest.
    let last = long - (long.div_ceil(width) - 1) * width;
    let on_path = if by_rows {
        same_path(last, k, n)
    } else {
        same_path(m, k, last)
    };
    if threads < 2 || width >= long || !on_path {
        return (false, smallvec![(0, n)]);
    }
    let ranges = (0..long)
        .step_by(width)
        .map(|from| (from, (from + width).min(long)));
    (by_rows, ranges.collect())
}

/// A product's task ranges.
type Ranges = SmallVec<[(usize, usize); 32]>;

/// Writes columns `from..to` of `a · b` into `out`, an m×n block in
/// standard layout, panel by panel when [`panelled`].
///
/// A task with a large right side and at least two panels of columns is
/// done one panel of `PANEL` output columns at a time, the last one wider
/// with what is left over. For a wide right side `faer` otherwise packs all
/// of it before it starts, more than the core's own cache holds, and reads
/// the packed copy back once for every few rows of `a`; a panel's packed
/// part stays near the core. The result is the same bit for bit: each
/// element is the same sum, taken in the same order (the depth is cut into
/// blocks of 512 whatever the width, and `same_path` keeps every panel on
/// the whole product's path), and the product is 4–8% faster at 32–512 rows
/// by 1024 columns or more.
///
/// # Safety
/// `out` points at m×n writable elements that overlap neither `a` nor `b`,
/// and no other thread writes columns `from..to` meanwhile.
unsafe fn columns(a: ArrayView2<f64>, b: ArrayView2<f64>, out: *mut f64, from: usize, to: usize) {
    let (m, k) = a.dim();
    let n = b.ncols();
    let part = to - from;
    let panels = if panelled(m, k, part) {
        part / PANEL
    } else {
        1
    };
    let (b_rows, b_cols) = (b.strides()[0], b.strides()[1]);
    for panel in 0..panels {
        // The last panel takes the columns left over as well.
        let start = from + panel * PANEL;
        let width = if panel + 1 == panels {
            to - start
        } else {
            PANEL
        };
        // SAFETY: `a` and `b` are valid views whose pointers and strides
        // describe m×k and k×n elements, alive for this call, so columns
        // `start..start + width` of `b` start `start` columns on; `out`
        // overlaps neither (the caller's promise), and each call writes
        // every element of its own columns and reads none
        // (`Accum::Replace`, a rectangular `dst`; k ≥ 1, as there are no
        // empty matrices), so the panels together write all of `from..to`.
        unsafe {
            let lhs = MatRef::from_raw_parts(a.as_ptr(), m, k, a.strides()[0], a.strides()[1]);
            let right_part = b.as_ptr().offset(start as isize * b_cols);
            let rhs = MatRef::from_raw_parts(right_part, k, width, b_rows, b_cols);
            let dst = MatMut::from_raw_parts_mut(out.add(start), m, width, n as isize, 1);
            triangular::matmul(
                dst,
                BlockStructure::Rectangular,
                Accum::Replace,
                lhs,
                BlockStructure::Rectangular,
                rhs,
                BlockStructure::Rectangular,
                1.0,
                Par::Seq,
            );
        }
    }
}

/// Whether `product` does an m×k by k×n product in panels: its right side
/// is large and it has two panels or more, each on the whole's path.
fn panelled(m: usize, k: usize, n: usize) -> bool {
    k * n >= PANELLED_FROM && n >= 2 * PANEL && same_path(m, k, PANEL)
}

/// Whether `faer` sends an m×k by k×`width` product down the same path as
/// any wider one with those rows and depth, whose sums are the same
/// whatever the width: more than `faer`'s 16×16×16 small-product limit,
/// and more than one row and column.
fn same_path(m: usize, k: usize, width: usize) -> bool {
    m >= 2 && width >= 2 && m * k * width > 16 * 16 * 16
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn filled(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
        let mut s = seed;
        Array2::from_shape_simple_fn((rows, cols), || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
    }

    fn definition(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
        Array2::from_shape_fn((a.nrows(), b.ncols()), |(i, j)| {
            (0..a.ncols()).map(|p| a[(i, p)] * b[(p, j)]).sum()
        })
    }

    fn close(x: &Array2<f64>, y: &Array2<f64>) -> bool {
        x.iter()
            .zip(y)
            .all(|(x, y)| x == y || (x - y).abs() <= 1e-12 || (x.is_nan() && y.is_nan()))
    }

    /// `x`'s transpose, stored row by row, so that its `.t()` is `x` read
    /// column by column. (`to_owned` would keep the view's memory order.)
    fn stored_transposed(x: &Array2<f64>) -> Array2<f64> {
        let t = x.t().as_standard_layout().into_owned();
        assert!(t.is_standard_layout());
        t
    }

    /// `a · b` in one call of `faer`'s product, as `product` did before it
    /// cut wide products into panels.
    fn whole(a: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
        let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
        let mut out = Array2::<f64>::zeros((m, n));
        // SAFETY: valid views of m×k and k×n elements; `out` is m×n, standard
        // layout, and overlaps neither.
        unsafe {
            let lhs = MatRef::from_raw_parts(a.as_ptr(), m, k, a.strides()[0], a.strides()[1]);
            let rhs = MatRef::from_raw_parts(b.as_ptr(), k, n, b.strides()[0], b.strides()[1]);
            let dst = MatMut::from_raw_parts_mut(out.as_mut_ptr(), m, n, n as isize, 1);
            faer::linalg::matmul::matmul(dst, Accum::Replace, lhs, rhs, 1.0, Par::Seq);
        }
        out
    }

    /// Products done in panels (a last panel of 97 columns, a depth cut into
    /// blocks as 1100 > 512 is, two rows, a depth of one) and products near
    /// them that are not (one row; panels small enough for `faer`'s
    /// small-product path), either side plain or transposed: the same bits
    /// as one whole call, and the definition's value.
    #[test]
    fn panelled_products_give_the_bits_of_one_call() {
        let shapes = [
            (128, 256, 1024, true),
            (200, 256, 289, true),
            (37, 1100, 192, true),
            (2, 300, 250, true),
            (50, 1, 70_000, true),
            (1, 300, 250, false),
            (3, 2, 40_000, false),
        ];
        for (m, k, n, in_panels) in shapes {
            assert_eq!(panelled(m, k, n), in_panels, "{m}×{k}×{n}");
            let a = filled(m, k, 11);
            let a_t = stored_transposed(&a);
            let b = filled(k, n, 12);
            let b_t = stored_transposed(&b);
            for left in [a.view(), a_t.t()] {
                for right in [b.view(), b_t.t()] {
                    assert_eq!(left, a.view());
                    assert_eq!(right, b.view());
                    let got = product(left, right);
                    let want = whole(left, right);
                    let differ = got
                        .iter()
                        .zip(&want)
                        .filter(|(x, y)| x.to_bits() != y.to_bits())
                        .count();
                    assert_eq!(differ, 0, "{m}×{k}×{n}: elements that differ");
                    if m * k * n < 1 << 24 {
                        assert!(close(&got, &definition(left, right)), "{m}×{k}×{n}");
                    }
                }
            }
        }
    }

    /// `a · b`, either side plain or transposed, through `product` and
    /// each of `kernels` (where it takes the product): the same bits as one
    /// whole call of `faer` (a NaN as a NaN).
    fn bits_of_one_call_either_way(a: &Array2<f64>, b: &Array2<f64>, kernels: &[small::Kernel]) {
        let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
        let a_t = stored_transposed(a);
        let b_t = stored_transposed(b);
        for left in [a.view(), a_t.t()] {
            for right in [b.view(), b_t.t()] {
                let want = whole(left, right);
                let mut results = vec![product(left, right)];
                results.extend(
                    kernels
                        .iter()
                        .filter_map(|&kernel| small::product_with(&left, &right, kernel)),
                );
                for got in &results {
                    for (x, y) in got.iter().zip(&want) {
                        assert!(
                            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                            "{m}×{k}×{n}: {x:e} against {y:e}"
                        );
                    }
                }
            }
        }
    }

    /// Every small shape, with either side plain or transposed and with
    /// zeros of both signs, infinities and NaNs among the numbers: the same
    /// bits as one whole call of `faer` (a NaN as a NaN), through `product`
    /// and through each small kernel this CPU has (AVX-512 and AVX2 both,
    /// on a CPU with AVX-512).
    #[test]
    fn small_products_give_the_bits_of_one_call() {
        let kernels = small::kernels_here();
        eprintln!("small kernels on this CPU: {kernels:?}");
        let special = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e300,
            -1e-300,
        ];
        let mut seed = 20;
        for m in 1..=13 {
            for k in [
                1, 2, 3, 4, 5, 8, 12, 15, 16, 17, 20, 27, 32, 63, 64, 65, 100, 513,
            ] {
                for n in [1, 2, 3, 7, 8, 9, 15, 16, 17, 27, 33, 64] {
                    seed += 1;
                    let mut a = filled(m, k, seed);
                    let mut b = filled(k, n, seed + 1000);
                    // Some products with zeros of both signs and, in a few,
                    // a number that is not finite.
                    if seed % 3 == 0 {
                        a.iter_mut().step_by(3).for_each(|x| *x = -0.0);
                        b.iter_mut().step_by(2).for_each(|x| *x = 0.0);
                        // A row of -0s against a column of positive numbers
                        // gives -0s only: the sign of an exact zero shows
                        // how the sum started.
                        a.row_mut(0).fill(-0.0);
                        b.column_mut(0).mapv_inplace(f64::abs);
                    }
                    if seed % 5 == 0 {
                        let v = special[(seed as usize / 5) % special.len()];
                        a[(m / 2, k / 2)] = v;
                        b[(k - 1, n - 1)] = -v;
                    }
                    bits_of_one_call_either_way(&a, &b, &kernels);
                }
            }
        }
    }

    /// Products of a depth up to 256 too large for `faer`'s smallest
    /// kernels, up to `small`'s largest (1Mi multiply-adds): every size M
    /// step's shape and ragged ones around them, either side plain or
    /// transposed, with a zero of each sign and an infinity among the
    /// numbers: the same bits as one whole call of `faer`, through
    /// `product` and each small kernel this CPU has.
    #[test]
    fn middling_products_give_the_bits_of_one_call() {
        let kernels = small::kernels_here();
        let mut seed = 500;
        for m in [2, 3, 6, 7, 31, 32, 33, 64, 65, 256] {
            for k in [17, 32, 63, 64, 65, 100, 128, 255, 256, 257] {
                for n in [2, 3, 8, 31, 32, 33, 64, 65, 96, 97, 256, 300] {
                    if m * k * n > 1 << 20 {
                        continue;
                    }
                    seed += 1;
                    let mut a = filled(m, k, seed);
                    let mut b = filled(k, n, seed + 1000);
                    a.row_mut(m - 1).fill(-0.0);
                    b[(k / 2, n - 1)] = if seed % 2 == 0 { f64::INFINITY } else { -0.0 };
                    bits_of_one_call_either_way(&a, &b, &kernels);
                }
            }
        }
    }

    /// Products of many shapes (every product of a training step of
    /// `bench/gpt.tape` at sizes S, M and L, odd sizes, shapes near the
    /// split's limits), either side plain or transposed, on one thread and
    /// shared by two and three threads of a real pool, alone, two of the
    /// same at once, and beside a larger and a smaller product (so that
    /// one thread runs out of its own product's tasks first and takes the
    /// other's from the back): the same bits everywhere.
    #[test]
    fn threads_never_change_a_bit_of_a_product() {
        let mut shapes = vec![
            (2, 1000, 600),
            (3, 700, 500),
            (1, 1024, 1024),
            (1000, 3, 400),
            (129, 257, 1023),
            (97, 301, 211),
            (64, 64, 64),
            (100, 100, 101),
            (17, 2048, 33),
            (300, 300, 17),
        ];
        for [v, t, d, h] in [[27, 8, 16, 64], [65, 32, 64, 256], [65, 128, 256, 1024]] {
            for (m, k, n) in [
                (t, d, d),
                (t, d, t),
                (t, t, d),
                (t, d, h),
                (t, h, d),
                (t, d, v),
            ] {
                shapes.extend([(m, k, n), (k, m, n), (m, n, k)]);
            }
        }
        let pool = |n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
        };
        let (two, three) = (pool(2), pool(3));
        let bits = |x: &Array2<f64>| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let (large_a, large_b) = (filled(128, 256, 7), filled(256, 1024, 8));
        let large = bits(&whole(large_a.view(), large_b.view()));
        let (small_a, small_b) = (filled(64, 64, 9), filled(64, 300, 10));
        let small = bits(&whole(small_a.view(), small_b.view()));
        let mut split = 0;
        for (i, &(m, k, n)) in shapes.iter().enumerate() {
            let a = filled(m, k, 40 + i as u64);
            let b = filled(k, n, 90 + i as u64);
            let (a_t, b_t) = (stored_transposed(&a), stored_transposed(&b));
            for left in [a.view(), a_t.t()] {
                for right in [b.view(), b_t.t()] {
                    let one = product_on(left, right, 1);
                    let shared = small::product(&left, &right).is_none()
                        && m * k * n >= SPLIT_FROM
                        && tasks(&left, &right, 2).1.len() > 1;
                    split += usize::from(shared);
                    for (threads, pool) in [(2, &two), (3, &three)] {
                        let many = pool.install(|| product_on(left, right, threads));
                        assert_eq!(bits(&one), bits(&many), "{m}×{k}×{n} on {threads} threads");
                        let (x, y) = pool.install(|| two_products((left, right), (left, right)));
                        assert_eq!(bits(&one), bits(&x), "{m}×{k}×{n}, two at once");
                        assert_eq!(bits(&one), bits(&y), "{m}×{k}×{n}, two at once");
                        for (c, d, want) in
                            [(&large_a, &large_b, &large), (&small_a, &small_b, &small)]
                        {
                            let (x, y) =
                                pool.install(|| two_products((left, right), (c.view(), d.view())));
                            assert_eq!(bits(&one), bits(&x), "{m}×{k}×{n}, beside another");
                            assert_eq!(*want, bits(&y), "{m}×{k}×{n}, the other");
                            let (y, x) =
                                pool.install(|| two_products((c.view(), d.view()), (left, right)));
                            assert_eq!(bits(&one), bits(&x), "{m}×{k}×{n}, after another");
                            assert_eq!(*want, bits(&y), "{m}×{k}×{n}, the other first");
                        }
                    }
                    assert_eq!(
                        bits(&one),
                        bits(&whole(left, right)),
                        "{m}×{k}×{n}: one call"
                    );
                }
            }
        }
        assert!(split >= 40, "only {split} of the products were shared");
    }

    /// A product's tasks cover its columns, or its rows, once and in
    /// order, each on the whole product's path: narrow ones for a left side
    /// stored row by row, else one per thread, of rows only for a result
    /// taller than wide.
    #[test]
    fn tasks_cover_the_result_once_on_the_whole_products_path() {
        for (m, k, n) in [
            (1024, 128, 256),
            (128, 256, 1024),
            (128, 1024, 256),
            (128, 256, 65),
            (2, 1000, 63),
            (3, 700, 500),
            (1, 1024, 1024),
            (300, 300, 17),
        ] {
            let (a, b) = (filled(m, k, 1), filled(k, n, 2));
            let a_t = stored_transposed(&a);
            for (left, threads) in [
                (a.view(), 1),
                (a.view(), 2),
                (a_t.t(), 1),
                (a_t.t(), 2),
                (a_t.t(), 3),
            ] {
                let (by_rows, list) = tasks(&left, &b.view(), threads);
                let long = if by_rows { m } else { n };
                let mut at = 0;
                for &(from, to) in &list {
                    assert_eq!(from, at, "{m}×{k}×{n}: {list:?}");
                    let (rows, cols) = if by_rows {
                        (to - from, n)
                    } else {
                        (m, to - from)
                    };
                    assert!(
                        list.len() == 1 || same_path(rows, k, cols),
                        "{m}×{k}×{n}: {list:?}"
                    );
                    at = to;
                }
                assert_eq!(at, long, "{m}×{k}×{n}: {list:?}");
                assert!(!by_rows || m > n, "{m}×{k}×{n}: cut by rows");
                if left.strides()[1] == 1 && m >= 2 && n >= 2 * TASK {
                    assert_eq!(list.len(), n / TASK, "{m}×{k}×{n}: {list:?}");
                } else {
                    assert!(list.len() <= threads, "{m}×{k}×{n} on {threads}: {list:?}");
                }
            }
        }
    }

    /// Tasks are taken from either end, each once, until none is left.
    #[test]
    fn each_task_is_taken_once_from_either_end() {
        let (a, b) = (filled(256, 128, 1), filled(256, 1024, 2));
        let halves: &[(usize, usize)] = &[(0, 512), (512, 1024)];
        assert_eq!(tasks(&a.t(), &b.view(), 2), (false, halves.into()));
        // A result with more rows than columns is cut by rows.
        let (a, b) = (filled(128, 1024, 1), filled(128, 256, 2));
        assert_eq!(tasks(&a.t(), &b.view(), 2), (true, halves.into()));
        let untaken = AtomicU64::new(4 << 32);
        assert_eq!(next_task(&untaken, true), Some(0));
        assert_eq!(next_task(&untaken, false), Some(3));
        assert_eq!(next_task(&untaken, false), Some(2));
        assert_eq!(next_task(&untaken, true), Some(1));
        assert_eq!(next_task(&untaken, true), None);
        assert_eq!(next_task(&untaken, false), None);
    }

    #[test]
    fn products_of_plain_and_transposed_views() {
        let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let b = array![[1.0, 0.5], [0.0, -1.0], [2.0, 1.0]];
        assert_eq!(product(a.view(), b.view()), a.dot(&b));
        assert_eq!(product(b.t(), a.t()), b.t().dot(&a.t()));
        assert_eq!(product(a.t(), a.view()), a.t().dot(&a));
    }
}
