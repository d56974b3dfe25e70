//! `tapec run` stops cleanly on Ctrl-C (SIGINT): it says so and exits with
//! status 130, rather than dying mid-statement.

use std::io::Read;
use std::process::{Command, Stdio};

#[test]
fn ctrl_c_stops_a_running_program_with_status_130() {
    let dir = std::env::temp_dir().join(format!("tapec-interrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let program = dir.join("forever.tape");
    // The program says it has started with a line too long for stdout's
    // buffer, so it reaches the pipe at once: by then the Ctrl-C handler,
    // set before the program runs, is in place, and the loop is next.
    std::fs::write(
        &program,
        "s := 'x';\nfor i := 1 to 13 do s := s + s;\nn := 0;\n\
         WriteLn('started ', s);\nwhile true do n := n + 1;\n",
    )
    .expect("write program");

    let mut child = Command::new(env!("CARGO_BIN_EXE_tapec"))
        .arg("run")
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
    let sent = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(sent.success());
    let status = child.wait().expect("tapec ends");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read stderr");
    stdout.read_to_end(&mut out).expect("read stdout");
    assert_eq!(status.code(), Some(130), "stderr: {err}");
    assert!(err.contains("interrupted"), "stderr: {err}");
    assert_eq!(
        String::from_utf8_lossy(&out),
        format!("started {}\n", "x".repeat(8192))
    );
}
