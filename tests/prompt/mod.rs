//! `tapec repl` given its input on a pipe, as the tests of the prompt run
//! it.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// What `tapec repl` prints and its exit status, given `input` on a pipe:
/// the input is written by a thread of its own while the output is read,
/// so that neither side waits for the other however long both are.
pub fn piped(input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tapec"))
        .args(["repl", "--color", "never"])
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tapec repl");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().expect("tapec ends");
    writer.join().expect("the writer").expect("write the input");
    output
}
