//! Feeds arbitrary bytes to a prompt session, one line at a time: each
//! line either continues an entry or completes it, and each complete entry
//! runs with a step budget. Any panic, and any entry that hangs, is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tapec::repl::run_untrusted(data, 5_000, 1 << 16);
});
