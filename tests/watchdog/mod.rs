//! A watchdog for liveness checks: a case that runs far longer than it
//! needs fails as a hang instead of stalling the test run. The limits are
//! seconds for work that takes milliseconds; this is no speed target.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc;
use std::time::Duration;

/// How long one case may run before it counts as a hang.
pub const WATCHDOG_SECONDS: u64 = 20;

/// Runs `work` on its own thread and returns what it returns; a panic in
/// it is passed on, and work still running after [`WATCHDOG_SECONDS`]
/// fails the caller with `what` named.
pub fn within_watchdog<T: Send + 'static>(
    what: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(catch_unwind(AssertUnwindSafe(work)));
    });
    match receiver.recv_timeout(Duration::from_secs(WATCHDOG_SECONDS)) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => resume_unwind(panic),
        Err(_) => panic!("hang: {what} was still running after {WATCHDOG_SECONDS} s"),
    }
}
