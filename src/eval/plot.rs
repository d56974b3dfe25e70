//! `Plot(m, path, title)`: a line chart, one line per row of the matrix
//! against its column number. As SVG, drawn by plotters' SVG backend (no
//! system fonts needed) with the lines laid over it at the chart's exact
//! coordinates; or, with no path, as braille characters for the terminal
//! (textplots). A notebook shows each chart where it is drawn instead:
//! see [`show_inline`].

use ndarray::Array2;
use plotters::prelude::*;

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// What the x axis counts.
const X_LABEL: &str = "column";

/// What shows a chart, given its SVG.
pub type ShowChart = Box<dyn FnMut(&str)>;

thread_local! {
    /// Where this thread's charts are shown as they are drawn, if anywhere.
    static INLINE: std::cell::RefCell<Option<ShowChart>> =
        const { std::cell::RefCell::new(None) };
}

/// Hands every chart this thread draws to `show`, as SVG (a notebook's
/// kernel shows it in the cell): a `Plot` with no path then prints no
/// braille, and one with a path writes its file as well. `None` goes back
/// to the terminal's way.
pub fn show_inline(show: Option<ShowChart>) {
    INLINE.with(|inline| *inline.borrow_mut() = show);
}

/// Shows a chart inline, if this thread has somewhere to show it; says
/// whether it did.
fn shown_inline(chart: &str) -> bool {
    INLINE.with(|inline| match inline.try_borrow_mut() {
        Ok(mut inline) => match inline.as_mut() {
            Some(show) => {
                show(chart);
                true
            }
            None => false,
        },
        Err(_) => false,
    })
}

/// The chart as SVG text: x is the column (1 to n), y the value. Infinite
/// values are left out of the lines. Shown inline too, where this thread
/// shows charts so.
pub fn svg(m: &Array2<f64>, title: &str) -> Result<String, String> {
    let chart = draw_svg(m, title)?;
    shown_inline(&chart);
    Ok(chart)
}

fn draw_svg(m: &Array2<f64>, title: &str) -> Result<String, String> {
    let finite = || m.iter().copied().filter(|x| x.is_finite());
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    // The value axis, padded by 5% each way (a flat line gets a band around
    // it). Values near the largest float may leave no finite axis; then the
    // chart draws them at a quarter of their size and its label says so.
    let axis = |scale: f64| {
        let (lo, hi) = (lo * scale, hi * scale);
        let pad = if hi > lo {
            (hi - lo) * 0.05
        } else {
            (lo.abs() * 0.05).max(0.5)
        };
        let (bottom, top) = (lo - pad, hi + pad);
        (top - bottom).is_finite().then_some(bottom..top)
    };
    let (scale, range, label) = match axis(1.0) {
        Some(range) => (1.0, range, "value"),
        None => (
            0.25,
            axis(0.25).expect("a quarter of any floats fits"),
            "value ÷ 4",
        ),
    };
    let (left, right) = x_span(m.ncols());
    let mut text = String::new();
    let area;
    {
        let root = SVGBackend::with_string(&mut text, (640, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut builder = ChartBuilder::on(&root);
        // The right margin leaves room for the last tick's label.
        builder
            .margin(12)
            .margin_right(28)
            .x_label_area_size(36)
            .y_label_area_size(56);
        if !title.is_empty() {
            builder.caption(title, ("sans-serif", 18));
        }
        let mut chart = builder
            .build_cartesian_2d(left..right, range.clone())
            .map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        if m.ncols() == 1 {
            // Ticks at 0.5, 1 and 1.5, and only column 1 labelled.
            mesh.x_labels(3).x_label_formatter(&|x| {
                if *x == 1.0 {
                    "1".to_string()
                } else {
                    String::new()
                }
            });
        }
        mesh.x_desc(X_LABEL)
            .y_desc(label)
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|e| e.to_string())?;
        area = chart.plotting_area().get_pixel_range();
        root.present().map_err(|e| e.to_string())?;
    }
    // The lines, at fractional pixels: the backend rounds each point to a
    // whole pixel, which turns a slowly falling curve into stairs.
    let (xs, ys) = (area.0, area.1);
    // The last pixel of the area is `end - 1`, where the axes put the
    // last tick.
    let (width, height) = (
        (xs.end - 1 - xs.start) as f64,
        (ys.end - 1 - ys.start) as f64,
    );
    let x_of = |k: usize| xs.start as f64 + (k as f64 + 1.0 - left) / (right - left) * width;
    let y_of =
        |v: f64| (ys.end - 1) as f64 - (v - range.start) / (range.end - range.start) * height;
    let mut lines = String::new();
    for (i, row) in m.rows().into_iter().enumerate() {
        let RGBColor(r, g, b) = COLOURS[i % COLOURS.len()];
        // A run of finite values is one line; an infinity breaks it.
        let mut run: Vec<String> = Vec::new();
        let colour = format!("#{r:02x}{g:02x}{b:02x}");
        // A run of one value (one column, or a value between infinities)
        // is a dot.
        let mut flush = |run: &mut Vec<String>| {
            if let [point] = run.as_slice() {
                let (cx, cy) = point.split_once(',').expect("x,y");
                lines.push_str(&format!(
                    "<circle cx=\"{cx}\" cy=\"{cy}\" r=\"3\" fill=\"{colour}\"/>\n"
                ));
            } else if run.len() > 1 {
                lines.push_str(&format!(
                    "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"{}\"/>\n",
                    run.join(" ")
                ));
            }
            run.clear();
        };
        for (k, v) in row.iter().enumerate() {
            if v.is_finite() {
                run.push(format!("{:.2},{:.2}", x_of(k), y_of(v * scale)));
            } else {
                flush(&mut run);
            }
        }
        flush(&mut run);
    }
    let end = text.rfind("</svg>").ok_or("the SVG has no end")?;
    text.insert_str(end, &lines);
    Ok(text)
}

/// The chart in braille characters, a few lines high, for the terminal.
/// The characters have room for single precision only, so values are
/// drawn (and their axis labelled) as f32s; the SVG is exact.
///
/// Where this thread shows charts inline, the chart is shown as SVG
/// instead and no characters are given.
pub fn braille(m: &Array2<f64>, title: &str) -> String {
    let inline = INLINE.with(|inline| inline.try_borrow().is_ok_and(|i| i.is_some()));
    if inline
        && let Ok(chart) = draw_svg(m, title)
        && shown_inline(&chart)
    {
        return String::new();
    }
    use textplots::{Chart, LabelBuilder, LabelFormat, Plot, Shape};
    let rows: Vec<Vec<(f32, f32)>> = m
        .rows()
        .into_iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(k, v)| (k as f32 + 1.0, *v as f32))
                .filter(|(_, v)| v.is_finite())
                .collect()
        })
        .collect();
    // One value has no line to draw (one column, or one finite value in a
    // row): it is shown as a point.
    let shapes: Vec<Shape> = rows
        .iter()
        .map(|points| {
            if points.len() == 1 {
                Shape::Points(points)
            } else {
                Shape::Lines(points)
            }
        })
        .collect();
    // One column's points stand in the middle, with no x labels but the
    // line under the chart ("x: column 1").
    let (left, right) = x_span(m.ncols());
    // A flat line gets a band around it, as in the SVG, so that it is
    // drawn mid-chart between two different labels.
    let finite = || rows.iter().flatten().map(|(_, v)| *v);
    let lo = finite().fold(f32::INFINITY, f32::min);
    let hi = finite().fold(f32::NEG_INFINITY, f32::max);
    let mut chart = if lo == hi {
        let pad = (lo.abs() * 0.05).max(0.5);
        let (bottom, top) = ((lo - pad).max(f32::MIN), (hi + pad).min(f32::MAX));
        Chart::new_with_y_range(120, 40, left as f32, right as f32, bottom, top)
    } else {
        Chart::new(120, 40, left as f32, right as f32)
    };
    let mut drawn = chart.y_label_format(LabelFormat::Custom(Box::new(tick)));
    if m.ncols() == 1 {
        drawn = drawn.x_label_format(LabelFormat::None);
    }
    for shape in &shapes {
        drawn = drawn.lineplot(shape);
    }
    drawn.axis();
    drawn.figures();
    let mut text = String::new();
    if !title.is_empty() {
        text.push_str(title);
        text.push('\n');
    }
    // With no value to draw there is no chart, only the lines below that
    // say why.
    if lo <= hi {
        let drawn = format!("{drawn}");
        // Without x labels the last line holds only spaces.
        text.push_str(drawn.trim_end());
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    match m.ncols() {
        1 => text.push_str(&format!("x: {X_LABEL} 1\n")),
        n => text.push_str(&format!("x: {X_LABEL} 1 to {n}\n")),
    }
    let infinite = m.iter().filter(|v| v.is_infinite()).count();
    if infinite > 0 {
        text.push_str(&format!(
            "({} left out)\n",
            crate::diagnostic::counted(infinite, "infinite value")
        ));
    }
    let left_out = m
        .iter()
        .filter(|v| v.is_finite() && !(**v as f32).is_finite())
        .count();
    if left_out > 0 {
        text.push_str(&format!(
            "({left_out} value{} too large to draw here left out; Plot(m, 'chart.svg') draws it to scale)\n",
            if left_out == 1 { "" } else { "s" }
        ));
    }
    let flattened = m
        .iter()
        .filter(|v| **v != 0.0 && (**v as f32).abs() < f32::MIN_POSITIVE)
        .count();
    if flattened > 0 {
        text.push_str(&format!(
            "({flattened} value{} too small to draw here drawn as 0; Plot(m, 'chart.svg') draws it to scale)\n",
            if flattened == 1 { "" } else { "s" }
        ));
    }
    text
}

/// The x axis's ends: columns 1 to n, and for one column 0.5 to 1.5, so
/// that its points stand in the middle rather than on the edge.
fn x_span(columns: usize) -> (f64, f64) {
    match columns {
        0 | 1 => (0.5, 1.5),
        n => (1.0, n as f64),
    }
}

/// A value on the braille chart's y axis, with three significant digits
/// where one decimal would hide them (a loss of 0.00012 is not `0.0`).
fn tick(v: f32) -> String {
    let size = v.abs();
    if size == 0.0 || (1.0..1e6).contains(&size) {
        format!("{v:.1}")
    } else if (1e-3..1.0).contains(&size) {
        let decimals = (2.0 - size.log10().floor()) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.2e}")
    }
}
