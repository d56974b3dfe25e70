//! The exported program's generator (`src/export/tape_runtime.py`) draws
//! what tapec draws, bit for bit: a million normals (each a `log` and a
//! `cos` of libm's, ported to Python), uniforms and whole numbers, run by a
//! real CPython. Without `python3` this test says it was not run; under
//! `CI=true` it fails instead.

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
print("uniforms", fold(t._bits(r.uniform()) for _ in range(10000)))
r.seed(9)
print("ints", fold((r.int_in(-5, 1000) & MASK) for _ in range(10000)))
# What the C library's log and cos would have drawn instead.
c = t.Random(42)
differ = 0
for x in normals:
    u1, u2 = c.uniform(), c.uniform()
    if math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2) != x:
        differ += 1
print("c_library_differs", differ)
"#;

#[test]
fn the_exported_generator_draws_tapecs_bits() {
    let python = Command::new("python3").arg("--version").output();
    if python.is_err() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true, but python3 is not installed");
        }
        eprintln!("NOT RUN: the exported generator's test needs python3");
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
        fold((0..10000).map(|_| r.uniform().to_bits())).to_string()
    );
    r.seed(9);
    assert_eq!(
        line("ints"),
        fold((0..10000).map(|_| r.int_in(-5, 1000) as u64)).to_string()
    );
    // The port matters: the C library's functions would have drawn other
    // bits for some of these normals.
    let differ: usize = line("c_library_differs").parse().unwrap();
    assert!(
        differ > DRAWS / 100,
        "only {differ} draws differ with the C library"
    );
}
