//! Tests that go over every declared builtin, so a new one is checked
//! without being named here: each recorded builtin, called on its
//! declaration's sample arguments inside a tape, has its blame for every
//! argument that is not a selector checked by `CheckBlame` (central finite
//! differences through the whole interpreter), and, with an infinity in an
//! argument, it prints no NaN; and `docs/BUILTINS.md` is what the
//! declarations say.

use tapec::declarations::{BUILTINS, Builtin, reference};

fn run(text: &str) -> (String, String, i32) {
    let dir = std::env::temp_dir().join(format!("tapec-declared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    tapec::run_untrusted(text.as_bytes().to_vec(), dir, 1_000_000, 1 << 20)
}

/// `p1 := sample; p2 := sample; ...` and the call on them.
fn arguments(b: &Builtin, samples: &[String]) -> (String, String) {
    let mut setup = String::from("Seed(7);\n");
    let mut names = Vec::new();
    for (i, sample) in samples.iter().enumerate() {
        setup.push_str(&format!("p{i} := {sample};\n"));
        names.push(format!("p{i}"));
    }
    (setup, format!("{}({})", b.name, names.join(", ")))
}

fn samples(b: &Builtin) -> Vec<String> {
    b.params.iter().map(|p| p.sample.to_string()).collect()
}

/// Whether the builtin gives a matrix on its samples (else a number).
fn gives_a_matrix(b: &Builtin) -> bool {
    let (setup, call) = arguments(b, &samples(b));
    let (_, err, code) = run(&format!("{setup}y := {call};\nn := Rows(y);\n"));
    let (_, number_err, number_code) = run(&format!("{setup}y := {call};\nn := y + 1;\n"));
    assert!(
        code == 0 || number_code == 0,
        "{} fails on its samples:\n{err}\n{number_err}",
        b.name
    );
    code == 0
}

fn recorded() -> impl Iterator<Item = &'static Builtin> {
    BUILTINS.iter().filter(|b| b.recorded)
}

#[test]
fn every_recorded_builtin_passes_check_blame_for_each_argument() {
    let mut checked = 0;
    for b in recorded() {
        let (setup, call) = arguments(b, &samples(b));
        // Random weights make every element of the output matter.
        let loss = if gives_a_matrix(b) {
            "w := Randn(Rows(y), Cols(y));\n  s := Sum(Hadamard(y, w));"
        } else {
            "s := y * 1.7;"
        };
        let mut program = format!("{setup}tape\n  y := {call};\n  {loss}\nend;\n");
        let blamed: Vec<usize> = (0..b.params.len())
            .filter(|&i| b.params[i].kind.is_blamed())
            .collect();
        assert!(!blamed.is_empty(), "{} has nothing to blame", b.name);
        for i in &blamed {
            program.push_str(&format!("WriteLn(CheckBlame(p{i}) < 1e-5);\n"));
        }
        let (out, err, code) = run(&program);
        assert_eq!(code, 0, "{}:\n{program}\n{err}", b.name);
        assert_eq!(
            out,
            "true\n".repeat(blamed.len()),
            "{}: a blame differs from finite differences:\n{program}",
            b.name
        );
        checked += blamed.len();
    }
    assert!(checked >= 25, "only {checked} arguments checked");
}

/// The sample with its first number replaced by `by`.
fn with_first_number(sample: &str, by: &str) -> Option<String> {
    let start = sample.find(|c: char| c.is_ascii_digit())?;
    let end = sample[start..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(sample.len(), |e| start + e);
    Some(format!("{}{by}{}", &sample[..start], &sample[end..]))
}

#[test]
fn no_recorded_builtin_lets_a_nan_out_of_an_infinite_argument() {
    let mut runs = 0;
    for b in recorded() {
        for (i, p) in b.params.iter().enumerate() {
            if !p.kind.is_blamed() {
                continue;
            }
            for infinity in ["(1e308 * 10)", "(-1e308 * 10)"] {
                let mut args = samples(b);
                let Some(changed) = with_first_number(&args[i], infinity) else {
                    continue;
                };
                args[i] = changed;
                let (setup, call) = arguments(b, &args);
                let program = format!(
                    "{setup}tape\n  y := {call};\n  s := Sum(Hadamard(y, y + 1));\nend;\n\
                     WriteLn(y);\nWriteLn(Blame(p{i}));\n"
                );
                let (out, err, code) = run(&program);
                assert!(
                    !out.to_lowercase().contains("nan"),
                    "{}: a NaN escaped:\n{program}\n{out}",
                    b.name
                );
                assert!(
                    code == 0 || err.contains("Error"),
                    "{}: status {code} without a diagnostic:\n{err}",
                    b.name
                );
                runs += 1;
            }
        }
    }
    assert!(runs >= 40, "only {runs} runs");
}

#[test]
fn the_builtins_reference_is_generated_from_the_declarations() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/BUILTINS.md");
    let generated = reference();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &generated).expect("write docs/BUILTINS.md");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == generated,
        "docs/BUILTINS.md is not what the declarations say: \
         run `UPDATE_GOLDEN=1 cargo test --test declared`"
    );
    for b in BUILTINS {
        assert!(
            current.contains(&format!("| `{}", b.signature())),
            "{}",
            b.name
        );
    }
}

#[test]
fn help_prints_each_builtins_signature_doc_and_example_and_each_keywords_help() {
    for b in BUILTINS {
        let out = tapec::repl::transcript(&format!(":help {}", b.name));
        assert!(out.contains(&b.signature()), "{}: {out}", b.name);
        assert!(out.contains(b.doc), "{}: {out}", b.name);
        assert!(out.contains(b.example), "{}: {out}", b.name);
    }
    let err = tapec::repl::transcript(":help Tahn");
    assert!(
        err.contains("no builtin, keyword, operator or routine called `Tahn`")
            && err.contains("did you mean `Tanh`?"),
        "{err}"
    );
    for (word, _, help) in tapec::syntax::lexer::KEYWORDS {
        let out = tapec::repl::transcript(&format!(":help {}", word.to_uppercase()));
        assert_eq!(out, format!("{word} (a word of the language): {help}\n"));
    }
    // Every mark of the language's punctuation, `:` too, which does not
    // start a command here.
    for mark in ["(", ")", "[", "]", ",", ";", ":", "."] {
        let out = tapec::repl::transcript(&format!(":help {mark}"));
        assert!(
            out.starts_with(&format!("{mark} (punctuation): ")),
            "{mark}: {out}"
        );
    }
    // The prompt's way out, asked for as a word.
    for word in ["quit", "exit"] {
        let err = tapec::repl::transcript(&format!(":help {word}"));
        assert!(err.contains("ends with `:quit`"), "{word}: {err}");
    }
}

/// A builtin's argument written as a literal of a kind it refuses is found
/// before anything runs: a row number written as a Real, a row of ids or
/// targets written as a number.
#[test]
fn selectors_written_as_literals_of_a_refused_kind_are_found_before_running() {
    for call in [
        "x := Row([[1]], 1.0);",
        "x := Col([[1]], 1.0);",
        "x := RowRange([[1]], 1, 1.0);",
        "x := Embed([[1]], 1);",
        "x := Embed([[1]], 1.5);",
        "x := CrossEntropy([[1]], 1);",
    ] {
        let (program, errors) = tapec::syntax::parse(call, 0);
        assert!(errors.is_empty(), "{call}");
        let found = tapec::check::check_program(&program, &Default::default(), false);
        assert_eq!(found.errors.len(), 1, "{call}");
        assert!(found.errors[0].message.contains("argument"), "{call}");
    }
}
