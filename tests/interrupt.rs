//! `tapec run` stops cleanly on Ctrl-C (SIGINT): it says so and exits with
//! status 130, rather than dying mid-statement.

use std::io::Read;
use std::process::{Child, ChildStdout, Command, Stdio};

/// A scratch folder of this test run's own.
fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tapec-interrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Starts `source` (which prints a line starting with `started ` before
/// its long part) as a program, and waits for that line: the running
/// tapec, its stdout, and what it printed so far.
fn started(name: &str, source: &str) -> (Child, ChildStdout, Vec<u8>) {
    let program = scratch().join(name);
    std::fs::write(&program, source).expect("write program");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tapec"))
        .args(["--threads", "1", "run"])
        .arg(&program)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tapec");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    while !out.ends_with(b"\n") {
        let n = stdout.read(&mut chunk).expect("read stdout");
        assert!(n > 0, "tapec ended before it started: {out:?}");
        out.extend_from_slice(&chunk[..n]);
    }
    (child, stdout, out)
}

/// Sends `child` a Ctrl-C (SIGINT).
fn ctrl_c(child: &Child) {
    let sent = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(sent.success());
}

/// Runs `source` as [`started`] does, sends it a Ctrl-C once its first
/// line is out, and gives back its exit status, stdout and stderr.
fn interrupted_after_start(name: &str, source: &str) -> (Option<i32>, String, String) {
    let (mut child, mut stdout, mut out) = started(name, source);
    ctrl_c(&child);
    let status = child.wait().expect("tapec ends");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read stderr");
    stdout.read_to_end(&mut out).expect("read stdout");
    (status.code(), String::from_utf8_lossy(&out).into(), err)
}

/// The line that says a program has started, too long for stdout's
/// buffer, so it reaches the pipe at once: by then the Ctrl-C handler,
/// set before the program runs, is in place, and the long part is next.
const STARTED: &str = "s := 'x';\nfor i := 1 to 13 do s := s + s;\nWriteLn('started ', s);\n";

#[test]
fn ctrl_c_stops_a_running_program_with_status_130() {
    let (status, out, err) = interrupted_after_start(
        "forever.tape",
        &format!("n := 0;\n{STARTED}while true do n := n + 1;\n"),
    );
    assert_eq!(status, Some(130), "stderr: {err}");
    assert!(err.contains("interrupted"), "stderr: {err}");
    assert_eq!(out, format!("started {}\n", "x".repeat(8192)));
}

/// Ctrl-C during statements of long operations and no loop, as during a
/// `CheckBlame` of a large weight: the run stops at the operation after
/// it, not when the program ends. Uninterrupted, each of the two long
/// statements takes tens of seconds; the `WriteLn` between them and after
/// them never runs.
#[test]
fn ctrl_c_stops_a_program_between_two_operations_of_one_statement() {
    let products = " * a".repeat(400);
    let (status, out, err) = interrupted_after_start(
        "products.tape",
        &format!(
            "a := Ones(1000, 1000) * 0.001;\n{STARTED}b := a{products};\nWriteLn('after the products');\n\
             W := Ones(300, 300) * 0.01;\ntape y := Sum(W * W); end;\nWriteLn(CheckBlame(W));\n"
        ),
    );
    assert_eq!(status, Some(130), "stderr: {err}");
    assert!(err.contains("interrupted"), "stderr: {err}");
    assert_eq!(out, format!("started {}\n", "x".repeat(8192)));
}

/// The same inside `CheckBlame`, which replays its tape twice for every
/// element of the weight: 180,000 replays here.
#[test]
fn ctrl_c_stops_a_check_of_blame() {
    let (status, out, err) = interrupted_after_start(
        "check.tape",
        &format!(
            "W := Ones(300, 300) * 0.01;\ntape y := Sum(W * W); end;\n{STARTED}\
             WriteLn(CheckBlame(W));\nWriteLn('after the check');\n"
        ),
    );
    assert_eq!(status, Some(130), "stderr: {err}");
    assert!(err.contains("interrupted"), "stderr: {err}");
    assert_eq!(out, format!("started {}\n", "x".repeat(8192)));
}

/// A second Ctrl-C ends a run that has not stopped for the first: here it
/// waits to read a named pipe that no one writes.
#[test]
fn a_second_ctrl_c_ends_a_run_waiting_in_a_read() {
    let pipe = scratch().join("nobody-writes");
    let _ = std::fs::remove_file(&pipe);
    let made = Command::new("mkfifo").arg(&pipe).status().expect("mkfifo");
    assert!(made.success());
    let source = format!(
        "{STARTED}m := Load('{}');\nWriteLn('read');\n",
        pipe.display()
    );
    let (mut child, _stdout, _) = started("reads.tape", &source);
    ctrl_c(&child);
    std::thread::sleep(std::time::Duration::from_millis(300));
    ctrl_c(&child);
    // A watchdog, not a speed target: the run ends in milliseconds, or
    // waits for ever.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("tapec still waits in its read after two Ctrl-Cs");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = std::fs::remove_file(&pipe);
    assert_eq!(status.code(), Some(130));
}
