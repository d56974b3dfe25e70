//! Feeds arbitrary bytes to `tapec export`. Any panic is a bug; every input
//! must give a script, or a diagnostic saying why not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(err) = tapec::export_untrusted(data.to_vec()) {
        assert!(err.contains("Error"), "refused without a diagnostic: {err}");
    }
});
