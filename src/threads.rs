//! How many threads tapec's large matrix products may use, and the pool
//! that runs them.
//!
//! The count is the machine's cores unless `TAPEC_THREADS=N` or
//! `--threads N` says otherwise; it is chosen once, before the first
//! product that could use it. Work is only ever split where the split
//! cannot change a bit of the result (`tape/matmul.rs` says how), so the
//! count changes the time a program takes and nothing else.

use std::sync::atomic::{AtomicUsize, Ordering};

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
}
