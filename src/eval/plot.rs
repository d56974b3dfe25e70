//! `Plot(m, path)`: an SVG line chart, one line per row of the matrix.

use ndarray::Array2;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 400.0;
const MARGIN: f64 = 50.0;
const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

fn number(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The chart as SVG text: axes with their ranges, and a polyline per row
/// whose points are (step, value) scaled into the frame.
pub fn svg(m: &Array2<f64>) -> String {
    let finite = || m.iter().copied().filter(|x| x.is_finite());
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 0.5, hi + 0.5)
    };
    let steps = m.ncols();
    let x_of = |k: usize| {
        MARGIN
            + (WIDTH - 2.0 * MARGIN)
                * if steps > 1 {
                    k as f64 / (steps - 1) as f64
                } else {
                    0.5
                }
    };
    let y_of = |v: f64| HEIGHT - MARGIN - (HEIGHT - 2.0 * MARGIN) * (v - lo) / (hi - lo);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\">\n\
         <rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"white\"/>\n\
         <line x1=\"{MARGIN}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{MARGIN}\" y1=\"{MARGIN}\" x2=\"{MARGIN}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{MARGIN}\" y=\"{below}\" font-size=\"12\" font-family=\"sans-serif\">1</text>\n\
         <text x=\"{r}\" y=\"{below}\" font-size=\"12\" font-family=\"sans-serif\" text-anchor=\"end\">{steps}</text>\n\
         <text x=\"{left}\" y=\"{b}\" font-size=\"12\" font-family=\"sans-serif\" text-anchor=\"end\">{lo_text}</text>\n\
         <text x=\"{left}\" y=\"{top}\" font-size=\"12\" font-family=\"sans-serif\" text-anchor=\"end\">{hi_text}</text>\n\
         <text x=\"{mid}\" y=\"{bottom}\" font-size=\"12\" font-family=\"sans-serif\" text-anchor=\"middle\">step</text>\n",
        b = HEIGHT - MARGIN,
        r = WIDTH - MARGIN,
        below = HEIGHT - MARGIN + 16.0,
        left = MARGIN - 6.0,
        top = MARGIN + 4.0,
        mid = WIDTH / 2.0,
        bottom = HEIGHT - 10.0,
        lo_text = number(lo),
        hi_text = number(hi),
    );
    for (i, row) in m.rows().into_iter().enumerate() {
        let points: Vec<String> = row
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(k, v)| format!("{},{}", number(x_of(k)), number(y_of(*v))))
            .collect();
        out.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
            COLOURS[i % COLOURS.len()],
            points.join(" ")
        ));
    }
    out.push_str("</svg>\n");
    out
}
