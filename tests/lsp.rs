//! `tapec lsp` as an editor meets it: the binary started as a child
//! process, spoken to over its pipes with `Content-Length` framing, as a
//! client would. Every wait for a message is under a watchdog, so a server
//! that hangs fails the test instead of stalling it.
//!
//! Diagnostics with their exact ranges (UTF-16 columns, and UTF-8 bytes
//! once negotiated), as the text changes; garbage, unknown methods and
//! 100,000-deep nesting answered without the server dying; the lifecycle's
//! exit statuses; hover, definition, references, completion, signature
//! help, document symbols and rename; a property test that feeds random
//! edits of the course programs to the server's handler in this process;
//! and a second client, pygls's (`tests/lsp_client.py`), run with the
//! Python of `TAPEC_PYTHON` (else `bench/.venv`): without one it prints
//! `NOT RUN` and passes, except under `CI=true`, where it fails.

mod clients;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{Value, json};

mod watchdog;
use watchdog::within_watchdog;

/// How long any one message may take to arrive. Each takes milliseconds;
/// this is no speed target.
const WATCHDOG: Duration = Duration::from_secs(30);

const URI: &str = "file:///work/three.tape";

/// A client of `tapec lsp` running as a child process.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Value>,
    /// Messages read while waiting for another.
    waiting: VecDeque<Value>,
    next_id: i64,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tapec"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tapec lsp");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take();
        let (sender, incoming) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(body) = read_framed(&mut reader) {
                let value: Value = serde_json::from_slice(&body).expect("the server sent JSON");
                if sender.send(value).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            stdin,
            incoming,
            waiting: VecDeque::new(),
            next_id: 1,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to the server");
        stdin.flush().expect("flush");
    }

    fn send(&mut self, message: &Value) {
        let body = message.to_string();
        self.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    /// The next message from the server, within the watchdog.
    fn next(&mut self) -> Value {
        if let Some(v) = self.waiting.pop_front() {
            return v;
        }
        self.incoming
            .recv_timeout(WATCHDOG)
            .unwrap_or_else(|_| panic!("hang: no message from the server in {WATCHDOG:?}"))
    }

    /// Sends a request and gives its whole response; what comes before it
    /// is kept for later.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(&json!(id))
    }

    /// The response with this id; other messages are kept for later.
    fn response(&mut self, id: &Value) -> Value {
        let mut kept = Vec::new();
        let found = loop {
            let v = self.next();
            if v.get("id") == Some(id) && v.get("method").is_none() {
                break v;
            }
            kept.push(v);
        };
        self.waiting.extend(kept);
        found
    }

    /// A request's result; an error response fails the test.
    fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The parameters of the next notification of `method`.
    fn notification(&mut self, method: &str) -> Value {
        let mut kept = Vec::new();
        let found = loop {
            let v = self.next();
            if v["method"] == method {
                break v["params"].clone();
            }
            kept.push(v);
        };
        self.waiting.extend(kept);
        found
    }

    fn initialize(&mut self, capabilities: Value) -> Value {
        let result = self.result(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": capabilities}),
        );
        self.notify("initialized", json!({}));
        result
    }

    /// Opens a document and gives the diagnostics published for it.
    fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "tape", "version": 1, "text": text}}),
        );
        self.diagnostics(uri)
    }

    fn change(&mut self, uri: &str, version: i64, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
        self.diagnostics(uri)
    }

    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let params = self.notification("textDocument/publishDiagnostics");
        assert_eq!(params["uri"], uri);
        params["diagnostics"].as_array().expect("a list").clone()
    }

    /// Closes stdin and waits for the exit status, within the watchdog.
    fn wait(mut self) -> ExitStatus {
        self.stdin = None;
        let deadline = Instant::now() + WATCHDOG;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "hang: the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `shutdown`, then `exit`: the status.
    fn finish(mut self) -> ExitStatus {
        assert_eq!(self.result("shutdown", Value::Null), Value::Null);
        self.notify("exit", Value::Null);
        self.wait()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One framed body, or `None` at the end of the stream.
fn read_framed(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = Some(n.parse::<usize>().expect("a length"));
        }
    }
    let mut body = vec![0; length.expect("Content-Length")];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// A range as `(line, character, line, character)`.
type Span4 = (u64, u64, u64, u64);

fn range(v: &Value) -> Span4 {
    let n = |p: &str, k: &str| v[p][k].as_u64().expect("a number");
    (
        n("start", "line"),
        n("start", "character"),
        n("end", "line"),
        n("end", "character"),
    )
}

/// Three errors, the first after non-ASCII text on its line: `ï` and `×`
/// are one UTF-16 unit and two bytes each, `🙂` two units and four bytes.
const THREE: &str = "program Three;\n\
Y := 1;\n\
WriteLn('naïve × 🙂', y);\n\
z := Sqrt(1, 2);\n\
WriteLn(q);\n";

#[test]
fn every_error_is_published_with_its_utf16_range_labels_and_hints() {
    let mut client = Client::start();
    let result = client.initialize(json!({}));
    assert_eq!(result["capabilities"]["positionEncoding"], "utf-16");
    let diagnostics = client.open(URI, THREE);
    let ranges: Vec<_> = diagnostics.iter().map(|d| range(&d["range"])).collect();
    assert_eq!(ranges, [(2, 22, 2, 23), (3, 5, 3, 15), (4, 8, 4, 9)]);
    for d in &diagnostics {
        assert_eq!(d["severity"], 1, "{d}");
        assert_eq!(d["source"], "tapec", "{d}");
    }
    let y = &diagnostics[0];
    assert_eq!(
        y["message"], "unknown variable `y`\nHelp: did you mean `Y`?",
        "the hint follows the message"
    );
    let related = &y["relatedInformation"][0];
    assert_eq!(related["message"], "nothing is ever assigned to this name");
    assert_eq!(related["location"]["uri"], URI);
    assert_eq!(range(&related["location"]["range"]), (2, 22, 2, 23));
    assert!(
        diagnostics[1]["message"]
            .as_str()
            .unwrap()
            .starts_with("`Sqrt` takes 1 argument, but 2 were given"),
        "{}",
        diagnostics[1]
    );

    // Two of the three mended: one is left.
    let fixed = THREE
        .replace("', y);", "', Y);")
        .replace("Sqrt(1, 2)", "Sqrt(2)");
    let left = client.change(URI, 2, &fixed);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(range(&left[0]["range"]), (4, 8, 4, 9));
    assert!(left[0]["message"].as_str().unwrap().contains("`q`"));

    // Closing the document clears them.
    client.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": URI}}),
    );
    assert!(client.diagnostics(URI).is_empty());
    assert!(client.finish().success());
}

/// What the checks find of values written out, an editor shows as it is
/// typed: an operator on literals, a literal a declared type refuses.
#[test]
fn literals_of_the_wrong_kind_are_underlined() {
    let mut client = Client::start();
    client.initialize(json!({}));
    let text = "var n: Integer;\nn := 2.5;\nx := 'a' + 1;\n";
    let diagnostics = client.open(URI, text);
    let found: Vec<_> = diagnostics
        .iter()
        .map(|d| {
            let message = d["message"].as_str().expect("a message");
            (range(&d["range"]), message.lines().next().unwrap_or(""))
        })
        .collect();
    assert_eq!(
        found,
        [
            ((1, 0, 1, 1), "`n` is declared Integer but is given a Real"),
            ((2, 9, 2, 10), "cannot add a String and an Integer"),
        ]
    );
    assert!(client.finish().success());
}

#[test]
fn columns_are_bytes_once_utf8_is_negotiated() {
    let mut client = Client::start();
    let result = client.initialize(json!({"general": {"positionEncodings": ["utf-8", "utf-16"]}}));
    assert_eq!(result["capabilities"]["positionEncoding"], "utf-8");
    let diagnostics = client.open(URI, THREE);
    let ranges: Vec<_> = diagnostics.iter().map(|d| range(&d["range"])).collect();
    // `WriteLn('` is 9 bytes, `naïve × 🙂` 14, `', ` 3.
    assert_eq!(ranges, [(2, 26, 2, 27), (3, 5, 3, 15), (4, 8, 4, 9)]);
    assert!(client.finish().success());
}

#[test]
fn a_text_that_does_not_parse_gets_each_error_where_the_parser_recovered() {
    let mut client = Client::start();
    client.initialize(json!({}));
    let text = "a := 1;\nb := ;\nc := a +;\nWriteLn(c);\n";
    let diagnostics = client.open(URI, text);
    let lines: Vec<u64> = diagnostics.iter().map(|d| range(&d["range"]).0).collect();
    assert_eq!(lines, [1, 2], "{diagnostics:?}");
    assert!(client.finish().success());
}

#[test]
fn a_layout_warning_is_published_as_a_warning() {
    let mut client = Client::start();
    client.initialize(json!({}));
    let text = "s := 0;\nfor i := 1 to 3 do\n  s := s + i;\n  WriteLn(s);\n";
    let diagnostics = client.open(URI, text);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0]["severity"], 2);
    assert_eq!(range(&diagnostics[0]["range"]).0, 3);
    assert!(client.finish().success());
}

#[test]
fn garbage_and_unknown_methods_are_answered_and_the_server_goes_on() {
    let mut client = Client::start();
    // Before `initialize`.
    let early = client.request("textDocument/hover", json!({}));
    assert_eq!(early["error"]["code"], -32002, "{early}");
    client.initialize(json!({}));

    // A body that is not JSON: a parse error, with no id to answer.
    client.send_raw(b"Content-Length: 9\r\n\r\n{not json");
    let answer = client.next();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    // A header without a length, then a length that is no number.
    client.send_raw(b"Bogus header\r\n\r\n");
    assert_eq!(client.next()["error"]["code"], -32700);
    client.send_raw(b"Content-Length: lots\r\n\r\n");
    assert_eq!(client.next()["error"]["code"], -32700);
    // JSON that is no message, with an id: answered under that id.
    client.send(&json!({"jsonrpc": "2.0", "id": 99, "params": 1}));
    let invalid = client.response(&json!(99));
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    // Bytes before a header.
    client.send_raw(b"\x00\xff garbage ");

    // An unknown request, and an unknown notification (ignored).
    let unknown = client.request("tape/makeCoffee", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    client.notify("tape/somethingHappened", json!({"x": 1}));
    // Parameters that do not fit a notification: logged, not fatal.
    client.notify("textDocument/didOpen", json!({"textDocument": 5}));
    assert_eq!(client.notification("window/logMessage")["type"], 2);

    // The server still works.
    let diagnostics = client.open(URI, THREE);
    assert_eq!(diagnostics.len(), 3);
    assert!(client.finish().success());
}

#[test]
fn nesting_100000_deep_gets_the_nesting_diagnostic_in_time() {
    let mut client = Client::start();
    client.initialize(json!({}));
    let n = 100_000;
    let brackets = format!("x := {}1{};\n", "(".repeat(n), ")".repeat(n));
    let blocks = format!("{}\n{}\n", "begin ".repeat(n), "end; ".repeat(n));
    for (k, text) in [brackets, blocks].iter().enumerate() {
        let uri = format!("file:///work/deep{k}.tape");
        let diagnostics = client.open(&uri, text);
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        let message = diagnostics[0]["message"].as_str().unwrap();
        assert!(
            message.contains("nested more than 256 levels deep"),
            "{message}"
        );
        // And it still answers about the document.
        assert!(client.request("tape/nothing", json!({}))["error"].is_object());
    }
    assert!(client.finish().success());
}

#[test]
fn exit_after_shutdown_is_status_0_and_without_it_1() {
    let mut client = Client::start();
    client.initialize(json!({}));
    assert_eq!(client.finish().code(), Some(0));

    let mut client = Client::start();
    client.initialize(json!({}));
    client.notify("exit", Value::Null);
    assert_eq!(client.wait().code(), Some(1));

    // After `shutdown`, requests are refused; the input ending is `exit`.
    let mut client = Client::start();
    client.initialize(json!({}));
    assert_eq!(client.result("shutdown", Value::Null), Value::Null);
    let refused = client.request("textDocument/hover", json!({}));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(client.wait().code(), Some(0));

    // Input that ends before `initialize`.
    let client = Client::start();
    assert_eq!(client.wait().code(), Some(1));
}

// ---- hover, definition, references, completion, signature help, symbols, rename ----

/// A routine called before it is declared, a comment above it, locals of
/// two routines, a tape.
const FEATURES: &str = "program Features;
rate := 0.1;
w := [[0.5, -0.25]];
total := Twice(rate);        { calls Twice before it is declared }

{ Twice gives back two of x. }
function Twice(x: Real): Real;
var doubled: Real;
begin
  doubled := x * 2;
  Result := doubled
end;

procedure Other(y: Real);
begin
  hidden := y + rate;
  WriteLn(hidden)
end;

tape
  s := Sum(w * Twice(rate));
end;
WriteLn(Power(total, 2), Sqrt(rate));
";

/// The position of the `nth` `needle` in `text`, `after` characters in.
fn position(text: &str, needle: &str, nth: usize, after: usize) -> Value {
    let at = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("no {needle:?} #{nth}"))
        .0
        + after;
    let before = &text[..at];
    let line = before.matches('\n').count();
    let column = before.rsplit('\n').next().unwrap().encode_utf16().count();
    json!({"line": line, "character": column})
}

/// The labels completion offers at the end of `text`, made the document's
/// text as its version `version`.
fn labels_at_end(client: &mut Client, version: i64, text: &str) -> Vec<String> {
    client.change(URI, version, text);
    let end = position(text, text, 0, text.len());
    let items = client.result("textDocument/completion", at(URI, end));
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap().to_string())
        .collect()
}

fn at(uri: &str, position: Value) -> Value {
    json!({"textDocument": {"uri": uri}, "position": position})
}

/// A client with FEATURES open, and no errors in it.
fn features_client(capabilities: Value) -> Client {
    let mut client = Client::start();
    client.initialize(capabilities);
    let diagnostics = client.open(URI, FEATURES);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    client
}

fn hover_text(client: &mut Client, position: Value) -> String {
    let hover = client.result("textDocument/hover", at(URI, position));
    hover["contents"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no hover text: {hover}"))
        .to_string()
}

#[test]
fn hover_shows_a_builtins_help_a_routines_header_and_comment_and_a_variables_scope() {
    let mut client = features_client(json!({}));
    // The builtin's text is what `:help Sqrt` prints at the prompt.
    let help = tapec::repl::transcript(":help Sqrt");
    assert!(help.starts_with("Sqrt("), "{help}");
    assert_eq!(
        hover_text(&mut client, position(FEATURES, "Sqrt", 0, 2)),
        help
    );
    // A routine at a call before its declaration: header and comment.
    assert_eq!(
        hover_text(&mut client, position(FEATURES, "Twice(rate)", 0, 0)),
        "function Twice(x: Real): Real\n\nTwice gives back two of x."
    );
    assert_eq!(
        hover_text(&mut client, position(FEATURES, "doubled", 2, 3)),
        "doubled: Real\n\na local variable of `Twice`, declared on line 8"
    );
    assert_eq!(
        hover_text(&mut client, position(FEATURES, "x * 2", 0, 0)),
        "x: Real\n\na parameter of `Twice`"
    );
    assert_eq!(
        hover_text(&mut client, position(FEATURES, "hidden", 1, 0)),
        "hidden\n\na local variable of `Other`, first assigned on line 16: `hidden := y + rate;`"
    );
    assert_eq!(
        hover_text(&mut client, position(FEATURES, "rate", 2, 0)),
        "rate\n\na global variable, first assigned on line 2: `rate := 0.1;`"
    );
    // Nothing to say about a number; and a position past every line.
    let on_number = client.result(
        "textDocument/hover",
        at(URI, position(FEATURES, "0.1", 0, 1)),
    );
    assert_eq!(on_number, Value::Null);
    let past = client.result(
        "textDocument/hover",
        at(URI, json!({"line": 9999, "character": 9999})),
    );
    assert_eq!(past, Value::Null);
    assert!(client.finish().success());
}

#[test]
fn hover_is_markdown_for_a_client_that_shows_it() {
    let mut client = features_client(
        json!({"textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]}}}),
    );
    let hover = client.result(
        "textDocument/hover",
        at(URI, position(FEATURES, "Sqrt", 0, 0)),
    );
    assert_eq!(hover["contents"]["kind"], "markdown");
    assert_eq!(
        hover["contents"]["value"],
        format!("```text\n{}```", tapec::repl::transcript(":help Sqrt"))
    );
    assert!(client.finish().success());
}

/// Keywords (one in capitals), operators, `mod` (a keyword and an
/// operator), `+` after characters of every width; and a comment, a string
/// and punctuation, which have no help.
const WORDS: &str = "program Words;
s := 'é🙂' + 'for';  { for the tape }
w := 3;
BEGIN
  n := -7 mod 2;
  WriteLn(n, w * w)
end;
tape y := w * w; end;
";

/// What a hover says at `position`, and its range; `None` if nothing.
fn hover_at(client: &mut Client, position: Value) -> Option<(String, Span4)> {
    let hover = client.result("textDocument/hover", at(URI, position));
    if hover.is_null() {
        return None;
    }
    let text = hover["contents"]["value"].as_str().expect("a text");
    Some((text.to_string(), range(&hover["range"])))
}

#[test]
fn hover_over_a_keyword_or_an_operator_shows_what_help_says_of_it() {
    let mut client = Client::start();
    client.initialize(json!({}));
    client.open(URI, WORDS);
    // (what is hovered, its occurrence, characters into it, `:help`'s
    // name for it, how that text starts, the range).
    let cases = [
        (
            "tape y",
            0,
            2,
            "tape",
            "tape (a word of the language): records the statements",
            (7, 0, 7, 4),
        ),
        (
            "BEGIN",
            0,
            0,
            "BEGIN",
            "begin (a word of the language): groups statements",
            (3, 0, 3, 5),
        ),
        (
            "end;",
            0,
            2,
            "end",
            "end (a word of the language): closes a `begin`",
            (6, 0, 6, 3),
        ),
        (
            ":=",
            0,
            1,
            ":=",
            ":= (an operator): gives a variable a value",
            (1, 2, 1, 4),
        ),
        (
            "-7",
            0,
            0,
            "-",
            "- (an operator): subtracts, spreading as `+` does; before a value, negates it",
            (4, 7, 4, 8),
        ),
        (
            "mod",
            0,
            1,
            "mod",
            "mod (a word of the language): the remainder of Integer division",
            (4, 10, 4, 13),
        ),
        (
            "w * w",
            1,
            2,
            "*",
            "* (an operator): multiplies numbers, scales a matrix by a number, and of two matrices is the matrix product",
            (7, 12, 7, 13),
        ),
        // `é` is one UTF-16 unit, `🙂` two.
        (
            "+ 'for'",
            0,
            0,
            "+",
            "+ (an operator): adds numbers",
            (1, 11, 1, 12),
        ),
    ];
    for (needle, nth, into, name, starts, expected) in cases {
        let (text, range) = hover_at(&mut client, position(WORDS, needle, nth, into))
            .unwrap_or_else(|| panic!("no hover over {needle:?}"));
        assert_eq!(
            text,
            tapec::repl::transcript(&format!(":help {name}")),
            "{needle}"
        );
        assert!(text.starts_with(starts), "{needle}: {text}");
        assert_eq!(range, expected, "{needle}");
    }
    // With the cursor in the blank right after a keyword, that keyword.
    let after_begin = position(WORDS, "BEGIN", 0, 5);
    let (text, range) = hover_at(&mut client, after_begin).expect("after BEGIN");
    assert!(text.starts_with("begin (a word"), "{text}");
    assert_eq!(range, (3, 0, 3, 5));
    // At the first character of punctuation without help, the cursor
    // also ends the word before it (`end|;`, `WriteLn|(`), which is what it
    // is about, as in rust-analyzer.
    for (needle, into, starts, expected) in [
        ("end;", 3, "end (a word", (6, 0, 6, 3)),
        ("(n", 0, "WriteLn(", (5, 2, 5, 9)),
        (", w", 0, "n\n", (5, 10, 5, 11)),
    ] {
        let (text, range) = hover_at(&mut client, position(WORDS, needle, 0, into))
            .unwrap_or_else(|| panic!("no hover at {needle:?}"));
        assert!(text.starts_with(starts), "{needle}: {text}");
        assert_eq!(range, expected, "{needle}");
    }
    // Nothing in a comment or a string, or on punctuation without help
    // that ends no word: after a string, a number or a blank.
    for (needle, nth, into) in [
        ("for the", 0, 0),
        ("tape }", 0, 1),
        ("{ for", 0, 0),
        ("for'", 0, 1),
        ("'é", 0, 0),
        (";  {", 0, 0),
        ("2;", 0, 1),
        ("n, w", 0, 2),
    ] {
        assert_eq!(
            hover_at(&mut client, position(WORDS, needle, nth, into)),
            None,
            "{needle} +{into}"
        );
    }
    assert!(client.finish().success());
}

#[test]
fn hover_over_a_type_shows_what_help_says_of_it() {
    let types =
        "var n: Integer;\nfunction F(x: Real): Matrix;\nbegin\n  Result := Zeros(1, 1);\nend;\n";
    let mut client = Client::start();
    client.initialize(json!({}));
    client.open(URI, types);
    // (what is hovered, characters into it, the type, the range): over
    // the name, and at the `)` or `;` right after it.
    for (needle, into, name, expected) in [
        ("Integer", 2, "Integer", (0, 7, 0, 14)),
        ("Real)", 4, "Real", (1, 14, 1, 18)),
        ("Matrix;", 6, "Matrix", (1, 21, 1, 27)),
    ] {
        let (text, range) = hover_at(&mut client, position(types, needle, 0, into))
            .unwrap_or_else(|| panic!("no hover over {needle:?}"));
        assert_eq!(text, tapec::repl::transcript(&format!(":help {name}")));
        assert!(text.starts_with(&format!("{name} (a type): ")), "{text}");
        assert_eq!(range, expected, "{needle}");
    }
    assert!(client.finish().success());
}

#[test]
fn a_keywords_hover_is_markdown_and_in_bytes_when_the_client_asks() {
    let mut client = Client::start();
    client.initialize(json!({
        "general": {"positionEncodings": ["utf-8"]},
        "textDocument": {"hover": {"contentFormat": ["markdown"]}},
    }));
    client.open(URI, WORDS);
    let hover = client.result("textDocument/hover", at(URI, position(WORDS, "mod", 0, 0)));
    assert_eq!(hover["contents"]["kind"], "markdown");
    assert_eq!(
        hover["contents"]["value"],
        format!("```text\n{}```", tapec::repl::transcript(":help mod"))
    );
    // `s := '` is 6 bytes, `é🙂` 6, `' ` 2.
    let plus = json!({"line": 1, "character": 14});
    let (text, range) = hover_at(&mut client, plus).expect("+");
    assert!(text.contains("+ (an operator): adds numbers"), "{text}");
    assert_eq!(range, (1, 14, 1, 15));
    // A keyword's completion carries the same line, as markdown too.
    let items = client.result(
        "textDocument/completion",
        at(URI, json!({"line": 3, "character": 0})),
    );
    let item = items
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == "while")
        .unwrap_or_else(|| panic!("no `while` in {items}"));
    assert_eq!(item["documentation"]["kind"], "markdown");
    assert_eq!(
        item["documentation"]["value"],
        tapec::syntax::lexer::keyword_help("while").unwrap()
    );
    assert!(client.finish().success());
}

#[test]
fn definition_of_a_routine_called_before_it_is_declared() {
    let mut client = features_client(json!({}));
    let call = position(FEATURES, "Twice(rate)", 0, 1);
    let found = client.result("textDocument/definition", at(URI, call));
    assert_eq!(found["uri"], URI);
    let header = position(FEATURES, "Twice(x", 0, 0);
    assert_eq!(found["range"]["start"], header);
    assert_eq!(range(&found["range"]), (6, 9, 6, 14));
    // A parameter, a local declared by `var`, a global's first assignment.
    for (from, to) in [
        (
            position(FEATURES, "x * 2", 0, 0),
            position(FEATURES, "x: Real", 0, 0),
        ),
        (
            position(FEATURES, "doubled", 2, 0),
            position(FEATURES, "doubled", 0, 0),
        ),
        (
            position(FEATURES, "rate", 3, 0),
            position(FEATURES, "rate", 0, 0),
        ),
    ] {
        let found = client.result("textDocument/definition", at(URI, from.clone()));
        assert_eq!(found["range"]["start"], to, "from {from}");
    }
    assert!(client.finish().success());
}

/// A routine that assigns a global is refused; the global still comes from
/// the top level's assignment, after the routine in the text, for hover and
/// for going to its definition.
#[test]
fn a_globals_definition_is_not_a_routines_refused_assignment_to_it() {
    const TEXT: &str = "procedure P;\nbegin\n  rate := 0.5;\nend;\nrate := 0.1;\nWriteLn(rate);\n";
    let uri = "file:///work/global.tape";
    let mut client = Client::start();
    client.initialize(json!({}));
    let diagnostics = client.open(uri, TEXT);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert!(
        diagnostics[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("`P` cannot assign the global variable `rate`"),
        "{diagnostics:?}"
    );
    let read = position(TEXT, "rate", 2, 1);
    let hover = client.result("textDocument/hover", at(uri, read.clone()));
    assert_eq!(
        hover["contents"]["value"],
        "rate\n\na global variable, first assigned on line 5: `rate := 0.1;`"
    );
    let found = client.result("textDocument/definition", at(uri, read));
    assert_eq!(found["range"]["start"], position(TEXT, "rate", 1, 0));
    assert!(client.finish().success());
}

#[test]
fn references_are_every_occurrence_of_the_same_name_in_its_scope() {
    let mut client = features_client(json!({}));
    let lines = |found: &Value| -> Vec<u64> {
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|l| range(&l["range"]).0)
            .collect()
    };
    let rate = at(URI, position(FEATURES, "rate", 2, 0));
    let mut with = rate.clone();
    with["context"] = json!({"includeDeclaration": true});
    let found = client.result("textDocument/references", with);
    assert_eq!(lines(&found), [1, 3, 15, 20, 22]);
    let mut without = rate;
    without["context"] = json!({"includeDeclaration": false});
    let found = client.result("textDocument/references", without);
    assert_eq!(lines(&found), [3, 15, 20, 22]);
    // A parameter's references stay in its routine.
    let mut x = at(URI, position(FEATURES, "x: Real", 0, 0));
    x["context"] = json!({"includeDeclaration": true});
    let found = client.result("textDocument/references", x);
    assert_eq!(lines(&found), [6, 9]);
    assert!(client.finish().success());
}

#[test]
fn completion_in_a_routine_lists_its_locals_and_the_globals_not_another_routines() {
    let mut client = features_client(json!({
        "textDocument": {"completion": {"completionItem": {"snippetSupport": true}}}
    }));
    let labels = |client: &mut Client, position: Value| -> Vec<String> {
        let items = client.result("textDocument/completion", at(URI, position));
        let items = items
            .as_array()
            .cloned()
            .unwrap_or_else(|| items["items"].as_array().unwrap().clone());
        items
            .iter()
            .map(|i| i["label"].as_str().unwrap().to_string())
            .collect()
    };
    let inside_other = labels(&mut client, position(FEATURES, "WriteLn(hidden)", 0, 0));
    for name in [
        "y", "hidden", "rate", "w", "total", "s", "Other", "WriteLn", "begin",
    ] {
        assert!(
            inside_other.iter().any(|l| l == name),
            "{name} missing: {inside_other:?}"
        );
    }
    for name in ["x", "doubled", "Result"] {
        assert!(
            !inside_other.iter().any(|l| l == name),
            "{name} is Twice's: {inside_other:?}"
        );
    }
    // A statement does not start with a function (its value would go
    // unused) or a type.
    for name in ["Twice", "Sqrt", "Real"] {
        assert!(
            !inside_other.iter().any(|l| l == name),
            "{name} offered where a statement starts: {inside_other:?}"
        );
    }
    assert!(
        inside_other.iter().any(|l| l.starts_with("tape")),
        "a tape snippet"
    );
    let top = labels(&mut client, position(FEATURES, "WriteLn(Power", 0, 0));
    for name in ["y", "hidden", "x", "doubled"] {
        assert!(
            !top.iter().any(|l| l == name),
            "{name} is a routine's: {top:?}"
        );
    }
    // A builtin's item carries its signature and doc line (inside an
    // expression, where a function goes).
    let items = client.result(
        "textDocument/completion",
        at(URI, position(FEATURES, "WriteLn(Power", 0, 8)),
    );
    let sqrt = items
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == "Sqrt")
        .unwrap()
        .clone();
    let declared = tapec::declarations::find("Sqrt").unwrap();
    assert_eq!(sqrt["detail"], declared.signature());
    assert_eq!(sqrt["documentation"], declared.doc);
    // A keyword's, the line `:help` gives it.
    let not = items
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == "not")
        .unwrap();
    let help = tapec::syntax::lexer::keyword_help("not").unwrap();
    assert!(help.starts_with("the opposite of a Boolean"), "{help}");
    assert_eq!(not["documentation"], help);
    // In a comment: nothing.
    let in_comment = labels(&mut client, position(FEATURES, "calls Twice", 0, 2));
    assert!(in_comment.is_empty(), "{in_comment:?}");
    assert!(client.finish().success());
}

/// `tapec check` refuses a routine or a `var` section inside a block or a
/// branch, and a tape inside a tape: as a block is typed (no `end` yet),
/// none of them is offered in it, and after its `end` they are again.
#[test]
fn inside_an_open_block_no_routine_var_section_or_second_tape_is_offered() {
    let mut client = Client::start();
    client.initialize(json!({
        "textDocument": {"completion": {"completionItem": {"snippetSupport": true}}}
    }));
    client.open(URI, "");
    let mut version = 1;
    let mut labels = |client: &mut Client, text: &str| {
        version += 1;
        labels_at_end(client, version, text)
    };
    let declarations = ["procedure", "function", "procedure …", "function …", "var"];
    for text in [
        "x := 1;\ntape\n  ",
        "x := 1;\ntape\n  y := x;\n  ",
        "begin\n  ",
        "x := 1;\nif x > 0 then ",
        "x := 1;\nif x > 0 then y := 1 else ",
        "for i := 1 to 3 do ",
        "repeat\n  ",
        "procedure P;\nbegin\n  ",
    ] {
        let offered = labels(&mut client, text);
        assert!(
            offered.iter().any(|l| l == "while"),
            "{text:?}: {offered:?}"
        );
        for unwanted in declarations {
            assert!(
                !offered.iter().any(|l| l == unwanted),
                "{text:?}: {unwanted} offered in {offered:?}"
            );
        }
    }
    let in_tape = labels(&mut client, "tape\n  x := 1;\n  ");
    for unwanted in ["tape", "tape … end;"] {
        assert!(!in_tape.iter().any(|l| l == unwanted), "{in_tape:?}");
    }
    let after = labels(&mut client, "tape\n  x := 1;\nend;\n");
    for wanted in ["procedure", "function …", "var", "tape", "tape … end;"] {
        assert!(after.iter().any(|l| l == wanted), "{wanted}: {after:?}");
    }
    // Between a routine's header and its `begin`, its `var` section or
    // its `begin`, and no statement: `procedure P; WriteLn` is an error.
    for text in [
        "procedure P;\n",
        "function F(a: Real): Real;\n",
        "procedure P(var a: Matrix; b: Real);\nvar c: Real;\n",
        "procedure P;\nvar c, d: Real;\n  e: Integer;\n",
    ] {
        assert_eq!(labels(&mut client, text), ["begin", "var"], "{text:?}");
    }
    assert!(client.finish().success());
}

/// After `for` only its counter's name may stand: the variables in
/// scope. And `not`, which negates a whole comparison, is not offered
/// just after a comparison, where the parser refuses it (`a = not b`).
#[test]
fn after_for_only_variables_and_after_a_comparison_no_not_are_offered() {
    let mut client = Client::start();
    client.initialize(json!({
        "textDocument": {"completion": {"completionItem": {"snippetSupport": true}}}
    }));
    client.open(URI, "");
    assert_eq!(
        labels_at_end(&mut client, 2, "total := 0;\nfor "),
        ["total"]
    );
    let compared = labels_at_end(&mut client, 3, "a := true;\nb := a = ");
    assert!(compared.iter().any(|l| l == "a"), "{compared:?}");
    assert!(!compared.iter().any(|l| l == "not"), "{compared:?}");
    let joined = labels_at_end(&mut client, 4, "a := true;\nb := a and ");
    assert!(joined.iter().any(|l| l == "not"), "{joined:?}");
    assert!(client.finish().success());
}

/// Where a new name is declared, nothing of the program's or the
/// language's is wanted: a builtin's name offered there would be an error
/// once taken (`procedure Save`). Before a parameter, `var` may come.
#[test]
fn where_a_new_name_is_declared_nothing_is_offered() {
    let mut client = Client::start();
    client.initialize(json!({}));
    client.open(URI, "");
    let mut version = 1;
    let mut labels = |client: &mut Client, text: &str| {
        version += 1;
        labels_at_end(client, version, text)
    };
    for text in [
        "program ",
        "x := 1;\nprocedure Sa",
        "function ",
        "var ",
        "var a, ",
        "procedure P(var ",
        "procedure P(a, ",
    ] {
        let offered = labels(&mut client, text);
        assert!(offered.is_empty(), "{text:?}: {offered:?}");
    }
    for text in ["procedure P(", "function F(a: Real; "] {
        assert_eq!(labels(&mut client, text), ["var"], "{text:?}");
    }
    // Just after a declared name, its type, or a header's parameters, only
    // `(`, `:`, `,` or `;` may follow: `procedure P then` is no program.
    for text in [
        "program Demo ",
        "procedure P ",
        "function F(a: Real) ",
        "function F(a: Real): Real ",
        "procedure P(a ",
        "procedure P(var a: Real; b ",
        "var a ",
        "var a, b: Real ",
    ] {
        let offered = labels(&mut client, text);
        assert!(offered.is_empty(), "{text:?}: {offered:?}");
    }
    // A width in a call is a value, which an operator may follow.
    let width = labels(&mut client, "x := 1;\nw := 8;\nWriteLn(x: w ");
    assert!(width.iter().any(|l| l == "div"), "{width:?}");
    // A call's arguments, and what follows a header, are no header.
    for (text, wanted) in [
        ("x := 1;\ny := Sqrt(", "x"),
        ("x := 1;\nWriteLn(x, ", "x"),
        ("procedure P(a: Real);\n", "begin"),
        ("x := 1;\nvar a: Real;\n", "WriteLn"),
    ] {
        let offered = labels(&mut client, text);
        assert!(offered.iter().any(|l| l == wanted), "{text:?}: {offered:?}");
    }
    assert!(client.finish().success());
}

#[test]
fn signature_help_follows_the_commas() {
    let mut client = features_client(json!({}));
    let help = |client: &mut Client, position: Value| -> Value {
        client.result("textDocument/signatureHelp", at(URI, position))
    };
    let first = help(&mut client, position(FEATURES, "Power(total", 0, 6));
    let signature = &first["signatures"][0];
    let declared = tapec::declarations::find("Power").unwrap();
    assert_eq!(signature["label"], declared.signature());
    assert_eq!(first["activeParameter"], 0);
    let second = help(&mut client, position(FEATURES, ", 2)", 0, 2));
    assert_eq!(second["activeParameter"], 1);
    let offsets = &second["signatures"][0]["parameters"][1]["label"];
    let label = declared.signature();
    let (a, b) = (
        offsets[0].as_u64().unwrap() as usize,
        offsets[1].as_u64().unwrap() as usize,
    );
    assert_eq!(&label[a..b], declared.params[1].name);
    // A routine of the program, and outside any call.
    let twice = help(&mut client, position(FEATURES, "Twice(rate)", 0, 6));
    assert_eq!(twice["signatures"][0]["label"], "Twice(x: Real): Real");
    assert_eq!(
        twice["signatures"][0]["documentation"],
        "Twice gives back two of x."
    );
    let outside = help(&mut client, position(FEATURES, "rate := 0.1", 0, 0));
    assert_eq!(outside, Value::Null);
    // Typing a call that is not finished yet.
    let typing = "x := 1;\nWriteLn(Max(x, ";
    client.change(URI, 2, typing);
    let open = help(&mut client, position(typing, "x, ", 0, 3));
    assert_eq!(open["signatures"][0]["label"], "Max(a, b)");
    assert_eq!(open["activeParameter"], 1);
    // A routine's parameters apart by `;`, as its header declares them.
    let declared = "function Lin(w: Matrix; var x: Matrix; b: Real): Matrix;\nbegin\n  Result := w;\nend;\ny := Lin(";
    client.change(URI, 3, declared);
    let lin = help(&mut client, position(declared, "Lin(", 1, 4));
    assert_eq!(
        lin["signatures"][0]["label"],
        "Lin(w: Matrix; var x: Matrix; b: Real): Matrix"
    );
    // Too many arguments: the last parameter stays active, in range.
    let many = "x := Sqrt(1, 2, ";
    client.change(URI, 4, many);
    let past = help(&mut client, position(many, "2, ", 0, 3));
    assert_eq!(
        past["signatures"][0]["label"],
        tapec::declarations::find("Sqrt").unwrap().signature()
    );
    assert_eq!(past["activeParameter"], 0);
    assert_eq!(past["signatures"][0]["activeParameter"], 0);
    // A routine without parameters has no active one.
    let none = "procedure Hi;\nbegin\nend;\nHi(1, ";
    client.change(URI, 5, none);
    let hi = help(&mut client, position(none, "Hi(1", 0, 3));
    assert_eq!(hi["signatures"][0]["label"], "Hi()");
    assert_eq!(hi["activeParameter"], Value::Null);
    assert!(client.finish().success());
}

#[test]
fn document_symbols_are_the_routines_and_the_tapes() {
    let mut client = features_client(json!({}));
    let symbols = client.result(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": URI}}),
    );
    let found: Vec<(String, u64, Span4)> = symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["kind"].as_u64().unwrap(),
                range(&s["range"]),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("Twice".to_string(), 12, (6, 0, 11, 3)),
            ("Other".to_string(), 6, (13, 0, 17, 3)),
            ("tape → s".to_string(), 24, (19, 0, 21, 3)),
        ]
    );
    assert_eq!(symbols[0]["detail"], "function Twice(x: Real): Real");
    assert_eq!(range(&symbols[0]["selectionRange"]), (6, 9, 6, 14));
    assert!(client.finish().success());
}

#[test]
fn rename_changes_every_occurrence_and_refuses_what_would_break() {
    let mut client = features_client(json!({
        "textDocument": {"rename": {"prepareSupport": true}}
    }));
    let rate = position(FEATURES, "rate", 2, 1);
    let prepared = client.result("textDocument/prepareRename", at(URI, rate.clone()));
    assert_eq!(range(&prepared), (15, 16, 15, 20));
    let mut params = at(URI, rate.clone());
    params["newName"] = json!("step");
    let edit = client.result("textDocument/rename", params);
    let edits = edit["changes"][URI].as_array().unwrap();
    let mut renamed = FEATURES.to_string();
    // Apply from the end, so earlier ranges stay where they are.
    let mut spans: Vec<Span4> = edits.iter().map(|e| range(&e["range"])).collect();
    spans.sort();
    for (line, start, _, end) in spans.into_iter().rev() {
        let line_start: usize = renamed
            .split('\n')
            .take(line as usize)
            .map(|l| l.len() + 1)
            .sum();
        renamed.replace_range(
            line_start + start as usize..line_start + end as usize,
            "step",
        );
    }
    assert!(!renamed.contains("rate"), "{renamed}");
    assert_eq!(renamed.matches("step").count(), 5);
    assert!(
        client.change(URI, 2, &renamed).is_empty(),
        "the renamed program checks"
    );

    // To a name already used, a builtin, a keyword, or no name: refused.
    let total = position(&renamed, "total", 0, 0);
    for bad in ["w", "Sqrt", "begin", "two words", ""] {
        let mut params = at(URI, total.clone());
        params["newName"] = json!(bad);
        let refused = client.request("textDocument/rename", params);
        assert!(refused["error"]["message"].is_string(), "{bad}: {refused}");
    }
    // A builtin is not renamed.
    let sqrt = position(&renamed, "Sqrt", 0, 0);
    assert_eq!(
        client.result("textDocument/prepareRename", at(URI, sqrt)),
        Value::Null
    );
    // Nor the constant `Inf`, which hover names for what it is.
    let infinite = "x := Inf;\nWriteLn(x = Inf);\n";
    client.change(URI, 3, infinite);
    let inf = position(infinite, "Inf", 0, 1);
    assert_eq!(
        client.result("textDocument/prepareRename", at(URI, inf.clone())),
        Value::Null
    );
    let mut params = at(URI, inf.clone());
    params["newName"] = json!("Q");
    let refused = client.request("textDocument/rename", params);
    assert!(refused["error"]["message"].is_string(), "{refused}");
    let hover = client.result("textDocument/hover", at(URI, inf));
    let said = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(said.contains("positive infinity"), "{hover}");
    assert!(client.finish().success());
}

/// A statement that does not parse is not in the tree: renaming a name
/// that stands in one would leave it there, unrenamed, so the rename is
/// refused with the line to fix; a name that does not is renamed.
#[test]
fn rename_is_refused_while_the_name_stands_in_a_statement_that_does_not_parse() {
    let mut client = Client::start();
    client.initialize(json!({}));
    let text = "x := 1;\nz := 2;\ny := x + ;\nWriteLn(x, z);\n";
    assert!(!client.open(URI, text).is_empty());
    let mut params = at(URI, position(text, "x", 0, 0));
    params["newName"] = json!("q");
    let refused = client.request("textDocument/rename", params);
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("line 3") && message.contains("does not parse"),
        "{refused}"
    );
    let mut params = at(URI, position(text, "z", 0, 0));
    params["newName"] = json!("q");
    let edit = client.result("textDocument/rename", params);
    assert_eq!(edit["changes"][URI].as_array().unwrap().len(), 2, "{edit}");
    assert!(client.finish().success());
}

#[test]
fn a_begin_without_end_is_underlined_at_the_last_text_not_after_it() {
    let mut client = Client::start();
    client.initialize(json!({}));
    let text = "procedure A;\nbegin\n  WriteLn(1);\n\nprocedure B;\nbegin\n  WriteLn(2);\nend;\n\nA;\nB;\n";
    let diagnostics = client.open(URI, text);
    assert!(!diagnostics.is_empty());
    for d in &diagnostics {
        let (l0, c0, l1, c1) = range(&d["range"]);
        assert!((l0, c0) < (l1, c1), "an empty range: {d}");
        assert!(l1 <= 10, "after the text: {d}");
    }
    assert!(client.finish().success());
}

// ---- a second, independent client: pygls ----

/// A Python that imports pygls: `TAPEC_PYTHON` when it is set (`.ci/run`
/// sets it to `bench/.venv`, where it installs pygls), else `bench/.venv`,
/// else `python3`; or why there is none.
fn python_with_pygls() -> Result<std::path::PathBuf, String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates: Vec<std::path::PathBuf> = match std::env::var_os("TAPEC_PYTHON") {
        Some(python) => vec![python.into()],
        None => vec![root.join("bench/.venv/bin/python"), "python3".into()],
    };
    candidates
        .iter()
        .find(|python| {
            Command::new(python)
                .args(["-c", "import pygls.lsp.client, lsprotocol.types"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .cloned()
        .ok_or_else(|| format!("no Python among {candidates:?} imports pygls"))
}

#[test]
fn an_independent_client_sees_the_diagnostic_and_the_hover() {
    let python = match python_with_pygls() {
        Ok(python) => python,
        Err(why) => {
            clients::not_run(
                "the pygls client of tapec lsp",
                &why,
                "run .ci/run, or pip install pygls into bench/.venv",
            );
            return;
        }
    };
    let doc_line = tapec::declarations::find("WriteLn").unwrap().doc;
    let mut child = Command::new(&python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lsp_client.py"))
        .arg(env!("CARGO_BIN_EXE_tapec"))
        .arg(doc_line)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the pygls client");
    let deadline = Instant::now() + 2 * WATCHDOG;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("hang: the pygls client did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().expect("its output");
    assert!(
        status.success(),
        "the pygls client failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

// ---- the handler in this process, under random edits ----

mod in_process {
    use super::*;
    use lsp_server::{Message, Notification, Request, RequestId};
    use tapec::lsp::server::Server;

    fn request(id: i32, method: &str, params: Value) -> Message {
        Message::Request(Request {
            id: RequestId::from(id),
            method: method.to_string(),
            params,
        })
    }

    fn notification(method: &str, params: Value) -> Message {
        Message::Notification(Notification {
            method: method.to_string(),
            params,
        })
    }

    fn course_programs() -> Vec<String> {
        let mut paths: Vec<_> = std::fs::read_dir("programs")
            .expect("programs/")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "tape"))
            .collect();
        paths.sort();
        paths
            .iter()
            .map(|p| std::fs::read_to_string(p).expect("readable"))
            .collect()
    }

    /// What an edit puts in: pieces of the language, brackets, and
    /// characters of every width.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("begin".to_string()),
            Just("end;".to_string()),
            Just("tape ".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just("[".to_string()),
            Just(",".to_string()),
            Just(";".to_string()),
            Just("'".to_string()),
            Just("{".to_string()),
            Just(":=".to_string()),
            Just("\n".to_string()),
            Just("\r\n".to_string()),
            Just("function F(a): Real; begin Result := a end;".to_string()),
            Just("WriteLn(".to_string()),
            Just("é×🙂".to_string()),
            "[a-zA-Z0-9 ]{1,6}",
            any::<char>().prop_map(String::from),
        ]
    }

    #[derive(Debug, Clone)]
    enum Edit {
        Insert(usize, String),
        Delete(usize, usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<usize>(), piece()).prop_map(|(at, s)| Edit::Insert(at, s)),
            (any::<usize>(), 1usize..40).prop_map(|(at, n)| Edit::Delete(at, n)),
        ]
    }

    fn floor(text: &str, mut at: usize) -> usize {
        at = at.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    fn apply(text: &mut String, edit: &Edit) {
        match edit {
            Edit::Insert(at, s) => {
                let at = floor(text, at % (text.len() + 1));
                text.insert_str(at, s);
            }
            Edit::Delete(at, n) => {
                let start = floor(text, at % (text.len() + 1));
                let end = floor(text, start + n);
                text.replace_range(start..end, "");
            }
        }
    }

    /// The requests a client sends while its user types, at `position`.
    fn requests_at(uri: &str, line: u32, character: u32) -> Vec<(&'static str, Value)> {
        let at: Value = json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}});
        let mut references = at.clone();
        references["context"] = json!({"includeDeclaration": true});
        let mut rename = at.clone();
        rename["newName"] = json!("renamed");
        vec![
            ("textDocument/hover", at.clone()),
            ("textDocument/definition", at.clone()),
            ("textDocument/references", references),
            ("textDocument/completion", at.clone()),
            ("textDocument/signatureHelp", at.clone()),
            ("textDocument/prepareRename", at.clone()),
            ("textDocument/rename", rename),
            (
                "textDocument/documentSymbol",
                json!({"textDocument": {"uri": uri}}),
            ),
            ("textDocument/nonsense", at),
        ]
    }

    /// Feeds `edits` of course program `which`, and the requests after
    /// each, to one server; every request must be answered, and every
    /// change published.
    fn survives(which: usize, edits: Vec<(Edit, u32, u32)>) -> Result<(), String> {
        tapec::threads::run_on(1, tapec::RUN_STACK_BYTES, move || {
            let programs = course_programs();
            let mut text = programs[which % programs.len()].clone();
            let mut server = Server::new();
            let uri = "file:///work/edited.tape";
            let init = server.handle(request(0, "initialize", json!({"capabilities": {}})));
            if init.len() != 1 {
                return Err(format!("initialize: {init:?}"));
            }
            let open = server.handle(notification(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "tape", "version": 1, "text": text}}),
            ));
            if open.len() != 1 {
                return Err(format!("didOpen: {open:?}"));
            }
            for (k, (edit, line, character)) in edits.iter().enumerate() {
                apply(&mut text, edit);
                let published = server.handle(notification(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": k + 2}, "contentChanges": [{"text": text}]}),
                ));
                let is_publish = |m: &Message| matches!(m, Message::Notification(n) if n.method == "textDocument/publishDiagnostics");
                if published.len() != 1 || !is_publish(&published[0]) {
                    return Err(format!("didChange {k}: {published:?}"));
                }
                for (method, params) in requests_at(uri, *line, *character) {
                    let id = 1000 + k as i32;
                    let replies = server.handle(request(id, method, params));
                    let answered = matches!(
                        &replies[..],
                        [Message::Response(r)] if r.id == RequestId::from(id)
                    );
                    if !answered {
                        return Err(format!("{method} after edit {k}: {replies:?}"));
                    }
                }
            }
            Ok(())
        })
    }

    proptest! {
        // A few dozen cases in a plain `cargo test`; PROPTEST_CASES asks
        // for more.
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(32),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn random_edits_of_the_course_programs_are_all_answered(
            which in 0usize..16,
            edits in proptest::collection::vec((edit(), 0u32..120, 0u32..90), 1..8),
        ) {
            let result = within_watchdog("random edits", move || survives(which, edits));
            prop_assert!(result.is_ok(), "{}", result.unwrap_err());
        }
    }
}
