//! ARCHITECTURE.md's "no import circles" invariant, checked on the source:
//! the modules of `src/` and the paths each names (`crate::a::b`,
//! `super::c`, `use x::{y, z}`, a child module named bare), outside
//! comments and test modules, must form a graph without a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every module of `src/` by its path (`eval::interp`; `crate` for lib.rs)
/// and its text, without line comments and without its test module.
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("src readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, root, out);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(root).expect("under src");
            let mut parts: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            let name = match parts.join("::").as_str() {
                "lib" => "crate".to_string(),
                "main" => continue, // the binary: it only uses the library
                other => other.to_string(),
            };
            let text = std::fs::read_to_string(&path).expect("readable");
            let text = text.split("#[cfg(test)]").next().unwrap_or("");
            let code: Vec<&str> = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect();
            out.insert(name, code.join("\n"));
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The longest prefix of `parts` that names a module.
fn module_of(parts: &[String], mods: &BTreeMap<String, String>) -> Option<String> {
    (1..=parts.len())
        .rev()
        .map(|k| parts[..k].join("::"))
        .find(|m| mods.contains_key(m))
}

/// The paths named in `code`: each is the words joined by `::` from a
/// word that follows no `::`, with a `{...}` group spread out.
fn paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts =
            is_ident(chars[i]) && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut words = Vec::new();
        let mut j = i;
        loop {
            let from = j;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            words.push(chars[from..j].iter().collect::<String>());
            if chars.get(j) == Some(&':') && chars.get(j + 1) == Some(&':') {
                j += 2;
                if chars.get(j) == Some(&'{') {
                    let end = chars[j..]
                        .iter()
                        .position(|&c| c == '}')
                        .map_or(chars.len(), |e| j + e);
                    let group: String = chars[j + 1..end].iter().collect();
                    for item in group.split(',') {
                        let mut path = words.clone();
                        path.extend(
                            item.trim()
                                .split("::")
                                .map(|w| {
                                    w.trim()
                                        .trim_end_matches(|c: char| !is_ident(c))
                                        .to_string()
                                })
                                .filter(|w| !w.is_empty() && w.chars().all(is_ident)),
                        );
                        found.push(path);
                    }
                    j = end;
                    break;
                }
                if j < chars.len() && is_ident(chars[j]) {
                    continue;
                }
            }
            if words.len() > 1 {
                found.push(words.clone());
            }
            break;
        }
        i = j.max(i + 1);
    }
    found
}

fn edges(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in mods {
        let parent: Vec<String> = if module == "crate" {
            Vec::new()
        } else {
            module.split("::").map(str::to_string).collect()
        };
        for path in paths(code) {
            let absolute: Vec<String> = match path[0].as_str() {
                "crate" => path[1..].to_vec(),
                "super" => {
                    let ups = path.iter().take_while(|w| *w == "super").count();
                    let mut p = parent[..parent.len().saturating_sub(ups)].to_vec();
                    p.extend(path[ups..].iter().cloned());
                    p
                }
                "self" => {
                    let mut p = parent.clone();
                    p.extend(path[1..].iter().cloned());
                    p
                }
                // A child module named bare, or from the crate root a
                // top-level one.
                _ => {
                    let mut p = parent.clone();
                    p.extend(path.iter().cloned());
                    p
                }
            };
            if let Some(target) = module_of(&absolute, mods)
                && &target != module
            {
                graph.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    graph
}

/// A cycle in the graph, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(c) = visit(node, graph, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn no_module_of_src_imports_itself_through_others() {
    let mods = modules();
    assert!(mods.len() >= 25, "only {} modules found", mods.len());
    let graph = edges(&mods);
    let count: usize = graph.values().map(BTreeSet::len).sum();
    assert!(
        count >= 40,
        "only {count} imports found: the scan is broken"
    );
    // The scan sees what it must: the interpreter uses the tape and the
    // declarations, the checker the declarations.
    for (from, to) in [
        ("eval::interp", "tape"),
        ("eval::interp", "declarations"),
        ("check", "declarations"),
        ("crate", "eval"),
    ] {
        assert!(
            graph.get(from).is_some_and(|t| t.contains(to)),
            "{from} -> {to} not found in {graph:?}"
        );
    }
    if let Some(c) = cycle(&graph) {
        panic!("an import circle: {}", c.join(" -> "));
    }
}

#[test]
fn the_scan_finds_a_circle_when_there_is_one() {
    let mut mods = BTreeMap::new();
    mods.insert("a".to_string(), "use crate::b::{self, X};".to_string());
    mods.insert("b".to_string(), "fn f() { super::c::g() }".to_string());
    mods.insert("c".to_string(), "use crate::a::Y;".to_string());
    let graph = edges(&mods);
    assert!(cycle(&graph).is_some(), "{graph:?}");
    mods.insert("c".to_string(), "use crate::b::Y;".to_string());
    let graph = edges(&mods);
    assert!(cycle(&graph).is_some(), "b <-> c: {graph:?}");
    mods.insert("c".to_string(), "fn h() {}".to_string());
    assert!(cycle(&edges(&mods)).is_none());
    // `super::super::` climbs two levels.
    let mut mods = BTreeMap::new();
    mods.insert("a".to_string(), "fn f() { b::c::g() }".to_string());
    mods.insert("a::b".to_string(), String::new());
    mods.insert(
        "a::b::c".to_string(),
        "fn g() { super::super::d::h() }".to_string(),
    );
    mods.insert("a::d".to_string(), String::new());
    let graph = edges(&mods);
    assert!(graph["a::b::c"].contains("a::d"), "{graph:?}");
    assert!(cycle(&graph).is_none(), "{graph:?}");
}
