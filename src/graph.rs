//! The picture of a tape: Graphviz DOT with one box per record (its name or
//! operation, its shape, its value and its blame) and an arrow from each
//! input to the record that used it. Leaves and the result are styled apart.
//! SVG and PNG are drawn by `picture.rs`, the walk's page by `page.rs`;
//! this module also writes the walk as text.

use std::path::Path;

use crate::diagnostic::SourceMap;
use crate::picture::{box_lines, describe, shown_name, taken, untaken_leaf};
use crate::tape::{Op, Tape, Tensor, WalkStep};

/// Escapes text for a double-quoted DOT string; newlines become line breaks.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The DOT text of `tape`.
pub fn dot(tape: &Tape, sources: &SourceMap) -> String {
    let mut out = String::from(
        "digraph tape {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10, style=\"rounded,filled\", fillcolor=\"#ffffff\"];\n  edge [color=\"#555555\"];\n",
    );
    let taken = taken(tape);
    for (k, record) in tape.records.iter().enumerate() {
        let is_result = tape.result == Some(k as u32);
        let label = box_lines(tape, k, sources, &taken).join("\n");
        let style = match (&record.op, is_result) {
            (_, true) => ", fillcolor=\"#fde2e2\", penwidth=2",
            _ if untaken_leaf(tape, k, &taken) => {
                ", fillcolor=\"#f4f4f4\", color=\"#888888\", shape=box, style=\"filled,dashed\""
            }
            (Op::Leaf, _) => ", fillcolor=\"#e3eefc\", shape=box, style=\"filled\"",
            _ => "",
        };
        out.push_str(&format!("  n{k} [label=\"{}\"{style}];\n", escape(&label)));
    }
    for (k, record) in tape.records.iter().enumerate() {
        for input in &record.inputs {
            out.push_str(&format!("  n{input} -> n{k};\n"));
        }
    }
    out.push_str("}\n");
    out
}

/// The format a picture is written in, from its file name's ending: "dot"
/// (also for `.gv` or no ending), "svg" or "png". Any other ending is an
/// error, a sentence for the user, found before the program runs.
pub fn format_of(path: &Path) -> Result<&'static str, String> {
    let ending = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("dot")
        .to_ascii_lowercase();
    match ending.as_str() {
        "dot" | "gv" => Ok("dot"),
        "svg" => Ok("svg"),
        "png" => Ok("png"),
        "html" | "htm" => Ok("html"),
        _ => Err(format!(
            "cannot draw `{}`: the picture can be written as .dot, .svg, .png, or .html \
             (a page that steps through the walk)",
            path.display()
        )),
    }
}

/// Whether what is at `path` may be written over by a picture: nothing
/// yet, an empty file, something other than a file, or a file that starts
/// as one of the pictures `graph` writes (DOT, SVG, PNG, the walk's page).
/// Anything else, a program above all (`tapec graph prog -o prog`, or a
/// link to it), is kept.
pub(crate) fn holds_a_picture(path: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        return true;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return true;
    }
    let mut start = Vec::with_capacity(64);
    if file.take(64).read_to_end(&mut start).is_err() {
        return true;
    }
    let text = String::from_utf8_lossy(&start);
    let text = text.trim_start().to_ascii_lowercase();
    start.is_empty()
        || start.starts_with(b"\x89PNG")
        || ["digraph", "<svg", "<?xml", "<!doctype html", "<html"]
            .iter()
            .any(|p| text.starts_with(p))
}

/// Writes the picture of `tape` to `path`: DOT as it is, SVG or PNG drawn
/// by tapec (`picture.rs`), or the walk as a page (`page.rs`, which walks
/// the tape again with its steps written down). `title` names the program
/// on the page. The error is a sentence for the user.
pub fn write(tape: &mut Tape, path: &Path, title: &str, sources: &SourceMap) -> Result<(), String> {
    let format = format_of(path)?;
    let what = format!("`{}`", path.display());
    if !holds_a_picture(path) {
        return Err(format!(
            "cannot write {what}: it is a file that holds no picture (the program itself, or \
             another), and a picture is written over a picture only; name another file, such \
             as `tape.{}`",
            if format == "dot" { "dot" } else { format }
        ));
    }
    // The walk's page draws the tape too; its way out is the walk as text.
    if format == "html"
        && let Some(why) = crate::picture::too_many_to_draw(tape, &what)
    {
        return Err(format!(
            "{why}; the walk as text has no limit (`tapec graph --walk`, `:walk` at the \
             prompt), or walk a smaller tape"
        ));
    }
    if format != "dot"
        && let Some(message) = crate::picture::too_many_records(tape, &what)
    {
        return Err(message);
    }
    let bytes = match format {
        "png" => crate::picture::png(tape, sources)
            .map_err(|e| format!("cannot draw `{}`: {e}", path.display()))?,
        "svg" => crate::picture::svg(tape, sources).into_bytes(),
        "html" => {
            let steps = tape.walk_steps().ok_or_else(|| {
                format!(
                    "cannot write `{}`: the last tape has not been walked, so there is no walk to show",
                    path.display()
                )
            })?;
            crate::page::html(tape, &steps, title, sources).into_bytes()
        }
        _ => dot(tape, sources).into_bytes(),
    };
    std::fs::write(path, bytes).map_err(|e| {
        format!(
            "cannot write `{}`: {}",
            path.display(),
            crate::diagnostic::io_write_reason(&e, path)
        )
    })
}

/// A record as a step names it: `#9 o = matrix product`, `#1 k (leaf)`.
fn record_title(tape: &Tape, k: usize, sources: &SourceMap) -> String {
    let record = &tape.records[k];
    match (shown_name(record, sources), &record.op) {
        (Some(name), Op::Leaf) => format!("#{} {name} (leaf)", k + 1),
        (None, Op::Leaf) => format!("#{} constant", k + 1),
        (Some(name), op) => format!("#{} {name} = {}", k + 1, op.name()),
        (None, op) => format!("#{} {}", k + 1, op.name()),
    }
}

/// A value on lines of its own below a heading, indented.
fn indented(value: &Tensor, indent: &str) -> String {
    describe(value)
        .lines()
        .map(|line| format!("{indent}{line}\n"))
        .collect()
}

/// The walk as text, one step a paragraph: the record visited, the blame
/// it holds, and the share its per-link rule hands each input. What
/// `tapec graph --walk` prints and `:walk` shows a step at a time.
pub fn walk_text(tape: &Tape, steps: &[WalkStep], sources: &SourceMap) -> Vec<String> {
    let total = steps.len();
    steps
        .iter()
        .enumerate()
        .map(|(n, step)| {
            let k = step.record as usize;
            let mut text = format!(
                "step {} of {total}: {}",
                n + 1,
                record_title(tape, k, sources)
            );
            if tape.result == Some(step.record) {
                text.push_str(", the tape's result: the walk starts here with blame 1\n");
            } else {
                text.push_str(", whose blame is now complete:\n");
                text.push_str(&indented(&step.blame, "    "));
            }
            if step.shares.is_empty() {
                let why = if tape.records[k].op == Op::Leaf {
                    "a leaf hands blame to nothing"
                } else {
                    "its inputs are selectors, which get no blame"
                };
                text.push_str(&format!("  {why}\n"));
            }
            for (input, share) in &step.shares {
                text.push_str(&format!(
                    "  its per-link rule hands {} the share\n",
                    record_title(tape, *input as usize, sources)
                ));
                text.push_str(&indented(share, "    "));
            }
            text
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(escape("a \"b\" \\ c\nd"), "a \\\"b\\\" \\\\ c\\nd");
    }
}
