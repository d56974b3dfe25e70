//! The Python export of programs without matrices or tapes, run by a real
//! CPython (no PyTorch needed):
//! each prints what tapec prints and ends with tapec's exit status. A
//! program with what the export does not translate yet is told so, at its
//! span. Without `python3` the comparison says it was not run; under
//! `CI=true` it fails instead.

mod clients;

use std::path::{Path, PathBuf};
use std::process::Command;

fn have_python() -> bool {
    if Command::new("python3").arg("--version").output().is_ok() {
        return true;
    }
    clients::not_run(
        "the export's plain tests",
        "python3 is not installed",
        "install python3",
    );
    false
}

fn export(program: &Path) -> Result<String, String> {
    let opts = tapec::RunOptions::new(program);
    tapec::with_big_stack(move || {
        let mut err = Vec::new();
        tapec::export_python(&opts, "", &mut err)
            .ok_or_else(|| String::from_utf8_lossy(&err).into_owned())
    })
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tapec-export-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn exported_programs_print_what_tapec_prints() {
    if !have_python() {
        return;
    }
    let dir = scratch("plain");
    std::fs::write(dir.join("tape_runtime.py"), tapec::export::RUNTIME).unwrap();
    for program in [
        "tests/export_output/statements.tape",
        "tests/export_output/long_chains.tape",
        "tests/run/else_if_chain.tape",
        "tests/run/call_depth_1000.tape",
        "tests/run/mod_minus_one.tape",
        "tests/run/byte_order_mark.tape",
        "tests/run/warning_indentation.tape",
        "tests/run/write_with_no_arguments.tape",
    ] {
        let path = Path::new(program);
        let script = export(path).unwrap_or_else(|e| panic!("{program}: {e}"));
        let file = dir.join(path.with_extension("py").file_name().unwrap());
        std::fs::write(&file, &script).unwrap();
        let (want, _, code) = tapec::run_captured(path, &[], None);
        let out = Command::new("python3").arg(&file).output().unwrap();
        let got = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            want,
            got,
            "{program}: stdout differs; stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(code), "{program}: exit status");
        if code == 1 {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.starts_with("Error: integer overflow"),
                "{program}: {err}"
            );
            // The overflow's line, `WriteLn(big + 1);`.
            let text = std::fs::read_to_string(path).unwrap();
            let line = 1 + text
                .lines()
                .position(|l| l.contains("WriteLn(big + 1)"))
                .expect("the overflow's line");
            assert!(
                err.contains(&format!("at statements.tape:{line}\n")),
                "{program}: where: {err}"
            );
        }
        // Every statement line of the program is named in the script.
        assert!(script.contains(&format!(
            "# {}:",
            path.file_name().unwrap().to_string_lossy()
        )));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn what_is_not_translated_yet_is_an_error_at_its_span() {
    let dir = scratch("not-yet");
    let program = dir.join("tape.tape");
    std::fs::write(
        &program,
        "procedure P(x: Real);\nbegin\n  tape\n    y := x * x;\n  end;\n  WriteLn(CheckBlame(x));\nend;\nP(3);\n",
    )
    .unwrap();
    let err = export(&program).unwrap_err();
    assert!(
        err.contains(
            "`tapec export` does not translate a `tape` block inside a routine in a program \
             that calls `CheckBlame` yet"
        ),
        "{err}"
    );
    assert!(err.contains("tape.tape:3:3"), "{err}");
    // A function with a `var` parameter is translated where its call is
    // assigned whole, and refused inside a larger expression, where the
    // values it gives back to the caller's variables would be lost.
    let program = dir.join("var.tape");
    let whole = "function G(var m: Real): Real;\nbegin\n  m := 5;\n  Result := 1;\nend;\n\
                 a := 1.0;\nx := G(a);\n";
    std::fs::write(&program, whole).unwrap();
    assert!(export(&program).is_ok());
    std::fs::write(&program, format!("{whole}WriteLn(G(a) + 1);\n")).unwrap();
    let err = export(&program).unwrap_err();
    assert!(
        err.contains(
            "`tapec export` does not translate a call of a function with a `var` parameter \
             inside a larger expression yet"
        ),
        "{err}"
    );
    assert!(err.contains("var.tape:8:9"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Nesting at Python's limits, which are below tapec's 256 levels: just
/// under each, the script runs and prints what tapec prints; just over,
/// `tapec export` refuses the statement at its span, naming the limit.
/// Python reads at most 99 levels of indentation below the module's (the
/// program's statements start at 1, a nested `if` adds one), 200 brackets
/// nested in one line (each operator and builtin is a call), and, in a
/// line of 200, 196 long chains (`rt.chain`'s lambdas) in each other. An
/// `else if` chain of 3,000 branches, too deep for Python's compiler as
/// one `if`/`elif` statement, is written as several and runs.
#[test]
fn nesting_at_pythons_limits_runs_or_is_refused_at_its_span() {
    if !have_python() {
        return;
    }
    let dir = scratch("nesting");
    std::fs::write(dir.join("tape_runtime.py"), tapec::export::RUNTIME).unwrap();
    let ifs = |n: usize| {
        format!(
            "x := 1;\n{}WriteLn('deep');\nWriteLn('after');\n",
            "if x = 1 then\n".repeat(n)
        )
    };
    let tanh = |n: usize| {
        format!(
            "x := 0.5;\nWriteLn({}x{});\n",
            "Tanh(".repeat(n),
            ")".repeat(n)
        )
    };
    let minus = |n: usize| format!("x := 1;\nWriteLn({}1);\n", "-".repeat(n));
    // Chains of 34 operands in brackets in each other, around `Tanh`s.
    let chains = |levels: usize, tanhs: usize| {
        let mut inner = format!("{}x{}", "Tanh(".repeat(tanhs), ")".repeat(tanhs));
        for _ in 0..levels {
            inner = format!("({}{inner})", "x + ".repeat(33));
        }
        format!("x := 0.001;\nWriteLn({inner});\n")
    };
    let else_ifs = |x: i64| {
        let mut text = format!("x := {x};\nif x = 1 then WriteLn(1)\n");
        for k in 2..=3000 {
            text.push_str(&format!("else if x = {k} then WriteLn({k})\n"));
        }
        text + "else WriteLn('none');\nWriteLn('after');\n"
    };
    let runs = [
        ("ifs_98", ifs(98)),
        ("tanh_199", tanh(199)),
        ("minus_199", minus(199)),
        ("chains_196", chains(196, 3)),
        ("chains_198", chains(198, 0)),
        ("else_ifs_2500", else_ifs(2500)),
        ("else_ifs_none", else_ifs(0)),
        ("else_ifs_1", else_ifs(1)),
    ];
    for (name, text) in runs {
        let program = dir.join(format!("{name}.tape"));
        std::fs::write(&program, text).unwrap();
        let script = export(&program).unwrap_or_else(|e| panic!("{name}: {e}"));
        let file = dir.join(format!("{name}.py"));
        std::fs::write(&file, &script).unwrap();
        let (want, err, code) = tapec::run_captured(&program, &[], None);
        assert_eq!(code, 0, "{name}: {err}");
        let out = Command::new("python3").arg(&file).output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            want,
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{name}");
    }
    let refused = [
        (
            "ifs_99",
            ifs(99),
            "Python reads at most 99 levels of indentation, and it would be indented 100 deep",
            "ifs_99.tape:101:1",
        ),
        (
            "tanh_200",
            tanh(200),
            "Python reads at most 200 brackets nested in each other, and its translation nests 201",
            "tanh_200.tape:2:1",
        ),
        (
            "minus_250",
            minus(250),
            "its translation nests 251",
            "minus_250.tape:2:1",
        ),
        (
            "chains_197",
            chains(197, 2),
            "its translation nests 200 brackets, and 197 chains of more than 32 operators in \
             each other, where Python reads at most 196 such chains",
            "chains_197.tape:2:1",
        ),
    ];
    for (name, text, message, place) in refused {
        let program = dir.join(format!("{name}.tape"));
        std::fs::write(&program, text).unwrap();
        let (_, err, code) = tapec::run_captured(&program, &[], None);
        assert_eq!(code, 0, "{name}: tapec runs it: {err}");
        let err = export(&program).expect_err(name);
        assert!(
            err.starts_with("Error: `tapec export` cannot translate this statement: "),
            "{name}: {err}"
        );
        assert!(err.contains(message), "{name}: {err}");
        assert!(err.contains(place), "{name}: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `tapec export` writes the script and its runtime, and says where; what
/// it cannot translate, or a folder that does not exist, is exit status 1.
#[test]
fn tapec_export_writes_the_script_and_its_runtime() {
    let dir = scratch("cli");
    let tapec = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_tapec"))
            .arg("export")
            .args(args)
            .output()
            .unwrap()
    };
    let script = dir.join("knob.py");
    let out = tapec(&[
        "programs/knob.tape".as_ref(),
        "-o".as_ref(),
        script.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(told.starts_with("tapec export wrote "), "{told}");
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(
        text.contains("    rt.tape_open()  # knob.tape:12\n"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("tape_runtime.py")).unwrap(),
        tapec::export::RUNTIME
    );
    // The checks' warnings are said when exporting, as when running.
    let warned = dir.join("warning_indentation.py");
    let out = tapec(&[
        "tests/run/warning_indentation.tape".as_ref(),
        "-o".as_ref(),
        warned.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(
        told.starts_with("Warning: this statement is indented as if it were part of the `for`"),
        "{told}"
    );
    assert!(told.contains("tapec export wrote "), "{told}");
    let missing = dir.join("no-such-folder").join("knob.py");
    let out = tapec(&[
        "programs/knob.tape".as_ref(),
        "-o".as_ref(),
        missing.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("its folder does not exist"));
    let routine = dir.join("routine.tape");
    std::fs::write(
        &routine,
        "procedure P(x: Real);\nbegin\n  tape\n    y := x * x;\n  end;\n  WriteLn(CheckBlame(x));\nend;\nP(3);\n",
    )
    .unwrap();
    let out = tapec(&[
        routine.as_os_str(),
        "-o".as_ref(),
        dir.join("r.py").as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.join("r.py").exists());

    // Never over the program, nor over the runtime written beside it.
    let program = dir.join("prog.tape");
    let text = "WriteLn(1);\n";
    std::fs::write(&program, text).unwrap();
    let out = tapec(&[program.as_os_str(), "-o".as_ref(), program.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "Error: cannot write the script to `{}`: that is the program itself; name the \
             script with `-o`, such as `-o {}`\n",
            program.display(),
            dir.join("prog.py").display()
        )
    );
    assert_eq!(std::fs::read_to_string(&program).unwrap(), text);
    let runtime = dir.join("tape_runtime.py");
    let out = tapec(&[program.as_os_str(), "-o".as_ref(), runtime.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "Error: cannot name the script `{}`: the runtime written beside it has that name; \
             name it otherwise with `-o`, such as `-o tape_runtime_program.py`\n",
            runtime.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&runtime).unwrap(),
        tapec::export::RUNTIME
    );
    // A program named as a script: the name offered is another.
    let named_py = dir.join("x.py");
    std::fs::write(&named_py, text).unwrap();
    let out = tapec(&[named_py.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "such as `-o {}`",
            dir.join("x_script.py").display()
        )),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A program named as the runtime: the runtime is not written over it.
    let sub = dir.join("named_as_runtime");
    std::fs::create_dir_all(&sub).unwrap();
    let as_runtime = sub.join("tape_runtime.py");
    std::fs::write(&as_runtime, text).unwrap();
    let out = tapec(&[
        as_runtime.as_os_str(),
        "-o".as_ref(),
        sub.join("other.py").as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("that is the program itself"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&as_runtime).unwrap(), text);
    assert!(!sub.join("other.py").exists());
    let _ = std::fs::remove_dir_all(dir);
}

/// A script whose program has a tape, run where PyTorch is missing (a
/// `torch` package that cannot be imported stands first on the path),
/// says so in one line and exits with 1, after printing what the program
/// printed before it; no traceback.
#[test]
fn a_script_without_pytorch_says_it_needs_it() {
    if !have_python() {
        return;
    }
    let dir = scratch("no-torch");
    let missing = dir.join("shadow").join("torch");
    std::fs::create_dir_all(&missing).unwrap();
    std::fs::write(
        missing.join("__init__.py"),
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n",
    )
    .unwrap();
    let program = dir.join("knob.tape");
    std::fs::write(
        &program,
        "WriteLn('before');\nw := 2.0;\ntape\n  y := w * w;\nend;\nWriteLn(Blame(w));\n",
    )
    .unwrap();
    let script = export(&program).unwrap();
    // The tape's leaves are made on the `tape` statement's line, and say so.
    assert!(
        script.contains("w, = rt.leaves([w], [\"w\"])  # knob.tape:3\n"),
        "{script}"
    );
    std::fs::write(dir.join("knob.py"), script).unwrap();
    std::fs::write(dir.join("tape_runtime.py"), tapec::export::RUNTIME).unwrap();
    let out = Command::new("python3")
        .arg(dir.join("knob.py"))
        .env("PYTHONPATH", dir.join("shadow"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "before\n");
    assert_eq!(
        err,
        "Error: this program's matrices and tapes need PyTorch, which is not installed \
         (pip install torch)\n"
    );
    assert_eq!(out.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(dir);
}

/// A script named like a module that Python imports for the runtime
/// (`functools`, through `linecache` and `re`; `importlib`) or for the
/// script (`torch`, `linecache`), beside other such files, still runs:
/// the script takes its folder off Python's path and loads the runtime by
/// its path. Run with `-S`, so that no module of these names is loaded
/// before the script starts (the site hooks load `functools` and `re`),
/// and with another folder's `tape_runtime.py` first on the path, which
/// must not be the one loaded.
#[test]
fn a_script_named_like_a_module_runs() {
    if !have_python() {
        return;
    }
    let dir = scratch("module-names");
    let names = ["functools", "linecache", "importlib", "torch"];
    for name in names {
        let program = dir.join(format!("{name}.tape"));
        std::fs::write(&program, format!("WriteLn('{name} ', 6 * 7);\n")).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_tapec"))
            .arg("export")
            .arg(&program)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("tape_runtime.py"),
        "raise SystemExit('another runtime')\n",
    )
    .unwrap();
    for name in names {
        let out = Command::new("python3")
            .arg("-S")
            .arg(dir.join(format!("{name}.py")))
            .current_dir(&dir)
            .env("PYTHONPATH", &other)
            .output()
            .unwrap();
        assert_eq!(
            (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                out.status.code()
            ),
            (format!("{name} 42\n"), Some(0)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
