//! Draws shared by the tests of the recorded operations.

use tapec::eval::random::Random;

/// A small shape: 1 to 4 rows, 1 to 5 columns.
pub fn shape(rng: &mut Random) -> (usize, usize) {
    (rng.int_in(1, 4) as usize, rng.int_in(1, 5) as usize)
}

/// A run of at least one place within `0..len`: its first place and length.
pub fn run_within(rng: &mut Random, len: usize) -> (usize, usize) {
    let first = rng.int_in(0, len as i64 - 1) as usize;
    let count = rng.int_in(1, (len - first) as i64) as usize;
    (first, count)
}
