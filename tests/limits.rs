//! Limits end with a diagnostic and status 1, never a crash: source nested
//! 100,000 deep, a 200,000-term expression and 100,000-branch else-if
//! chains (which must run, whether or not their branches are `if`s with
//! an `else`), endless
//! recursion, a matrix too large to allocate, a string grown past
//! 256 MiB, and a tape that records without end or holds too much; and a
//! tape that reads every element of a large matrix, which must not be slow.

fn run(text: String) -> (String, String, i32) {
    run_with(text, None, None)
}

/// Runs with the language's limits, or with a tape limited to `max_records`
/// records or `max_tape_bytes` bytes of values.
fn run_with(
    text: String,
    max_records: Option<usize>,
    max_tape_bytes: Option<usize>,
) -> (String, String, i32) {
    let dir = std::env::temp_dir().join(format!("tapec-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let mut opts = tapec::RunOptions::new(dir.join("limit.tape"));
    opts.step_budget = None;
    opts.max_records = max_records;
    opts.max_tape_bytes = max_tape_bytes;
    tapec::with_big_stack(move || {
        let out = tapec::SharedBuffer::default();
        let mut err = Vec::new();
        let code = tapec::run_bytes(&opts, text.into_bytes(), Box::new(out.clone()), &mut err);
        (out.text(), String::from_utf8_lossy(&err).into_owned(), code)
    })
}

fn fails_with(text: String, words: &str) {
    let (_, err, code) = run(text);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(words), "expected {words:?} in:\n{err}");
}

const DEEP: usize = 100_000;

#[test]
fn deep_parentheses_brackets_blocks_and_prefixes() {
    let nested = "nested more than 256 levels";
    fails_with(
        format!("x := {}1{};", "(".repeat(DEEP), ")".repeat(DEEP)),
        nested,
    );
    fails_with(
        format!("x := {}1{};", "[".repeat(DEEP), "]".repeat(DEEP)),
        nested,
    );
    fails_with(
        format!("{} x := 1; {}", "begin ".repeat(DEEP), "end; ".repeat(DEEP)),
        nested,
    );
    fails_with(format!("x := {}1;", "-".repeat(DEEP)), nested);
    fails_with(format!("x := {}true;", "not ".repeat(DEEP)), nested);
    fails_with(format!("{} x := 1;", "if true then ".repeat(DEEP)), nested);
    fails_with(
        format!("x := {}1{};", "Abs(".repeat(DEEP), ")".repeat(DEEP)),
        nested,
    );
    // Unbalanced, too: only openers.
    fails_with("(".repeat(DEEP), nested);
}

/// Programs nested as deep as the limit allows, in each form.
fn deepest_allowed() -> Vec<(String, &'static str)> {
    let n = 250;
    vec![
        (
            format!("x := {}1{};\nWriteLn(x);", "(".repeat(n), ")".repeat(n)),
            "1\n",
        ),
        (
            format!("x := {}1{};\nWriteLn(x);", "Abs(".repeat(n), ")".repeat(n)),
            "1\n",
        ),
        (format!("x := {}1;\nWriteLn(x);", "- ".repeat(n)), "1\n"),
        (
            format!("x := {}true;\nWriteLn(x);", "not ".repeat(n)),
            "true\n",
        ),
        (
            format!("{} WriteLn(1); {}", "begin ".repeat(n), "end; ".repeat(n)),
            "1\n",
        ),
        (format!("{} WriteLn(1);", "if true then ".repeat(n)), "1\n"),
        (format!("{} WriteLn(1);", "while false do ".repeat(n)), ""),
    ]
}

#[test]
fn the_deepest_nesting_allowed_runs_in_every_form() {
    for (text, printed) in deepest_allowed() {
        let (out, err, code) = run(text.clone());
        assert_eq!((code, out.as_str()), (0, printed), "{err}\n{}", &text[..60]);
    }
}

#[test]
fn the_parser_needs_no_more_than_a_default_threads_stack() {
    // Programs run on a thread with a big stack, but a library caller (an
    // editor's language server) may parse on a thread of the default 2 MiB.
    // chumsky's stack growing (stacker) keeps that safe: without it, these
    // programs overflow 2 MiB (they fit in 4 MiB).
    let parsed = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            deepest_allowed()
                .iter()
                .map(|(text, _)| tapec::syntax::parse(text, 0).1.len())
                .collect::<Vec<_>>()
        })
        .expect("thread")
        .join()
        .expect("the parse fits the stack");
    assert!(parsed.iter().all(|&errors| errors == 0), "{parsed:?}");
}

#[test]
fn a_200000_term_expression_runs_on_and_off_the_tape() {
    let terms = 200_000;
    let sum = format!("x := 1{};\nWriteLn(x);\n", " + 1".repeat(terms - 1));
    let (out, err, code) = run(sum);
    assert_eq!((code, out.as_str()), (0, "200000\n"), "{err}");

    let taped = format!(
        "a := 0.5;\ntape\n  s := a{};\nend;\nWriteLn(Blame(a));\n",
        " + a".repeat(terms - 1)
    );
    let (out, err, code) = run(taped);
    assert_eq!((code, out.as_str()), (0, "200000.000000\n"), "{err}");
}

#[test]
fn an_else_if_chain_of_100000_branches_runs() {
    // An `if` in the `else` of an `if` continues the chain: no nesting.
    let branches = 100_000;
    let mut text = String::from("x := 99998;\nif x = 0 then WriteLn(0)\n");
    for k in 1..branches {
        text.push_str(&format!("else if x = {k} then WriteLn({k})\n"));
    }
    text.push_str("else WriteLn('none');\n");
    let (out, err, code) = run(text);
    assert_eq!((code, out.as_str()), (0, "99998\n"), "{err}");
    // Nesting in a branch still counts.
    let deep = format!(
        "if true then WriteLn(1) else if true then {} x := 1;",
        "if true then ".repeat(300)
    );
    fails_with(deep, "nested more than 256 levels");
}

#[test]
fn an_else_if_chain_whose_branches_are_if_else_runs() {
    // Each branch's own `if ... else` is done before the chain's next
    // `else`: the chain is as shallow as when its branches are plain.
    let branches = 100_000;
    let mut text = String::from("x := 99998; y := false;\n");
    for k in 0..branches {
        let chain = if k == 0 { "if" } else { "else if" };
        text.push_str(&format!(
            "{chain} x = {k} then if y then WriteLn({k}) else WriteLn(-{k})\n"
        ));
    }
    text.push_str("else WriteLn('none');\n");
    let (out, err, code) = run(text);
    assert_eq!((code, out.as_str()), (0, "-99998\n"), "{err}");
    // An `else` answers the nearest `then`: the `if`s above it still hang.
    let deep = format!("{} x := 1 else x := 2;", "if true then ".repeat(300));
    fails_with(deep, "nested more than 256 levels");
    let deep = format!(
        "{} x := 1;",
        "if true then x := 1 else while false do ".repeat(300)
    );
    fails_with(deep, "nested more than 256 levels");
}

#[test]
fn endless_recursion_stops_at_the_depth_limit() {
    fails_with(
        "function F(n: Integer): Integer;\nbegin\n  Result := F(n + 1)\nend;\nWriteLn(F(0));\n"
            .to_string(),
        "calls are nested more than 1000 deep",
    );
    fails_with(
        "procedure P;\nbegin\n  P\nend;\nP;\n".to_string(),
        "calls are nested more than 1000 deep",
    );
}

#[test]
fn an_oversized_matrix_is_refused_before_allocation() {
    fails_with("m := Zeros(1000000, 1000000);".to_string(), "is too large");
    fails_with(
        "m := Randn(9223372036854775807, 9223372036854775807);".to_string(),
        "is too large",
    );
    fails_with(
        "m := Ones(65536, 1) * Ones(1, 65536);".to_string(),
        "is too large",
    );
    fails_with(
        "m := Embed(Zeros(2, 20000), Ones(1, 20000));".to_string(),
        "is too large",
    );
}

/// A string doubled in a loop stops at 2^28 bytes rather than take all the
/// memory; a file that never ends is refused after 2^28 bytes as well; and
/// a string of exactly 2^28 bytes is allowed.
#[test]
fn a_string_past_256_mib_is_refused() {
    let (out, err, code) = run(
        "s := 'a';\nfor i := 1 to 28 do s := s + s;\nWriteLn(Length(s));\ns := s + 'b';"
            .to_string(),
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "268435456\n");
    assert!(
        err.contains("a string of 268435457 bytes is too long"),
        "{err}"
    );
    if std::path::Path::new("/dev/zero").exists() {
        fails_with(
            "s := ReadText('/dev/zero');".to_string(),
            "is too large to read: it holds more than 268435456 bytes",
        );
    }
}

/// A loop inside a tape that would record without end stops at the tape's
/// limit (lowered here to 1,000 records so the test is quick), naming the
/// statement that passed it; a tape of exactly that many records runs.
#[test]
fn a_tape_past_its_record_limit_is_refused() {
    // Each turn records a leaf for 1.0 and a product: 2 records.
    let program = |turns: usize| {
        format!(
            "x := 1.0;\ntape\n  for i := 1 to {turns} do x := x * 1.0;\n  y := x;\nend;\nWriteLn(Blame(y));"
        )
    };
    let (out, err, code) = run_with(program(499), Some(1000), None);
    assert_eq!((out.as_str(), code), ("1.000000\n", 0), "{err}");
    let (out, err, code) = run_with(program(100_000_000), Some(1000), None);
    assert_eq!((out.as_str(), code), ("", 1));
    assert!(
        err.starts_with("Error: the tape holds more than 1000 records"),
        "{err}"
    );
    assert!(
        err.contains("3 │   for i := 1 to 100000000 do x := x * 1.0;"),
        "{err}"
    );
}

/// A loop inside a tape over a large matrix stops once the values the tape
/// holds pass its limit (lowered here to 1 MB: the 100×100 leaf and eleven
/// `Tanh`s of it, whose rule reads its output, are 960,000 bytes; a twelfth
/// passes it). Values that no rule reads are let go and do not count: the
/// sums in a long loop of `s := Sum(x + x)` are, and it runs.
#[test]
fn a_tape_past_its_byte_limit_is_refused() {
    let program = |turns: usize, statement: &str| {
        format!(
            "x := Ones(100, 100);\ns := 0.0;\ntape\n  for i := 1 to {turns} do {statement};\n  y := Sum(x) + s;\nend;\nWriteLn(y:0:1);"
        )
    };
    let tanh = "x := Tanh(x)";
    let (out, err, code) = run_with(program(11, tanh), None, Some(1_000_000));
    assert_eq!((out.as_str(), code), ("3419.1\n", 0), "{err}");
    let (out, err, code) = run_with(program(12, tanh), None, Some(1_000_000));
    assert_eq!((out.as_str(), code), ("", 1));
    assert!(
        err.starts_with("Error: the tape holds more than 1000000 bytes of values"),
        "{err}"
    );
    let sums = "s := Sum(x + x)";
    let (out, err, code) = run_with(program(1000, sums), None, Some(1_000_000));
    assert_eq!((out.as_str(), code), ("30000.0\n", 0), "{err}");
}

/// Reading every element of a 400×400 matrix inside a tape hands the walk
/// 160,000 shares of one element each. Each was once a 400×400 matrix of
/// zeros added into the blame, minutes of work; added in place, the loop
/// takes about a second. The watchdog only catches that old hang.
#[test]
fn reading_every_element_inside_a_tape_is_not_quadratic() {
    let program = "m := Fill(400, 400, 1.5);\ntape\n  s := 0.0;\n  \
        for i := 1 to 400 do for j := 1 to 400 do s := s + m[i, j] * m[i, j];\nend;\n\
        b := Blame(m);\nWriteLn(s, ' ', Sum(b), ' ', b[400, 400]);\n"
        .to_string();
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(run(program));
    });
    let (out, err, code) = result
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the loop finished within a minute");
    assert_eq!(
        (code, out.as_str()),
        (0, "360000.000000 480000.000000 3.000000\n"),
        "{err}"
    );
}
