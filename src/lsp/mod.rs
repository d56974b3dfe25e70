//! `tapec lsp`: a language server over stdio, for editors. It publishes
//! what `tapec check` finds as the text changes, and answers hover,
//! definition, references, completion, signature help, document symbols
//! and rename from the interpreter's own tree and resolver.
//!
//! This module is the loop: read a message (`transport`), hand it to the
//! server (`server`), write what comes back. It never reads a second way
//! or keeps a second tree: every feature reads the document `analysis`
//! made, and every position goes through `positions`. No message and no
//! document ends it but `exit` and the end of the input: a malformed
//! message is answered with an error, and a handler that panics (a bug)
//! is answered `InternalError` while the server goes on.

pub mod analysis;
pub mod completion;
pub mod diagnostics;
pub mod hover;
pub mod navigation;
pub mod outline;
pub mod positions;
pub mod server;
pub mod signature;
pub mod transport;

use std::io::{BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};

use lsp_server::{ErrorCode, Message};

use self::server::Server;
use self::transport::Incoming;

/// Serves on stdin and stdout until `exit` or the end of the input, on a
/// thread with the interpreter's big stack; gives the exit status.
pub fn run_on_stdio() -> i32 {
    crate::threads::run_on(1, crate::RUN_STACK_BYTES, || {
        let mut input = std::io::stdin().lock();
        let mut output = std::io::stdout().lock();
        serve(&mut input, &mut output)
    })
}

/// Serves the messages of `input`, writing to `output`; gives the exit
/// status: 0 after `shutdown` and `exit`, 1 for `exit` (or the end of the
/// input) without `shutdown`, or when `output` cannot be written.
pub fn serve(input: &mut impl BufRead, output: &mut impl Write) -> i32 {
    let mut server = Server::new();
    loop {
        let written = match transport::read(input) {
            Incoming::End => return server.status_at_end(),
            Incoming::Malformed { id, code, reason } => {
                let _ = writeln!(std::io::stderr(), "tapec lsp: {reason}");
                transport::write_error(output, id, code, &reason)
            }
            Incoming::Message(message) => {
                let id = match &message {
                    Message::Request(r) => Some(r.id.clone()),
                    _ => None,
                };
                match catch_unwind(AssertUnwindSafe(|| server.handle(message))) {
                    Ok(replies) => replies
                        .into_iter()
                        .try_for_each(|m| transport::write(output, m)),
                    Err(_) => {
                        let reason = "tapec lsp failed on this message (a bug: please report it)";
                        match id {
                            Some(id) => transport::write_error(
                                output,
                                Some(id),
                                ErrorCode::InternalError,
                                reason,
                            ),
                            None => Ok(()),
                        }
                    }
                }
            }
        };
        if written.is_err() {
            return 1;
        }
        if let Some(code) = server.exit_code() {
            return code;
        }
    }
}
