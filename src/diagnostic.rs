//! One diagnostic type for every error a user can cause, and its rendering.
//!
//! This is the only module that calls ariadne. Every stage (lexer, parser,
//! checker, evaluator, tape) reports through [`Diagnostic`], which carries a
//! primary span, labelled spans and hints in plain words. Spans are byte
//! ranges into one of the texts held by a [`SourceMap`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;

use ariadne::{Color, Config, IndexType, Label, Report, ReportKind, Source};

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
        let whole = ids
            .iter()
            .map(|&id| {
                let (_, text, first_line) = &self.sources[id];
                let text: Cow<str> = match first_line {
                    0 => text.as_str().into(),
                    n => format!("{}{text}", "\n".repeat(*n)).into(),
                };
                (id, Source::from(text))
            })
            .collect();
        let mut cache = Drawn {
            map: self,
            whole,
            cut: Vec::new(),
        };
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
        cache: &mut Drawn,
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
        // A span as a range of the text ariadne draws: on characters'
        // boundaries, past the blank lines the text is drawn after.
        let clamp = |span: Span| {
            let text = self.text(span.source);
            let start = floor_char_boundary(text, span.start.min(text.len()));
            let end = floor_char_boundary(text, span.end.min(text.len())).max(start);
            let shift = self.sources[span.source].2;
            (span.source, start + shift..end + shift)
        };
        let config = Config::default()
            .with_color(color)
            .with_index_type(IndexType::Byte);
        let kind = if diagnostic.warning {
            ReportKind::Warning
        } else {
            ReportKind::Error
        };
        let mut labels: Vec<(usize, Span, String)> = diagnostic
            .labels
            .iter()
            .enumerate()
            .map(|(k, (s, t))| (k, *s, t.clone()))
            .collect();
        if labels.is_empty() {
            labels.push((0, diagnostic.span, String::new()));
        }
        // In the order they appear in the text, so ariadne draws one section
        // per source; the error's own source first, so that the first place
        // named (`╭─[ entry 14:1:7 ]`) is where the error is, not an earlier
        // entry that a label points back to.
        let home = diagnostic.span.source;
        labels.sort_by_key(|(_, span, _)| (span.source != home, span.source, span.start));
        let primary = clamp(diagnostic.span);
        let spans: Vec<(SourceId, Range<usize>)> =
            labels.iter().map(|(_, span, _)| clamp(*span)).collect();
        // A label on a line too long to draw whole: ariadne draws a copy
        // with that line cut to windows, and its header is mended after.
        cache.cut = cache.cuts(&primary, &spans);
        let place = |(id, range): &(SourceId, Range<usize>)| match cache.cut_of(*id) {
            Some((cut, _)) => (*id, cut.place(range.start)..cut.place(range.end)),
            None => (*id, range.clone()),
        };
        let mut report = Report::build(kind, place(&primary))
            .with_config(config)
            .with_message(printable(&diagnostic.message));
        for ((order, _, text), span) in labels.iter().zip(&spans) {
            let mut label = Label::new(place(span));
            if !text.is_empty() {
                label = label.with_message(printable(text));
            }
            if color {
                label = label.with_color(if *order == 0 && !diagnostic.warning {
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
        let _ = report.finish().write(&mut *cache, &mut text);
        if !cache.cut.is_empty() {
            let heads = cache.locations(&primary, &spans);
            text = relocated(&String::from_utf8_lossy(&text), &heads).into_bytes();
            cache.cut.clear();
        }
        let _ = out.write_all(&text);
    }

    /// Renders to a string (no colour): what the golden error files hold.
    pub fn render_to_string(&self, diagnostic: &Diagnostic) -> String {
        let mut out = Vec::new();
        self.render(diagnostic, false, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// A line of more characters than this is drawn in windows around the
/// ends of its labels, not whole: a program of one long line (minified,
/// or made by another program) printed all of itself for each error, 8 MB
/// for the 50 errors shown of a 160 KB line. A line up to it is drawn
/// whole, as a terminal wraps it into a few rows.
const LONG_LINE: usize = 1_000;

/// How many characters a window shows on either side of a label's end.
const WINDOW_SIDE: usize = 80;

/// What stands in a long line for the text left out of it.
const CUT: &str = "…";

/// Put after a source's name when the header's location is to be written
/// over ([`relocated`]): nothing else ariadne writes holds it, as a source
/// line is drawn without its break and every message goes through
/// [`printable`], which escapes NUL.
const RELOCATE: &str = "\n\u{0}";

/// The line breaks ariadne splits a text into lines at (with `\r\n` one).
const LINE_BREAKS: [char; 7] = [
    '\r', '\n', '\u{0b}', '\u{0c}', '\u{85}', '\u{2028}', '\u{2029}',
];

/// The sources of one rendering as ariadne reads them, each indexed once,
/// and for the diagnostic being drawn the cut copies of those with a long
/// line drawn.
struct Drawn<'a> {
    map: &'a SourceMap,
    /// By id, in order.
    whole: Vec<(SourceId, Source<Cow<'a, str>>)>,
    cut: Vec<(SourceId, Cut, Source<Cow<'a, str>>)>,
}

impl<'a> Drawn<'a> {
    fn whole(&self, id: SourceId) -> Option<&Source<Cow<'a, str>>> {
        let at = self.whole.binary_search_by_key(&id, |(i, _)| *i).ok()?;
        Some(&self.whole[at].1)
    }

    fn cut_of(&self, id: SourceId) -> Option<(&Cut, &Source<Cow<'a, str>>)> {
        self.cut
            .iter()
            .find(|(i, _, _)| *i == id)
            .map(|(_, cut, source)| (cut, source))
    }

    /// The sources with a long line at an end of one of `labels`, cut
    /// around those ends and the `primary` span's start; none when every
    /// line drawn is short, and the diagnostic is drawn as it always was.
    fn cuts(
        &self,
        primary: &(SourceId, Range<usize>),
        labels: &[(SourceId, Range<usize>)],
    ) -> Vec<(SourceId, Cut, Source<Cow<'a, str>>)> {
        let mut ids: Vec<SourceId> = labels.iter().map(|(id, _)| *id).collect();
        ids.dedup();
        let mut cuts = Vec::new();
        for id in ids {
            let Some(whole) = self.whole(id) else {
                continue;
            };
            let drawn: Vec<usize> = labels
                .iter()
                .filter(|(i, _)| *i == id)
                .flat_map(|(_, range)| [range.start, last_byte(whole.text(), range)])
                .collect();
            let also = (primary.0 == id).then_some(primary.1.start);
            if let Some(cut) = Cut::new(whole, &drawn, also) {
                let source = Source::from(Cow::Owned(cut.text.clone()));
                cuts.push((id, cut, source));
            }
        }
        cuts
    }

    /// The location ariadne's header gives each section of the report,
    /// `:LINE:COLUMN`, as it gives it for the whole text: the sections are
    /// ariadne's (a source's labels in order, a new section where a label
    /// ends on a line before the last one's), each placed at the primary
    /// span in its source and elsewhere at its first label.
    fn locations(
        &self,
        primary: &(SourceId, Range<usize>),
        labels: &[(SourceId, Range<usize>)],
    ) -> Vec<String> {
        let mut heads = Vec::new();
        let mut last: Option<(SourceId, usize)> = None;
        for (id, range) in labels {
            let Some(whole) = self.whole(*id) else {
                continue;
            };
            let line_of = |at: usize| whole.get_byte_line(at).map_or(0, |(_, line, _)| line);
            let end_line = line_of(last_byte(whole.text(), range));
            if !matches!(last, Some((i, line)) if i == *id && line <= end_line) {
                let at = if primary.0 == *id {
                    primary.1.start
                } else {
                    range.start
                };
                heads.push(match whole.get_byte_line(at) {
                    Some((line, index, column)) => {
                        let text = whole.get_line_text(line).unwrap_or("");
                        let column = text.get(..column).map_or(0, |t| t.chars().count());
                        format!(":{}:{}", index + 1, column + 1)
                    }
                    None => ":?:?".to_string(),
                });
            }
            last = Some((*id, end_line));
        }
        heads
    }
}

impl<'a> ariadne::Cache<SourceId> for Drawn<'a> {
    type Storage = Cow<'a, str>;

    fn fetch(&mut self, id: &SourceId) -> Result<&Source<Cow<'a, str>>, impl std::fmt::Debug> {
        match self.cut_of(*id) {
            Some((_, source)) => Ok(source),
            None => self.whole(*id).ok_or("no such source"),
        }
    }

    fn display<'b>(&self, id: &'b SourceId) -> Option<impl std::fmt::Display + 'b> {
        let name = self.map.name(*id);
        Some(if self.cut.is_empty() {
            name.to_string()
        } else {
            format!("{name}{RELOCATE}")
        })
    }
}

/// Where ariadne takes a label to end: its last character, or its start
/// when it is empty.
fn last_byte(text: &str, range: &Range<usize>) -> usize {
    if range.end > range.start {
        floor_char_boundary(text, range.end - 1)
    } else {
        range.start
    }
}

/// `text` with each header's location, marked by [`RELOCATE`], written
/// over by the next of `heads`: ariadne counted the column on the cut
/// line, these count it on the whole one.
fn relocated(text: &str, heads: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut heads = heads.iter();
    while let Some(at) = rest.find(RELOCATE) {
        out.push_str(&rest[..at]);
        rest = &rest[at + RELOCATE.len()..];
        // Ariadne's `:LINE:COLUMN` runs to the space before the `]`.
        if let Some(head) = heads.next() {
            out.push_str(head);
            rest = &rest[rest.find(' ').unwrap_or(rest.len())..];
        }
    }
    out.push_str(rest);
    out
}

/// The lines of a source from the first to the last of some points, those
/// longer than [`LONG_LINE`] with only windows around the points on them,
/// after as many blank lines as there are lines before: ariadne draws it
/// with every line at its number, and the long ones short.
struct Cut {
    text: String,
    /// What was kept of the whole text, in order: where each piece starts
    /// in the whole text, where in `text`, and its length in bytes.
    pieces: Vec<(usize, usize, usize)>,
}

impl Cut {
    /// The cut around `drawn` (and `also`, drawn or not), or `None` when
    /// no line drawn is long.
    fn new(whole: &Source<Cow<str>>, drawn: &[usize], also: Option<usize>) -> Option<Cut> {
        // Each line with a point on it: where it starts, and its points.
        let mut lines: BTreeMap<usize, (usize, Vec<usize>)> = BTreeMap::new();
        let mut long_drawn = false;
        for (k, &at) in drawn.iter().chain(also.iter()).enumerate() {
            let Some((line, index, column)) = whole.get_byte_line(at) else {
                continue;
            };
            let text = whole.get_line_text(line).unwrap_or("");
            long_drawn |= k < drawn.len() && is_long(body(text));
            lines
                .entry(index)
                .or_insert((at - column, Vec::new()))
                .1
                .push(column);
        }
        if !long_drawn {
            return None;
        }
        let (&first, &(mut start, _)) = lines.first_key_value()?;
        let last = *lines.last_key_value()?.0;
        let mut cut = Cut {
            text: "\n".repeat(first),
            pieces: Vec::new(),
        };
        for index in first..=last {
            let text = whole
                .line(index)
                .and_then(|line| whole.get_line_text(line))
                .unwrap_or("");
            match lines.get(&index) {
                Some((_, points)) if is_long(body(text)) => cut.windows(start, text, points),
                _ => cut.keep(start, text),
            }
            start += text.len();
        }
        Some(cut)
    }

    /// Copies `text`, which starts at `from` in the whole text.
    fn keep(&mut self, from: usize, text: &str) {
        if !text.is_empty() {
            self.pieces.push((from, self.text.len(), text.len()));
            self.text.push_str(text);
        }
    }

    /// Copies of `line` (at `from` in the whole text) the characters
    /// within [`WINDOW_SIDE`] of each of `points` (byte offsets into it),
    /// [`CUT`] for each stretch left out, and its line break.
    fn windows(&mut self, from: usize, line: &str, points: &[usize]) {
        let body = body(line);
        let mut windows: Vec<(usize, usize)> = points
            .iter()
            .map(|&at| {
                let at = floor_char_boundary(body, at.min(body.len()));
                let before = body[..at]
                    .char_indices()
                    .nth_back(WINDOW_SIDE - 1)
                    .map_or(0, |(i, _)| i);
                let after = body[at..]
                    .char_indices()
                    .nth(WINDOW_SIDE)
                    .map_or(body.len(), |(i, _)| at + i);
                (before, after)
            })
            .collect();
        windows.sort_unstable();
        let mut joined: Vec<(usize, usize)> = Vec::new();
        for (start, end) in windows {
            match joined.last_mut() {
                // Overlapping, or apart by less than a few characters
                // (more to read than the cut would save).
                Some(last) if start <= last.1 || body[last.1..start].chars().nth(8).is_none() => {
                    last.1 = last.1.max(end)
                }
                _ => joined.push((start, end)),
            }
        }
        let mut done = 0;
        for (start, end) in joined {
            if start > done {
                self.text.push_str(CUT);
            }
            self.keep(from + start, &body[start..end]);
            done = end;
        }
        if done < body.len() {
            self.text.push_str(CUT);
        }
        self.keep(from + body.len(), &line[body.len()..]);
    }

    /// Where `at`, a byte offset of the whole text kept in the cut (or at
    /// the end of a piece kept), is in the cut.
    fn place(&self, at: usize) -> usize {
        let after = self.pieces.partition_point(|&(from, _, _)| from <= at);
        match after.checked_sub(1) {
            Some(k) => {
                let (from, to, len) = self.pieces[k];
                to + (at - from).min(len)
            }
            None => self.pieces.first().map_or(0, |&(_, to, _)| to),
        }
    }
}

/// A line without its line break.
fn body(line: &str) -> &str {
    line.strip_suffix("\r\n")
        .unwrap_or_else(|| line.strip_suffix(LINE_BREAKS).unwrap_or(line))
}

/// Whether `text` has more than [`LONG_LINE`] characters, counted no
/// further than that.
fn is_long(text: &str) -> bool {
    text.len() > LONG_LINE && text.chars().nth(LONG_LINE).is_some()
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

    /// A line of `n` characters: `x := 'é';` over and over, a character
    /// of two bytes in each.
    fn long_line(n: usize) -> String {
        "x := 'é'; ".chars().cycle().take(n).collect()
    }

    #[test]
    fn a_long_line_is_drawn_as_a_window_around_its_label_at_its_true_column() {
        let mut map = SourceMap::default();
        let before = long_line(5_000);
        let text = format!("y := 1;\n{before}z := w;{before}\n");
        let id = map.add("long.tape", text.as_str());
        let at = text.find("w;").expect("the label");
        let d = Diagnostic::new(Span::new(id, at, at + 1), "unknown variable `w`")
            .with_label(Span::new(id, at, at + 1), "never assigned");
        let shown = map.render_to_string(&d);
        assert_eq!(map.line_column(d.span), (2, 5_006));
        assert!(shown.contains("[ long.tape:2:5006 ]"), "{shown}");
        assert!(shown.contains(" 2 │ …"), "{shown}");
        assert!(shown.contains("z := w;"), "{shown}");
        assert!(shown.contains("never assigned"), "{shown}");
        let drawn = shown
            .lines()
            .find(|l| l.starts_with(" 2 │"))
            .expect("line 2");
        assert_eq!(drawn.matches(CUT).count(), 2, "{drawn}");
        assert!(drawn.chars().count() < 2 * WINDOW_SIDE + 20, "{drawn}");
        // The underline stands under the `w` of the window.
        let under = shown.lines().find(|l| l.contains('┬')).expect("underline");
        let column = |line: &str, ch: char| line.chars().position(|c| c == ch);
        let w = drawn.find("w;").map(|at| drawn[..at].chars().count());
        assert_eq!(column(under, '┬'), w, "{shown}");
    }

    #[test]
    fn a_line_of_the_longest_drawn_whole_is_drawn_as_before() {
        let mut map = SourceMap::default();
        let text = long_line(LONG_LINE);
        let id = map.add("a.tape", text.as_str());
        let d = Diagnostic::new(Span::new(id, 900, 901), "here");
        let shown = map.render_to_string(&d);
        assert!(shown.contains(text.trim_end()), "{shown}");
        assert!(!shown.contains(CUT), "{shown}");
        let longer = format!("{text}x");
        let id = map.add("b.tape", longer.as_str());
        let d = Diagnostic::new(Span::new(id, 900, 901), "here");
        assert!(map.render_to_string(&d).contains(CUT));
    }

    /// Labels far apart on one long line: one window each, `…` between.
    #[test]
    fn labels_far_apart_on_a_long_line_each_get_a_window() {
        let mut map = SourceMap::default();
        let gap = long_line(3_000);
        let text = format!("c := a {gap}* b;\n");
        let id = map.add("far.tape", text.as_str());
        let a = text.find('a').expect("a");
        let b = text.rfind('b').expect("b");
        let d = Diagnostic::new(Span::new(id, a, b + 1), "cannot multiply")
            .with_label(Span::new(id, a, a + 1), "this is the left")
            .with_label(Span::new(id, b, b + 1), "this is the right");
        let shown = map.render_to_string(&d);
        assert!(shown.contains("[ far.tape:1:6 ]"), "{shown}");
        let drawn = shown
            .lines()
            .find(|l| l.starts_with(" 1 │"))
            .expect("line 1");
        assert!(drawn.contains("c := a "), "{drawn}");
        assert!(drawn.contains("* b;"), "{drawn}");
        assert_eq!(drawn.matches(CUT).count(), 1, "{drawn}");
        assert!(shown.contains("this is the left"), "{shown}");
        assert!(shown.contains("this is the right"), "{shown}");
        assert!(shown.len() < 4 * 4 * WINDOW_SIDE + 1_000, "{shown}");
    }

    /// A cell's statement on a later line of its cell, with a long line:
    /// the header and the margin both number it as in the cell, and the
    /// message is escaped as ever.
    #[test]
    fn a_long_line_of_a_later_source_keeps_its_number_and_the_message_its_escapes() {
        let mut map = SourceMap::default();
        let text = format!("{}q := ;", long_line(2_000));
        let id = map.add_at("cell [2]", text.as_str(), 6);
        let at = text.find("q :=").expect("q");
        let d = Diagnostic::new(Span::new(id, at + 5, at + 6), "odd `\u{1b}[31m`")
            .with_label(Span::new(id, at + 5, at + 6), "here\u{202e}");
        let shown = map.render_to_string(&d);
        assert!(shown.contains("[ cell [2]:7:2006 ]"), "{shown}");
        assert!(shown.contains(" 7 │ …"), "{shown}");
        assert!(shown.contains("odd `\\u{1b}[31m`"), "{shown}");
        assert!(shown.contains("here\\u{202e}"), "{shown}");
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{0}'),
            "{shown}"
        );
    }

    /// With colour the header's location is written over as without.
    #[test]
    fn a_coloured_header_of_a_long_line_gives_the_true_column() {
        let mut map = SourceMap::default();
        let text = format!("{}q := ;", long_line(2_000));
        let id = map.add("c.tape", text.as_str());
        let at = text.rfind(';').expect("the end");
        let d = Diagnostic::new(Span::new(id, at, at + 1), "expected an expression");
        let mut out = Vec::new();
        map.render(&d, true, &mut out);
        let shown = String::from_utf8(out).expect("UTF-8");
        assert!(shown.contains(" c.tape:1:2006 "), "{shown}");
        assert!(shown.len() < 20_000, "{shown}");
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
