//! The server's state and what it does with each message: a function of
//! the open documents and one message to the messages it sends back, with
//! no input or output of its own (`lsp/mod.rs` reads and writes), so tests
//! can drive it directly.
//!
//! The lifecycle is the protocol's: before `initialize` every request is
//! answered `ServerNotInitialized` and every notification but `exit`
//! dropped; after `shutdown` every request is refused; `exit` ends the
//! server with status 0 after `shutdown`, 1 without. An unknown request is
//! answered `MethodNotFound`, an unknown notification ignored, and
//! parameters that do not fit the method `InvalidParams`.

use std::collections::HashMap;

use lsp_server::{ErrorCode, Message, Notification, Request, Response, ResponseError};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics,
};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, GotoDefinition, HoverRequest, PrepareRenameRequest,
    References, Rename, Request as _, Shutdown, SignatureHelpRequest,
};
use lsp_types::{
    CompletionOptions, CompletionResponse, DocumentSymbolResponse, GotoDefinitionResponse,
    HoverProviderCapability, InitializeParams, InitializeResult, OneOf, Position,
    PositionEncodingKind, PrepareRenameResponse, RenameOptions, ServerCapabilities, ServerInfo,
    SignatureHelpOptions, TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
    WorkDoneProgressOptions,
};

use super::analysis::Document;
use super::positions::Encoding;
use super::{completion, diagnostics, hover, navigation, outline, signature};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before `initialize`.
    Waiting,
    Running,
    /// After `shutdown`: only `exit` is expected.
    ShutDown,
}

/// What the client said it can show, from `initialize`.
#[derive(Debug, Clone, Copy)]
pub struct Client {
    pub encoding: Encoding,
    /// Hover text may be Markdown.
    pub markdown: bool,
    /// Completion items may be snippets.
    pub snippets: bool,
    /// It asks before renaming (`prepareRename`).
    pub prepares_rename: bool,
}

pub struct Server {
    phase: Phase,
    client: Client,
    documents: HashMap<Uri, Document>,
    exit: Option<i32>,
}

impl Default for Server {
    fn default() -> Server {
        Server::new()
    }
}

fn error(code: ErrorCode, message: impl Into<String>) -> ResponseError {
    ResponseError {
        code: code as i32,
        message: message.into(),
        data: None,
    }
}

/// A request's parameters, as its method has them.
fn params<R: lsp_types::request::Request>(
    value: serde_json::Value,
) -> Result<R::Params, ResponseError> {
    serde_json::from_value(value).map_err(|e| {
        error(
            ErrorCode::InvalidParams,
            format!("the parameters do not fit: {e}"),
        )
    })
}

/// A notification's parameters, as its method has them.
fn notification_params<N: lsp_types::notification::Notification>(
    value: serde_json::Value,
) -> Result<N::Params, ResponseError> {
    serde_json::from_value(value).map_err(|e| {
        error(
            ErrorCode::InvalidParams,
            format!("the parameters do not fit: {e}"),
        )
    })
}

impl Server {
    pub fn new() -> Server {
        Server {
            phase: Phase::Waiting,
            client: Client {
                encoding: Encoding::Utf16,
                markdown: false,
                snippets: false,
                prepares_rename: false,
            },
            documents: HashMap::new(),
            exit: None,
        }
    }

    /// The exit status, once `exit` has been received.
    pub fn exit_code(&self) -> Option<i32> {
        self.exit
    }

    /// The exit status if the input ends without `exit`: as `exit` would.
    pub fn status_at_end(&self) -> i32 {
        if self.phase == Phase::ShutDown { 0 } else { 1 }
    }

    pub fn document(&self, uri: &Uri) -> Option<&Document> {
        self.documents.get(uri)
    }

    /// What to send back for one message.
    pub fn handle(&mut self, message: Message) -> Vec<Message> {
        match message {
            Message::Request(request) => {
                let id = request.id.clone();
                let response_result = self.request(request);
                vec![Message::Response(Response {
                    id,
                    response_result,
                })]
            }
            Message::Notification(notification) => self.notification(notification),
            // The server sends no requests, so no response is awaited.
            Message::Response(_) => Vec::new(),
        }
    }

    fn request(&mut self, request: Request) -> Result<serde_json::Value, ResponseError> {
        match (self.phase, request.method.as_str()) {
            (Phase::Waiting, "initialize") => self.initialize(request.params),
            (Phase::Waiting, _) => Err(error(
                ErrorCode::ServerNotInitialized,
                "the server is not initialized: send `initialize` first",
            )),
            (Phase::ShutDown, _) => Err(error(
                ErrorCode::InvalidRequest,
                "the server is shut down: only `exit` is expected",
            )),
            (Phase::Running, "initialize") => Err(error(
                ErrorCode::InvalidRequest,
                "the server is initialized already",
            )),
            (Phase::Running, Shutdown::METHOD) => {
                self.phase = Phase::ShutDown;
                Ok(serde_json::Value::Null)
            }
            (Phase::Running, method) => self.feature(method, request.params),
        }
    }

    fn initialize(&mut self, value: serde_json::Value) -> Result<serde_json::Value, ResponseError> {
        let init: InitializeParams = params::<lsp_types::request::Initialize>(value)?;
        let caps = &init.capabilities;
        let utf8 = caps
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_ref())
            .is_some_and(|offered| offered.contains(&PositionEncodingKind::UTF8));
        let text = caps.text_document.as_ref();
        self.client = Client {
            encoding: if utf8 {
                Encoding::Utf8
            } else {
                Encoding::Utf16
            },
            markdown: text
                .and_then(|t| t.hover.as_ref())
                .and_then(|h| h.content_format.as_ref())
                .is_some_and(|f| f.contains(&lsp_types::MarkupKind::Markdown)),
            snippets: text
                .and_then(|t| t.completion.as_ref())
                .and_then(|c| c.completion_item.as_ref())
                .and_then(|i| i.snippet_support)
                .unwrap_or(false),
            prepares_rename: text
                .and_then(|t| t.rename.as_ref())
                .and_then(|r| r.prepare_support)
                .unwrap_or(false),
        };
        self.phase = Phase::Running;
        let capabilities = ServerCapabilities {
            position_encoding: Some(if utf8 {
                PositionEncodingKind::UTF8
            } else {
                PositionEncodingKind::UTF16
            }),
            text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            definition_provider: Some(OneOf::Left(true)),
            references_provider: Some(OneOf::Left(true)),
            completion_provider: Some(CompletionOptions::default()),
            signature_help_provider: Some(SignatureHelpOptions {
                trigger_characters: Some(vec!["(".to_string(), ",".to_string()]),
                retrigger_characters: None,
                work_done_progress_options: WorkDoneProgressOptions::default(),
            }),
            document_symbol_provider: Some(OneOf::Left(true)),
            rename_provider: Some(if self.client.prepares_rename {
                OneOf::Right(RenameOptions {
                    prepare_provider: Some(true),
                    work_done_progress_options: WorkDoneProgressOptions::default(),
                })
            } else {
                OneOf::Left(true)
            }),
            ..ServerCapabilities::default()
        };
        let result = InitializeResult {
            capabilities,
            server_info: Some(ServerInfo {
                name: "tapec".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
        };
        serde_json::to_value(result).map_err(|e| error(ErrorCode::InternalError, e.to_string()))
    }

    /// The open document at `uri` and the byte offset of `position` in it
    /// (clamped); `None` for a document that is not open.
    fn at(&self, uri: &Uri, position: Position) -> Option<(&Document, usize)> {
        let doc = self.documents.get(uri)?;
        Some((doc, doc.lines.offset(position, self.client.encoding)))
    }

    fn feature(
        &mut self,
        method: &str,
        value: serde_json::Value,
    ) -> Result<serde_json::Value, ResponseError> {
        let client = self.client;
        let encoding = client.encoding;
        let answer = match method {
            HoverRequest::METHOD => {
                let p = params::<HoverRequest>(value)?.text_document_position_params;
                serde_json::to_value(
                    self.at(&p.text_document.uri, p.position)
                        .and_then(|(doc, at)| hover::hover(doc, at, client.markdown, encoding)),
                )
            }
            GotoDefinition::METHOD => {
                let p = params::<GotoDefinition>(value)?.text_document_position_params;
                let uri = &p.text_document.uri;
                serde_json::to_value(self.at(uri, p.position).and_then(|(doc, at)| {
                    navigation::definition(doc, uri, at, encoding)
                        .map(GotoDefinitionResponse::Scalar)
                }))
            }
            References::METHOD => {
                let p = params::<References>(value)?;
                let with_declaration = p.context.include_declaration;
                let p = p.text_document_position;
                let uri = &p.text_document.uri;
                serde_json::to_value(self.at(uri, p.position).map(|(doc, at)| {
                    navigation::references(doc, uri, at, with_declaration, encoding)
                }))
            }
            Completion::METHOD => {
                let p = params::<Completion>(value)?.text_document_position;
                serde_json::to_value(self.at(&p.text_document.uri, p.position).map(|(doc, at)| {
                    CompletionResponse::Array(completion::completions(
                        doc,
                        at,
                        client.markdown,
                        client.snippets,
                    ))
                }))
            }
            SignatureHelpRequest::METHOD => {
                let p = params::<SignatureHelpRequest>(value)?.text_document_position_params;
                serde_json::to_value(
                    self.at(&p.text_document.uri, p.position)
                        .and_then(|(doc, at)| signature::signature_help(doc, at)),
                )
            }
            DocumentSymbolRequest::METHOD => {
                let p = params::<DocumentSymbolRequest>(value)?;
                serde_json::to_value(self.documents.get(&p.text_document.uri).map(|doc| {
                    DocumentSymbolResponse::Nested(outline::document_symbols(doc, encoding))
                }))
            }
            PrepareRenameRequest::METHOD => {
                let p = params::<PrepareRenameRequest>(value)?;
                serde_json::to_value(self.at(&p.text_document.uri, p.position).and_then(
                    |(doc, at)| {
                        navigation::prepare_rename(doc, at, encoding)
                            .map(PrepareRenameResponse::Range)
                    },
                ))
            }
            Rename::METHOD => {
                let p = params::<Rename>(value)?;
                let new_name = p.new_name;
                let p = p.text_document_position;
                let uri = &p.text_document.uri;
                match self.at(uri, p.position) {
                    None => serde_json::to_value(None::<()>),
                    Some((doc, at)) => {
                        match navigation::rename(doc, uri, at, &new_name, encoding) {
                            Ok(edit) => serde_json::to_value(Some(edit)),
                            Err(why) => return Err(error(ErrorCode::RequestFailed, why)),
                        }
                    }
                }
            }
            _ => {
                return Err(error(
                    ErrorCode::MethodNotFound,
                    format!("tapec lsp does not answer `{method}`"),
                ));
            }
        };
        answer.map_err(|e| error(ErrorCode::InternalError, e.to_string()))
    }

    fn notification(&mut self, notification: Notification) -> Vec<Message> {
        if notification.method == "exit" {
            self.exit = Some(self.status_at_end());
            return Vec::new();
        }
        if self.phase == Phase::Waiting {
            return Vec::new();
        }
        let method = notification.method.clone();
        let value = notification.params;
        let result = match method.as_str() {
            DidOpenTextDocument::METHOD => {
                notification_params::<DidOpenTextDocument>(value).map(|p| self.opened(p))
            }
            DidChangeTextDocument::METHOD => {
                notification_params::<DidChangeTextDocument>(value).map(|p| self.changed(p))
            }
            DidCloseTextDocument::METHOD => {
                notification_params::<DidCloseTextDocument>(value).map(|p| self.closed(p))
            }
            // `initialized`, `$/cancelRequest`, `$/setTrace` and whatever
            // else: nothing to do.
            _ => Ok(Vec::new()),
        };
        result.unwrap_or_else(|e| vec![log(format!("tapec lsp ignored `{method}`: {}", e.message))])
    }

    fn opened(&mut self, p: lsp_types::DidOpenTextDocumentParams) -> Vec<Message> {
        let uri = p.text_document.uri;
        let doc = Document::new(p.text_document.text, p.text_document.version);
        let published = self.publish(&uri, &doc);
        self.documents.insert(uri, doc);
        published
    }

    fn changed(&mut self, p: lsp_types::DidChangeTextDocumentParams) -> Vec<Message> {
        let uri = p.text_document.uri;
        let Some(doc) = self.documents.remove(&uri) else {
            return vec![log(format!(
                "tapec lsp ignored a change to `{}`, which is not open",
                uri.as_str()
            ))];
        };
        let encoding = self.client.encoding;
        let mut lines = doc.lines;
        for change in p.content_changes {
            // The server asks for whole texts; a client that sends ranges
            // anyway is followed too.
            let text = match change.range {
                None => change.text,
                Some(range) => {
                    let (start, end) = lines.span_of(range, encoding);
                    let mut text = lines.into_text();
                    text.replace_range(start..end, &change.text);
                    text
                }
            };
            lines = super::positions::LineIndex::new(text);
        }
        let doc = Document::new(lines.into_text(), p.text_document.version);
        let published = self.publish(&uri, &doc);
        self.documents.insert(uri, doc);
        published
    }

    fn closed(&mut self, p: lsp_types::DidCloseTextDocumentParams) -> Vec<Message> {
        let uri = p.text_document.uri;
        self.documents.remove(&uri);
        vec![notify::<PublishDiagnostics>(diagnostics::cleared(&uri))]
    }

    fn publish(&self, uri: &Uri, doc: &Document) -> Vec<Message> {
        vec![notify::<PublishDiagnostics>(diagnostics::publish(
            doc,
            uri,
            self.client.encoding,
        ))]
    }
}

fn notify<N: lsp_types::notification::Notification>(params: N::Params) -> Message {
    Message::Notification(Notification::new(N::METHOD.to_string(), params))
}

/// A line for the client's log.
fn log(message: String) -> Message {
    notify::<lsp_types::notification::LogMessage>(lsp_types::LogMessageParams {
        typ: lsp_types::MessageType::WARNING,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(method: &str, params: serde_json::Value) -> Message {
        Message::Request(Request {
            id: lsp_server::RequestId::from(1),
            method: method.to_string(),
            params,
        })
    }

    fn notification(method: &str, params: serde_json::Value) -> Message {
        Message::Notification(Notification {
            method: method.to_string(),
            params,
        })
    }

    #[test]
    fn a_change_with_a_range_edits_the_text_where_it_says() {
        let mut server = Server::new();
        server.handle(request("initialize", json!({"capabilities": {}})));
        let uri = "file:///a.tape";
        server.handle(notification(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "tape", "version": 1,
                "text": "x := 'é';\ny := 1;\n"}}),
        ));
        // Columns 5 to 8 hold `'é'` in UTF-16 units (5 to 9 in bytes); a
        // range past the last line is the end of the text.
        let replies = server.handle(notification(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
                {"range": {"start": {"line": 0, "character": 5}, "end": {"line": 0, "character": 8}},
                 "text": "2"},
                {"range": {"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 0}},
                 "text": "WriteLn(x + y);"},
            ]}),
        ));
        assert_eq!(replies.len(), 1);
        let uri: Uri = uri.parse().unwrap();
        let doc = server.document(&uri).unwrap();
        assert_eq!(doc.text(), "x := 2;\ny := 1;\nWriteLn(x + y);");
        assert!(doc.diagnostics.is_empty(), "{:?}", doc.diagnostics);
        assert_eq!(doc.version, 2);
    }
}
