//! Every builtin, called with the wrong number of arguments or with
//! arguments of the wrong kind, fails with a diagnostic that names it.

use tapec::declarations::{BUILTINS, Builtin, Kind, ParamKind};

/// The diagnostic's message and hints (not the quoted source), and the status.
fn run(text: String) -> (String, i32) {
    let dir = std::env::temp_dir().join(format!("tapec-builtins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let (_, err, code) = tapec::run_untrusted(text.into_bytes(), dir, 10_000, 1 << 16);
    let words: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("Error") || l.contains("Help"))
        .collect();
    (words.join("\n"), code)
}

fn call(name: &str, kind: Kind, args: &[&str]) -> String {
    let call = format!("{name}({})", args.join(", "));
    match kind {
        Kind::Function => format!("v := 1.5;\nx := {call};\n"),
        Kind::Procedure => format!("v := 1.5;\n{call};\n"),
    }
}

#[test]
fn a_wrong_number_of_arguments_names_the_builtin_and_what_it_takes() {
    for b in BUILTINS.iter().filter(|b| b.max_args() != usize::MAX) {
        let args = vec!["1"; b.max_args() + 1];
        let (err, code) = run(call(b.name, b.kind, &args));
        assert_eq!(code, 1, "{}: {err}", b.name);
        assert!(
            err.contains(&format!("`{}` takes", b.name)),
            "{}: {err}",
            b.name
        );
        assert!(
            err.contains(b.takes),
            "{} should say it takes {:?}: {err}",
            b.name,
            b.takes
        );
    }
}

#[test]
fn a_wrong_kind_of_argument_names_the_builtin() {
    // Not those whose first argument is a string, or a variable's name
    // rather than a value, as their declarations say.
    let takes_text = |b: &&Builtin| {
        b.params.first().is_some_and(|p| {
            matches!(
                p.kind,
                ParamKind::Text | ParamKind::Variable | ParamKind::Values
            )
        })
    };
    let mut checked = 0;
    for b in BUILTINS
        .iter()
        .filter(|b| b.min_args() > 0 && !takes_text(b))
    {
        checked += 1;
        let args = vec!["'text'"; b.min_args()];
        let (err, code) = run(call(b.name, b.kind, &args));
        assert_eq!(code, 1, "{}: {err}", b.name);
        assert!(
            err.contains(b.name),
            "the message should name {}: {err}",
            b.name
        );
    }
    assert!(checked >= 40, "only {checked} builtins checked");
}

/// The first line of what a program's run says on stderr: its first error.
fn first_error(text: String) -> String {
    let dir = std::env::temp_dir().join(format!("tapec-builtins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let (_, err, _) = tapec::run_untrusted(text.into_bytes(), dir, 10_000, 1 << 16);
    err.lines()
        .find(|l| l.starts_with("Error"))
        .unwrap_or("")
        .to_string()
}

/// An argument written as a literal of a kind the builtin refuses is found
/// by the checks, before anything runs, in the words the call gives when
/// it runs with that value in a variable; and the checks refuse no literal
/// the call would take: for every builtin, every argument and a literal of
/// each kind, the other arguments their samples.
#[test]
fn a_literal_of_a_refused_kind_is_the_error_the_call_gives_when_it_runs() {
    let literals = ["1", "-2.5", "'text'", "true"];
    let mut refused_before_running = 0;
    for b in BUILTINS {
        for (position, param) in b.params.iter().enumerate() {
            if matches!(param.kind, ParamKind::Variable | ParamKind::Values) {
                continue;
            }
            for literal in literals {
                let args = |at: &str| -> Vec<String> {
                    b.params
                        .iter()
                        .enumerate()
                        .map(|(i, p)| {
                            if i == position {
                                at.to_string()
                            } else {
                                p.sample.to_string()
                            }
                        })
                        .collect()
                };
                let written = args(literal);
                let written: Vec<&str> = written.iter().map(String::as_str).collect();
                let held = args("held");
                let held: Vec<&str> = held.iter().map(String::as_str).collect();
                let checked = first_error(call(b.name, b.kind, &written));
                let ran = first_error(format!(
                    "held := {literal};\n{}",
                    call(b.name, b.kind, &held)
                ));
                assert_eq!(checked, ran, "{}({})", b.name, written.join(", "));
                let (program, errors) = tapec::syntax::parse(&call(b.name, b.kind, &written), 0);
                assert!(errors.is_empty());
                let found = tapec::check::check_program(&program, &Default::default(), false);
                if !found.errors.is_empty() {
                    refused_before_running += 1;
                    assert!(!ran.is_empty(), "{}({})", b.name, written.join(", "));
                }
            }
        }
    }
    assert!(
        refused_before_running >= 100,
        "only {refused_before_running} literals refused by the checks"
    );
}
