//! The command line itself: `tapec FILE.tape [ARGS...]` is `tapec run`, and
//! a word that is neither a command nor a program file is a usage error;
//! `check` says in one line what it found.

use std::process::Command;

fn tapec(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_tapec"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run tapec");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn a_program_file_runs_without_the_run_command() {
    let golden = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/knob.out"),
    )
    .expect("golden");
    let (out, err, code) = tapec(&["programs/knob.tape"]);
    assert_eq!((code, out.as_str()), (0, golden.as_str()), "{err}");
    // Its arguments are the program's, as after `run`.
    let with_args = tapec(&["bench/gpt.tape", "27", "8", "16", "64", "200"]);
    let with_run = tapec(&["run", "bench/gpt.tape", "27", "8", "16", "64", "200"]);
    assert_eq!(with_args, with_run);
    assert!(
        with_args.0.contains("step 200 loss 0.068948"),
        "{:?}",
        with_args
    );
    // Every word after the file is the program's, tapec's own options
    // and `--` too, with `run` as without it; tapec's go before the file.
    let dir = std::env::temp_dir().join(format!("tapec-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("params.tape");
    std::fs::write(
        &program,
        "for i := 1 to ParamCount do Write(ParamStr(i), ' ');\nWriteLn;\n",
    )
    .unwrap();
    let program = program.to_str().unwrap();
    let words = ["--color", "never", "--threads", "2", "--", "x"];
    let passed = "--color never --threads 2 -- x \n";
    for lead in [&["run", program][..], &[program][..]] {
        let args: Vec<&str> = lead.iter().chain(&words).copied().collect();
        let (out, err, code) = tapec(&args);
        assert_eq!((code, out.as_str()), (0, passed), "{args:?}: {err}");
    }
    let (out, err, code) = tapec(&["run", "--color", "never", "--threads", "1", program, "y"]);
    assert_eq!((code, out.as_str()), (0, "y \n"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_word_that_is_no_command_and_no_file_is_a_usage_error() {
    let (out, err, code) = tapec(&["rnu", "programs/knob.tape"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.contains("`rnu` is neither a command nor a program file"),
        "{err}"
    );
    // A `.tape` path that does not exist is the run's own error.
    let (_, err, code) = tapec(&["no_such_program.tape"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read `no_such_program.tape`"), "{err}");
    // So is a folder given as the program, as under `tapec run`.
    for args in [&["programs"][..], &["run", "programs"][..]] {
        let (out, err, code) = tapec(args);
        assert_eq!((code, out.as_str()), (1, ""), "{args:?}");
        assert!(
            err.contains("cannot read `programs`: it is a folder, not a file"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn check_of_a_good_file_says_so_in_one_line_and_shows_its_warnings() {
    let (out, err, code) = tapec(&["check", "programs/knob.tape"]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "", "programs/knob.tape: no errors\n")
    );
    let (out, err, code) = tapec(&["check", "tests/run/warning_indentation.tape"]);
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(
        err.contains("Warning: this statement is indented as if it were part of the `for`"),
        "{err}"
    );
    assert!(
        err.ends_with("tests/run/warning_indentation.tape: no errors, 1 warning\n"),
        "{err}"
    );
}

/// `tapec check` of a file with errors ends, as of a good one, with a line
/// that counts them.
#[test]
fn check_of_a_wrong_file_counts_its_errors() {
    let (out, err, code) = tapec(&["check", "tests/errors/unknown_variable.tape"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("Error: unknown variable `totl`"), "{err}");
    assert!(
        err.ends_with("tests/errors/unknown_variable.tape: 2 errors\n"),
        "{err}"
    );
}

/// Without a command and without a terminal (input from a pipe or a file)
/// there is no prompt to start: the usage error names the command that
/// reads entries from that input.
#[test]
fn no_command_without_a_terminal_points_to_the_repl_command() {
    let (out, err, code) = tapec(&[]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("`tapec repl`"), "{err}");
}

#[test]
fn save_never_writes_over_the_program_itself() {
    let dir = std::env::temp_dir().join(format!("tapec-cli-save-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("me.tape");
    let text = "x := [[1, 2]];\nSave(x, 'other.txt');\nSave(x, ParamStr(1));\n";
    std::fs::write(&program, text).unwrap();
    let program = program.to_str().unwrap();
    // By its own name, and by another path to the same file.
    for path in ["me.tape", "./sub/../me.tape"] {
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let (_, err, code) = tapec(&["run", program, path]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("Save would write over the program itself"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(dir.join("me.tape")).unwrap(), text);
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("other.txt")).unwrap(),
        "1.0 2.0\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn save_never_replaces_a_pipe_or_a_device() {
    use std::os::unix::fs::FileTypeExt;
    let dir = std::env::temp_dir().join(format!("tapec-cli-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pipe = dir.join("pipe");
    let made = Command::new("mkfifo").arg(&pipe).status().expect("mkfifo");
    assert!(made.success());
    let program = dir.join("save.tape");
    std::fs::write(&program, "Save([[1]], ParamStr(1));\nWriteLn('saved');\n").unwrap();
    for target in [pipe.to_str().unwrap(), "/dev/null"] {
        let (out, err, code) = tapec(&["run", program.to_str().unwrap(), target]);
        assert_eq!((out.as_str(), code), ("", 1), "{err}");
        assert!(err.contains("is not a file (a pipe or a device)"), "{err}");
    }
    assert!(std::fs::metadata(&pipe).unwrap().file_type().is_fifo());
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Save` never writes over a read-only file, for a user the system would
/// let write it too (root, as in many containers and in CI).
#[cfg(unix)]
#[test]
fn save_never_writes_over_a_read_only_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("tapec-cli-read-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kept = dir.join("kept.txt");
    let _ = std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o644));
    std::fs::write(&kept, "1 2\n").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o444)).unwrap();
    let program = dir.join("save.tape");
    std::fs::write(&program, "Save([[7, 8]], 'kept.txt');\nWriteLn('saved');\n").unwrap();
    let (out, err, code) = tapec(&["run", program.to_str().unwrap()]);
    assert_eq!((out.as_str(), code), ("", 1), "{err}");
    assert!(err.contains("kept.txt`: permission denied"), "{err}");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "1 2\n");
    let _ = std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o644));
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn an_endless_file_is_refused_as_a_program_without_reading_it_all() {
    for command in ["run", "check", "export"] {
        let (_, err, code) = tapec(&[command, "/dev/zero"]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("`/dev/zero` is too large for a program: it holds more than 16 MiB"),
            "{command}: {err}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_tapec"))
        .arg("repl")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b":load /dev/zero\n")?;
            child.wait_with_output()
        })
        .expect("run the prompt");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("too large for a program"), "{err}");
}

/// Under a limit on address space too low for the interpreter's stack
/// (`ulimit -v`, here 1.5 GB), tapec says so and exits with 1: it panicked
/// before it ran anything.
#[test]
fn too_little_address_space_for_the_stack_is_said_plainly() {
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1500000 && exec \"$0\" run programs/knob.tape")
        .arg(env!("CARGO_BIN_EXE_tapec"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run tapec under sh");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("Error: tapec cannot start"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Runs `program` (written to a scratch file) under a limit on address
/// space of `kib` KiB: its stderr and exit status.
fn run_under_limit(program: &str, name: &str, kib: u64) -> (String, Option<i32>) {
    let dir = std::env::temp_dir().join(format!("tapec-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let path = dir.join(name);
    std::fs::write(&path, program).expect("write the program");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" run \"$1\""))
        .arg(env!("CARGO_BIN_EXE_tapec"))
        .arg(&path)
        .output()
        .expect("run tapec under sh");
    let _ = std::fs::remove_dir_all(&dir);
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

/// A program that wants more memory than the system gives (here past a
/// 6 GB `ulimit -v`, half a GiB more at each call) is refused at the
/// statement that would make the next large matrix, with its span, and
/// ends with status 1; it aborted in the allocation.
#[test]
fn more_memory_than_the_system_gives_is_refused_at_its_statement() {
    let program = "program Hold;\n\
                   procedure Hold(n: Integer);\n\
                   begin\n  \
                   m := Zeros(8000, 8000) + n;\n  \
                   Hold(n + 1);\n\
                   end;\n\
                   Hold(1);\n";
    let (err, code) = run_under_limit(program, "hold.tape", 6_000_000);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.starts_with("Error: not enough memory for "), "{err}");
    assert!(err.contains("hold.tape:4:"), "{err}");
    assert!(err.contains("which the system refused"), "{err}");
    assert!(!err.contains("memory allocation of"), "{err}");
}

/// Setting an element of a large matrix that another value holds too
/// copies it: room for the copy is asked for first, and refused, the
/// statement stops with a diagnostic (here half a GiB more at each call,
/// past a 6 GB `ulimit -v`).
#[test]
fn a_copy_the_system_refuses_is_refused_at_its_statement() {
    let program = "program Copies;\n\
                   procedure Keep(a: Matrix; n: Integer);\n\
                   begin\n  \
                   b := a;\n  \
                   b[1, 1] := n;\n  \
                   Keep(b, n + 1);\n\
                   end;\n\
                   Keep(Zeros(8000, 8000), 1);\n";
    let (err, code) = run_under_limit(program, "copies.tape", 6_000_000);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("Error: not enough memory for a copy of `b`"),
        "{err}"
    );
    assert!(err.contains("copies.tape:5:3"), "{err}");
}

/// A file read by `ReadText` whose bytes the system will not give room
/// for (256 MiB past a 3.5 GB `ulimit -v`) is the read's error, at its
/// span, as a file that cannot be read is: the reading asks for its
/// buffers first, and does not end the run in the allocator.
#[test]
fn a_file_too_large_for_the_memory_left_is_refused_at_its_read() {
    let big = std::env::temp_dir().join(format!("tapec-big-{}.txt", std::process::id()));
    std::fs::write(&big, vec![b'a'; 256 << 20]).expect("write a large file");
    let program = format!("s := ReadText('{}');\nWriteLn(Length(s));\n", big.display());
    let (err, code) = run_under_limit(&program, "read.tape", 3_500_000);
    let _ = std::fs::remove_file(&big);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.starts_with("Error: cannot read `"), "{err}");
    assert!(err.contains("out of memory"), "{err}");
    assert!(err.contains("read.tape:1:"), "{err}");
}

/// Memory the interpreter did not ask for first (here the walk's blames
/// of ten `Tanh`s of a 5600×5600 matrix, one of which it asks for), refused
/// by the system past a 7.5 GB `ulimit -v`, ends the run with a plain
/// message and status 1 rather than an abort.
#[test]
fn memory_refused_on_the_way_ends_the_run_plainly() {
    let program = "program Names;\n\
                   w := Zeros(5600, 5600);\n\
                   tape\n  \
                   b := Tanh(w); c := Tanh(b); d := Tanh(c); e := Tanh(d); f := Tanh(e);\n  \
                   g := Tanh(f); h := Tanh(g); i := Tanh(h); j := Tanh(i); k := Tanh(j);\n  \
                   s := Sum(k);\n\
                   end;\n\
                   WriteLn(s);\n";
    let (err, code) = run_under_limit(program, "names.tape", 7_500_000);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("Error: out of memory: the system refused 240 MiB more, and tapec stops"),
        "{err}"
    );
    assert!(!err.contains("memory allocation of"), "{err}");
}

/// `TAPEC_THREADS` takes what `--threads` takes, 1 to 1024: a hundred
/// thousand threads, each reserving its stack, took minutes to start
/// before even `check` of a one-line program.
#[test]
fn threads_past_the_most_are_a_usage_error_from_the_environment_too() {
    for (value, code) in [
        ("100000", Some(2)),
        ("0", Some(2)),
        ("1025", Some(2)),
        ("1024", Some(0)),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_tapec"))
            .args(["check", "programs/knob.tape"])
            .env("TAPEC_THREADS", value)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run tapec");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), code, "TAPEC_THREADS={value}: {err}");
        if code == Some(2) {
            assert!(err.contains("from 1 to 1024"), "{err}");
        }
    }
}
