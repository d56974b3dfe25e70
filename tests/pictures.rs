//! The pictures: the tape drawn as DOT (a golden file for the worked
//! example), every course program's picture drawn by tapec; `Plot`'s SVG; and
//! `CheckBlame` against every recorded operation, and against a blame made
//! wrong on purpose.

use std::path::Path;

use tapec::SharedBuffer;
use tapec::eval::Interpreter;

fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tapec-pictures-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn attention_dot() -> String {
    let opts = tapec::RunOptions::new("programs/attention.tape");
    tapec::with_big_stack(move || {
        let dot = SharedBuffer::default();
        let mut err = Vec::new();
        let code = tapec::graph_file(&opts, None, Box::new(dot.clone()), &mut err);
        assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
        dot.text()
    })
}

#[test]
fn the_attention_tape_as_dot_matches_its_golden_file() {
    let dot = attention_dot();
    let golden = Path::new("tests/graph/attention.dot");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(golden, &dot).expect("write golden");
    }
    assert_eq!(
        dot,
        std::fs::read_to_string(golden).expect("tests/graph/attention.dot")
    );
    // Every record of the worked example is a box with its value and blame.
    for name in [
        "k (leaf)",
        "kt = Transpose",
        "q (leaf)",
        "sc = matrix product",
        "mask (leaf)",
        "sm = +",
    ] {
        assert!(dot.contains(name), "missing {name}");
    }
    assert!(
        dot.contains("p = RowSoftmax")
            && dot.contains("o = matrix product")
            && dot.contains("s = Sum  [result]")
    );
    assert_eq!(dot.matches("blame:").count(), 10);
}

/// `tapec graph` with `-o` naming a picture it cannot write: an ending it
/// does not know is refused before the program runs (the program's output
/// never appears), with status 2 as for any wrong command line; a folder
/// that does not exist, with status 1, and also before it runs.
#[test]
fn a_picture_that_cannot_be_written_is_an_error() {
    let graph = |out: &str| {
        let opts = tapec::RunOptions::new("programs/knob.tape");
        let out = Path::new(out).to_path_buf();
        tapec::with_big_stack(move || {
            let program_out = SharedBuffer::default();
            let mut err = Vec::new();
            let code =
                tapec::graph_file(&opts, Some(&out), Box::new(program_out.clone()), &mut err);
            (
                code,
                program_out.text(),
                String::from_utf8_lossy(&err).into_owned(),
            )
        })
    };
    // An ending no picture has is a wrong command line: status 2.
    let (code, out, err) = graph("tape.jpeg");
    assert_eq!(code, 2);
    assert_eq!(out, "", "the program ran");
    assert_eq!(
        err,
        "Error: cannot draw `tape.jpeg`: the picture can be written as .dot, .svg, .png, or \
         .html (a page that steps through the walk)\n"
    );
    let missing = scratch().join("no-such-folder").join("tape.dot");
    let (code, out, err) = graph(&missing.display().to_string());
    assert_eq!(code, 1);
    assert_eq!(out, "", "the program ran");
    assert_eq!(
        err,
        format!(
            "Error: cannot write `{}`: its folder does not exist\n",
            missing.display()
        )
    );
}

/// A picture is written over a picture only: never over the program
/// (`tapec graph prog -o prog`, or through a link to it), nor over a file
/// the prompt loaded; a picture drawn before is replaced.
#[test]
fn a_picture_never_replaces_a_file_that_holds_no_picture() {
    let dir = scratch().join("over-program");
    std::fs::create_dir_all(&dir).unwrap();
    let text = "w := [[1, 2]];\ntape\n  s := Sum(Hadamard(w, w));\nend;\n";
    let program = dir.join("prog");
    std::fs::write(&program, text).unwrap();
    let graph = |to: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tapec"))
            .arg("graph")
            .arg(&program)
            .arg("-o")
            .arg(to)
            .output()
            .unwrap()
    };
    let out = graph(&program);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no picture"));
    let link = dir.join("link.svg");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&program, &link).unwrap();
    assert_eq!(graph(&link).status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&program).unwrap(), text);
    for picture in ["tape.svg", "tape.png", "tape.html", "tape.dot", "tape"] {
        let to = dir.join(picture);
        assert_eq!(graph(&to).status.code(), Some(0), "{picture}");
        assert_eq!(graph(&to).status.code(), Some(0), "{picture} again");
    }
    let transcript = format!(
        ":load {}\n:graph {}\n",
        program.display(),
        program.display()
    );
    let session = tapec::with_big_stack(move || tapec::repl::transcript(&transcript));
    assert!(session.contains("holds no picture"), "{session}");
    assert_eq!(std::fs::read_to_string(&program).unwrap(), text);
}

/// Every course program's last tape drawn by tapec itself, with no
/// system tool: well-formed SVG with a box for every record and an arrow
/// for every input, no two boxes overlapping; and the PNG rasterised from
/// it decodes to the SVG's size.
#[test]
fn every_course_programs_picture_is_drawn_whole_without_overlaps() {
    let mut programs: Vec<_> = std::fs::read_dir("programs")
        .expect("programs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tape"))
        .collect();
    programs.sort();
    assert!(programs.len() >= 8, "{programs:?}");
    for program in programs {
        let name = program.file_stem().unwrap().to_string_lossy().to_string();
        let (svg, png) = (
            scratch().join(format!("{name}.svg")),
            scratch().join(format!("{name}.png")),
        );
        for target in [&svg, &png] {
            assert_eq!(write_picture(&program, target), 0, "{name}");
        }
        let text = std::fs::read_to_string(&svg).expect("svg written");
        let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        let boxes: Vec<(f64, f64, f64, f64)> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("record"))
            .map(|g| {
                let rect = g
                    .children()
                    .find(|c| c.has_tag_name("rect"))
                    .expect("a box");
                let f = |a: &str| rect.attribute(a).expect(a).parse::<f64>().expect(a);
                (f("x"), f("y"), f("width"), f("height"))
            })
            .collect();
        let edges = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("edge"))
            .count();
        // The DOT picture of the same tape has one line per record and per arrow.
        let dot = {
            let out = scratch().join(format!("{name}.dot"));
            assert_eq!(write_picture(&program, &out), 0, "{name}");
            std::fs::read_to_string(out).expect("dot")
        };
        let records = dot.lines().filter(|l| l.contains("[label=")).count();
        let mut arrows: Vec<&str> = dot.lines().filter(|l| l.contains(" -> ")).collect();
        arrows.sort_unstable();
        arrows.dedup();
        // A box is dashed, and says why, exactly when it is a leaf no
        // arrow leaves: no operation takes it, so no blame can reach it.
        let sources: std::collections::HashSet<&str> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("edge"))
            .map(|e| e.attribute("data-from").expect("data-from"))
            .collect();
        for g in doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("record"))
        {
            let k = g.attribute("data-record").expect("data-record");
            let texts: Vec<&str> = g
                .children()
                .filter(|t| t.has_tag_name("text"))
                .filter_map(|t| t.text())
                .collect();
            let leaf = texts[0].contains("(leaf)");
            let dashed = g
                .children()
                .find(|c| c.has_tag_name("rect"))
                .and_then(|r| r.attribute("stroke-dasharray"))
                .is_some();
            let untaken = leaf && !sources.contains(k);
            assert_eq!(dashed, untaken, "{name}: record {k}: {texts:?}");
            assert_eq!(
                texts.iter().any(|t| t.contains("an input of no operation")),
                untaken,
                "{name}: record {k}: {texts:?}"
            );
            if name == "gpt"
                && ["xs", "n", "ys"]
                    .iter()
                    .any(|v| texts[0].contains(&format!(" {v} (leaf)")))
            {
                assert!(
                    untaken,
                    "gpt: {texts:?} is read by no operation's per-link rule"
                );
            }
        }
        assert_eq!(boxes.len(), records, "{name}: a box per record");
        assert_eq!(edges, arrows.len(), "{name}: an arrow per input");
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                let apart =
                    a.0 + a.2 <= b.0 || b.0 + b.2 <= a.0 || a.1 + a.3 <= b.1 || b.1 + b.3 <= a.1;
                assert!(apart, "{name}: boxes {a:?} and {b:?} overlap");
            }
        }
        let bytes = std::fs::read(&png).expect("png written");
        let image = resvg::tiny_skia::Pixmap::decode_png(&bytes).expect("the PNG decodes");
        let attr = |a: &str| root.attribute(a).unwrap().parse::<f64>().unwrap().round() as u32;
        assert_eq!(
            (image.width(), image.height()),
            (attr("width"), attr("height")),
            "{name}: the SVG's size"
        );
        // Not blank: inside every box, clear of its outline, text is drawn
        // (in the font tapec carries, so on any machine).
        for (k, &(x, y, w, h)) in boxes.iter().enumerate() {
            let inked = (y as u32 + 4..(y + h) as u32 - 4).any(|py| {
                (x as u32 + 4..(x + w) as u32 - 4).any(|px| {
                    image
                        .pixel(px, py)
                        .is_some_and(|p| p.red() < 100 && p.green() < 100)
                })
            });
            assert!(inked, "{name}: box {} of the PNG has no text", k + 1);
        }
    }
}

#[test]
fn plot_writes_an_svg_whose_line_holds_the_data_points() {
    let dir = scratch();
    let program = b"m := [[3, 2, 2.5, 1]];\nPlot(m, 'losses.svg');\n".to_vec();
    let (_, err, code) = tapec::run_untrusted(program, dir.clone(), 1000, 1 << 16);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join("losses.svg")).expect("plot written");
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    // The data line is the polyline with four points; the grid lines have two.
    let line = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("points"))
        .map(|p| {
            p.split_whitespace()
                .map(|xy| {
                    let (x, y) = xy.split_once(',').expect("x,y");
                    (x.parse::<f64>().expect("x"), y.parse::<f64>().expect("y"))
                })
                .collect::<Vec<_>>()
        })
        .find(|points| points.len() == 4)
        .expect("a polyline through the four values");
    // x grows with the step; SVG's y grows downward, so values 3, 2, 2.5, 1
    // give y in the order 1st < 3rd < 2nd < 4th.
    assert!(line.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(line[0].1 < line[2].1 && line[2].1 < line[1].1 && line[1].1 < line[3].1);
    // The points are not rounded to whole pixels (that drew stairs).
    assert!(
        line.iter()
            .any(|(x, y)| x.fract() != 0.0 || y.fract() != 0.0),
        "{line:?}"
    );
    // The x axis counts columns, and its last tick's label is inside the
    // picture with room to spare.
    let texts: Vec<(f64, &str)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| Some((n.attribute("x")?.parse().ok()?, n.text()?.trim())))
        .collect();
    assert!(texts.iter().any(|(_, t)| *t == "column"), "{texts:?}");
    let last_tick = texts
        .iter()
        .filter(|(_, t)| t.parse::<f64>().is_ok())
        .map(|(x, _)| *x)
        .fold(0.0, f64::max);
    assert!(
        last_tick + 12.0 < 640.0,
        "the last tick's label at x = {last_tick}"
    );
    assert!(
        err.contains("Plot wrote") && err.contains("losses.svg"),
        "{err}"
    );
}

/// A one-column matrix has no line to draw: each row's value is a dot in
/// the middle of the chart, over the one tick labelled "1"; in the braille
/// chart too the dots stand mid-width, with no x labels from 1.0 to 2.0 for
/// a column 2 that is not there. A value between two infinities is a dot as
/// well.
#[test]
fn plot_draws_a_single_column_and_a_lone_value_as_dots() {
    let dir = scratch();
    let program = b"Plot([[1], [4], [9]], 'one.svg');
Plot([[1, Inf, 3, 4]], 'gap.svg');
Plot([[1], [4], [9]]);
"
    .to_vec();
    let (out, err, code) = tapec::run_untrusted(program, dir.clone(), 1000, 1 << 16);
    assert_eq!(code, 0, "{err}");
    let dots = |file: &str| -> Vec<(f64, f64)> {
        let text = std::fs::read_to_string(dir.join(file)).expect("plot written");
        let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
        doc.descendants()
            .filter(|n| n.has_tag_name("circle"))
            .map(|n| {
                let at = |a: &str| n.attribute(a).and_then(|v| v.parse().ok()).expect(a);
                (at("cx"), at("cy"))
            })
            .collect()
    };
    let one = dots("one.svg");
    assert_eq!(one.len(), 3, "{one:?}");
    // One x, in the middle of the 640-pixel picture; y falls as values grow.
    assert!(one.iter().all(|(x, _)| *x == one[0].0));
    assert!((250.0..390.0).contains(&one[0].0), "{one:?}");
    assert!(one[0].1 > one[1].1 && one[1].1 > one[2].1, "{one:?}");
    let text = std::fs::read_to_string(dir.join("one.svg")).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let ticks: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    assert!(ticks.contains(&"1"), "{ticks:?}");
    assert!(
        !ticks.contains(&"0.5") && !ticks.contains(&"1.5"),
        "{ticks:?}"
    );
    assert_eq!(dots("gap.svg").len(), 1, "the 1 before the infinity");
    // The braille chart: the dots' characters sit mid-line, and the only x
    // label is the line under the chart.
    let lines: Vec<&str> = out.lines().collect();
    let drawn: Vec<usize> = lines
        .iter()
        .filter_map(|l| {
            l.chars()
                .position(|c| ('\u{2801}'..='\u{28ff}').contains(&c))
        })
        .collect();
    assert_eq!(drawn.len(), 3, "{out}");
    assert!(
        drawn.iter().all(|&k| (20..40).contains(&k)),
        "{drawn:?}\n{out}"
    );
    assert!(!out.contains("2.0"), "{out}");
    assert_eq!(lines.last(), Some(&"x: column 1"), "{out}");
}

/// A flat line (every value the same, up to the largest single-precision
/// ones) is drawn mid-chart between two different labels, not on the
/// bottom edge between two equal ones, and no label is `inf`.
#[test]
fn plot_draws_a_flat_line_mid_chart() {
    for value in ["2", "0", "-7.5", "3.3e38"] {
        let out = run(&format!("Plot([[{value}, {value}, {value}]]);\n"));
        let lines: Vec<&str> = out.lines().collect();
        let drawn: Vec<usize> = (0..lines.len())
            .filter(|&k| {
                lines[k]
                    .chars()
                    .any(|c| ('\u{2801}'..='\u{28ff}').contains(&c))
            })
            .collect();
        assert_eq!(drawn.len(), 1, "{value}: one line of dots\n{out}");
        assert!((3..8).contains(&drawn[0]), "{value}: mid-chart\n{out}");
        let label = |k: usize| lines[k].rsplit(' ').next().unwrap_or("");
        let (top, bottom) = (label(0), label(10));
        assert!(
            !top.is_empty() && top != bottom,
            "{value}: {top} and {bottom}"
        );
        assert!(!out.contains("inf"), "{value}\n{out}");
    }
}

/// With nothing the characters can draw there is no chart, only the lines
/// that say what was left out: infinities apart from values too large for
/// single precision (which the SVG does draw).
#[test]
fn plot_with_nothing_to_draw_says_so_without_a_chart() {
    let braille = |out: &str| out.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c));
    let out = run("Plot([[1e300, -1e300]]);\n");
    assert!(!braille(&out), "{out}");
    assert_eq!(
        out,
        "x: column 1 to 2\n(2 values too large to draw here left out; \
         Plot(m, 'chart.svg') draws it to scale)\n"
    );
    let out = run("Plot([[Inf, 2, -Inf]], '', 'one finite');\n");
    assert!(braille(&out), "{out}");
    assert!(out.starts_with("one finite\n"), "{out}");
    assert!(
        out.ends_with("x: column 1 to 3\n(2 infinite values left out)\n"),
        "{out}"
    );
}

/// Values so large that their padded range has no finite size (it hung in
/// the chart's axis), a flat line near the largest float, and a span of a
/// few subnormals: each chart is drawn, and is well-formed SVG.
#[test]
fn plot_draws_extreme_values() {
    let dir = scratch();
    let cases = [
        ("[[1e308, -1e308, 0]]", "value ÷ 4"),
        ("[[-1.79e308, 0]]", "value ÷ 4"),
        ("[[1e308, 1e308]]", "value"),
        ("[[5e-324, 0, 1e-323]]", "value"),
    ];
    for (k, (matrix, label)) in cases.iter().enumerate() {
        let program = format!("m := {matrix};\nPlot(m, 'extreme{k}.svg');\n");
        let (_, err, code) = tapec::run_untrusted(program.into_bytes(), dir.clone(), 1000, 1 << 16);
        assert_eq!(code, 0, "{matrix}: {err}");
        let text =
            std::fs::read_to_string(dir.join(format!("extreme{k}.svg"))).expect("plot written");
        let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
        let labels: Vec<&str> = doc
            .descendants()
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        assert!(
            labels.contains(label),
            "{matrix}: the value axis says {label:?}"
        );
        assert!(!text.contains("NaN"), "{matrix}: no NaN coordinates");
    }
}

/// Runs `text` and returns what it printed.
fn run(text: &str) -> String {
    let text = text.to_string();
    let (out, err, code) = tapec::run_untrusted(text.into_bytes(), scratch(), 100_000, 1 << 16);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn check_blame_is_tiny_for_every_recorded_operation_on_random_inputs() {
    let cases = [
        "tape s := Sum(Hadamard(a + b, w)); end;",
        "tape s := Sum(Hadamard(a - Row(b, 1), w)); end;",
        "tape s := Sum(Hadamard(a / (Abs(b) + 1), w)); end;",
        "tape s := Sum(Hadamard(Hadamard(a, Col(b, 2)), w)); end;",
        "tape s := Sum(Hadamard(a * 1.5 - b, w)); end;",
        "tape s := Sum(a * Transpose(w)); end;",
        "tape s := Sum(Hadamard(-a, w)) + Mean(b); end;",
        "tape s := Sum(Hadamard(RowSum(a) + RowMean(b), Col(w, 1))); end;",
        "tape s := Sum(Hadamard(ColSum(a), Row(w, 1))); end;",
        "tape s := Sum(Hadamard(RowSoftmax(a), w)); end;",
        "tape s := Sum(Hadamard(Tanh(a) + Exp(b) + Sigmoid(a) + ReLU(b) + Abs(a), w)); end;",
        "tape s := Sum(Hadamard(Log(Abs(a) + 1) + Sqrt(Abs(b) + 1), w)); end;",
        "tape s := Sum(Hadamard(LayerNorm(a), w)); end;",
        "tape s := CrossEntropy(a, t); end;",
        "tape s := Sum(Hadamard(Embed(a, [1, 2, 1]), RowRange(w, 1, 3))); end;",
        "tape s := Sum(HStack(a, b)) + Sum(Hadamard(VStack(a, b), VStack(w, w))); end;",
        "tape s := Sum(Hadamard(RowRange(ColRange(a, 2, 2), 1, 2), ColRange(RowRange(w, 2, 2), 1, 2))); end;",
        "tape s := a[1, 2] * b[3, 3] + Sum([[a[1, 1], 2], [b[2, 1], a[3, 2]]]); end;",
    ];
    for seed in 1..=6 {
        for case in cases {
            let program = format!(
                "Seed({seed});\na := Randn(3, 3);\nb := Randn(3, 3);\nw := Randn(3, 3);\nt := [2, 3, 1];\n{case}\n\
                 WriteLn(CheckBlame(a):0:15);\nWriteLn(CheckBlame(b):0:15);\n"
            );
            // b is not read by every case: then it is not on the tape, so check a alone.
            let reads_b = case
                .split(|c: char| !c.is_alphanumeric())
                .any(|word| word == "b");
            let program = if reads_b {
                program
            } else {
                program.replace("WriteLn(CheckBlame(b):0:15);\n", "")
            };
            for line in run(&program).lines() {
                let worst: f64 = line.parse().expect("a number");
                assert!(
                    worst < 1e-6,
                    "CheckBlame gave {worst} for {case} (seed {seed})"
                );
            }
        }
    }
}

#[test]
fn check_blame_is_large_when_the_blame_is_wrong() {
    let (first, _) = tapec::syntax::parse(
        "w := [[0.5, -1.0], [2.0, 0.25]];\ntape\n  s := Sum(Tanh(w * w));\nend;\nWriteLn(CheckBlame(w):0:9);\n",
        0,
    );
    let (second, _) = tapec::syntax::parse("WriteLn(CheckBlame(w):0:9);\n", 0);
    let out = SharedBuffer::default();
    let mut interp = Interpreter::new(Box::new(out.clone()));
    interp.run(&first).map_err(|_| "first part failed").unwrap();
    // Break the walk's answer for w on purpose: double its blame.
    let node = interp.globals["w"]
        .value
        .as_ref()
        .and_then(|v| v.tag())
        .expect("w is on the tape")
        .node() as usize;
    let doubled = match interp.tape.blame[node].take() {
        Some(tapec::tape::Tensor::Matrix(m)) => tapec::tape::Tensor::matrix(m.mapv(|x| 2.0 * x)),
        other => panic!("unexpected blame {other:?}"),
    };
    interp.tape.blame[node] = Some(doubled);
    interp
        .run(&second)
        .map_err(|_| "second part failed")
        .unwrap();
    let printed = out.text();
    let mut lines = printed.lines().map(|l| l.parse::<f64>().expect("a number"));
    let (right, wrong) = (lines.next().unwrap(), lines.next().unwrap());
    assert!(right < 1e-6, "the true blame checks out: {right}");
    assert!(wrong > 0.1, "a doubled blame is caught: {wrong}");
}

#[test]
fn graph_says_on_stderr_where_it_wrote_the_picture() {
    let path = scratch().join("said.dot");
    let opts = tapec::RunOptions::new("programs/knob.tape");
    let target = path.clone();
    let (code, err) = tapec::with_big_stack(move || {
        let mut err = Vec::new();
        let code = tapec::graph_file(&opts, Some(&target), Box::new(std::io::sink()), &mut err);
        (code, String::from_utf8_lossy(&err).into_owned())
    });
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, format!("tapec graph wrote {}\n", path.display()));
    assert!(
        std::fs::read_to_string(&path)
            .expect("written")
            .starts_with("digraph")
    );
}

/// `tapec graph PROGRAM -o OUT` of a program written to the scratch
/// folder: the exit status and stderr, with OUT's path as `OUT`.
fn graph_of(name: &str, program: &str, out: &str) -> (i32, String) {
    let dir = scratch();
    let source = dir.join(format!("{name}.tape"));
    std::fs::write(&source, program).unwrap();
    let target = dir.join(out);
    let shown = target.display().to_string();
    let opts = tapec::RunOptions::new(source);
    let (code, err) = tapec::with_big_stack(move || {
        let mut err = Vec::new();
        let code = tapec::graph_file(&opts, Some(&target), Box::new(std::io::sink()), &mut err);
        (code, String::from_utf8_lossy(&err).into_owned())
    });
    (code, err.replace(&shown, "OUT"))
}

/// A picture too large to read or to draw in reasonable time and memory
/// is refused with a sentence, before it is drawn: more than a thousand
/// records (a product of 1,200 factors of one variable), or a PNG of more
/// than 32 million pixels (a sum of 200 terms). The same tapes as DOT, and
/// the sum's as SVG, are written.
#[test]
fn a_picture_too_large_to_draw_is_refused() {
    let factors = vec!["x"; 1200].join(" * ");
    let chain = format!("x := 1.0;\ntape\n  y := {factors};\nend;\n");
    for out in ["chain.svg", "chain.png"] {
        let (code, err) = graph_of("chain", &chain, out);
        assert_eq!(code, 1, "{err}");
        assert_eq!(
            err,
            "Error: cannot draw `OUT`: the tape has 1200 records, and a picture is drawn for \
             at most 1000; write it as .dot, which has no limit, or draw a smaller tape\n"
        );
    }
    // The walk's page is no picture to write as .dot: its way out is the
    // walk as text.
    let (code, err) = graph_of("chain", &chain, "chain.html");
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err,
        "Error: cannot draw `OUT`: the tape has 1200 records, and a picture is drawn for at \
         most 1000; the walk as text has no limit (`tapec graph --walk`, `:walk` at the \
         prompt), or walk a smaller tape\n"
    );
    let (code, err) = graph_of("chain", &chain, "chain.dot");
    assert_eq!((code, err.as_str()), (0, "tapec graph wrote OUT\n"));

    let terms: Vec<String> = (1..=200).map(|i| format!("y{i}")).collect();
    let products: String = (1..=200).map(|i| format!("  y{i} := x * {i};\n")).collect();
    let sum = format!(
        "x := 1.0;\ntape\n{products}  s := {};\nend;\n",
        terms.join(" + ")
    );
    let (code, err) = graph_of("sum", &sum, "sum.png");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("Error: cannot draw `OUT`: the picture is ")
            && err.ends_with(
                " pixels, more than a PNG is drawn with (32 million); write it as .svg, \
                 which a browser shows at any size\n"
            ),
        "{err}"
    );
    let (code, err) = graph_of("sum", &sum, "sum.svg");
    assert_eq!((code, err.as_str()), (0, "tapec graph wrote OUT\n"));
}

/// The attention example's walk, step by step, as `tapec graph --walk`
/// prints it: every share is an exact half or quarter, and those `k` gets
/// add up to the blame LANGUAGE.md's worked example shows.
#[test]
fn the_attention_walk_matches_its_golden_file() {
    let opts = tapec::RunOptions::new("programs/attention.tape");
    let (code, out, err) = tapec::with_big_stack(move || {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = tapec::walk_file(&opts, &mut out, &mut err);
        (
            code,
            String::from_utf8(out).expect("utf-8"),
            String::from_utf8_lossy(&err).into_owned(),
        )
    });
    assert_eq!(code, 0, "{err}");
    let golden =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graph/attention.walk");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &out).expect("write golden");
    }
    let expected = std::fs::read_to_string(&golden).expect("golden walk");
    assert_eq!(out, expected);
    // The last step is `k`'s, with the worked example's blame.
    assert!(out.trim_end().ends_with("#1 k (leaf), whose blame is now complete:\n    [0 -4.5]\n    [0 4.5]\n  a leaf hands blame to nothing"), "{out}");
}

/// Every course program's walk page: one file that fetches nothing, with
/// the picture's boxes, the walk's steps as data, and each input's running
/// sum after its last share equal, bit for bit, to the blame the walk gave
/// it. (A real browser drives the page in `walk_page.rs`.)
#[test]
fn every_course_programs_walk_page_is_whole_and_its_sums_are_the_walks() {
    let mut programs: Vec<_> = std::fs::read_dir("programs")
        .expect("programs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tape"))
        .collect();
    programs.sort();
    for program in programs {
        let name = program.file_stem().unwrap().to_string_lossy().to_string();
        let page = scratch().join(format!("{name}.html"));
        assert_eq!(write_picture(&program, &page), 0, "{name}");
        let html = std::fs::read_to_string(&page).expect("page written");
        for fetch in ["<link", " src=", "<iframe", "url(http", "import "] {
            assert!(
                !html.contains(fetch),
                "{name}: the page fetches with `{fetch}`"
            );
        }
        let data = walk_data(&html);
        let data: serde_json::Value = serde_json::from_str(data).expect("the data parses");
        let records = data["records"].as_array().unwrap();
        assert_eq!(
            html.matches("<g class=\"record\"").count(),
            records.len(),
            "{name}: a box per record"
        );
        let steps = data["steps"].as_array().unwrap();
        assert!(!steps.is_empty(), "{name}");
        // The last sum each record received, against the blame it holds
        // when the walk visits it.
        let mut last_sum: Vec<Option<&serde_json::Value>> = vec![None; records.len()];
        for step in steps {
            let k = step["record"].as_u64().unwrap() as usize;
            if let Some(sum) = last_sum[k] {
                assert_eq!(
                    sum["data"],
                    step["blame"]["data"],
                    "{name}: record #{}",
                    k + 1
                );
                assert_eq!(
                    sum["text"],
                    step["blame"]["text"],
                    "{name}: record #{}",
                    k + 1
                );
            }
            for share in step["shares"].as_array().unwrap() {
                let input = share["input"].as_u64().unwrap() as usize;
                assert!(input < k, "{name}: a share goes to an older record");
                last_sum[input] = Some(&share["sum"]);
            }
        }
    }
}

/// The walk's data sits inside a `<script>` element, where `</` would end
/// it and `<!--` would swallow the page's own script: a program whose name
/// (shown in the page's data) holds both still gives data that parses, with
/// no `<` left in it.
#[test]
fn a_walk_pages_data_cannot_end_its_script_whatever_the_program_is_called() {
    let html = walk_page_of(
        "odd name",
        "<!--<script>.tape",
        "a := 2.0;\ntape\n  b := a * a; { </script> <!-- }\nend;\n",
    );
    let data = walk_data(&html);
    assert!(!data.contains('<'), "{data}");
    let data: serde_json::Value = serde_json::from_str(data).expect("the data parses");
    assert!(data.to_string().contains("<!--<script>"), "{data}");
}

/// The page's first words count the tape's records in plain English: a
/// tape of one number holds "1 record".
#[test]
fn a_walk_page_counts_its_records_in_words() {
    for (body, count) in [("r := 2.5;", "1 record,"), ("r := 2.5 * 2;", "3 records,")] {
        let html = walk_page_of(
            &format!("count {}", count.len()),
            "count.tape",
            &format!("tape\n  {body}\nend;\n"),
        );
        let data: serde_json::Value =
            serde_json::from_str(walk_data(&html)).expect("the data parses");
        let start = data["start"].as_str().unwrap();
        assert!(
            start.contains(&format!("the tape holds {count}")),
            "{start}"
        );
    }
}

/// Every value a walk page holds, in the order it holds them: each record's
/// value, then each step's blame and its shares with their running sums.
fn page_values(data: &serde_json::Value) -> Vec<&serde_json::Value> {
    let mut all: Vec<&serde_json::Value> = data["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["value"])
        .collect();
    for step in data["steps"].as_array().unwrap() {
        all.push(&step["blame"]);
        for share in step["shares"].as_array().unwrap() {
            all.push(&share["share"]);
            all.push(&share["sum"]);
        }
    }
    all
}

/// A tape holding one large matrix makes a page of a size in its records:
/// the matrix is shown by its box's lines, its elements not listed (a
/// 300×300 one made a page of 8 MB, a 2000×2000 one of 370 MB).
#[test]
fn a_walk_page_does_not_list_a_large_value() {
    let html = walk_page_of(
        "large value",
        "large.tape",
        "w := Fill(300, 300, 0.5);\ntape\n  s := Sum(Tanh(w));\nend;\n",
    );
    assert!(html.len() < 100_000, "a page of {} bytes", html.len());
    let data: serde_json::Value = serde_json::from_str(walk_data(&html)).expect("the data parses");
    let w = &data["records"][0]["value"];
    assert!(w["data"].is_null(), "{w}");
    assert_eq!(
        w["unlisted"],
        "300×300 elements: too many to list here (a page lists up to 4096 of one value)"
    );
    assert_eq!(w["text"][0], "300×300 from 0.5 to 0.5", "{w}");
}

/// A page lists at most 1Mi numbers in all: past them a value is shown
/// by its box's lines, and says why. The values come first.
#[test]
fn a_walk_page_lists_a_bounded_count_of_numbers() {
    let html = walk_page_of(
        "many values",
        "many.tape",
        "w := Fill(64, 64, 0.5);\ntape\n  s := 0;\n  for i := 1 to 150 do\n    s := s + Sum(w * i);\nend;\n",
    );
    let data: serde_json::Value = serde_json::from_str(walk_data(&html)).expect("the data parses");
    let values = page_values(&data);
    let listed: usize = values
        .iter()
        .filter_map(|v| v["data"].as_array())
        .map(Vec::len)
        .sum();
    assert!(listed <= 1 << 20, "{listed} numbers listed");
    assert!(listed > 1 << 19, "only {listed} numbers listed");
    let unlisted: Vec<&&serde_json::Value> =
        values.iter().filter(|v| v["data"].is_null()).collect();
    assert!(!unlisted.is_empty());
    assert!(
        unlisted.iter().all(|v| v["unlisted"]
            == "64×64 elements: not listed, the page has listed as many numbers as it holds (1048576)"),
        "{}",
        unlisted[0]
    );
    assert!(
        data["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["value"]["data"].is_array()),
        "every record's value is listed before any blame"
    );
}

/// The walk's data in a walk page: the JSON its `<script>` element holds.
fn walk_data(html: &str) -> &str {
    html.split_once("<script id=\"walk-data\" type=\"application/json\">")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map(|(data, _)| data)
        .expect("the walk's data")
}

/// The walk page of `text`, written as the program `file` in a scratch
/// folder `folder` of its own: the page's whole text.
fn walk_page_of(folder: &str, file: &str, text: &str) -> String {
    let dir = scratch().join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join(file);
    std::fs::write(&program, text).unwrap();
    let page = dir.join("walk.html");
    assert_eq!(write_picture(&program, &page), 0);
    std::fs::read_to_string(&page).expect("page written")
}

/// `tapec graph PROGRAM -o OUT` (a picture or a walk page, by OUT's
/// extension): its exit status.
fn write_picture(program: &std::path::Path, out: &std::path::Path) -> i32 {
    let opts = tapec::RunOptions::new(program);
    let target = out.to_path_buf();
    tapec::with_big_stack(move || {
        tapec::graph_file(
            &opts,
            Some(&target),
            Box::new(std::io::sink()),
            &mut std::io::sink(),
        )
    })
}
