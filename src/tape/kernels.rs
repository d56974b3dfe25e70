//! Elementwise kernels written so the compiler can vectorise them.
//!
//! `tanh` is the costliest elementwise function of the course's models. This
//! one is branch-free (both formulas are computed and one is selected), so a
//! loop over a slice becomes SIMD code; on x86-64 each loop is also compiled
//! for AVX-512 and AVX2 and chosen at run time (`best_simd!`). No fused
//! multiply-add is used, so every path gives the same bits. It agrees with
//! the C library's `tanh` to within 2 units in the last place.

use std::mem::MaybeUninit;

/// Defines `$name`, which runs the inlined portable body `$body` compiled
/// for AVX-512 or AVX2 when the CPU has them (checked on each call, which
/// costs a load), and as it is otherwise. No fused multiply-add is enabled,
/// so every path gives the same bits.
macro_rules! best_simd {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? = $body:ident;) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn wide($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn narrow($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F, checked just above.
                    return unsafe { wide($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU has AVX2, checked just above.
                    return unsafe { narrow($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

/// `|x| < 0.625`: tanh(x) = x + x·z·P(z)/Q(z), z = x² (Cephes' rational form).
const P: [f64; 3] = [
    -9.643_991_794_250_523e-1,
    -9.928_772_310_019_186e1,
    -1.614_687_684_417_084_5e3,
];
const Q: [f64; 3] = [
    1.128_116_784_916_329_3e2,
    2.235_488_390_601_004_5e3,
    4.844_063_053_251_255e3,
];

/// e^y for -708 ≤ y ≤ 709 (a normal result), in parts: y = n·ln 2 + r with
/// |r| ≤ ln 2 / 2, and e^r = (Q+P)/(Q−P) by a Padé form; gives (2^n, P, Q).
#[inline(always)]
fn exp_parts(y: f64) -> (f64, f64, f64) {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    const LN2_HI: f64 = 6.931_457_519_531_25e-1;
    const LN2_LO: f64 = 1.428_606_820_309_417_2e-6;
    // 1.5 · 2^52: adding it leaves n in the low bits of the mantissa.
    const SHIFTER: f64 = 6_755_399_441_055_744.0;
    let n = (y * LOG2E + 0.5).floor();
    let r = y - n * LN2_HI - n * LN2_LO;
    let rr = r * r;
    let p = r * ((1.261_771_930_748_105_9e-4 * rr + 3.029_944_077_074_419_6e-2) * rr + 1.0);
    let q = ((3.001_985_051_386_644_5e-6 * rr + 2.524_483_403_496_841e-3) * rr
        + 2.272_655_482_081_550_3e-1)
        * rr
        + 2.0;
    let n_bits = (n + SHIFTER).to_bits().wrapping_sub(SHIFTER.to_bits());
    (f64::from_bits(n_bits.wrapping_add(1023) << 52), p, q)
}

/// e^y for -708 ≤ y ≤ 709 (a normal result), from [`exp_parts`].
#[inline(always)]
fn exp_small_range(y: f64) -> f64 {
    let (two_n, p, q) = exp_parts(y);
    (1.0 + 2.0 * p / (q - p)) * two_n
}

/// tanh(x); a NaN stays a NaN.
///
/// Both forms end in one quotient, so they share one division: for small
/// |x|, tanh(x) = x + x·z·(p/q); for large |x|, with e^(2|x|) = 2^n·(Q+P)/(Q−P)
/// from [`exp_parts`], tanh|x| = 1 − 2/(e^(2|x|) + 1)
/// = 1 − 2(Q−P) / (2^n·(Q+P) + (Q−P)).
#[inline(always)]
pub fn tanh(x: f64) -> f64 {
    let a = x.abs();
    let z = x * x;
    let p = (P[0] * z + P[1]) * z + P[2];
    let q = ((z + Q[0]) * z + Q[1]) * z + Q[2];
    // e^y, y = 2·min(|x|, 40).
    let (two_n, big_p, big_q) = exp_parts(2.0 * a.min(40.0));
    let small_form = a < 0.625;
    let (num, den) = if small_form {
        (p, q)
    } else {
        (
            2.0 * (big_q - big_p),
            two_n * (big_q + big_p) + (big_q - big_p),
        )
    };
    let t = num / den;
    // x + x·z·t would turn -0 into +0; zero keeps its sign.
    let small = if a == 0.0 { x } else { x + x * z * t };
    let large = (1.0 - t).copysign(x);
    // `min` above turned a NaN into 40: hand the NaN itself on.
    if small_form {
        small
    } else if a.is_nan() {
        x
    } else {
        large
    }
}

/// Whether any element is a NaN.
pub fn any_nan(xs: &[f64]) -> bool {
    bound(xs).is_nan()
}

/// Whether every element is finite (no infinity, no NaN).
pub fn all_finite(xs: &[f64]) -> bool {
    bound(xs).is_finite()
}

/// The largest magnitude among the elements: NaN if any is a NaN, else
/// infinity if any is infinite, else the largest `|x|` (0 for none). One
/// branch-free pass that vectorises; only when some element is not finite
/// are they looked at one by one.
pub fn bound(xs: &[f64]) -> f64 {
    bound_in(halves(xs.len()), xs)
}

/// [`bound`], of the two halves at once when `split`.
fn bound_in(split: bool, xs: &[f64]) -> f64 {
    if split {
        // The largest of the halves' bounds, a NaN in either first.
        let (low, high) = xs.split_at(xs.len() / 2);
        let (low, high) = crate::threads::join(|| bound_whole(low), || bound_whole(high));
        return if low.is_nan() || high.is_nan() {
            f64::NAN
        } else {
            low.max(high)
        };
    }
    bound_whole(xs)
}

/// [`bound`] in one pass on this thread.
fn bound_whole(xs: &[f64]) -> f64 {
    if xs.len() <= 8 {
        // A tiny matrix: setting up and reducing vector lanes would cost
        // more than looking at each element.
        return match xs
            .iter()
            .try_fold(0.0f64, |big, x| x.is_finite().then(|| big.max(x.abs())))
        {
            Some(big) => big,
            None => not_finite(xs),
        };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F, checked just above.
        return unsafe { bound_avx512(xs) }.unwrap_or_else(|| not_finite(xs));
    }
    bound_simd(xs).unwrap_or_else(|| not_finite(xs))
}

/// What `bound` gives when some element is not finite.
fn not_finite(xs: &[f64]) -> f64 {
    if holds_nan(xs) {
        f64::NAN
    } else {
        f64::INFINITY
    }
}

/// Whether some element is a NaN: every element looked at, branch-free, so
/// that the loop vectorises (a causal mask's -inf sends every sum of
/// attention scores here).
#[inline(always)]
fn holds_nan_portable(xs: &[f64]) -> bool {
    xs.iter().fold(false, |nan, x| nan | x.is_nan())
}

best_simd! {
    fn holds_nan(xs: &[f64]) -> bool = holds_nan_portable;
}

best_simd! {
    fn bound_simd(xs: &[f64]) -> Option<f64> = bound_portable;
}

/// `bound_portable` written out for AVX-512, where the compiler's own
/// vectorising of it spends more on setting up and reducing its lanes than
/// on a small matrix.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn bound_avx512(xs: &[f64]) -> Option<f64> {
    use std::arch::x86_64::*;
    let zero = _mm512_setzero_pd();
    let mut sums = [zero; 4];
    let mut bigs = [zero; 4];
    let mut step = |j: usize, x: __m512d| {
        sums[j] = _mm512_add_pd(sums[j], _mm512_mul_pd(x, zero));
        // max_pd keeps its second operand when the first is a NaN; a NaN
        // shows in the sums anyway.
        bigs[j] = _mm512_max_pd(_mm512_abs_pd(x), bigs[j]);
    };
    let mut chunks = xs.chunks_exact(32);
    for chunk in &mut chunks {
        for j in 0..4 {
            // SAFETY: the chunk holds 32 elements; this reads 8 from 8j on.
            step(j, unsafe { _mm512_loadu_pd(chunk.as_ptr().add(8 * j)) });
        }
    }
    for (j, piece) in chunks.remainder().chunks(8).enumerate() {
        let mask = ((1u32 << piece.len()) - 1) as u8;
        // SAFETY: the mask covers only the piece's own elements, and masked
        // -off lanes are not read (they are 0).
        step(j, unsafe { _mm512_maskz_loadu_pd(mask, piece.as_ptr()) });
    }
    let total = _mm512_add_pd(
        _mm512_add_pd(sums[0], sums[1]),
        _mm512_add_pd(sums[2], sums[3]),
    );
    if _mm512_cmp_pd_mask::<_CMP_NEQ_UQ>(total, zero) != 0 {
        return None;
    }
    let big = _mm512_max_pd(
        _mm512_max_pd(bigs[0], bigs[1]),
        _mm512_max_pd(bigs[2], bigs[3]),
    );
    Some(_mm512_reduce_max_pd(big))
}

/// The largest `|x|`, or `None` if some element is not finite.
#[inline(always)]
fn bound_portable(xs: &[f64]) -> Option<f64> {
    // `x * 0` is ±0 for every finite `x` and a NaN for a NaN or an
    // infinity, so running sums of it stay 0 unless one of those goes by.
    // The multiply and the add run on different units, and sixteen sums
    // side by side keep the adds from waiting on each other.
    const LANES: usize = 16;
    let mut sums = [0.0f64; LANES];
    let mut bigs = [0.0f64; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for chunk in &mut chunks {
        for ((sum, big), x) in sums.iter_mut().zip(&mut bigs).zip(chunk) {
            *sum += x * 0.0;
            // A compare and select, not `f64::max`: a NaN shows in the sums.
            let a = x.abs();
            *big = if a > *big { a } else { *big };
        }
    }
    // The tail has sums of its own: adding it into the lanes would index
    // them by a length known only at run time, and the compiler would then
    // keep the lanes in memory instead of in registers.
    let (mut tail_sum, mut tail_big) = (0.0, 0.0f64);
    for x in chunks.remainder() {
        tail_sum += x * 0.0;
        tail_big = tail_big.max(x.abs());
    }
    let finite = tail_sum == 0.0 && sums.iter().all(|s| *s == 0.0);
    finite.then(|| bigs.iter().fold(tail_big, |m, b| m.max(*b)))
}

/// Running sums side by side in [`sum`], [`dot`] and [`sum_squared_from`].
const SUM_LANES: usize = 8;

/// Σ f(x, y) over two slices of one length, in a fixed order: element i
/// goes to running sum i mod 8, the eight sums are added in pairs, then the
/// tail after the last full eight one by one. Eight sums side by side keep
/// each add from waiting for the one before (a row's sum taken one element
/// at a time waits four cycles per element); the order is written out, not
/// left to the compiler, so every CPU path gives the same bits.
#[inline(always)]
fn lane_sum(xs: &[f64], ys: &[f64], f: impl Fn(f64, f64) -> f64) -> f64 {
    debug_assert_eq!(xs.len(), ys.len());
    let mut lanes = [0.0f64; SUM_LANES];
    let (xc, yc) = (xs.chunks_exact(SUM_LANES), ys.chunks_exact(SUM_LANES));
    let (x_tail, y_tail) = (xc.remainder(), yc.remainder());
    for (x, y) in xc.zip(yc) {
        for j in 0..SUM_LANES {
            lanes[j] += f(x[j], y[j]);
        }
    }
    let mut total = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5]))
        + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (&x, &y) in x_tail.iter().zip(y_tail) {
        total += f(x, y);
    }
    total
}

#[inline(always)]
fn sum_portable(xs: &[f64]) -> f64 {
    lane_sum(xs, xs, |x, _| x)
}

#[inline(always)]
fn dot_portable(xs: &[f64], ys: &[f64]) -> f64 {
    lane_sum(xs, ys, |x, y| x * y)
}

#[inline(always)]
fn sum_squared_from_portable(xs: &[f64], centre: f64) -> f64 {
    lane_sum(xs, xs, |x, _| (x - centre) * (x - centre))
}

best_simd! {
    /// Σ x, in [`lane_sum`]'s order.
    pub fn sum(xs: &[f64]) -> f64 = sum_portable;
}

best_simd! {
    /// Σ x·y over two slices of one length, in [`lane_sum`]'s order.
    pub fn dot(xs: &[f64], ys: &[f64]) -> f64 = dot_portable;
}

best_simd! {
    /// Σ (x − centre)², in [`lane_sum`]'s order.
    pub fn sum_squared_from(xs: &[f64], centre: f64) -> f64 = sum_squared_from_portable;
}

/// Each `x - largest` into `out` (the same length), and the largest `x`
/// (-inf for none). The largest is taken in lanes, but a maximum is the
/// same whatever the order (a NaN, never in a value tapec holds, is passed
/// over as by `f64::max`).
#[inline(always)]
fn shift_by_largest_portable(xs: &[f64], out: &mut [f64]) -> f64 {
    let mut lanes = [f64::NEG_INFINITY; SUM_LANES];
    let chunks = xs.chunks_exact(SUM_LANES);
    let tail = chunks.remainder();
    for x in chunks {
        for j in 0..SUM_LANES {
            lanes[j] = if x[j] > lanes[j] { x[j] } else { lanes[j] };
        }
    }
    let largest = tail
        .iter()
        .chain(&lanes)
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    for (o, x) in out.iter_mut().zip(xs) {
        *o = x - largest;
    }
    largest
}

best_simd! {
    /// Each `x - largest` into `out`, and the largest `x` (a softmax
    /// row's shift).
    pub fn shift_by_largest(xs: &[f64], out: &mut [f64]) -> f64 = shift_by_largest_portable;
}

#[inline(always)]
fn divide_portable(xs: &mut [f64], by: f64) {
    for x in xs {
        *x /= by;
    }
}

best_simd! {
    /// `x / by` for each element in place: a division, so the same bits
    /// on every path.
    pub fn divide(xs: &mut [f64], by: f64) = divide_portable;
}

/// The fewest elements from which an elementwise pass is split in two
/// halves, one on each of two threads: 64Ki, a 128×512 matrix.
const HALVES_FROM: usize = 1 << 16;

/// Whether a pass over `len` elements is done in two halves, one on each
/// of two threads: when it is long and the caller runs in a pool of two
/// threads or more (see [`crate::threads::usable`]).
fn halves(len: usize) -> bool {
    len >= HALVES_FROM && crate::threads::usable() >= 2
}

/// Runs `f` on `out` and `xs` (the same length) whole, or, when `split`,
/// on their two halves at once. Each element is computed alone, so the
/// bits are the same either way.
fn by_halves<T: Send, U: Sync>(
    split: bool,
    out: &mut [T],
    xs: &[U],
    f: impl Fn(&mut [T], &[U]) + Sync,
) {
    if !split {
        return f(out, xs);
    }
    let middle = out.len() / 2;
    let (out_low, out_high) = out.split_at_mut(middle);
    let (xs_low, xs_high) = xs.split_at(middle);
    crate::threads::join(|| f(out_low, xs_low), || f(out_high, xs_high));
}

/// A new vector of `len` elements, written once (not zeroed first): the
/// values `part(range)` gives for the elements of `range`, for the whole
/// length, or, where [`halves`] says so, for two halves at once. Each
/// element is its own computation, so the bits are the same either way.
pub fn filled<I: Iterator<Item = f64>>(
    len: usize,
    part: impl Fn(std::ops::Range<usize>) -> I + Sync,
) -> Vec<f64> {
    filled_in(halves(len), len, part)
}

/// [`filled`], in two halves when `split`.
fn filled_in<I: Iterator<Item = f64>>(
    split: bool,
    len: usize,
    part: impl Fn(std::ops::Range<usize>) -> I + Sync,
) -> Vec<f64> {
    let write = |out: &mut [MaybeUninit<f64>], at: usize| {
        let (mut written, end) = (0, at + out.len());
        for (o, v) in out.iter_mut().zip(part(at..end)) {
            o.write(v);
            written += 1;
        }
        assert_eq!(written, out.len(), "a part gave too few values");
    };
    let mut out = Vec::with_capacity(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    if !split {
        write(spare, 0);
    } else {
        let middle = len / 2;
        let (low, high) = spare.split_at_mut(middle);
        crate::threads::join(|| write(low, 0), || write(high, middle));
    }
    // SAFETY: `write` wrote every element of both halves, or panicked.
    unsafe { out.set_len(len) };
    out
}

/// `x -= rate * g` for each element and its blame: `Nudge` in place.
pub fn step_down(xs: &mut [f64], gs: &[f64], rate: f64) {
    step_down_in(halves(xs.len()), xs, gs, rate);
}

/// [`step_down`], in two halves when `split`.
fn step_down_in(split: bool, xs: &mut [f64], gs: &[f64], rate: f64) {
    by_halves(split, xs, gs, |xs, gs| step_down_best(xs, gs, rate));
}

best_simd! {
    fn step_down_best(xs: &mut [f64], gs: &[f64], rate: f64) = step_down_portable;
}

#[inline(always)]
fn step_down_portable(xs: &mut [f64], gs: &[f64], rate: f64) {
    for (x, g) in xs.iter_mut().zip(gs) {
        *x -= rate * g;
    }
}

#[inline(always)]
fn tanh_portable(xs: &[f64], out: &mut [MaybeUninit<f64>]) {
    for (o, x) in out.iter_mut().zip(xs) {
        o.write(tanh(*x));
    }
}

/// e^x where the fast form holds: finite x with a normal result.
const EXP_LOW: f64 = -708.0;
const EXP_HIGH: f64 = 709.0;

/// e^x of every element of `xs`, as [`exp_in_place`].
pub fn exp_slice(xs: &[f64]) -> Vec<f64> {
    let mut out = xs.to_vec();
    exp_in_place(&mut out);
    out
}

/// e^x for one number. Within two units in the last place of the C
/// library's `exp` (most results are the same bits); outside [-708, 709]
/// (results that are subnormal, zero or infinite) and for NaN, it is the C
/// library's `exp` itself, so `exp(-inf)` is exactly 0.
pub fn exp(x: f64) -> f64 {
    if (EXP_LOW..=EXP_HIGH).contains(&x) {
        exp_small_range(x)
    } else {
        x.exp()
    }
}

/// e^x of every element in place, as [`exp`]: by the vectorised fast form
/// when every element lies in its range or is -inf (a causal mask's
/// entries, whose e^x is exactly 0), else element by element.
pub fn exp_in_place(xs: &mut [f64]) {
    let (inside, inside_or_masked) = exp_ranges(xs);
    if inside {
        exp_in_range_best(xs);
    } else if inside_or_masked {
        exp_in_range_or_masked_best(xs);
    } else {
        for x in xs.iter_mut() {
            *x = exp(*x);
        }
    }
}

/// Whether every element lies in [`exp`]'s fast range, and whether every
/// one does or is -inf.
#[inline(always)]
fn exp_ranges_portable(xs: &[f64]) -> (bool, bool) {
    xs.iter().fold((true, true), |(all, most), x| {
        let fits = (EXP_LOW..=EXP_HIGH).contains(x);
        (all & fits, most & (fits | (*x == f64::NEG_INFINITY)))
    })
}

best_simd! {
    fn exp_ranges(xs: &[f64]) -> (bool, bool) = exp_ranges_portable;
}

best_simd! {
    fn exp_in_range_best(xs: &mut [f64]) = exp_in_range;
}

best_simd! {
    fn exp_in_range_or_masked_best(xs: &mut [f64]) = exp_in_range_or_masked;
}

#[inline(always)]
fn exp_in_range(xs: &mut [f64]) {
    for x in xs.iter_mut() {
        *x = exp_small_range(*x);
    }
}

/// `exp_in_range` for elements in the range or -inf: the fast form runs on
/// every element (-inf raised into the range first) and -inf's result is
/// then replaced by 0, branch-free.
#[inline(always)]
fn exp_in_range_or_masked(xs: &mut [f64]) {
    for x in xs.iter_mut() {
        let masked = *x == f64::NEG_INFINITY;
        let y = exp_small_range(if masked { 0.0 } else { *x });
        *x = if masked { 0.0 } else { y };
    }
}

best_simd! {
    /// tanh of every element of `xs`, into `out` (the same length).
    fn tanh_into(xs: &[f64], out: &mut [MaybeUninit<f64>]) = tanh_portable;
}

/// tanh of every element of `xs`, in a new vector that is written once
/// (not zeroed first).
pub fn tanh_slice(xs: &[f64]) -> Vec<f64> {
    tanh_slice_in(halves(xs.len()), xs)
}

/// [`tanh_slice`], in two halves when `split`.
fn tanh_slice_in(split: bool, xs: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(xs.len());
    by_halves(
        split,
        &mut out.spare_capacity_mut()[..xs.len()],
        xs,
        |out, xs| {
            tanh_into(xs, out);
        },
    );
    // SAFETY: `tanh_into` wrote all `xs.len()` elements.
    unsafe { out.set_len(xs.len()) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Nudge`'s step, tanh, a pass made by `filled` and the bound, each
    /// split in halves over a pool of two threads (at lengths around the
    /// split's limit, odd ones among them): the same bits as whole.
    #[test]
    fn passes_split_in_halves_keep_every_bit() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for n in [
            HALVES_FROM - 1,
            HALVES_FROM,
            HALVES_FROM + 1,
            3 * HALVES_FROM + 7,
        ] {
            let xs: Vec<f64> = (0..n)
                .map(|i| ((i * 7919) % 1000) as f64 / 97.0 - 5.0)
                .collect();
            let gs: Vec<f64> = (0..n)
                .map(|i| ((i * 104_729) % 777) as f64 / 13.0 - 30.0)
                .collect();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let mut one = xs.clone();
            step_down(&mut one, &gs, 0.05);
            let mut two = xs.clone();
            pool.install(|| step_down_in(true, &mut two, &gs, 0.05));
            assert_eq!(bits(&one), bits(&two), "step_down of {n}");
            let (one, two) = (tanh_slice(&xs), pool.install(|| tanh_slice_in(true, &xs)));
            assert_eq!(bits(&one), bits(&two), "tanh of {n}");
            assert_eq!(one.len(), n);
            // A pass made by `filled`.
            let product = |at: std::ops::Range<usize>| {
                xs[at.clone()]
                    .iter()
                    .zip(&gs[at])
                    .map(|(x, g)| x * g - x / 3.0)
            };
            let whole: Vec<f64> = product(0..n).collect();
            let two = pool.install(|| filled_in(true, n, product));
            assert_eq!(bits(&whole), bits(&two), "filled of {n}");
            // The bound, with an infinity or a NaN in either half.
            assert_eq!(pool.install(|| bound_in(true, &xs)), bound_whole(&xs));
            for at in [0, n / 2, n - 1] {
                for odd in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
                    let mut ys = xs.clone();
                    ys[at] = odd;
                    let (one, two) = (bound_whole(&ys), pool.install(|| bound_in(true, &ys)));
                    assert_eq!(
                        one.to_bits(),
                        two.to_bits(),
                        "bound with {odd} at {at} of {n}"
                    );
                }
            }
        }
    }

    /// A part that gives fewer values than its range is a mistake in the
    /// caller, stopped before the vector is read.
    #[test]
    #[should_panic(expected = "a part gave too few values")]
    fn filled_refuses_a_part_that_gives_too_few_values() {
        filled(10, |at| std::iter::repeat_n(1.0, at.len() - 1));
    }

    /// The sums add in the order `lane_sum` writes down (running sum
    /// i mod 8, the sums in pairs, then the tail), on the CPU's best path
    /// and on the portable one, at every length around a multiple of
    /// eight: the same bits as that order spelled out one addition at a
    /// time, which differ from a plain running sum.
    #[test]
    fn lane_sums_add_in_their_written_order() {
        let spelled_out = |terms: &[f64]| {
            let mut lanes = [0.0f64; 8];
            let full = terms.len() / 8 * 8;
            for (i, t) in terms[..full].iter().enumerate() {
                lanes[i % 8] += t;
            }
            let mut total = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5]))
                + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
            for t in &terms[full..] {
                total += t;
            }
            total
        };
        let mut differs_from_running_sum = false;
        for n in 0..70 {
            let xs: Vec<f64> = (0..n)
                .map(|i| ((i * 7919) % 1000) as f64 / 97.0 - 5.0 + 1e-9 * i as f64)
                .collect();
            let ys: Vec<f64> = (0..n)
                .map(|i| ((i * 104_729) % 777) as f64 / 13.0 - 30.0)
                .collect();
            let centre = 0.37;
            let products: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| x * y).collect();
            let squares: Vec<f64> = xs.iter().map(|x| (x - centre) * (x - centre)).collect();
            for (got, portable, want) in [
                (sum(&xs), sum_portable(&xs), spelled_out(&xs)),
                (
                    dot(&xs, &ys),
                    dot_portable(&xs, &ys),
                    spelled_out(&products),
                ),
                (
                    sum_squared_from(&xs, centre),
                    sum_squared_from_portable(&xs, centre),
                    spelled_out(&squares),
                ),
            ] {
                assert_eq!(got.to_bits(), want.to_bits(), "length {n}");
                assert_eq!(portable.to_bits(), want.to_bits(), "length {n}");
            }
            differs_from_running_sum |= sum(&xs) != xs.iter().sum::<f64>();
        }
        assert!(
            differs_from_running_sum,
            "the check would not see a running sum"
        );
    }

    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn exp_agrees_with_the_c_library_to_two_ulps() {
        let n = 400_000;
        let xs: Vec<f64> = (0..n)
            .map(|i| -760.0 + 1480.0 * i as f64 / n as f64)
            .chain((0..n).map(|i| -3.0 + 6.0 * i as f64 / n as f64))
            .chain([
                0.0,
                -0.0,
                1e-300,
                -1e-10,
                -708.0,
                -708.5,
                -745.2,
                -800.0,
                709.0,
                709.8,
                710.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
            ])
            .collect();
        let fast = exp_slice(&xs);
        for (x, y) in xs.iter().zip(&fast) {
            if x.is_nan() {
                assert!(y.is_nan());
                continue;
            }
            assert!(
                ulps(x.exp(), *y) <= 2,
                "exp({x}) = {y}, the C library says {}",
                x.exp()
            );
        }
        assert!(
            xs.iter()
                .zip(&fast)
                .all(|(x, y)| exp(*x).to_bits() == y.to_bits() || x.is_nan())
        );
        let mut again = xs.clone();
        exp_in_place(&mut again);
        assert!(
            again
                .iter()
                .zip(&fast)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        let mut zero = [f64::NEG_INFINITY];
        exp_in_place(&mut zero);
        assert_eq!(zero[0].to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn any_nan_finds_a_nan_anywhere_and_nothing_else() {
        for n in [1, 7, 8, 9, 31, 32, 33, 40, 64, 100, 129] {
            let clean: Vec<f64> = (0..n).map(|i| i as f64 - 3.5).collect();
            assert!(!any_nan(&clean));
            for at in 0..n {
                let mut v = clean.clone();
                v[at] = f64::NAN;
                assert!(any_nan(&v), "NaN at {at} of {n}");
                v[at] = f64::INFINITY;
                v[0] = f64::NEG_INFINITY;
                assert!(!any_nan(&v), "infinities are not NaNs ({at} of {n})");
                v[at] = -f64::NAN;
                assert!(any_nan(&v), "negative NaN at {at} of {n}");
            }
        }
        assert!(!any_nan(&[]));
    }

    #[test]
    fn bound_is_the_largest_magnitude_or_says_what_is_not_finite() {
        // The path this CPU takes, and the ones other CPUs take.
        let paths: [fn(&[f64]) -> f64; 3] = [
            bound,
            |xs| bound_simd(xs).unwrap_or_else(|| not_finite(xs)),
            |xs| bound_portable(xs).unwrap_or_else(|| not_finite(xs)),
        ];
        for bound in paths {
            for n in [1, 7, 8, 9, 31, 32, 33, 40, 64, 100, 129] {
                let clean: Vec<f64> = (0..n).map(|i| (i as f64 - 3.5) * 1e300).collect();
                let largest = clean.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                assert_eq!(bound(&clean), largest);
                for at in 0..n {
                    let mut v = clean.clone();
                    v[at] = -2e307 * 8.0;
                    assert_eq!(bound(&v), 1.6e308, "largest at {at} of {n}");
                    for inf in [f64::INFINITY, f64::NEG_INFINITY] {
                        v[at] = inf;
                        assert_eq!(bound(&v), f64::INFINITY, "{inf} at {at} of {n}");
                    }
                    v[0] = f64::INFINITY;
                    for nan in [f64::NAN, -f64::NAN] {
                        v[at] = nan;
                        assert!(bound(&v).is_nan(), "{nan} at {at} of {n}");
                    }
                }
            }
            assert_eq!(bound(&[]), 0.0);
            assert_eq!(bound(&[-0.0, 0.0]), 0.0);
        }
    }

    /// A causal softmax row: numbers in range, then -inf. The fast form for
    /// such rows gives each element the same bits as the scalar `exp`.
    #[test]
    fn exp_of_a_masked_row_is_the_scalar_exp_of_each_element() {
        for n in [1, 7, 8, 9, 31, 32, 33, 100, 129] {
            for finite in 0..=n {
                let row: Vec<f64> = (0..n)
                    .map(|i| {
                        if i < finite {
                            -700.0 + 1400.0 * i as f64 / n as f64
                        } else {
                            f64::NEG_INFINITY
                        }
                    })
                    .collect();
                let mut fast = row.clone();
                exp_in_place(&mut fast);
                for (x, y) in row.iter().zip(&fast) {
                    assert_eq!(y.to_bits(), exp(*x).to_bits(), "exp({x}) in a row of {n}");
                }
            }
        }
    }

    /// A row's shift by its largest value, the largest taken in lanes, is
    /// that of the largest taken one element at a time; a division in
    /// place is each element's own; both at every length around the lanes.
    #[test]
    fn a_shift_by_the_largest_and_a_division_are_each_elements_own() {
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        for n in 0..=40 {
            for pattern in 0..4 {
                let row: Vec<f64> = (0..n)
                    .map(|i| match pattern {
                        0 => ((i * 37 % 11) as f64 - 5.0) * 1.5,
                        1 if i % 3 == 0 => f64::NEG_INFINITY,
                        1 => i as f64 * -2.5,
                        2 => f64::NEG_INFINITY,
                        _ if i == n / 2 => 1e300,
                        _ => -(i as f64) - 0.0,
                    })
                    .collect();
                let mut out = vec![0.0; n];
                let largest = shift_by_largest(&row, &mut out);
                let expected = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                assert!(same(largest, expected), "largest of {row:?}");
                for (x, o) in row.iter().zip(&out) {
                    assert!(same(*o, x - expected), "{x} shifted in {row:?}");
                }
                let mut divided = row.clone();
                divide(&mut divided, 3.0);
                for (x, d) in row.iter().zip(&divided) {
                    assert!(same(*d, x / 3.0), "{x} / 3");
                }
            }
        }
    }

    #[test]
    fn tanh_agrees_with_the_c_library_to_two_ulps() {
        let n = 400_000;
        let xs: Vec<f64> = (0..n).map(|i| -25.0 + 50.0 * i as f64 / n as f64).collect();
        let fast = tanh_slice(&xs);
        for (x, y) in xs.iter().zip(&fast) {
            assert!(
                ulps(x.tanh(), *y) <= 2,
                "tanh({x}) = {y}, the C library says {}",
                x.tanh()
            );
            assert_eq!(
                y.to_bits(),
                tanh(*x).to_bits(),
                "the SIMD and scalar paths give the same bits"
            );
        }
        for x in [
            0.0,
            -0.0,
            1e-300,
            -1e-10,
            0.625,
            -0.625,
            19.0,
            1e10,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert!(ulps(x.tanh(), tanh(x)) <= 2, "tanh({x})");
        }
        assert!(tanh(f64::NAN).is_nan());
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f64).to_bits());
    }
}
