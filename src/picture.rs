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
//! - The layers and the lanes are counted first, from the tape alone: a
//!   tape whose arrows would keep too many lanes is refused before anything
//!   is laid out ([`too_many_to_draw`]), and a PNG too large is refused
//!   from the layout's size before any SVG is made.
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

/// What is known of a picture before anything in it is ordered or placed:
/// the layer of each record, the arrows that join them, and the lanes they
/// keep (an arrow keeps one in every layer strictly between its ends).
struct Plan {
    /// Per record: its layer.
    layer: Vec<usize>,
    /// Each arrow once, (input, output), in the order the records take
    /// their inputs.
    arrows: Vec<(usize, usize)>,
    /// Per layer: how many lanes arrows keep in it.
    lanes: Vec<usize>,
}

impl Plan {
    /// In time linear in the records and their inputs.
    fn of(tape: &Tape) -> Plan {
        let n = tape.records.len();
        let mut layer = vec![0usize; n];
        // Per record: the lowest layer of a record that takes it.
        let mut first_user = vec![usize::MAX; n];
        for (k, record) in tape.records.iter().enumerate() {
            layer[k] = record
                .inputs
                .iter()
                .map(|&i| layer[i as usize] + 1)
                .max()
                .unwrap_or(0);
            for &i in &record.inputs {
                first_user[i as usize] = first_user[i as usize].min(layer[k]);
            }
        }
        // A leaf sits just above its first user, not with every leaf at
        // the top: its arrows stay short. (Only records with inputs take
        // one, so no user moves.)
        for (k, record) in tape.records.iter().enumerate() {
            if record.inputs.is_empty() && first_user[k] != usize::MAX {
                layer[k] = first_user[k].saturating_sub(1);
            }
        }
        let depth = layer.iter().copied().max().unwrap_or(0) + 1;
        let mut arrows = Vec::new();
        // Counted by difference: +1 where an arrow's lanes begin, -1 past
        // where they end.
        let mut change = vec![0isize; depth + 1];
        // Per record: the last record that took it, so that an input used
        // twice (`Hadamard(x, x)`) is one arrow.
        let mut taken_by = vec![usize::MAX; n];
        for (k, record) in tape.records.iter().enumerate() {
            for &input in &record.inputs {
                let input = input as usize;
                if taken_by[input] == k {
                    continue;
                }
                taken_by[input] = k;
                arrows.push((input, k));
                if layer[input] + 1 < layer[k] {
                    change[layer[input] + 1] += 1;
                    change[layer[k]] -= 1;
                }
            }
        }
        let mut lanes = Vec::with_capacity(depth);
        let mut running = 0isize;
        for step in &change[..depth] {
            running += step;
            lanes.push(running as usize);
        }
        Plan {
            layer,
            arrows,
            lanes,
        }
    }

    /// Every lane of every layer: what the arrows are drawn through, one
    /// piece each.
    fn lane_count(&self) -> usize {
        self.lanes.iter().sum()
    }
}

/// The width and height of a box holding `lines`.
fn box_size(lines: &[String]) -> (f64, f64) {
    let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(1);
    (
        widest as f64 * CHAR_WIDTH + 2.0 * PAD,
        lines.len() as f64 * LINE_HEIGHT + 2.0 * PAD,
    )
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

/// `plan` laid out, `lines[k]` in record `k`'s box: the order within each
/// layer, then every place.
fn lay_out(lines: &[Vec<String>], plan: Plan) -> Layout {
    let depth = plan.lanes.len();
    let Plan {
        layer,
        arrows: pairs,
        ..
    } = plan;
    let n = layer.len();
    let mut layers: Vec<Vec<Item>> = vec![Vec::new(); depth];
    for (k, &l) in layer.iter().enumerate() {
        layers[l].push(Item::Record(k));
    }
    // Each arrow, with a lane in every layer strictly between its ends.
    let mut arrows = Vec::with_capacity(pairs.len());
    let mut lane_layer = Vec::new();
    for (input, k) in pairs {
        let mut passes = Vec::new();
        for (l, row) in layers
            .iter_mut()
            .enumerate()
            .take(layer[k])
            .skip(layer[input] + 1)
        {
            passes.push(lane_layer.len());
            row.push(Item::Lane(lane_layer.len()));
            lane_layer.push(l);
        }
        arrows.push((input, k, passes));
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
    let sizes: Vec<(f64, f64)> = lines.iter().map(|l| box_size(l)).collect();
    let item_width = |item: Item| match item {
        Item::Record(k) => sizes[k].0,
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
                Item::Record(k) => sizes[k].1,
                Item::Lane(_) => 0.0,
            })
            .fold(0.0, f64::max);
        let mut x = MARGIN + (widest - row_width(row)) / 2.0;
        for &item in row {
            match item {
                Item::Record(k) => {
                    let (w, h) = sizes[k];
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

/// The lines of every record's box, in record order.
fn all_lines(tape: &Tape, sources: &SourceMap) -> Vec<Vec<String>> {
    let taken = taken(tape);
    (0..tape.records.len())
        .map(|k| box_lines(tape, k, sources, &taken))
        .collect()
}

/// The SVG text of `tape`'s picture.
pub fn svg(tape: &Tape, sources: &SourceMap) -> String {
    svg_of(tape, &all_lines(tape, sources))
}

/// The SVG text of `tape`'s picture with `lines[k]` in record `k`'s box:
/// one `<text>` per line, in order, inside the record's `<g>`.
pub fn svg_of(tape: &Tape, lines: &[Vec<String>]) -> String {
    draw(tape, lines, &lay_out(lines, Plan::of(tape)))
}

/// A picture's width and height in whole pixels, as its SVG states them.
fn whole_pixels((width, height): (f64, f64)) -> (u64, u64) {
    let whole = |x: f64| format!("{x:.0}").parse::<u64>().unwrap_or(u64::MAX);
    (whole(width), whole(height))
}

/// The SVG text of `layout`, `lines[k]` in record `k`'s box.
fn draw(tape: &Tape, lines: &[Vec<String>], layout: &Layout) -> String {
    let (width, height) = whole_pixels((layout.width, layout.height));
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"12\">\n\
         <defs><marker id=\"head\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/></marker></defs>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
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

/// The most records a picture (SVG, PNG, the walk page) is drawn for. A
/// thousand records are far beyond what a reader follows; the course's
/// largest tape has 35. DOT has no such limit.
pub const MOST_DRAWN: usize = 1000;

/// The most lanes a picture keeps for its arrows (see [`lanes`]). Each
/// lane is a piece of an arrow drawn and a gap in its layer, so lanes are
/// what a picture's size grows with, and a record that takes a value made
/// far above it keeps one in every layer between: a tape's lanes can grow
/// with the square of its records. A chain of 999 records that each also
/// take the chain's first value (`s := s * x + x` repeated) keeps 497,503
/// lanes; it drew 33 MB of SVG, 39,980×161,822 pixels, in over a second.
/// 50,000 lanes are about 3.5 MB of SVG, drawn in a tenth of a second; a
/// sum of 300 terms keeps 44,551, the course's largest tape 20.
pub const MOST_LANES: usize = 50_000;

/// The most pixels a PNG is drawn with: 32 million (128 MB while it is
/// drawn), against 5.4 million for the course's largest picture. A tape of
/// 300 terms summed laid out 41,419×48,746 pixels, which took 57 seconds
/// and 16 GB to rasterise. The size is known from the layout, so a larger
/// picture is refused before any SVG is made.
pub const MOST_PIXELS: u64 = 32 << 20;

/// How many lanes the picture of `tape` keeps for its arrows: one in every
/// layer an arrow passes between its ends. Counted from the layers alone,
/// in time linear in the tape, before anything is laid out or drawn.
pub fn lanes(tape: &Tape) -> usize {
    Plan::of(tape).lane_count()
}

/// Why `tape` is not drawn, if it is too large to be: a sentence for the
/// user, naming what was asked for (`what`: "`tape.svg`", "the picture").
pub fn too_many_records(tape: &Tape, what: &str) -> Option<String> {
    too_many_to_draw(tape, what)
        .map(|why| format!("{why}; write it as .dot, which has no limit, or draw a smaller tape"))
}

/// Why `tape` is not drawn, if it is too large to be (more than
/// [`MOST_DRAWN`] records, or more than [`MOST_LANES`] lanes), with no
/// advice: for a caller whose way out is another (a notebook's `:walk`).
/// Nothing is laid out or drawn to find it.
pub fn too_many_to_draw(tape: &Tape, what: &str) -> Option<String> {
    if tape.records.len() > MOST_DRAWN {
        return Some(format!(
            "cannot draw {what}: the tape has {} records, and a picture is drawn for at most \
             {MOST_DRAWN}",
            tape.records.len()
        ));
    }
    let lanes = lanes(tape);
    (lanes > MOST_LANES).then(|| {
        format!(
            "cannot draw {what}: its arrows would pass a row of boxes {lanes} times on their way \
             from a value to its use, and a picture is drawn with at most {MOST_LANES}"
        )
    })
}

/// `tape`'s picture as PNG, rasterised from the same SVG by resvg (pure
/// Rust). Text is set in DejaVu Sans Mono, which tapec carries (the
/// `dejavu` crate), never in the machine's fonts: a fresh machine with no
/// fonts draws the same picture, to the pixel, as any other. A picture of
/// more than [`MOST_PIXELS`] is refused from the layout's size, before any
/// SVG is made.
pub fn png(tape: &Tape, sources: &SourceMap) -> Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    use std::sync::Arc;
    let lines = all_lines(tape, sources);
    let layout = lay_out(&lines, Plan::of(tape));
    let (width, height) = whole_pixels((layout.width, layout.height));
    if width.saturating_mul(height) > MOST_PIXELS {
        return Err(format!(
            "the picture is {width}×{height} pixels, more than a PNG is drawn with ({} million); \
             write it as .svg, which a browser shows at any size",
            MOST_PIXELS >> 20
        ));
    }
    let text = draw(tape, &lines, &layout);
    let mut options = usvg::Options::default();
    let fonts = options.fontdb_mut();
    for face in [dejavu::sans_mono::regular(), dejavu::sans_mono::bold()] {
        fonts.load_font_source(usvg::fontdb::Source::Binary(Arc::new(face)));
    }
    fonts.set_monospace_family("DejaVu Sans Mono");
    let tree = usvg::Tree::from_str(&text, &options).map_err(|e| e.to_string())?;
    let size = tree.size().to_int_size();
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

    use crate::tape::ops::Elementwise;

    /// A tape of numbers, one record per entry of `inputs`: a leaf where
    /// it is empty, else a sum of the records it names.
    fn tape_of(inputs: &[Vec<u32>]) -> Tape {
        let mut tape = Tape::default();
        for taken in inputs {
            let op = if taken.is_empty() {
                Op::Leaf
            } else {
                Op::Elementwise(Elementwise::Add)
            };
            tape.push(
                op,
                taken.iter().copied().collect(),
                Tensor::Scalar(1.0),
                crate::diagnostic::Span::default(),
            );
        }
        tape
    }

    /// A chain of `n` records in which each after the second also takes
    /// the first: the arrow from the first to record `k` passes `k - 1`
    /// layers.
    fn chain_taking_the_first(n: u32) -> Tape {
        let inputs: Vec<Vec<u32>> = (0..n)
            .map(|k| match k {
                0 => vec![],
                1 => vec![0],
                k => vec![k - 1, 0],
            })
            .collect();
        tape_of(&inputs)
    }

    #[test]
    fn the_lanes_counted_from_the_layers_are_the_lanes_the_layout_keeps() {
        let tapes = [
            chain_taking_the_first(40),
            // An input taken twice is one arrow; a leaf taken late sits
            // just above its first user; a diamond with a long side.
            tape_of(&[
                vec![],
                vec![0, 0],
                vec![1],
                vec![2],
                vec![],
                vec![3, 4, 1],
                vec![5, 0, 5],
            ]),
            tape_of(&[
                vec![],
                vec![],
                vec![0],
                vec![2, 1],
                vec![3, 0],
                vec![4, 2, 1],
            ]),
        ];
        for tape in &tapes {
            let lines = all_lines(tape, &SourceMap::default());
            let layout = lay_out(&lines, Plan::of(tape));
            assert_eq!(lanes(tape), layout.lanes.len());
            let passed: usize = layout.arrows.iter().map(|a| a.2.len()).sum();
            assert_eq!(passed, layout.lanes.len());
        }
        assert_eq!(lanes(&tapes[0]), 39 * 38 / 2);
        assert!(lanes(&tapes[1]) > 0 && lanes(&tapes[2]) > 0);
    }

    /// The count needs the tape alone (no box's text, no layout), so a
    /// tape far over the limit is refused as fast as one just over it.
    #[test]
    fn a_tape_with_too_many_lanes_is_refused_from_the_count_alone() {
        // 317 records keep 316 * 315 / 2 = 49,770 lanes; 318 keep 50,086.
        assert_eq!(too_many_to_draw(&chain_taking_the_first(317), "it"), None);
        assert_eq!(
            too_many_to_draw(&chain_taking_the_first(318), "`x.svg`").as_deref(),
            Some(
                "cannot draw `x.svg`: its arrows would pass a row of boxes 50086 times on \
                 their way from a value to its use, and a picture is drawn with at most 50000"
            )
        );
        let widest = chain_taking_the_first(MOST_DRAWN as u32);
        assert_eq!(lanes(&widest), 999 * 998 / 2);
        let why = too_many_records(&widest, "`x.png`").expect("refused");
        assert!(
            why.contains(" 498501 times ")
                && why.ends_with("write it as .dot, which has no limit, or draw a smaller tape"),
            "{why}"
        );
    }

    /// A PNG's size is known from the layout, before any SVG is made: the
    /// size it is refused with is the one the SVG states.
    #[test]
    fn a_png_too_large_is_refused_with_the_size_its_svg_states() {
        let tape = chain_taking_the_first(300);
        let sources = SourceMap::default();
        let why = png(&tape, &sources).expect_err("too large");
        let svg = svg(&tape, &sources);
        let stated = |name: &str| {
            let (_, after) = svg.split_once(&format!(" {name}=\"")).expect(name);
            after.split('"').next().expect(name).to_string()
        };
        assert_eq!(
            why,
            format!(
                "the picture is {}×{} pixels, more than a PNG is drawn with (32 million); \
                 write it as .svg, which a browser shows at any size",
                stated("width"),
                stated("height")
            )
        );
    }
}
