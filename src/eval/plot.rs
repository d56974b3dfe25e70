//! `Plot(m, path)`: an SVG line chart, one line per row of the matrix, with
//! axes and labels, drawn by plotters' SVG backend (no system fonts needed).

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

/// The chart as SVG text: x is the column (1 to n), y the value. Infinite
/// values are left out of the lines.
pub fn svg(m: &Array2<f64>) -> Result<String, String> {
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
    let steps = m.ncols().max(2) as f64;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (640, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(1.0..steps, range)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("step")
            .y_desc(label)
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, row) in m.rows().into_iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let points = row
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(k, v)| (k as f64 + 1.0, v * scale));
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}
