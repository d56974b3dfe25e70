//! Products of small matrices, written out for AVX-512 and for AVX2 with
//! FMA: the forward products and the blame rules' products of the course's
//! smallest models, and with AVX-512 those of the middling ones too.
//!
//! At those sizes a product is a few thousand multiply-adds, and `faer`
//! spends about as long choosing and setting up its kernel as the kernel
//! runs. Here six rows of the result and thirty-two of its columns (four
//! AVX-512 registers of eight) sit in registers while the depth is walked
//! once, each step reading one row of the right side; the columns left
//! over go four rows by sixteen. A right side stored column by column (a
//! transposed weight, as the left side's blame rule reads it) is first
//! copied row by row, eight by eight through registers. Without AVX-512,
//! four rows and eight columns (two AVX2 registers of four) sit in
//! registers, and a right side stored column by column is copied four by
//! four. Either way each element is the same chain of fused multiply-adds,
//! so the two give the same bits.
//!
//! With AVX-512 the products of up to 1Mi multiply-adds (and a depth up to
//! 256 from 64Ki) are done here, which takes in all the size M model's (a
//! 32×64 by 64×256 product is 512Ki): `faer`'s AVX-512 kernel is 48 of the
//! result's columns wide (in its own, transposed, view of a product stored
//! by rows), so it does a product 64 columns wide in a block of 48 and one
//! of 16, with a third as many sums in flight; here that is two blocks of
//! 32. Timed in a loop, each of a size M step's shapes took 4–21% less
//! time here than in `faer`. With AVX2 the kernel stays on the smallest
//! products, where it was measured.
//!
//! Each element is the sum `faer` forms, bit for bit: one fused multiply
//! -add per step of the depth, in order; `faer` does not split a sum of up
//! to 64 steps, nor, in products of more than 64Ki multiply-adds, one of up
//! to 256. Even the sign of a zero result is the same: `faer`'s
//! kernels for products of up to 16×16×16 with a depth up to 16 start each
//! sum with the first product, so that -0 · 1 gives -0, and its other
//! kernels start from +0, so that it gives +0; so does this one.

use ndarray::{Array2, ArrayView2};

/// The most multiply-adds (rows × depth × columns) a product done here
/// has, with AVX-512 ...
const MOST_AVX512: usize = 1 << 20;
/// ... and with AVX2.
const MOST_AVX2: usize = 1 << 15;

/// The deepest product done here. `faer`'s kernels for products of up to
/// 16×16×16 split a sum deeper than 64 into pieces when the right side is
/// stored column by column ...
const DEEPEST: usize = 64;
/// ... but with AVX-512 a product of more than [`DEEP_FROM`] multiply-adds
/// may be this deep: `faer` takes each such sum whole, in order, from +0
/// (`middling_products_give_the_bits_of_one_call` checks every depth of a
/// size M step).
const DEEPEST_AVX512: usize = 256;
/// The multiply-adds above which an AVX-512 product may be deeper than
/// [`DEEPEST`]: far from `faer`'s paths for the smallest products.
const DEEP_FROM: usize = 1 << 16;

/// `faer` starts a sum with its first product, rather than from +0, in
/// products of at most this many multiply-adds ...
#[cfg(target_arch = "x86_64")]
const FIRST_PRODUCT_MOST: usize = 16 * 16 * 16;
/// ... and at most this depth.
#[cfg(target_arch = "x86_64")]
const FIRST_PRODUCT_DEEPEST: usize = 16;

/// The instructions a small product is done with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Avx512,
    Avx2,
}

/// The best kernel this CPU has, if any.
fn kernel() -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Some(Kernel::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Some(Kernel::Avx2);
        }
    }
    None
}

/// Every kernel this CPU has, for the tests.
#[cfg(test)]
pub(super) fn kernels_here() -> Vec<Kernel> {
    let mut here = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            here.push(Kernel::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            here.push(Kernel::Avx2);
        }
    }
    here
}

thread_local! {
    /// The copy, row by row, of a right side stored column by column: one
    /// buffer per thread, taken for a product and put back after it, so
    /// that the walk's products with a transposed side (a few a step) do
    /// not each allocate one.
    static PACKED: std::cell::Cell<Vec<f64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `a · b`, if it is small, `b`'s rows or its columns are each in one
/// piece of memory, and this CPU has AVX-512F or AVX2 with FMA; `None`
/// otherwise, and then `faer` does it. Products with a single row, column
/// or step of depth are left to `faer` too, which takes other paths for
/// them.
pub fn product(a: &ArrayView2<f64>, b: &ArrayView2<f64>) -> Option<Array2<f64>> {
    product_with(a, b, kernel()?)
}

/// Whether [`product`] takes `a · b`.
pub fn takes(a: &ArrayView2<f64>, b: &ArrayView2<f64>) -> bool {
    kernel().is_some_and(|kernel| fits(a, b, kernel))
}

/// Whether `kernel` takes `a · b`: its size and depth, and a right side
/// stored by rows or by columns.
fn fits(a: &ArrayView2<f64>, b: &ArrayView2<f64>, kernel: Kernel) -> bool {
    let (m, k) = a.dim();
    let n = b.ncols();
    let most = match kernel {
        Kernel::Avx512 => MOST_AVX512,
        Kernel::Avx2 => MOST_AVX2,
    };
    let deepest = if kernel == Kernel::Avx512 && m * k * n > DEEP_FROM {
        DEEPEST_AVX512
    } else {
        DEEPEST
    };
    let (b_rows, b_cols) = (b.strides()[0], b.strides()[1]);
    m >= 2
        && n >= 2
        && (2..=deepest).contains(&k)
        && m * k * n <= most
        && (b_cols == 1 || b_rows == 1)
}

/// [`product`] with `kernel`, which the CPU must have.
pub(super) fn product_with(
    a: &ArrayView2<f64>,
    b: &ArrayView2<f64>,
    kernel: Kernel,
) -> Option<Array2<f64>> {
    if !fits(a, b, kernel) {
        return None;
    }
    let (m, k) = a.dim();
    let n = b.ncols();
    let (b_rows, b_cols) = (b.strides()[0], b.strides()[1]);
    #[cfg(target_arch = "x86_64")]
    if kernel == Kernel::Avx2 {
        assert!(
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        );
        let mut packed = PACKED.take();
        let (b_ptr, b_rows) = if b_cols == 1 {
            (b.as_ptr(), b_rows)
        } else {
            // SAFETY: the CPU has AVX2; `b` is a valid k×n view with row
            // stride 1 and column stride `b_cols`.
            unsafe { rows_of_columns_avx2(b.as_ptr(), k, n, b_cols, &mut packed) };
            (packed.as_ptr(), n as isize)
        };
        let mut out = Array2::<f64>::uninit((m, n));
        let whole = Block {
            k,
            a: a.as_ptr(),
            a_rows: a.strides()[0],
            a_cols: a.strides()[1],
            b: b_ptr,
            b_rows,
            out: out.as_mut_ptr().cast::<f64>(),
            out_rows: n,
            masks: [0xff; 4],
            from_first: k <= FIRST_PRODUCT_DEEPEST && m * k * n <= FIRST_PRODUCT_MOST,
        };
        // SAFETY: the CPU has AVX2 and FMA, asserted just above; the
        // matrices are as for the AVX-512 kernel below.
        unsafe { product_avx2(m, n, &whole) };
        PACKED.set(packed);
        // SAFETY: `product_avx2` wrote every element.
        return Some(unsafe { out.assume_init() });
    }
    #[cfg(target_arch = "x86_64")]
    if kernel == Kernel::Avx512 {
        assert!(std::arch::is_x86_feature_detected!("avx512f"));
        // A right side stored column by column is copied row by row first.
        let mut packed = PACKED.take();
        let (b_ptr, b_rows) = if b_cols == 1 {
            (b.as_ptr(), b_rows)
        } else {
            // SAFETY: the CPU has AVX-512F; `b` is a valid k×n view with
            // row stride 1 and column stride `b_cols`.
            unsafe { rows_of_columns(b.as_ptr(), k, n, b_cols, &mut packed) };
            (packed.as_ptr(), n as isize)
        };
        let mut out = Array2::<f64>::uninit((m, n));
        let whole = Block {
            k,
            a: a.as_ptr(),
            a_rows: a.strides()[0],
            a_cols: a.strides()[1],
            b: b_ptr,
            b_rows,
            out: out.as_mut_ptr().cast::<f64>(),
            out_rows: n,
            masks: [0xff; 4],
            from_first: k <= FIRST_PRODUCT_DEEPEST && m * k * n <= FIRST_PRODUCT_MOST,
        };
        // SAFETY: the CPU has AVX-512F, checked just above. `a` is a valid
        // m×k view and `b_ptr` a k×n matrix whose rows are in one piece,
        // `b_rows` apart (`b` itself or its copy), both alive for this
        // call; `out` is a fresh m×n block in standard layout, which
        // `product_avx512` writes whole.
        unsafe { product_avx512(m, n, &whole) };
        PACKED.set(packed);
        // SAFETY: `product_avx512` wrote every element.
        return Some(unsafe { out.assume_init() });
    }
    None
}

/// The k×n matrix stored column after column at `b` (column `j` from
/// `b + j·columns`, its k elements in one piece), row after row in a new
/// vector: eight by eight through registers, the ragged edges one by one.
///
/// # Safety
/// The CPU has AVX-512F; `b` holds such a matrix.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rows_of_columns(b: *const f64, k: usize, n: usize, columns: isize, out: &mut Vec<f64>) {
    use std::arch::x86_64::*;
    out.clear();
    out.reserve(k * n);
    let to = out.as_mut_ptr();
    let at = |p: usize, j: usize| b.wrapping_offset(j as isize * columns + p as isize);
    let idx = |i: [i64; 8]| _mm512_set_epi64(i[7], i[6], i[5], i[4], i[3], i[2], i[1], i[0]);
    let (pairs_low, pairs_high) = (
        idx([0, 1, 8, 9, 4, 5, 12, 13]),
        idx([2, 3, 10, 11, 6, 7, 14, 15]),
    );
    let (low_half, high_half) = (
        idx([0, 1, 2, 3, 8, 9, 10, 11]),
        idx([4, 5, 6, 7, 12, 13, 14, 15]),
    );
    let (k8, n8) = (k / 8 * 8, n / 8 * 8);
    for j in (0..n8).step_by(8) {
        for p in (0..k8).step_by(8) {
            // r[c] = elements p..p + 8 of column j + c.
            // SAFETY: rows p..p + 8 of columns j..j + 8 are in the matrix.
            let r: [__m512d; 8] = std::array::from_fn(|c| unsafe { _mm512_loadu_pd(at(p, j + c)) });
            // Pairs of columns interleaved: even elements, then odd ones.
            let lo = |x, y| _mm512_unpacklo_pd(x, y);
            let hi = |x, y| _mm512_unpackhi_pd(x, y);
            let (even01, odd01) = (lo(r[0], r[1]), hi(r[0], r[1]));
            let (even23, odd23) = (lo(r[2], r[3]), hi(r[2], r[3]));
            let (even45, odd45) = (lo(r[4], r[5]), hi(r[4], r[5]));
            let (even67, odd67) = (lo(r[6], r[7]), hi(r[6], r[7]));
            // Then four columns: elements 0 and 4 (or 1 and 5, 2 and 6, 3
            // and 7) of columns 0-3 and of columns 4-7.
            let mix = |x, i, y| _mm512_permutex2var_pd(x, i, y);
            let (r0_4, r2_6) = (
                mix(even01, pairs_low, even23),
                mix(even01, pairs_high, even23),
            );
            let (r1_5, r3_7) = (mix(odd01, pairs_low, odd23), mix(odd01, pairs_high, odd23));
            let (s0_4, s2_6) = (
                mix(even45, pairs_low, even67),
                mix(even45, pairs_high, even67),
            );
            let (s1_5, s3_7) = (mix(odd45, pairs_low, odd67), mix(odd45, pairs_high, odd67));
            // And all eight: row q of the block.
            let rows = [
                mix(r0_4, low_half, s0_4),
                mix(r1_5, low_half, s1_5),
                mix(r2_6, low_half, s2_6),
                mix(r3_7, low_half, s3_7),
                mix(r0_4, high_half, s0_4),
                mix(r1_5, high_half, s1_5),
                mix(r2_6, high_half, s2_6),
                mix(r3_7, high_half, s3_7),
            ];
            for (q, row) in rows.into_iter().enumerate() {
                // SAFETY: row p + q, columns j..j + 8 of the k×n output.
                unsafe { _mm512_storeu_pd(to.add((p + q) * n + j), row) };
            }
        }
    }
    for p in 0..k {
        let columns = if p < k8 { n8..n } else { 0..n };
        for j in columns {
            // SAFETY: element (p, j) of both.
            unsafe { to.add(p * n + j).write(*at(p, j)) };
        }
    }
    // SAFETY: every element of the k×n output was written above.
    unsafe { out.set_len(k * n) };
}

/// The m×n product that `whole` describes (its masks are not read): in
/// blocks of six rows (fewer in the last) by thirty-two columns while
/// thirty-two columns are left, then in blocks of four rows (fewer in the
/// last) by sixteen columns (fewer, masked, in the last).
///
/// # Safety
/// The CPU has AVX-512F; `whole`'s pointers and strides describe valid
/// matrices: `a` m×k, `b` k×n with its rows in one piece, `out` m×n in
/// standard layout, overlapping neither.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn product_avx512(m: usize, n: usize, whole: &Block) {
    let mut col = 0;
    while n - col >= 32 {
        let mut row = 0;
        while row < m {
            let block = whole.at(row, col, [0xff; 4]);
            // SAFETY: the block's rows `row..row + rows` and its 32
            // columns `col..col + 32` lie inside the matrices (the caller's
            // contract).
            unsafe {
                match m - row {
                    1 => block.run::<1, 4>(),
                    2 => block.run::<2, 4>(),
                    3 => block.run::<3, 4>(),
                    4 => block.run::<4, 4>(),
                    5 => block.run::<5, 4>(),
                    _ => block.run::<6, 4>(),
                }
            }
            row += 6;
        }
        col += 32;
    }
    while col < n {
        let left = n - col;
        let mut row = 0;
        while row < m {
            let block = whole.at(row, col, [lanes(left), lanes(left.saturating_sub(8)), 0, 0]);
            // SAFETY: the block's rows `row..row + rows` and its unmasked
            // columns lie inside the matrices (the caller's contract).
            unsafe {
                match (m - row, left > 8) {
                    (1, false) => block.run::<1, 1>(),
                    (2, false) => block.run::<2, 1>(),
                    (3, false) => block.run::<3, 1>(),
                    (_, false) => block.run::<4, 1>(),
                    (1, true) => block.run::<1, 2>(),
                    (2, true) => block.run::<2, 2>(),
                    (3, true) => block.run::<3, 2>(),
                    (_, true) => block.run::<4, 2>(),
                }
            }
            row += 4;
        }
        col += 16;
    }
}

/// [`rows_of_columns`] with AVX2: four by four through registers, the
/// ragged edges one by one.
///
/// # Safety
/// The CPU has AVX2; `b` holds such a matrix.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_of_columns_avx2(
    b: *const f64,
    k: usize,
    n: usize,
    columns: isize,
    out: &mut Vec<f64>,
) {
    use std::arch::x86_64::*;
    out.clear();
    out.reserve(k * n);
    let to = out.as_mut_ptr();
    let at = |p: usize, j: usize| b.wrapping_offset(j as isize * columns + p as isize);
    let (k4, n4) = (k / 4 * 4, n / 4 * 4);
    for j in (0..n4).step_by(4) {
        for p in (0..k4).step_by(4) {
            // r[c] = elements p..p + 4 of column j + c.
            // SAFETY: rows p..p + 4 of columns j..j + 4 are in the matrix.
            let r: [__m256d; 4] = std::array::from_fn(|c| unsafe { _mm256_loadu_pd(at(p, j + c)) });
            // Pairs of columns interleaved, then their halves exchanged:
            // row q holds element q of each of the four columns.
            let (even01, odd01) = (
                _mm256_unpacklo_pd(r[0], r[1]),
                _mm256_unpackhi_pd(r[0], r[1]),
            );
            let (even23, odd23) = (
                _mm256_unpacklo_pd(r[2], r[3]),
                _mm256_unpackhi_pd(r[2], r[3]),
            );
            let rows = [
                _mm256_permute2f128_pd::<0x20>(even01, even23),
                _mm256_permute2f128_pd::<0x20>(odd01, odd23),
                _mm256_permute2f128_pd::<0x31>(even01, even23),
                _mm256_permute2f128_pd::<0x31>(odd01, odd23),
            ];
            for (q, row) in rows.into_iter().enumerate() {
                // SAFETY: row p + q, columns j..j + 4 of the k×n output.
                unsafe { _mm256_storeu_pd(to.add((p + q) * n + j), row) };
            }
        }
    }
    for p in 0..k {
        let columns = if p < k4 { n4..n } else { 0..n };
        for j in columns {
            // SAFETY: element (p, j) of both.
            unsafe { to.add(p * n + j).write(*at(p, j)) };
        }
    }
    // SAFETY: every element of the k×n output was written above.
    unsafe { out.set_len(k * n) };
}

/// The m×n product that `whole` describes (its masks are not read), in
/// blocks of four rows (fewer in the last) by eight columns (fewer, masked,
/// in the last).
///
/// # Safety
/// The CPU has AVX2 and FMA; otherwise as for [`product_avx512`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn product_avx2(m: usize, n: usize, whole: &Block) {
    let mut col = 0;
    while col < n {
        let left = n - col;
        let mut row = 0;
        while row < m {
            let block = whole.at(row, col, [lanes(left), lanes(left.saturating_sub(4)), 0, 0]);
            // SAFETY: as in `product_avx512`, with halves of four lanes.
            unsafe {
                match (m - row, left >= 8, left > 4) {
                    (1, true, _) => block.run_avx2::<1, 2, true>(),
                    (2, true, _) => block.run_avx2::<2, 2, true>(),
                    (3, true, _) => block.run_avx2::<3, 2, true>(),
                    (_, true, _) => block.run_avx2::<4, 2, true>(),
                    (1, false, false) => block.run_avx2::<1, 1, false>(),
                    (2, false, false) => block.run_avx2::<2, 1, false>(),
                    (3, false, false) => block.run_avx2::<3, 1, false>(),
                    (_, false, false) => block.run_avx2::<4, 1, false>(),
                    (1, false, true) => block.run_avx2::<1, 2, false>(),
                    (2, false, true) => block.run_avx2::<2, 2, false>(),
                    (3, false, true) => block.run_avx2::<3, 2, false>(),
                    (_, false, true) => block.run_avx2::<4, 2, false>(),
                }
            }
            row += 4;
        }
        col += 8;
    }
}

/// The mask of the first `count` of eight lanes (all of them from eight).
#[cfg(target_arch = "x86_64")]
fn lanes(count: usize) -> u8 {
    if count >= 8 {
        0xff
    } else {
        ((1u16 << count) - 1) as u8
    }
}

/// One block of the result, up to six rows by up to thirty-two columns,
/// or the whole product: where its operands and its part of the result
/// lie.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Block {
    k: usize,
    a: *const f64,
    a_rows: isize,
    a_cols: isize,
    b: *const f64,
    b_rows: isize,
    out: *mut f64,
    out_rows: usize,
    /// Which lanes of each of the block's eight-column parts (with AVX2,
    /// the first two, four-column halves) are in the matrix.
    masks: [u8; 4],
    /// Whether each sum starts with its first product instead of +0.
    from_first: bool,
}

#[cfg(target_arch = "x86_64")]
impl Block {
    /// The block of the whole product (`self`) whose first element is at
    /// `row`, `col`, its parts' lanes given by `masks`.
    fn at(&self, row: usize, col: usize, masks: [u8; 4]) -> Block {
        Block {
            a: self.a.wrapping_offset(row as isize * self.a_rows),
            b: self.b.wrapping_add(col),
            out: self.out.wrapping_add(row * self.out_rows + col),
            masks,
            ..*self
        }
    }

    /// The block's `ROWS` rows and `PARTS` eight-column parts (one, two
    /// or four): each of its elements is a chain of fused multiply-adds over
    /// the depth.
    ///
    /// # Safety
    /// The CPU has AVX-512F; rows `0..ROWS` of `a` (each `k` long) and the
    /// unmasked lanes of `b`'s `k` rows and `out`'s `ROWS` rows are valid.
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const ROWS: usize, const PARTS: usize>(&self) {
        use std::arch::x86_64::*;
        let mut sums = [[_mm512_setzero_pd(); PARTS]; ROWS];
        let b_row = |p: usize| {
            let row = self.b.wrapping_offset(p as isize * self.b_rows);
            // SAFETY: masked-off lanes are neither read nor faulted on.
            std::array::from_fn::<_, PARTS, _>(|h| unsafe {
                _mm512_maskz_loadu_pd(self.masks[h], row.wrapping_add(8 * h))
            })
        };
        let a_at = |r: usize, p: usize| {
            let at = r as isize * self.a_rows + p as isize * self.a_cols;
            // SAFETY: row r < ROWS and step p < k of `a` are in it.
            _mm512_set1_pd(unsafe { *self.a.wrapping_offset(at) })
        };
        let mut from = 0;
        if self.from_first {
            let b = b_row(0);
            for (r, sum) in sums.iter_mut().enumerate() {
                let x = a_at(r, 0);
                for (s, b) in sum.iter_mut().zip(&b) {
                    *s = _mm512_mul_pd(x, *b);
                }
            }
            from = 1;
        }
        for p in from..self.k {
            let b = b_row(p);
            for (r, sum) in sums.iter_mut().enumerate() {
                let x = a_at(r, p);
                for (s, b) in sum.iter_mut().zip(&b) {
                    *s = _mm512_fmadd_pd(x, *b, *s);
                }
            }
        }
        for (r, sum) in sums.iter().enumerate() {
            let out_row = self.out.wrapping_add(r * self.out_rows);
            for (h, s) in sum.iter().enumerate() {
                // SAFETY: masked-off lanes are not written.
                unsafe { _mm512_mask_storeu_pd(out_row.wrapping_add(8 * h), self.masks[h], *s) };
            }
        }
    }

    /// [`Block::run`] with AVX2: `HALVES` halves of four columns, whose
    /// lanes the low four bits of each of `masks` give; when `FULL`, every
    /// lane of both halves, which are then read and written whole (AVX2's
    /// masked stores are slow on some CPUs).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; otherwise as for [`Block::run`].
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_avx2<const ROWS: usize, const HALVES: usize, const FULL: bool>(&self) {
        use std::arch::x86_64::*;
        // A lane is loaded and stored where its mask's top bit is set.
        let lane_mask = |bits: u8| {
            let on = |i: u8| if bits & (1 << i) != 0 { -1 } else { 0 };
            _mm256_set_epi64x(on(3), on(2), on(1), on(0))
        };
        let masks: [__m256i; HALVES] = std::array::from_fn(|h| lane_mask(self.masks[h]));
        let mut sums = [[_mm256_setzero_pd(); HALVES]; ROWS];
        let b_row = |p: usize| {
            let row = self.b.wrapping_offset(p as isize * self.b_rows);
            // SAFETY: masked-off lanes are neither read nor faulted on;
            // when FULL, every lane is in the matrix.
            std::array::from_fn::<_, HALVES, _>(|h| unsafe {
                if FULL {
                    _mm256_loadu_pd(row.wrapping_add(4 * h))
                } else {
                    _mm256_maskload_pd(row.wrapping_add(4 * h), masks[h])
                }
            })
        };
        let a_at = |r: usize, p: usize| {
            let at = r as isize * self.a_rows + p as isize * self.a_cols;
            // SAFETY: row r < ROWS and step p < k of `a` are in it.
            _mm256_set1_pd(unsafe { *self.a.wrapping_offset(at) })
        };
        let mut from = 0;
        if self.from_first {
            let b = b_row(0);
            for (r, sum) in sums.iter_mut().enumerate() {
                let x = a_at(r, 0);
                for (s, b) in sum.iter_mut().zip(&b) {
                    *s = _mm256_mul_pd(x, *b);
                }
            }
            from = 1;
        }
        for p in from..self.k {
            let b = b_row(p);
            for (r, sum) in sums.iter_mut().enumerate() {
                let x = a_at(r, p);
                for (s, b) in sum.iter_mut().zip(&b) {
                    *s = _mm256_fmadd_pd(x, *b, *s);
                }
            }
        }
        for (r, sum) in sums.iter().enumerate() {
            let out_row = self.out.wrapping_add(r * self.out_rows);
            for (h, s) in sum.iter().enumerate() {
                // SAFETY: masked-off lanes are not written; when FULL,
                // every lane is in the matrix.
                unsafe {
                    if FULL {
                        _mm256_storeu_pd(out_row.wrapping_add(4 * h), *s);
                    } else {
                        _mm256_maskstore_pd(out_row.wrapping_add(4 * h), masks[h], *s);
                    }
                }
            }
        }
    }
}
