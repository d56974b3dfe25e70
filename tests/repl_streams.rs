//! The prompt sends every error to stderr as a diagnostic, its commands'
//! too (`:load` of a missing file, `:graph` into a missing folder), and
//! only echoes and program output to stdout.

mod prompt;
use prompt::piped;

#[test]
fn command_errors_are_diagnostics_on_stderr() {
    let output = piped(
        b":load no-such-program.tape\nw := 2.0;\ntape\ns := w * w;\nend;\n\
          :graph no-such-folder/tape.dot\n",
    );
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        err,
        "Error: cannot read `no-such-program.tape`: no such file\n\
         Error: cannot write `no-such-folder/tape.dot`: its folder does not exist\n"
    );
    assert!(!out.contains("cannot"), "{out}");
    assert!(out.contains("w = 2.000000"), "{out}");
}

/// A transcript piped in ends as a script would: with status 1 if any entry
/// failed (the later ones still run, as at the prompt), else 0.
#[test]
fn a_piped_transcript_with_an_error_exits_with_1() {
    for (input, status, shown) in [
        (&b"x := 1 div 0;\nWriteLn(2);\n"[..], 1, "2\n"),
        (&b"x := 1 div 0;\n:reset\nWriteLn(3);\n"[..], 1, "3\n"),
        (&b"x := 4;\nWriteLn(x + 1);\n"[..], 0, "5\n"),
    ] {
        let output = piped(input);
        let out = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(status), "{out}");
        assert!(out.ends_with(shown), "{out}");
    }
}

/// A command that cannot run as entered (unknown, or missing what it
/// needs, or given what it does not take) is an error like any other:
/// a diagnostic on stderr, and status 1 at the end of a piped transcript.
#[test]
fn a_command_that_cannot_run_is_an_error() {
    for input in [
        ":wlak\n",
        ":load\n",
        ":blame\n",
        ":graph\n",
        ":vars x\n",
        ":help :nope\n",
    ] {
        let output = piped(format!("{input}WriteLn(7);\n").as_bytes());
        let out = String::from_utf8_lossy(&output.stdout);
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{input}: {out}{err}");
        assert!(err.starts_with("Error: "), "{input}: {err}");
        assert_eq!(out, "7\n", "{input}");
    }
    let err = String::from_utf8_lossy(&piped(b":wlak\n").stderr).into_owned();
    assert_eq!(
        err,
        "Error: there is no command `:wlak`\n\
         Help: did you mean `:walk`? `:help` lists the commands\n"
    );
}
