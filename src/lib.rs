//! tapec: an interpreter for the tape language.
//!
//! The pipeline is source text → tokens → syntax tree ([`syntax`]) → checks
//! and evaluation ([`eval`]), with the tape and its reverse walk beside the
//! evaluator ([`tape`]) and diagnostics beside all of them ([`diagnostic`]).
//! This module holds the entry points the command line and the tests use.

pub mod check;
pub mod declarations;
pub mod diagnostic;
pub mod eval;
pub mod export;
pub mod graph;
pub mod jupyter;
pub mod lsp;
pub mod memory;
pub mod page;
pub mod picture;
pub mod repl;
pub mod syntax;
pub mod tape;
pub mod threads;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use diagnostic::{Diagnostic, SourceMap, Span};
use eval::{Interpreter, Stop};

/// Stack for the thread that runs a program: deep enough for 1,000 nested
/// routine calls and 256 levels of source nesting in debug builds.
pub const RUN_STACK_BYTES: usize = 1 << 30;

/// How a run or check went, as an exit status.
pub const EXIT_OK: i32 = 0;
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_INTERRUPTED: i32 = 130;
/// A wrong command line (clap's status for a usage error).
pub const EXIT_USAGE: i32 = 2;

/// Runs `f` on a thread with a stack of [`RUN_STACK_BYTES`], in a pool of
/// as many threads as [`threads::count`] says (see [`threads::run`]).
pub fn with_big_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    threads::run(RUN_STACK_BYTES, f)
}

/// Everything about one run of a program file.
pub struct RunOptions {
    /// The path as the user wrote it (shown in diagnostics, `ParamStr(0)`).
    pub path: PathBuf,
    /// `ParamStr(1)...`
    pub args: Vec<String>,
    pub color: bool,
    /// Stop after this many loop turns and calls (for tests on random input).
    pub step_budget: Option<u64>,
    pub interrupt: Option<Arc<AtomicBool>>,
    pub progress_on_terminal: bool,
    /// A lower cap on matrix sizes than the language's (for tests on random input).
    pub max_elements: Option<usize>,
    /// A lower cap on the records of a tape than the language's (for tests).
    pub max_records: Option<usize>,
    /// A lower cap on the bytes of values a tape holds (for tests).
    pub max_tape_bytes: Option<usize>,
}

impl RunOptions {
    pub fn new(path: impl Into<PathBuf>) -> RunOptions {
        RunOptions {
            path: path.into(),
            args: Vec::new(),
            color: false,
            step_budget: None,
            interrupt: None,
            progress_on_terminal: false,
            max_elements: None,
            max_records: None,
            max_tape_bytes: None,
        }
    }
}

/// Decodes a file's bytes; invalid UTF-8 is an error at the first bad byte.
/// A byte-order mark at the start, which some editors write, is dropped (as
/// editors do not show it, positions then match what they show).
pub fn decode_source(
    sources: &mut SourceMap,
    name: &str,
    mut bytes: Vec<u8>,
) -> Result<usize, Box<Diagnostic>> {
    if bytes.starts_with("\u{feff}".as_bytes()) {
        bytes.drain(..3);
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(sources.add(name, text)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            let id = sources.add(name, text);
            let span = Span::new(id, at, at + '\u{FFFD}'.len_utf8());
            Err(Box::new(
                Diagnostic::new(span, "the file is not valid UTF-8 text")
                    .with_label(span, "this byte does not start a UTF-8 character")
                    .with_hint("save the program as UTF-8"),
            ))
        }
    }
}

fn report(sources: &SourceMap, errors: &[Diagnostic], color: bool, err: &mut dyn Write) {
    sources.render_all(errors, color, err);
}

/// Reports an error about no text of the program (a picture that cannot be
/// drawn or written) through the one diagnostic path, and fails.
fn report_unplaced(message: String, color: bool, err: &mut dyn Write) -> i32 {
    let mut sources = SourceMap::default();
    let d = sources.unplaced(message);
    report(&sources, &[d], color, err);
    EXIT_ERROR
}

/// Reads, parses and checks a file: the program, or every error found.
fn load(opts: &RunOptions, sources: &mut SourceMap) -> Result<Loaded, Vec<Diagnostic>> {
    let name = opts.path.display().to_string();
    let bytes = match read_program(&opts.path) {
        Ok(b) => b,
        Err(why) => {
            let id = sources.add(name.clone(), String::new());
            return Err(vec![Diagnostic::new(Span::new(id, 0, 0), why)]);
        }
    };
    load_bytes(&name, bytes, sources)
}

/// The most a program's file may hold: far more than any program a person
/// writes, and read no further, so that an endless file (`/dev/zero`) is
/// refused at once.
pub const MAX_PROGRAM: usize = 16 << 20;

/// A program file's bytes, or why they cannot be had, in plain words.
pub fn read_program(path: &std::path::Path) -> Result<Vec<u8>, String> {
    let name = path.display();
    match eval::files::read_at_most(path, MAX_PROGRAM) {
        Ok(bytes) if bytes.len() > MAX_PROGRAM => Err(format!(
            "`{name}` is too large for a program: it holds more than 16 MiB"
        )),
        Ok(bytes) => Ok(bytes),
        Err(e) => Err(format!(
            "cannot read `{name}`: {}",
            diagnostic::io_reason(&e)
        )),
    }
}

/// A program that passed every check, with what the checks found.
struct Loaded {
    program: syntax::tree::Program,
    /// Warnings the checks found (layout that misleads), shown before it runs.
    warnings: Vec<Diagnostic>,
    /// Whether the program calls `CheckBlame` anywhere, which replays a tape.
    replays_tapes: bool,
}

/// Decodes, parses and checks a program's bytes.
fn load_bytes(
    name: &str,
    bytes: Vec<u8>,
    sources: &mut SourceMap,
) -> Result<Loaded, Vec<Diagnostic>> {
    let id = decode_source(sources, name, bytes).map_err(|d| vec![*d])?;
    let (program, errors) = syntax::parse(sources.text(id), id);
    if !errors.is_empty() {
        return Err(errors);
    }
    let checked = eval::constants::check_program(&program, &check::Known::default(), false);
    if checked.errors.is_empty() {
        let warnings = check::layout::indentation_warnings(&program.body, sources.text(id));
        Ok(Loaded {
            warnings,
            program,
            replays_tapes: checked.called.contains(&declarations::Does::CheckBlame),
        })
    } else {
        Err(check::layout::among_errors(
            checked.errors,
            &program.body,
            sources.text(id),
        ))
    }
}

/// `tapec check`: every error that can be found without running.
pub fn check_file(opts: &RunOptions, err: &mut dyn Write) -> i32 {
    let mut sources = SourceMap::default();
    let (found, code) = match load(opts, &mut sources) {
        Ok(loaded) => (loaded.warnings, EXIT_OK),
        Err(errors) => (errors, EXIT_ERROR),
    };
    report(&sources, &found, opts.color, err);
    let _ = writeln!(err, "{}: {}", opts.path.display(), check_summary(&found));
    code
}

/// What `tapec check` found, counted: "no errors, 1 warning", "2 errors".
fn check_summary(found: &[Diagnostic]) -> String {
    let warnings = found.iter().filter(|d| d.warning).count();
    let mut summary = match found.len() - warnings {
        0 => "no errors".to_string(),
        n => diagnostic::counted(n, "error"),
    };
    if warnings > 0 {
        summary.push_str(&format!(", {}", diagnostic::counted(warnings, "warning")));
    }
    summary
}

/// `tapec check` of a program given as bytes, as if it were the file
/// `name`: what the growth benchmark times, diagnostics rendered included.
pub fn check_bytes(name: &str, bytes: Vec<u8>, err: &mut dyn Write) -> i32 {
    let mut sources = SourceMap::default();
    match load_bytes(name, bytes, &mut sources) {
        Ok(_) => EXIT_OK,
        Err(errors) => {
            report(&sources, &errors, false, err);
            EXIT_ERROR
        }
    }
}

/// `tapec run`: checks, then runs. Call it on a thread from [`with_big_stack`].
pub fn run_file(opts: &RunOptions, out: Box<dyn Write>, err: &mut dyn Write) -> i32 {
    let mut sources = SourceMap::default();
    let loaded = load(opts, &mut sources);
    run_loaded(opts, loaded, &sources, Reads::OnlyBlame, out, err).0
}

/// `tapec graph`: runs the program, then draws its last tape to `picture`
/// (DOT, SVG or PNG by its extension), or writes DOT to `out` when there is
/// no path; the program's own output then goes to `err`.
pub fn graph_file(
    opts: &RunOptions,
    picture: Option<&Path>,
    out: Box<dyn Write>,
    err: &mut dyn Write,
) -> i32 {
    // A picture that cannot be written in any case is refused before a
    // program that may run for long.
    // It is the command line that is wrong: status 2.
    if let Some(Err(message)) = picture.map(graph::format_of) {
        report_unplaced(message, opts.color, err);
        return EXIT_USAGE;
    }
    // Nor is a picture whose folder does not exist.
    if let Some(path) = picture
        && path
            .parent()
            .is_some_and(|f| !f.as_os_str().is_empty() && !f.is_dir())
    {
        let message = format!(
            "cannot write `{}`: its folder does not exist",
            path.display()
        );
        return report_unplaced(message, opts.color, err);
    }
    // Nor over a file that holds no picture, the program above all: found
    // before the program runs, and said again by `graph::write` after.
    if let Some(path) = picture
        && !graph::holds_a_picture(path)
    {
        let message = format!(
            "cannot write `{}`: it is a file that holds no picture (the program itself, or \
             another), and a picture is written over a picture only; name another file",
            path.display()
        );
        return report_unplaced(message, opts.color, err);
    }
    let mut sources = SourceMap::default();
    let loaded = load(opts, &mut sources);
    let (program_out, mut dot_out): (Box<dyn Write>, Option<Box<dyn Write>>) = match picture {
        Some(_) => (out, None),
        None => (Box::new(std::io::stderr()), Some(out)),
    };
    let (code, interp) = run_loaded(opts, loaded, &sources, Reads::Values, program_out, err);
    let Some(mut interp) = interp.filter(|_| code == EXIT_OK) else {
        return code;
    };
    if interp.tape.records.is_empty() {
        let message = format!(
            "`{}` ran no tape, so there is nothing to draw",
            opts.path.display()
        );
        return report_unplaced(message, opts.color, err);
    }
    match (picture, &mut dot_out) {
        (Some(path), _) => match graph::write(
            &mut interp.tape,
            path,
            &opts.path.display().to_string(),
            &sources,
        ) {
            Ok(()) => {
                let _ = writeln!(err, "tapec graph wrote {}", path.display());
                EXIT_OK
            }
            Err(message) => report_unplaced(message, opts.color, err),
        },
        (None, Some(out)) => {
            let _ = out.write_all(graph::dot(&interp.tape, &sources).as_bytes());
            let _ = out.flush();
            EXIT_OK
        }
        (None, None) => EXIT_OK,
    }
}

/// `tapec graph FILE --walk`: runs the program, then prints the reverse
/// walk of its last tape to `out`, step by step (the program's own output
/// goes to `err`).
pub fn walk_file(opts: &RunOptions, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut sources = SourceMap::default();
    let loaded = load(opts, &mut sources);
    let program_out: Box<dyn Write> = Box::new(std::io::stderr());
    let (code, interp) = run_loaded(opts, loaded, &sources, Reads::Values, program_out, err);
    let Some(mut interp) = interp.filter(|_| code == EXIT_OK) else {
        return code;
    };
    let Some(steps) = interp.tape.walk_steps() else {
        let message = format!(
            "`{}` walked no tape, so there is no walk to show",
            opts.path.display()
        );
        return report_unplaced(message, opts.color, err);
    };
    for step in graph::walk_text(&interp.tape, &steps, &sources) {
        let _ = writeln!(out, "{step}");
    }
    let _ = out.flush();
    EXIT_OK
}

/// `tapec export FILE [-o OUT.py]`: writes the program as a Python script
/// (by default beside it, `FILE.py`) and the runtime it imports,
/// `tape_runtime.py`, in the script's folder.
pub fn export_file(opts: &RunOptions, output: Option<&Path>, err: &mut dyn Write) -> i32 {
    let script_path = output.map_or_else(|| opts.path.with_extension("py"), Path::to_path_buf);
    let folder = script_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if let Some(message) = unfit_script_name(&script_path, &opts.path) {
        return report_unplaced(message, opts.color, err);
    }
    let program_folder = opts.path.parent().unwrap_or(Path::new(""));
    let files_from = relative_folder(&folder, program_folder);
    let Some(script) = export_python(opts, &files_from, err) else {
        return EXIT_ERROR;
    };
    let runtime = folder.join("tape_runtime.py");
    if eval::files::same_file(&runtime, &opts.path) {
        let message = format!(
            "cannot write the runtime `{}` beside the script: that is the program itself; \
             name the program otherwise (`.tape`), or write the script into another folder \
             with `-o`",
            runtime.display()
        );
        return report_unplaced(message, opts.color, err);
    }
    for (path, text) in [(&script_path, script.as_str()), (&runtime, export::RUNTIME)] {
        if let Err(e) = std::fs::write(path, text) {
            let message = format!(
                "cannot write `{}`: {}",
                path.display(),
                diagnostic::io_write_reason(&e, path)
            );
            return report_unplaced(message, opts.color, err);
        }
    }
    let _ = writeln!(
        err,
        "tapec export wrote {} and, beside it, {}",
        script_path.display(),
        runtime.display()
    );
    EXIT_OK
}

/// Why the script cannot be written at `script`, if it cannot: over the
/// program itself, or as `tape_runtime.py`, which the runtime written
/// beside it would replace. Any other name is safe: the script loads the
/// runtime by its path and takes its own folder off Python's path
/// (`export::HEADER`), so a file named like a module it imports
/// (`torch.py`, `random.py`) is never imported in its place.
fn unfit_script_name(script: &Path, program: &Path) -> Option<String> {
    if eval::files::same_file(script, program) {
        // A name beside the program that is neither it nor the runtime's:
        // `prog.py` for `prog.tape`, `x_script.py` for a program `x.py`.
        let stem = program.file_stem().unwrap_or_default().to_string_lossy();
        let stem = if stem == "tape_runtime" {
            "program"
        } else {
            &*stem
        };
        let plain = program.with_file_name(format!("{stem}.py"));
        let other = if plain == program || stem == "program" {
            program.with_file_name(format!("{stem}_script.py"))
        } else {
            plain
        };
        return Some(format!(
            "cannot write the script to `{}`: that is the program itself; name the script \
             with `-o`, such as `-o {}`",
            script.display(),
            other.display()
        ));
    }
    (script.file_name()? == "tape_runtime.py").then(|| {
        format!(
            "cannot name the script `{}`: the runtime written beside it has that name; name \
             it otherwise with `-o`, such as `-o tape_runtime_program.py`",
            script.display()
        )
    })
}

/// The folder `to` as a path from the folder `from` (`programs` from the
/// project's root, `../programs` from `out`), empty if they are one: the
/// script's relative paths start where the program's did. Without a way
/// from one to the other (a folder that does not exist), `to` absolute.
fn relative_folder(from: &Path, to: &Path) -> String {
    let real = |p: &Path| {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        p.canonicalize().ok()
    };
    let (Some(from), Some(to)) = (real(from), real(to)) else {
        return String::new();
    };
    let common = from
        .components()
        .zip(to.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut path = PathBuf::new();
    for _ in from.components().skip(common) {
        path.push("..");
    }
    for part in to.components().skip(common) {
        path.push(part);
    }
    path.to_string_lossy().into_owned()
}

/// The checked program at `opts.path` as a Python script (`export`), with
/// its runtime to write beside it; or its diagnostics rendered to `err`.
/// `files_from` is the program's folder from the script's (empty: the same).
pub fn export_python(opts: &RunOptions, files_from: &str, err: &mut dyn Write) -> Option<String> {
    let mut sources = SourceMap::default();
    let loaded = load(opts, &mut sources);
    export_loaded(opts, loaded, &sources, files_from, err)
}

/// Program bytes exported as if they were the file `fuzz.tape`: the script,
/// or the diagnostics rendered without colour. What the property tests and
/// the fuzz target call: it must end through one or the other, never a
/// panic, whatever the bytes are.
pub fn export_untrusted(bytes: Vec<u8>) -> Result<String, String> {
    with_big_stack(move || {
        let opts = RunOptions::new("fuzz.tape");
        let mut sources = SourceMap::default();
        let loaded = load_bytes("fuzz.tape", bytes, &mut sources);
        let mut err = Vec::new();
        export_loaded(&opts, loaded, &sources, "", &mut err)
            .ok_or_else(|| String::from_utf8_lossy(&err).into_owned())
    })
}

fn export_loaded(
    opts: &RunOptions,
    loaded: Result<Loaded, Vec<Diagnostic>>,
    sources: &SourceMap,
    files_from: &str,
    err: &mut dyn Write,
) -> Option<String> {
    let loaded = match loaded {
        Ok(loaded) => loaded,
        Err(errors) => {
            report(sources, &errors, opts.color, err);
            return None;
        }
    };
    // The checks' warnings are said where the program is read, as `run`
    // and `check` say them: the script itself does not repeat them.
    if !loaded.warnings.is_empty() {
        report(sources, &loaded.warnings, opts.color, err);
    }
    let file = opts.path.file_name().map_or_else(
        || opts.path.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    let folder = paths_folder(&opts.path).display().to_string();
    match export::python(&loaded.program, &file, &folder, files_from, sources) {
        Ok(script) => Some(script),
        Err(d) => {
            report(sources, &[*d], opts.color, err);
            None
        }
    }
}

/// The folder the paths of the program at `path` start from, as `path`
/// gives it (`tests/errors`, `.` for `x.tape`): the messages about a file
/// name the file from there, and an exported script names it so too.
fn paths_folder(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Runs a program given as bytes, as if it were the file `opts.path`:
/// the entry point for tests that make programs up (fuzzing, properties).
pub fn run_bytes(
    opts: &RunOptions,
    bytes: Vec<u8>,
    out: Box<dyn Write>,
    err: &mut dyn Write,
) -> i32 {
    let mut sources = SourceMap::default();
    let loaded = load_bytes(&opts.path.display().to_string(), bytes, &mut sources);
    run_loaded(opts, loaded, &sources, Reads::OnlyBlame, out, err).0
}

/// What reads the last tape after its walk, besides `Blame` and `Nudge`.
#[derive(Clone, Copy, PartialEq)]
enum Reads {
    /// Only what the program does: if it never calls `CheckBlame`, nothing
    /// replays the tape, so `Nudge` may update a matrix the tape shares and
    /// the walk may drop what no variable holds.
    OnlyBlame,
    /// A picture is drawn from the tape's values afterwards.
    Values,
}

fn run_loaded(
    opts: &RunOptions,
    loaded: Result<Loaded, Vec<Diagnostic>>,
    sources: &SourceMap,
    reads: Reads,
    out: Box<dyn Write>,
    err: &mut dyn Write,
) -> (i32, Option<Interpreter>) {
    let Loaded {
        program,
        warnings,
        replays_tapes,
    } = match loaded {
        Ok(loaded) => loaded,
        Err(errors) => {
            report(sources, &errors, opts.color, err);
            return (EXIT_ERROR, None);
        }
    };
    if !warnings.is_empty() {
        report(sources, &warnings, opts.color, err);
    }
    let mut interp = Interpreter::new(out);
    interp.tape.only_blame_read = reads == Reads::OnlyBlame && !replays_tapes;
    interp.program = Some(opts.path.clone());
    interp.params = std::iter::once(opts.path.display().to_string())
        .chain(opts.args.iter().cloned())
        .collect();
    interp.base_dir = paths_folder(&opts.path);
    interp.step_budget = opts.step_budget;
    if let Some(cap) = opts.max_elements {
        interp.max_elements = cap;
    }
    if let Some(cap) = opts.max_records {
        interp.max_records = cap;
    }
    if let Some(cap) = opts.max_tape_bytes {
        interp.max_tape_bytes = cap;
    }
    interp.progress_on_terminal = opts.progress_on_terminal;
    if let Some(flag) = &opts.interrupt {
        interp.interrupt = flag.clone();
    }
    let outcome = interp.run(&program);
    let _ = interp.out.flush();
    // Warnings never stop the run: they are shown when it ends, before
    // its error if it has one.
    for notice in std::mem::take(&mut interp.notices) {
        let _ = writeln!(err, "{notice}");
    }
    let warnings = std::mem::take(&mut interp.warnings);
    if !warnings.is_empty() {
        report(sources, &warnings, opts.color, err);
    }
    let code = match outcome {
        Ok(()) => EXIT_OK,
        Err(Stop::Error(d)) => {
            report(sources, &[*d], opts.color, err);
            EXIT_ERROR
        }
        Err(Stop::Interrupted) => {
            let _ = writeln!(err, "interrupted");
            EXIT_INTERRUPTED
        }
    };
    (code, Some(interp))
}

/// Runs a program held in memory and returns (stdout, stderr, exit status):
/// what the tests use. Diagnostics are rendered without colour.
pub fn run_captured(
    path: &Path,
    args: &[String],
    step_budget: Option<u64>,
) -> (String, String, i32) {
    let mut opts = RunOptions::new(path);
    opts.args = args.to_vec();
    opts.step_budget = step_budget;
    with_big_stack(move || {
        let out = SharedBuffer::default();
        let mut err = Vec::new();
        let code = run_file(&opts, Box::new(out.clone()), &mut err);
        (out.text(), String::from_utf8_lossy(&err).into_owned(), code)
    })
}

/// Runs program bytes on a big-stack thread with a step budget and a small
/// size cap, and returns (stdout, stderr, exit status). What the property
/// tests and the fuzz target call: it must end through a diagnostic, never
/// a panic, whatever the bytes are.
pub fn run_untrusted(
    bytes: Vec<u8>,
    folder: PathBuf,
    step_budget: u64,
    max_elements: usize,
) -> (String, String, i32) {
    with_big_stack(move || {
        let mut opts = RunOptions::new(folder.join("fuzz.tape"));
        opts.step_budget = Some(step_budget);
        opts.max_elements = Some(max_elements);
        let out = SharedBuffer::default();
        let mut err = Vec::new();
        let code = run_bytes(&opts, bytes, Box::new(out.clone()), &mut err);
        (out.text(), String::from_utf8_lossy(&err).into_owned(), code)
    })
}

/// A writer whose bytes can be read back after the interpreter is done.
#[derive(Clone, Default)]
pub struct SharedBuffer(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl SharedBuffer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.borrow()).into_owned()
    }
    pub fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.0.borrow_mut());
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
