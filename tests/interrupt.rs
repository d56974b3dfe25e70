//! `tapec run` stops cleanly on Ctrl-C (SIGINT): it says so and exits with
//! status 130, rather than dying mid-statement.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn ctrl_c_stops_a_running_program_with_status_130() {
    let dir = std::env::temp_dir().join(format!("tapec-interrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let program = dir.join("forever.tape");
    std::fs::write(
        &program,
        "n := 0;\nWriteLn('started');\nwhile true do n := n + 1;\n",
    )
    .expect("write program");

    let mut child = Command::new(env!("CARGO_BIN_EXE_tapec"))
        .arg("run")
        .arg(&program)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tapec");
    // Wait until the loop is running: the first line has been printed.
    std::thread::sleep(Duration::from_millis(500));
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
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read stdout");
    assert_eq!(status.code(), Some(130), "stderr: {err}");
    assert!(err.contains("interrupted"), "stderr: {err}");
    assert_eq!(out, "started\n");
}
