//! `tapec export` of every course program and every program of
//! `tests/run`, run on PyTorch: each script prints what tapec prints and
//! ends with its exit status (the worked example's blame reaching the keys,
//! the feed-forward pair and the GPT trained, the GPT's sampled text).
//! PyTorch comes from `TAPEC_PYTHON` (`.ci/run` makes a virtual environment
//! with it), else `bench/.venv`, else `python3`. Without a Python that
//! imports torch this test says it was not run; under `CI=true` it fails.

mod clients;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Programs whose scripts do not print what tapec prints yet, and why.
const NOT_YET: &[(&str, &str)] = &[(
    "plot_svg.tape",
    "Plot to a file: tapec draws the SVG itself, the script with matplotlib, which \
     the Python the tests find need not have",
)];

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

/// The Python with torch, or, without one, `None` after saying the test
/// was not run (under `CI=true`, a failure instead).
fn python_or_not_run(test: &str) -> Option<PathBuf> {
    let python = python_with_torch();
    if python.is_none() {
        clients::not_run(
            test,
            "no Python here imports torch",
            "run .ci/run, or set TAPEC_PYTHON",
        );
    }
    python
}

/// `tapec export program` into a folder of the script's own, with the
/// program's data beside it (as `ReadText` reads relative to the script).
fn export_into(program: &Path, base: &Path) -> PathBuf {
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
        "tapec export {}: {}",
        program.display(),
        String::from_utf8_lossy(&export.stderr)
    );
    script
}

/// The script's stdout, stderr and exit status.
fn run_script(python: &Path, script: &Path, args: &[String]) -> (String, String, Option<i32>) {
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

/// Runs `script` with every `Tensor.clone` counted: its stdout, and the
/// count the wrapper writes last on stderr.
const COUNTING_COPIES: &str = r#"
import runpy, sys, torch
count = [0]
clone = torch.Tensor.clone
def counting(self, *args, **kwargs):
    count[0] += 1
    return clone(self, *args, **kwargs)
torch.Tensor.clone = counting
script = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    runpy.run_path(script, run_name="__main__")
finally:
    print("copies", count[0], file=sys.stderr)
"#;

/// An element set through a `var` parameter changes the caller's matrix
/// in place when nothing else holds it, as a plain element set does: the
/// 150 x 150 fill of `element_writes_through_var`, one routine call per
/// element, copies a matrix a handful of times, where it copied the whole
/// matrix at each of its 22,500 calls (work in the square of the fill).
/// What it prints is tapec's (the copies that remain are those the other
/// holders need).
#[test]
fn element_sets_through_var_parameters_copy_no_matrix_each() {
    let Some(python) = python_or_not_run("the export's var element set test") else {
        return;
    };
    let base = std::env::temp_dir().join(format!("tapec-export-copies-{}", std::process::id()));
    let program = Path::new("tests/run/element_writes_through_var.tape");
    let script = export_into(program, &base);
    let out = Command::new(&python)
        .arg("-c")
        .arg(COUNTING_COPIES)
        .arg(&script)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&base);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stdout,
        std::fs::read_to_string(program.with_extension("out")).unwrap()
    );
    let copies: usize = stderr
        .trim_end()
        .rsplit_once("copies ")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of copies in: {stderr}"));
    assert!(copies < 100, "{copies} copies of a matrix");
}

fn program_args(program: &Path) -> Vec<String> {
    std::fs::read_to_string(program.with_extension("args"))
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

#[test]
fn exported_programs_on_pytorch_print_what_tapec_prints() {
    let Some(python) = python_or_not_run("the export's PyTorch test") else {
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
        let script = export_into(program, &base);
        let args = program_args(program);
        let (want, _, code) = tapec::run_captured(program, &args, None);
        let (out, err, status) = run_script(&python, &script, &args);
        assert_eq!(want, out, "{name}; the script's stderr:\n{err}");
        assert_eq!(status, Some(code), "{name}: exit status");
        // Nothing from Python or PyTorch itself: no warning, no traceback.
        assert!(
            !err.contains("Warning") && !err.contains("Traceback"),
            "{name}: the script's stderr:\n{err}"
        );
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} programs compared");
    let _ = std::fs::remove_dir_all(base);
}

/// The benchmark's arguments at S, M and L, and the last line tapec prints
/// at each (README.md, "Benchmark").
const SIZES: &[(&str, &str)] = &[
    ("27 8 16 64 200", "step 200 loss 0.068948"),
    ("65 32 64 256 100", "step 100 loss 0.145318"),
    ("65 128 256 1024 20", "step 20 loss 0.588567"),
];

/// The benchmark's script trains the same GPT at the three sizes: in
/// float64 it prints what tapec prints, byte for byte, the three losses
/// among them.
#[test]
fn exported_benchmark_prints_tapecs_losses_at_three_sizes() {
    let Some(python) = python_or_not_run("the export's benchmark test") else {
        return;
    };
    let base = std::env::temp_dir().join(format!("tapec-export-bench-{}", std::process::id()));
    let program = Path::new("bench/gpt.tape");
    let script = export_into(program, &base);
    for (args, last) in SIZES {
        let args: Vec<String> = args.split(' ').map(str::to_string).collect();
        let (want, _, code) = tapec::run_captured(program, &args, None);
        assert_eq!((code, want.lines().last()), (0, Some(*last)));
        let (out, err, status) = run_script(&python, &script, &args);
        assert_eq!(
            want, out,
            "bench/gpt.tape {args:?}; the script's stderr:\n{err}"
        );
        assert_eq!(status, Some(0));
    }
    let _ = std::fs::remove_dir_all(base);
}

/// Whether `got` is `want` with each number within `tolerance` of it,
/// relative above 1 and absolute below, and every other word the same.
fn numbers_close(got: &str, want: &str, tolerance: f64) -> Result<(), String> {
    let (g, w): (Vec<&str>, Vec<&str>) = (
        got.split_whitespace().collect(),
        want.split_whitespace().collect(),
    );
    if g.len() != w.len() {
        return Err(format!("{} words, not {}", g.len(), w.len()));
    }
    for (a, b) in g.iter().zip(&w) {
        let close = match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => x == y || (x - y).abs() <= tolerance * y.abs().max(1.0),
            _ => a == b,
        };
        if !close {
            return Err(format!("{a} where tapec prints {b}"));
        }
    }
    Ok(())
}

/// How far a float32 script's printed numbers may be from tapec's float64
/// ones: measured, at most one unit of the sixth decimal (1e-6) over every
/// course program and the benchmark's three sizes; allowed, a hundred
/// times that. A wrong operation moves a loss in its first digits.
const FLOAT32_TOLERANCE: f64 = 1e-4;

/// `--dtype float32`: the scripts compute in float32 (2^24 + 1 becomes
/// 2^24), and every course program and the benchmark at three sizes print
/// tapec's numbers within `FLOAT32_TOLERANCE` and its words exactly.
#[test]
fn float32_scripts_print_tapecs_numbers_within_a_tolerance() {
    let Some(python) = python_or_not_run("the export's float32 test") else {
        return;
    };
    let base = std::env::temp_dir().join(format!("tapec-export-f32-{}", std::process::id()));
    let float32 =
        |args: &[String]| [args, &["--dtype".to_string(), "float32".to_string()]].concat();
    let precision = export_into(Path::new("tests/export_output/precision.tape"), &base);
    let (out, err, _) = run_script(&python, &precision, &float32(&[]));
    assert_eq!(out, "16777216.0\n", "{err}");
    assert_eq!(run_script(&python, &precision, &[]).0, "16777217.0\n");
    let mut runs: Vec<(PathBuf, Vec<String>)> = programs_in("programs")
        .into_iter()
        .map(|p| {
            let args = program_args(&p);
            (p, args)
        })
        .collect();
    // A value held for `CheckBlame`'s replay is made float64 there too.
    runs.push((
        PathBuf::from("tests/run/check_blame_holds_unrecorded.tape"),
        Vec::new(),
    ));
    for (args, _) in SIZES {
        runs.push((
            PathBuf::from("bench/gpt.tape"),
            args.split(' ').map(str::to_string).collect(),
        ));
    }
    for (program, args) in &runs {
        let script = export_into(program, &base);
        let (want, _, code) = tapec::run_captured(program, args, None);
        let (out, err, status) = run_script(&python, &script, &float32(args));
        if let Err(why) = numbers_close(&out, &want, FLOAT32_TOLERANCE) {
            panic!(
                "{} {args:?} in float32: {why}; the script's stderr:\n{err}",
                program.display()
            );
        }
        assert_eq!(status, Some(code), "{}: exit status", program.display());
    }
    let _ = std::fs::remove_dir_all(base);
}

/// The line of the program's source a diagnostic or a script's error
/// names: tapec's `╭─[ file:LINE:COL ]`, the script's `  at file:LINE`.
fn named_line(text: &str) -> Option<usize> {
    let tapec = text.lines().find_map(|l| {
        let (_, place) = l.split_once("╭─[ ")?;
        place
            .trim_end_matches(" ]")
            .rsplit(':')
            .nth(1)?
            .parse()
            .ok()
    });
    tapec.or_else(|| {
        text.lines().find_map(|l| {
            let place = l.trim_start().strip_prefix("at ")?;
            place.rsplit(':').next()?.parse().ok()
        })
    })
}

/// Programs of `tests/errors` whose scripts do not fail where tapec does,
/// and why.
const FAILS_ELSEWHERE: &[(&str, &str)] = &[
    (
        "nan_product_overflow",
        "PyTorch's matrix product fuses each multiply-add: 1e200·1e200 + 1e200·(-1e200) \
         is inf there, NaN in tapec's unfused sums",
    ),
    (
        "nudge_global_named_by_integer_parameter",
        "a `var` parameter and the global it names are two variables of the script \
         (README, known gaps): the global's Nudge is not seen through the parameter",
    ),
];

/// Every program of `tests/errors` that passes the checks and fails while
/// it runs (but those of `FAILS_ELSEWHERE`): its script fails too, with
/// exit status 1, naming the line tapec names.
#[test]
fn exported_scripts_fail_where_tapec_fails() {
    let Some(python) = python_or_not_run("the export's error test") else {
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
        let export = export_to(&program, &script);
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

/// Programs of `tests/errors` whose scripts stop with tapec's own words:
/// a Real where tapec takes only an Integer (`div` and `mod`, the Integer
/// arguments of builtins, an index, a `for` bound, a field width), the
/// Real often one that `Nudge` made of an Integer, on a tape or off it;
/// the Integer errors beside them; an argument of the wrong kind or
/// shape, an index out of range, a matrix too large, and a builtin's other
/// refusals; a NaN and its place, forward and in the reverse walk; a
/// condition or a declared variable given the wrong type (through a `var`
/// parameter too); a variable with
/// no value; calls nested too deep; a tape's result; `Blame`, `Nudge` and
/// `CheckBlame` of a value not on the last tape; and a file that cannot be
/// read, written or loaded, named as tapec names it. (Not
/// `nan_product_overflow`, though it may match: see `FAILS_ELSEWHERE`.)
const SAME_WORDS: &[&str] = &[
    "div_of_a_real",
    "mod_of_a_nudged_integer",
    "div_on_tape_of_a_nudged_knob",
    "rand_int_of_a_real",
    "seed_of_a_nudged_integer",
    "param_str_of_a_nudged_number",
    "progress_of_a_nudged_step",
    "zeros_of_a_nudged_size",
    "eye_of_a_nudged_size",
    "row_of_a_nudged_number",
    "col_range_of_a_nudged_count",
    "range_count",
    "range_of_one_row",
    "index_of_a_nudged_number",
    "index_not_whole",
    "for_bound_nudged",
    "for_bound_real",
    "field_width_nudged",
    "field_width_of_a_string",
    "string_too_long",
    "decimals_out_of_range",
    "div_by_zero",
    "mod_by_zero",
    "rand_int_order",
    "integer_overflow",
    "blame_after_nudge_and_assignment",
    "blame_after_reassignment",
    "blame_before_any_tape",
    "blame_not_on_tape",
    "blame_of_a_local_after_a_deeper_tape",
    "blame_of_a_local_after_an_outer_tape",
    "blame_of_a_string",
    "chained_comparison",
    "check_blame_nan",
    "check_blame_nudged_into_an_overflow",
    "check_blame_nudged_out_of_sqrt",
    "cross_entropy_one_row",
    "cross_entropy_targets",
    "cross_entropy_targets_from_zero",
    "declared_after_assignment",
    "declared_local_never_assigned",
    "declared_type_held",
    "element_not_a_number",
    "element_of_a_real",
    "embed_ids_not_whole",
    "embed_ids_range",
    "if_on_matrix",
    "nan_blame_sum",
    "nan_forward",
    "nan_in_walk",
    "nan_product_blame",
    "not_on_number_held",
    "nudge_nan",
    "nudge_nan_kept",
    "nudge_through_var_of_declared_integer",
    "nudge_through_var_of_the_same_name",
    "nudge_integer_var_parameter",
    "nudge_parameter_passed_on_from_an_integer",
    "param_str_range",
    "read_before_assigned",
    "round_too_large",
    "save_to_folder",
    "show_needs_matrix_held",
    "plot_title_not_a_string",
    "softmax_all_minus_inf",
    "sqr_overflow",
    "stack_shapes",
    "str_to_float",
    "str_to_float_too_large",
    "str_to_int",
    "str_to_int_too_large",
    "tape_assigns_nothing",
    "tape_ends_on_boolean_in_if",
    "tape_ends_on_matrix",
    "tape_ends_on_string",
    "unset_global_in_tape",
    "var_argument_left_unassigned",
    "nudged_then_set_through_var",
    "var_parameter_names_a_declared_variable",
    "var_parameter_no_value",
    "var_parameter_type",
    "var_parameter_annotation_passed_on",
    "var_parameter_names_another_type",
    "var_parameter_passed_on_to_another_type",
    "wrong_builtin_kind_held",
    "wrong_param_type_held",
    "unreadable_file",
    "save_no_folder",
    "plot_missing_folder",
    "broadcast_shapes",
    "call_depth_1001",
    "counter_of_a_loop_that_never_ran",
    "cross_entropy_infinite_logit",
    "element_in_routine_on_tape",
    "encode_empty",
    "error_in_routine_names_its_calls",
    "hadamard_shapes",
    "index_out_of_range",
    "index_past_one_row",
    "index_zero",
    "infinite_recursion",
    "load_absolute_path",
    "load_blank_line",
    "load_no_numbers",
    "load_not_a_number",
    "load_ragged",
    "load_too_large",
    "load_word_shown_escaped",
    "matmul_shapes",
    "matmul_transpose_fits",
    "nan_zero_over_zero",
    "nudge_declared_integer",
    "nudge_for_counter_in_routine",
    "nudge_nan_number",
    "plot_not_svg",
    "power_of_minus_infinity",
    "power_of_negative",
    "result_unset_on_a_path",
    "row_sum_nan",
    "sample_negative",
    "save_over_program",
    "save_path_held_not_a_string",
    "second_nudge",
    "string_plus_matrix",
    "tape_in_routine_on_tape",
    "too_large_matrix",
    "too_large_product",
];

/// Each program of `SAME_WORDS`: its script's error is tapec's first
/// line, word for word, with exit status 1 (not a Python traceback, and
/// not a value printed where tapec stops).
#[test]
fn exported_scripts_stop_in_tapecs_words() {
    let Some(python) = python_or_not_run("the export's error words test") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("tapec-export-words-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in SAME_WORDS {
        let program = Path::new("tests/errors").join(format!("{name}.tape"));
        let script = dir.join(format!("{name}.py"));
        let export = export_to(&program, &script);
        assert!(
            export.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&export.stderr)
        );
        let (_, err, code) = tapec::run_captured(&program, &[], None);
        assert_eq!(code, 1, "{name}: {err}");
        let (_, script_err, status) = run_script(&python, &script, &[]);
        assert_eq!(
            script_err.lines().next(),
            err.lines().next(),
            "{name}: the script's stderr:\n{script_err}"
        );
        assert_eq!(status, Some(1), "{name}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The first line tapec, or a script, writes to stderr.
fn first_error_line(command: &mut Command) -> String {
    let out = command.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines().next().unwrap_or_default().to_string()
}

/// A script names a file the program names as tapec does from the folder
/// it runs in: from the program's folder as `tapec export` was given it
/// (`x.tape` or `./x.tape` from inside it, `tests/errors/x.tape` from the
/// root, an absolute path), and, run from another folder, from there (as
/// tapec, given `errors/x.tape` in `tests`, names `errors/no/such/...`).
#[test]
fn exported_scripts_name_a_file_as_tapec_does_from_any_folder() {
    let Some(python) = python_or_not_run("the export's file path test") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("tapec-export-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let errors = root.join("tests/errors");
    let absolute = errors.join("unreadable_file.tape");
    let absolute = absolute.to_str().unwrap();
    // Where `tapec export` runs and what it is given; where the script
    // runs; what tapec is given there to run the same program.
    let runs = [
        (
            "tests/errors",
            "save_no_folder.tape",
            "tests/errors",
            "save_no_folder.tape",
        ),
        (
            "tests/errors",
            "./plot_missing_folder.tape",
            "tests/errors",
            "plot_missing_folder.tape",
        ),
        (
            "tests",
            "errors/unreadable_file.tape",
            "tests/errors",
            "unreadable_file.tape",
        ),
        (
            "",
            "tests/errors/unreadable_file.tape",
            "tests",
            "errors/unreadable_file.tape",
        ),
        ("", absolute, "tests", absolute),
    ];
    for (k, (exported_in, program, runs_in, run_as)) in runs.into_iter().enumerate() {
        let script = dir.join(format!("script_{k}.py"));
        let export = Command::new(env!("CARGO_BIN_EXE_tapec"))
            .current_dir(root.join(exported_in))
            .args(["export", program, "-o"])
            .arg(&script)
            .output()
            .unwrap();
        assert!(export.status.success(), "{program}: {export:?}");
        let said = first_error_line(
            Command::new(&python)
                .current_dir(root.join(runs_in))
                .arg(&script),
        );
        let want = first_error_line(
            Command::new(env!("CARGO_BIN_EXE_tapec"))
                .current_dir(root.join(runs_in))
                .args(["run", run_as]),
        );
        assert_eq!(
            said, want,
            "{program} exported in `{exported_in}`, run in `{runs_in}`"
        );
    }
    let from_tests = "Error: cannot read `errors/no/such/file.txt`: no such file";
    let said = first_error_line(
        Command::new(&python)
            .current_dir(root.join("tests"))
            .arg(dir.join("script_3.py")),
    );
    assert_eq!(said, from_tests);
    let _ = std::fs::remove_dir_all(dir);
}

/// `tapec export PROGRAM -o SCRIPT`, as a user runs it.
fn export_to(program: &Path, script: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tapec"))
        .arg("export")
        .arg(program)
        .arg("-o")
        .arg(script)
        .output()
        .expect("run tapec export")
}

/// A program whose reader stops reading (`| head -1`) runs on, as in
/// tapec: its output is dropped, its files are still written, and an
/// error after that still ends it with tapec's first line and status 1.
#[test]
fn exported_scripts_run_on_when_no_one_reads_their_output() {
    let Some(python) = python_or_not_run("the export's closed output test") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("tapec-export-closed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("closed.tape");
    std::fs::write(
        &program,
        "for i := 1 to 100000 do WriteLn(i);\nSave([[1, 2]], 'saved.txt');\nWriteLn(1 div 0);\n",
    )
    .unwrap();
    let script = dir.join("closed.py");
    assert!(export_to(&program, &script).status.success());
    // stdout a pipe whose reading end is closed before anything is written.
    let unread = |command: &mut Command| {
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let saved = std::fs::remove_file(dir.join("saved.txt")).is_ok();
        (
            err.lines().next().map(str::to_string),
            out.status.code(),
            saved,
        )
    };
    let tapec = unread(
        Command::new(env!("CARGO_BIN_EXE_tapec"))
            .arg("run")
            .arg(&program),
    );
    assert_eq!(
        tapec,
        (Some("Error: `div` by zero".to_string()), Some(1), true)
    );
    let said = unread(Command::new(&python).arg(&script));
    assert_eq!(said, tapec);
    let _ = std::fs::remove_dir_all(dir);
}
