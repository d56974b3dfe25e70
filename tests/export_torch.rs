//! The Python export of programs with matrices and tapes, run on PyTorch:
//! each prints what tapec prints (the worked example's blame reaching the
//! keys; the feed-forward pair trained for 400 steps). PyTorch comes from `TAPEC_PYTHON` (`.ci/run` makes a
//! virtual environment with it), else `bench/.venv`, else `python3`. Without
//! a Python that imports torch this test says it was not run; under
//! `CI=true` it fails instead.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    for python in candidates {
        let probe = Command::new(&python).args(["-c", "import torch"]).output();
        if probe.is_ok_and(|o| o.status.success()) {
            return Some(python);
        }
    }
    None
}

#[test]
fn exported_tapes_on_pytorch_print_what_tapec_prints() {
    let Some(python) = python_with_torch() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true, but no Python with torch (set TAPEC_PYTHON; `.ci/run` makes one)");
        }
        eprintln!("NOT RUN: the export's PyTorch test needs a Python with torch");
        return;
    };
    let dir = std::env::temp_dir().join(format!("tapec-export-torch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tape_runtime.py"), tapec::export::RUNTIME).unwrap();
    for program in [
        "programs/knob.tape",
        "programs/attention.tape",
        "programs/feedforward.tape",
        "tests/run/language.tape",
        "tests/export_output/scalar_tape.tape",
    ] {
        let path = Path::new(program);
        let opts = tapec::RunOptions::new(path);
        let script = tapec::with_big_stack(move || {
            let mut err = Vec::new();
            tapec::export_python(&opts, &mut err)
                .ok_or_else(|| String::from_utf8_lossy(&err).into_owned())
        })
        .unwrap_or_else(|e| panic!("{program}: {e}"));
        let file = dir.join(path.with_extension("py").file_name().unwrap());
        std::fs::write(&file, &script).unwrap();
        let (want, _, code) = tapec::run_captured(path, &[], None);
        assert_eq!(code, 0);
        let out = Command::new(&python).arg(&file).output().unwrap();
        assert_eq!(
            want,
            String::from_utf8_lossy(&out.stdout),
            "{program}; stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{program}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
