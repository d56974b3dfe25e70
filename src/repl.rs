//! The interactive prompt. It runs the same evaluator as `tapec run`, one
//! complete entry at a time, and echoes what each statement did.
//!
//! An entry continues on the next line while a `begin`, `tape` or `repeat`
//! in it is open (or Pascal's `case x of`, which the language lacks, until
//! its `end`, so that it is one entry and one error), a comment is open, its last token leaves something
//! hanging, or its tokens otherwise show it cannot be complete (an open `[`
//! or `(`, a routine header, a `var`'s names before their `:`, an `if`
//! that may yet take an `else`), or parsing stops at its end: see
//! `Pending`. `tape` alone on a line opens a tape at the prompt; `end;`
//! closes it.
//! A line that fails restores the state from before it, so nothing changes.
//! [`run_on_stdin`] is the prompt on a terminal (line editing, history,
//! Ctrl-C) or on piped input.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crate::check::errors;
use crate::check::{self, Known};
use crate::diagnostic::{Diagnostic, SourceId, SourceMap, Span};
use crate::eval::format;
use crate::eval::value::Value;
use crate::eval::{Interpreter, Stop};
use crate::syntax::lexer::{Token, lex};
use crate::syntax::parser::{at_prompt, parse};
use crate::syntax::tree::{Arg, Expr, ExprKind, Name, Program, Stmt, StmtKind};

pub const PROMPT: &str = "tapec> ";
pub const TAPE_PROMPT: &str = "tape> ";
pub const CONTINUE_PROMPT: &str = "...> ";
pub const WALK_PROMPT: &str = "walk> ";

const HELP: &str = "\
Enter statements; each runs when it is complete.
  tape            open a tape: statements are recorded until `end;`
  :help NAME      a builtin (Tanh), keyword (tape), operator (*), command (:walk) or your routine
  :vars           every variable with its shape
  :tape [all]     the records of the open or last tape (a long one summarised)
  :blame NAME     the blame of NAME, a number or a matrix (Blame(NAME))
  :walk           step through the last tape's walk (Enter: next, q: stop)
  :drop           drop the tape open at the prompt, every variable as before it
  :graph FILE     draw the open or last tape (.svg, .png, .dot; .html: the walk)
  :load FILE      run a program file in this session
  :reset          forget every variable, routine and tape
  :quit           leave (also Ctrl-D)
";

/// `:help` in a notebook: the prompt's commands as a notebook's kernel
/// runs them (`:walk` and `:graph` show in the cell), with no `:quit`.
const NOTEBOOK_HELP: &str = "\
Enter statements; a cell runs them one by one, as the prompt does.
  tape            open a tape: statements are recorded until `end;`, in this cell or a later one
  :help NAME      a builtin (Tanh), keyword (tape), operator (*), command (:walk) or your routine
  :vars           every variable with its shape
  :tape [all]     the records of the open or last tape (a long one summarised)
  :blame NAME     the blame of NAME, a number or a matrix (Blame(NAME))
  :walk           show the last tape's walk in the cell, a page that steps through it
  :drop           drop the tape left open, every variable as before it
  :graph [FILE]   draw the open or last tape in the cell, or into FILE (.svg, .png, .dot; .html: the walk)
  :load FILE      run a program file in this session
  :reset          forget every variable, routine and tape
";

/// What `:quit` does in a notebook, for the cell and for `:help :quit`.
pub const QUIT_IN_NOTEBOOK: &str = "`:quit` leaves the prompt; a notebook's kernel is stopped or \
                                    restarted from the notebook, so the cell goes on";

/// How many records `:tape` lists of a longer tape, and how many of them
/// are its last.
const LISTED_RECORDS: usize = 40;
const LISTED_LAST: usize = 10;

/// The prompt's commands as `:help` lists them (in a notebook, if
/// `notebook`): each one's word (without the `:`) and its line.
fn commands(notebook: bool) -> impl Iterator<Item = (&'static str, &'static str)> {
    let help = if notebook { NOTEBOOK_HELP } else { HELP };
    help.lines().filter_map(|l| {
        let word = l
            .trim_start()
            .strip_prefix(':')?
            .split_whitespace()
            .next()?;
        Some((word, l.trim()))
    })
}

/// What `:help` says of the prompt's command `:word` (in a notebook, if
/// `notebook`), if there is one.
pub fn command_help(word: &str, notebook: bool) -> Option<&'static str> {
    // `:q` is `:quit` too.
    let word = if word == "q" { "quit" } else { word };
    if notebook && word == "quit" {
        return Some(QUIT_IN_NOTEBOOK);
    }
    commands(notebook)
        .find(|&(w, _)| w == word)
        .map(|(_, line)| line)
}

/// The words of the commands `:help` lists (in a notebook, if
/// `notebook`), without their `:`.
pub fn command_words(notebook: bool) -> impl Iterator<Item = &'static str> {
    commands(notebook).map(|(word, _)| word)
}

/// One interactive session. Program output and echoes go to `out`,
/// diagnostics to `err`.
pub struct Repl {
    interp: Interpreter,
    sources: SourceMap,
    pending: Pending,
    /// Where the open tape began, when a tape is open at the prompt.
    tape_started: Option<Span>,
    /// The steps of the walk `:walk` is showing, and how many are shown.
    walking: Option<(Vec<String>, usize)>,
    /// Whether a person types the lines (a terminal): then `:walk` shows a
    /// step per Enter; piped input gets every step at once, and its next
    /// lines stay entries.
    pub stepping: bool,
    /// Everything as it was before the tape open at the prompt: what
    /// `:drop` puts back.
    before_tape: Option<crate::eval::interp::Snapshot>,
    pub color: bool,
    err: Box<dyn Write>,
    make_out: fn() -> Box<dyn Write>,
    entries: usize,
    pub quit: bool,
    /// Where diagnostics that hold an error go, when not to `err` with the
    /// warnings: a notebook shows an error apart from the cell's output.
    error_out: Option<Box<dyn Write>>,
    /// Whether a bare expression's value waits in `held` until something
    /// else is shown, so that the last one can be a notebook cell's result.
    hold_values: bool,
    held: Option<String>,
    /// Whether a statement was interrupted since this was last cleared.
    pub interrupted: bool,
    /// Whether any entry has failed: a piped session then exits with 1.
    pub had_error: bool,
    /// What the last interruption did, kept for the caller instead of
    /// printed when `keep_interruptions` is set (a notebook shows it once,
    /// as the cell's error).
    interruption: Option<String>,
    keep_interruptions: bool,
    /// The name of the next entry's source and the line it starts on, when
    /// it is part of something larger (a notebook cell); else `entry N`.
    place: Option<(String, usize)>,
    /// While the entries are part of something larger that a failure
    /// undoes whole (a notebook cell): where the tape open at the prompt
    /// when it began was opened, if one was. `None`: a failure undoes its
    /// entry alone.
    undone_whole_to: Option<Option<Span>>,
    /// Whether statements of a failed entry ran before the one that
    /// failed, while its failure is told by what undoes it whole.
    ran_before_error: bool,
    /// Where notices (`Plot wrote ...`) are written as they come, rather
    /// than after their entry.
    notices_to: Option<fn() -> Box<dyn Write>>,
    /// Whether the session is a notebook's: `:help` then tells the
    /// commands as its kernel runs them.
    notebook: bool,
}

/// What a notebook cell must put back if it fails: the state before it.
pub struct Mark {
    snapshot: crate::eval::interp::Snapshot,
    tape_started: Option<Span>,
    /// A second snapshot, for `:drop` to go back to, when a tape was open
    /// before the cell and the cell closed it before failing (the one
    /// taken when the tape opened is gone by then).
    before_tape: Option<crate::eval::interp::Snapshot>,
}

/// What is open at the prompt after an entry fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    /// The tape open now, opened before what the failure undoes.
    Same,
    /// No tape: the one open now was opened in what the failure undoes.
    Nothing,
    /// Another tape: the one open now was opened in what the failure
    /// undoes, which had closed the one open before it.
    Earlier,
}

/// Whether an entry is complete, by the prompt's rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completeness {
    /// It would run (or fail) as it stands.
    Complete,
    /// It goes on: the prompt would ask for another line.
    Incomplete,
    /// It is complete and cannot be parsed.
    Invalid,
}

impl Repl {
    pub fn new(out: fn() -> Box<dyn Write>, err: Box<dyn Write>, color: bool) -> Repl {
        let mut interp = Interpreter::new(out());
        interp.params = vec!["repl".to_string()];
        interp.paths_from = "the folder tapec was started in";
        Repl {
            interp,
            sources: SourceMap::default(),
            pending: Pending::default(),
            tape_started: None,
            before_tape: None,
            walking: None,
            stepping: false,
            color,
            err,
            make_out: out,
            entries: 0,
            quit: false,
            error_out: None,
            hold_values: false,
            held: None,
            interrupted: false,
            had_error: false,
            interruption: None,
            keep_interruptions: false,
            place: None,
            undone_whole_to: None,
            ran_before_error: false,
            notices_to: None,
            notebook: false,
        }
    }

    /// Makes this a notebook's session, for what `:help` says.
    pub fn in_notebook(&mut self) {
        self.notebook = true;
    }

    /// Writes each notice (`Plot wrote ...`) to a stream made by `to` as it
    /// comes, in the program's order among its output, rather than on
    /// `err` after the entry: a notebook shows both streams in one place.
    pub fn notices_at_once(&mut self, to: fn() -> Box<dyn Write>) {
        self.notices_to = Some(to);
        self.interp.notices_now = Some(to());
    }

    /// Sends the diagnostics that hold an error to `out` from now on,
    /// and keeps warnings on the session's `err`.
    pub fn send_errors_to(&mut self, out: Box<dyn Write>) {
        self.error_out = Some(out);
    }

    /// Keeps each bare expression's value back until something else is
    /// shown; [`Repl::take_value`] then gives the last one unshown.
    pub fn hold_values(&mut self) {
        self.hold_values = true;
    }

    /// The value of the last bare expression, if nothing was shown after it.
    pub fn take_value(&mut self) -> Option<String> {
        self.held.take()
    }

    /// Shows a value kept back, because something else is shown after it.
    pub fn release_value(&mut self) {
        if let Some(text) = self.held.take() {
            self.fresh_line();
            self.interp.print(&text);
            let _ = self.interp.out.flush();
        }
    }

    /// Keeps what an interruption did for [`Repl::take_interruption`]
    /// instead of printing it.
    pub fn keep_interruptions(&mut self) {
        self.keep_interruptions = true;
    }

    /// What the last interruption did, in a sentence, if one was kept.
    pub fn take_interruption(&mut self) -> Option<String> {
        self.interruption.take()
    }

    /// Names the source of the entry that starts with the next line: `name`,
    /// its lines counted from `first_line` (0-based) so that a diagnostic
    /// gives the line in the larger text; `None` goes back to `entry N`.
    pub fn place_next_entry(&mut self, place: Option<(String, usize)>) {
        self.place = place;
    }

    /// Adds a finished entry as a source, placed in the larger text it is
    /// part of (so its diagnostics give that text's lines), else named
    /// `entry N`.
    fn add_entry(&mut self, text: &str) -> SourceId {
        self.entries += 1;
        match &self.place {
            Some((name, line)) => self.sources.add_at(name.clone(), text, *line),
            None => self.sources.add(format!("entry {}", self.entries), text),
        }
    }

    /// An interruption: says what it did, or keeps it for the caller.
    fn interrupted_with(&mut self, text: String) {
        self.interrupted = true;
        if self.keep_interruptions {
            self.interruption = Some(text);
        } else {
            self.say(&format!("{text}\n"));
        }
    }

    /// Whether an entry is waiting for more lines.
    pub fn entry_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The state as it is, to go back to with [`Repl::undo_to`].
    pub fn mark(&self) -> Mark {
        Mark {
            snapshot: self.interp.snapshot(),
            tape_started: self.tape_started,
            before_tape: self.tape_started.map(|_| self.interp.snapshot()),
        }
    }

    /// From now on a failure undoes everything back to `mark`, not only
    /// its entry (a notebook cell undone whole), so what an error says is
    /// left open is what is open after that; `None`: each entry alone.
    pub fn undo_whole_to(&mut self, mark: Option<&Mark>) {
        self.undone_whole_to = mark.map(|m| m.tape_started);
    }

    /// Whether an entry that failed while undone whole had statements
    /// before the failing one that ran; clears it.
    pub fn take_ran_before_error(&mut self) -> bool {
        std::mem::take(&mut self.ran_before_error)
    }

    /// What stays of the tape open at the prompt when the entry running
    /// now fails.
    fn after_failure(&self) -> Left {
        match self.undone_whole_to {
            None => Left::Same,
            Some(before) if before == self.tape_started => Left::Same,
            Some(None) => Left::Nothing,
            Some(Some(_)) => Left::Earlier,
        }
    }

    /// Puts back the state of a mark: every variable, routine, the random
    /// generator and the tape, and whether a tape is open at the prompt.
    pub fn undo_to(&mut self, mark: Mark) {
        self.interp.restore(mark.snapshot);
        self.pending.clear();
        self.walking = None;
        self.held = None;
        self.tape_started = mark.tape_started;
        if self.tape_started.is_none() {
            self.before_tape = None;
        } else if self.before_tape.is_none() {
            self.before_tape = mark.before_tape;
        }
    }

    /// Whether `code`, entered now, would be complete: the prompt's rule
    /// for each entry in it (`:` commands and the prompt's own `tape` and
    /// `end;` are complete lines), so the last decides whether it goes on.
    pub fn completeness(&self, code: &str) -> Completeness {
        let mut pending = Pending::default();
        let mut tape_open = self.tape_started.is_some();
        let mut invalid = false;
        for line in code.lines() {
            let trimmed = line.trim();
            if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with(':')) {
                continue;
            }
            pending.push_line(line);
            let tape = pending.is_word("tape");
            if tape && tape_open {
                // Refused at once, as `take_line` refuses it.
                invalid = true;
                pending.clear();
                continue;
            }
            if tape || (pending.is_word("end") && tape_open) {
                tape_open = !tape_open;
                pending.clear();
                continue;
            }
            if pending.goes_on() {
                continue;
            }
            let (_, errors) = parse(&pending.text, 0);
            invalid |= !errors.is_empty();
            pending.clear();
        }
        if !pending.is_empty() {
            Completeness::Incomplete
        } else if invalid {
            Completeness::Invalid
        } else {
            Completeness::Complete
        }
    }

    /// The names a program at the prompt can use now: its variables and
    /// routines.
    pub fn names(&self) -> Vec<String> {
        let mut names = self.variables();
        names.extend(self.interp.routines.keys().cloned());
        names.sort();
        names.dedup();
        names
    }

    /// The session's variables, sorted.
    pub fn variables(&self) -> Vec<String> {
        let mut names: Vec<String> = self.interp.globals.keys().cloned().collect();
        names.sort_unstable();
        names
    }

    /// The session's routines, each with whether it is a function, sorted.
    pub fn routines(&self) -> Vec<(String, bool)> {
        let mut routines: Vec<(String, bool)> = self
            .interp
            .routines
            .iter()
            .map(|(name, r)| (name.clone(), r.is_function))
            .collect();
        routines.sort_unstable();
        routines
    }

    /// The variables whose blame `:blame` can read: those that hold a
    /// value of the last tape, sorted.
    pub fn blamable(&self) -> Vec<String> {
        let tape = &self.interp.tape;
        let mut names: Vec<String> = self
            .interp
            .globals
            .keys()
            .filter(|name| {
                let value = self.interp.globals[name.as_str()].value.as_ref();
                value.is_some_and(|v| tape.find(v.tag()).is_some())
            })
            .cloned()
            .collect();
        names.sort_unstable();
        names
    }

    /// What `:vars` says of one variable, or what `:help` says of a
    /// routine: the text a notebook's inspection shows.
    pub fn describe(&self, name: &str) -> Option<String> {
        if let Some(slot) = self.interp.globals.get(name) {
            let what = match &slot.value {
                Some(Value::Matrix(m, _)) => format!("{}×{}", m.nrows(), m.ncols()),
                Some(v) => v.type_name().to_string(),
                None => "no value yet".to_string(),
            };
            return Some(format!("{name} : {what}\n"));
        }
        self.routine_help(name)
    }

    /// What `:help` says of a routine of the session: its header as it
    /// was written, parameter types and all, and its kind.
    fn routine_help(&self, name: &str) -> Option<String> {
        let routine = self.interp.routines.get(name)?;
        let header = routine.header;
        let text = self.sources.text(header.source);
        let shown = text.get(header.start..header.end).unwrap_or(name);
        let kind = if routine.is_function {
            "function"
        } else {
            "procedure"
        };
        Some(format!("{shown}\n  a {kind} of this session\n"))
    }

    /// A notebook's `:graph` (`walk`: `:walk`) refused, as any command
    /// that cannot run is, when the open or last tape is too large to
    /// draw, with the way out that command has; whether it was.
    pub fn refuse_too_large(&mut self, walk: bool) -> bool {
        let tape = &self.interp.tape;
        if walk && (tape.open || tape.result.is_none()) {
            // No walk to show: `:walk` says so.
            return false;
        }
        let (what, hint) = if walk {
            (
                "the walk's page",
                "the page draws the tape: walk a smaller one, or read the records with `:tape` \
                 (`:tape all` lists every one)",
            )
        } else {
            (
                "the tape's picture",
                "`:graph tape.dot` writes it as .dot, which has no limit; or draw a smaller tape",
            )
        };
        match crate::picture::too_many_to_draw(&self.interp.tape, what) {
            Some(message) => {
                self.refuse(message, hint.to_string());
                true
            }
            None => false,
        }
    }

    /// The open or last tape drawn as SVG, as `:graph FILE.svg` writes it.
    pub fn picture(&self) -> Option<String> {
        if self.interp.tape.records.is_empty() {
            return None;
        }
        Some(crate::picture::svg(&self.interp.tape, &self.sources))
    }

    /// The last tape's walk as one HTML page (`:graph FILE.html`), and as
    /// the text `:walk` shows.
    pub fn walk_page(&mut self) -> Option<(String, String)> {
        let steps = match self.interp.tape.walk_steps() {
            Some(steps) if !self.interp.tape_is_open() => steps,
            _ => return None,
        };
        let tape = &self.interp.tape;
        let page = crate::page::html(tape, &steps, "the prompt's last tape", &self.sources);
        let text = crate::graph::walk_text(tape, &steps, &self.sources).concat();
        Some((page, text))
    }

    /// Caps the work each statement may do and the size of every matrix:
    /// what tests that make entries up use, so that no entry runs for long.
    pub fn limit(&mut self, step_budget: u64, max_elements: usize) {
        self.interp.step_budget = Some(step_budget);
        self.interp.max_elements = max_elements;
    }

    /// The flag that Ctrl-C sets to interrupt a running statement.
    pub fn interrupt_flag(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.interp.interrupt.clone()
    }

    pub fn prompt(&self) -> &'static str {
        if self.walking.is_some() {
            WALK_PROMPT
        } else if !self.pending.is_empty() {
            CONTINUE_PROMPT
        } else if self.tape_started.is_some() {
            TAPE_PROMPT
        } else {
            PROMPT
        }
    }

    /// Ctrl-C at the prompt: the entry typed so far is dropped; at the
    /// walk's prompt, the walk stops.
    pub fn clear_line(&mut self) {
        self.pending.clear();
        if self.walking.is_some() {
            self.walk_on(true);
        }
    }

    /// Whether the walk is being stepped through (the `walk> ` prompt).
    pub fn is_walking(&self) -> bool {
        self.walking.is_some()
    }

    fn say(&mut self, text: &str) {
        self.release_value();
        if !text.is_empty() {
            self.fresh_line();
        }
        self.interp.print(text);
        let _ = self.interp.out.flush();
    }

    /// Ends the line the program's output left open (`Write('ab')`), so
    /// that an echo or a diagnostic starts a line of its own, as Python's
    /// prompt does; the program's own output goes on where it stopped.
    fn fresh_line(&mut self) {
        if self.interp.line_open {
            self.interp.print("\n");
        }
    }

    /// The line the output was on has ended without a newline from it:
    /// a terminal shows the Enter that ended the line typed after it, and
    /// a notebook's next cell shows its output apart.
    pub fn line_ended(&mut self) {
        self.interp.line_open = false;
    }

    /// A command that could not run as entered: an error of the entry,
    /// which a piped session's exit status counts.
    fn refuse(&mut self, message: String, hint: String) {
        let d = self.sources.unplaced(message).with_hint(hint);
        self.report(&d);
    }

    /// An unknown command `:word`, with the command it may have meant:
    /// one edit away at most, as the commands are short words that two
    /// edits turn into one another (`:nope` is not a misspelled `:tape`).
    fn unknown_command(&mut self, word: &str) {
        let lower = word.to_lowercase();
        let names =
            command_words(self.notebook).filter(|name| strsim::osa_distance(&lower, name) <= 1);
        // Else the one command it begins (`:q` for `:quit`).
        let begun = || {
            let mut begun = command_words(self.notebook).filter(|name| name.starts_with(&lower));
            begun
                .next()
                .filter(|_| begun.next().is_none() && !lower.is_empty())
        };
        let hint = match crate::diagnostic::near_miss(word, names).or_else(begun) {
            Some(close) => format!("did you mean `:{close}`? `:help` lists the commands"),
            None => "`:help` lists the commands".to_string(),
        };
        self.refuse(format!("there is no command `:{word}`"), hint);
    }

    fn report(&mut self, d: &Diagnostic) {
        self.report_all(std::slice::from_ref(d));
    }

    fn report_all(&mut self, errors: &[Diagnostic]) {
        let failed = errors.iter().any(|d| !d.warning);
        if failed {
            self.had_error = true;
            self.release_value();
        }
        if !errors.is_empty() {
            self.fresh_line();
        }
        let _ = self.interp.out.flush();
        let err = match &mut self.error_out {
            Some(out) if failed => out,
            _ => &mut self.err,
        };
        self.sources.render_all(errors, self.color, &mut **err);
        let _ = err.flush();
    }

    /// The input has ended (Ctrl-D, or the end of piped input). An entry
    /// still waiting for more lines is parsed as it stands, so its
    /// diagnostic says what was left open instead of it vanishing unread.
    pub fn end_of_input(&mut self) {
        if self.pending.discard || self.pending.text.trim().is_empty() {
            self.pending.clear();
            return;
        }
        let text = self.pending.take();
        let id = self.add_entry(&text);
        // An entry that ends where a statement is owed (`while c do`) would
        // parse with an empty one and run it: a loop with no body.
        let (tokens, _) = lex(&text, id);
        if let Some((owing @ (Token::Do | Token::Then | Token::Else), at)) = tokens.last() {
            let end = text.trim_end().len();
            let end = Span::new(id, end, end);
            let d = Diagnostic::new(end, "expected a statement, found the end of the input")
                .with_label(*at, format!("a statement must follow this {owing}"))
                .with_label(end, "the input ends here")
                .with_hint("write the statement, or `begin end` for one that does nothing");
            self.report_all(&[d]);
            return;
        }
        let (program, errors) = parse(&text, id);
        if errors.is_empty() {
            self.run_entry(&program);
        } else {
            self.report_all(&at_prompt(errors));
        }
        self.show_warnings();
    }

    /// The session ends (piped input ran out, Ctrl-D): a tape still open
    /// at the prompt is said to have been left open. (A notebook's cell
    /// ends its input but not the session, whose tape may go on in the
    /// next cell.)
    pub fn end_of_session(&mut self) {
        self.end_of_input();
        if let Some(span) = self.tape_started {
            let warning = Diagnostic::warning(span, "the input ended with this tape still open")
                .with_label(span, "no `end;` closed it, so it was never walked")
                .with_hint("close a tape with `end;` to walk it and read its blame");
            self.report_all(&[warning]);
        }
    }

    /// Takes lines until they run out or one is `:quit`, then ends the
    /// input: piped input, read as it comes.
    pub fn take_lines(&mut self, lines: impl Iterator<Item = String>) {
        for line in lines {
            if self.quit {
                return;
            }
            self.line(line.trim_end_matches(['\n', '\r']));
        }
        if !self.quit {
            self.end_of_session();
        }
    }

    /// Takes one line of input, and shows the warnings it gave.
    pub fn line(&mut self, line: &str) {
        if self.walking.is_some() {
            self.walk_on(line.trim() == "q");
            return;
        }
        self.take_line(line);
        self.show_warnings();
    }

    /// `:walk`: the first step of the last tape's walk.
    fn walk(&mut self) {
        let steps = match self.interp.tape.walk_steps() {
            Some(steps) if !self.interp.tape_is_open() => steps,
            _ => {
                self.refuse(
                    "there is no walked tape yet".to_string(),
                    "close a tape with `end;` first; then `:walk` steps through its walk"
                        .to_string(),
                );
                return;
            }
        };
        let text = crate::graph::walk_text(&self.interp.tape, &steps, &self.sources);
        if !self.stepping {
            let all: String = text.concat();
            self.say(&all);
            self.say("walk done: every record's blame is complete\n");
            return;
        }
        self.walking = Some((text, 0));
        self.walk_on(false);
    }

    /// The next step of the walk, or the end of it.
    fn walk_on(&mut self, stop: bool) {
        let Some((steps, shown)) = self.walking.take() else {
            return;
        };
        if stop {
            self.say(&format!(
                "walk stopped after {shown} of {} steps\n",
                steps.len()
            ));
            return;
        }
        match steps.get(shown) {
            Some(step) => {
                self.say(step);
                if shown + 1 == steps.len() {
                    self.say("walk done: every record's blame is complete\n");
                } else {
                    if shown == 0 {
                        self.say("(Enter: the next step; q: stop)\n");
                    }
                    self.walking = Some((steps, shown + 1));
                }
            }
            None => self.say("walk done\n"),
        }
    }

    /// Shows the interpreter's warnings that are not shown yet.
    fn show_warnings(&mut self) {
        for notice in std::mem::take(&mut self.interp.notices) {
            // One write for the line and its end, which a notebook would
            // otherwise get as two outputs.
            let _ = self.err.write_all(format!("{notice}\n").as_bytes());
        }
        if !self.interp.warnings.is_empty() {
            let warnings = std::mem::take(&mut self.interp.warnings);
            self.report_all(&warnings);
        }
    }

    fn take_line(&mut self, line: &str) {
        let trimmed = line.trim();
        if self.pending.is_empty() {
            if trimmed.is_empty() {
                return;
            }
            if let Some(command) = trimmed.strip_prefix(':') {
                self.command(command);
                return;
            }
        }
        self.pending.push_line(line);
        if self.pending.discard {
            if !self.pending.goes_on() {
                self.pending.clear();
            }
            return;
        }
        // `tape` alone opens a tape at the prompt; with one open already it
        // is refused at once (it would otherwise wait for its own `end`,
        // taking every line and command typed meanwhile).
        if self.pending.is_word("tape") {
            let span = self.keyword_entry(4);
            if self.tape_started.is_some() {
                self.report(&tape_in_prompt_tape(span, self.after_failure()));
                return;
            }
            let before = self.interp.snapshot();
            match self.interp.open_tape(span) {
                Ok(()) => {
                    self.tape_started = Some(span);
                    self.before_tape = Some(before);
                }
                Err(Stop::Error(d)) => self.report(&d),
                Err(Stop::Interrupted) => {}
            }
            return;
        }
        if self.pending.is_word("end") && self.tape_started.is_some() {
            let span = self.keyword_entry(3);
            self.close_tape(span, false);
            return;
        }
        // `end;` with more after it on its line: the tape closes, then the
        // rest is taken as the line that follows, in its own columns.
        if self.tape_started.is_some()
            && let Some((end_at, rest_at)) = self.pending.after_end()
        {
            let text = self.pending.take();
            let span = Span::new(self.add_entry(&text), end_at, end_at + 3);
            let blanks: String = text[..rest_at]
                .chars()
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let rest = format!("{blanks}{}", text[rest_at..].trim_end_matches('\n'));
            if self.close_tape(span, true) {
                self.take_line(&rest);
            } else {
                // The entry the rest begins is read to its end, and dropped.
                self.pending.push_line(&rest);
                self.pending.discard = true;
                if !self.pending.goes_on() {
                    self.pending.clear();
                }
            }
            return;
        }
        if self.pending.goes_on() {
            return;
        }
        let text = self.pending.take();
        let id = self.add_entry(&text);
        let (program, mut errors) = parse(&text, id);
        if !errors.is_empty() {
            // An `end` that would close the prompt's tape, but does not
            // start its line (or has no `;`): it is closed by an `end;`
            // that starts one.
            if self.tape_started.is_some() {
                for d in &mut errors {
                    if text
                        .get(d.span.start..d.span.end)
                        .is_some_and(|word| word.eq_ignore_ascii_case("end"))
                    {
                        d.hints = vec![
                            "the tape opened at the prompt is closed by an `end;` that starts its \
                             line (what follows it on the line runs after the walk); put what \
                             comes before it on the line above"
                                .to_string(),
                        ];
                    }
                }
            }
            self.report_all(&at_prompt(errors));
            return;
        }
        self.run_entry(&program);
    }

    /// Takes the finished entry that is one keyword (`tape` or `end`, of
    /// `len` letters) and returns the keyword's span in its new source.
    fn keyword_entry(&mut self, len: usize) -> Span {
        let text = self.pending.take();
        let id = self.add_entry(&text);
        // As lexed: a comment may stand before it.
        let start = lex(&text, id).0.first().map_or(0, |(_, span)| span.start);
        Span::new(id, start, start + len)
    }

    fn known(&self) -> Known {
        Known {
            globals: self.interp.globals.keys().cloned().collect(),
            routines: self
                .interp
                .routines
                .iter()
                .map(|(n, r)| (n.clone(), (r.is_function, r.params.len())))
                .collect(),
            var_params: self
                .interp
                .routines
                .iter()
                .map(|(n, r)| {
                    let by_ref = (0..r.params.len()).filter(|&i| r.params[i].by_ref);
                    (n.clone(), by_ref.collect())
                })
                .collect(),
            routine_decls: {
                let mut decls: Vec<_> = self.interp.routines.values().cloned().collect();
                decls.sort_by(|a, b| a.name.text.cmp(&b.name.text));
                decls
            },
        }
    }

    fn run_entry(&mut self, program: &Program) {
        let mut errors = crate::eval::constants::check_program(program, &self.known(), true).errors;
        if self.tape_started.is_some() {
            let left = self.after_failure();
            errors.extend(program.body.iter().filter_map(|s| match &s.kind {
                StmtKind::Tape { .. } => {
                    Some(tape_in_prompt_tape(errors::tape_keyword(s.span), left))
                }
                _ => None,
            }));
        }
        if let Some(first) = program.body.first() {
            let text = self.sources.text(first.span.source);
            errors = check::layout::among_errors(errors, &program.body, text);
        }
        let failed = errors.iter().any(|d| !d.warning);
        self.report_all(&errors);
        if failed {
            return;
        }
        let before = self.interp.snapshot();
        self.interp.take_in(program);
        for (k, stmt) in program.body.iter().enumerate() {
            let outcome = self.run_statement(stmt);
            match outcome {
                Ok(()) => {}
                Err(Stop::Error(d)) => {
                    self.interp.restore(before);
                    // What ran before it and showed its value is undone
                    // too, and a routine it said was defined.
                    let ran = program.body[..k]
                        .iter()
                        .any(|s| !matches!(s.kind, StmtKind::Empty));
                    // A notebook cell undone whole says so itself, in
                    // its own words: it is told, and says it once.
                    self.ran_before_error |= ran;
                    let d = if ran && self.undone_whole_to.is_none() {
                        (*d).with_note(
                            "the statements before it in this entry ran and are undone too: the entry changed nothing",
                        )
                    } else {
                        *d
                    };
                    self.report(&d);
                    return;
                }
                Err(Stop::Interrupted) => {
                    // What completed is kept, on a tape open at the prompt
                    // too: its records stay, and the variables their
                    // values. A loop is interrupted only at the head of a
                    // turn or of a routine call, so at most the records of
                    // the expression that call was in lead to nothing.
                    let prompt_tape = self.tape_started.is_some();
                    if !prompt_tape {
                        // A tape the statement itself opened is not open
                        // any more.
                        self.interp.stop_open_tape();
                    }
                    let counter = match &stmt.kind {
                        StmtKind::For { var, .. } => self
                            .interp
                            .globals
                            .get(&var.text)
                            .and_then(|slot| slot.value.as_ref())
                            .map(|v| format!(" at {} = {}", var.text, format::value(v))),
                        _ => None,
                    };
                    let tape = if prompt_tape {
                        ", and the tape is still open"
                    } else {
                        ""
                    };
                    self.interrupted_with(format!(
                        "interrupted{}: what completed is kept{tape}",
                        counter.unwrap_or_default()
                    ));
                    return;
                }
            }
        }
    }

    fn run_statement(&mut self, stmt: &crate::syntax::tree::Stmt) -> Result<(), Stop> {
        if !matches!(stmt.kind, StmtKind::Empty) {
            self.release_value();
        }
        let recorded = if self.interp.tape_is_open() {
            " (recorded)"
        } else {
            ""
        };
        match &stmt.kind {
            StmtKind::Assign { target, .. } => {
                self.interp.exec(stmt)?;
                let v = self
                    .interp
                    .globals
                    .get(&target.text)
                    .and_then(|s| s.value.clone());
                // Only Reals and matrices go on the tape.
                let recorded = if v
                    .as_ref()
                    .is_some_and(|v| self.interp.tape.find(v.tag()).is_some())
                {
                    recorded
                } else {
                    ""
                };
                if let Some(v) = v {
                    let text = echo(&target.text, &v, recorded);
                    self.say(&text);
                }
            }
            // A whole tape in one entry says it has closed, as `end;` at
            // the `tape>` prompt does.
            StmtKind::Tape { body, end } => {
                let (name, value) = self.interp.run_tape(stmt.span, body, *end)?;
                self.say_tape_closed(&name, &value);
            }
            StmtKind::Routine(r) => {
                self.interp.exec(stmt)?;
                let kind = if r.is_function {
                    "function"
                } else {
                    "procedure"
                };
                self.say(&format!("{kind} {} defined\n", r.name.text));
            }
            StmtKind::Expr(e)
                if !matches!(e.kind, ExprKind::Call { .. } | ExprKind::Name(_))
                    || is_value(&self.interp, e) =>
            {
                self.interp.set_statement(stmt.span);
                if let Some(v) = self.interp.exec_expr(e)? {
                    let text = match &v {
                        // A summary leaves out rows and columns: its shape
                        // comes first, as an assignment's echo gives it.
                        Value::Matrix(m, _) if format::echo_leaves_out(m) => {
                            format!("{}×{}\n{}", m.nrows(), m.ncols(), format::echo_rows(m))
                        }
                        Value::Matrix(m, _) => format::echo_rows(m),
                        other => format!("{}\n", format::value(other)),
                    };
                    if self.hold_values {
                        self.held = Some(text);
                    } else {
                        self.say(&text);
                    }
                    if let Some(hint) = comparison_hint(e) {
                        self.report(&hint);
                    }
                }
            }
            _ => {
                self.interp.last_nudge = None;
                self.interp.exec(stmt)?;
                let _ = self.interp.out.flush();
                // A `Nudge` statement says which variable it moved, and by
                // what rate (the one the call evaluated).
                let nudged = match &stmt.kind {
                    StmtKind::Expr(e) => match &e.kind {
                        ExprKind::Call { name, args } if &*name.text == "Nudge" => {
                            args.first().map(|a| &a.value.kind)
                        }
                        _ => None,
                    },
                    _ => None,
                };
                let rate = self.interp.last_nudge.take();
                if let (Some(ExprKind::Name(variable)), Some(rate)) = (nudged, rate) {
                    self.say(&format!(
                        "{} nudged by {} · blame\n",
                        variable.text,
                        format::value(&rate)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The line that says a tape has closed, what it holds and its result.
    fn say_tape_closed(&mut self, name: &str, value: &Value) {
        let n = self.interp.tape.records.len();
        let operations = self.interp.tape.operation_count();
        let text = format!(
            "tape closed: {n} record{} ({} lea{}, {operations} operation{}), result {name} = {}; blame is ready\n",
            if n == 1 { "" } else { "s" },
            n - operations,
            if n - operations == 1 { "f" } else { "ves" },
            if operations == 1 { "" } else { "s" },
            match value {
                Value::Matrix(m, _) => format::real(m[(0, 0)], 6),
                other => format::value(other),
            }
        );
        self.say(&text);
    }

    /// Closes the prompt's tape at `end`, and says whether it closed;
    /// `more`: the line goes on after the `end;`, and does not run if the
    /// tape stays open.
    fn close_tape(&mut self, end: Span, more: bool) -> bool {
        let before = self.interp.snapshot();
        let not_run =
            "what follows `end;` on its line did not run, nor the lines that go on with it";
        match self.interp.close_tape(end) {
            Ok((name, value)) => {
                self.tape_started = None;
                self.before_tape = None;
                self.say_tape_closed(&name, &value);
                true
            }
            Err(Stop::Error(d)) => {
                self.interp.restore(before);
                let note = match self.after_failure() {
                    Left::Same => {
                        "the tape is still open (`tape>`): assign the value to end on to a \
                         variable and enter `end;` again, or `:drop` to drop the tape and put \
                         every variable back as it was before it"
                    }
                    Left::Nothing => {
                        "this cell is undone whole, the `tape` it opened too, so no tape is \
                         open now: mend the cell and run it again"
                    }
                    Left::Earlier => {
                        "this cell is undone whole, the `tape` it opened too, so the tape open \
                         before the cell is open again (`tape>`): mend the cell and run it again"
                    }
                };
                let mut d = d.with_note(note);
                if more {
                    d = d.with_note(not_run);
                }
                self.report(&d);
                false
            }
            Err(Stop::Interrupted) => {
                self.interp.restore(before);
                let more = if more {
                    format!("; {not_run}")
                } else {
                    String::new()
                };
                self.interrupted_with(format!(
                    "interrupted: the walk stopped, no blame was kept; the tape is still open \
                     (`tape>`): enter `end;` again, or `:drop`{more}"
                ));
                false
            }
        }
    }

    /// `:help NAME`: the builtin's declaration, as a reader wants it.
    fn help(&mut self, name: &str) {
        if let Some(help) = crate::syntax::lexer::word_help(name)
            .or_else(|| crate::syntax::lexer::punctuation_help(name))
        {
            self.say(&help);
            return;
        }
        if let Some(command) = name.strip_prefix(':') {
            let word = command.split_whitespace().next().unwrap_or("");
            match command_help(word, self.notebook) {
                Some(line) => self.say(&format!("{line}\n")),
                None => self.unknown_command(word),
            }
            return;
        }
        if name == "Inf" {
            self.say(&format!("Inf: Real\n  {}\n", crate::declarations::INF_HELP));
            return;
        }
        if name == "Result" {
            self.say(&format!("Result: {}\n", crate::declarations::RESULT_HELP));
            return;
        }
        if let Some(ty) = crate::syntax::tree::TypeName::from_name(name) {
            self.say(&ty.help_line());
            return;
        }
        if let Some(help) = self.routine_help(name) {
            self.say(&help);
            return;
        }
        if matches!(name, "//" | "{" | "}" | "(*" | "*)") {
            self.say(
                "comments: `//` to the end of its line; `{ ... }` and `(* ... *)` over any \
                 lines, ending at the first closer (they do not nest)\n",
            );
            return;
        }
        let foreign = crate::syntax::lexer::foreign_operator(name).filter(|(op, _)| *op == name);
        if let Some((op, ours)) = foreign {
            let (message, hint) = crate::syntax::lexer::foreign_operator_words(op, ours);
            let d = self.sources.unplaced(message).with_hint(hint);
            self.report(&d);
            return;
        }
        match crate::declarations::find(name) {
            Some(b) => self.say(&b.help()),
            None => {
                let routines: Vec<String> = self.interp.routines.keys().cloned().collect();
                let names = crate::declarations::BUILTINS
                    .iter()
                    .map(|b| b.name)
                    .chain(
                        crate::syntax::lexer::KEYWORDS
                            .iter()
                            .map(|(word, _, _)| *word),
                    )
                    .chain(crate::syntax::lexer::OPERATORS.iter().map(|(op, _)| *op))
                    .chain(routines.iter().map(String::as_str));
                let mut d = self.sources.unplaced(format!(
                    "there is no builtin, keyword, operator or routine called `{name}`"
                ));
                d = match crate::diagnostic::near_miss(name, names) {
                    _ if matches!(name, "quit" | "exit" | "q") && self.notebook => {
                        d.with_hint(QUIT_IN_NOTEBOOK)
                    }
                    _ if matches!(name, "quit" | "exit" | "q") => {
                        d.with_hint("the prompt ends with `:quit` (or Ctrl-D)")
                    }
                    Some(close) => d.with_hint(format!("did you mean `{close}`?")),
                    None => d.with_hint(
                        "`:help` alone lists the commands; docs/BUILTINS.md lists every builtin",
                    ),
                };
                self.report(&d);
            }
        }
    }

    fn command(&mut self, command: &str) {
        let (name, rest) = command
            .split_once(char::is_whitespace)
            .unwrap_or((command, ""));
        let rest = rest.trim();
        if !rest.is_empty()
            && matches!(
                name,
                "quit" | "q" | "vars" | "tape" | "drop" | "reset" | "walk"
            )
            && !(name == "tape" && rest == "all")
        {
            if name == "tape" {
                self.refuse(
                    "`:tape` takes nothing or `all` after it, so it did not run".to_string(),
                    "enter `:tape` alone, or `:tape all` to list every record".to_string(),
                );
            } else {
                self.refuse(
                    format!("`:{name}` takes nothing after it, so it did not run"),
                    format!("enter `:{name}` alone"),
                );
            }
            return;
        }
        match name {
            "help" if rest.trim().is_empty() => {
                self.say(if self.notebook { NOTEBOOK_HELP } else { HELP })
            }
            "help" => self.help(rest.trim()),
            "quit" | "q" => self.quit = true,
            "vars" => {
                let mut names: Vec<&String> = self.interp.globals.keys().collect();
                names.sort();
                let mut text = String::new();
                for name in names {
                    let slot = &self.interp.globals[name];
                    let what = match &slot.value {
                        Some(Value::Matrix(m, _)) => format!("{}×{}", m.nrows(), m.ncols()),
                        Some(v) => v.type_name().to_string(),
                        None => "no value yet".to_string(),
                    };
                    text.push_str(&format!("{name} : {what}\n"));
                }
                if text.is_empty() {
                    text.push_str("no variables yet\n");
                }
                self.say(&text);
            }
            "tape" => {
                let mut text = String::new();
                let records = &self.interp.tape.records;
                let names: Vec<String> = records
                    .iter()
                    .map(|r| match crate::picture::shown_name(r, &self.sources) {
                        Some(name) => name,
                        // Named as pictures and `:walk` name it.
                        None if r.op == crate::tape::Op::Leaf => "constant".into(),
                        None => "-".into(),
                    })
                    .collect();
                let width = names
                    .iter()
                    .map(|n| n.chars().count())
                    .max()
                    .unwrap_or(0)
                    .max(8);
                // A long tape (a loop inside it) is shown as a long matrix
                // is: its first and last records, and how many between.
                let shown = |k: usize| {
                    rest == "all"
                        || records.len() <= LISTED_RECORDS
                        || k < LISTED_RECORDS - LISTED_LAST
                        || k >= records.len() - LISTED_LAST
                };
                for (k, (r, name)) in records.iter().zip(&names).enumerate() {
                    if !shown(k) {
                        if shown(k - 1) {
                            text.push_str(&format!(
                                "... {} records not shown (`:tape all` lists every one)\n",
                                records.len() - LISTED_RECORDS
                            ));
                        }
                        continue;
                    }
                    let (rows, cols) = r.value.shape();
                    let shape = match r.value {
                        crate::tape::Tensor::Scalar(_) => "number".to_string(),
                        _ => format!("{rows}×{cols}"),
                    };
                    let inputs: Vec<String> =
                        r.inputs.iter().map(|i| format!("#{}", i + 1)).collect();
                    text.push_str(&format!(
                        "#{:<3} {name:<width$} {:<16} {:<12} {}\n",
                        k + 1,
                        r.op.name(),
                        inputs.join(" "),
                        shape
                    ));
                }
                if text.is_empty() {
                    text.push_str(if self.interp.tape.open {
                        "the tape is open and has recorded nothing yet\n"
                    } else {
                        "no tape yet\n"
                    });
                }
                self.say(&text);
            }
            "graph" if !rest.is_empty() => {
                if self.interp.tape.records.is_empty() {
                    self.refuse(
                        "there is no tape yet to draw".to_string(),
                        "record one with `tape ... end;` (an open tape is drawn as it stands)"
                            .to_string(),
                    );
                } else {
                    match crate::graph::write(
                        &mut self.interp.tape,
                        std::path::Path::new(rest),
                        "the prompt's last tape",
                        &self.sources,
                    ) {
                        Ok(()) => self.say(&format!("wrote {rest}\n")),
                        Err(message) => {
                            let d = self.sources.unplaced(message);
                            self.report(&d);
                        }
                    }
                }
            }
            "blame" if !rest.is_empty() && !self.interp.is_variable(rest) => {
                // Offer only names whose blame can be read.
                let on_tape = self.blamable();
                let on_tape: Vec<&str> = on_tape.iter().map(String::as_str).collect();
                // Any one-letter name is a near miss of any other.
                let close = crate::diagnostic::near_miss(rest, on_tape.iter().copied())
                    .filter(|_| rest.chars().count() > 1);
                let hint = match close {
                    Some(close) => format!("did you mean `{close}`?"),
                    None if on_tape.is_empty() => {
                        "no variable holds a value of a tape yet: run a tape first".to_string()
                    }
                    None => {
                        format!("blame can be read for {}", on_tape.join(", "))
                    }
                };
                // Not a name at all (`:blame 1+2`): the command takes one.
                let name = rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                let d = if name {
                    self.sources
                        .unplaced(format!("unknown variable `{rest}`"))
                        .with_hint(hint)
                } else {
                    self.sources
                        .unplaced(format!("`:blame` takes a variable's name, not `{rest}`"))
                        .with_hint(
                            "give the expression a name inside the tape (`e := ...;`), then `:blame e`",
                        )
                };
                self.report(&d);
            }
            "blame" if !rest.is_empty() => {
                // Runs `Blame(NAME);`, made here rather than parsed, against
                // the command as its text: an error points into what was
                // typed, not into a statement nobody wrote.
                let typed = format!(":blame {rest}");
                let id = self.add_entry(&typed);
                let at = |from: usize| Span::new(id, from, typed.len());
                let variable = Expr {
                    kind: ExprKind::Name(Name::new(rest, at(7))),
                    span: at(7),
                };
                let call = Expr {
                    kind: ExprKind::Call {
                        name: Name::new("Blame", Span::new(id, 1, 6)),
                        args: vec![Arg {
                            value: variable,
                            width: None,
                            decimals: None,
                        }],
                    },
                    span: at(0),
                };
                let program = Program {
                    name: None,
                    body: vec![Stmt {
                        kind: StmtKind::Expr(call),
                        span: at(0),
                    }],
                };
                self.run_entry(&program);
            }
            "load" if !rest.is_empty() => {
                let path = PathBuf::from(rest);
                match crate::read_program(&path) {
                    Ok(bytes) => {
                        self.entries += 1;
                        match crate::decode_source(
                            &mut self.sources,
                            &path.display().to_string(),
                            bytes,
                        ) {
                            Ok(id) => {
                                let text = self.sources.text(id).to_string();
                                let (program, errors) = parse(&text, id);
                                if errors.is_empty() {
                                    // The file's paths start at its folder,
                                    // as under `tapec run`: its routines'
                                    // too when called later at the prompt.
                                    let folder =
                                        path.parent().map(PathBuf::from).unwrap_or_default();
                                    let folder = if folder.as_os_str().is_empty() {
                                        PathBuf::from(".")
                                    } else {
                                        folder
                                    };
                                    self.interp.folders.push((id, folder.clone()));
                                    // While it runs, a routine of the
                                    // session it calls starts there too.
                                    let base = std::mem::replace(&mut self.interp.base_dir, folder);
                                    let from = std::mem::replace(
                                        &mut self.interp.paths_from,
                                        "the loaded file's folder",
                                    );
                                    self.run_entry(&program);
                                    self.interp.base_dir = base;
                                    self.interp.paths_from = from;
                                } else {
                                    self.report_all(&errors);
                                }
                            }
                            Err(d) => self.report(&d),
                        }
                    }
                    Err(message) => {
                        let d = self.sources.unplaced(message);
                        self.report(&d);
                    }
                }
            }
            "drop" => match self.before_tape.take() {
                Some(before) => {
                    // The routines declared while the tape was open stay:
                    // what is dropped is the tape and what it changed.
                    let routines = self.interp.routines.clone();
                    self.interp.restore(before);
                    let mut kept: Vec<&str> = routines
                        .iter()
                        .filter(|(name, r)| {
                            !self
                                .interp
                                .routines
                                .get(*name)
                                .is_some_and(|old| std::rc::Rc::ptr_eq(old, r))
                        })
                        .map(|(name, _)| name.as_str())
                        .collect();
                    kept.sort_unstable();
                    let kept = match kept.as_slice() {
                        [] => String::new(),
                        [one] => format!("; `{one}`, declared since, stays"),
                        [rest @ .., last] => format!(
                            "; {} and `{last}`, declared since, stay",
                            rest.iter()
                                .map(|n| format!("`{n}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    };
                    self.interp.routines = routines;
                    self.tape_started = None;
                    self.say(&format!(
                        "tape dropped: every variable is as it was before it{kept}\n"
                    ));
                }
                None => self.say("no tape is open at the prompt\n"),
            },
            "reset" => {
                let color = self.color;
                let err = std::mem::replace(&mut self.err, Box::new(std::io::sink()));
                // The new session keeps the old one's Ctrl-C flag, which a
                // handler set once holds, and where its errors and values go.
                let interrupt = self.interrupt_flag();
                let error_out = self.error_out.take();
                let hold_values = self.hold_values;
                let had_error = self.had_error;
                let undone_whole_to = self.undone_whole_to;
                let notices_to = self.notices_to;
                let notebook = self.notebook;
                let line_open = self.interp.line_open;
                *self = Repl::new(self.make_out, err, color);
                self.notebook = notebook;
                self.interp.line_open = line_open;
                self.had_error = had_error;
                self.undone_whole_to = undone_whole_to;
                if let Some(to) = notices_to {
                    self.notices_at_once(to);
                }
                self.interp.interrupt = interrupt;
                self.error_out = error_out;
                self.hold_values = hold_values;
                self.say("reset: no variables, routines or tape\n");
            }
            "walk" => self.walk(),
            "blame" => self.refuse(
                "`:blame` needs a variable's name".to_string(),
                "`:blame NAME`, for example `:blame w`".to_string(),
            ),
            "graph" => self.refuse(
                "`:graph` needs a file to draw into".to_string(),
                "`:graph tape.dot` (or `.svg`, `.png`, `.html`)".to_string(),
            ),
            "load" => self.refuse(
                "`:load` needs a program file".to_string(),
                "`:load FILE`, for example `:load programs/knob.tape`".to_string(),
            ),
            _ => self.unknown_command(name),
        }
    }
}

/// How many bytes the parses of one entry may read in all while lines
/// that cannot end it are still parsed (about a hundred short lines): up
/// to it, a mistake early in a routine's header, a bracket or an `if`'s
/// condition is told at the line it is on; past it, such lines are not
/// parsed, and a long entry is parsed again only where it may end.
const PARSED_AT_ONCE: usize = 64 * 1024;

/// An entry still being typed, and what its lines leave open so far.
///
/// Whether an entry goes on is decided on its tokens where they settle it
/// (`cannot_end`): a `begin`, `tape`, `repeat` or `case x of` not yet
/// closed, an open
/// comment, a last token that leaves something hanging (`do`, `then`,
/// `:=`, `,`, an operator), an open `(` or `[`, a `procedure` or
/// `function` whose `begin` has not come, a `while` or `for` whose `do`
/// has not come, a `var` whose names have no `:` yet, an `if` that may
/// still take an `else`. Otherwise the entry is parsed, and it goes on if
/// the parser stops at its end. An entry with an open block or a hanging
/// last token is never parsed; one that cannot end for the other reasons
/// is parsed anyway until its parses have read [`PARSED_AT_ONCE`] bytes,
/// so that a mistake early in a short entry is told at once. Each line is lexed once, and an open
/// comment is only searched for its closer, so a routine, a bracket, a
/// `var`'s names or an `else if` chain of thousands of lines is lexed
/// once and, past that size, parsed once more, at its last line.
#[derive(Default)]
struct Pending {
    text: String,
    /// How many lines `text` has.
    lines: usize,
    /// How far `text` is lexed: to the end of its last line, or to where a
    /// comment open at its end begins.
    lexed: usize,
    /// How far `text` has been read: the lines after it are new.
    read: usize,
    /// What closes the comment open at the end of `text`, if one is.
    comment: Option<&'static str>,
    /// Whether the entry is read to its end and dropped, not run: the rest
    /// of a line whose `end;` left the tape open.
    discard: bool,
    /// Blocks opened and not yet closed in the part lexed.
    open_blocks: usize,
    /// `(` and `[` opened and not yet closed (below zero: more closed).
    open_brackets: isize,
    /// Whether a `procedure` or `function` has come with no `begin` after it.
    in_header: bool,
    /// Whether a `while` or `for` has come with no `do` after it.
    in_loop_head: bool,
    /// `if`s outside every block since the last `;` that ends a statement
    /// there (not one in a routine's header or between the groups of a
    /// `var` section), less the `else`s there: those that no `else` has
    /// answered yet.
    open_ifs: usize,
    /// Whether the last tokens are names that a `:` may end, as in a
    /// group of a `var` section, and what began them.
    names: Names,
    /// The last token of the part lexed.
    last: Option<Token>,
    /// Where Pascal's `case x of` may be opening, which the language does
    /// not have: its `of` opens a block that its `end` closes, as the
    /// parser's recovery skips `case ... of ... end` whole, so the labels
    /// and the `end` are one entry with the one error at `case`.
    case_head: CaseHead,
    /// How many bytes the parses of this entry have read.
    parsed: usize,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    fn clear(&mut self) {
        *self = Pending::default();
    }

    fn take(&mut self) -> String {
        std::mem::take(self).text
    }

    fn push_line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
        self.lines += 1;
    }

    /// Whether the entry is the prompt's own `word` (`tape`, `end`): that
    /// word alone, but for blanks, comments and final `;`s. Only a first line is
    /// looked at: the lines after it would add only blanks and `;`s, so
    /// the first would have been the word already.
    fn is_word(&self, word: &str) -> bool {
        if self.lines != 1 {
            return false;
        }
        // As lexed, so that a comment after it (`end; // done`) is no part
        // of the line, as anywhere else.
        let (tokens, errors) = lex(&self.text, 0);
        let keyword = match word {
            "tape" => Token::Tape,
            _ => Token::End,
        };
        errors.is_empty()
            && matches!(tokens.split_first(), Some(((first, _), rest))
                if *first == keyword && rest.iter().all(|(t, _)| *t == Token::Semi))
    }

    /// Where `end` is and where the rest of the line starts, if the entry
    /// is a first line that starts with `end;` and goes on after it (more
    /// than `;`s and comments). A mistake in the rest is the rest's.
    fn after_end(&self) -> Option<(usize, usize)> {
        if self.lines != 1 {
            return None;
        }
        let (tokens, errors) = lex(&self.text, 0);
        match tokens.as_slice() {
            [(Token::End, end), (Token::Semi, semi), rest @ ..]
                if errors.iter().all(|d| d.span.start >= semi.end) =>
            {
                rest.iter()
                    .find(|(t, _)| *t != Token::Semi)
                    .map(|(_, span)| (end.start, span.start))
            }
            _ => None,
        }
    }

    /// Whether the entry goes on to the next line, now that a line came.
    fn goes_on(&mut self) -> bool {
        if !self.lex_new_lines() {
            return true;
        }
        if self.cannot_end() {
            // An open block or a hanging token waits unparsed; the other
            // reasons are parsed while the entry is short, for a mistake
            // before them.
            let waits = self.open_blocks > 0 || hangs(self.last.as_ref());
            if waits || self.parsed >= PARSED_AT_ONCE {
                return true;
            }
        }
        self.parsed += self.text.len();
        let (program, errors) = parse(&self.text, 0);
        if errors.is_empty() {
            // `if c then s` with no `;` after it may still take an `else`
            // on the next line, as it would in a file.
            return self.last != Some(Token::Semi)
                && program.body.last().is_some_and(else_may_follow);
        }
        // A routine's header with a mistake, and nothing after it yet:
        // its body comes on the next lines, and is read with it rather
        // than run alone (`Result := a * 2` without its `a`). A line after
        // the header that does not start the body ends the entry.
        if self.in_header && header_is_last(&self.text) {
            return true;
        }
        errors
            .iter()
            .any(|d| d.span.start >= self.text.trim_end().len())
    }

    /// Whether the tokens so far show that the entry cannot be complete
    /// yet: it could not be parsed as it stands, or it would be and still
    /// go on. In a text that parses, every `(` and `[` is closed, a
    /// routine's header is followed by its `begin`, a loop's head by its
    /// `do`, and a `var`'s names by a `:` (a `var` parameter's, within
    /// brackets, by a `:` or a `)`). And an `else` goes with the nearest
    /// `if` before it that has none, so an `if` outside every block that
    /// no `else` answers runs to the end of the text, whose last statement
    /// can then still take an `else` (`else_may_follow`), unless a `;`
    /// outside a block ends its statement after it: not one in a routine's
    /// header, nor one between the groups of a `var` section, which names
    /// and a `:` follow.
    fn cannot_end(&self) -> bool {
        self.open_blocks > 0
            || hangs(self.last.as_ref())
            || self.open_brackets > 0
            || self.in_header
            || self.in_loop_head
            || self.open_ifs > 0
            || self.names == Names::AfterVar
    }

    /// Lexes the lines not lexed yet and notes what their tokens open and
    /// close; false while a comment is still open at the end of the entry.
    fn lex_new_lines(&mut self) -> bool {
        let new = std::mem::replace(&mut self.read, self.text.len());
        if let Some(closer) = self.comment {
            // Only a new line can close it: the lines before were read,
            // and a closer is never split over two lines.
            if !self.text[new..].contains(closer) {
                return false;
            }
            // Lexed again from where it opened, once.
            self.comment = None;
        }
        let rest = &self.text[self.lexed..];
        let (mut tokens, _) = lex(rest, 0);
        let mut lexed = self.text.len();
        if let Some((Token::Error, span)) = tokens.last() {
            let from = &rest[span.start..];
            let closer = if from.starts_with('{') {
                Some("}")
            } else if from.starts_with("(*") {
                Some("*)")
            } else {
                None
            };
            if closer.is_some() && span.end >= rest.trim_end().len() {
                self.comment = closer;
                lexed = self.lexed + span.start;
                tokens.pop();
            }
        }
        self.lexed = lexed;
        for (token, _) in tokens {
            self.case_head = self
                .case_head
                .after(&token, self.last.as_ref(), self.open_brackets);
            if self.case_head == CaseHead::Of {
                self.open_blocks += 1;
                self.case_head = CaseHead::None;
            }
            match token {
                Token::Begin => {
                    self.open_blocks += 1;
                    self.in_header = false;
                }
                Token::Tape | Token::Repeat => self.open_blocks += 1,
                Token::End | Token::Until => self.open_blocks = self.open_blocks.saturating_sub(1),
                Token::LParen | Token::LBracket => self.open_brackets += 1,
                Token::RParen | Token::RBracket => self.open_brackets -= 1,
                Token::Procedure | Token::Function => self.in_header = true,
                Token::While | Token::For => self.in_loop_head = true,
                Token::Do => self.in_loop_head = false,
                Token::If if self.open_blocks == 0 => self.open_ifs += 1,
                Token::Else if self.open_blocks == 0 => {
                    self.open_ifs = self.open_ifs.saturating_sub(1)
                }
                _ => {}
            }
            let after_name = matches!(self.last, Some(Token::Ident(_)));
            self.names = match token {
                Token::Var => Names::AfterVar,
                // A `;` in a routine's header is the routine's own.
                Token::Semi if self.open_blocks == 0 && !self.in_header => {
                    Names::AfterSemi(std::mem::take(&mut self.open_ifs))
                }
                Token::Ident(_) if !after_name => self.names,
                Token::Comma if after_name => self.names,
                Token::Colon if after_name => {
                    if let Names::AfterSemi(held) = self.names {
                        self.open_ifs = held;
                    }
                    Names::None
                }
                _ => Names::None,
            };
            self.last = Some(token);
        }
        self.comment.is_none()
    }
}

/// Whether the text's last routine header ends the text: it is whole, and
/// nothing follows the `;` after its parameters. A mistake in a header not
/// yet whole is told at once, as any in a short entry.
fn header_is_last(text: &str) -> bool {
    let (tokens, _) = lex(text, 0);
    let Some(start) = tokens
        .iter()
        .rposition(|(t, _)| matches!(t, Token::Procedure | Token::Function))
    else {
        return false;
    };
    let mut depth = 0isize;
    for (i, (token, _)) in tokens.iter().enumerate().skip(start) {
        match token {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth -= 1,
            Token::Semi if depth <= 0 => return i + 1 == tokens.len(),
            Token::Begin | Token::Var => return false,
            _ => {}
        }
    }
    false
}

/// How far the tokens of an entry have come into a `case x of`.
#[derive(Clone, Copy, Default, PartialEq)]
enum CaseHead {
    /// Not in one.
    #[default]
    None,
    /// Just after a `case` where a statement starts.
    Case,
    /// In what follows `case`, with this many brackets open at `case`.
    Head(isize),
    /// At the `of` that ends the head: a block opens.
    Of,
}

impl CaseHead {
    /// Where `token` leaves the head, coming after `last` with `brackets`
    /// open before it. A `case` opens one only where a statement starts,
    /// and not as a name given a value (`case := 1`); its `of` is the
    /// first at the `case`'s own depth (`case(of)` calls a `case`), before
    /// a `;`, `begin`, `tape` or `end`, which end a head as the parser's
    /// recovery takes it.
    fn after(self, token: &Token, last: Option<&Token>, brackets: isize) -> CaseHead {
        let is =
            |word: &str| matches!(token, Token::Ident(name) if name.eq_ignore_ascii_case(word));
        match self {
            _ if is("case") => {
                let starts = matches!(
                    last,
                    None | Some(
                        Token::Semi
                            | Token::Begin
                            | Token::Then
                            | Token::Else
                            | Token::Do
                            | Token::Tape
                            | Token::Repeat
                    )
                );
                if starts {
                    CaseHead::Case
                } else {
                    CaseHead::None
                }
            }
            CaseHead::Case
                if is("of")
                    || matches!(
                        token,
                        Token::Assign | Token::Semi | Token::Begin | Token::Tape | Token::End
                    ) =>
            {
                CaseHead::None
            }
            CaseHead::Case => CaseHead::Head(brackets),
            CaseHead::Head(depth) if is("of") && brackets == depth => CaseHead::Of,
            CaseHead::Head(_)
                if matches!(token, Token::Semi | Token::Begin | Token::Tape | Token::End) =>
            {
                CaseHead::None
            }
            other => other,
        }
    }
}

/// Where the last tokens of an entry are a list of names, one to each
/// comma, that a `:` may end: the names of a group of a `var` section.
#[derive(Clone, Copy, Default, PartialEq)]
enum Names {
    /// The last tokens are not such a list.
    #[default]
    None,
    /// After a `var`, which its names, a `:` and a type must follow.
    AfterVar,
    /// After a `;` outside every block and routine header, which set
    /// `open_ifs` from this to 0: if names and a `:` follow, the `;` is
    /// one between the groups of a `var` section, not an end of the
    /// statement, and the `if`s it closed are open again.
    AfterSemi(usize),
}

/// Whether a last token leaves something hanging, which the next line
/// must finish: `do`, `then`, `else`, `:=`, `,`, an operator, a `:`.
fn hangs(last: Option<&Token>) -> bool {
    matches!(
        last,
        Some(
            Token::Do
                | Token::Then
                | Token::Else
                | Token::Assign
                | Token::Comma
                | Token::Plus
                | Token::Minus
                | Token::Star
                | Token::Slash
                | Token::Div
                | Token::Mod
                | Token::And
                | Token::Or
                | Token::Not
                | Token::Eq
                | Token::Ne
                | Token::Lt
                | Token::Le
                | Token::Gt
                | Token::Ge
                | Token::Colon
        )
    )
}

/// A `tape` (at `span`) entered while a tape is open at the prompt;
/// `left`: what is open once the failure is undone.
fn tape_in_prompt_tape(span: Span, left: Left) -> Diagnostic {
    let mut d = errors::nested_tape(span);
    let hint = match left {
        Left::Same => {
            "a tape is still open at this prompt (`tape>`): `end;` closes it, `:drop` drops it \
             and puts every variable back as it was before it"
        }
        Left::Nothing => {
            "the tape open here was opened in this cell, which is undone whole, so no tape is \
             open now: close the first tape with `end;` before starting the next"
        }
        Left::Earlier => {
            "the tape open here was opened in this cell, which is undone whole, so the tape \
             open before the cell is open again: close a tape with `end;` before starting the \
             next"
        }
    };
    d.hints = vec![hint.to_string()];
    d
}

/// Whether an `else` written after `stmt` would belong to it: it ends in
/// an `if` without one (itself, or the last statement it runs).
fn else_may_follow(stmt: &crate::syntax::tree::Stmt) -> bool {
    use crate::syntax::tree::StmtKind;
    match &stmt.kind {
        StmtKind::If {
            otherwise: None, ..
        } => true,
        StmtKind::If {
            otherwise: Some(last),
            ..
        } => else_may_follow(last),
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => else_may_follow(body),
        _ => false,
    }
}

/// Whether a statement that names a routine or builtin gives a value.
fn is_value(interp: &Interpreter, e: &crate::syntax::tree::Expr) -> bool {
    let name = match &e.kind {
        ExprKind::Call { name, .. } | ExprKind::Name(name) => name,
        _ => return true,
    };
    if interp.is_variable(&name.text) {
        return true;
    }
    if let Some(b) = crate::declarations::find(&name.text) {
        return b.kind == crate::declarations::Kind::Function;
    }
    interp
        .routines
        .get(&*name.text)
        .is_some_and(|r| r.is_function)
}

/// What an assignment prints: `name : 2×2` and the rows, or `name = value`.
fn echo(name: &str, v: &Value, recorded: &str) -> String {
    match v {
        Value::Matrix(m, _) => format!(
            "{name} : {}×{}{recorded}\n{}",
            m.nrows(),
            m.ncols(),
            format::echo_rows(m)
        ),
        Value::Str(s) => format!("{name} = '{s}'{recorded}\n"),
        other => format!("{name} = {}{recorded}\n", format::value(other)),
    }
}

/// `x = 3` at the prompt compares and prints `false`: a learner who meant
/// to assign is told so.
fn comparison_hint(e: &crate::syntax::tree::Expr) -> Option<Diagnostic> {
    let ExprKind::Chain { first, rest } = &e.kind else {
        return None;
    };
    let (crate::syntax::tree::BinaryOp::Eq, op_span, _) = rest.first()? else {
        return None;
    };
    let ExprKind::Name(name) = &first.kind else {
        return None;
    };
    Some(
        Diagnostic::warning(
            *op_span,
            format!("this compares `{}` and does not assign it", name.text),
        )
        .with_label(*op_span, "`=` asks whether two values are equal")
        .with_hint(format!("to assign, write `{} := ...`", name.text)),
    )
}

fn stdout() -> Box<dyn Write> {
    Box::new(std::io::stdout())
}

/// Runs the prompt on a big-stack thread: with line editing and history on a
/// terminal, or reading piped lines with no prompts.
pub fn run_on_stdin(color: bool) -> i32 {
    crate::with_big_stack(move || {
        let terminal = std::io::stdin().is_terminal();
        let mut session = Repl::new(stdout, Box::new(std::io::stderr()), color && terminal);
        session.stepping = terminal;
        let flag = session.interrupt_flag();
        let on_ctrl_c = move || flag.store(true, Ordering::Relaxed);
        if !terminal {
            let _ = ctrlc::set_handler(on_ctrl_c);
            let stdin = std::io::stdin();
            // A line that is not UTF-8 is read with U+FFFD for its bad
            // bytes, which the lexer then reports, rather than ending input.
            let lines = std::io::BufRead::split(stdin.lock(), b'\n')
                .map_while(Result::ok)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
            session.take_lines(lines);
            // As a script would: a transcript with an error fails.
            return i32::from(session.had_error);
        }
        let Ok(mut editor) = rustyline::DefaultEditor::new() else {
            eprintln!("tapec: cannot start the line editor");
            return 1;
        };
        // After the editor, which sets its own SIGINT handler: while a
        // statement runs, Ctrl-C must reach the interpreter. (While a line is
        // read the terminal is raw and Ctrl-C arrives as a key.)
        let _ = ctrlc::set_handler(on_ctrl_c);
        let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".tapec_history"));
        if let Some(path) = &history {
            let _ = editor.load_history(path);
        }
        println!(
            "tapec {} — :help for commands, :quit to leave",
            env!("CARGO_PKG_VERSION")
        );
        let mut entry: Vec<String> = Vec::new();
        while !session.quit {
            let walking = session.is_walking();
            let read = editor.readline(session.prompt());
            session.line_ended();
            match read {
                // An answer at the walk's prompt (Enter, `q`) is no entry
                // to recall.
                Ok(line) if walking => session.line(&line),
                Ok(line) => {
                    // A recalled entry of several lines comes back whole.
                    for part in line.split('\n') {
                        session.line(part);
                    }
                    entry.push(line);
                    // History keeps whole entries: a routine typed over many
                    // lines comes back as one, to edit and enter again.
                    if session.prompt() != CONTINUE_PROMPT {
                        let whole = entry.join("\n");
                        if !whole.trim().is_empty() {
                            let _ = editor.add_history_entry(whole);
                        }
                        entry.clear();
                    }
                }
                Err(rustyline::error::ReadlineError::Interrupted) => {
                    entry.clear();
                    session.clear_line();
                }
                // Ctrl-D at the walk's prompt stops the walk, as `q` does.
                Err(rustyline::error::ReadlineError::Eof) if walking => session.clear_line(),
                Err(_) => {
                    session.end_of_session();
                    break;
                }
            }
        }
        if let Some(path) = &history {
            let _ = editor.save_history(path);
        }
        0
    })
}

/// Feeds bytes to a prompt session one line at a time, as a learner would
/// type them, with a step budget and a small size cap, and returns all it
/// printed. `:graph` and `:load` lines are left out, so made-up input never
/// writes or reads a file it names, and the paths of `Save` and `Load` start
/// at `folder`, not at the folder the caller runs in. What the REPL's fuzz
/// target and property tests call: it must never panic or hang, whatever
/// the lines are.
pub fn run_untrusted(
    bytes: &[u8],
    folder: std::path::PathBuf,
    step_budget: u64,
    max_elements: usize,
) -> String {
    let text = String::from_utf8_lossy(bytes).into_owned();
    crate::with_big_stack(move || {
        let buffer = crate::SharedBuffer::default();
        let mut session = Repl::new(
            || Box::new(std::io::sink()),
            Box::new(buffer.clone()),
            false,
        );
        session.interp.base_dir = folder;
        session.limit(step_budget, max_elements);
        let lines = text.split('\n').filter(|line| {
            let command = line.trim_start().to_ascii_lowercase();
            !(command.starts_with(":g") || command.starts_with(":l"))
        });
        session.take_lines(lines.map(str::to_string));
        buffer.text()
    })
}

/// Feeds a whole transcript through a session and returns everything it
/// printed, diagnostics included, in order (no colour): what the transcript
/// tests compare.
pub fn transcript(input: &str) -> String {
    thread_local! {
        static BUFFER: crate::SharedBuffer = crate::SharedBuffer::default();
    }
    fn out() -> Box<dyn Write> {
        Box::new(BUFFER.with(|b| b.clone()))
    }
    BUFFER.with(|b| b.take());
    let mut repl = Repl::new(out, out(), false);
    repl.take_lines(input.lines().map(str::to_string));
    BUFFER.with(|b| b.take())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SharedBuffer;
    use crate::eval::random::Random;

    /// Whether `text` is a complete entry by the full rule: its last token
    /// leaves nothing hanging, it parses, and its last statement cannot
    /// take an `else` on a next line.
    fn ends(text: &str) -> bool {
        let (program, errors) = parse(text, 0);
        let (tokens, _) = lex(text, 0);
        let last = tokens.last().map(|(t, _)| t);
        errors.is_empty()
            && !hangs(last)
            && !(last != Some(&Token::Semi) && program.body.last().is_some_and(else_may_follow))
    }

    /// Adds `words`, separated by spaces, as pieces.
    fn put(pieces: &mut Vec<String>, words: &str) {
        pieces.extend(words.split(' ').map(str::to_string));
    }

    /// A made-up statement, up to `depth` levels deep, as pieces that
    /// lines may be broken between.
    fn statement(random: &mut Random, depth: usize, pieces: &mut Vec<String>) {
        let choice = if depth == 0 { 0 } else { random.int_in(0, 10) };
        statement_of(random, choice, depth, pieces);
    }

    /// A made-up statement of the shape `choice` names.
    fn statement_of(random: &mut Random, choice: i64, depth: usize, pieces: &mut Vec<String>) {
        match choice {
            0 => {
                put(pieces, "x :=");
                expression(random, 2, pieces);
            }
            1 => {
                put(pieces, "if");
                expression(random, 2, pieces);
                put(pieces, "then");
                statement(random, depth - 1, pieces);
                if random.int_in(0, 1) == 0 {
                    put(pieces, "else");
                    statement(random, depth - 1, pieces);
                }
            }
            2 => {
                put(pieces, "while");
                expression(random, 2, pieces);
                put(pieces, "do");
                statement(random, depth - 1, pieces);
            }
            3 => {
                put(pieces, "for i := 1 to");
                expression(random, 1, pieces);
                put(pieces, "do");
                statement(random, depth - 1, pieces);
            }
            4 | 5 => {
                let (open, close) = [("begin", "end"), ("repeat", "until x"), ("tape", "end")]
                    [random.int_in(0, 2) as usize];
                put(pieces, open);
                statement(random, depth - 1, pieces);
                put(pieces, ";");
                statement(random, depth - 1, pieces);
                put(pieces, close);
            }
            6 | 7 => {
                put(
                    pieces,
                    [
                        "procedure P ( a : Real ; var b , c : Matrix ) ;",
                        "function F ( a ) : Real ; var i : Integer ; var j : Real ; k : Real ;",
                        "procedure Q ;",
                    ][random.int_in(0, 2) as usize],
                );
                put(pieces, "begin");
                statement(random, depth - 1, pieces);
                put(pieces, "end");
            }
            8 => {
                put(pieces, "WriteLn (");
                expression(random, 2, pieces);
                put(pieces, ", 'a ( [ { (*' )");
            }
            9 => {
                // An `else if` chain whose branches are themselves `if`s
                // with an `else`, routines or `var` sections with several
                // groups, whose `;`s do not end the chain.
                for branch in 0..random.int_in(2, 4) {
                    if branch > 0 {
                        put(pieces, "else");
                    }
                    put(pieces, "if");
                    expression(random, 1, pieces);
                    put(pieces, "then");
                    match random.int_in(0, 3) {
                        0 => {
                            put(pieces, "if x then");
                            statement(random, depth - 1, pieces);
                            put(pieces, "else");
                            statement(random, depth - 1, pieces);
                        }
                        1 => statement_of(random, 6, depth, pieces),
                        2 => statement_of(random, 10, depth, pieces),
                        _ => statement(random, depth - 1, pieces),
                    }
                }
                if random.int_in(0, 1) == 0 {
                    put(pieces, "else");
                    statement(random, depth - 1, pieces);
                }
            }
            _ => put(
                pieces,
                [
                    "var v , w : Real",
                    "var v , w , u , t : Real",
                    "var v : Real ; w , u : Integer",
                    "var v , w : Real ; u : Integer ; t , s : Matrix",
                ][random.int_in(0, 3) as usize],
            ),
        }
    }

    fn expression(random: &mut Random, depth: usize, pieces: &mut Vec<String>) {
        let choice = if depth == 0 { 0 } else { random.int_in(0, 5) };
        match choice {
            0 => put(
                pieces,
                ["1", "x", "true", "'s'"][random.int_in(0, 3) as usize],
            ),
            1 => {
                put(pieces, "(");
                expression(random, depth - 1, pieces);
                put(pieces, "+");
                expression(random, depth - 1, pieces);
                put(pieces, ")");
            }
            2 => {
                put(pieces, "[ [");
                expression(random, depth - 1, pieces);
                put(pieces, ", 2 ] , [ 3 ,");
                expression(random, depth - 1, pieces);
                put(pieces, "] ]");
            }
            3 => {
                put(pieces, "F (");
                expression(random, depth - 1, pieces);
                put(pieces, ")");
            }
            4 => {
                expression(random, depth - 1, pieces);
                put(pieces, "and");
                expression(random, depth - 1, pieces);
            }
            _ => {
                put(pieces, "m [");
                expression(random, depth - 1, pieces);
                put(pieces, ", 1 ]");
            }
        }
    }

    /// Made-up entries, each broken into lines at random between its
    /// pieces, with comments (some over several lines) between them: most
    /// are programs, whose every line may be the last.
    fn entries(count: i64) -> Vec<Vec<String>> {
        let mut random = Random::default();
        random.seed(11);
        (0..count)
            .map(|_| {
                let mut pieces = Vec::new();
                for _ in 0..random.int_in(1, 3) {
                    statement(&mut random, 3, &mut pieces);
                    if random.int_in(0, 3) > 0 {
                        pieces.push(";".to_string());
                    }
                }
                if random.int_in(0, 9) == 0 {
                    // Broken: pieces in a random order.
                    for i in (1..pieces.len()).rev() {
                        pieces.swap(i, random.int_in(0, i as i64) as usize);
                    }
                }
                let mut lines = vec![String::new()];
                for piece in pieces {
                    let line = lines.last_mut().expect("a line");
                    line.push_str(&piece);
                    line.push(' ');
                    match random.int_in(0, 19) {
                        0..=5 => lines.push(String::new()),
                        6 => line.push_str("{ ) ] } "),
                        7 => {
                            line.push_str("(* ( [");
                            lines.push("  end *)".to_string());
                        }
                        8 => {
                            line.push_str("// ( [");
                            lines.push(String::new());
                        }
                        9 => lines.push(String::new()),
                        _ => {}
                    }
                }
                lines
            })
            .collect()
    }

    /// `cannot_end` holds only where no parse could end the entry, and
    /// an entry past the parses it is given at once still ends at the
    /// line where a parse after every line ends it.
    #[test]
    fn an_entry_is_never_held_past_its_last_line() {
        let mut ended = 0;
        let mut held = 0;
        let mut names = 0;
        for lines in entries(600) {
            let mut fresh = Pending::default();
            let mut long = Pending {
                parsed: PARSED_AT_ONCE,
                ..Pending::default()
            };
            for line in lines {
                fresh.push_line(&line);
                long.push_line(&line);
                let text = fresh.text.clone();
                let complete = ends(&text);
                let (fresh_goes_on, long_goes_on) = (fresh.goes_on(), long.goes_on());
                if fresh.cannot_end() || fresh.comment.is_some() {
                    held += 1;
                    assert!(!complete, "held, but complete: {text:?}");
                }
                if fresh.names == Names::AfterVar {
                    names += 1;
                }
                if complete {
                    ended += 1;
                    assert!(!fresh_goes_on && !long_goes_on, "not ended: {text:?}");
                }
                if !long_goes_on {
                    assert!(!fresh_goes_on, "ended only when long: {text:?}");
                }
            }
        }
        // The entries reach both cases often, and a `var`'s names.
        assert!(
            ended > 500 && held > 2_000 && names > 1_000,
            "{ended} ended, {held} held, {names} in a `var`'s names"
        );
    }

    thread_local! {
        static SHOWN: SharedBuffer = SharedBuffer::default();
    }

    fn shown() -> Box<dyn Write> {
        Box::new(SHOWN.with(|b| b.clone()))
    }

    /// Types `lines` into a new session one by one, on a big stack: after
    /// each, whether the entry still waits and what the session showed.
    fn typed(lines: Vec<String>) -> Vec<(bool, String)> {
        crate::with_big_stack(move || {
            SHOWN.with(|b| b.take());
            let mut repl = Repl::new(shown, shown(), false);
            lines
                .iter()
                .map(|line| {
                    repl.line(line);
                    (repl.entry_pending(), SHOWN.with(|b| b.take()))
                })
                .collect()
        })
    }

    /// Long entries of each shape that stays open over many lines.
    fn long_entries(n: usize) -> Vec<(&'static str, Vec<String>, &'static str)> {
        let lines = |first: &str, each: &dyn Fn(usize) -> String, last: &str| {
            let mut all = vec![first.to_string()];
            all.extend((0..n).map(each));
            all.push(last.to_string());
            all
        };
        vec![
            (
                "parameters",
                lines(
                    "procedure P(",
                    &|i| format!("  a{i}: Real;"),
                    "  z: Real); begin end;",
                ),
                "procedure P defined",
            ),
            (
                "var sections",
                lines(
                    "procedure Q;",
                    &|i| format!("var a{i}: Real;"),
                    "begin end;",
                ),
                "procedure Q defined",
            ),
            (
                "one var section",
                lines(
                    "function F: Real; var z: Real;",
                    &|i| format!("  a{i}: Real;"),
                    "begin Result := 1 end;",
                ),
                "function F defined",
            ),
            (
                "rows",
                lines("m := [[0]", &|i| format!("  , [{i}]"), "];"),
                "×1\n",
            ),
            (
                "an else-if chain",
                lines(
                    "if 1 > 2 then WriteLn(0)",
                    &|i| format!("else if {i} > {n} then WriteLn({i})"),
                    "else WriteLn('last')",
                ),
                "last",
            ),
            (
                "a loop's condition",
                lines(
                    "while (1 > 2)",
                    &|i| format!("  and ({i} > 0)"),
                    "do WriteLn('never'); WriteLn('done');",
                ),
                "done",
            ),
            (
                "names with leading commas",
                lines(
                    "var a",
                    &|i| format!(", a{i}"),
                    ": Real; WriteLn('declared');",
                ),
                "declared",
            ),
            (
                "an else-if chain of routines",
                lines(
                    "if 1 > 2 then procedure P; begin end",
                    &|i| format!("else if {i} > {n} then procedure P{i}; begin end"),
                    "else WriteLn('last')",
                ),
                "routines are declared at the top level only",
            ),
            (
                "an else-if chain of var sections",
                lines(
                    "if 1 > 2 then var a: Real; b: Real",
                    &|i| format!("else if {i} > {n} then var a{i}: Real; b{i}: Real"),
                    "else WriteLn('last')",
                ),
                "a `var` section may only stand at the top level",
            ),
        ]
    }

    /// Types `lines` one by one and checks that the entry waits, showing
    /// nothing, until its last line, and ends there: what that line
    /// shows.
    fn ends_at_its_last_line(lines: &[String], shape: &str) -> String {
        let mut after = typed(lines.to_vec());
        let (waits, last) = after.pop().expect("lines");
        assert!(
            after
                .iter()
                .all(|(waits, shown)| *waits && shown.is_empty()),
            "{shape}: ended early: {after:?}"
        );
        assert!(!waits, "{shape}: still waits after its last line");
        last
    }

    /// Each long entry ends at its last line: its output comes then,
    /// not after one more line; and the notebook's rule says the same.
    #[test]
    fn a_long_entry_ends_at_its_last_line() {
        for (shape, lines, output) in long_entries(2_000) {
            let last = ends_at_its_last_line(&lines, shape);
            assert!(last.contains(output), "{shape}: {last}");
            let repl = Repl::new(
                || Box::new(std::io::sink()),
                Box::new(std::io::sink()),
                false,
            );
            let whole = lines.join("\n");
            assert_eq!(repl.completeness(&whole), Completeness::Complete, "{shape}");
            let open = lines[..lines.len() - 1].join("\n");
            assert_eq!(
                repl.completeness(&open),
                Completeness::Incomplete,
                "{shape}"
            );
        }
    }

    /// Pascal's `case x of` holds the entry until its `end`, at the
    /// prompt and by the notebook's rule, so it is one entry with one
    /// error; a `case` that is a name, or called, ends as any statement.
    #[test]
    fn a_pascal_case_is_one_entry_to_its_end() {
        let lines: Vec<String> = ["case x of", "  1: WriteLn(1);", "  2: WriteLn(2);", "end;"]
            .iter()
            .map(|l| l.to_string())
            .collect();
        let last = ends_at_its_last_line(&lines, "case");
        assert_eq!(last.matches("Error").count(), 1, "{last}");
        let repl = Repl::new(
            || Box::new(std::io::sink()),
            Box::new(std::io::sink()),
            false,
        );
        for open in 1..lines.len() {
            let code = lines[..open].join("\n");
            assert_eq!(repl.completeness(&code), Completeness::Incomplete, "{code}");
        }
        assert_eq!(repl.completeness(&lines.join("\n")), Completeness::Invalid);
        for whole in [
            "case := 1;",
            "case[of] := 1;",
            "case(of);",
            "x := case + of;",
            "begin case := of end;",
        ] {
            assert_ne!(
                repl.completeness(whole),
                Completeness::Incomplete,
                "{whole}"
            );
        }
    }

    /// A mistake early in a short entry is told at the line it is on,
    /// though the entry could not have ended there.
    #[test]
    fn a_mistake_in_a_short_entry_is_told_at_once() {
        for lines in [
            ["procedure P(a: Real;", "  b Real;"],
            ["procedure P;", "var a Real;"],
            ["x := [1,", "  2 3"],
            ["if x = 1", "  and y z"],
        ] {
            let after = typed(lines.iter().map(|l| l.to_string()).collect());
            assert!(after[0].0 && after[0].1.is_empty(), "{lines:?}: {after:?}");
            assert!(!after[1].0, "{lines:?}: still waits");
            assert!(after[1].1.contains("Error"), "{lines:?}: {}", after[1].1);
        }
    }

    /// A routine's header that is whole but has a mistake waits for its
    /// body, which is told with it, not run alone as a block whose
    /// parameters are unknown; a line after it that starts no body ends
    /// the entry.
    #[test]
    fn a_whole_header_with_a_mistake_takes_its_body_first() {
        let lines = [
            "function F(a: Real) -> Real;",
            "begin",
            "  Result := a * 2;",
            "end;",
        ];
        let after = typed(lines.iter().map(|l| l.to_string()).collect());
        let (last, before) = after.split_last().expect("lines");
        assert!(
            before
                .iter()
                .all(|(waits, shown)| *waits && shown.is_empty()),
            "{after:?}"
        );
        assert!(!last.0, "still waits");
        assert!(last.1.contains("comes after a `:`"), "{}", last.1);
        assert!(!last.1.contains("unknown variable"), "{}", last.1);
        let after = typed(vec![
            "procedure P(a: Real) Real;".into(),
            "WriteLn(1);".into(),
        ]);
        assert!(after[0].0 && after[0].1.is_empty(), "{after:?}");
        assert!(!after[1].0 && after[1].1.contains("Error"), "{after:?}");
    }

    /// In a long entry, a mistake in what cannot end yet is told when
    /// the entry can end, as one inside an open block is: a mistake in a
    /// routine's header at the routine's end.
    #[test]
    fn a_mistake_in_a_long_entry_is_told_when_the_entry_can_end() {
        let mut lines = vec!["procedure P(".to_string()];
        lines.extend((0..2_000).map(|i| format!("  a{i}: Real;")));
        lines.push("  b Real;".to_string());
        lines.push("  z: Real); begin end;".to_string());
        let after = typed(lines);
        let (last, before) = after.split_last().expect("lines");
        assert!(
            before
                .iter()
                .all(|(waits, shown)| *waits && shown.is_empty())
        );
        assert!(!last.0, "still waits");
        assert!(last.1.contains("Error"), "{}", last.1);
    }
}
