//! The picture of a tape as SVG, laid out and drawn by tapec itself (no
//! system tool): a layered layout, each record below its inputs.
//!
//! - A record's layer is one more than its deepest input's; leaves are at
//!   the top.
//! - An arrow that spans several layers passes through a gap kept for it in
//!   each layer between, so it never crosses a box.
//! - The order within each layer is improved by a few sweeps that sort by
//!   the mean place of the neighbours above, then below (the barycentre
//!   heuristic), which keeps most arrows short and uncrossed.
//!
//! Boxes hold the lines `graph::box_lines` gives, the same as the DOT
//! picture's.

use crate::diagnostic::SourceMap;
use crate::tape::{Op, Record, Tape, Tensor};

/// The name a record is shown under: its variable's, and for a function's
/// result the line and column of the call that gave it (two calls of one
/// function are two boxes).
pub fn shown_name(record: &Record, sources: &SourceMap) -> Option<String> {
    let name = record.name.as_ref()?;
    Some(match record.call {
        Some(call) => {
            let (line, column) = sources.line_column(call);
            format!("{name} at {line}:{column}")
        }
        None => name.to_string(),
    })
}

/// Matrices up to this many elements are shown in full; larger ones by
/// shape and range.
const SHOWN_IN_FULL: usize = 16;

/// A number as short as it can be and still readable: up to 4 decimals,
/// or, for a number those would show as 0 that is not 0, and for one of a
/// million or more, 4 significant digits with an exponent (a blame of
/// 0.00001 is `1e-5`, not `0`: a 0 says the result does not depend on it;
/// 1e308 is `1e308`, not its 309 digits).
fn compact(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x != 0.0 && (x.abs() < 0.00005 || x.abs() >= 1e6) {
        let text = format!("{x:.3e}");
        let (mantissa, exponent) = text.split_once('e').expect("an exponent");
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}e{exponent}");
    }
    let text = format!("{x:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.to_string()
    }
}

pub fn describe(t: &Tensor) -> String {
    match t {
        Tensor::Scalar(x) => compact(*x),
        Tensor::Matrix(m) if m.len() <= SHOWN_IN_FULL => m
            .rows()
            .into_iter()
            .map(|row| {
                format!(
                    "[{}]",
                    row.iter()
                        .map(|x| compact(*x))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Tensor::Matrix(m) => {
            let lo = m.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = m.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!(
                "{}×{} from {} to {}",
                m.nrows(),
                m.ncols(),
                compact(lo),
                compact(hi)
            )
        }
    }
}

fn shape(t: &Tensor) -> String {
    match t {
        Tensor::Scalar(_) => "number".into(),
        Tensor::Matrix(m) => format!("{}×{}", m.nrows(), m.ncols()),
    }
}

/// Per record, whether some later record takes it as an input. A leaf
/// that none takes (the token numbers `Embed` reads, the targets of
/// `CrossEntropy`, a number read only to size something) is drawn apart:
/// no blame can reach it.
pub fn taken(tape: &Tape) -> Vec<bool> {
    let mut taken = vec![false; tape.records.len()];
    for record in &tape.records {
        for &input in &record.inputs {
            taken[input as usize] = true;
        }
    }
    taken
}

/// Whether record `k` is a leaf that no operation takes as an input.
pub fn untaken_leaf(tape: &Tape, k: usize, taken: &[bool]) -> bool {
    tape.records[k].op == Op::Leaf && !taken[k] && tape.result != Some(k as u32)
}

/// The lines of record `k`'s box: its number, name and operation (leaves
/// and the result marked), its shape, a leaf that no operation takes said
/// so, its value, and its blame once walked. `taken` is [`taken`]'s.
pub fn box_lines(tape: &Tape, k: usize, sources: &SourceMap, taken: &[bool]) -> Vec<String> {
    let record = &tape.records[k];
    let title = match (&shown_name(record, sources), &record.op) {
        (Some(name), Op::Leaf) => format!("{name} (leaf)"),
        (None, Op::Leaf) => "constant".to_string(),
        (Some(name), op) => format!("{name} = {}", op.name()),
        (None, op) => op.name().to_string(),
    };
    let title = if tape.result == Some(k as u32) {
        format!("{title}  [result]")
    } else {
        title
    };
    let mut lines = vec![format!("#{} {title}", k + 1), shape(&record.value)];
    if untaken_leaf(tape, k, taken) {
        lines.push("an input of no operation: its blame stays 0".to_string());
    }
    lines.push("value:".to_string());
    lines.extend(describe(&record.value).lines().map(str::to_string));
    if tape.result.is_some() {
        lines.push("blame:".to_string());
        lines.extend(
            describe(&tape.blame_of(k as u32))
                .lines()
                .map(str::to_string),
        );
    }
    lines
}

/// Pixels per character and per line of a box's text (monospace, 12 px).
const CHAR_WIDTH: f64 = 7.3;
const LINE_HEIGHT: f64 = 15.0;
const PAD: f64 = 8.0;
/// The space between two boxes of a layer, between layers, and what a
/// passing arrow takes in a layer.
const GAP_X: f64 = 28.0;
const GAP_Y: f64 = 56.0;
const LANE: f64 = 12.0;
const MARGIN: f64 = 20.0;

/// A place in a layer: a record's box, or a lane an arrow passes through.
#[derive(Clone, Copy, PartialEq)]
enum Item {
    Record(usize),
    /// The `n`-th lane of the arrow list.
    Lane(usize),
}

/// Where each item of each layer stands, after the layout.
struct Layout {
    /// Per record: (x, y, width, height) of its box.
    boxes: Vec<(f64, f64, f64, f64)>,
    /// Per lane: its centre x and its layer's top y and bottom y.
    lanes: Vec<(f64, f64, f64)>,
    /// Arrows: (input, output, the lanes it passes, top to bottom).
    arrows: Vec<(usize, usize, Vec<usize>)>,
    width: f64,
    height: f64,
}

fn lay_out(lines: &[Vec<String>], tape: &Tape) -> Layout {
    let n = tape.records.len();
    let mut layer = vec![0usize; n];
    for (k, record) in tape.records.iter().enumerate() {
        layer[k] = record
            .inputs
            .iter()
            .map(|&i| layer[i as usize] + 1)
            .max()
            .unwrap_or(0);
    }
    // A leaf sits just above its first user, not with every leaf at the
    // top: its arrows stay short.
    for k in (0..n).rev() {
        if tape.records[k].inputs.is_empty() {
            let users = tape.records[k + 1..]
                .iter()
                .enumerate()
                .filter(|(_, r)| r.inputs.contains(&(k as u32)))
                .map(|(j, _)| layer[k + 1 + j]);
            if let Some(first) = users.min() {
                layer[k] = first.saturating_sub(1);
            }
        }
    }
    let depth = layer.iter().copied().max().unwrap_or(0) + 1;
    let mut layers: Vec<Vec<Item>> = vec![Vec::new(); depth];
    for (k, &l) in layer.iter().enumerate() {
        layers[l].push(Item::Record(k));
    }
    // Each arrow, with a lane in every layer strictly between its ends.
    let mut arrows = Vec::new();
    let mut lane_layer = Vec::new();
    for (k, record) in tape.records.iter().enumerate() {
        let mut seen = Vec::new();
        for &input in &record.inputs {
            let input = input as usize;
            // An input used twice (`Hadamard(x, x)`) is one arrow.
            if seen.contains(&input) {
                continue;
            }
            seen.push(input);
            let mut passes = Vec::new();
            let between = layer[input] + 1..layer[k];
            for (l, row) in layers
                .iter_mut()
                .enumerate()
                .take(between.end)
                .skip(between.start)
            {
                passes.push(lane_layer.len());
                row.push(Item::Lane(lane_layer.len()));
                lane_layer.push(l);
            }
            arrows.push((input, k, passes));
        }
    }
    // The neighbours of each item above and below it.
    let key = |item: Item| match item {
        Item::Record(k) => k,
        Item::Lane(i) => n + i,
    };
    let mut up: Vec<Vec<usize>> = vec![Vec::new(); n + lane_layer.len()];
    let mut down: Vec<Vec<usize>> = vec![Vec::new(); n + lane_layer.len()];
    for (from, to, passes) in &arrows {
        let chain: Vec<usize> = std::iter::once(*from)
            .chain(passes.iter().map(|&p| n + p))
            .chain(std::iter::once(*to))
            .collect();
        for pair in chain.windows(2) {
            down[pair[0]].push(pair[1]);
            up[pair[1]].push(pair[0]);
        }
    }
    let mut position = vec![0.0f64; n + lane_layer.len()];
    let number = |layers: &Vec<Vec<Item>>, position: &mut Vec<f64>| {
        for row in layers {
            for (i, &item) in row.iter().enumerate() {
                position[key(item)] = i as f64;
            }
        }
    };
    number(&layers, &mut position);
    for sweep in 0..8 {
        let downward = sweep % 2 == 0;
        let order: Vec<usize> = if downward {
            (1..depth).collect()
        } else {
            (0..depth.saturating_sub(1)).rev().collect()
        };
        for l in order {
            let neighbours = if downward { &up } else { &down };
            let mut keyed: Vec<(f64, usize, Item)> = layers[l]
                .iter()
                .enumerate()
                .map(|(i, &item)| {
                    let near = &neighbours[key(item)];
                    let centre = if near.is_empty() {
                        position[key(item)]
                    } else {
                        near.iter().map(|&j| position[j]).sum::<f64>() / near.len() as f64
                    };
                    (centre, i, item)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            layers[l] = keyed.into_iter().map(|(_, _, item)| item).collect();
            for (i, &item) in layers[l].iter().enumerate() {
                position[key(item)] = i as f64;
            }
        }
    }
    // Sizes, then places: each layer centred on the widest.
    let size = |k: usize| {
        let widest = lines[k]
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(1);
        (
            widest as f64 * CHAR_WIDTH + 2.0 * PAD,
            lines[k].len() as f64 * LINE_HEIGHT + 2.0 * PAD,
        )
    };
    let item_width = |item: Item| match item {
        Item::Record(k) => size(k).0,
        Item::Lane(_) => LANE,
    };
    let row_width = |row: &Vec<Item>| {
        row.iter().map(|&i| item_width(i)).sum::<f64>() + GAP_X * row.len().saturating_sub(1) as f64
    };
    let widest = layers.iter().map(row_width).fold(0.0, f64::max);
    let mut boxes = vec![(0.0, 0.0, 0.0, 0.0); n];
    let mut lanes = vec![(0.0, 0.0, 0.0); lane_layer.len()];
    let mut y = MARGIN;
    for row in &layers {
        let tallest = row
            .iter()
            .map(|&item| match item {
                Item::Record(k) => size(k).1,
                Item::Lane(_) => 0.0,
            })
            .fold(0.0, f64::max);
        let mut x = MARGIN + (widest - row_width(row)) / 2.0;
        for &item in row {
            match item {
                Item::Record(k) => {
                    let (w, h) = size(k);
                    boxes[k] = (x, y, w, h);
                }
                Item::Lane(i) => lanes[i] = (x + LANE / 2.0, y, y + tallest),
            }
            x += item_width(item) + GAP_X;
        }
        y += tallest + GAP_Y;
    }
    Layout {
        boxes,
        lanes,
        arrows,
        width: widest + 2.0 * MARGIN,
        height: y - GAP_Y + MARGIN,
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The SVG text of `tape`'s picture.
pub fn svg(tape: &Tape, sources: &SourceMap) -> String {
    let taken = taken(tape);
    let lines: Vec<Vec<String>> = (0..tape.records.len())
        .map(|k| box_lines(tape, k, sources, &taken))
        .collect();
    svg_of(tape, &lines)
}

/// The SVG text of `tape`'s picture with `lines[k]` in record `k`'s box:
/// one `<text>` per line, in order, inside the record's `<g>`.
pub fn svg_of(tape: &Tape, lines: &[Vec<String>]) -> String {
    let layout = lay_out(lines, tape);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"12\">\n\
         <defs><marker id=\"head\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/></marker></defs>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
        w = layout.width,
        h = layout.height
    );
    // Arrows first, so that boxes are drawn over their ends.
    for (from, to, passes) in &layout.arrows {
        let (fx, fy, fw, fh) = layout.boxes[*from];
        let (tx, ty, tw, _) = layout.boxes[*to];
        let mut points = vec![(fx + fw / 2.0, fy + fh)];
        for &p in passes {
            let (x, top, bottom) = layout.lanes[p];
            points.push((x, top));
            points.push((x, bottom));
        }
        points.push((tx + tw / 2.0, ty));
        let mut d = format!("M{:.1},{:.1}", points[0].0, points[0].1);
        for pair in points.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            if (x0 - x1).abs() < 0.01 {
                d.push_str(&format!(" L{x1:.1},{y1:.1}"));
            } else {
                let mid = (y0 + y1) / 2.0;
                d.push_str(&format!(
                    " C{x0:.1},{mid:.1} {x1:.1},{mid:.1} {x1:.1},{y1:.1}"
                ));
            }
        }
        out.push_str(&format!(
            "<path class=\"edge\" data-from=\"{}\" data-to=\"{}\" d=\"{d}\" fill=\"none\" stroke=\"#555\" stroke-width=\"1.2\" marker-end=\"url(#head)\"/>\n",
            from + 1,
            to + 1
        ));
    }
    let taken = taken(tape);
    for (k, (x, y, w, h)) in layout.boxes.iter().enumerate() {
        let record = &tape.records[k];
        let (fill, stroke, width) = if tape.result == Some(k as u32) {
            ("#fde2e2", "#b22222", 2.0)
        } else if untaken_leaf(tape, k, &taken) {
            ("#f4f4f4", "#888888", 1.0)
        } else if record.op == Op::Leaf {
            ("#e3eefc", "#4a6fa5", 1.0)
        } else {
            ("#ffffff", "#333333", 1.0)
        };
        let dashes = if untaken_leaf(tape, k, &taken) {
            " stroke-dasharray=\"5 3\""
        } else {
            ""
        };
        out.push_str(&format!(
            "<g class=\"record\" data-record=\"{}\"><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" rx=\"6\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{width}\"{dashes}/>\n",
            k + 1
        ));
        for (i, line) in lines[k].iter().enumerate() {
            let weight = if i == 0 { " font-weight=\"bold\"" } else { "" };
            out.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\"{weight} xml:space=\"preserve\">{}</text>\n",
                x + PAD,
                y + PAD + (i as f64 + 0.8) * LINE_HEIGHT,
                escape(line)
            ));
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

/// The most records a picture (SVG, PNG, the walk page) is drawn for. An
/// arrow that spans layers keeps a gap in every layer it passes, so a
/// picture's size can grow with the square of its records: a product of
/// 2,000 factors of one variable (2,000 records) drew 137 MB of SVG in 4
/// seconds. A thousand records are far beyond what a reader follows; the
/// course's largest tape has 35. DOT has no such limit.
pub const MOST_DRAWN: usize = 1000;

/// The most pixels a PNG is drawn with: 32 million (128 MB while it is
/// drawn), against 5.4 million for the course's largest picture. A tape of
/// 300 terms summed laid out 41,419×48,746 pixels, which took 57 seconds
/// and 16 GB to rasterise.
pub const MOST_PIXELS: u64 = 32 << 20;

/// Why `tape` is not drawn, if it is too large to be: a sentence for the
/// user, naming what was asked for (`what`: "`tape.svg`", "the picture").
pub fn too_many_records(tape: &Tape, what: &str) -> Option<String> {
    too_many_to_draw(tape, what)
        .map(|why| format!("{why}; write it as .dot, which has no limit, or draw a smaller tape"))
}

/// Why `tape` is not drawn, if it is too large to be, with no advice: for
/// a caller whose way out is another (a notebook's `:walk`).
pub fn too_many_to_draw(tape: &Tape, what: &str) -> Option<String> {
    (tape.records.len() > MOST_DRAWN).then(|| {
        format!(
            "cannot draw {what}: the tape has {} records, and a picture is drawn for at most \
             {MOST_DRAWN}",
            tape.records.len()
        )
    })
}

/// `tape`'s picture as PNG, rasterised from the same SVG by resvg (pure
/// Rust). Text is set in DejaVu Sans Mono, which tapec carries (the
/// `dejavu` crate), never in the machine's fonts: a fresh machine with no
/// fonts draws the same picture, to the pixel, as any other. A picture of
/// more than [`MOST_PIXELS`] is refused before it is rasterised.
pub fn png(tape: &Tape, sources: &SourceMap) -> Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    use std::sync::Arc;
    let text = svg(tape, sources);
    let mut options = usvg::Options::default();
    let fonts = options.fontdb_mut();
    for face in [dejavu::sans_mono::regular(), dejavu::sans_mono::bold()] {
        fonts.load_font_source(usvg::fontdb::Source::Binary(Arc::new(face)));
    }
    fonts.set_monospace_family("DejaVu Sans Mono");
    let tree = usvg::Tree::from_str(&text, &options).map_err(|e| e.to_string())?;
    let size = tree.size().to_int_size();
    let pixels = u64::from(size.width()) * u64::from(size.height());
    if pixels > MOST_PIXELS {
        return Err(format!(
            "the picture is {}×{} pixels, more than a PNG is drawn with ({} million); \
             write it as .svg, which a browser shows at any size",
            size.width(),
            size.height(),
            MOST_PIXELS >> 20
        ));
    }
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or("the picture is too large to rasterise")?;
    resvg::render(
        &tree,
        tiny_skia::Transform::identity(),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_and_never_minus_zero() {
        assert_eq!(compact(0.5), "0.5");
        assert_eq!(compact(-4.5), "-4.5");
        assert_eq!(compact(21.0), "21");
        assert_eq!(compact(-0.0), "0");
        assert_eq!(compact(0.00004), "4e-5");
        assert_eq!(compact(-0.00001), "-1e-5");
        assert_eq!(compact(1.2345678e-9), "1.235e-9");
        assert_eq!(compact(0.00005), "0.0001");
        assert_eq!(compact(f64::NEG_INFINITY), "-inf");
        assert_eq!(compact(999_999.0), "999999");
        assert_eq!(compact(1e6), "1e6");
        assert_eq!(compact(-2.5e7), "-2.5e7");
        assert_eq!(compact(1e308), "1e308");
    }
}
