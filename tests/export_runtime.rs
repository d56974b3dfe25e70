//! The runtime of an exported program (`src/export/tape_runtime.py`), run
//! by a real CPython against tapec: its generator draws what tapec draws,
//! bit for bit (a million normals, each a `log` and a `cos` of libm's
//! ported to Python; uniforms; whole numbers), and it prints every value as
//! tapec prints it. Without `python3` these tests say they were not run;
//! under `CI=true` they fail instead.

mod clients;

use std::process::Command;

use tapec::eval::random::Random;

const DRAWS: usize = 1_000_000;

/// A fold of 64-bit words that any difference in any word changes.
fn fold(words: impl Iterator<Item = u64>) -> u64 {
    words.fold(0xcbf2_9ce4_8422_2325, |h, w| {
        (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(17)
    })
}

const SCRIPT: &str = r#"
import math, sys
sys.path.insert(0, sys.argv[1])
import tape_runtime as t
draws = int(sys.argv[2])
MASK = (1 << 64) - 1
def fold(words):
    h = 0xcbf29ce484222325
    for w in words:
        h = ((h ^ w) * 0x00000100000001b3) & MASK
        h = ((h << 17) | (h >> 47)) & MASK
    return h
r = t.Random(42)
normals = [r.normal() for _ in range(draws)]
print("normals", fold(t._bits(x) for x in normals))
print("first", " ".join(repr(x) for x in normals[:5]))
r.seed(7)
print("uniforms", fold(t._bits(r.uniform()) for _ in range(draws)))
r.seed(9)
print("ints", fold((r.int_in(-5, 1000) & MASK) for _ in range(draws)))
r.seed(11)
rows = [[0.5, 0.25, 0.25], [1e-3, 0.0, 7.0, 2.5, 1e-3], [0.1] * 27, [3.0]]
def total(w):  # left to right, as Sample sums (Python's sum() compensates)
    s = 0.0
    for x in w:
        s += x
    return s
totals = [total(w) for w in rows]
print("samples", fold(r.pick(w, s) for _ in range(draws // 4) for w, s in zip(rows, totals)))
# What the C library's log and cos would have drawn instead.
c = t.Random(42)
differ = 0
for x in normals:
    u1, u2 = c.uniform(), c.uniform()
    if math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2) != x:
        differ += 1
print("c_library_differs", differ)
"#;

/// Whether `python3` runs here; if not, says the test was not run, or
/// fails under `CI=true`.
fn have_python(test: &str) -> bool {
    if Command::new("python3").arg("--version").output().is_ok() {
        return true;
    }
    clients::not_run(test, "python3 is not installed", "install python3");
    false
}

#[test]
fn the_exported_generator_draws_tapecs_bits() {
    if !have_python("the exported generator's test") {
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(root.join("src/export"))
        .arg(DRAWS.to_string())
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
            .unwrap_or_else(|| panic!("no `{key}` in {text}"))
    };

    let mut r = Random::default();
    r.seed(42);
    let normals: Vec<f64> = (0..DRAWS).map(|_| r.normal()).collect();
    let first: Vec<String> = normals[..5].iter().map(|x| format!("{x:?}")).collect();
    assert_eq!(line("first"), first.join(" "));
    assert_eq!(
        line("normals"),
        fold(normals.iter().map(|x| x.to_bits())).to_string(),
        "a normal differs from tapec's"
    );
    r.seed(7);
    assert_eq!(
        line("uniforms"),
        fold((0..DRAWS).map(|_| r.uniform().to_bits())).to_string()
    );
    r.seed(9);
    assert_eq!(
        line("ints"),
        fold((0..DRAWS).map(|_| r.int_in(-5, 1000) as u64)).to_string()
    );
    // Sample's draws, a million over four rows of weights (each summed
    // left to right, as Sample sums them).
    r.seed(11);
    let rows: [&[f64]; 4] = [
        &[0.5, 0.25, 0.25],
        &[1e-3, 0.0, 7.0, 2.5, 1e-3],
        &[0.1; 27],
        &[3.0],
    ];
    let totals = rows.map(|w| w.iter().fold(0.0, |s, x| s + x));
    let mut samples = Vec::with_capacity(DRAWS);
    for _ in 0..DRAWS / 4 {
        for (w, total) in rows.iter().zip(totals) {
            samples.push(r.pick(w, total) as u64);
        }
    }
    assert_eq!(line("samples"), fold(samples.into_iter()).to_string());
    // The port matters: the C library's functions would have drawn other
    // bits for some of these normals.
    let differ: usize = line("c_library_differs").parse().unwrap();
    assert!(
        differ > DRAWS / 100,
        "only {differ} draws differ with the C library"
    );
}

const PRINTS: &str = r#"
import sys
sys.path.insert(0, sys.argv[1])
import tape_runtime as t
out = []
r = t.Random(5)
scales = [1e-9, 1e-6, 0.001, 0.5, 1, 7, 1000, 1e6, 1e15, 1e300]
for i in range(1, 2001):
    x = r.normal() * scales[i % 10]
    out.append(t.text(x) + " " + t.field(x, 0, 3) + " " + t.field(x, 14) + " " + t.field(x, 20, 10)
               + " " + t.field(x, 0, 0) + " " + t.field(-x, 1, 1) + "\n")
inf = float("inf")
out.append(" ".join([t.text(inf), t.text(-inf), t.field(inf, 8, 2), t.field(-inf, 0, 3),
                     t.field(0.0005, 0, 3), t.field(-0.0005, 0, 3), t.text(-0.00000001)]) + "\n")
out.append(t.text(42) + " " + t.field(-7, 5) + " " + t.text(True) + " " + t.field(False, 7) + " "
           + t.field("text", 8) + "|\n")
m = [[1.5, -0.0000001], [2.0, -3.25]]
out.append(t.text(m) + "\n")
out.append(t.field(m, 9, 2) + "\n")
out.append(t.show(m))
sys.stdout.write("".join(out))
"#;

/// Numbers of every size and sign, `inf`, zeros that must not print a
/// minus, field specifiers, Booleans, strings and matrices: the text of
/// `tests/export_output/values.tape` under tapec, and the same values
/// printed by the runtime.
#[test]
fn the_exported_runtime_prints_as_tapec_prints() {
    if !have_python("the exported runtime's output test") {
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (want, err, code) =
        tapec::run_captured(&root.join("tests/export_output/values.tape"), &[], None);
    assert_eq!(code, 0, "{err}");
    let out = Command::new("python3")
        .arg("-c")
        .arg(PRINTS)
        .arg(root.join("src/export"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = String::from_utf8_lossy(&out.stdout);
    assert_eq!(want.lines().count(), 2008);
    for (n, (a, b)) in want.lines().zip(got.lines()).enumerate() {
        assert_eq!(a, b, "line {}", n + 1);
    }
    assert_eq!(want, got);
}

const INTEGERS: &str = r#"
import sys
sys.path.insert(0, sys.argv[1])
import tape_runtime as t
w = "integers.tape"
big = 9223372036854775807
small = t.int_sub(t.int_neg(big, w), 1, w)
for a in range(-7, 8):
    for b in range(-3, 4):
        if b != 0:
            print(t.text(a) + " " + t.text(b) + " " + t.text(t.int_div(a, b, w)) + " " + t.text(t.int_mod(a, b, w)))
print(t.int_div(big, 2, w), t.int_mod(big, 10, w), t.int_div(small, 3, w), t.int_mod(small, 7, w), t.int_mod(small, -1, w))
print(t.int_add(t.int_sub(big, 1, w), 1, w), t.int_add(small, big, w), t.int_neg(big, w), t.int_mul(3037000499, 3037000499, w))
for f in [lambda: t.int_add(big, 1, w), lambda: t.int_sub(t.int_neg(big, w), 2, w),
          lambda: t.int_mul(3037000500, 3037000500, w), lambda: t.int_div(small, -1, w),
          lambda: t.int_neg(small, w), lambda: t.int_div(5, 0, w), lambda: t.int_mod(5, 0, w)]:
    try:
        f()
        print("no error")
    except t.TapeError as e:
        print("Error: " + e.message)
"#;

/// `div` and `mod` of every sign and at the ends of the Integer range, and
/// the overflow and division errors, from the runtime as from tapec.
#[test]
fn the_exported_runtime_keeps_integers_as_tapec_does() {
    if !have_python("the exported runtime's Integer test") {
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut want, err, code) =
        tapec::run_captured(&root.join("tests/export_output/integers.tape"), &[], None);
    assert_eq!(code, 0, "{err}");
    let scratch = std::env::temp_dir().join(format!("tapec-export-ints-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    for (k, statement) in [
        "x := 9223372036854775807 + 1;",
        "x := -9223372036854775807 - 2;",
        "x := 3037000500 * 3037000500;",
        "y := -9223372036854775807 - 1; x := y div -1;",
        "y := -9223372036854775807 - 1; x := -y;",
        "x := 5 div 0;",
        "x := 5 mod 0;",
    ]
    .iter()
    .enumerate()
    {
        let file = scratch.join(format!("e{k}.tape"));
        std::fs::write(&file, statement).unwrap();
        let (_, err, code) = tapec::run_captured(&file, &[], None);
        assert_eq!(code, 1, "{statement}");
        want.push_str(err.lines().next().unwrap());
        want.push('\n');
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let out = Command::new("python3")
        .arg("-c")
        .arg(INTEGERS)
        .arg(root.join("src/export"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(want, String::from_utf8_lossy(&out.stdout));
}
