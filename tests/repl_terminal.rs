//! The REPL under a pseudo-terminal: the prompts a person sees, Ctrl-C
//! stopping a running loop without ending the session or losing its
//! finished turns, and history that brings back a whole entry.

use rexpect::session::spawn_command;

fn session() -> rexpect::session::PtySession {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tapec"));
    command.arg("repl").arg("--color").arg("never");
    // Keep the history file out of the user's home.
    command.env("HOME", std::env::temp_dir());
    spawn_command(command, Some(20_000)).expect("start tapec repl in a pty")
}

#[test]
fn prompts_continuation_and_ctrl_c() {
    let mut p = session();
    p.exp_string("tapec> ").expect("main prompt");
    p.send_line("x := 2.5 +").expect("send");
    p.exp_string("...> ").expect("continuation prompt");
    p.send_line("2.5;").expect("send");
    p.exp_string("x = 5.000000")
        .expect("echo of the finished entry");
    p.exp_string("tapec> ").expect("prompt again");

    // The entry says when it runs: by then the prompt has given the
    // terminal back, so Ctrl-C is a signal to the running loop.
    p.send_line("n := 0; WriteLn('looping'); while true do n := n + 1;")
        .expect("send");
    p.exp_string("looping\r\n")
        .expect("the loop is about to run");
    p.send_control('c').expect("ctrl-c");
    p.exp_string("interrupted").expect("the loop stops");
    p.exp_string("what completed is kept")
        .expect("it says what it kept");
    p.exp_string("tapec> ").expect("the prompt comes back");
    // The loop's finished turns are kept: `n` counted on.
    p.send_line("n > 0").expect("send");
    p.exp_string("true").expect("n kept its count");
    p.exp_string("tapec> ").expect("prompt again");

    p.send_line("tape").expect("send");
    p.exp_string("tape> ").expect("the tape prompt");
    p.send_line("s := x * 2;").expect("send");
    p.exp_string("s = 10.000000 (recorded)")
        .expect("recorded echo");
    p.send_line("end;").expect("send");
    p.exp_string(
        "tape closed: 3 records (2 leaves, 1 operation), result s = 10.000000; blame is ready",
    )
    .expect("walk");
    p.exp_string("tapec> ").expect("prompt again");

    // `:walk` steps through the walk, one record per Enter, until `q`.
    p.send_line(":walk").expect("send");
    p.exp_string("step 1 of 3").expect("the first step");
    p.exp_string("walk> ").expect("the walk prompt");
    p.send_line("").expect("enter");
    p.exp_string("step 2 of 3").expect("the next step");
    p.exp_string("walk> ").expect("the walk prompt");
    p.send_line("q").expect("q");
    p.exp_string("walk stopped after 2 of 3 steps")
        .expect("q stops it");
    p.exp_string("tapec> ").expect("prompt again");
    // Ctrl-C and Ctrl-D at the walk's prompt stop the walk, not the session.
    for (key, stopped) in [
        ('c', "walk stopped after 1 of 3 steps"),
        ('d', "walk stopped after 1 of 3 steps"),
    ] {
        p.send_line(":walk").expect("send");
        p.exp_string("walk> ").expect("the walk prompt");
        p.send_control(key).expect("the key");
        p.exp_string(stopped).expect("the key stops the walk");
        p.exp_string("tapec> ").expect("prompt again");
    }
    p.send_line("n > 0").expect("send");
    p.exp_string("true").expect("the session goes on");
    p.exp_string("tapec> ").expect("prompt again");

    // History holds whole entries: the up arrow brings back all three
    // lines of a routine, and Enter defines it again.
    // Each line waits for its prompt, so that the prompts are seen.
    p.send_line("procedure Hello;").expect("send");
    p.exp_string("...> ").expect("continuation prompt");
    p.send_line("begin WriteLn('hello')").expect("send");
    p.exp_string("...> ").expect("continuation prompt");
    p.send_line("end;").expect("send");
    p.exp_string("procedure Hello defined")
        .expect("the routine is defined");
    p.exp_string("tapec> ").expect("prompt again");
    p.send("\x1b[A").expect("up arrow");
    p.send_line("").expect("enter");
    p.exp_string("procedure Hello defined")
        .expect("the whole routine came back from history");
    p.exp_string("tapec> ").expect("prompt again");
    p.send_line(":quit").expect("send");
    p.exp_eof().expect("the session ends");
}

/// Lines that reach the terminal in one write (a paste without bracketed
/// paste, or keys typed while a line runs) each run in turn: the line
/// editor keeps what it read ahead instead of dropping it with the line.
#[test]
fn lines_pasted_at_once_all_run() {
    let mut p = session();
    p.exp_string("tapec> ").expect("main prompt");
    p.send("p1 := 11;\rp2 := 22;\rp3 := 33;\r").expect("send");
    p.flush().expect("one write");
    p.exp_string("p1 = 11").expect("the first line");
    p.exp_string("p2 = 22").expect("the second line");
    p.exp_string("p3 = 33").expect("the third line");
    p.exp_string("tapec> ").expect("prompt again");
    p.send_line(":quit").expect("send");
    p.exp_eof().expect("the session ends");
}
