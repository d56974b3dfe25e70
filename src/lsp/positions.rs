//! Where the editor's positions meet tapec's spans: a line index over one
//! document's text, the only place that turns a byte offset into a line
//! and column, or back.
//!
//! Spans are byte offsets; an editor counts a line's characters in UTF-16
//! code units unless the client and the server agreed on UTF-8 bytes
//! (`positionEncoding`). Lines end at `\n`, `\r\n` or `\r`, as the protocol
//! says. A position past the end of its line means the line's end, and one
//! past the last line the document's end: nothing a client sends can point
//! outside the text or inside a character.

use lsp_types::{Position, Range};

use crate::diagnostic::Span;

/// How the columns of positions are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 bytes, when the client offered it.
    Utf8,
    /// UTF-16 code units: the protocol's default.
    Utf16,
}

/// A document's text with where each line starts, and where each character
/// whose UTF-8 and UTF-16 lengths differ lies: with them, a column in
/// either count is found by a binary search, so converting every one of
/// thousands of diagnostics on one long line stays cheap.
#[derive(Debug, Clone)]
pub struct LineIndex {
    text: String,
    /// The byte offset at which each line starts; the first is 0.
    starts: Vec<usize>,
    /// The byte offset at which each line's text ends (its terminator's start).
    ends: Vec<usize>,
    /// Each character longer in UTF-8 than in UTF-16 (all but ASCII), by
    /// its byte offset, with the bytes it saves in UTF-16 added up over it
    /// and every such character before it.
    wide: Vec<(usize, usize)>,
}

impl LineIndex {
    pub fn new(text: String) -> LineIndex {
        let mut starts = vec![0];
        let mut ends = Vec::new();
        let mut wide = Vec::new();
        let mut saved = 0;
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            match bytes[at] {
                b'\n' => {
                    ends.push(at);
                    starts.push(at + 1);
                    at += 1;
                }
                b'\r' => {
                    ends.push(at);
                    at += if bytes.get(at + 1) == Some(&b'\n') {
                        2
                    } else {
                        1
                    };
                    starts.push(at);
                }
                b if b < 0x80 => at += 1,
                _ => {
                    let c = text[at..].chars().next().unwrap_or('\u{FFFD}');
                    saved += c.len_utf8() - c.len_utf16();
                    wide.push((at, saved));
                    at += c.len_utf8();
                }
            }
        }
        ends.push(text.len());
        LineIndex {
            text,
            starts,
            ends,
            wide,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn into_text(self) -> String {
        self.text
    }

    /// How many lines the text has (a text ending in a newline has an
    /// empty last line).
    pub fn lines(&self) -> usize {
        self.starts.len()
    }

    /// The bytes saved in UTF-16 by the wide characters before `offset`.
    fn saved_before(&self, offset: usize) -> usize {
        let n = self.wide.partition_point(|&(at, _)| at < offset);
        n.checked_sub(1).map_or(0, |i| self.wide[i].1)
    }

    /// The largest character boundary at or before `offset`, in the text.
    fn floor(&self, offset: usize) -> usize {
        let mut at = offset.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    /// The line and column of a byte offset (clamped to the text).
    pub fn position(&self, offset: usize, encoding: Encoding) -> Position {
        let offset = self.floor(offset);
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        // An offset inside a line's terminator is at the line's end.
        let offset = offset.min(self.ends[line]);
        let start = self.starts[line];
        let column = match encoding {
            Encoding::Utf8 => offset - start,
            Encoding::Utf16 => {
                (offset - start) - (self.saved_before(offset) - self.saved_before(start))
            }
        };
        Position::new(to_u32(line), to_u32(column))
    }

    /// The byte offset of a position, clamped: past its line's end is the
    /// line's end, past the last line the text's end, and a column inside
    /// a character is that character's start.
    pub fn offset(&self, position: Position, encoding: Encoding) -> usize {
        let line = position.line as usize;
        if line >= self.starts.len() {
            return self.text.len();
        }
        let (start, end) = (self.starts[line], self.ends[line]);
        let wanted = position.character as usize;
        match encoding {
            Encoding::Utf8 => self.floor(start.saturating_add(wanted).min(end)),
            Encoding::Utf16 => {
                let mut units = 0;
                for (i, c) in self.text[start..end].char_indices() {
                    units += c.len_utf16();
                    if units > wanted {
                        return start + i;
                    }
                }
                end
            }
        }
    }

    pub fn range(&self, span: Span, encoding: Encoding) -> Range {
        Range::new(
            self.position(span.start, encoding),
            self.position(span.end.max(span.start), encoding),
        )
    }

    /// The byte range of an editor's range, clamped, start before end.
    pub fn span_of(&self, range: Range, encoding: Encoding) -> (usize, usize) {
        let a = self.offset(range.start, encoding);
        let b = self.offset(range.end, encoding);
        (a.min(b), a.max(b))
    }

    /// The text of the line that holds `offset`, without its terminator.
    pub fn line_text(&self, offset: usize) -> &str {
        let offset = self.floor(offset);
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        &self.text[self.starts[line]..self.ends[line]]
    }

    /// The 1-based number of the line that holds `offset`.
    pub fn line_number(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= self.floor(offset))
    }
}

/// Lines and columns are `u32` in the protocol; a text of more than 4 GiB
/// is not a document an editor sends.
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(text: &str) -> LineIndex {
        LineIndex::new(text.to_string())
    }

    #[test]
    fn columns_count_utf16_units_or_bytes() {
        // `×` is 2 bytes and 1 unit, `🙂` 4 bytes and 2 units.
        let lines = index("a := 1;\nWriteLn('× 🙂', y);\n");
        let y = lines.text().find("y)").unwrap();
        assert_eq!(lines.position(y, Encoding::Utf16), Position::new(1, 16));
        assert_eq!(lines.position(y, Encoding::Utf8), Position::new(1, 19));
        assert_eq!(lines.offset(Position::new(1, 16), Encoding::Utf16), y);
        assert_eq!(lines.offset(Position::new(1, 19), Encoding::Utf8), y);
        assert_eq!(lines.position(0, Encoding::Utf16), Position::new(0, 0));
    }

    #[test]
    fn every_offset_goes_there_and_back() {
        let text = "é := 1;\r\n{ 🙂 }\rx×y\n\n";
        let lines = index(text);
        for encoding in [Encoding::Utf8, Encoding::Utf16] {
            for (at, _) in text
                .char_indices()
                .filter(|(_, c)| *c != '\n' && *c != '\r')
            {
                let p = lines.position(at, encoding);
                assert_eq!(lines.offset(p, encoding), at, "{at} {p:?} {encoding:?}");
            }
        }
        assert_eq!(lines.lines(), 5);
    }

    #[test]
    fn positions_outside_the_text_are_clamped() {
        let text = "x := 1;\n🙂y\n";
        let lines = index(text);
        let e = Encoding::Utf16;
        // Past the line's end: the line's end.
        assert_eq!(lines.offset(Position::new(0, 1000), e), 7);
        // Inside the emoji's surrogate pair, or its bytes: its start.
        assert_eq!(lines.offset(Position::new(1, 1), e), 8);
        assert_eq!(lines.offset(Position::new(1, 2), Encoding::Utf8), 8);
        // Past the last line: the end of the text.
        assert_eq!(lines.offset(Position::new(99, 0), e), text.len());
        assert_eq!(
            lines.offset(Position::new(u32::MAX, u32::MAX), e),
            text.len()
        );
        // An offset past the end, or inside a character.
        assert_eq!(lines.position(10_000, e), Position::new(2, 0));
        assert_eq!(lines.position(9, e), Position::new(1, 0));
        assert_eq!(index("").position(5, e), Position::new(0, 0));
    }
}
