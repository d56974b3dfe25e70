//! Feeds arbitrary bytes to the language server as a document an editor
//! opened, asks every request it answers at positions spread over the text
//! (and past its end), then edits the middle away and asks again. Any
//! panic, any request left without its response, and any input that hangs
//! is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lsp_server::{Message, Notification, Request, RequestId};
use serde_json::{Value, json};
use tapec::lsp::server::Server;

const URI: &str = "file:///fuzz.tape";

/// Positions spread over the text, in UTF-16 units as the client counts
/// them: line starts, middles and ends, and one past the last line.
fn positions(text: &str) -> Vec<(usize, usize)> {
    let lines: Vec<usize> = text.split('\n').map(|l| l.encode_utf16().count()).collect();
    let every = (lines.len() / 8).max(1);
    let mut out = Vec::new();
    for (line, &width) in lines.iter().enumerate().step_by(every) {
        out.extend([
            (line, 0),
            (line, width / 2),
            (line, width),
            (line, width + 3),
        ]);
    }
    out.push((lines.len() + 1, 0));
    out
}

fn ask(server: &mut Server, next: &mut i32, method: &str, params: Value) {
    *next += 1;
    let id = RequestId::from(*next);
    let replies = server.handle(Message::Request(Request::new(
        id.clone(),
        method.into(),
        params,
    )));
    let answered = replies
        .iter()
        .any(|m| matches!(m, Message::Response(r) if r.id == id));
    assert!(answered, "{method} got no response: {replies:?}");
}

fn tell(server: &mut Server, method: &str, params: Value) {
    server.handle(Message::Notification(Notification::new(
        method.into(),
        params,
    )));
}

fn every_request(server: &mut Server, next: &mut i32, text: &str) {
    let doc = json!({ "uri": URI });
    for (line, character) in positions(text) {
        let at =
            json!({ "textDocument": doc, "position": { "line": line, "character": character } });
        for method in [
            "textDocument/hover",
            "textDocument/completion",
            "textDocument/signatureHelp",
            "textDocument/definition",
            "textDocument/prepareRename",
        ] {
            ask(server, next, method, at.clone());
        }
        let mut references = at.clone();
        references["context"] = json!({ "includeDeclaration": true });
        ask(server, next, "textDocument/references", references);
        let mut rename = at.clone();
        rename["newName"] = json!("renamed");
        ask(server, next, "textDocument/rename", rename);
    }
    ask(
        server,
        next,
        "textDocument/documentSymbol",
        json!({ "textDocument": doc }),
    );
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let mut server = Server::new();
    let mut next = 0;
    ask(
        &mut server,
        &mut next,
        "initialize",
        json!({ "capabilities": {
            "general": { "positionEncodings": ["utf-16"] },
            "textDocument": {
                "hover": { "contentFormat": ["markdown"] },
                "completion": { "completionItem": { "snippetSupport": true } },
                "rename": { "prepareSupport": true }
            }
        } }),
    );
    tell(&mut server, "initialized", json!({}));
    tell(
        &mut server,
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": URI, "languageId": "tape", "version": 1, "text": text } }),
    );
    every_request(&mut server, &mut next, &text);

    // Delete the middle third of the lines, as an editor's ranged change.
    let lines = text.split('\n').count();
    tell(
        &mut server,
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [
            { "range": { "start": { "line": lines / 3, "character": 1 },
                         "end": { "line": 2 * lines / 3, "character": 2 } },
              "text": "" }
        ] }),
    );
    let edited = server
        .document(&URI.parse().unwrap())
        .map(|d| d.text().to_string())
        .expect("the document stays open after a change");
    every_request(&mut server, &mut next, &edited);

    ask(&mut server, &mut next, "shutdown", Value::Null);
    tell(&mut server, "exit", Value::Null);
    assert_eq!(server.exit_code(), Some(0));
});
