//! No NaN gets past the checks. Random tapes of matrix products, sums,
//! Hadamard products, transposes, `Tanh` and scalings, on small matrices
//! whose elements range from 1e-300 to ±1e308 (so sums overflow and meet
//! infinities of the other sign), print every value they make and every
//! blame the walk gives. Each run must either print no NaN, or stop with
//! a diagnostic. A NaN in the output would mean a check was skipped where
//! it was needed (the checks of a product are skipped when bounds on its
//! inputs prove it cannot hold a NaN).

use proptest::prelude::*;

const NUMBERS: [&str; 11] = [
    "0", "1", "-1", "0.5", "2", "3", "1e-300", "1e200", "-1e200", "1e308", "-1e308",
];

#[derive(Debug, Clone)]
enum Step {
    Product(usize, usize),
    Sum(usize, usize),
    Hadamard(usize, usize),
    Transpose(usize),
    Tanh(usize),
    Scale(usize, usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Product(a, b)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Sum(a, b)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Hadamard(a, b)),
        1 => any::<usize>().prop_map(Step::Transpose),
        1 => any::<usize>().prop_map(Step::Tanh),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, k)| Step::Scale(a, k)),
    ]
}

/// A program: three n×n matrices, a tape of `steps` over them and what the
/// steps made, its result scaled by one of the numbers, then every value
/// and every blame printed.
fn program(n: usize, elements: &[usize], steps: &[Step], last: usize) -> String {
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
    for (j, s) in steps.iter().enumerate() {
        let pick = |k: usize| names[k % names.len()].clone();
        let expr = match s {
            Step::Product(a, b) => format!("{} * {}", pick(*a), pick(*b)),
            Step::Sum(a, b) => format!("{} + {}", pick(*a), pick(*b)),
            Step::Hadamard(a, b) => format!("Hadamard({}, {})", pick(*a), pick(*b)),
            Step::Transpose(a) => format!("Transpose({})", pick(*a)),
            Step::Tanh(a) => format!("Tanh({})", pick(*a)),
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
    for name in &names {
        text.push_str(&format!("WriteLn(Blame({name}));\n"));
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_nan_is_reported_or_never_made(
        n in 2usize..=3,
        elements in prop::collection::vec(0usize..NUMBERS.len(), 27),
        steps in prop::collection::vec(step(), 1..8),
        last in any::<usize>(),
    ) {
        let text = program(n, &elements, &steps, last);
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
