//! `cargo bench`: the cost of a recorded operation on tiny matrices (its
//! forward, its record and its share of the reverse walk), and one training
//! step of the benchmark GPT at size S. Timings are for watching
//! regressions; the side-by-side comparison is `bench/compare`.

use tapec::SharedBuffer;
use tapec::eval::Interpreter;
use tapec::syntax::tree::Program;

fn main() {
    divan::main();
}

fn parse(text: &str) -> Program {
    let (program, errors) = tapec::syntax::parse(text, 0);
    assert!(errors.is_empty(), "{errors:?}");
    program
}

fn run(program: &Program, params: &[&str]) {
    let mut interp = Interpreter::new(Box::new(SharedBuffer::default()));
    interp.params = params.iter().map(|p| p.to_string()).collect();
    assert!(interp.run(program).is_ok());
}

/// 1,000 recorded operations on 2×2 matrices and the walk back over them:
/// divide the time by 1,000 for the cost of one.
#[divan::bench]
fn thousand_tiny_operations(bencher: divan::Bencher) {
    let program = parse(
        "a := [[1.0, 2.0], [3.0, 4.0]];\nb := [[0.5, 0.0], [0.0, 0.5]];\n\
         tape\n  x := a;\n  for i := 1 to 500 do\n    x := Hadamard(x, b) + a;\n  s := Sum(x);\nend;\n",
    );
    bencher.bench_local(|| run(&program, &["tiny"]));
}

/// Ten training steps of `bench/gpt.tape` at size S (V T d h = 27 8 16 64),
/// set-up included.
#[divan::bench]
fn gpt_size_s_ten_steps(bencher: divan::Bencher) {
    let program = parse(&std::fs::read_to_string("bench/gpt.tape").expect("bench/gpt.tape"));
    bencher.bench_local(|| run(&program, &["gpt", "27", "8", "16", "64", "10"]));
}
