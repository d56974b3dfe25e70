//! `cargo bench`: the cost of a recorded operation on tiny matrices (its
//! forward, its record and its share of the reverse walk), one training
//! step of the benchmark GPT at size S, and `check` of broken input that
//! once took time exponential or quadratic in its size: unclosed brackets
//! 16 to 256 deep, and 64 KiB of random tokens. Timings are for watching
//! regressions (growth shows as the time per bracket rising with depth);
//! the side-by-side comparison is `bench/compare`.

use tapec::SharedBuffer;
use tapec::eval::Interpreter;
use tapec::syntax::tree::Program;

// The allocator `tapec` itself runs with.
#[global_allocator]
static ALLOCATOR: tapec::memory::Mimalloc = tapec::memory::Mimalloc;

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

fn check(text: &str) {
    let mut err = Vec::new();
    assert_eq!(
        tapec::check_bytes("growth.tape", text.as_bytes().to_vec(), &mut err),
        1
    );
}

/// `x := [[[...;` with `n` brackets never closed: each time should grow
/// about linearly with `n`.
#[divan::bench(args = [16, 32, 64, 128, 256])]
fn check_unclosed_brackets(bencher: divan::Bencher, n: usize) {
    let text = format!("x := {};\n", "[".repeat(n));
    bencher.bench_local(|| check(&text));
}

/// The same depth of blocks left open, each holding a broken statement,
/// which recovery skips.
#[divan::bench(args = [16, 32, 64, 128, 256])]
fn check_open_blocks_with_broken_statements(bencher: divan::Bencher, n: usize) {
    let text = "begin x := ) ;\n".repeat(n);
    bencher.bench_local(|| check(&text));
}

/// 64 KiB of tokens drawn at random (the same on every run).
#[divan::bench]
fn check_64_kib_of_random_tokens(bencher: divan::Bencher) {
    const TOKENS: &[&str] = &[
        "x", ":=", "1", ";", "+", "(", ")", "[", "]", ",", "Sum", "if", "then", "else", "begin",
        "end", "WriteLn", ":", "`", "2.5", "*", "\n",
    ];
    let mut random = tapec::eval::random::Random::default();
    random.seed(1);
    let mut text = String::new();
    while text.len() < 1 << 16 {
        text.push_str(TOKENS[random.int_in(0, TOKENS.len() as i64 - 1) as usize]);
        text.push(' ');
    }
    bencher.bench_local(|| check(&text));
}
