//! How values print (LANGUAGE.md section 7).
//!
//! Reals use Rust's correctly rounded fixed notation (ties to even on the
//! exact binary value); a real that rounds to zero never keeps its minus.

use super::value::Value;

/// A real with `decimals` digits after the point; `inf`, `-inf`; never `-0.000`.
pub fn real(x: f64, decimals: usize) -> String {
    let text = format!("{x:.decimals$}");
    match text.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => text,
    }
}

/// A value as `Write` prints it: reals with 6 decimals, matrix rows on lines.
pub fn value(v: &Value) -> String {
    match v {
        Value::Int(n, _) => n.to_string(),
        Value::Real(x, _) => real(*x, 6),
        Value::Bool(b) => b.to_string(),
        Value::Str(s) => s.to_string(),
        Value::Matrix(m, _) => {
            let rows: Vec<String> = m
                .rows()
                .into_iter()
                .map(|row| {
                    row.iter()
                        .map(|x| real(*x, 6))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            rows.join("\n")
        }
    }
}

/// A value with Pascal's field specifiers `:width` and `:width:decimals`.
/// `decimals` applies to numbers only (the caller checks); on a matrix the
/// specifier applies to each element.
pub fn field(v: &Value, width: usize, decimals: Option<usize>) -> String {
    let pad = |s: String| format!("{s:>width$}");
    match (v, decimals) {
        (Value::Matrix(m, _), _) => {
            let rows: Vec<String> = m
                .rows()
                .into_iter()
                .map(|row| {
                    row.iter()
                        .map(|x| pad(real(*x, decimals.unwrap_or(6))))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            rows.join("\n")
        }
        (_, Some(d)) => pad(real(v.as_number().unwrap_or(0.0), d)),
        (_, None) => pad(value(v)),
    }
}

/// `Show(m)`: each row as `  row i: x x x`.
pub fn show(m: &ndarray::Array2<f64>) -> String {
    let mut out = String::new();
    for (i, row) in m.rows().into_iter().enumerate() {
        out.push_str(&format!("  row {}: ", i + 1));
        out.push_str(
            &row.iter()
                .map(|x| real(*x, 6))
                .collect::<Vec<_>>()
                .join(" "),
        );
        out.push('\n');
    }
    out
}

/// The most elements an echo shows whole; a larger matrix is summarised.
pub const ECHO_WHOLE: usize = 1000;
/// The widest line an echo prints a matrix's rows in whole; wider rows show
/// their first and last columns only (numpy wraps at 75).
pub const ECHO_WIDTH: usize = 80;
/// Rows and columns a summary keeps at each end.
const EDGE: usize = 3;

/// The rows or columns of `n` an echo shows: all, or the first and last
/// [`EDGE`] with `None` (`...`) between.
fn kept(n: usize, summarised: bool) -> Vec<Option<usize>> {
    if summarised && n > 2 * EDGE {
        (0..EDGE)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGE..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    }
}

/// Whether an echo of `m` leaves out rows or columns: more than
/// [`ECHO_WHOLE`] elements, or rows wider than [`ECHO_WIDTH`] characters
/// (then only columns are left out).
pub fn echo_leaves_out(m: &ndarray::Array2<f64>) -> bool {
    let (rows, cols) = echo_summaries(m);
    rows || cols
}

/// Whether an echo summarises `m`'s rows, and its columns.
fn echo_summaries(m: &ndarray::Array2<f64>) -> (bool, bool) {
    let (rows, cols) = m.dim();
    if rows * cols > ECHO_WHOLE {
        return (rows > 2 * EDGE, cols > 2 * EDGE);
    }
    let widest = |j: usize| m.column(j).iter().map(|x| real(*x, 6).len()).max();
    let line = label_width(rows) + (0..cols).map(|j| 1 + widest(j).unwrap_or(0)).sum::<usize>();
    (false, line > ECHO_WIDTH && cols > 2 * EDGE)
}

/// The width of the longest row label, `  row N:`, with its indent.
fn label_width(rows: usize) -> usize {
    2 + format!("row {rows}:").len()
}

/// A matrix as the REPL echoes it: rows labelled, numbers aligned in their
/// columns; a matrix of more than [`ECHO_WHOLE`] elements summarised by its
/// first and last rows and columns (as numpy prints), `...` between, and
/// one whose rows would be wider than [`ECHO_WIDTH`] by its first and last
/// columns.
pub fn echo_rows(m: &ndarray::Array2<f64>) -> String {
    let (rows, cols) = m.dim();
    let (rows_summarised, cols_summarised) = echo_summaries(m);
    let (shown_rows, shown_cols) = (kept(rows, rows_summarised), kept(cols, cols_summarised));
    let cell = |i: usize, j: Option<usize>| match j {
        Some(j) => real(m[(i, j)], 6),
        None => "...".to_string(),
    };
    let widths: Vec<usize> = shown_cols
        .iter()
        .map(|&j| {
            shown_rows
                .iter()
                .flatten()
                .map(|&i| cell(i, j).len())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let label_width = label_width(rows) - 2;
    let mut out = String::new();
    for i in shown_rows {
        let Some(i) = i else {
            out.push_str("  ...\n");
            continue;
        };
        let label = format!("row {}:", i + 1);
        out.push_str(&format!("  {label:<label_width$}"));
        for (&j, width) in shown_cols.iter().zip(&widths) {
            out.push_str(&format!(" {:>width$}", cell(i, j)));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn an_echo_aligns_its_columns_and_summarises_a_large_matrix() {
        let m = ndarray::array![[0.0, -4.5], [10.25, 4.5]];
        assert_eq!(
            echo_rows(&m),
            "  row 1:  0.000000 -4.500000\n  row 2: 10.250000  4.500000\n"
        );
        let big = ndarray::Array2::from_shape_fn((100, 100), |(i, j)| (i * 100 + j) as f64);
        let text = echo_rows(&big);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7, "{text}");
        assert_eq!(lines[3], "  ...");
        assert!(
            lines[0].starts_with("  row 1:   ") && lines[0].contains(" ... "),
            "{text}"
        );
        assert!(
            lines[6].starts_with("  row 100:") && lines[6].ends_with("9999.000000"),
            "{text}"
        );
        // At the limit a matrix keeps its rows.
        let whole = ndarray::Array2::<f64>::zeros((10, 100));
        assert_eq!(echo_rows(&whole).lines().count(), 10);
    }

    #[test]
    fn an_echo_keeps_rows_within_its_width_by_leaving_out_columns() {
        // Seven columns of `0.000000` fit in 80 characters; 27 do not.
        let fits = ndarray::Array2::<f64>::zeros((3, 7));
        assert!(!echo_leaves_out(&fits));
        assert_eq!(echo_rows(&fits).lines().next().unwrap().len(), 8 + 7 * 9);
        let wide = ndarray::Array2::from_shape_fn((27, 27), |(i, j)| (i * 27 + j) as f64);
        assert!(echo_leaves_out(&wide));
        let text = echo_rows(&wide);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 27, "every row is kept: {text}");
        assert!(lines.iter().all(|l| l.len() <= ECHO_WIDTH), "{text}");
        assert_eq!(
            lines[26],
            "  row 27: 702.000000 703.000000 704.000000 ... 726.000000 727.000000 728.000000"
        );
        // A wide line of six columns or fewer has nothing to leave out.
        let six = ndarray::Array2::from_elem((2, 6), -123456.5);
        assert!(!echo_leaves_out(&six));
        assert_eq!(echo_rows(&six).lines().count(), 2);
    }

    #[test]
    fn reals_print_with_six_decimals_and_no_negative_zero() {
        assert_eq!(real(0.5, 6), "0.500000");
        assert_eq!(real(-0.0, 6), "0.000000");
        assert_eq!(real(-1e-9, 6), "0.000000");
        assert_eq!(real(-0.0000004, 6), "0.000000");
        assert_eq!(real(-0.0000006, 6), "-0.000001");
        assert_eq!(real(-4.5, 6), "-4.500000");
        assert_eq!(real(f64::INFINITY, 6), "inf");
        assert_eq!(real(f64::NEG_INFINITY, 6), "-inf");
        assert_eq!(real(-0.0004, 3), "0.000");
        assert_eq!(real(2.5, 0), "2");
        assert_eq!(real(0.125, 2), "0.12");
    }

    #[test]
    fn field_specifiers() {
        assert_eq!(field(&Value::int(42), 5, None), "   42");
        assert_eq!(field(&Value::Real(1.23456, None), 8, Some(3)), "   1.235");
        assert_eq!(field(&Value::Real(1.23456, None), 0, Some(3)), "1.235");
        assert_eq!(field(&Value::int(7), 6, Some(2)), "  7.00");
        assert_eq!(
            field(&Value::Str(Rc::new("ab".to_string())), 4, None),
            "  ab"
        );
        assert_eq!(
            field(&Value::Str(Rc::new("abcdef".to_string())), 4, None),
            "abcdef"
        );
        let m = Value::Matrix(Rc::new(ndarray::array![[1.0, -2.0], [0.5, 10.0]]), None);
        assert_eq!(field(&m, 6, Some(1)), "   1.0   -2.0\n   0.5   10.0");
    }

    #[test]
    fn values() {
        assert_eq!(value(&Value::Bool(true)), "true");
        let m = Value::Matrix(Rc::new(ndarray::array![[1.0, -0.0]]), None);
        assert_eq!(value(&m), "1.000000 0.000000");
        assert_eq!(
            show(&ndarray::array![[1.0], [2.0]]),
            "  row 1: 1.000000\n  row 2: 2.000000\n"
        );
    }
}
