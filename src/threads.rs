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
        Ok(text) => parse(&text).map(Some).ok_or_else(|| {
            format!("TAPEC_THREADS must be a whole number from 1 to {MOST}, not `{text}`")
        }),
    }
}

/// The most threads a run may be given (`--threads` too): each reserves
/// its stack's address space when the run starts, and a hundred thousand
/// took longer to start than any program here takes to run.
pub const MOST: usize = 1024;

fn parse(text: &str) -> Option<usize> {
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| (1..=MOST).contains(&n))
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
    match std::thread::Builder::new().stack_size(stack).spawn(f) {
        Ok(thread) => thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        // The stack is address space reserved, not memory used: only a
        // limit on it (`ulimit -v`) refuses it. No smaller stack would do,
        // as the nesting limits are counted for this one.
        Err(e) => {
            eprintln!(
                "Error: tapec cannot start: the system refused the {} MiB of address space \
                 its interpreter reserves for a stack ({e})\n  \
                 Help: a limit on address space (`ulimit -v`) below a few GiB refuses it; \
                 raise the limit or remove it",
                stack >> 20
            );
            std::process::exit(crate::EXIT_ERROR);
        }
    }
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
/// Whether the spinning helper has begun to spin: until then it may be
/// waking still.
static SPUN: AtomicBool = AtomicBool::new(false);

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
/// takes a part within a microsecond. Called as parts are about to be
/// handed out ([`Handoff::start`]); a no-op outside a pool of two or more.
/// Says whether a helper was spinning already (or there is none to wake):
/// not while one started for an earlier handoff is still waking.
fn keep_awake() -> bool {
    if in_pool() < 2 {
        return true;
    }
    AWAKE_UNTIL.store(now() + AWAKE_FOR.as_nanos() as u64, Ordering::Relaxed);
    if !SPINNING.swap(true, Ordering::AcqRel) {
        let caller = rayon::current_thread_index();
        rayon::spawn(move || spin(caller));
        return false;
    }
    SPUN.load(Ordering::Relaxed)
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
    SPUN.store(true, Ordering::Relaxed);
    let mut last = now();
    loop {
        let mut worked = false;
        for _ in 0..64 {
            if rayon::yield_now() == Some(rayon::Yield::Executed) {
                worked = true;
            } else {
                std::hint::spin_loop();
            }
        }
        // A gap with no part run in it is time the kernel gave this core
        // to another thread: a part handed over then would have waited.
        let at = now();
        if !worked && at - last > LATE_BY.as_nanos() as u64 {
            late(at);
        }
        last = at;
        if at > AWAKE_UNTIL.load(Ordering::Relaxed) {
            // Cleared first, so that it never clears a next helper's.
            SPUN.store(false, Ordering::Relaxed);
            SPINNING.store(false, Ordering::Release);
            // A `keep_awake` between the check and the store saw a helper
            // spinning and started none: go on unless another has started.
            if now() > AWAKE_UNTIL.load(Ordering::Relaxed) || SPINNING.swap(true, Ordering::AcqRel)
            {
                return;
            }
            SPUN.store(true, Ordering::Relaxed);
        }
    }
}

/// The threads of the pool the caller runs in (1 outside any pool).
pub fn in_pool() -> usize {
    rayon::current_thread_index().map_or(1, |_| rayon::current_num_threads())
}

/// The threads work may be split over now: [`in_pool`], or 1 while
/// handoffs are paused because a helper kept the caller waiting ([`Handoff`]).
pub fn usable() -> usize {
    let n = in_pool();
    if n < 2 {
        return 1;
    }
    let until = PAUSED_UNTIL.load(Ordering::Relaxed);
    if until != 0 {
        if now() < until {
            return 1;
        }
        PAUSED_UNTIL.store(0, Ordering::Relaxed);
    }
    n
}

/// How much longer than the caller's own share a helper may keep it
/// waiting before the handoff counts as late. A helper that was asleep
/// takes 35–40 µs to wake; one whose core another program holds comes
/// back after the kernel's time slice, milliseconds later.
const LATE_BY: Duration = Duration::from_micros(200);
/// Two late handoffs this close together pause handoffs for
/// [`FIRST_PAUSE`]: a helper's core is taken now and then for a moment
/// even on an idle machine (a few times a second, measured), and a single
/// late handoff says nothing of the next.
const CLUSTER: Duration = Duration::from_millis(50);
/// The first pause; a late handoff within [`CLUSTER`] of a pause's end
/// doubles it, up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// Handoffs paused until this time (ns from [`epoch`]); 0 when not paused.
static PAUSED_UNTIL: AtomicU64 = AtomicU64::new(0);
/// The last pause's length in ns, 0 after a late handoff that paused none.
static PAUSE: AtomicU64 = AtomicU64::new(0);
/// When the last late handoff ended, in ns from [`epoch`].
static LAST_LATE: AtomicU64 = AtomicU64::new(0);

/// One handoff of parts to the pool: it keeps a helper awake
/// ([`keep_awake`]), notes when the calling thread finished its own parts
/// and how many parts other threads ran, and at the end ([`Handoff::end`])
/// counts the handoff as late if the caller then waited longer than its
/// own parts took (plus [`LATE_BY`]); two late handoffs close together
/// pause handoffs ([`next_pause`]).
///
/// A handoff that had to wake the helper is never late: a thread asleep
/// for a while can take 300–400 µs to come back (its core idle, the
/// machine's host must give it one again), which says nothing of the core
/// being busy. Counted, it made every pause end with a late handoff,
/// which doubled the pause, until the caller worked alone for good.
///
/// A helper is late when the core it runs on is busy with another program
/// (or the machine's host gives that core to someone else): the caller,
/// done with its share, waits a whole time slice for the helper's. Every
/// split product or pass then costs milliseconds, and a training step
/// takes half as long again as on one thread. Paused, the caller does all the
/// work itself, which costs no more than one thread; the pause grows
/// while handoffs keep coming late, so that trying again costs little.
pub struct Handoff {
    caller: Option<usize>,
    /// Whether a helper was spinning when the handoff began.
    awake: bool,
    start: u64,
    own_done: AtomicU64,
    /// Parts other threads have begun, and ended.
    begun: AtomicUsize,
    ended: AtomicUsize,
}

impl Handoff {
    pub fn start() -> Handoff {
        Handoff {
            awake: keep_awake(),
            caller: rayon::current_thread_index(),
            start: now(),
            own_done: AtomicU64::new(0),
            begun: AtomicUsize::new(0),
            ended: AtomicUsize::new(0),
        }
    }

    /// Runs a part on whichever thread calls this.
    pub fn part<R>(&self, f: impl FnOnce() -> R) -> R {
        if rayon::current_thread_index() == self.caller {
            let r = f();
            self.own_done.fetch_max(now(), Ordering::Relaxed);
            r
        } else {
            self.begun.fetch_add(1, Ordering::Relaxed);
            // Counted as ended even if `f` panics, so that the caller's
            // wait ends and the pool hands it the panic.
            let _ended = Ended(&self.ended);
            f()
        }
    }

    /// Called by the caller after its own part: waits, spinning, for the
    /// parts other threads have begun. (Left to the pool, the caller would
    /// wait by yielding its core to the kernel again and again, a system
    /// call each time, and after some thirty rounds fall asleep, to be
    /// woken 35–40 µs after the part ends.) A part no thread has begun is
    /// left to the pool, which gives it back to the caller.
    pub fn wait_for_helpers(&self) {
        while self.begun.load(Ordering::Relaxed) != self.ended.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
    }

    /// Called by the caller once every part is done.
    pub fn end(self) {
        if self.ended.load(Ordering::Relaxed) == 0 {
            return;
        }
        let end = now();
        let own_done = self.own_done.load(Ordering::Relaxed).max(self.start);
        let (own, waited) = (own_done - self.start, end.saturating_sub(own_done));
        if counts_late(self.awake, own, waited) {
            late(end);
        }
    }
}

/// Whether a handoff whose caller took `own` ns for its own parts and
/// then `waited` ns for the helper's is late: only if the helper was awake
/// when it began, and kept the caller waiting [`LATE_BY`] longer than
/// `own`.
fn counts_late(awake: bool, own: u64, waited: u64) -> bool {
    awake && waited > own + LATE_BY.as_nanos() as u64
}

/// Counts a helper's part as ended when dropped.
struct Ended<'a>(&'a AtomicUsize);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

/// Notes a late handoff (or a helper kept from its core) at `at`, and
/// pauses handoffs if it came soon after the last.
fn late(at: u64) {
    let last = LAST_LATE.swap(at, Ordering::Relaxed);
    let since = (last != 0).then(|| at.saturating_sub(last));
    let pause = next_pause(since, PAUSE.load(Ordering::Relaxed));
    PAUSE.store(pause, Ordering::Relaxed);
    if pause > 0 {
        PAUSED_UNTIL.store(at + pause, Ordering::Relaxed);
    }
}

/// The pause (ns, 0 for none) after a late handoff `since` ns after the
/// last one (`None`: the first), when the last pause was `pause` ns: none
/// for a late handoff alone, [`FIRST_PAUSE`] for one within [`CLUSTER`] of
/// the last, and twice the last pause, up to [`LONGEST_PAUSE`], for one
/// within [`CLUSTER`] of the end of that pause.
fn next_pause(since: Option<u64>, pause: u64) -> u64 {
    let soon = (CLUSTER.as_nanos() as u64).saturating_add(pause);
    match since {
        Some(since) if since <= soon => (pause * 2).clamp(
            FIRST_PAUSE.as_nanos() as u64,
            LONGEST_PAUSE.as_nanos() as u64,
        ),
        _ => 0,
    }
}

/// `rayon::join` of `a` (on the caller) and `b` (offered to the pool),
/// noted as a [`Handoff`].
pub fn join<RA: Send, RB: Send>(
    a: impl FnOnce() -> RA + Send,
    b: impl FnOnce() -> RB + Send,
) -> (RA, RB) {
    let handoff = Handoff::start();
    let both = rayon::join(
        || {
            let done = handoff.part(a);
            handoff.wait_for_helpers();
            done
        },
        || handoff.part(b),
    );
    handoff.end();
    both
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

    /// `join` of a part that takes no time and `part`, returning once
    /// another thread has begun `part`, so that it surely runs there.
    fn on_a_helper<R: Send>(part: impl FnOnce() -> R + Send) -> R {
        let started = AtomicBool::new(false);
        let start = Instant::now();
        let wait = || {
            while !started.load(Ordering::Acquire) {
                assert!(start.elapsed() < Duration::from_secs(20), "no helper came");
                std::hint::spin_loop();
            }
        };
        let part = || {
            started.store(true, Ordering::Release);
            part()
        };
        join(wait, part).1
    }

    /// A late handoff alone pauses nothing; two close together pause
    /// handoffs, and each late one just after a pause doubles the pause,
    /// up to its longest.
    #[test]
    fn late_handoffs_close_together_pause_handoffs() {
        let ms = |n: u64| n * 1_000_000;
        let (first, longest) = (
            FIRST_PAUSE.as_nanos() as u64,
            LONGEST_PAUSE.as_nanos() as u64,
        );
        assert_eq!(first, ms(20));
        assert_eq!(next_pause(None, 0), 0);
        assert_eq!(next_pause(Some(ms(300)), 0), 0);
        assert_eq!(next_pause(Some(ms(10)), 0), first);
        assert_eq!(next_pause(Some(ms(30)), first), 2 * first);
        assert_eq!(next_pause(Some(ms(90)), 2 * first), 4 * first);
        assert_eq!(next_pause(Some(ms(650)), ms(640)), longest);
        assert_eq!(next_pause(Some(ms(1010)), longest), longest);
        // Long after the pause ended: alone again.
        assert_eq!(next_pause(Some(ms(200)), first), 0);
    }

    /// A handoff is late when the helper kept the caller waiting more than
    /// 200 µs beyond its own share, but never when the helper had to be
    /// woken for it: after a pause a sleeping helper takes 300–400 µs to
    /// come back, which would end every pause with a late handoff.
    #[test]
    fn a_handoff_that_woke_the_helper_is_never_late() {
        let us = |n: u64| n * 1_000;
        assert!(counts_late(true, us(40), us(400)));
        assert!(!counts_late(false, us(40), us(400)));
        assert!(!counts_late(true, us(40), us(200)));
        assert!(counts_late(true, us(1000), us(1300)));
        assert!(!counts_late(false, us(1000), us(60_000)));
    }

    /// A handoff whose helper kept the caller waiting (asleep 20 ms while
    /// the caller's part took no time) is noted as late, and two late
    /// ones close together leave the caller doing the work alone for a
    /// while: `usable` says 1 thread, then the pool's 2 again.
    ///
    /// Each handoff begins with the helper spinning, as in a training
    /// loop: one that had to wake it is never late. One try is enough;
    /// more are allowed for a machine so busy that the test's own thread
    /// loses its core between waking the helper and handing it the part.
    /// The pause is then made by two late handoffs noted a second ahead,
    /// so that it surely lasts while it is checked, however busy the
    /// machine.
    #[test]
    fn a_late_helper_leaves_the_work_to_the_caller_for_a_while() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            let noted = (0..20).any(|_| {
                let start = Instant::now();
                while !keep_awake() {
                    assert!(start.elapsed() < Duration::from_secs(20), "no helper spun");
                    std::hint::spin_loop();
                }
                let slept = AtomicU64::new(u64::MAX);
                on_a_helper(|| {
                    std::thread::sleep(Duration::from_millis(20));
                    slept.store(now(), Ordering::Relaxed);
                });
                LAST_LATE.load(Ordering::Relaxed) >= slept.load(Ordering::Relaxed)
            });
            assert!(noted, "twenty late handoffs, none noted");

            let ahead = now() + Duration::from_secs(1).as_nanos() as u64;
            late(ahead);
            late(ahead + Duration::from_millis(1).as_nanos() as u64);
            assert_eq!(usable(), 1, "handoffs went on after two late ones");
            let start = Instant::now();
            while usable() < 2 {
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "handoffs never resumed"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        });
    }

    /// A part that panics on the helper ends the caller's wait, and the
    /// panic reaches the caller.
    #[test]
    fn a_helpers_panic_reaches_the_caller() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let caught = pool
            .install(|| std::panic::catch_unwind(|| on_a_helper(|| panic!("a part that fails"))));
        let message = caught.expect_err("the panic was lost");
        assert_eq!(message.downcast_ref::<&str>(), Some(&"a part that fails"));
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
