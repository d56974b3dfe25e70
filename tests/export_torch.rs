//! `tapec export` of every course program and every program of
//! `tests/run`, run on PyTorch: each script prints what tapec prints and
//! ends with its exit status (the worked example's blame reaching the keys,
//! the feed-forward pair and the GPT trained, the GPT's sampled text).
//! PyTorch comes from `TAPEC_PYTHON` (`.ci/run` makes a virtual environment
//! with it), else `bench/.venv`, else `python3`. Without a Python that
//! imports torch this test says it was not run; under `CI=true` it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Programs whose scripts do not print what tapec prints yet, and why.
const NOT_YET: &[(&str, &str)] = &[
    (
        "integer_leaves.tape",
        "an Integer leaf stays an Integer in tapec; the script makes it a Real",
    ),
    (
        "plot.tape",
        "Plot with no path draws braille on stdout in tapec, matplotlib in the script",
    ),
    (
        "var_parameter_on_tape.tape",
        "a var parameter assigned inside a tape is not the tape's result in the script",
    ),
];

/// A Python that imports torch, if there is one.
fn python_with_torch() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = std::env::var_os("TAPEC_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            root.join("bench/.venv/bin/python"),
            PathBuf::from("python3"),
        ]);
    candidates.into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import torch"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn programs_in(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tape"))
        .collect();
    files.sort();
    files
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn exported_programs_on_pytorch_print_what_tapec_prints() {
    let Some(python) = python_with_torch() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true, but no Python with torch (set TAPEC_PYTHON; `.ci/run` makes one)");
        }
        eprintln!("NOT RUN: the export's PyTorch test needs a Python with torch");
        return;
    };
    let base = std::env::temp_dir().join(format!("tapec-export-torch-{}", std::process::id()));
    let mut programs = programs_in("programs");
    programs.extend(programs_in("tests/run"));
    programs.push(PathBuf::from("tests/export_output/scalar_tape.tape"));
    let mut compared = 0;
    for program in &programs {
        let name = program.file_name().unwrap().to_string_lossy().to_string();
        if NOT_YET.iter().any(|(n, _)| *n == name) {
            continue;
        }
        // The script stands in a folder of its own with the program's data
        // beside it, as `ReadText` reads relative to the script.
        let dir = base.join(program.file_stem().unwrap());
        let data = program.parent().unwrap().join("data");
        if data.is_dir() {
            copy_folder(&data, &dir.join("data"));
        }
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join(program.with_extension("py").file_name().unwrap());
        let export = Command::new(env!("CARGO_BIN_EXE_tapec"))
            .arg("export")
            .arg(program)
            .arg("-o")
            .arg(&script)
            .output()
            .unwrap();
        assert!(
            export.status.success(),
            "tapec export {name}: {}",
            String::from_utf8_lossy(&export.stderr)
        );
        let args: Vec<String> = std::fs::read_to_string(program.with_extension("args"))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default();
        let (want, _, code) = tapec::run_captured(program, &args, None);
        let out = Command::new(&python)
            .arg(&script)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            want,
            String::from_utf8_lossy(&out.stdout),
            "{name}; the script's stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(code), "{name}: exit status");
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} programs compared");
    let _ = std::fs::remove_dir_all(base);
}

/// The line of the program's source a diagnostic or a script's error
/// names: tapec's `╭─[ file:LINE:COL ]`, the script's `  at file:LINE:COL`.
fn named_line(text: &str) -> Option<usize> {
    let place = text
        .lines()
        .find_map(|l| {
            l.split_once("╭─[ ")
                .map(|(_, p)| p.trim_end_matches(" ]").to_string())
        })
        .or_else(|| {
            text.lines()
                .find_map(|l| l.trim_start().strip_prefix("at ").map(str::to_string))
        })?;
    place.rsplit(':').nth(1)?.parse().ok()
}

/// Programs of `tests/errors` whose scripts do not fail where tapec does,
/// and why.
const FAILS_ELSEWHERE: &[(&str, &str)] = &[(
    "nan_product_overflow",
    "PyTorch's matrix product fuses each multiply-add: 1e200·1e200 + 1e200·(-1e200) \
     is inf there, NaN in tapec's unfused sums",
)];

/// Every program of `tests/errors` that passes the checks and fails while
/// it runs (but those of `FAILS_ELSEWHERE`): its script fails too, with
/// exit status 1, naming the line tapec names.
#[test]
fn exported_scripts_fail_where_tapec_fails() {
    let Some(python) = python_with_torch() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true, but no Python with torch (set TAPEC_PYTHON; `.ci/run` makes one)");
        }
        eprintln!("NOT RUN: the export's error test needs a Python with torch");
        return;
    };
    let dir = std::env::temp_dir().join(format!("tapec-export-errors-{}", std::process::id()));
    copy_folder(Path::new("tests/errors/data"), &dir.join("data"));
    let mut compared = Vec::new();
    let mut differ = Vec::new();
    for program in programs_in("tests/errors") {
        let name = program.file_stem().unwrap().to_string_lossy().to_string();
        if FAILS_ELSEWHERE.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let script = dir.join(format!("{name}.py"));
        let export = Command::new(env!("CARGO_BIN_EXE_tapec"))
            .arg("export")
            .arg(&program)
            .arg("-o")
            .arg(&script)
            .output()
            .unwrap();
        if !export.status.success() {
            continue; // refused by the checks, before anything runs
        }
        let (_, err, code) = tapec::run_captured(&program, &[], None);
        assert_eq!(
            code, 1,
            "{name} passes the checks and should fail while it runs"
        );
        let out = Command::new(&python).arg(&script).output().unwrap();
        let script_err = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.code() == Some(1) && named_line(&err) == named_line(&script_err) {
            compared.push(name);
        } else {
            differ.push(format!(
                "{name}: tapec line {:?}, script status {:?} line {:?}: {}",
                named_line(&err),
                out.status.code(),
                named_line(&script_err),
                script_err.lines().last().unwrap_or_default()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        differ.is_empty(),
        "{} agree; these differ:\n{}",
        compared.len(),
        differ.join("\n")
    );
    assert!(compared.len() >= 20, "only {} compared", compared.len());
}
