//! The walk as a page: one self-contained HTML file (its script and style
//! inline, nothing fetched) holding the tape's picture and a control that
//! steps through the reverse walk.
//!
//! Everything the page shows comes from here: the picture is
//! [`picture::svg_of`]'s, the steps are the real walk's
//! ([`Tape::walk_steps`]), and every number is formatted by
//! [`picture::describe`] or sent as data. The running sum an input holds
//! after each share is added here with the walk's own
//! [`Tensor::accumulate`], in the walk's order, so the sum after the last
//! share is the input's blame bit for bit. The page's script
//! (`page.html`) only picks which of these texts to show at which step.

use serde_json::{Value, json};

use crate::diagnostic::SourceMap;
use crate::picture::{self, describe, shown_name};
use crate::tape::{Op, Tape, Tensor, WalkStep};

const TEMPLATE: &str = include_str!("page.html");

/// A statement's text on one line, cut short if long.
fn one_line(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() > 60 {
        let cut: String = line.chars().take(57).collect();
        format!("{cut}...")
    } else {
        line
    }
}

/// What record `k` is called in a caption: its variable, else the source
/// text of the expression that made it.
fn called(tape: &Tape, k: usize, sources: &SourceMap) -> String {
    let record = &tape.records[k];
    if let Some(name) = shown_name(record, sources) {
        return name;
    }
    if record.op == Op::Leaf {
        return "a constant".to_string();
    }
    let text = sources.text(record.span.source);
    match text.get(record.span.start..record.span.end) {
        Some(expr) if !expr.trim().is_empty() => one_line(expr),
        _ => format!("record #{}", k + 1),
    }
}

/// Record `k` as a caption states it: `p = RowSoftmax(sm)`.
fn statement(tape: &Tape, k: usize, sources: &SourceMap) -> String {
    let record = &tape.records[k];
    let text = sources.text(record.span.source);
    let expr = text
        .get(record.span.start..record.span.end)
        .map(one_line)
        .unwrap_or_default();
    match shown_name(record, sources) {
        Some(name) if record.op != Op::Leaf && !expr.is_empty() => format!("{name} = {expr}"),
        _ => called(tape, k, sources),
    }
}

/// A number as data: JSON has no infinity, so those are strings.
fn number(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else if x.is_nan() {
        json!("nan")
    } else if x > 0.0 {
        json!("inf")
    } else {
        json!("-inf")
    }
}

/// The most elements of one value the page lists for the panel a click
/// opens (a 64×64 matrix) ...
const LISTED_EACH: usize = 64 * 64;
/// ... and the most in all: the course's largest page, `programs/gpt.tape`'s,
/// lists some 84,000. Past either a value is shown by its box's lines
/// alone, so that a tape holding a large matrix makes a page of a size in
/// its records, not in its elements.
const LISTED_IN_ALL: usize = 1 << 20;

/// A value as the page holds it: the lines its box shows, and every
/// element for the panel a click opens, while `left` (what may still be
/// listed) allows; else why they are not listed.
fn tensor(t: &Tensor, left: &mut usize) -> Value {
    let text: Vec<String> = describe(t).lines().map(str::to_string).collect();
    let (rows, cols) = t.shape();
    let scalar = matches!(t, Tensor::Scalar(_));
    let count = rows * cols;
    if count > LISTED_EACH || count > *left {
        let why = if count > LISTED_EACH {
            format!(
                "{rows}×{cols} elements: too many to list here (a page lists up to {LISTED_EACH} of one value)"
            )
        } else {
            format!(
                "{rows}×{cols} elements: not listed, the page has listed as many numbers as it holds ({LISTED_IN_ALL})"
            )
        };
        return json!({ "text": text, "rows": rows, "cols": cols, "scalar": scalar, "data": null, "unlisted": why });
    }
    *left -= count;
    let data: Vec<Value> = match t {
        Tensor::Scalar(x) => vec![number(*x)],
        Tensor::Matrix(m) => m.iter().map(|&x| number(x)).collect(),
    };
    json!({ "text": text, "rows": rows, "cols": cols, "scalar": scalar, "data": data })
}

/// The heading of a box's blame once `got` of its `of` shares have come.
fn heading(got: usize, of: usize) -> String {
    if got < of {
        format!("blame so far, {got} of {of} shares:")
    } else {
        "blame:".to_string()
    }
}

const NOT_YET: &str = "blame: not yet";

/// "`a`", "`a` and `b`", "`a`, `b` and `c`".
fn listed(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The caption of one step, in the course's words.
fn caption(
    tape: &Tape,
    n: usize,
    total: usize,
    step: &WalkStep,
    got: &[usize],
    of: &[usize],
    sources: &SourceMap,
) -> String {
    let k = step.record as usize;
    let record = &tape.records[k];
    let what = statement(tape, k, sources);
    let mut text = format!("Step {n} of {total}: ");
    if tape.result == Some(step.record) {
        text.push_str(&format!(
            "the walk starts at the tape's result, `{what}`, with blame 1."
        ));
    } else if record.op == Op::Leaf {
        match shown_name(record, sources) {
            Some(name) => text.push_str(&format!(
                "`{name}` is a leaf: the tape read it from a variable. Its blame is complete, \
                 and a leaf hands blame to nothing: this is what `Blame({name})` reads."
            )),
            None => text.push_str(
                "a constant of the program is a leaf: its blame is complete, and it hands \
                 blame to nothing.",
            ),
        }
        return text;
    } else {
        text.push_str(&format!(
            "`{what}` now holds all its blame: every record that used it is newer on the \
             tape, and the walk has visited them."
        ));
    }
    if step.shares.is_empty() {
        text.push_str(" Its inputs are selectors, which get no blame.");
        return text;
    }
    let mut names: Vec<String> = Vec::new();
    for (input, _) in &step.shares {
        let name = called(tape, *input as usize, sources);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let their = match (names.len(), step.shares.len()) {
        (1, 1) => "its share".to_string(),
        (1, n) => format!("{n} shares"),
        _ => "their shares".to_string(),
    };
    text.push_str(&format!(
        " Through the per-link rule of {} it hands {} {their} of that blame.",
        record.op.name(),
        listed(&names)
    ));
    let mut seen = Vec::new();
    for (input, _) in &step.shares {
        let i = *input as usize;
        if seen.contains(&i) {
            continue;
        }
        seen.push(i);
        if of[i] > 1 {
            let name = called(tape, i, sources);
            if got[i] < of[i] {
                text.push_str(&format!(
                    " `{name}` has {} of its {} shares so far: its blame is their running sum.",
                    got[i], of[i]
                ));
            } else {
                text.push_str(&format!(
                    " That was the last of `{name}`'s {} shares: its blame is their sum.",
                    of[i]
                ));
            }
        }
    }
    text
}

/// The page of `tape`'s walk, `steps` being [`Tape::walk_steps`]'s.
pub fn html(tape: &Tape, steps: &[WalkStep], title: &str, sources: &SourceMap) -> String {
    let n = tape.records.len();
    // How many shares each record receives in the whole walk.
    let mut of = vec![0usize; n];
    for step in steps {
        for (input, _) in &step.shares {
            of[*input as usize] += 1;
        }
    }
    let widest = |t: &Tensor| {
        describe(t)
            .lines()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0)
    };
    // The steps, with each share's running sum added as the walk adds it;
    // and the widest blame each box will show at any step.
    let mut wide: Vec<usize> = (0..n)
        .map(|k| {
            NOT_YET
                .chars()
                .count()
                .max(heading(0, of[k]).chars().count())
                .max(widest(&tape.blame_of(k as u32)))
        })
        .collect();
    // The values are listed first, then the walk's blames in its order.
    let mut left = LISTED_IN_ALL;
    let mut values: Vec<Value> = (0..n)
        .map(|k| tensor(&tape.records[k].value, &mut left))
        .collect();
    let mut sums: Vec<Option<Tensor>> = vec![None; n];
    let mut got = vec![0usize; n];
    let mut step_data = Vec::with_capacity(steps.len());
    for (s, step) in steps.iter().enumerate() {
        let mut shares = Vec::new();
        for (input, share) in &step.shares {
            let i = *input as usize;
            let sum = match sums[i].take() {
                Some(mut sum) => {
                    sum.accumulate(share.clone());
                    sum
                }
                None => share.clone(),
            };
            got[i] += 1;
            wide[i] = wide[i].max(widest(&sum));
            shares.push(json!({
                "input": i,
                "share": tensor(share, &mut left),
                "sum": tensor(&sum, &mut left),
                "heading": heading(got[i], of[i]),
            }));
            sums[i] = Some(sum);
        }
        let caption = caption(tape, s + 1, steps.len(), step, &got, &of, sources);
        step_data.push(json!({
            "record": step.record,
            "blame": tensor(&step.blame, &mut left),
            "caption": caption,
            "shares": shares,
        }));
    }
    // Each record's box: the lines above its blame, then room for the
    // widest and tallest blame it shows at any step (every blame of a
    // record has its shape, so as many lines as the final one).
    let mut records = Vec::with_capacity(n);
    let mut lines = Vec::with_capacity(n);
    let taken = picture::taken(tape);
    for (k, &width) in wide.iter().enumerate() {
        let mut shown = picture::box_lines(tape, k, sources, &taken);
        if let Some(at) = shown.iter().position(|l| l == "blame:") {
            shown.truncate(at);
        }
        let rows = describe(&tape.blame_of(k as u32)).lines().count().max(1);
        records.push(json!({
            "title": shown[0],
            "value": values[k].take(),
            "blameAt": shown.len(),
            "blameRows": rows,
            "reached": tape.blame.get(k).is_some_and(Option::is_some),
        }));
        shown.push(format!("{NOT_YET:<width$}"));
        shown.extend(std::iter::repeat_n(String::new(), rows));
        lines.push(shown);
    }
    let start = format!(
        "Step 0 of {}: the tape holds {n} record{}, each with the value the forward run gave \
         it. No blame is known yet: the reverse walk has not started, so every box says \
         \u{201c}not yet\u{201d}. Step forward to start the walk at the tape's result.",
        steps.len(),
        if n == 1 { "" } else { "s" }
    );
    let data = json!({
        "title": title,
        "records": records,
        "steps": step_data,
        "start": start,
        "notYet": NOT_YET,
    });
    // Inside a <script> element, `</` would end it early and `<!--`
    // would start a comment that swallows the script after it; JSON has
    // `<` only inside strings, where `\u003c` means the same.
    let data = data.to_string().replace('<', "\\u003c");
    let svg = picture::svg_of(tape, &lines);
    fill(
        TEMPLATE,
        &[
            ("{{TITLE}}", &escape(title)),
            ("{{SVG}}", &svg),
            ("{{DATA}}", &data),
        ],
    )
}

/// `template` with each placeholder replaced, in one pass: what is put in
/// is never searched for placeholders itself.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some((at, (key, value))) = values
        .iter()
        .filter_map(|pair| rest.find(pair.0).map(|at| (at, pair)))
        .min_by_key(|(at, _)| *at)
    {
        out.push_str(&rest[..at]);
        out.push_str(value);
        rest = &rest[at + key.len()..];
    }
    out.push_str(rest);
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
