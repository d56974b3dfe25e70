//! No input makes tapec slow. Each file in `tests/hangs/` once kept the
//! parser busy for minutes or more (unclosed brackets were parsed twice at
//! each level; recovery re-read what every open block held); here each is
//! checked, run, and typed into a prompt session under a watchdog, and must
//! end with a diagnostic. So must every shape of unclosed or mismatched
//! bracket and block, 256 deep, and a 64 KiB file of random tokens; and
//! an entry of 10,000 lines at the prompt must end at its last line.

use std::path::PathBuf;

mod prompt;
mod watchdog;
use watchdog::within_watchdog;

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tapec-hangs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Runs `text` as a program and as prompt input, each under the watchdog;
/// the program must fail with a diagnostic. Returns the program's stderr
/// and what the prompt session printed.
fn fails_in_time(name: &str, text: String) -> (String, String) {
    let bytes = text.clone().into_bytes();
    let (_, err, code) = within_watchdog(&format!("the run of {name}"), move || {
        tapec::run_untrusted(bytes, scratch(), 5_000, 1 << 16)
    });
    assert_eq!(code, 1, "{name}: {err}");
    assert!(err.contains("Error"), "{name}: no diagnostic in {err}");
    let prompt = within_watchdog(&format!("the prompt session of {name}"), move || {
        tapec::repl::run_untrusted(text.as_bytes(), scratch(), 5_000, 1 << 16)
    });
    assert!(prompt.contains("Error"), "{name} at the prompt: {prompt}");
    (err, prompt)
}

#[test]
fn every_file_that_once_hung_ends_with_a_diagnostic() {
    let mut count = 0;
    for entry in std::fs::read_dir("tests/hangs").expect("tests/hangs") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|x| x == "tape") {
            let text = std::fs::read_to_string(&path).expect("read");
            fails_in_time(&path.display().to_string(), text);
            count += 1;
        }
    }
    assert!(count >= 6, "only {count} files in tests/hangs");
}

/// A broken shape of the source, `n` levels deep.
type Shape = (&'static str, fn(usize) -> String);

/// Broken shapes at 256 levels, the nesting limit: each takes milliseconds.
#[test]
fn unclosed_and_mismatched_shapes_at_the_nesting_limit() {
    let shapes: [Shape; 16] = [
        ("unclosed [", |n| format!("x := {};", "[".repeat(n))),
        ("unclosed (", |n| format!("x := {};", "(".repeat(n))),
        ("unclosed calls", |n| format!("x := {};", "f(".repeat(n))),
        ("unclosed indices", |n| {
            format!("x := {};", "x[1, ".repeat(n))
        }),
        ("field specifiers", |n| {
            format!("WriteLn({};", "x:".repeat(n))
        }),
        ("[ closed by )", |n| {
            format!("x := {}{};", "[".repeat(n), ")".repeat(n))
        }),
        ("( closed by ]", |n| {
            format!("x := {}{};", "(".repeat(n), "]".repeat(n))
        }),
        ("unclosed rows", |n| format!("x := {};", "[[1], ".repeat(n))),
        ("rows inside open rows", |n| {
            format!("x := {}1{};", "[1, ".repeat(n), "];".repeat(n))
        }),
        ("open begin", |n| format!("{} x := 1;", "begin ".repeat(n))),
        ("open tape", |n| format!("{} x := 1;", "tape ".repeat(n))),
        ("open repeat", |n| {
            format!("{} x := 1;", "repeat ".repeat(n))
        }),
        ("broken statements in open blocks", |n| {
            "begin x := ) ;\n".repeat(n)
        }),
        ("routine headers", |n| {
            format!("{};", "procedure P(".repeat(n))
        }),
        ("typed parameters", |n| {
            format!("{};", "function F(a: ".repeat(n))
        }),
        ("hanging then", |n| "if x then ".repeat(n)),
    ];
    for (name, shape) in shapes {
        for n in [18, 22, 26, 30, 34, 40, 64, 128, 256] {
            fails_in_time(&format!("{name}, {n} deep"), shape(n));
        }
    }
}

/// A small generator of the same kind the property tests use, so the file
/// is the same on every machine.
fn random_tokens(bytes: usize, seed: u64) -> String {
    const TOKENS: &[&str] = &[
        "x", ":=", "1", ";", "+", "(", ")", "[", "]", ",", "Sum", "if", "then", "else", "begin",
        "end", "WriteLn", ":", "`", "2.5", "*", "\n",
    ];
    let mut random = tapec::eval::random::Random::default();
    random.seed(seed as i64);
    let mut text = String::new();
    while text.len() < bytes {
        text.push_str(TOKENS[random.int_in(0, TOKENS.len() as i64 - 1) as usize]);
        text.push(' ');
    }
    text
}

#[test]
fn a_file_of_random_tokens_and_one_with_thousands_of_errors() {
    for seed in 1..=3 {
        fails_in_time(
            &format!("64 KiB of random tokens, seed {seed}"),
            random_tokens(1 << 16, seed),
        );
    }
    // One line, thousands of errors: the first 50 are shown, the rest counted.
    let (err, _) = fails_in_time("one long line of errors", "x := ) ; ".repeat(8_000));
    assert_eq!(
        err.matches("Error:").count(),
        tapec::diagnostic::MAX_SHOWN,
        "{}",
        &err[..2000]
    );
    assert!(
        err.contains("7950 more errors are not shown"),
        "{}",
        &err[err.len() - 500..]
    );
}

/// The 50 errors shown of a program of one 160 KB line each draw a window
/// of the line around the error, at its true column: drawn whole, the line
/// made 8 MB of diagnostics, run or typed at the prompt.
#[test]
fn errors_on_one_long_line_each_show_a_window_of_it() {
    let (err, prompt) = fails_in_time(
        "fifty errors shown on a line of 160 KB",
        "x := ) ; ".repeat(160_000 / 9),
    );
    for (what, text) in [("the run", &err), ("the prompt", &prompt)] {
        assert_eq!(
            text.matches("Error:").count(),
            tapec::diagnostic::MAX_SHOWN,
            "{what}"
        );
        assert!(
            text.len() < 100_000,
            "{what} printed {} bytes: {}",
            text.len(),
            &text[..2000]
        );
        assert!(
            text.contains(" 1 │ x := ) ; x := ) ;"),
            "{what}: {}",
            &text[..2000]
        );
        assert!(text.contains(" 1 │ …"), "{what}: {}", &text[..2000]);
    }
    // The 50th error, on the 50th `)`, at character 6 + 49 × 9.
    assert!(
        err.contains("fuzz.tape:1:447 ]"),
        "{}",
        &err[err.len() - 2000..]
    );
}

/// `tapec check` of `text`, under the watchdog: its stderr.
fn checked_in_time(name: &str, text: String) -> String {
    let path = scratch().join(format!("{name}.tape"));
    std::fs::write(&path, text).expect("write the program");
    let (err, _) = within_watchdog(&format!("the check of {name}"), move || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tapec"))
            .arg("check")
            .arg(&path)
            .output()
            .expect("run tapec check");
        (
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status,
        )
    });
    err
}

/// Each of these took seconds to check, and more than the watchdog's
/// limit at the sizes here: the layout warnings counted lines from the
/// start of the file for each, every unknown name was matched against
/// every other for its hint, or asked every routine whether it was its
/// local, and each parse error was compared with all before it.
#[test]
fn many_warnings_many_misspelled_names_and_many_parse_errors_check_in_time() {
    let trap = "if x = 1 then\n  x := 2;\n  y := 3;\n";
    let warned = checked_in_time(
        "twenty thousand layout warnings",
        format!("x := 1; y := 1;\n{}", trap.repeat(20_000)),
    );
    assert!(
        warned.contains("no errors, 20000 warnings"),
        "{}",
        &warned[warned.len().saturating_sub(300)..]
    );
    let mut random = tapec::eval::random::Random::default();
    random.seed(7);
    let names: Vec<String> = (0..3_000)
        .map(|_| {
            (0..12)
                .map(|_| char::from(b'a' + random.int_in(0, 9) as u8))
                .collect()
        })
        .collect();
    let mut text: String = names.iter().map(|n| format!("{n} := 1;\n")).collect();
    for n in &names {
        text.push_str(&format!("WriteLn({}x);\n", &n[..11]));
    }
    let misspelled = checked_in_time("three thousand misspelled names", text);
    assert!(misspelled.contains("3000 errors"), "{}", &misspelled[..500]);
    // Each unknown name asked every routine whether the name was its own.
    let mut text: String = (0..2_000)
        .map(|r| {
            let body: String = (0..20).map(|i| format!("  a{r}_{i} := 1;\n")).collect();
            format!("procedure P{r};\nbegin\n{body}end;\n")
        })
        .collect();
    for i in 0..20_000 {
        text.push_str(&format!("WriteLn(u{i});\n"));
    }
    let unknown = checked_in_time("twenty thousand unknown names, two thousand routines", text);
    assert!(unknown.contains("20000 errors"), "{}", &unknown[..500]);
    let broken = checked_in_time("forty thousand parse errors", "x:=;\n".repeat(40_000));
    assert!(broken.contains("40000 errors"), "{}", &broken[..500]);
    let parameters: Vec<String> = (0..300_000).map(|k| format!("a{k}: Real")).collect();
    let long_header = checked_in_time(
        "a routine of three hundred thousand parameters",
        format!("procedure P({});\nbegin\nend;\n", parameters.join("; ")),
    );
    assert!(long_header.contains("no errors"), "{long_header}");
}

/// A `,` left out between arguments or between rows, and `var` where it
/// is not written, are each told from the tokens around the error: whether
/// a bracket is closed later, and where each header or `var` section
/// opens, are found in one pass for all errors, and the rows of a matrix
/// are walked once each.
#[test]
fn missing_commas_and_misplaced_vars_check_in_time() {
    let arguments = checked_in_time(
        "forty thousand calls missing a comma",
        "WriteLn('x = ' x);\n".repeat(40_000),
    );
    assert!(arguments.contains("40000 errors"), "{}", &arguments[..500]);
    let rows: Vec<String> = (0..100_000).map(|i| format!("[{i}]")).collect();
    let rows = checked_in_time(
        "a hundred thousand rows with no commas",
        format!("x := [{}];\n", rows.join(" ")),
    );
    assert!(rows.contains("missing between two rows"), "{rows}");
    let calls = checked_in_time(
        "forty thousand calls with `var`",
        format!(
            "procedure P(var x: Real); begin x := 1; end;\n{}",
            "y := 1.0; P(var y);\n".repeat(40_000)
        ),
    );
    assert!(calls.contains("40000 errors"), "{}", &calls[..500]);
    let groups: Vec<String> = (0..100_000).map(|k| format!("var a{k}: Real")).collect();
    let header = checked_in_time(
        "a header of a hundred thousand groups, then a second `var`",
        format!(
            "procedure P({}; var b, var c: Real);\nbegin\nend;\n",
            groups.join("; ")
        ),
    );
    assert!(header.contains("one `var` marks every name"), "{header}");
    let header = checked_in_time(
        "a header of a hundred thousand groups, then `ref`",
        format!(
            "procedure P({}; ref c: Real; d: Real);\nbegin\nend;\n",
            groups.join("; ")
        ),
    );
    assert!(
        header.contains("`ref` does not mark a parameter") && header.contains(": 1 error"),
        "{header}"
    );
    // A header of types written first reads a few groups for its hint.
    let c_groups: Vec<String> = (0..100_000).map(|k| format!("int a{k}")).collect();
    let typed_first = checked_in_time(
        "a header of a hundred thousand groups, each type written first",
        format!(
            "procedure P({});\nbegin\nend;\nvar {};\n",
            c_groups.join(", "),
            c_groups.join(", ")
        ),
    );
    assert!(
        typed_first.contains("write `a0: Integer`, each name before its type")
            && typed_first.contains(": 2 errors"),
        "{typed_first}"
    );
    // A hint writes a long group's last names only.
    let names: Vec<String> = (0..100_000).map(|k| format!("a{k}")).collect();
    let untyped = checked_in_time(
        "a group of a hundred thousand names, its `:` left out",
        format!("procedure P({} Real);\nbegin\nend;\n", names.join(", ")),
    );
    assert!(
        untyped.contains("a `:` is missing") && untyped.len() < 2_000,
        "{}",
        &untyped[..untyped.len().min(2_000)]
    );
    let sections = checked_in_time(
        "forty thousand var sections missing a comma",
        "var a b: Real;\n".repeat(40_000),
    );
    assert!(sections.contains("40000 errors"), "{}", &sections[..500]);
    assert!(
        sections.contains("a `,` is missing between two names"),
        "{}",
        &sections[..500]
    );
}

/// A string with a word glued after it (`'it's'`) is looked at for a
/// quote meant inside it up to its line's end; with every string of a
/// long line searching to that end, a one-line program of strings took
/// 47 s to check at 80,000 of them.
#[test]
fn strings_on_one_long_line_check_in_time() {
    let calls = checked_in_time(
        "a hundred and fifty thousand strings on one line",
        "WriteLn('a');".repeat(150_000),
    );
    assert!(
        calls.contains("no errors"),
        "{}",
        &calls[..calls.len().min(500)]
    );
    let glued = checked_in_time(
        "sixty thousand strings each with a word after it, on one line",
        format!("x := 'a'b{}", "; y := 'a'b".repeat(60_000)),
    );
    assert!(
        glued.contains("60001 errors"),
        "{}",
        &glued[..glued.len().min(500)]
    );
}

/// `tapec export` of a program of 150,000 statements, each with its line
/// in a comment of the script: linear in the program's length, as `run`
/// is. Finding each statement's line by counting the newlines before it
/// took minutes.
#[test]
fn exporting_150_000_statements_ends_in_time() {
    let dir = scratch();
    let program = dir.join("long.tape");
    let text: String = (0..150_000).map(|i| format!("x := {i};\n")).collect();
    std::fs::write(&program, text).expect("write the program");
    let script = within_watchdog("the export of 150,000 statements", move || {
        let opts = tapec::RunOptions::new(&program);
        tapec::with_big_stack(move || tapec::export_python(&opts, "", &mut Vec::new()))
    })
    .expect("the program exports");
    assert!(script.contains("    x = 149999  # long.tape:150000\n"));
}

/// A tape of 999 records, a chain in which every record also takes the
/// chain's first value: its arrows from that value pass 497,503 rows of
/// boxes in all, and drawing each piece wrote 33 MB of SVG in over a
/// second (a PNG was refused only after that, from the SVG's size). Every
/// way of drawing it is refused at once, from the count alone, with what
/// to do instead; DOT, which has no limit, is written.
#[test]
fn a_tape_whose_arrows_pass_every_row_is_refused_at_once_for_every_picture() {
    let dir = scratch();
    let program = dir.join("every_row.tape");
    let text = format!(
        "x := 1.0;\ntape\n  s := x;\n{}end;\n",
        "  s := s * x + x;\n".repeat(499)
    );
    std::fs::write(&program, &text).expect("write the program");
    let too_many = "its arrows would pass a row of boxes 497503 times on their way from a \
                    value to its use, and a picture is drawn with at most 50000";
    let tapec = |args: Vec<std::ffi::OsString>, input: String| {
        within_watchdog("drawing a tape whose arrows pass every row", move || {
            let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tapec"))
                .args(["--color", "never"])
                .args(&args)
                .env("HOME", std::env::temp_dir())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start tapec");
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(input.as_bytes()).expect("write");
            drop(stdin);
            let out = child.wait_with_output().expect("tapec ends");
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        })
    };
    for (ending, way_out) in [
        (
            "svg",
            "write it as .dot, which has no limit, or draw a smaller tape",
        ),
        (
            "png",
            "write it as .dot, which has no limit, or draw a smaller tape",
        ),
        (
            "html",
            "the walk as text has no limit (`tapec graph --walk`, `:walk` at the prompt), or \
             walk a smaller tape",
        ),
    ] {
        let out = dir.join(format!("every_row.{ending}"));
        let _ = std::fs::remove_file(&out);
        let refused = format!(
            "Error: cannot draw `{}`: {too_many}; {way_out}\n",
            out.display()
        );
        let args = vec![
            "graph".into(),
            program.clone().into(),
            "-o".into(),
            out.clone().into(),
        ];
        let (code, err) = tapec(args, String::new());
        assert_eq!((code, err.as_str()), (Some(1), refused.as_str()));
        assert!(!out.exists(), "{} was written", out.display());
        // The same at the prompt, with `:graph`.
        let (code, err) = tapec(
            vec!["repl".into()],
            format!("{text}:graph {}\n", out.display()),
        );
        assert_eq!((code, err.as_str()), (Some(1), refused.as_str()));
        assert!(!out.exists(), "{} was written at the prompt", out.display());
    }
    let dot = dir.join("every_row.dot");
    let args = vec![
        "graph".into(),
        program.into(),
        "-o".into(),
        dot.clone().into(),
    ];
    let (code, err) = tapec(args, String::new());
    assert_eq!(code, Some(0), "{err}");
    let dot = std::fs::read_to_string(dot).expect("the DOT written");
    assert_eq!(dot.matches("[label=").count(), 999);
    for k in 1..999 {
        assert!(
            dot.contains(&format!("  n0 -> n{k};\n")),
            "record {k} takes x"
        );
    }
}

/// `tapec repl` given `input` on a pipe, under the watchdog: its stdout
/// and stderr.
fn piped_in_time(name: &str, input: String) -> (String, String) {
    within_watchdog(&format!("the piped prompt session of {name}"), move || {
        let output = prompt::piped(input.as_bytes());
        (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    })
}

/// Entries of 10,000 lines, each of a shape that stays open over many
/// lines: piped into the prompt, each runs in time, and the notebook's
/// rule, which is the prompt's, finds each complete at its last line.
/// Parsing the whole entry again after each line took minutes.
#[test]
fn long_entries_at_the_prompt_end_in_time() {
    let n = 10_000;
    let lines = |first: &str, each: fn(usize) -> String, last: &str| {
        let middle: String = (0..n).map(|i| each(i) + "\n").collect();
        format!("{first}\n{middle}{last}\n")
    };
    let shapes = [
        (
            "parameters",
            lines(
                "procedure P(",
                |i| format!("  a{i}: Real;"),
                "  z: Real); begin end;",
            ),
            "procedure P defined",
        ),
        (
            "var sections",
            lines("procedure Q;", |i| format!("var a{i}: Real;"), "begin end;"),
            "procedure Q defined",
        ),
        (
            "rows",
            lines("m := [[0]", |i| format!("  , [{i}]"), "];"),
            "m : 10001×1",
        ),
        (
            "arguments",
            lines("WriteLn('sum'", |_| "  , ''".to_string(), ");"),
            "sum",
        ),
        (
            "an else-if chain",
            lines(
                "if 1 > 2 then WriteLn(0)",
                |i| format!("else if {i} < 0 then WriteLn({i})"),
                "else WriteLn('last')",
            ),
            "last",
        ),
        (
            "an else-if chain of if-else branches",
            lines(
                "if 1 > 2 then WriteLn(0)",
                |i| format!("else if {i} < 0 then if {i} > 1 then WriteLn(1) else WriteLn(2)"),
                "else WriteLn('last of the branches')",
            ),
            "last of the branches",
        ),
        (
            "a loop's condition",
            lines(
                "while (1 > 2)",
                |i| format!("  and ({i} > 0)"),
                "do WriteLn('never'); WriteLn('done');",
            ),
            "done",
        ),
        (
            "names with leading commas",
            lines(
                "var a",
                |i| format!(", a{i}"),
                ": Real; WriteLn('declared');",
            ),
            "declared",
        ),
        (
            "blank lines after an if",
            lines(
                "if 1 > 2 then WriteLn(0)",
                |_| String::new(),
                "else WriteLn('else');",
            ),
            "else",
        ),
        (
            "a comment",
            lines(
                "{ a comment",
                |i| format!("  line {i}"),
                "} WriteLn('after');",
            ),
            "after",
        ),
    ];
    for (name, input, shown) in shapes {
        let asked = input.clone();
        let complete = within_watchdog(&format!("the notebook's rule on {name}"), move || {
            let repl = tapec::repl::Repl::new(
                || Box::new(std::io::sink()),
                Box::new(std::io::sink()),
                false,
            );
            repl.completeness(&asked)
        });
        assert_eq!(complete, tapec::repl::Completeness::Complete, "{name}");
        let (out, err) = piped_in_time(name, input);
        assert_eq!(err, "", "{name}");
        assert!(
            out.contains(shown),
            "{name}: {}",
            out.chars().take(500).collect::<String>()
        );
    }
}

/// `else if` chains of 10,000 lines whose branches hold a `;` that does
/// not end the chain: a routine's header, or one between the groups of a
/// `var` section. Piped into the prompt, each ends at its last line in
/// time and is refused (neither may stand inside an `if`); the line after
/// it then runs alone. Parsing the whole entry again after each line took
/// minutes.
#[test]
fn else_if_chains_of_declarations_at_the_prompt_end_in_time() {
    let n = 10_000;
    let chain = |each: fn(usize) -> String| {
        let middle: String = (1..n).map(|i| format!("else {}\n", each(i))).collect();
        format!(
            "{}\n{middle}else WriteLn('last')\nWriteLn('after');\n",
            each(0)
        )
    };
    let shapes = [
        (
            "routines",
            chain(|i| format!("if {i} < 0 then procedure P{i}; begin end")),
            "routines are declared at the top level only",
        ),
        (
            "var sections",
            chain(|i| format!("if {i} < 0 then var a{i}: Real; b{i}: Real")),
            "a `var` section may only stand at the top level",
        ),
    ];
    for (name, input, refused) in shapes {
        let (out, err) = piped_in_time(name, input);
        let start: String = err.chars().take(500).collect();
        assert!(err.contains(refused), "{name}: {start}");
        assert!(err.contains("more errors are not shown"), "{name}");
        assert_eq!(out, "after\n", "{name}");
    }
}

/// A string built one piece at a time, as a sampling loop builds its text:
/// each `s := s + t` appends to `s`'s own string. With a copy of both for
/// each `+`, two million appends took minutes (800,000 took 15 s).
#[test]
fn a_string_built_a_piece_at_a_time_ends_in_time() {
    let program = scratch().join("appends.tape");
    std::fs::write(
        &program,
        "s := '';\nfor i := 1 to 2000000 do s := s + 'a';\n\
         t := s;\ns := s + 'b';\nWriteLn(Length(s), ' ', Length(t));\n",
    )
    .expect("write program");
    let (out, err, code) = within_watchdog("two million appends", move || {
        tapec::run_captured(&program, &[], None)
    });
    assert_eq!(code, 0, "{err}");
    // `t` still holds the string as it was before the last append.
    assert_eq!(out, "2000001 2000000\n");
}
