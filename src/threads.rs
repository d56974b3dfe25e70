//! How many threads tapec's large matrix products may use, and the pool
//! that runs them.
//!
//! The count is the machine's cores unless `TAPEC_THREADS=N` or
//! `--threads N` says otherwise; it is chosen once, before the first
//! product that could use it. Work is only ever split where the split
//! cannot change a bit of the result (`tape/matmul.rs` says how), so the
//! count changes the time a program takes and nothing else.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// 0 until chosen.
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// The threads named by `TAPEC_THREADS`, if it is set: `Err` is a sentence
/// for the user when it is not a whole number from 1 up.
pub fn from_env() -> Result<Option<usize>, String> {
    match std::env::var("TAPEC_THREADS") {
        Err(_) => Ok(None),
        Ok(text) => parse(&text)
            .map(Some)
            .ok_or_else(|| format!("TAPEC_THREADS must be a whole number from 1 up, not `{text}`")),
    }
}

fn parse(text: &str) -> Option<usize> {
    text.trim().parse::<usize>().ok().filter(|&n| n >= 1)
}

/// Sets the count; it holds for the rest of the process once a product
/// has read it.
pub fn set(n: usize) {
    COUNT.store(n.max(1), Ordering::Relaxed);
}

/// The number of threads products may use.
pub fn count() -> usize {
    match COUNT.load(Ordering::Relaxed) {
        0 => {
            let n = std::env::var("TAPEC_THREADS")
                .ok()
                .and_then(|t| parse(&t))
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            COUNT.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

/// Runs `f` with a stack of `stack` bytes: on one thread of a pool of
/// `count()` threads when there are two or more, so that a product inside
/// it can hand parts to the others ([`in_pool`]); else on a thread of its
/// own. The pool lives as long as `f` runs.
///
/// `f` runs on one thread from start to end. A part handed to another
/// thread is only ever waited for by the thread that handed it, which does
/// the part itself if no other thread has taken it yet: a split never
/// waits on a thread being woken.
pub fn run<R: Send + 'static>(stack: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
    run_on(count(), stack, f)
}

/// [`run`] with `n` threads, whatever [`count`] says.
pub fn run_on<R: Send + 'static>(
    n: usize,
    stack: usize,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    if n >= 2 {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .stack_size(stack)
            .thread_name(|i| format!("tapec-{i}"))
            .build();
        if let Ok(pool) = pool {
            return pool.install(f);
        }
    }
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(f)
        .expect("cannot start the interpreter thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// How long the helper spins after the last [`keep_awake`]: several steps
/// of a size M training loop, so that it stays awake from one step to
/// the next, and short enough that a program done with its products (or a
/// REPL waiting for a line) gives the core back at once.
const AWAKE_FOR: Duration = Duration::from_millis(2);

/// When the helper may stop spinning, in nanoseconds from [`epoch`].
static AWAKE_UNTIL: AtomicU64 = AtomicU64::new(0);
/// Whether a helper is spinning (or about to).
static SPINNING: AtomicBool = AtomicBool::new(false);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

/// Keeps a second thread of the pool spinning, taking any part handed to
/// the pool at once, for [`AWAKE_FOR`] from now. A sleeping thread takes
/// 35–40 µs to wake, longer than a size M product takes; a spinning one
/// takes a part within a microsecond. Called where products are about to
/// be handed out; a no-op outside a pool of two or more.
pub fn keep_awake() {
    if in_pool() < 2 {
        return;
    }
    AWAKE_UNTIL.store(now() + AWAKE_FOR.as_nanos() as u64, Ordering::Relaxed);
    if !SPINNING.swap(true, Ordering::AcqRel) {
        let caller = rayon::current_thread_index();
        rayon::spawn(move || spin(caller));
    }
}

/// The helper's loop: take whatever part the pool offers, else wait a
/// moment, until the deadline passes.
fn spin(caller: Option<usize>) {
    if rayon::current_thread_index() == caller {
        // The caller took its own job back while waiting for a part: it
        // must not spin in place of going on.
        SPINNING.store(false, Ordering::Release);
        return;
    }
    loop {
        for _ in 0..64 {
            if rayon::yield_now() != Some(rayon::Yield::Executed) {
                std::hint::spin_loop();
            }
        }
        if now() > AWAKE_UNTIL.load(Ordering::Relaxed) {
            SPINNING.store(false, Ordering::Release);
            // A `keep_awake` between the check and the store saw a helper
            // spinning and started none: go on unless another has started.
            if now() > AWAKE_UNTIL.load(Ordering::Relaxed) || SPINNING.swap(true, Ordering::AcqRel)
            {
                return;
            }
        }
    }
}

/// The threads of the pool the caller runs in (1 outside any pool).
pub fn in_pool() -> usize {
    rayon::current_thread_index().map_or(1, |_| rayon::current_num_threads())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_a_whole_number_from_one() {
        assert_eq!(parse("2"), Some(2));
        assert_eq!(parse(" 8 "), Some(8));
        assert_eq!(parse("0"), None);
        assert_eq!(parse("-1"), None);
        assert_eq!(parse("two"), None);
    }

    /// The helper spins only while products are handed out: it has stopped
    /// a little after the last `keep_awake` (the wait is a watchdog many
    /// times `AWAKE_FOR`, not a timing), and a product split while it spins
    /// has the bits of one thread's.
    #[test]
    fn the_helper_stops_spinning_after_the_last_handoff() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            keep_awake();
            let (a, b) = (
                ndarray::Array2::from_shape_fn((64, 96), |(i, j)| (i * 7 + j) as f64 / 9.0),
                ndarray::Array2::from_shape_fn((96, 512), |(i, j)| (i + 3 * j) as f64 / 7.0),
            );
            let one = crate::tape::matmul::product_split_from(a.view(), b.view(), 1, 0);
            let two = crate::tape::matmul::product_split_from(a.view(), b.view(), 2, 0);
            assert_eq!(one, two);
        });
        let start = Instant::now();
        while SPINNING.load(Ordering::Acquire) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the helper never stopped spinning"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
