//! `docs/LANGUAGE.md`, the manual: every example in it runs and prints what
//! the manual shows under it. A ```tape block is a whole program and the
//! ```output block after it is its stdout; a ```tape-error block must fail
//! with status 1, and the ```error block after it is its first line of
//! stderr.

use std::path::Path;

/// The fenced blocks of a markdown text: (info string, contents).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => found.push(open.take().expect("open")),
            (Some((_, body)), None) => {
                // Blocks inside a list are indented; the manual keeps its
                // examples at the margin.
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a block is not closed");
    found
}

#[test]
fn every_example_of_the_manual_prints_what_the_manual_shows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manual = std::fs::read_to_string(root.join("docs/LANGUAGE.md")).expect("the manual");
    let blocks = blocks(&manual);
    let dir = std::env::temp_dir().join(format!("tapec-manual-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let mut checked = 0;
    let mut failures = Vec::new();
    for (k, (info, program)) in blocks.iter().enumerate() {
        let expects_error = match info.as_str() {
            "tape" => false,
            "tape-error" => true,
            _ => continue,
        };
        let (next_info, expected) = blocks
            .get(k + 1)
            .unwrap_or_else(|| panic!("example {k} has no block after it"));
        let path = dir.join(format!("example{k}.tape"));
        std::fs::write(&path, program).expect("write the example");
        let (out, err, code) = tapec::run_captured(&path, &[], Some(10_000_000));
        if expects_error {
            assert_eq!(next_info, "error", "example {k}: an error block follows it");
            let first = err.lines().next().unwrap_or_default();
            if code != 1 || first != expected.trim_end() {
                failures.push(format!(
                    "example {k}:\n{program}\nstatus {code}, first line of stderr:\n{first}\n"
                ));
            }
        } else {
            assert_eq!(
                next_info, "output",
                "example {k}: an output block follows it"
            );
            if code != 0 || out != *expected {
                failures.push(format!(
                    "example {k}:\n{program}\nstatus {code}, stdout:\n{out}\nstderr:\n{err}"
                ));
            }
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 10, "only {checked} examples");
}
