//! No NaN gets past the checks. Random tapes of matrix products, sums,
//! differences, quotients, Hadamard products, transposes, elementwise
//! functions, softmaxes, layer norms and scalings, on 2×2, 3×3 and 8×8
//! matrices whose elements range from 1e-300 to ±1e308 and ±inf (so sums
//! overflow and meet infinities of the other sign), then a `Nudge` by a
//! random rate, print every value they make and every blame the walk gives.
//! Each run must either print no NaN, or stop with a diagnostic. A NaN in
//! the output would mean a check was skipped where it was needed (the check
//! of a value of 64 elements or more is skipped when bounds on its inputs
//! prove it cannot hold a NaN, and so are those of a blame's sum and of
//! `Nudge`'s step).

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const NUMBERS: [&str; 13] = [
    "0",
    "1",
    "-1",
    "0.5",
    "2",
    "3",
    "1e-300",
    "1e200",
    "-1e200",
    "1e308",
    "-1e308",
    "1e308 * 10",
    "-1e308 * 10",
];

/// Functions of one matrix that keep its shape.
const FUNCTIONS: [&str; 10] = [
    "Tanh",
    "Exp",
    "Log",
    "Sqrt",
    "Sigmoid",
    "ReLU",
    "Abs",
    "RowSoftmax",
    "LayerNorm",
    "Transpose",
];

/// Operators between two matrices of one shape.
const OPERATORS: [&str; 4] = ["+", "-", "/", "*"];

#[derive(Debug, Clone)]
enum Step {
    Product(usize, usize),
    Operator(usize, usize, usize),
    Hadamard(usize, usize),
    Function(usize, usize),
    Scale(usize, usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Product(a, b)),
        2 => (any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(o, a, b)| Step::Operator(o, a, b)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Hadamard(a, b)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(f, a)| Step::Function(f, a)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, k)| Step::Scale(a, k)),
    ]
}

/// A program: three n×n matrices, a tape of `steps` over them and what the
/// steps made, its result scaled by one of the numbers, every value and
/// every blame printed, then one matrix nudged by one of the numbers and
/// printed.
fn program(
    n: usize,
    elements: &[usize],
    steps: &[Step],
    last: usize,
    nudge: (usize, usize),
) -> String {
    let matrix = |start: usize| {
        let rows: Vec<String> = (0..n)
            .map(|r| {
                let row: Vec<&str> = (0..n)
                    .map(|c| {
                        NUMBERS[elements[(start + r * n + c) % elements.len()] % NUMBERS.len()]
                    })
                    .collect();
                format!("[{}]", row.join(", "))
            })
            .collect();
        format!("[{}]", rows.join(", "))
    };
    let mut text = String::new();
    let mut names: Vec<String> = Vec::new();
    for i in 0..3 {
        text.push_str(&format!("m{i} := {};\n", matrix(i * n * n)));
        names.push(format!("m{i}"));
    }
    text.push_str("tape\n");
    // Which of the three matrices the tape reads: only those have a blame.
    let mut read = [false; 3];
    for (j, s) in steps.iter().enumerate() {
        let mut pick = |k: usize| {
            let k = k % names.len();
            if k < 3 {
                read[k] = true;
            }
            names[k].clone()
        };
        let expr = match s {
            Step::Product(a, b) => format!("{} * {}", pick(*a), pick(*b)),
            Step::Operator(o, a, b) => {
                let (a, b) = (pick(*a), pick(*b));
                format!("{a} {} {b}", OPERATORS[o % OPERATORS.len()])
            }
            Step::Hadamard(a, b) => {
                let (a, b) = (pick(*a), pick(*b));
                format!("Hadamard({a}, {b})")
            }
            Step::Function(f, a) => format!("{}({})", FUNCTIONS[f % FUNCTIONS.len()], pick(*a)),
            Step::Scale(a, k) => format!("{} * {}", pick(*a), NUMBERS[k % NUMBERS.len()]),
        };
        text.push_str(&format!("  t{j} := {expr};\n"));
        names.push(format!("t{j}"));
    }
    let result = names.last().expect("at least the matrices");
    text.push_str(&format!(
        "  s := Sum({result} * {});\nend;\n",
        NUMBERS[last % NUMBERS.len()]
    ));
    for name in &names {
        text.push_str(&format!("WriteLn({name});\n"));
    }
    let on_tape = |k: &usize| *k >= 3 || read[*k];
    for (k, name) in names.iter().enumerate() {
        if on_tape(&k) {
            text.push_str(&format!("WriteLn(Blame({name}));\n"));
        }
    }
    let (which, rate) = nudge;
    let read_ones: Vec<usize> = (0..3).filter(on_tape).collect();
    if !read_ones.is_empty() {
        let m = read_ones[which % read_ones.len()];
        text.push_str(&format!(
            "Nudge(m{m}, {});\nWriteLn(m{m});\n",
            NUMBERS[rate % NUMBERS.len()]
        ));
    }
    text
}

proptest! {
    // Failures are kept in `tests/nan_never_escapes.proptest-regressions`.
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_nan_is_reported_or_never_made(
        // 8×8 is large enough that bounds are proved rather than scanned.
        n in prop_oneof![2usize..=3, Just(8)],
        elements in prop::collection::vec(0usize..NUMBERS.len(), 27),
        steps in prop::collection::vec(step(), 1..8),
        last in any::<usize>(),
        nudge in (any::<usize>(), any::<usize>()),
    ) {
        let text = program(n, &elements, &steps, last, nudge);
        let folder = std::env::temp_dir();
        let (out, err, code) = tapec::run_untrusted(text.clone().into_bytes(), folder, 100_000, 1 << 16);
        if code == 0 {
            prop_assert!(!out.contains("NaN"), "a NaN got through:\n{text}\nprinted:\n{out}");
        } else {
            prop_assert_eq!(code, 1);
            prop_assert!(err.contains("Error"), "status 1 without a diagnostic:\n{}", err);
        }
    }
}
