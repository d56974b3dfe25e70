//! The editor grammar, `editors/vscode/syntaxes/tape.tmLanguage.json`,
//! against the language. Without any tool: its builtins are the declared
//! ones, its keywords the lexer's, its type names the language's. Under a
//! real TextMate engine (vscode-textmate with Oniguruma, which VS Code runs,
//! from `editors/vscode/node_modules`): every token the lexer makes of every
//! `.tape` file in the repository, comments included, lies in a scope of its
//! kind (`editors/vscode/test/agreement.js` checks the tokens this test
//! writes), and the fixtures in `editors/vscode/test/` pass
//! `vscode-tmgrammar-test`.
//!
//! Without Node or those packages the engine's tests print `NOT RUN` and
//! pass, except under `CI=true`, where they fail; `.ci/run` installs them.

mod clients;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use tapec::declarations::{BUILTINS, CONSTANTS};
use tapec::syntax::lexer::{Token, lex, lex_with_comments};
use tapec::syntax::tree::TypeName;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn extension() -> PathBuf {
    root().join("editors/vscode")
}

fn grammar() -> serde_json::Value {
    let path = extension().join("syntaxes/tape.tmLanguage.json");
    let text = std::fs::read_to_string(&path).expect("the grammar");
    serde_json::from_str(&text).expect("the grammar is JSON")
}

/// The `match` of the pattern named `scope` in the repository's `rule`.
fn pattern(grammar: &serde_json::Value, rule: &str, scope: &str) -> String {
    grammar["repository"][rule]["patterns"]
        .as_array()
        .unwrap_or_else(|| panic!("no rule `{rule}`"))
        .iter()
        .find(|p| p["name"] == scope)
        .and_then(|p| p["match"].as_str())
        .unwrap_or_else(|| panic!("no pattern `{scope}` in `{rule}`"))
        .to_string()
}

/// The words of a pattern written `(?:A|B|C)(?![A-Za-z0-9_])` (or `A(?!...)`
/// for one word). A keyword's letters are each written as a class `[Bb]` of
/// one ASCII letter in both cases (read as the lower-case one), so that it is
/// matched in any case, and in ASCII only, as the lexer does (Oniguruma's
/// `(?i)` would also take the Kelvin sign for a `k`); a name's are plain.
fn words(regex: &str, any_case: bool) -> Vec<String> {
    let body = regex
        .strip_suffix("(?![A-Za-z0-9_])")
        .unwrap_or_else(|| panic!("`{regex}` does not end where a name ends"));
    let body = body
        .strip_prefix("(?:")
        .and_then(|b| b.strip_suffix(')'))
        .unwrap_or(body);
    body.split('|')
        .map(|alternative| {
            let mut word = String::new();
            let mut chars = alternative.chars();
            while let Some(c) = chars.next() {
                if c == '[' {
                    assert!(
                        any_case,
                        "a class in `{regex}`, where names keep their case"
                    );
                    let class: String = chars.by_ref().take_while(|&c| c != ']').collect();
                    let letters: Vec<char> = class.chars().collect();
                    assert!(
                        letters.len() == 2
                            && letters[0].is_ascii_uppercase()
                            && letters[1] == letters[0].to_ascii_lowercase(),
                        "`[{class}]` in `{regex}` is not one ASCII letter in both cases"
                    );
                    word.push(letters[1]);
                } else {
                    assert!(
                        (c.is_ascii_alphanumeric() || c == '_') && !(any_case && c.is_alphabetic()),
                        "`{c}` in `{regex}` is not part of a word {}",
                        if any_case {
                            "in any case"
                        } else {
                            "that keeps its case"
                        }
                    );
                    word.push(c);
                }
            }
            word
        })
        .collect()
}

fn set(words: impl IntoIterator<Item = impl Into<String>>) -> BTreeSet<String> {
    words.into_iter().map(Into::into).collect()
}

/// Every token without a payload, each said to be a keyword or not by a
/// `match` that names every variant: a new token does not compile until it
/// is sorted here, and a new keyword then fails until the grammar has it
/// (as does any program that uses a keyword the grammar lacks, in the
/// agreement check).
fn keyword_tokens() -> Vec<Token> {
    use Token::*;
    let all = [
        Program, And, Begin, Break, Continue, Div, Do, Downto, Else, End, For, Function, If, Mod,
        Not, Or, Procedure, Repeat, Tape, Then, To, Until, Var, While, True, False, Assign, Plus,
        Minus, Star, Slash, Eq, Ne, Lt, Le, Gt, Ge, LParen, RParen, LBracket, RBracket, Comma,
        Semi, Colon, Dot, DotDot, Error,
    ];
    let is_keyword = |t: &Token| match t {
        Program | And | Begin | Break | Continue | Div | Do | Downto | Else | End | For
        | Function | If | Mod | Not | Or | Procedure | Repeat | Tape | Then | To | Until | Var
        | While | True | False => true,
        Ident(_) | Integer(_) | Real(_) | Str(_) | Assign | Plus | Minus | Star | Slash | Eq
        | Ne | Lt | Le | Gt | Ge | LParen | RParen | LBracket | RBracket | Comma | Semi | Colon
        | Dot | DotDot | Error => false,
    };
    all.into_iter().filter(is_keyword).collect()
}

/// A keyword's text, from the lexer's own `Display` (`` `begin` ``).
fn keyword_text(token: &Token) -> String {
    token.to_string().trim_matches('`').to_string()
}

#[test]
fn the_grammar_knows_every_builtin_and_only_those() {
    let g = grammar();
    let in_grammar = words(
        &pattern(&g, "names", "support.function.builtin.tape"),
        false,
    );
    let declared = set(BUILTINS.iter().map(|b| b.name));
    assert_eq!(
        in_grammar.len(),
        set(in_grammar.clone()).len(),
        "a builtin named twice"
    );
    let in_grammar = set(in_grammar);
    let missing: Vec<&String> = declared.difference(&in_grammar).collect();
    let extra: Vec<&String> = in_grammar.difference(&declared).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the builtins of editors/vscode/syntaxes/tape.tmLanguage.json \
         (support.function.builtin.tape) are not those of src/declarations.rs: \
         declared but not in the grammar {missing:?}, in the grammar but not declared {extra:?}"
    );
    let constants = words(&pattern(&g, "names", "constant.language.tape"), false);
    assert_eq!(set(constants), set(CONSTANTS.iter().copied()));
}

#[test]
fn the_grammar_knows_every_keyword_in_any_case_and_only_those() {
    let g = grammar();
    let lexer = set(keyword_tokens().iter().map(keyword_text));
    for token in keyword_tokens() {
        let text = keyword_text(&token);
        let mixed: String = text
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if i % 2 == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect();
        for form in [text.clone(), text.to_ascii_uppercase(), mixed] {
            let (tokens, errors) = lex(&form, 0);
            assert!(errors.is_empty());
            assert_eq!(tokens[0].0, token, "`{form}` is not the keyword");
        }
    }
    let mut in_grammar = Vec::new();
    for p in g["repository"]["keywords"]["patterns"].as_array().unwrap() {
        in_grammar.extend(words(p["match"].as_str().unwrap(), true));
    }
    assert_eq!(
        in_grammar.len(),
        set(in_grammar.clone()).len(),
        "a keyword in two patterns"
    );
    assert_eq!(
        set(in_grammar),
        lexer,
        "the grammar's keywords are not the lexer's"
    );

    // A routine's name is any identifier but a keyword.
    let routine = &g["repository"]["routine"];
    let begin = routine["begin"].as_str().unwrap();
    let heads = begin
        .strip_prefix('(')
        .and_then(|b| b.strip_suffix(")(?![A-Za-z0-9_])"))
        .expect("routine begin is (function|procedure) then a name's end");
    let heads: Vec<String> = heads
        .split('|')
        .flat_map(|w| words(&format!("{w}(?![A-Za-z0-9_])"), true))
        .collect();
    assert_eq!(set(heads), set(["function", "procedure"]));
    let end = routine["end"].as_str().unwrap();
    let not_named = end
        .strip_prefix("(?!")
        .and_then(|e| e.split_once(")([A-Za-z_]"))
        .map(|(kws, _)| kws)
        .expect("routine end starts with (?!keywords)");
    assert_eq!(
        set(words(not_named, true)),
        lexer,
        "a routine may be named by a keyword"
    );
}

#[test]
fn the_lexer_keeps_comments_beside_the_same_tokens() {
    let text = "a { one } b (* two *) c // three\n d { open";
    let (tokens, comments, errors) = lex_with_comments(text, 0);
    let (plain, plain_errors) = lex(text, 0);
    assert_eq!(tokens, plain);
    assert_eq!(errors.len(), plain_errors.len());
    let spans: Vec<&str> = comments.iter().map(|s| &text[s.start..s.end]).collect();
    assert_eq!(spans, vec!["{ one }", "(* two *)", "// three"]);
}

/// Every type name, by a `match` that names every variant.
fn type_names() -> Vec<TypeName> {
    use TypeName::*;
    let all = [Integer, Real, Boolean, Str, Matrix];
    for t in all {
        match t {
            Integer | Real | Boolean | Str | Matrix => {}
        }
    }
    all.to_vec()
}

#[test]
fn the_grammar_knows_every_type_name() {
    let in_grammar = words(&pattern(&grammar(), "names", "storage.type.tape"), false);
    for name in &in_grammar {
        assert!(TypeName::from_name(name).is_some(), "`{name}` is no type");
    }
    assert_eq!(
        set(in_grammar),
        set(type_names().into_iter().map(TypeName::name))
    );
}

/// Node, if it runs and the packages are installed; else why not.
fn node_and_packages() -> Result<PathBuf, String> {
    let node = PathBuf::from("node");
    let runs = Command::new(&node)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        return Err("Node (`node`) is not installed".to_string());
    }
    let modules = extension().join("node_modules");
    for package in [
        "vscode-textmate",
        "vscode-oniguruma",
        "vscode-tmgrammar-test",
    ] {
        if !modules.join(package).join("package.json").is_file() {
            return Err(format!(
                "the npm package {package} is not in editors/vscode/node_modules"
            ));
        }
    }
    Ok(node)
}

/// Node, or `None` after saying why the test does not run (a failure under
/// `CI=true`).
fn node_or_not_run(what: &str) -> Option<PathBuf> {
    match node_and_packages() {
        Ok(node) => Some(node),
        Err(why) => {
            clients::not_run(what, &why, "run .ci/run, or npm ci in editors/vscode");
            None
        }
    }
}

/// Every `.tape` file git knows (or would add: new files are checked
/// before they are committed), else every one under the root.
fn tape_files() -> Vec<PathBuf> {
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .args(["--", "*.tape"])
        .current_dir(root())
        .output();
    let mut files: Vec<PathBuf> = match listed {
        Ok(out) if out.status.success() => out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
            .filter(|p| root().join(p).is_file())
            .collect(),
        _ => {
            let mut found = Vec::new();
            walk(root(), &mut found);
            found
        }
    };
    files.sort();
    files
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if ![".git", "target", "node_modules", "corpus", "artifacts"]
                .contains(&name.to_string_lossy().as_ref())
            {
                walk(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "tape") {
            found.push(path.strip_prefix(root()).unwrap().to_path_buf());
        }
    }
}

/// What the agreement check reads of a token: its kind.
fn kind(token: &Token, text: &str) -> &'static str {
    match token {
        Token::Ident(_) => "identifier",
        Token::Integer(_) => "integer",
        Token::Real(_) => "real",
        Token::Str(_) => "string",
        // What the lexer rejects: a string or comment never closed is
        // still coloured as one by the grammar; the rest is left out.
        Token::Error if text.starts_with('\'') => "open_string",
        Token::Error if text.starts_with('{') || text.starts_with("(*") => "open_comment",
        Token::Error => "error",
        t if keyword_tokens().contains(t) => "keyword",
        _ => "symbol",
    }
}

/// The lexer's tokens of every `.tape` file, as the JSON `agreement.js`
/// reads, and how many tokens there are. A file that is not UTF-8, which
/// tapec refuses before it lexes anything, is left out and named.
fn lexer_tokens() -> (serde_json::Value, usize) {
    let mut files = Vec::new();
    let mut count = 0;
    for path in tape_files() {
        let mut bytes = std::fs::read(root().join(&path)).expect("a .tape file");
        // As tapec reads a file (and an editor shows it): no byte-order mark.
        if bytes.starts_with("\u{feff}".as_bytes()) {
            bytes.drain(..3);
        }
        let Ok(text) = String::from_utf8(bytes) else {
            println!("left out, not UTF-8: {}", path.display());
            continue;
        };
        let (tokens, comments, _) = lex_with_comments(&text, 0);
        let mut spans: Vec<(usize, usize, &str)> = tokens
            .iter()
            .map(|(t, s)| (s.start, s.end, kind(t, &text[s.start..s.end])))
            .collect();
        spans.extend(comments.iter().map(|s| {
            let line = text[s.start..].starts_with("//");
            (
                s.start,
                s.end,
                if line {
                    "line_comment"
                } else {
                    "block_comment"
                },
            )
        }));
        spans.sort();
        count += spans.len();
        let tokens: Vec<serde_json::Value> = spans
            .into_iter()
            .map(|(start, end, kind)| serde_json::json!([kind, start, end]))
            .collect();
        files.push(serde_json::json!({
            "path": path.display().to_string(),
            "text": text,
            "tokens": tokens,
        }));
    }
    (serde_json::json!({ "files": files }), count)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tapec-grammar-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn agreement(node: &Path, tokens: &Path, grammar: Option<&Path>) -> (bool, String) {
    let mut command = Command::new(node);
    command
        .arg(extension().join("test/agreement.js"))
        .arg(tokens)
        .current_dir(extension());
    if let Some(grammar) = grammar {
        command.arg("--grammar").arg(grammar);
    }
    let out = command.output().expect("node runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn every_token_of_every_program_lies_in_a_scope_of_its_kind() {
    let Some(node) = node_or_not_run("the grammar's agreement with the lexer") else {
        return;
    };
    let (json, count) = lexer_tokens();
    let files = json["files"].as_array().unwrap().len();
    assert!(
        files >= 100 && count > 10_000,
        "only {files} files, {count} tokens"
    );
    let dir = scratch("agreement");
    let tokens = dir.join("tokens.json");
    std::fs::write(&tokens, serde_json::to_string(&json).unwrap()).unwrap();

    let (agrees, report) = agreement(&node, &tokens, None);
    println!("{report}");
    assert!(agrees, "the grammar and the lexer disagree:\n{report}");
    assert!(
        report.contains(&format!("in {files} files checked"))
            && report.contains(" 0 disagreements"),
        "{report}"
    );

    // The check finds a grammar that is wrong: here one that ends a string
    // at the first quote of `''`, and one that takes `1e-8` for an integer.
    let mut broken = grammar();
    broken["repository"]["strings"]["patterns"][0]["end"] = "'|$".into();
    let mut broken_number = grammar();
    broken_number["repository"]["numbers"]["patterns"][0]["match"] =
        "[0-9]+\\.[0-9]+(?:[eE][+-]?[0-9]+)?".into();
    for (name, wrong, shows) in [
        ("escape", broken, "lexer string"),
        ("exponent", broken_number, "lexer real \"1e-8\""),
    ] {
        let path = dir.join(format!("broken_{name}.json"));
        std::fs::write(&path, serde_json::to_string(&wrong).unwrap()).unwrap();
        let (agrees, report) = agreement(&node, &tokens, Some(&path));
        assert!(
            !agrees,
            "a grammar broken on purpose ({name}) passed:\n{report}"
        );
        assert!(report.contains(shows), "{name}: {report}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_fixtures_pass_vscode_tmgrammar_test() {
    let Some(node) = node_or_not_run("the grammar's fixtures") else {
        return;
    };
    let out = Command::new(&node)
        .arg("node_modules/vscode-tmgrammar-test/dist/unit.js")
        .args([
            "--compact",
            "-g",
            "syntaxes/tape.tmLanguage.json",
            "test/*.tape",
        ])
        .current_dir(extension())
        .output()
        .expect("node runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{report}");
    assert!(
        out.status.success(),
        "vscode-tmgrammar-test failed:\n{report}"
    );
    let fixtures = std::fs::read_dir(extension().join("test"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "tape"))
        .count();
    assert!(fixtures >= 1, "no fixture in editors/vscode/test");
}
