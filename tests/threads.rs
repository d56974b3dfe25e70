//! Threads never change a result: every golden program, the benchmark at
//! sizes S, M and L, and a tape of large products (whose blame is saved
//! with every bit) give the same bytes at `TAPEC_THREADS=1` and `2`.
//! (`tape/matmul.rs` compares the products themselves, bit for bit.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn tapec(threads: usize, program: &Path, args: &[String]) -> (Vec<u8>, Vec<u8>, Option<i32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_tapec"))
        .env("TAPEC_THREADS", threads.to_string())
        .arg("run")
        .arg(program)
        .args(args)
        .output()
        .expect("tapec runs");
    (out.stdout, out.stderr, out.status.code())
}

fn programs_in(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tape"))
        .collect();
    files.sort();
    files
}

fn args_for(program: &Path) -> Vec<String> {
    std::fs::read_to_string(program.with_extension("args"))
        .map(|text| text.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

#[test]
fn every_golden_program_prints_the_same_bytes_on_one_and_two_threads() {
    let mut programs = programs_in("programs");
    programs.extend(programs_in("tests/run"));
    assert!(programs.len() >= 20, "{programs:?}");
    for program in programs {
        let args = args_for(&program);
        let one = tapec(1, &program, &args);
        let two = tapec(2, &program, &args);
        assert_eq!(one.2, Some(0), "{}", program.display());
        assert!(one == two, "{} differs at two threads", program.display());
    }
}

#[test]
fn the_benchmark_losses_are_the_same_on_one_and_two_threads() {
    for args in [
        ["27", "8", "16", "64", "200"],
        ["65", "32", "64", "256", "100"],
        ["65", "128", "256", "1024", "20"],
    ] {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let one = tapec(1, Path::new("bench/gpt.tape"), &args);
        let two = tapec(2, Path::new("bench/gpt.tape"), &args);
        assert_eq!(one.2, Some(0), "{args:?}");
        assert!(!one.0.is_empty());
        assert!(one == two, "bench/gpt.tape {args:?} differs at two threads");
    }
}

#[test]
fn the_blame_of_large_products_keeps_every_bit_on_two_threads() {
    let base = std::env::temp_dir().join(format!("tapec-threads-{}", std::process::id()));
    let mut saved = Vec::new();
    for threads in [1, 2] {
        let dir = base.join(threads.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let (out, err, code) = tapec(
            threads,
            Path::new("tests/threads/large_blame.tape"),
            &[dir.display().to_string()],
        );
        assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&err));
        let files: Vec<Vec<u8>> = ["w1", "w2", "wo", "x"]
            .iter()
            .map(|name| std::fs::read(dir.join(format!("{name}.txt"))).unwrap())
            .collect();
        assert!(files.iter().all(|f| f.len() > 1000));
        saved.push((out, files));
    }
    assert!(saved[0] == saved[1], "a blame differs at two threads");
    let _ = std::fs::remove_dir_all(base);
}
