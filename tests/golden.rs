//! Golden files: each `programs/*.tape` and `tests/run/*.tape` must print
//! exactly its `.out` and succeed, writing to stderr exactly its `.err` (its
//! warnings) or, without one, nothing; each `tests/errors/*.tape` must fail with
//! exactly the diagnostic in its `.err` (no colour). A `.args` file beside a
//! program holds its command-line arguments, one per line.
//!
//! `UPDATE_GOLDEN=1 cargo test --test golden` rewrites the expected files
//! from what the programs do now; review the diff like code.

use std::fs;
use std::path::{Path, PathBuf};

fn programs_in(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {dir}: {e}"))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "tape"))
        .collect();
    files.sort();
    files
}

fn args_for(program: &Path) -> Vec<String> {
    fs::read_to_string(program.with_extension("args"))
        .map(|text| text.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some()
}

/// Compares `actual` with the file `expected`, or rewrites it when updating.
fn compare(expected: &Path, actual: &str, failures: &mut Vec<String>) {
    if updating() {
        fs::write(expected, actual).expect("write golden file");
        return;
    }
    let wanted = fs::read_to_string(expected)
        .unwrap_or_else(|_| format!("<missing {}>", expected.display()));
    if wanted != actual {
        failures.push(format!(
            "{} differs:\n--- expected\n{wanted}\n--- actual\n{actual}",
            expected.display()
        ));
    }
}

fn run_dir(dir: &str, expect_success: bool) {
    let mut failures = Vec::new();
    let programs = programs_in(dir);
    assert!(!programs.is_empty(), "no programs in {dir}");
    for program in &programs {
        let (out, err, code) = tapec::run_captured(program, &args_for(program), None);
        if expect_success {
            if code != 0 {
                failures.push(format!(
                    "{} failed with status {code}:\n{err}",
                    program.display()
                ));
                continue;
            }
            compare(&program.with_extension("out"), &out, &mut failures);
            // What a successful run writes to stderr (its warnings) is in
            // its `.err`; without one, it must write nothing there.
            let warnings = program.with_extension("err");
            if warnings.exists() || !err.is_empty() {
                compare(&warnings, &err, &mut failures);
            }
        } else {
            if code != 1 {
                failures.push(format!(
                    "{} should fail with status 1 but gave {code}",
                    program.display()
                ));
                continue;
            }
            compare(&program.with_extension("err"), &err, &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} golden files differ:\n\n{}",
        failures.len(),
        programs.len(),
        failures.join("\n\n")
    );
}

#[test]
fn course_programs_print_their_golden_output() {
    run_dir("programs", true);
}

#[test]
fn language_programs_print_their_golden_output() {
    run_dir("tests/run", true);
}

/// A run of a program that never names `CheckBlame` takes two shortcuts:
/// `Nudge` may write a matrix where the tape's leaf shares it, and the walk
/// lets go of operations no variable holds. Naming `CheckBlame`, even in a
/// comment, turns both off; every program must print the same either way.
#[test]
fn programs_print_the_same_when_the_tape_keeps_everything() {
    let mut failures = Vec::new();
    let mut programs = programs_in("programs");
    programs.extend(programs_in("tests/run"));
    for program in programs {
        let source = fs::read_to_string(&program).expect("read program");
        let args = args_for(&program);
        let (plain, _, code) = tapec::run_captured(&program, &args, None);
        assert_eq!(code, 0, "{} failed", program.display());
        let path = program.clone();
        let kept = tapec::with_big_stack(move || {
            let mut opts = tapec::RunOptions::new(&path);
            opts.args = args;
            let out = tapec::SharedBuffer::default();
            let bytes = format!("{source}\n{{ CheckBlame }}\n").into_bytes();
            let code = tapec::run_bytes(&opts, bytes, Box::new(out.clone()), &mut Vec::new());
            assert_eq!(code, 0, "{} failed with CheckBlame named", path.display());
            out.text()
        });
        if kept != plain {
            failures.push(format!(
                "{}:\n--- shortcuts on\n{plain}\n--- shortcuts off\n{kept}",
                program.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn wrong_programs_fail_with_their_golden_diagnostic() {
    run_dir("tests/errors", false);
}

/// A program file that cannot be read has nothing to show around the
/// error: one plain line, and exit status 1.
#[test]
fn a_program_that_cannot_be_read_is_one_plain_line() {
    for (path, reason) in [
        ("tests/errors/no-such-program.tape", "no such file"),
        ("tests/errors", "it is a folder, not a file"),
    ] {
        let (out, err, code) = tapec::run_captured(Path::new(path), &[], None);
        assert_eq!((out.as_str(), code), ("", 1));
        assert_eq!(err, format!("Error: cannot read `{path}`: {reason}\n"));
    }
}

#[test]
fn repl_transcripts_print_their_golden_output() {
    let mut failures = Vec::new();
    let mut inputs: Vec<PathBuf> = fs::read_dir("tests/repl")
        .expect("tests/repl")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "in"))
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty());
    for input in &inputs {
        let text = fs::read_to_string(input).expect("read transcript");
        let actual = tapec::with_big_stack(move || tapec::repl::transcript(&text));
        compare(&input.with_extension("out"), &actual, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
