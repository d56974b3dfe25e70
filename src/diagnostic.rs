//! One diagnostic type for every error a user can cause, and its rendering.
//!
//! This is the only module that calls ariadne. Every stage (lexer, parser,
//! checker, evaluator, tape) reports through [`Diagnostic`], which carries a
//! primary span, labelled spans and hints in plain words. Spans are byte
//! ranges into one of the texts held by a [`SourceMap`].

use std::io::Write;

use ariadne::{Color, Config, IndexType, Label, Report, ReportKind};

/// Which text of the [`SourceMap`] a span points into.
pub type SourceId = usize;

/// A byte range in one source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub source: SourceId,
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(source: SourceId, start: usize, end: usize) -> Span {
        Span {
            source,
            start,
            end: end.max(start),
        }
    }

    /// The smallest span covering both (they must share a source).
    pub fn to(self, other: Span) -> Span {
        Span::new(
            self.source,
            self.start.min(other.start),
            self.end.max(other.end),
        )
    }
}

/// An error for the user: what went wrong, where, and how to mend it.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
    pub labels: Vec<(Span, String)>,
    pub hints: Vec<String>,
    pub notes: Vec<String>,
    /// A warning says something is probably wrong but stops nothing.
    pub warning: bool,
}

impl Diagnostic {
    pub fn new(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span,
            message: message.into(),
            labels: Vec::new(),
            hints: Vec::new(),
            notes: Vec::new(),
            warning: false,
        }
    }

    /// A warning: rendered as one, and it never stops a run.
    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            warning: true,
            ..Diagnostic::new(span, message)
        }
    }

    pub fn with_label(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.labels.push((span, text.into()));
        self
    }

    pub fn with_hint(mut self, text: impl Into<String>) -> Diagnostic {
        self.hints.push(text.into());
        self
    }

    pub fn with_note(mut self, text: impl Into<String>) -> Diagnostic {
        self.notes.push(text.into());
        self
    }
}

/// The texts diagnostics point into: the program file, files it loads, and
/// each line entered at the REPL.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    /// Each source's name, its text, and the line of a larger text it
    /// starts on (0 but for a notebook cell's later statements).
    sources: Vec<(String, String, usize)>,
    /// Where each line of each source starts (byte offsets, the first 0),
    /// found once when the source is added: a span's line is then a
    /// binary search, not a count of the newlines before it, which made
    /// `tapec export` (a line for every statement) quadratic in the
    /// program's length.
    line_starts: Vec<Vec<usize>>,
}

/// A source as the renderer knows it: by its id, so that two sources of
/// one name (the statements of one notebook cell) stay apart, and shown
/// by its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Shown {
    id: SourceId,
    name: String,
}

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl SourceMap {
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> SourceId {
        self.add_at(name, text, 0)
    }

    /// Adds a text that starts on line `first_line` (0-based) of a larger
    /// one named `name`: its diagnostics give the larger text's lines.
    pub fn add_at(
        &mut self,
        name: impl Into<String>,
        text: impl Into<String>,
        first_line: usize,
    ) -> SourceId {
        let text = text.into();
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        self.sources.push((name.into(), text, first_line));
        self.line_starts.push(starts);
        self.sources.len() - 1
    }

    /// A diagnostic about no text of the program: the command line, a file
    /// that cannot be read or written. It renders as its message alone.
    pub fn unplaced(&mut self, message: impl Into<String>) -> Diagnostic {
        let id = self.add("", "");
        Diagnostic::new(Span::new(id, 0, 0), message)
    }

    pub fn name(&self, id: SourceId) -> &str {
        &self.sources[id].0
    }

    pub fn text(&self, id: SourceId) -> &str {
        &self.sources[id].1
    }

    /// The 1-based line and column (in characters) where `span` starts.
    pub fn line_column(&self, span: Span) -> (usize, usize) {
        let (line, line_start, start) = self.line_at(span);
        let text = self.text(span.source);
        let column = text[line_start..start].chars().count() + 1;
        (line, column)
    }

    /// The 1-based line where `span` starts, in time logarithmic in the
    /// source's length.
    pub fn line(&self, span: Span) -> usize {
        self.line_at(span).0
    }

    /// The 1-based line where `span` starts, where that line starts, and
    /// where the span starts (on a character's boundary).
    fn line_at(&self, span: Span) -> (usize, usize, usize) {
        let text = self.text(span.source);
        let start = floor_char_boundary(text, span.start.min(text.len()));
        let starts = &self.line_starts[span.source];
        // The lines starting at or before `start`; the last is its line.
        let before = starts.partition_point(|&s| s <= start);
        let line = before + self.sources[span.source].2;
        (line, starts[before - 1], start)
    }

    /// Writes `diagnostic` as ariadne renders it, with or without colour.
    pub fn render(&self, diagnostic: &Diagnostic, color: bool, out: &mut dyn Write) {
        self.render_all(std::slice::from_ref(diagnostic), color, out);
    }

    /// Writes the first [`MAX_SHOWN`] of `diagnostics`, then a line that
    /// counts the rest. The sources they point into are indexed once for
    /// all of them: indexing a file again for each error made a file with
    /// thousands of errors take time quadratic in its size.
    pub fn render_all(&self, diagnostics: &[Diagnostic], color: bool, out: &mut dyn Write) {
        let shown = &diagnostics[..diagnostics.len().min(MAX_SHOWN)];
        let mut ids: Vec<SourceId> = shown
            .iter()
            .flat_map(|d| {
                std::iter::once(d.span.source).chain(d.labels.iter().map(|(s, _)| s.source))
            })
            .filter(|&id| id < self.sources.len())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        // A text that starts on a later line of a larger one is drawn
        // after as many blank lines, so its lines are numbered as there.
        let mut cache = ariadne::sources(ids.iter().map(|&id| {
            let (name, text, first_line) = &self.sources[id];
            let text: std::borrow::Cow<str> = match first_line {
                0 => text.as_str().into(),
                n => format!("{}{text}", "\n".repeat(*n)).into(),
            };
            let name = name.clone();
            (Shown { id, name }, text)
        }));
        for d in shown {
            self.render_one(d, color, &mut cache, out);
        }
        let hidden = &diagnostics[shown.len()..];
        if !hidden.is_empty() {
            let _ = writeln!(out, "{}", not_shown(hidden));
        }
    }

    fn render_one(
        &self,
        diagnostic: &Diagnostic,
        color: bool,
        cache: &mut impl ariadne::Cache<Shown>,
        out: &mut dyn Write,
    ) {
        if self.text(diagnostic.span.source).is_empty() {
            // Nothing to show around it (a file that could not be read).
            let head = if color {
                "\x1b[31mError:\x1b[0m"
            } else {
                "Error:"
            };
            let _ = writeln!(out, "{head} {}", printable(&diagnostic.message));
            for hint in &diagnostic.hints {
                let _ = writeln!(out, "Help: {}", printable(hint));
            }
            for note in &diagnostic.notes {
                let _ = writeln!(out, "Note: {}", printable(note));
            }
            return;
        }
        let clamp = |span: Span| {
            let text = self.text(span.source);
            let start = floor_char_boundary(text, span.start.min(text.len()));
            let end = floor_char_boundary(text, span.end.min(text.len())).max(start);
            // Past the blank lines the text is drawn after.
            let shift = self.sources[span.source].2;
            let shown = Shown {
                id: span.source,
                name: self.name(span.source).to_string(),
            };
            (shown, start + shift..end + shift)
        };
        let config = Config::default()
            .with_color(color)
            .with_index_type(IndexType::Byte);
        let kind = if diagnostic.warning {
            ReportKind::Warning
        } else {
            ReportKind::Error
        };
        let mut report = Report::build(kind, clamp(diagnostic.span))
            .with_config(config)
            .with_message(printable(&diagnostic.message));
        let mut labels: Vec<(usize, Span, String)> = diagnostic
            .labels
            .iter()
            .enumerate()
            .map(|(k, (s, t))| (k, *s, t.clone()))
            .collect();
        if labels.is_empty() {
            labels.push((0, diagnostic.span, String::new()));
        }
        // In the order they appear in the text, so ariadne draws one section per source.
        labels.sort_by_key(|(_, span, _)| (span.source, span.start));
        for (order, span, text) in labels.iter() {
            let order = *order;
            let mut label = Label::new(clamp(*span));
            if !text.is_empty() {
                label = label.with_message(printable(text));
            }
            if color {
                label = label.with_color(if order == 0 && !diagnostic.warning {
                    Color::Red
                } else {
                    Color::Yellow
                });
            }
            report = report.with_label(label);
        }
        for hint in &diagnostic.hints {
            report = report.with_help(printable(hint));
        }
        for note in &diagnostic.notes {
            report = report.with_note(printable(note));
        }
        // Rendered whole, then written at once: ariadne writes a character
        // at a time, and stderr is not buffered. A failed write to stderr
        // leaves nothing better to do than carry on.
        let mut text = Vec::new();
        let _ = report.finish().write(cache, &mut text);
        let _ = out.write_all(&text);
    }

    /// Renders to a string (no colour): what the golden error files hold.
    pub fn render_to_string(&self, diagnostic: &Diagnostic) -> String {
        let mut out = Vec::new();
        self.render(diagnostic, false, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// `text` with what a terminal would act on rather than show escaped: a
/// control character but a line break (an escape sequence a user typed
/// after `:help` would colour the terminal) and the marks that turn a
/// line's direction (which would reverse the rest of the message).
fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let acts = |ch: char| {
        (ch.is_control() && ch != '\n')
            || matches!(ch, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(acts) {
        return text.into();
    }
    text.chars()
        .map(|ch| {
            if acts(ch) {
                ch.escape_unicode().to_string()
            } else {
                ch.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// The most diagnostics shown for one file or entry; the rest are counted.
/// A screen of errors is already more than a reader takes in, and without a
/// limit a long line with thousands of errors printed itself thousands of times.
pub const MAX_SHOWN: usize = 50;

/// The line that stands for diagnostics left out: "3 more errors and
/// 1 warning are not shown: ...", errors and warnings counted apart.
pub fn not_shown(hidden: &[Diagnostic]) -> String {
    let warnings = hidden.iter().filter(|d| d.warning).count();
    let errors = hidden.len() - warnings;
    let what = match (errors, warnings) {
        (e, 0) => counted(e, "more error"),
        (0, w) => counted(w, "more warning"),
        (e, w) => format!("{} and {}", counted(e, "more error"), counted(w, "warning")),
    };
    let verb = if hidden.len() == 1 { "is" } else { "are" };
    format!("{what} {verb} not shown: fix the ones above first")
}

/// `n` things in words: "1 row", "3 rows".
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Why a file could not be read or written, in plain words.
pub fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "it is a folder, not a file".to_string(),
        _ => e.to_string(),
    }
}

/// Why the file `path` could not be written, in plain words: as
/// [`io_reason`], but "not found" is said of its folder when that is
/// missing, and of the place otherwise (`/proc` refuses new files so); a
/// name ending in `/` names a folder, whatever the system's error.
pub fn io_write_reason(e: &std::io::Error, path: &std::path::Path) -> String {
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return if path.is_dir() {
            "it is a folder, not a file".to_string()
        } else {
            "a name ending in `/` is a folder's, not a file's".to_string()
        };
    }
    match e.kind() {
        std::io::ErrorKind::NotADirectory => {
            "a part of its folder's path is a file, not a folder".to_string()
        }
        std::io::ErrorKind::NotFound => {
            let folder = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => std::path::Path::new("."),
            };
            if folder.is_dir() {
                "no file can be made there".to_string()
            } else {
                "its folder does not exist".to_string()
            }
        }
        _ => io_reason(e),
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The closest of `candidates` to `name`, if it is close enough to be a
/// likely slip of the keyboard or of the case.
pub fn near_miss<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // A name longer than any slip is likely made in is matched against
    // nothing: likeness takes time in the product of the two lengths, and
    // a program of a thousand long names would take seconds.
    const LONGEST: usize = 32;
    if name.len() > LONGEST {
        return None;
    }
    let lower = name.to_lowercase();
    // The fewest edits first (two letters swapped is one edit: `edn` is
    // nearer `end` than `Mean`), then the likeness of the two spellings.
    let mut best: Option<(usize, f64, &str)> = None;
    for candidate in candidates {
        if candidate == name || candidate.len() > LONGEST {
            continue;
        }
        let other = candidate.to_lowercase();
        let score = if other == lower {
            1.0
        } else {
            strsim::jaro_winkler(&lower, &other)
        };
        // Two edits at most can make a name near without the likeness, and
        // every edit changes the counts of at most two letters by one each:
        // names whose letters differ more are not measured (a program of
        // thousands of names spent most of its check here).
        if score < 0.88 && lower.is_ascii() && other.is_ascii() && letters_apart(&lower, &other) > 4
        {
            continue;
        }
        let distance = strsim::osa_distance(&lower, &other);
        // Near: spellings alike by Jaro-Winkler (a shared start counts:
        // `Rand` is near `RandInt`), or few edits. A name of one letter is
        // near only itself in the other case (`q` is not a misspelled
        // `P`), and two edits are a slip only in a name of five letters or
        // more (`Foo` is not a misspelled `Col`).
        let letters = name.chars().count();
        let close = score >= 0.88
            || (distance < letters && (distance <= 1 || (distance == 2 && letters >= 5)));
        // Ties go to the name first in order, so the hint never depends
        // on the order the candidates come in (some come from hash maps).
        if close
            && best.is_none_or(|(d, s, c)| {
                (distance, -score) < (d, -s) || (distance == d && score == s && candidate < c)
            })
        {
            best = Some((distance, score, candidate));
        }
    }
    best.map(|(_, _, c)| c)
}

/// How far apart the counts of each letter of `a` and `b` are, summed: an
/// edit (a letter put in, left out, changed, or two swapped) moves it by two
/// at most, so half of it is a floor under the edits between them (for
/// names in ASCII, whose letters are bytes).
fn letters_apart(a: &str, b: &str) -> usize {
    let mut counts = [0i32; 256];
    for byte in a.bytes() {
        counts[byte as usize] += 1;
    }
    for byte in b.bytes() {
        counts[byte as usize] -= 1;
    }
    counts.iter().map(|c| c.unsigned_abs() as usize).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_show_what_a_terminal_would_act_on_escaped() {
        assert_eq!(
            printable("plain `x`\nsecond line"),
            "plain `x`\nsecond line"
        );
        assert_eq!(printable("`\u{1b}[31mRED`"), "`\\u{1b}[31mRED`");
        assert_eq!(printable("a\u{202e}b"), "a\\u{202e}b");
        assert_eq!(crate::syntax::lexer::shown('\u{200b}'), "\\u{200b}");
        assert_eq!(crate::syntax::lexer::shown('\u{301}'), "\\u{301}");
        assert_eq!(crate::syntax::lexer::shown('^'), "^");
        assert_eq!(crate::syntax::lexer::shown('\''), "'");
        assert_eq!(crate::syntax::lexer::shown('é'), "é");
    }

    #[test]
    fn a_near_miss_is_the_fewest_edits_away_and_one_letter_is_near_only_its_other_case() {
        // Two letters swapped are one edit: `end`, not `Mean` (two edits).
        assert_eq!(near_miss("edn", ["Mean", "end"]), Some("end"));
        assert_eq!(near_miss("writeln", ["Write", "WriteLn"]), Some("WriteLn"));
        assert_eq!(near_miss("totl", ["total", "x"]), Some("total"));
        assert_eq!(near_miss("q", ["P", "k"]), None);
        assert_eq!(near_miss("y", ["Y", "x"]), Some("Y"));
    }

    #[test]
    fn a_file_not_found_is_said_of_its_folder_only_when_that_is_missing() {
        let not_found = std::io::Error::from(std::io::ErrorKind::NotFound);
        let here = std::env::temp_dir().join("made-here.txt");
        assert_eq!(
            io_write_reason(&not_found, &here),
            "no file can be made there"
        );
        let missing = std::env::temp_dir()
            .join("no-such-folder-here")
            .join("x.txt");
        assert_eq!(
            io_write_reason(&not_found, &missing),
            "its folder does not exist"
        );
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(io_write_reason(&denied, &here), "permission denied");
    }

    #[test]
    fn what_is_not_shown_is_counted_as_errors_and_warnings() {
        let error = Diagnostic::new(Span::new(0, 0, 1), "e");
        let warning = Diagnostic::warning(Span::new(0, 0, 1), "w");
        let line = |d: &[Diagnostic]| not_shown(d);
        assert_eq!(
            line(std::slice::from_ref(&error)),
            "1 more error is not shown: fix the ones above first"
        );
        assert_eq!(
            line(&[error.clone(), error.clone(), warning.clone()]),
            "2 more errors and 1 warning are not shown: fix the ones above first"
        );
        assert_eq!(
            line(&[warning.clone(), warning]),
            "2 more warnings are not shown: fix the ones above first"
        );
    }

    /// `Save(m, 'nosuch/')` failed with the system's "Not a directory"
    /// where nothing of that name exists.
    #[test]
    fn a_name_ending_in_a_slash_is_said_to_name_a_folder() {
        let not_a_folder = std::io::Error::from(std::io::ErrorKind::NotADirectory);
        let is_a_folder = std::io::Error::from(std::io::ErrorKind::IsADirectory);
        let missing = std::path::PathBuf::from("no-such-folder-here/");
        for e in [&not_a_folder, &is_a_folder] {
            assert_eq!(
                io_write_reason(e, &missing),
                "a name ending in `/` is a folder's, not a file's"
            );
        }
        let there = std::path::PathBuf::from(format!("{}/", std::env::temp_dir().display()));
        assert_eq!(
            io_write_reason(&is_a_folder, &there),
            "it is a folder, not a file"
        );
        let through_a_file = std::env::temp_dir().join("x.txt").join("y.txt");
        assert_eq!(
            io_write_reason(&not_a_folder, &through_a_file),
            "a part of its folder's path is a file, not a folder"
        );
    }

    #[test]
    fn two_sources_of_one_name_are_drawn_each_at_its_own_lines() {
        // Two statements of one notebook cell: one on its line 1, one on
        // its line 4, named alike.
        let mut map = SourceMap::default();
        let first = map.add_at("cell [4]", "x := 1;", 0);
        let second = map.add_at("cell [4]", "y := x + z;", 3);
        let d = Diagnostic::new(Span::new(second, 9, 10), "unknown variable `z`")
            .with_label(Span::new(second, 9, 10), "not known")
            .with_label(Span::new(first, 0, 1), "x is assigned here");
        let text = map.render_to_string(&d);
        assert!(text.contains("[ cell [4]:4:10 ]"), "{text}");
        assert!(text.contains(" 1 │ x := 1;"), "{text}");
        assert!(text.contains(" 4 │ y := x + z;"), "{text}");
        assert_eq!(map.line_column(Span::new(second, 9, 10)), (4, 10));
    }

    #[test]
    fn line_and_column_count_characters() {
        let mut map = SourceMap::default();
        let id = map.add("a.tape", "x := 1;\néé := 2;");
        assert_eq!(map.line_column(Span::new(id, 0, 1)), (1, 1));
        assert_eq!(map.line_column(Span::new(id, 12, 13)), (2, 3));
    }

    /// The line index gives what counting the newlines before each byte
    /// gives: at a newline, just after one, inside a character, past the
    /// end, and in a source that starts on a later line.
    #[test]
    fn the_line_index_agrees_with_counting_newlines() {
        let text = "\na\n\néé := 1;\r\nx\n";
        let mut map = SourceMap::default();
        let id = map.add("a.tape", text);
        let later = map.add_at("cell", text, 5);
        for at in 0..=text.len() + 2 {
            let start = floor_char_boundary(text, at.min(text.len()));
            let line = text[..start].matches('\n').count() + 1;
            let column = text[..start]
                .rsplit('\n')
                .next()
                .map_or(0, |l| l.chars().count())
                + 1;
            assert_eq!(
                map.line_column(Span::new(id, at, at)),
                (line, column),
                "{at}"
            );
            assert_eq!(map.line(Span::new(later, at, at)), line + 5, "{at}");
        }
    }

    #[test]
    fn near_misses() {
        assert_eq!(
            near_miss("transpose", ["Transpose", "Tanh"]),
            Some("Transpose")
        );
        assert_eq!(near_miss("Sofmax", ["RowSoftmax", "Sum"]), None);
        assert_eq!(
            near_miss("RowSofmax", ["RowSoftmax", "Sum"]),
            Some("RowSoftmax")
        );
        assert_eq!(near_miss("qq", ["zz"]), None);
        assert_eq!(near_miss("Foo", ["Col"]), None);
        assert_eq!(near_miss("brek", ["break"]), Some("break"));
    }

    #[test]
    fn rendering_names_file_line_and_column() {
        let mut map = SourceMap::default();
        let id = map.add("demo.tape", "x := y;\n");
        let d = Diagnostic::new(Span::new(id, 5, 6), "unknown variable `y`")
            .with_label(Span::new(id, 5, 6), "never assigned");
        let text = map.render_to_string(&d);
        assert!(text.contains("demo.tape:1:6"), "{text}");
        assert!(text.contains("unknown variable `y`"));
        assert!(!text.contains('\u{1b}'));
    }
}
