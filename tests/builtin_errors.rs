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
