//! The Jupyter kernel. Without Python: the kernelspec `tapec jupyter
//! install` writes, and cells run on the REPL's session (state kept,
//! outputs formed, errors undone), completeness, completion and
//! inspection. With Python (jupyter_kernel_test, jupyter_client, nbclient
//! in bench/.venv, which .ci/run installs): Jupyter's conformance suite,
//! interrupts, forged messages, and the shipped notebooks run again and
//! compared with their saved outputs.

mod clients;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tapec::jupyter::cells::{Cells, Outcome, Output};
use tapec::repl::Completeness;

/// A session and the outputs it has shown.
fn session() -> (Cells, Rc<RefCell<Vec<Output>>>) {
    let shown: Rc<RefCell<Vec<Output>>> = Rc::default();
    let to = shown.clone();
    let cells = Cells::new(move |output| to.borrow_mut().push(output));
    (cells, shown)
}

/// What a cell printed to stdout and stderr, joined.
fn streams(shown: &Rc<RefCell<Vec<Output>>>) -> (String, String) {
    let mut out = String::new();
    let mut err = String::new();
    for output in shown.borrow_mut().drain(..) {
        if let Output::Stream { stderr, text } = output {
            if stderr {
                err.push_str(&text)
            } else {
                out.push_str(&text)
            }
        }
    }
    (out, err)
}

#[test]
fn a_bare_expression_at_the_end_is_the_result() {
    let (mut cells, shown) = session();
    let outcome = cells.execute("Signed := 7;\nSigned * 6;");
    assert_eq!(streams(&shown).0, "Signed = 7\n");
    assert_eq!(
        outcome,
        Outcome::Done {
            result: Some("42".to_string())
        }
    );
}

#[test]
fn completeness_is_the_prompts_rule() {
    let (cells, _) = session();
    for code in [
        "x := 1;",
        "WriteLn('a');",
        ":vars",
        "tape",
        "tape\n  s := Sum([[1, 2]]);\nend;",
        "for i := 1 to 3 do\n  WriteLn(i);",
        "",
    ] {
        assert_eq!(cells.is_complete(code), Completeness::Complete, "{code:?}");
    }
    for code in [
        "for i := 1 to 3 do",
        "x := [1,",
        "begin\n  x := 1;",
        "procedure P(a: Real);",
        "{ a comment not closed",
        "x := 1 +",
    ] {
        assert_eq!(
            cells.is_complete(code),
            Completeness::Incomplete,
            "{code:?}"
        );
    }
    for code in ["x := ;", "x := 1 +* 2;", "end end;"] {
        assert_eq!(cells.is_complete(code), Completeness::Invalid, "{code:?}");
    }
}

#[test]
fn state_is_kept_from_cell_to_cell() {
    let (mut cells, shown) = session();
    assert_eq!(cells.execute("x := 2;"), Outcome::Done { result: None });
    assert_eq!(streams(&shown).0, "x = 2\n");
    let outcome = cells.execute("function Twice(a: Real): Real;\nbegin\n  Result := 2 * a;\nend;");
    assert_eq!(outcome, Outcome::Done { result: None });
    assert_eq!(streams(&shown).0, "function Twice defined\n");
    assert_eq!(
        cells.execute("Twice(x) + 1;"),
        Outcome::Done {
            result: Some("5.000000".into())
        }
    );
    // An earlier value in the cell is echoed as the REPL echoes it.
    let outcome = cells.execute("x;\nWriteLn('then');\nx + 1;");
    assert_eq!(
        outcome,
        Outcome::Done {
            result: Some("3".into())
        }
    );
    assert_eq!(streams(&shown).0, "2\nthen\n");
}

#[test]
fn a_failing_cell_changes_nothing_and_shows_the_diagnostic() {
    let (mut cells, shown) = session();
    cells.execute("x := 1;");
    streams(&shown);
    let Outcome::Failed(failure) = cells.execute("x := 5;\ny := [[1, 2]] * [[3, 4]];\nz := 3;")
    else {
        panic!("the cell should fail");
    };
    assert_eq!(failure.ename, "error");
    assert!(!failure.evalue.is_empty());
    let text = failure.traceback.join("\n");
    assert!(text.starts_with("Error: "), "{text}");
    assert!(!text.contains('\x1b'), "no colour: {text}");
    assert!(text.contains("[[1, 2]] * [[3, 4]]"), "{text}");
    // Named as the cell, at the cell's line 2.
    assert!(text.contains("[ cell:2:"), "{text}");
    // The first line ran and echoed, then the cell was undone whole, and
    // the error says so.
    assert_eq!(streams(&shown).0, "x = 5\n");
    assert!(
        failure.traceback.last().unwrap().contains("undone too"),
        "{text}"
    );
    assert_eq!(
        cells.execute("x;"),
        Outcome::Done {
            result: Some("1".into())
        }
    );
    let Outcome::Failed(alone) = cells.execute("\n\nz;") else {
        panic!("z is not defined");
    };
    // Nothing ran before it: no word of undoing; its line is the cell's.
    assert!(!alone.traceback.join("\n").contains("undone"), "{alone:?}");
    assert!(
        alone.traceback.join("\n").contains("[ cell:3:"),
        "{alone:?}"
    );
    let Outcome::Failed(named) = cells.execute_named("x := 2;\nz;", "cell [7]") else {
        panic!("z is not defined");
    };
    assert!(
        named.traceback.join("\n").contains("[ cell [7]:2:"),
        "{named:?}"
    );
    // Statements before the error on its own line ran too: the cell says
    // so once, in its own words, as when they stand on lines above it.
    for code in [
        "x := 3; y := 1 div 0;",
        "WriteLn(1);\nx := 3; y := 1 div 0;",
    ] {
        let Outcome::Failed(same_line) = cells.execute(code) else {
            panic!("`div` by zero fails");
        };
        let text = same_line.traceback.join("\n");
        assert_eq!(text.matches("undone").count(), 1, "{code:?}: {text}");
        assert!(!text.contains("entry"), "{code:?}: {text}");
        assert!(
            same_line
                .traceback
                .last()
                .unwrap()
                .contains("The cell changed nothing"),
            "{code:?}: {text}"
        );
    }
    streams(&shown);
    // A cell left open is an error at its end, as the end of piped input.
    assert!(matches!(
        cells.execute("begin\n  x := 9;"),
        Outcome::Failed(_)
    ));
    assert_eq!(
        cells.execute("x;"),
        Outcome::Done {
            result: Some("1".into())
        }
    );
}

#[test]
fn a_prompt_tape_spans_cells_and_graph_and_walk_show_inline() {
    let (mut cells, shown) = session();
    cells.execute("k := [[1, 2], [3, 4]];\ntape");
    let (out, _) = streams(&shown);
    assert!(out.ends_with("row 2: 3.000000 4.000000\n"), "{out}");
    cells.execute("  s := Sum(Hadamard(k, k));");
    assert_eq!(streams(&shown).0, "s = 30.000000 (recorded)\n");
    cells.execute("end;");
    let (out, _) = streams(&shown);
    assert!(out.starts_with("tape closed: "), "{out}");
    assert_eq!(cells.execute(":graph"), Outcome::Done { result: None });
    let shown_now: Vec<Output> = shown.borrow_mut().drain(..).collect();
    let [Output::Display(forms)] = &shown_now[..] else {
        panic!("one picture: {shown_now:?}");
    };
    assert_eq!(forms[0].0, "image/svg+xml");
    assert!(forms[0].1.contains("<svg"));
    assert!(
        forms[0].1.contains("Hadamard"),
        "the picture names the operation"
    );
    cells.execute(":walk");
    let shown_now: Vec<Output> = shown.borrow_mut().drain(..).collect();
    let [Output::Display(forms)] = &shown_now[..] else {
        panic!("one page: {shown_now:?}");
    };
    assert_eq!(forms[0].0, "text/html");
    assert!(forms[0].1.starts_with("<iframe srcdoc=\""));
    assert_eq!(forms[1].0, "text/plain");
    assert!(forms[1].1.starts_with("step 1 of "), "{}", forms[1].1);
    // `:blame` is `Blame(k)`, a bare expression: the cell's result.
    assert_eq!(
        cells.execute(":blame k"),
        Outcome::Done {
            result: Some("  row 1: 2.000000 4.000000\n  row 2: 6.000000 8.000000".into())
        }
    );
}

#[test]
fn a_plot_is_shown_as_svg_and_a_path_still_writes_its_file() {
    let (mut cells, shown) = session();
    assert_eq!(
        cells.execute("WriteLn('before');\nPlot([[1, 3, 2]]);\nWriteLn('after');"),
        Outcome::Done { result: None }
    );
    let outputs: Vec<Output> = shown.borrow_mut().drain(..).collect();
    assert_eq!(
        outputs[0],
        Output::Stream {
            stderr: false,
            text: "before\n".into()
        }
    );
    let Output::Display(forms) = &outputs[1] else {
        panic!("a chart: {outputs:?}");
    };
    assert_eq!(forms[0].0, "image/svg+xml");
    assert!(forms[0].1.contains("<polyline"));
    assert_eq!(
        outputs[2],
        Output::Stream {
            stderr: false,
            text: "after\n".into()
        }
    );
    let dir = std::env::temp_dir().join(format!("tapec-jupyter-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("chart.svg");
    let code = format!(
        "Plot([[1, 2]], '{}', 'a title');WriteLn('x');",
        path.display()
    );
    assert_eq!(cells.execute(&code), Outcome::Done { result: None });
    let outputs: Vec<Output> = shown.borrow_mut().drain(..).collect();
    assert!(matches!(&outputs[0], Output::Display(forms) if forms[0].1.contains("a title")));
    // Where the Plot ran, before what comes after it, in one output.
    assert_eq!(
        outputs[1..],
        [
            Output::Stream {
                stderr: true,
                text: format!("Plot wrote {}\n", path.display())
            },
            Output::Stream {
                stderr: false,
                text: "x\n".into()
            }
        ],
        "{outputs:?}"
    );
    assert!(std::fs::read_to_string(&path).unwrap().contains("a title"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn completion_offers_names_builtins_keywords_and_commands() {
    let (mut cells, _) = session();
    cells.execute("Weights := [[1]];");
    let (matches, start, end) = cells.complete("x := We", 7);
    assert_eq!(matches, vec!["Weights".to_string()]);
    assert_eq!((start, end), (5, 7));
    let (matches, _, _) = cells.complete("RowS", 4);
    assert_eq!(
        matches,
        vec!["RowSoftmax".to_string(), "RowSum".to_string()]
    );
    let (matches, _, _) = cells.complete("whi", 3);
    assert_eq!(matches, vec!["while".to_string()]);
    let (matches, start, _) = cells.complete(":gr", 3);
    assert_eq!((matches, start), (vec!["graph".to_string()], 1));
    // Positions count characters, not bytes.
    let (matches, start, _) = cells.complete("{ é } Tra", 9);
    assert_eq!((matches, start), (vec!["Transpose".to_string()], 6));
    // A command where its `:` opens the line; in a call the `:` is a width.
    let (matches, _, _) = cells.complete("x := 1;\n  :wa", 14);
    assert_eq!(matches, vec!["walk".to_string()]);
    let (matches, _, _) = cells.complete("WriteLn(We:", 11);
    assert!(
        !matches.iter().any(|m| m == "walk" || m == "vars"),
        "{matches:?}"
    );
    // Nothing inside a string or a comment, even one not closed yet.
    for (code, cursor) in [
        ("WriteLn('Ta", 11),
        ("{ é Ta", 6),
        ("x := 1; // Ta", 13),
        ("WriteLn('a', 'Ta')", 16),
    ] {
        let (matches, _, _) = cells.complete(code, cursor);
        assert!(matches.is_empty(), "{code}: {matches:?}");
    }
    let (matches, _, _) = cells.complete("{ é } Ta", 8);
    assert!(matches.iter().any(|m| m == "Tanh"), "{matches:?}");
}

/// After a command, what the command takes: `:blame` a variable whose
/// blame it can read (as its own error lists them), `:tape` `all`, `:help`
/// any name or command, and a command that takes a file or nothing no name.
#[test]
fn completion_after_a_command_offers_what_it_takes() {
    let (mut cells, _) = session();
    let (matches, _, _) = cells.complete(":blame ", 7);
    assert!(matches.is_empty(), "no tape yet: {matches:?}");
    cells.execute("w := [[1, 2]];\nn := 3;\ntape\n  s := Sum(w);\nend;");
    let (matches, start, end) = cells.complete(":blame ", 7);
    assert_eq!(matches, vec!["s", "w"]);
    assert_eq!((start, end), (7, 7));
    let (matches, _, _) = cells.complete(":blame s", 8);
    assert_eq!(matches, vec!["s"]);
    for code in [":graph ", ":graph pi", ":load ", ":vars ", ":walk W"] {
        let (matches, _, _) = cells.complete(code, code.chars().count());
        assert!(matches.is_empty(), "{code}: {matches:?}");
    }
    let (matches, _, _) = cells.complete(":tape ", 6);
    assert_eq!(matches, vec!["all"]);
    let (matches, _, _) = cells.complete(":help Ta", 8);
    assert!(
        matches.iter().any(|m| m == "Tanh") && matches.iter().any(|m| m == "tape"),
        "{matches:?}"
    );
    let (matches, _, _) = cells.complete(":help :wa", 9);
    assert_eq!(matches, vec!["walk"]);
    // `:` alone: the commands a notebook runs.
    let (matches, _, _) = cells.complete(":", 1);
    let mut commands: Vec<&str> = tapec::repl::command_words(true).collect();
    commands.sort_unstable();
    assert_eq!(matches, commands);
}

/// With the cursor inside a word, the name chosen replaces the word
/// before the cursor, which is what the matches start with (Jupyter's
/// and IPython's convention): the rest of the word stays.
#[test]
fn completion_inside_a_word_replaces_what_is_before_the_cursor() {
    let (cells, _) = session();
    let (matches, start, end) = cells.complete("WriteLn(Ro", 9);
    assert_eq!((start, end), (8, 9));
    assert!(matches.iter().any(|m| m == "RandInt"), "{matches:?}");
    // Keywords in any case, as the lexer reads them.
    assert!(
        matches.iter().all(|m| m.to_lowercase().starts_with('r')),
        "{matches:?}"
    );
    let (_, start, end) = cells.complete("é Tanh", 4);
    assert_eq!((start, end), (2, 4));
}

/// After the `:` of a declaration the types are offered, as the language
/// server offers them; a `:` in a call is a width, where values go.
#[test]
fn completion_offers_the_types_after_a_declarations_colon() {
    let (cells, _) = session();
    for (code, expected) in [
        ("var a: Re", vec!["Real"]),
        ("procedure P(x: Int", vec!["Integer"]),
        ("function F: Mat", vec!["Matrix"]),
        ("x := 1;\nvar i, j: Integer; s: St", vec!["String"]),
        (
            "var a: ",
            vec!["Boolean", "Integer", "Matrix", "Real", "String"],
        ),
    ] {
        let cursor = code.chars().count();
        let (matches, start, end) = cells.complete(code, cursor);
        assert_eq!(matches, expected, "{code}");
        let typed = code.rsplit([' ', ':']).next().unwrap().chars().count();
        assert_eq!((start, end), (cursor - typed, cursor), "{code}");
    }
    let (matches, _, _) = cells.complete("x := 2;\nWriteLn(x: ", 19);
    assert!(matches.iter().any(|m| m == "x"), "{matches:?}");
    assert!(!matches.iter().any(|m| m == "Real"), "{matches:?}");
    let (matches, _, _) = cells.complete("var a: Real; { b: Re", 20);
    assert!(matches.is_empty(), "{matches:?}");
}

/// In the code the editor's rules hold, with the session's names: after
/// `for` its variables only, no `not` after an operator, no routine
/// inside a block, a procedure only where a statement starts; and since
/// an expression alone shows its value in a cell, a function there too.
#[test]
fn completion_in_a_cell_follows_the_editors_rules_with_the_sessions_names() {
    let (mut cells, _) = session();
    cells.execute(
        "n := 3;\nnorm := 2.0;\nfunction Twice(x: Real): Real;\nbegin\n  Result := 2 * x;\nend;\n\
         procedure Tell(x: Real);\nbegin\n  WriteLn(x);\nend;",
    );
    let complete = |code: &str| cells.complete(code, code.chars().count()).0;
    assert_eq!(complete("for n"), vec!["n", "norm"]);
    assert_eq!(complete("x := 1 + no"), vec!["norm"]);
    assert_eq!(complete("x := no"), vec!["norm", "not"]);
    let in_block = complete("begin\n  pro");
    assert!(in_block.is_empty(), "{in_block:?}");
    assert_eq!(complete("pro"), vec!["procedure", "program"]);
    assert_eq!(
        complete("x := T"),
        vec!["Tanh", "Transpose", "Trunc", "Twice", "true"]
    );
    let statement = complete("T");
    for name in ["Tell", "Twice", "Tanh"] {
        assert!(statement.iter().any(|m| m == name), "{name}: {statement:?}");
    }
    // Inside a routine's body or a block no value is shown: no function
    // where a statement starts.
    for code in ["procedure P;\nbegin\n  T", "begin\n  T"] {
        let inside = complete(code);
        assert!(inside.iter().any(|m| m == "Tell"), "{code}: {inside:?}");
        assert!(
            !inside.iter().any(|m| m == "Twice" || m == "Tanh"),
            "{code}: {inside:?}"
        );
    }
    // `not` and `true` start an expression a cell shows, but not a
    // statement in a block.
    assert_eq!(complete("no"), vec!["norm", "not"]);
    assert_eq!(complete("begin\n  no"), vec!["norm"]);
    // A name typed in the cell is offered before it runs.
    assert_eq!(complete("steps := 10;\nWriteLn(st"), vec!["steps"]);
}

#[test]
fn a_value_before_a_picture_shows_before_it_and_quit_does_not_end_the_cell() {
    let (mut cells, shown) = session();
    cells.execute("k := [[1, 2]];\ntape\n  s := Sum(k);\nend;");
    shown.borrow_mut().clear();
    assert_eq!(cells.execute("s\n:graph"), Outcome::Done { result: None });
    let shown_now: Vec<Output> = shown.borrow_mut().drain(..).collect();
    let [
        Output::Stream {
            stderr: false,
            text,
        },
        Output::Display(_),
    ] = &shown_now[..]
    else {
        panic!("the value, then the picture: {shown_now:?}");
    };
    assert_eq!(text, "3.000000\n");
    let outcome = cells.execute("x := 1;\n:quit\nWriteLn(x + 1);");
    assert_eq!(outcome, Outcome::Done { result: None });
    let (out, err) = streams(&shown);
    assert_eq!(out, "x = 1\n2\n");
    assert!(err.starts_with("`:quit` leaves the prompt"), "{err}");
}

#[test]
fn inspection_gives_the_help_text() {
    let (mut cells, _) = session();
    let help = cells
        .inspect("y := Sqrt(2);", 7)
        .expect("Sqrt is a builtin");
    assert_eq!(help, tapec::repl::transcript(":help Sqrt"));
    assert_eq!(cells.inspect("Sqrt(", 5), Some(help));
    cells.execute("w := [[1, 2, 3]];");
    assert_eq!(cells.inspect("w", 1).as_deref(), Some("w : 1×3\n"));
    assert_eq!(cells.inspect("nothing", 3), None);
    // A keyword and a command, as `:help` tells them.
    assert_eq!(
        cells.inspect("tape", 2),
        Some(tapec::repl::transcript(":help tape").trim_end().to_string())
    );
    // A command as the notebook's `:help` tells it.
    assert!(
        cells
            .inspect(":walk", 3)
            .is_some_and(|help| help.contains("in the cell") && !help.contains("Enter")),
        "{:?}",
        cells.inspect(":walk", 3)
    );
    // Nothing inside a string or a comment, as completion.
    for (code, cursor) in [("x := 'Tanh", 10), ("{ Tanh }", 4), ("// Sqrt", 5)] {
        assert_eq!(cells.inspect(code, cursor), None, "{code}");
    }
    assert!(cells.inspect("{ é } Tanh", 9).is_some());
    assert!(cells.inspect("'a' + Tanh(", 11).is_some());
}

/// A routine of the session is inspected as `:help` tells it, its
/// parameters' types and all.
#[test]
fn inspection_of_a_routine_is_its_help() {
    let (mut cells, shown) = session();
    cells.execute("procedure P(a: Matrix; n: Integer); begin WriteLn(n); end;");
    streams(&shown);
    cells.execute(":help P");
    let (help, _) = streams(&shown);
    assert_eq!(
        help,
        "procedure P(a: Matrix; n: Integer)\n  a procedure of this session\n"
    );
    assert_eq!(cells.inspect("P(", 2), Some(help));
}

/// An echo or a diagnostic after output that left its line open starts a
/// line of its own; the next cell's output starts where the cell does.
#[test]
fn an_echo_after_an_open_line_starts_a_new_line() {
    let (mut cells, shown) = session();
    cells.execute("Write('ab');\nx := 1;");
    assert_eq!(streams(&shown).0, "ab\nx = 1\n");
    cells.execute("Write('ab');");
    streams(&shown);
    cells.execute("y := 2;");
    assert_eq!(streams(&shown).0, "y = 2\n");
    cells.execute("Write('a'); Write('b');");
    assert_eq!(streams(&shown).0, "ab");
}

/// `:help` in a notebook tells the commands as the kernel runs them:
/// `:walk` shows a page, `:graph` draws in the cell, `:quit` is not one.
#[test]
fn help_in_a_notebook_tells_the_kernels_commands() {
    let (mut cells, shown) = session();
    cells.execute(":help");
    let (help, _) = streams(&shown);
    assert!(
        !help.contains(":quit") && !help.contains("Ctrl-D"),
        "{help}"
    );
    assert!(!help.contains("Enter: next"), "{help}");
    let walk = help
        .lines()
        .find(|l| l.trim().starts_with(":walk"))
        .unwrap();
    assert!(walk.contains("in the cell"), "{walk}");
    let graph = help
        .lines()
        .find(|l| l.trim().starts_with(":graph"))
        .unwrap();
    assert!(graph.contains(":graph [FILE]"), "{graph}");
    cells.execute(":help :walk");
    assert_eq!(streams(&shown).0, format!("{}\n", walk.trim()));
    assert_eq!(cells.inspect(":walk", 3), Some(walk.trim().to_string()));
    cells.execute(":help :quit");
    assert!(
        streams(&shown)
            .0
            .starts_with("`:quit` leaves the prompt; a notebook's kernel"),
        "how a notebook's kernel is stopped"
    );
    // Completion offers what `:help` lists.
    let (matches, _, _) = cells.complete(":", 1);
    assert!(matches.contains(&"walk".to_string()), "{matches:?}");
    assert!(!matches.contains(&"quit".to_string()), "{matches:?}");
    // The prompt's own help is the prompt's.
    let prompt = tapec::repl::transcript(":help :walk");
    assert!(prompt.contains("Enter: next"), "{prompt}");
}

/// Interrupts the cell running 300 ms from now, as the interrupt button.
fn interrupt_soon(cells: &Cells) -> std::thread::JoinHandle<()> {
    let flag = cells.interrupt_flag();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    })
}

#[test]
fn an_interrupt_stops_a_loop_and_keeps_what_completed() {
    let (mut cells, shown) = session();
    let stopper = interrupt_soon(&cells);
    let outcome = cells.execute("n := 0;\nwhile true do\n  n := n + 1;");
    stopper.join().unwrap();
    assert_eq!(
        outcome,
        Outcome::Interrupted("interrupted: what completed is kept".into())
    );
    // Said once, as the cell's error, not also in its output.
    let (out, _) = streams(&shown);
    assert!(!out.contains("interrupted"), "{out}");
    assert_eq!(
        cells.execute("n > 0;"),
        Outcome::Done {
            result: Some("true".into())
        }
    );
}

#[test]
fn an_interrupted_loop_on_an_open_tape_keeps_its_finished_turns_and_the_tape() {
    let (mut cells, shown) = session();
    cells.execute("n := 0.0;\nmark := '';\ntape");
    let stopper = interrupt_soon(&cells);
    // The first three turns record an addition each; the loop runs on,
    // recording nothing (a String is not recorded), until the interrupt
    // at a turn's head.
    let outcome = cells.execute(
        "while true do\n  if Length(mark) < 3 then\n  begin\n    n := n + 1.5;\n    mark := mark + 'x';\n  end;",
    );
    stopper.join().unwrap();
    assert_eq!(
        outcome,
        Outcome::Interrupted(
            "interrupted: what completed is kept, and the tape is still open".into()
        )
    );
    streams(&shown);
    cells.execute("s := n * 2;\nend;");
    assert_eq!(
        streams(&shown).0,
        "s = 9.000000 (recorded)\ntape closed: 9 records (5 leaves, 4 operations), \
         result s = 9.000000; blame is ready\n"
    );
    // The blame reaches `n` through the kept turns' records.
    assert_eq!(
        cells.execute("Blame(n);"),
        Outcome::Done {
            result: Some("2.000000".into())
        }
    );
}

/// The state of process `pid` as /proc gives it (`R`, `S`, `Z`...), or
/// `None` when it is gone.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.trim_start().chars().next()
}

#[test]
fn a_kernel_whose_parent_dies_ends() {
    if !Path::new("/proc/self/stat").exists() {
        clients::not_run(
            "the orphaned kernel",
            "this system has no /proc",
            "it runs on Linux",
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("tapec-orphan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ports: Vec<u16> = (0..5)
        .map(|_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        })
        .collect();
    let connection = dir.join("connection.json");
    std::fs::write(
        &connection,
        format!(
            r#"{{"ip": "127.0.0.1", "transport": "tcp", "signature_scheme": "hmac-sha256",
            "key": "a-key", "kernel_name": "tape", "shell_port": {}, "iopub_port": {},
            "stdin_port": {}, "control_port": {}, "hb_port": {}}}"#,
            ports[0], ports[1], ports[2], ports[3], ports[4]
        ),
    )
    .unwrap();
    // A parent that starts the kernel, says its pid, and dies two seconds
    // later without asking it to shut down.
    let mut parent = Command::new("sh")
        .arg("-c")
        .arg(r#""$0" jupyter kernel "$1" 2>/dev/null & echo $!; sleep 2"#)
        .arg(env!("CARGO_BIN_EXE_tapec"))
        .arg(&connection)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sh");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(parent.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let kernel: u32 = line.trim().parse().expect("the kernel's pid");
    std::thread::sleep(Duration::from_millis(1000));
    let alive = |pid| matches!(process_state(pid), Some(state) if state != 'Z');
    assert!(
        alive(kernel),
        "the kernel should run while its parent lives"
    );
    // Its parent is gone after two seconds; the kernel looks once a second.
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(kernel) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = parent.wait();
    let ended = !alive(kernel);
    if !ended {
        let _ = Command::new("kill").arg(kernel.to_string()).status();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ended, "the orphaned kernel is still running");
}

#[test]
fn the_kernelspec_starts_this_tapec_on_the_connection_file() {
    use tapec::jupyter::kernelspec::{Place, install, kernel_dir};
    let dir = std::env::temp_dir().join(format!("tapec-jupyter-spec-{}", std::process::id()));
    let place = Place::Prefix(dir.clone());
    let tapec = std::path::Path::new(env!("CARGO_BIN_EXE_tapec"));
    let written = install(&place, tapec).expect("install");
    assert_eq!(written, dir.join("share/jupyter/kernels/tape"));
    assert_eq!(kernel_dir(&place).unwrap(), written);
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(written.join("kernel.json")).unwrap())
            .unwrap();
    assert_eq!(
        spec["argv"],
        serde_json::json!([
            tapec.display().to_string(),
            "jupyter",
            "kernel",
            "{connection_file}"
        ])
    );
    assert_eq!(spec["display_name"], "Tape");
    assert_eq!(spec["language"], "tape");
    assert_eq!(spec["interrupt_mode"], "signal");
    for (name, size) in [("logo-32x32.png", 32), ("logo-64x64.png", 64)] {
        let png = std::fs::read(written.join(name)).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((width, height), (size, size), "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_kernel_takes_its_connection_file_as_ipykernel_does_too() {
    let tapec = env!("CARGO_BIN_EXE_tapec");
    let missing = std::env::temp_dir().join(format!("tapec-no-such-{}.json", std::process::id()));
    let missing = missing.display().to_string();
    for args in [vec![missing.as_str()], vec!["-f", missing.as_str()]] {
        let done = Command::new(tapec)
            .args(["jupyter", "kernel"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert!(
            err.contains(&format!("cannot read the connection file `{missing}`")),
            "{args:?}: {err}"
        );
        assert_eq!(done.status.code(), Some(1), "{args:?}");
    }
    let both = Command::new(tapec)
        .args(["jupyter", "kernel", "a.json", "-f", "b.json"])
        .output()
        .unwrap();
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"));
}

// ---- with Jupyter's own clients, in Python ----

/// What the Python tests import.
const PYTHON_NEEDS: &str = "import jupyter_kernel_test, jupyter_client, nbclient, nbformat, pytest";

/// A Python with Jupyter's test packages: `TAPEC_PYTHON` when it is set
/// (`.ci/run` sets it to `bench/.venv`, where it installs them), else
/// `bench/.venv`, else `python3`; or why there is none.
fn python_with_jupyter() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates: Vec<PathBuf> = match std::env::var_os("TAPEC_PYTHON") {
        Some(python) => vec![python.into()],
        None => vec![root.join("bench/.venv/bin/python"), "python3".into()],
    };
    candidates
        .iter()
        .find(|python| {
            Command::new(python)
                .args(["-c", PYTHON_NEEDS])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .cloned()
        .ok_or_else(|| format!("no Python among {candidates:?} imports jupyter_kernel_test, jupyter_client, nbclient and pytest"))
}

/// A folder with the kernelspec installed as `tapec jupyter install
/// --prefix` writes it, beside a second spec, `tape-message`, that asks
/// for interrupts by message rather than by signal.
fn installed_kernel(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tapec-jupyter-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("scratch")).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_tapec"))
        .args(["jupyter", "install", "--prefix"])
        .arg(&dir)
        .output()
        .expect("run tapec jupyter install");
    assert!(status.status.success(), "{status:?}");
    let kernels = dir.join("share/jupyter/kernels");
    let spec = std::fs::read_to_string(kernels.join("tape/kernel.json")).unwrap();
    std::fs::create_dir_all(kernels.join("tape-message")).unwrap();
    std::fs::write(
        kernels.join("tape-message/kernel.json"),
        spec.replace("\"signal\"", "\"message\""),
    )
    .unwrap();
    dir
}

/// Runs a Python script of `tests/jupyter` with the kernel installed in
/// `dir`, under a watchdog; panics with its output if it fails.
fn run_python(python: &Path, dir: &Path, args: &[&str], limit: Duration) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(python)
        .args(args)
        .current_dir(root.join("tests/jupyter"))
        .env("JUPYTER_PATH", dir.join("share/jupyter"))
        .env("JUPYTER_RUNTIME_DIR", dir.join("runtime"))
        .env("TAPE_SCRATCH", dir.join("scratch"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start Python");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("its output");
            panic!(
                "hang: {args:?} did not finish in {limit:?}:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = child.wait_with_output().expect("its output");
    assert!(
        status.success(),
        "{args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn jupyters_conformance_suite_passes() {
    let python = match python_with_jupyter() {
        Ok(python) => python,
        Err(why) => {
            clients::not_run(
                "jupyter_kernel_test on the Tape kernel",
                &why,
                "run .ci/run, or pip install jupyter_kernel_test jupyter_client nbclient nbformat pytest into bench/.venv",
            );
            return;
        }
    };
    let dir = installed_kernel("suite");
    run_python(
        &python,
        &dir,
        &[
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_kernel.py",
        ],
        Duration::from_secs(300),
    );
}

#[test]
fn the_shipped_notebooks_give_their_saved_outputs() {
    let python = match python_with_jupyter() {
        Ok(python) => python,
        Err(why) => {
            clients::not_run(
                "the shipped notebooks under nbclient",
                &why,
                "run .ci/run, or pip install jupyter_client nbclient nbformat into bench/.venv",
            );
            return;
        }
    };
    let dir = installed_kernel("notebooks");
    run_python(
        &python,
        &dir,
        &["check_notebooks.py"],
        Duration::from_secs(600),
    );
}

#[test]
fn an_expression_is_evaluated_without_changing_the_session() {
    let (mut cells, shown) = session();
    cells.execute("Ex := 6;");
    streams(&shown);
    assert_eq!(cells.evaluate("Ex * 7"), Ok("42".to_string()));
    assert_eq!(
        cells.evaluate("  [[1, 2]] * Ex  "),
        Ok("  row 1: 6.000000 12.000000".to_string())
    );
    for (text, why) in [
        ("Ex := 1", "is not an expression"),
        ("Ex * 2; Ex", "is not an expression"),
        (":vars", "is not an expression"),
        ("Ex * (", "is not an expression"),
        ("WriteLn(Ex)", "gives no value"),
        ("Nope + 1", "Nope"),
    ] {
        let failure = cells.evaluate(text).expect_err(text);
        assert!(failure.evalue.contains(why), "{text}: {}", failure.evalue);
    }
    // WriteLn ran: what it printed shows, as in a cell.
    assert_eq!(streams(&shown).0, "6\n");
    assert_eq!(
        cells.execute("Ex;"),
        Outcome::Done {
            result: Some("6".to_string())
        }
    );
}

/// A cell that fails is undone whole: an error in it says what is open
/// once it is undone. A tape the cell opened is not open any more; one
/// opened in an earlier cell still is, as the prompt says.
#[test]
fn a_failed_end_or_tape_says_what_is_open_once_the_cell_is_undone() {
    let (mut cells, shown) = session();
    cells.execute("w := [[1.0, 2.0]];");
    let failed = |outcome: Outcome| match outcome {
        Outcome::Failed(failure) => failure.traceback.join("\n"),
        other => panic!("the cell should fail: {other:?}"),
    };
    // The cell opened the tape, so no tape is open once it is undone.
    let text = failed(cells.execute("tape\n y := w * 2;\nend;"));
    assert!(text.contains("so no tape is open"), "{text}");
    assert!(!text.contains("still open"), "{text}");
    assert!(!text.contains(":drop"), "{text}");
    let text = failed(cells.execute("end;"));
    assert!(text.contains("closes no `begin` or `tape`"), "{text}");
    let text = failed(cells.execute("tape\n y := w * 3;\n tape"));
    assert!(text.contains("no tape is open now"), "{text}");
    assert!(!text.contains("still open at this prompt"), "{text}");
    assert!(
        matches!(cells.execute("y;"), Outcome::Failed(_)),
        "y is undone"
    );
    // A tape opened in an earlier cell stays open: the notes say so.
    cells.execute("tape");
    let text = failed(cells.execute(" y := w * 2;\nend;"));
    assert!(text.contains("the tape is still open (`tape>`)"), "{text}");
    let text = failed(cells.execute(" y := w * 2;\ntape"));
    assert!(
        text.contains("a tape is still open at this prompt"),
        "{text}"
    );
    // A cell that closes it and opens another: the first is open again.
    cells.execute(" s := Sum(w);");
    let text = failed(cells.execute("end;\ntape\n y := w * 2;\nend;"));
    assert!(
        text.contains("the tape open before the cell is open again"),
        "{text}"
    );
    streams(&shown);
    assert_eq!(cells.execute("end;"), Outcome::Done { result: None });
    assert!(streams(&shown).0.starts_with("tape closed: "));
}

/// `:graph` and `:walk` of a tape too large to draw are refused as errors,
/// as `:graph FILE.png` is, each with the way out its command has.
#[test]
fn a_tape_too_large_to_draw_is_refused_as_an_error_fitting_its_command() {
    let (mut cells, shown) = session();
    let outcome = cells.execute(
        "w := [[1.0, 2.0]];\ns := 0.0;\ntape\n for i := 1 to 600 do s := s + Sum(w);\nend;",
    );
    assert_eq!(outcome, Outcome::Done { result: None });
    streams(&shown);
    let Outcome::Failed(graph) = cells.execute(":graph") else {
        panic!("`:graph` should fail");
    };
    assert!(
        graph
            .evalue
            .starts_with("cannot draw the tape's picture: the tape has 1"),
        "{graph:?}"
    );
    assert!(
        graph
            .traceback
            .join("\n")
            .contains("`:graph tape.dot` writes it as .dot"),
        "{graph:?}"
    );
    let Outcome::Failed(walk) = cells.execute(":walk") else {
        panic!("`:walk` should fail");
    };
    assert!(
        walk.evalue
            .starts_with("cannot draw the walk's page: the tape has 1"),
        "{walk:?}"
    );
    let advice = walk.traceback.join("\n");
    assert!(!advice.contains(".dot"), "{advice}");
    assert!(advice.contains("`:tape`"), "{advice}");
    // Said once, as the error; nothing in the streams.
    assert_eq!(streams(&shown), (String::new(), String::new()));
    assert!(matches!(
        cells.execute(":graph too-large.png"),
        Outcome::Failed(_)
    ));
}

/// A tape within the record limit whose arrows from its first value pass
/// every row below it (497,503 passes in all) is refused too, at once,
/// for `:graph` and `:walk`, each with its way out.
#[test]
fn a_tape_whose_arrows_pass_too_many_rows_is_refused_by_graph_and_walk() {
    let (mut cells, shown) = session();
    let outcome = cells.execute(&format!(
        "x := 1.0;\ntape\n  s := x;\n{}end;",
        "  s := s * x + x;\n".repeat(499)
    ));
    assert_eq!(outcome, Outcome::Done { result: None });
    streams(&shown);
    let too_many = "its arrows would pass a row of boxes 497503 times on their way from a value \
                    to its use, and a picture is drawn with at most 50000";
    for (command, what, way_out) in [
        (":graph", "the tape's picture", "`:graph tape.dot`"),
        (":walk", "the walk's page", "`:tape`"),
    ] {
        let Outcome::Failed(failure) = cells.execute(command) else {
            panic!("`{command}` should fail");
        };
        assert_eq!(
            failure.evalue,
            format!("cannot draw {what}: {too_many}"),
            "{failure:?}"
        );
        let advice = failure.traceback.join("\n");
        assert!(advice.contains(way_out), "{advice}");
    }
    assert_eq!(streams(&shown), (String::new(), String::new()));
}
