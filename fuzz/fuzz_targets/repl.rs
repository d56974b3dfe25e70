//! Feeds arbitrary bytes to a prompt session, one line at a time: each
//! line either continues an entry or completes it, and each complete entry
//! runs with a step budget. Any panic, and any entry that hangs, is a bug.
//! What an entry saves lands in a folder of its own.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let folder = std::env::temp_dir().join("tapec-fuzz");
    let _ = std::fs::create_dir_all(&folder);
    tapec::repl::run_untrusted(data, folder, 5_000, 1 << 16);
});
