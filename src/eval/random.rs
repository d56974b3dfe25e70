//! The random generator, specified so any implementation can reproduce it:
//! SplitMix64, uniforms from the top 53 bits, Box–Muller normals with a
//! pure-Rust libm so the draws are the same bits on every machine.

#[derive(Debug, Clone, Default)]
pub struct Random {
    state: u64,
}

impl Random {
    pub fn seed(&mut self, n: i64) {
        self.state = n as u64;
    }

    pub fn next_raw(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_raw() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal: one per pair of uniforms.
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform();
        let u2 = self.uniform();
        libm::sqrt(-2.0 * libm::log(1.0 - u1)) * libm::cos(2.0 * std::f64::consts::PI * u2)
    }

    /// Uniform whole number in `lo..=hi` (the caller checks `lo <= hi`),
    /// from one uniform by `int_at`.
    pub fn int_in(&mut self, lo: i64, hi: i64) -> i64 {
        let u = self.uniform();
        int_at(u, lo, hi)
    }

    /// `Sample`: one uniform times the weights' sum, and the first column
    /// (1-based) whose running sum exceeds it, the last if none does. The
    /// caller checks the weights: none negative, a positive finite sum.
    pub fn pick(&mut self, weights: &[f64], total: f64) -> usize {
        let target = self.uniform() * total;
        let mut running = 0.0;
        for (k, w) in weights.iter().enumerate() {
            running += w;
            if running > target {
                return k + 1;
            }
        }
        weights.len()
    }
}

/// lo + floor(u × (hi − lo + 1)) in whole numbers, the span an f64, as
/// the specification draws an Integer from the uniform `u`. A
/// span that fits in an i64 (every one but the widest ranges) is worked in
/// i64 with the same bits as in i128: the floor of a product that is never
/// negative is its truncation, and the sum wraps as the i128 one's
/// narrowing does.
fn int_at(u: f64, lo: i64, hi: i64) -> i64 {
    match hi.checked_sub(lo).and_then(|d| d.checked_add(1)) {
        Some(span) => lo.wrapping_add((u * span as f64) as i64),
        None => {
            let span = (hi as i128 - lo as i128 + 1) as f64;
            (lo as i128 + (u * span).floor() as i128) as i64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_vector_of_the_spec() {
        let mut r = Random::default();
        r.seed(0);
        assert_eq!(r.next_raw(), 0xe220a8397b1dcdaf);
        assert_eq!(r.next_raw(), 0x6e789e6aa1b965f4);
        assert_eq!(r.next_raw(), 0x06c45d188009454f);

        r.seed(42);
        let (a, b) = (r.uniform(), r.uniform());
        assert_eq!(format!("{a:.12} {b:.12}"), "0.741564878772 0.159910392877");

        r.seed(42);
        let (a, b) = (r.normal(), r.normal());
        assert_eq!(format!("{a:.12} {b:.12}"), "0.882248906222 -0.450849875719");

        r.seed(7);
        let draws: Vec<i64> = (0..5).map(|_| r.int_in(1, 27)).collect();
        assert_eq!(draws, vec![11, 1, 25, 16, 13]);
    }

    /// The i64 form of `int_in` gives the bits of the i128 form of the
    /// specification, over small spans and spans near the widest, for
    /// drawn uniforms and the largest one (whose product may round up to
    /// the span).
    #[test]
    fn whole_numbers_as_the_wide_form_draws_them() {
        let wide = |u: f64, lo: i64, hi: i64| {
            let span = (hi as i128 - lo as i128 + 1) as f64;
            (lo as i128 + (u * span).floor() as i128) as i64
        };
        let top = 1.0 - 1.0 / (1u64 << 53) as f64;
        let ranges = [
            (1, 27),
            (-5, 5),
            (0, 0),
            (i64::MIN, i64::MIN + 10),
            (i64::MAX - 3, i64::MAX),
            (-(1 << 62), 1 << 62),
            (i64::MIN / 2, i64::MAX / 2 + 1),
            (i64::MIN, i64::MAX),
            (i64::MIN + 1, i64::MAX),
            (-1, i64::MAX),
        ];
        for (lo, hi) in ranges {
            let mut r = Random::default();
            r.seed(lo ^ hi);
            for u in (0..2000).map(|_| r.uniform()).chain([0.0, top]) {
                assert_eq!(int_at(u, lo, hi), wide(u, lo, hi), "{lo}..={hi}, u = {u}");
            }
        }
    }
}
