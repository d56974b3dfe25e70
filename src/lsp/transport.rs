//! The protocol's framing on a byte stream: `Content-Length` headers, a
//! blank line, a JSON body; read by hand so that nothing a client sends
//! ends the server.
//!
//! lsp-server's own reader returns an error for a malformed header or
//! body, and its stdio transport then stops reading for good; this one
//! turns each such message into [`Incoming::Malformed`], answered with an
//! error, and reads on. Its messages are lsp-server's [`Message`]s.
//! A header line without the length is skipped; a line that holds
//! `Content-Length:` after other bytes (garbage glued to the next message)
//! still gives the length, so the stream finds its footing again. Header
//! lines and bodies are bounded, so no input makes it hold unbounded memory.

use std::io::{self, BufRead, Read, Write};

use lsp_server::{ErrorCode, Message, RequestId};

/// The longest header line kept; the rest of a longer line is skipped.
const MAX_HEADER_LINE: u64 = 8 * 1024;

/// The largest body read; a larger one is skipped and answered with an
/// error. An editor's document is far smaller.
pub const MAX_BODY: usize = 256 * 1024 * 1024;

/// What the next message on the stream is.
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// Not a message: answer with this error (and the request's id, when
    /// the body held one), then read on.
    Malformed {
        id: Option<RequestId>,
        code: ErrorCode,
        reason: String,
    },
    /// The stream ended (or cannot be read any more).
    End,
}

fn malformed(code: ErrorCode, reason: impl Into<String>) -> Incoming {
    Incoming::Malformed {
        id: None,
        code,
        reason: reason.into(),
    }
}

/// The length a header line gives, if it names one: `Some(Err)` for a
/// length that is not a number.
fn content_length(line: &[u8]) -> Option<Result<usize, String>> {
    const NAME: &[u8] = b"content-length:";
    let lower = line.to_ascii_lowercase();
    let at = lower.windows(NAME.len()).rposition(|w| w == NAME)?;
    let value = String::from_utf8_lossy(&line[at + NAME.len()..]);
    let value = value.trim();
    Some(
        value
            .parse::<usize>()
            .map_err(|_| format!("`Content-Length: {value}` is not a length")),
    )
}

/// Reads the next message.
pub fn read(input: &mut impl BufRead) -> Incoming {
    let mut length: Option<Result<usize, String>> = None;
    let mut seen_header = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        match input
            .by_ref()
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return Incoming::End,
            Ok(_) => {}
        }
        let text = line
            .strip_suffix(b"\n")
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .unwrap_or(&line);
        if text.is_empty() {
            if !seen_header {
                // Blank lines between messages are no message.
                continue;
            }
            break;
        }
        seen_header = true;
        if let Some(found) = content_length(text) {
            length = Some(found);
        }
    }
    let length = match length {
        None => return malformed(ErrorCode::ParseError, "a message without `Content-Length`"),
        Some(Err(reason)) => return malformed(ErrorCode::ParseError, reason),
        Some(Ok(n)) => n,
    };
    if length > MAX_BODY {
        // Read past it, so the next message is read from its start.
        let skipped = io::copy(&mut input.by_ref().take(length as u64), &mut io::sink());
        if !matches!(skipped, Ok(n) if n == length as u64) {
            return Incoming::End;
        }
        return malformed(
            ErrorCode::InvalidRequest,
            format!("a message of {length} bytes is more than the {MAX_BODY} read"),
        );
    }
    let mut body = vec![0; length];
    if input.read_exact(&mut body).is_err() {
        return Incoming::End;
    }
    parse(&body)
}

/// A body as a message, or why it is not one.
pub fn parse(body: &[u8]) -> Incoming {
    let value: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return malformed(ErrorCode::ParseError, format!("the body is not JSON: {e}")),
    };
    let id = value
        .get("id")
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    // A request whose id is no integer or string (`1.5`, `2^40`, `null`)
    // would be read as a notification and never answered: JSON-RPC calls it
    // invalid, answered with the id `null`.
    if id.is_none() && value.get("method").is_some() && value.get("id").is_some() {
        return malformed(
            ErrorCode::InvalidRequest,
            format!(
                "the request's id {} is not a string or a whole number in 32 bits",
                value["id"]
            ),
        );
    }
    match serde_json::from_value::<Message>(value) {
        Ok(message) => Incoming::Message(message),
        Err(_) => Incoming::Malformed {
            id,
            code: ErrorCode::InvalidRequest,
            reason: "the body is JSON but not a request, response or notification".to_string(),
        },
    }
}

/// Writes one message with its header.
pub fn write(output: &mut impl Write, message: Message) -> io::Result<()> {
    message.write(output)
}

/// Writes the answer to a malformed message: an error response whose id
/// is the request's when it could be read, else `null`, as JSON-RPC says.
pub fn write_error(
    output: &mut impl Write,
    id: Option<RequestId>,
    code: ErrorCode,
    reason: &str,
) -> io::Result<()> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code as i32, "message": reason },
    });
    let text = body.to_string();
    write!(output, "Content-Length: {}\r\n\r\n{text}", text.len())?;
    output.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    fn all(input: &str) -> Vec<Incoming> {
        let mut reader = io::BufReader::new(input.as_bytes());
        let mut out = Vec::new();
        loop {
            match read(&mut reader) {
                Incoming::End => return out,
                other => out.push(other),
            }
        }
    }

    #[test]
    fn garbage_is_answered_and_the_next_message_read() {
        let ok = framed(r#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#);
        let input = [
            framed("{not json"),
            "Bogus header\r\n\r\n".to_string(),
            "Content-Length: many\r\n\r\n".to_string(),
            framed(r#"{"jsonrpc":"2.0","id":3}"#),
            framed("[1, 2]"),
            framed(r#"{"jsonrpc":"2.0","id":1.5,"method":"shutdown"}"#),
            framed(r#"{"jsonrpc":"2.0","id":4294967296,"method":"shutdown"}"#),
            // Garbage glued to the front of a header.
            format!("@@@{ok}"),
            "\r\n\n".to_string(),
            ok.clone(),
        ]
        .concat();
        let got = all(&input);
        let kinds: Vec<String> = got
            .iter()
            .map(|m| match m {
                Incoming::Message(Message::Request(r)) => format!("request {}", r.id),
                Incoming::Malformed { id, code, .. } => format!("{code:?} {id:?}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "ParseError None",
                "ParseError None",
                "ParseError None",
                "InvalidRequest Some(RequestId(I32(3)))",
                "InvalidRequest None",
                "InvalidRequest None",
                "InvalidRequest None",
                "request 7",
                "request 7",
            ]
        );
    }

    #[test]
    fn a_stream_cut_short_ends() {
        assert!(all("Content-Length: 100\r\n\r\n{}").is_empty());
        assert!(all("Content-Length: 5\r\n").is_empty());
        assert!(all("").is_empty());
    }

    #[test]
    fn an_error_answer_is_framed_json_rpc() {
        let mut out = Vec::new();
        write_error(&mut out, None, ErrorCode::ParseError, "bad").unwrap();
        let text = String::from_utf8(out).unwrap();
        let body = text.split("\r\n\r\n").nth(1).unwrap();
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["id"], serde_json::Value::Null);
        assert_eq!(v["error"]["code"], -32700);
        assert!(text.starts_with(&format!("Content-Length: {}\r\n", body.len())));
    }
}
