//! The one rule of the tests that need a real client (a browser, Python
//! with PyTorch, Node, an LSP client library): without the client, a plain
//! `cargo test` says plainly that the test was not run; under `CI=true`,
//! where `.ci/run` has installed every client, the test fails instead, so
//! CI never passes a check it did not make.

use std::io::Write as _;

/// Says that `test` did not run because of `why`, and how to get what it
/// needs (`fix`); under `CI=true`, panics with the same words.
pub fn not_run(test: &str, why: &str, fix: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true, but {why}, so {test} cannot run ({fix})");
    }
    // Past the test harness's capture, so that it shows in a plain
    // `cargo test`.
    let _ = writeln!(std::io::stderr(), "NOT RUN: {test}: {why} ({fix})");
}
