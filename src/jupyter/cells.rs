//! A notebook's cells, run on the REPL's session (`Repl`): each cell's
//! lines are entered as piped lines are, so state, echoes, the prompt's
//! `tape` and `end;` and its `:` commands are the REPL's. What a cell
//! shows comes out as [`Output`]s while it runs, through the function
//! given to [`Cells::new`]; the cell's end is an [`Outcome`].
//!
//! This side knows nothing of sockets or of the messaging protocol: the
//! kernel (`kernel.rs`) turns outputs into messages. Everything here runs
//! on one thread, the one that made the `Cells`.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use crate::repl::{Completeness, Repl};

/// Something a cell shows as it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Text for the cell's stdout (echoes, `WriteLn`) or stderr (warnings,
    /// notices such as "Plot wrote ...").
    Stream { stderr: bool, text: String },
    /// A picture or page: its forms by MIME type, the plain text last.
    Display(Vec<(&'static str, String)>),
}

/// How a cell ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It ran; the text of its last bare expression's value, if the
    /// cell ended with one (what the REPL would have echoed).
    Done { result: Option<String> },
    /// A diagnostic stopped it, and the cell changed nothing.
    Failed(Failure),
    /// It was interrupted; what completed is kept, as at the prompt. The
    /// sentence says what the interruption did.
    Interrupted(String),
}

/// An error as a notebook shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// What kind of error: `error`.
    pub ename: String,
    /// Its first line: the diagnostic's message.
    pub evalue: String,
    /// The diagnostic as the REPL renders it (no colour), line by line.
    pub traceback: Vec<String>,
}

type Sink = Rc<RefCell<Box<dyn FnMut(Output)>>>;

thread_local! {
    /// Where this thread's cells send their outputs: the REPL makes its
    /// output anew on `:reset`, from a plain function, which finds it here.
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

fn emit(output: Output) {
    let sink = SINK.with(|s| s.borrow().clone());
    if let Some(sink) = sink
        && let Ok(mut send) = sink.try_borrow_mut()
    {
        send(output);
    }
}

/// A stream that hands each write on at once, so that a long loop's lines
/// show while it runs; the kernel joins what comes close together.
struct StreamWriter {
    stderr: bool,
}

impl Write for StreamWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if !bytes.is_empty() {
            emit(Output::Stream {
                stderr: self.stderr,
                text: String::from_utf8_lossy(bytes).into_owned(),
            });
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn stdout_stream() -> Box<dyn Write> {
    Box::new(StreamWriter { stderr: false })
}

fn stderr_stream() -> Box<dyn Write> {
    Box::new(StreamWriter { stderr: true })
}

/// The REPL's session, run a cell at a time.
pub struct Cells {
    repl: Repl,
    errors: crate::SharedBuffer,
    /// What each cell run so far held, in order: the history.
    pub history: Vec<String>,
}

impl Cells {
    /// A fresh session whose outputs go to `send`.
    pub fn new(send: impl FnMut(Output) + 'static) -> Cells {
        let sink: Sink = Rc::new(RefCell::new(Box::new(send)));
        SINK.with(|s| *s.borrow_mut() = Some(sink));
        crate::eval::plot::show_inline(Some(Box::new(|svg: &str| {
            emit(Output::Display(vec![
                ("image/svg+xml", svg.to_string()),
                ("text/plain", "<a chart drawn by Plot>".to_string()),
            ]));
        })));
        let mut repl = Repl::new(stdout_stream, stderr_stream(), false);
        // "Plot wrote ..." where the Plot ran, among the cell's output.
        repl.notices_at_once(stderr_stream);
        let errors = crate::SharedBuffer::default();
        repl.send_errors_to(Box::new(errors.clone()));
        repl.hold_values();
        repl.in_notebook();
        repl.keep_interruptions();
        Cells {
            repl,
            errors,
            history: Vec::new(),
        }
    }

    /// The flag that interrupts a running statement, as Ctrl-C does at
    /// the prompt (the same flag for the session's whole life).
    pub fn interrupt_flag(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.repl.interrupt_flag()
    }

    /// Caps each statement's work and every matrix's size (for tests).
    pub fn limit(&mut self, step_budget: u64, max_elements: usize) {
        self.repl.limit(step_budget, max_elements);
    }

    /// Runs a cell: its lines are entered one by one until one fails; a
    /// failure puts back everything as it was before the cell. Its
    /// diagnostics name it `cell`.
    pub fn execute(&mut self, code: &str) -> Outcome {
        self.execute_named(code, "cell")
    }

    /// Runs a cell as [`Cells::execute`] does, its diagnostics naming it
    /// `name` (`cell [3]`, as the notebook numbers it) with lines counted
    /// in the cell.
    pub fn execute_named(&mut self, code: &str, name: &str) -> Outcome {
        self.history.push(code.to_string());
        self.errors.take();
        self.repl.interrupted = false;
        self.repl.take_interruption();
        self.repl.quit = false;
        self.repl.line_ended();
        let mark = self.repl.mark();
        // What an error says is left open is what is open once the cell
        // is undone.
        self.repl.undo_whole_to(Some(&mark));
        self.repl.take_ran_before_error();
        // Whether a statement of the cell ran before the one that fails:
        // set as each entry starts, from whether a line of code came first.
        let (mut ran, mut code_seen) = (false, false);
        for (number, line) in code.lines().enumerate() {
            if !self.repl.entry_pending() {
                if self.picture_command(line.trim()) {
                    continue;
                }
                ran = code_seen;
                self.repl.place_next_entry(Some((name.to_string(), number)));
            }
            code_seen |= !blank_or_comment(line);
            self.repl.line(line);
            if self.failed() || self.repl.interrupted || self.repl.quit {
                break;
            }
        }
        if !self.failed() && !self.repl.interrupted {
            self.repl.end_of_input();
        }
        self.repl.place_next_entry(None);
        self.repl.undo_whole_to(None);
        let rendered = self.errors.take();
        if !rendered.is_empty() {
            self.repl.undo_to(mark);
            let mut failure = failure(&rendered);
            if ran || self.repl.take_ran_before_error() {
                failure.traceback.push(
                    "The cell changed nothing: what ran before the error, and any output it \
                     showed above, is undone too."
                        .to_string(),
                );
            }
            return Outcome::Failed(failure);
        }
        let result = self.repl.take_value();
        if self.repl.interrupted {
            if let Some(text) = result {
                emit(Output::Stream {
                    stderr: false,
                    text,
                });
            }
            let what = self
                .repl
                .take_interruption()
                .unwrap_or_else(|| "interrupted: what completed is kept".to_string());
            return Outcome::Interrupted(what);
        }
        Outcome::Done {
            result: result.map(|text| text.trim_end_matches('\n').to_string()),
        }
    }

    fn failed(&self) -> bool {
        !self.errors.text().is_empty()
    }

    /// `:graph` alone shows the tape's picture in the cell, and `:walk`
    /// the walk's page; every other command is the REPL's.
    fn picture_command(&mut self, line: &str) -> bool {
        // A value echoed before the picture shows before it.
        if matches!(line, ":graph" | ":walk") {
            self.repl.release_value();
        }
        if line == ":quit" || line == ":q" {
            emit(Output::Stream {
                stderr: true,
                text: format!("{}\n", crate::repl::QUIT_IN_NOTEBOOK),
            });
            return true;
        }
        // Too large a tape is refused as an error, as any command that
        // cannot run.
        if matches!(line, ":graph" | ":walk") && self.repl.refuse_too_large(line == ":walk") {
            return true;
        }
        match line {
            ":graph" => {
                let output = match self.repl.picture() {
                    Some(svg) => Output::Display(vec![
                        ("image/svg+xml", svg),
                        ("text/plain", "<the tape's picture>".to_string()),
                    ]),
                    None => Output::Stream {
                        stderr: false,
                        text: "no tape yet\n".to_string(),
                    },
                };
                emit(output);
                true
            }
            ":walk" => {
                let output = match self.repl.walk_page() {
                    Some((page, text)) => {
                        Output::Display(vec![("text/html", framed(&page)), ("text/plain", text)])
                    }
                    None => Output::Stream {
                        stderr: false,
                        text: "no walked tape yet: close a tape with `end;` first\n".to_string(),
                    },
                };
                emit(output);
                true
            }
            _ => false,
        }
    }

    /// One of an `execute_request`'s `user_expressions`: the value of the
    /// expression `text`, as the prompt would echo it, with the session
    /// left as it was. What a function it calls prints is shown, as it
    /// would be in a cell; a statement is refused before it runs.
    pub fn evaluate(&mut self, text: &str) -> Result<String, Failure> {
        let text = text.trim();
        let refused = |why: String| Failure {
            ename: "error".to_string(),
            evalue: why.clone(),
            traceback: vec![why],
        };
        let (program, problems) = crate::syntax::parser::parse(text, 0);
        let one_expression = problems.is_empty()
            && !text.starts_with(':')
            && matches!(program.body.as_slice(),
                [stmt] if matches!(stmt.kind, crate::syntax::tree::StmtKind::Expr(_)));
        if !one_expression {
            return Err(refused(format!("`{text}` is not an expression")));
        }
        self.errors.take();
        self.repl.take_value();
        let mark = self.repl.mark();
        self.repl
            .place_next_entry(Some(("expression".to_string(), 0)));
        self.repl.line(text);
        if self.repl.entry_pending() {
            self.repl.end_of_input();
        }
        self.repl.place_next_entry(None);
        let rendered = self.errors.take();
        let value = self.repl.take_value();
        self.repl.undo_to(mark);
        if !rendered.is_empty() {
            return Err(failure(&rendered));
        }
        value
            .map(|v| v.trim_end_matches('\n').to_string())
            .ok_or_else(|| refused(format!("`{text}` gives no value")))
    }

    /// Whether `code` is complete by the prompt's rule.
    pub fn is_complete(&self, code: &str) -> Completeness {
        self.repl.completeness(code)
    }

    /// What may be typed at `cursor` (in characters): the names that
    /// start with the word before it — variables and routines of the
    /// session and of the cell, builtins, constants, keywords; after a
    /// `:` that opens the line the commands, after one of a declaration
    /// the types; after a command, what it takes — and the range the
    /// chosen name replaces, in characters: the word before the cursor,
    /// as Jupyter and IPython take it (the rest of a word the cursor is in
    /// stays, as the language server leaves it to its client).
    pub fn complete(&self, code: &str, cursor: usize) -> (Vec<String>, usize, usize) {
        let chars: Vec<char> = code.chars().collect();
        let cursor = cursor.min(chars.len());
        let (start, _) = word_around(code, cursor);
        // Nothing inside a comment or a string, as the language server.
        let at: usize = chars[..cursor].iter().copied().map(char::len_utf8).sum();
        if crate::lsp::completion::in_text(code, at) {
            return (Vec::new(), start, cursor);
        }
        let word: String = chars[start..cursor].iter().collect();
        let line: String = chars[..start]
            .iter()
            .rev()
            .take_while(|c| **c != '\n')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        // A command only where its `:` opens the line (in `WriteLn(x:8)`
        // a `:` is a width).
        let command = line.trim_start() == ":";
        // After a command and a space, what that command takes: `:blame`
        // a variable that holds a value of the last tape, `:tape` `all`,
        // `:help` any name (or, after its `:`, a command); a file name or
        // nothing else.
        let argument_of = line
            .trim_start()
            .strip_prefix(':')
            .and_then(|rest| rest.split_once(char::is_whitespace))
            .map(|(name, _)| name);
        let mut matches: Vec<String> = Vec::new();
        // What the code's rules offered, matched already.
        let mut typed: Vec<String> = Vec::new();
        let mut keywords = false;
        match argument_of {
            _ if command => matches.extend(crate::repl::command_words(true).map(str::to_string)),
            Some("help") if line.ends_with(':') => {
                matches.extend(crate::repl::command_words(true).map(str::to_string))
            }
            Some("help") => {
                matches.extend(self.repl.names());
                matches.extend(builtin_names());
                keywords = true;
            }
            Some("blame") => matches.extend(self.repl.blamable()),
            Some("tape") => matches.push("all".to_string()),
            Some(_) => {}
            // In the code, what the language server offers at the cursor,
            // by its rules, with the session's names besides the cell's.
            None => {
                let doc = crate::lsp::analysis::Document::new(code.to_string(), 0);
                let known = crate::lsp::completion::Known {
                    variables: self.repl.variables(),
                    routines: self.repl.routines(),
                    bare_expressions: true,
                };
                let lower = word.to_lowercase();
                for item in
                    crate::lsp::completion::completions_knowing(&doc, at, false, false, &known)
                {
                    // Names match as written; keywords in any case, as the
                    // lexer reads them.
                    let keyword = item.kind == Some(lsp_types::CompletionItemKind::KEYWORD);
                    if (keyword && item.label.starts_with(&lower)) || item.label.starts_with(&word)
                    {
                        typed.push(item.label);
                    }
                }
            }
        }
        matches.retain(|c| c.starts_with(&word));
        matches.append(&mut typed);
        if keywords {
            let lower = word.to_lowercase();
            matches.extend(
                crate::lsp::completion::keywords()
                    .filter(|k| k.starts_with(&lower))
                    .map(|k| k.to_string()),
            );
        }
        matches.sort();
        matches.dedup();
        (matches, start, cursor)
    }

    /// The text shown for the name at `cursor` (in characters): a
    /// builtin's `:help`, or what `:vars` says of a variable.
    pub fn inspect(&self, code: &str, cursor: usize) -> Option<String> {
        // Nothing inside a comment or a string, as completion offers
        // nothing there.
        let at: usize = code.chars().take(cursor).map(char::len_utf8).sum();
        if crate::lsp::completion::in_text(code, at) {
            return None;
        }
        let (start, end) = word_around(code, cursor);
        // A cursor just after `Name(` asks about `Name`.
        let (start, end) = if start == end {
            let before = code.chars().take(cursor).collect::<String>();
            let trimmed = before.trim_end_matches(['(', ' ']);
            let n = trimmed.chars().count();
            (word_around(code, n).0, n)
        } else {
            (start, end)
        };
        let word: String = code.chars().skip(start).take(end - start).collect();
        if word.is_empty() {
            return None;
        }
        // `:walk` at the start of its line: the command.
        let line_before: String = code.chars().take(start).collect();
        let line_before = line_before.rsplit('\n').next().unwrap_or("");
        if line_before.trim() == ":" {
            return crate::repl::command_help(&word, true).map(str::to_string);
        }
        if let Some(b) = crate::declarations::find(&word) {
            return Some(b.help());
        }
        if let Some(help) = crate::syntax::lexer::word_help(&word) {
            return Some(help.trim_end().to_string());
        }
        self.repl.describe(&word)
    }
}

impl Drop for Cells {
    fn drop(&mut self) {
        crate::eval::plot::show_inline(None);
        SINK.with(|s| *s.borrow_mut() = None);
    }
}

/// The walk page inside an iframe, as a notebook's HTML output: the page
/// keeps its own style and script apart from the notebook's.
fn framed(page: &str) -> String {
    let escaped = page
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        "<iframe srcdoc=\"{escaped}\" style=\"width: 100%; height: 640px; border: 0\" \
         title=\"the walk\"></iframe>"
    )
}

/// Whether a line holds nothing that runs.
fn blank_or_comment(line: &str) -> bool {
    let line = line.trim();
    line.is_empty() || line.starts_with("//")
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier around `cursor`, as character positions: from its start
/// to the cursor's word's end.
fn word_around(code: &str, cursor: usize) -> (usize, usize) {
    let chars: Vec<char> = code.chars().collect();
    let cursor = cursor.min(chars.len());
    let mut start = cursor;
    while start > 0 && is_name_char(chars[start - 1]) {
        start -= 1;
    }
    let mut end = cursor;
    while end < chars.len() && is_name_char(chars[end]) {
        end += 1;
    }
    (start, end)
}

/// The builtins' names and the constants'.
fn builtin_names() -> impl Iterator<Item = String> {
    crate::declarations::BUILTINS
        .iter()
        .map(|b| b.name.to_string())
        .chain(crate::declarations::CONSTANTS.iter().map(|c| c.to_string()))
}

/// A rendered diagnostic as an error: its first error's message, and its
/// lines.
fn failure(rendered: &str) -> Failure {
    // The first error's line: a layout warning may come before it.
    let first = rendered
        .lines()
        .find(|l| l.trim().starts_with("Error:"))
        .or_else(|| rendered.lines().next())
        .unwrap_or("error");
    let evalue = first
        .trim()
        .strip_prefix("Error:")
        .unwrap_or(first)
        .trim()
        .to_string();
    Failure {
        ename: "error".to_string(),
        evalue,
        traceback: rendered.lines().map(str::to_string).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layout warning shown before the error it explains does not become
    /// the error's title.
    #[test]
    fn the_evalue_is_the_first_errors_message() {
        let rendered = "Warning: this statement is indented as if it were part of the `for`\n   │\n\
                        Error: unknown variable `zzz`\n   │\n";
        let f = failure(rendered);
        assert_eq!(f.evalue, "unknown variable `zzz`");
        assert_eq!(f.traceback.len(), 4);
        assert_eq!(failure("Error: x\n").evalue, "x");
    }
}
