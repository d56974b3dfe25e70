//! Feeds arbitrary bytes to the whole pipeline. Any panic is a bug; every
//! input must end with status 0, or status 1 and a diagnostic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let folder = std::env::temp_dir().join("tapec-fuzz");
    let _ = std::fs::create_dir_all(&folder);
    let (_, err, code) = tapec::run_untrusted(data.to_vec(), folder, 5_000, 1 << 16);
    assert!(
        code == 0 || (code == 1 && err.contains("Error")),
        "status {code}: {err}"
    );
});
