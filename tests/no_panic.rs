//! No input crashes the interpreter. Random bytes, random soups of tokens
//! and mutations of the course programs go through the whole pipeline
//! (decode, lex, parse, check, run with a step budget and a small size cap);
//! every run must end with status 0, or with status 1 and a diagnostic.
//! A panic anywhere fails the test with the smallest input proptest finds,
//! and so does a case that runs for seconds (a hang: each takes
//! milliseconds). Besides those, soups of unbalanced and mismatched
//! brackets and blocks, and deep runs of openers, check that no shape of
//! broken input makes the parser's work grow faster than the input.
//! Failures are kept beside this file and replayed first.

use std::path::PathBuf;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

mod watchdog;
use watchdog::within_watchdog;

const BUDGET: u64 = 5_000;
const MAX_ELEMENTS: usize = 1 << 16;

/// A scratch folder holding the bundled text, so `ReadText` works and any
/// file a program writes lands there.
fn folder() -> PathBuf {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER
        .get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("tapec-no-panic-{}", std::process::id()));
            std::fs::create_dir_all(dir.join("data")).expect("scratch folder");
            std::fs::copy("programs/data/tiny.txt", dir.join("data/tiny.txt")).expect("copy text");
            dir
        })
        .clone()
}

fn ends_cleanly(bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let shown = String::from_utf8_lossy(&bytes).into_owned();
    let what = format!("the run of {shown:?}");
    let (_, err, code) = within_watchdog(&what, move || {
        tapec::run_untrusted(bytes, folder(), BUDGET, MAX_ELEMENTS)
    });
    prop_assert!(code == 0 || code == 1, "status {code} for {shown:?}");
    if code == 1 {
        prop_assert!(
            err.contains("Error"),
            "status 1 without a diagnostic for {shown:?}: {err}"
        );
    }
    Ok(())
}

/// `tapec export` of the bytes ends with a script or with a diagnostic,
/// never a panic (nor a stack overflow, which would abort the test run).
fn exports_cleanly(bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let shown = String::from_utf8_lossy(&bytes).into_owned();
    let what = format!("the export of {shown:?}");
    let exported = within_watchdog(&what, move || tapec::export_untrusted(bytes));
    if let Err(err) = exported {
        prop_assert!(
            err.contains("Error"),
            "export refused without a diagnostic for {shown:?}: {err}"
        );
    }
    Ok(())
}

fn course_programs() -> &'static Vec<String> {
    static PROGRAMS: OnceLock<Vec<String>> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let mut texts = Vec::new();
        for dir in ["programs", "tests/run", "tests/errors", "bench"] {
            for entry in std::fs::read_dir(dir).expect("list programs") {
                let path = entry.expect("entry").path();
                if path.extension().is_some_and(|x| x == "tape")
                    && let Ok(text) = std::fs::read_to_string(&path)
                {
                    texts.push(text);
                }
            }
        }
        texts.sort();
        texts
    })
}

const TOKENS: &[&str] = &[
    "program",
    "begin",
    "end",
    "end.",
    "tape",
    "if",
    "then",
    "else",
    "for",
    "to",
    "downto",
    "do",
    "while",
    "repeat",
    "until",
    "procedure",
    "function",
    "var",
    "and",
    "or",
    "not",
    "div",
    "mod",
    "true",
    "false",
    ":=",
    "+",
    "-",
    "*",
    "/",
    "=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "(",
    ")",
    "[",
    "]",
    ",",
    ";",
    ":",
    ".",
    "..",
    "1..",
    "..3",
    "x",
    "y",
    "m",
    "s",
    "Result",
    "Inf",
    "0",
    "1",
    "2",
    "3",
    "0.5",
    "1e300",
    "-1",
    "9223372036854775807",
    "'a'",
    "''",
    "'data/tiny.txt'",
    "{ c }",
    "(* c *)",
    "// c\n",
    "Sum",
    "Transpose",
    "RowSoftmax",
    "Embed",
    "CrossEntropy",
    "Zeros",
    "Ones",
    "Randn",
    "Blame",
    "Nudge",
    "CheckBlame",
    "WriteLn",
    "Show",
    "Row",
    "HStack",
    "LayerNorm",
    "Log",
    "Sqrt",
    "Exp",
    "Tanh",
    "CausalMask",
    "Sample",
    "Encode",
    "Vocab",
    "ReadText",
    "StrToInt",
    "ParamStr",
    "[[1, 2], [3, 4]]",
    "[1, 2]",
    "x := [[1, 2]];",
    "tape s := Sum(x); end;",
    "\n",
];

fn token_soup() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..60)
        .prop_map(|ts| ts.join(" ").into_bytes())
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize, usize),
    Duplicate(usize, usize),
    Replace(usize, u8),
    Insert(usize, &'static str),
}

fn mutate(text: &str, mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for m in mutations {
        let len = bytes.len().max(1);
        match *m {
            Mutation::Delete(at, n) => {
                let at = at % len;
                let end = (at + n % 40).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            Mutation::Duplicate(at, n) => {
                let at = at % len;
                let end = (at + n % 80).min(bytes.len());
                let piece: Vec<u8> = bytes[at.min(end)..end].to_vec();
                bytes.splice(end..end, piece);
            }
            Mutation::Replace(at, b) => {
                if !bytes.is_empty() {
                    let at = at % bytes.len();
                    bytes[at] = b;
                }
            }
            Mutation::Insert(at, token) => {
                let at = (at % len).min(bytes.len());
                bytes.splice(at..at, token.bytes());
            }
        }
    }
    bytes
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, n)| Mutation::Duplicate(a, n)),
        (
            any::<usize>(),
            prop::sample::select(b"0123456789()[];:=.,'{}-+*/ \nabcxyz\xff".to_vec())
        )
            .prop_map(|(a, b)| Mutation::Replace(a, b)),
        (any::<usize>(), prop::sample::select(TOKENS)).prop_map(|(a, t)| Mutation::Insert(a, t)),
    ]
}

/// What opens or closes something the parser must match, or leaves it
/// hanging: brackets of every kind, calls, indices, field specifiers,
/// blocks, routine headers and prefix operators.
const OPENERS_AND_CLOSERS: &[&str] = &[
    "[",
    "[",
    "]",
    "(",
    "(",
    ")",
    "f(",
    "x[",
    "x[1,",
    "Sum(",
    "WriteLn(x:",
    ":",
    ",",
    "1",
    "x",
    "begin",
    "end",
    "tape",
    "repeat",
    "until",
    "if x then",
    "else",
    "while x do",
    "for i := 1 to 2 do",
    "procedure P(",
    "function F(a:",
    "var",
    ";",
    "-",
    "not",
    ":=",
    "`",
    "{",
    "}",
    "'",
];

fn bracket_soup() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(OPENERS_AND_CLOSERS), 0..400)
        .prop_map(|ts| format!("x := {};\nWriteLn(x);\n", ts.join(" ")).into_bytes())
}

/// One opener many times over (up to past the nesting limit), then a tail
/// that closes some of them, maybe with the wrong closer.
fn deep_prefix() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(OPENERS_AND_CLOSERS),
        0..300usize,
        prop::sample::select(OPENERS_AND_CLOSERS),
        0..300usize,
        prop::collection::vec(prop::sample::select(OPENERS_AND_CLOSERS), 0..8),
    )
        .prop_map(|(opener, n, closer, m, tail)| {
            format!(
                "x := {}{}{};\n",
                opener.repeat(n),
                closer.repeat(m),
                tail.join(" ")
            )
            .into_bytes()
        })
}

proptest! {
    // Failures are kept in `tests/no_panic.proptest-regressions` and replayed first.
    #![proptest_config(ProptestConfig {
        cases: 300,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_bytes_end_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        ends_cleanly(bytes)?;
    }

    #[test]
    fn token_soups_end_cleanly(bytes in token_soup()) {
        ends_cleanly(bytes)?;
    }

    #[test]
    fn mutated_programs_end_cleanly(
        which in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let programs = course_programs();
        let text = &programs[which.index(programs.len())];
        ends_cleanly(mutate(text, &mutations))?;
    }

    #[test]
    fn token_soups_export_cleanly(bytes in token_soup()) {
        exports_cleanly(bytes)?;
    }

    #[test]
    fn mutated_programs_export_cleanly(
        which in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let programs = course_programs();
        let text = &programs[which.index(programs.len())];
        exports_cleanly(mutate(text, &mutations))?;
    }

    #[test]
    fn deep_prefixes_export_cleanly(bytes in deep_prefix()) {
        exports_cleanly(bytes)?;
    }

    #[test]
    fn bracket_soups_end_cleanly(bytes in bracket_soup()) {
        ends_cleanly(bytes)?;
    }

    #[test]
    fn deep_prefixes_end_cleanly(bytes in deep_prefix()) {
        ends_cleanly(bytes)?;
    }
}
