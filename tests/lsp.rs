//! `tapec lsp` as an editor meets it: the binary started as a child
//! process, spoken to over its pipes with `Content-Length` framing, as a
//! client would. Every wait for a message is under a watchdog, so a server
//! that hangs fails the test instead of stalling it.
//!
//! Diagnostics with their exact ranges (UTF-16 columns, and UTF-8 bytes
//! once negotiated), as the text changes; garbage, unknown methods and
//! 100,000-deep nesting answered without the server dying; the lifecycle's
//! exit statuses; and a property test that feeds random edits of the
//! course programs to the server's handler in this process.

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
fn range(v: &Value) -> (u64, u64, u64, u64) {
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
x := 1;\n\
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
        y["message"], "unknown variable `y`\nHelp: did you mean `x`?",
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
        .replace("', y);", "', x);")
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
        let at = json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}});
        vec![
            ("textDocument/hover", at.clone()),
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
        #![proptest_config(ProptestConfig {
            cases: 24,
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
