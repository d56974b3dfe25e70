//! `tapec run` on a terminal: each line a program writes appears while the
//! program still runs (a training loop's losses show as it trains), not
//! when it ends. The program here never ends by itself: it prints a line,
//! then loops until Ctrl-C. Were stdout held back, the line would never
//! come, and the watchdog of the expectation (20 s, for what takes
//! milliseconds) would fail the test.

use rexpect::session::spawn_command;

#[test]
fn a_line_shows_while_the_program_runs() {
    let dir = std::env::temp_dir().join(format!("tapec-terminal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let program = dir.join("endless.tape");
    std::fs::write(
        &program,
        "WriteLn('started');\nx := 0.0;\nwhile true do\n  x := x + 1.0;\n",
    )
    .expect("write the program");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tapec"));
    command.arg("run").arg("--color").arg("never").arg(&program);
    let mut p = spawn_command(command, Some(20_000)).expect("start tapec run in a pty");
    p.exp_string("started\r\n")
        .expect("the line, while the loop still runs");
    p.send_control('c').expect("ctrl-c");
    p.exp_string("interrupted").expect("the loop stops");
    p.exp_eof().expect("the run ends");
}
