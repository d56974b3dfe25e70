//! `tapec jupyter kernel CONNECTION_FILE`: the kernel's sockets and its
//! messages. The five sockets are bound to the connection file's address
//! and ports only; every message read is checked against the file's key
//! (HMAC-SHA256, by jupyter-zmq-client's reading of the frames) and one
//! whose signature is wrong or missing is dropped with a line on stderr,
//! never handled. The cells run on a thread of their own with the big
//! stack (`cells.rs`), so a long cell never stops the heartbeat or the
//! control socket, which is how an interrupt reaches it.
//!
//! The async runtime lives only here: it is started by this command and by
//! nothing else in tapec.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use jupyter_protocol::connection_info::ConnectionInfo;
use jupyter_protocol::media::{Media, MediaType};
use jupyter_protocol::messaging::{
    CodeMirrorMode, CompleteReply, DisplayData, ErrorOutput, ExecuteInput, ExecuteReply,
    ExecuteResult, ExecutionCount, ExpressionResult, HistoryEntry, HistoryReply, InspectReply,
    InterruptReply, IsCompleteReply, JupyterMessage, JupyterMessageContent, KernelInfoReply,
    LanguageInfo, ReplyError, ReplyStatus, ShutdownReply, Status, Stdio, StreamContent,
    UnknownMessage,
};
use jupyter_zmq_client::{
    Connection, RawMessage, SubscriptionEvent, create_kernel_control_connection,
    create_kernel_heartbeat_connection, create_kernel_iopub_xpub_connection,
    create_kernel_shell_connection, create_kernel_stdin_connection,
};
use tokio::sync::{mpsc, oneshot};
use zeromq::{SocketRecv, SocketSend};

use super::cells::{Cells, Outcome, Output};
use crate::repl::Completeness;

/// What the shell asks of the thread that runs the cells.
enum Job {
    Execute {
        code: String,
        /// The cell's name in diagnostics: `cell [3]`.
        name: String,
        /// The request's `user_expressions`, evaluated after a cell that
        /// succeeds.
        expressions: Vec<(String, String)>,
        events: mpsc::UnboundedSender<Event>,
    },
    IsComplete {
        code: String,
        reply: oneshot::Sender<Completeness>,
    },
    Complete {
        code: String,
        cursor: usize,
        reply: oneshot::Sender<(Vec<String>, usize, usize)>,
    },
    Inspect {
        code: String,
        cursor: usize,
        reply: oneshot::Sender<Option<String>>,
    },
}

/// What a running cell sends back: its outputs as they come, then its end
/// with the values of its `user_expressions`.
enum Event {
    Output(Output),
    End(Outcome, Vec<(String, Evaluated)>),
}

/// A `user_expressions` entry's value as the prompt echoes it, or why not.
type Evaluated = Result<String, super::cells::Failure>;

/// Whether a cell is running, and the flag that stops it: an interrupt
/// (SIGINT or `interrupt_request`) between cells must not stop the next.
struct Interrupts {
    running: AtomicBool,
    flag: Arc<AtomicBool>,
}

impl Interrupts {
    fn interrupt(&self) {
        if self.running.load(Ordering::SeqCst) {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}

/// Runs the kernel until a `shutdown_request`; the exit status.
pub fn run(connection_file: &Path) -> i32 {
    let info = match read_connection_file(connection_file) {
        Ok(info) => info,
        // A connection file that cannot be used is the user's mistake.
        Err(message) => {
            eprintln!("tapec jupyter kernel: {message}");
            return 1;
        }
    };
    watch_parent();
    let (jobs, flag) = start_cells();
    let interrupts = Arc::new(Interrupts {
        running: AtomicBool::new(false),
        flag,
    });
    let on_signal = interrupts.clone();
    if let Err(e) = ctrlc::set_handler(move || on_signal.interrupt()) {
        eprintln!("tapec jupyter kernel: SIGINT will not interrupt a cell: {e}");
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("tapec jupyter kernel: cannot start the async runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(serve(info, jobs, interrupts)) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("tapec jupyter kernel: {message}");
            1
        }
    }
}

/// Ends the kernel when the process that started it is gone (it was
/// killed, so it could not ask for a shutdown): the kernel would otherwise
/// hold its ports and its memory with no one to talk to. As IPython's
/// kernel does, the parent is looked at once a second; a new parent means
/// the old one died.
fn watch_parent() {
    #[cfg(unix)]
    {
        let parent = std::os::unix::process::parent_id();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
                if std::os::unix::process::parent_id() != parent {
                    eprintln!("tapec jupyter kernel: the process that started it is gone; ending");
                    std::process::exit(0);
                }
            }
        });
    }
}

/// The connection file, refused unless its messages are signed with
/// HMAC-SHA256 under a key.
pub fn read_connection_file(path: &Path) -> Result<ConnectionInfo, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the connection file `{}`: {e}", path.display()))?;
    let info: ConnectionInfo = serde_json::from_str(&text)
        .map_err(|e| format!("`{}` is not a connection file: {e}", path.display()))?;
    if info.key.is_empty() {
        return Err(format!(
            "`{}` has no key: this kernel runs only messages signed with one",
            path.display()
        ));
    }
    if info.signature_scheme != "hmac-sha256" {
        return Err(format!(
            "`{}` asks for signatures by `{}`; this kernel checks hmac-sha256 only",
            path.display(),
            info.signature_scheme
        ));
    }
    Ok(info)
}

/// Starts the thread that runs cells, and returns where to send it jobs
/// and the flag that interrupts its cell.
fn start_cells() -> (std::sync::mpsc::Sender<Job>, Arc<AtomicBool>) {
    let (jobs, inbox) = std::sync::mpsc::channel::<Job>();
    let (flag_out, flag_in) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        crate::with_big_stack(move || {
            let current: std::rc::Rc<std::cell::RefCell<Option<mpsc::UnboundedSender<Event>>>> =
                Default::default();
            let to = current.clone();
            let mut cells = Cells::new(move |output| {
                if let Some(events) = to.borrow().as_ref() {
                    let _ = events.send(Event::Output(output));
                }
            });
            let _ = flag_out.send(cells.interrupt_flag());
            for job in inbox {
                match job {
                    Job::Execute {
                        code,
                        name,
                        expressions,
                        events,
                    } => {
                        *current.borrow_mut() = Some(events.clone());
                        let outcome = cells.execute_named(&code, &name);
                        let values = match outcome {
                            Outcome::Done { .. } => expressions
                                .into_iter()
                                .map(|(key, text)| (key, cells.evaluate(&text)))
                                .collect(),
                            _ => Vec::new(),
                        };
                        *current.borrow_mut() = None;
                        let _ = events.send(Event::End(outcome, values));
                    }
                    Job::IsComplete { code, reply } => {
                        let _ = reply.send(cells.is_complete(&code));
                    }
                    Job::Complete {
                        code,
                        cursor,
                        reply,
                    } => {
                        let _ = reply.send(cells.complete(&code, cursor));
                    }
                    Job::Inspect {
                        code,
                        cursor,
                        reply,
                    } => {
                        let _ = reply.send(cells.inspect(&code, cursor));
                    }
                }
            }
        })
    });
    let flag = flag_in
        .recv()
        .expect("the cells' thread sends its flag first");
    (jobs, flag)
}

/// Reads one message from a socket, checking its signature; a message
/// that fails the check or cannot be read is dropped with a line on
/// stderr, and `None` is returned for it.
async fn read<S: zeromq::SocketRecv>(
    connection: &mut Connection<S>,
    channel: &str,
) -> Result<Option<JupyterMessage>, String> {
    let frames = connection
        .socket
        .recv()
        .await
        .map_err(|e| format!("the {channel} socket failed: {e}"))?;
    match message_of(frames, &connection.mac) {
        Ok(message) => Ok(Some(message)),
        Err(why) => {
            eprintln!("tapec jupyter kernel: dropped a message on {channel}: {why}");
            Ok(None)
        }
    }
}

/// A message from its frames, once its signature is checked. A content
/// that the protocol crate's types do not take is kept as it came, so a
/// newer client's fields never make a request go unanswered.
pub fn message_of(
    frames: zeromq::ZmqMessage,
    key: &Option<ring::hmac::Key>,
) -> Result<JupyterMessage, String> {
    let raw = RawMessage::from_multipart(frames, key).map_err(|e| match e {
        jupyter_zmq_client::RuntimeError::VerifyError(_) => {
            "its signature does not match the connection file's key".to_string()
        }
        jupyter_zmq_client::RuntimeError::MissingHmac => "it has no signature".to_string(),
        other => format!("it is not a message of the protocol: {other}"),
    })?;
    let json = |k: usize| -> Result<serde_json::Value, String> {
        serde_json::from_slice(&raw.jparts[k]).map_err(|e| format!("a frame is not JSON: {e}"))
    };
    let header: jupyter_protocol::messaging::Header =
        serde_json::from_value(json(0)?).map_err(|e| format!("its header is not one: {e}"))?;
    let content = json(3)?;
    let content = JupyterMessageContent::from_type_and_content(&header.msg_type, content.clone())
        .or_else(|_| {
            JupyterMessageContent::from_type_and_content(
                &header.msg_type,
                with_defaults(&header.msg_type, content.clone()),
            )
        })
        .unwrap_or(JupyterMessageContent::UnknownMessage(UnknownMessage {
            msg_type: header.msg_type.clone(),
            content,
        }));
    Ok(JupyterMessage {
        zmq_identities: raw.zmq_identities,
        parent_header: serde_json::from_value(json(1)?).ok(),
        metadata: json(2)?,
        header,
        content,
        buffers: raw.jparts[4..].to_vec(),
        channel: None,
    })
}

/// A request's content with the protocol's defaults for the fields a
/// client left out (or sent as null): ipykernel takes such requests, and
/// so does this kernel. A cursor outside the code is put at its end.
fn with_defaults(msg_type: &str, mut content: serde_json::Value) -> serde_json::Value {
    use serde_json::{Value, json};
    let Some(fields) = content.as_object_mut() else {
        return content;
    };
    let mut default = |name: &str, value: Value| {
        if fields.get(name).is_none_or(Value::is_null) {
            fields.insert(name.to_string(), value);
        }
    };
    default("code", json!(""));
    match msg_type {
        "execute_request" => {
            default("silent", json!(false));
            default("store_history", json!(true));
            default("user_expressions", json!({}));
            default("allow_stdin", json!(false));
            default("stop_on_error", json!(true));
        }
        "inspect_request" => default("detail_level", json!(0)),
        _ => {}
    }
    if matches!(msg_type, "complete_request" | "inspect_request") {
        let length = fields
            .get("code")
            .and_then(Value::as_str)
            .map_or(0, |code| code.chars().count());
        let inside = fields
            .get("cursor_pos")
            .and_then(Value::as_u64)
            .is_some_and(|at| at as usize <= length);
        if !inside {
            fields.insert("cursor_pos".to_string(), json!(length));
        }
    }
    content
}

/// The kernel's messages name it as their sender.
fn from_kernel(mut message: JupyterMessage) -> JupyterMessage {
    message.header.username = "tapec".to_string();
    message
}

/// A message for iopub, in answer to `parent`: published to every
/// subscriber, so it carries no router identities.
fn published(content: impl Into<JupyterMessageContent>, parent: &JupyterMessage) -> JupyterMessage {
    from_kernel(JupyterMessage::new(content, Some(parent)).with_zmq_identities(Vec::new()))
}

fn reply(content: impl Into<JupyterMessageContent>, parent: &JupyterMessage) -> JupyterMessage {
    from_kernel(JupyterMessage::new(content, Some(parent)))
}

/// `kernel_info_reply`'s content.
pub fn kernel_info() -> KernelInfoReply {
    KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: "5.3".to_string(),
        implementation: "tapec".to_string(),
        implementation_version: env!("CARGO_PKG_VERSION").to_string(),
        language_info: LanguageInfo {
            name: "tape".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            mimetype: Some("text/x-tape".to_string()),
            file_extension: Some(".tape".to_string()),
            pygments_lexer: Some("delphi".to_string()),
            codemirror_mode: Some(CodeMirrorMode::Simple("pascal".to_string())),
            nbconvert_exporter: None,
        },
        banner: format!(
            "tapec {}: the tape language; :help for commands",
            env!("CARGO_PKG_VERSION")
        ),
        help_links: Vec::new(),
        debugger: false,
        error: None,
    }
}

/// Joins the text a cell printed close together into one message.
fn joined(
    first: String,
    stderr: bool,
    events: &mut mpsc::UnboundedReceiver<Event>,
) -> (String, Option<Event>) {
    let mut text = first;
    while text.len() < 1 << 16 {
        match events.try_recv() {
            Ok(Event::Output(Output::Stream {
                stderr: e,
                text: more,
            })) if e == stderr => text.push_str(&more),
            Ok(other) => return (text, Some(other)),
            Err(_) => break,
        }
    }
    (text, None)
}

fn stream(stderr: bool, text: String) -> StreamContent {
    StreamContent {
        name: if stderr { Stdio::Stderr } else { Stdio::Stdout },
        text,
    }
}

fn media(forms: Vec<(&'static str, String)>) -> Media {
    Media::new(
        forms
            .into_iter()
            .map(|(mime, data)| match mime {
                "image/svg+xml" => MediaType::Svg(data),
                "text/html" => MediaType::Html(data),
                _ => MediaType::Plain(data),
            })
            .collect(),
    )
}

/// Everything the shell keeps between requests.
struct Shell {
    jobs: std::sync::mpsc::Sender<Job>,
    iopub: mpsc::UnboundedSender<JupyterMessage>,
    interrupts: Arc<Interrupts>,
    count: usize,
    /// Each cell run with `store_history`: its count, its code, its
    /// result's text.
    history: Vec<(usize, String, String)>,
}

/// A `user_expressions` entry as the protocol writes it.
fn expression_result(value: Evaluated) -> ExpressionResult {
    match value {
        Ok(text) => ExpressionResult::Ok {
            data: Media::new(vec![MediaType::Plain(text)]),
            metadata: Default::default(),
        },
        Err(failure) => ExpressionResult::Error {
            ename: failure.ename,
            evalue: failure.evalue,
            traceback: failure.traceback,
        },
    }
}

impl Shell {
    fn publish(&self, message: JupyterMessage) {
        let _ = self.iopub.send(message);
    }

    async fn handle(&mut self, request: &JupyterMessage) -> Option<JupyterMessage> {
        match &request.content {
            JupyterMessageContent::KernelInfoRequest(_) => Some(reply(kernel_info(), request)),
            JupyterMessageContent::ExecuteRequest(execute) => {
                let code = execute.code.clone();
                let store = execute.store_history && !execute.silent;
                let mut expressions: Vec<(String, String)> = execute
                    .user_expressions
                    .iter()
                    .flatten()
                    .map(|(key, text)| (key.clone(), text.clone()))
                    .collect();
                expressions.sort();
                Some(
                    self.execute(request, code, expressions, execute.silent, store)
                        .await,
                )
            }
            JupyterMessageContent::IsCompleteRequest(is) => {
                let (tell, answer) = oneshot::channel();
                let _ = self.jobs.send(Job::IsComplete {
                    code: is.code.clone(),
                    reply: tell,
                });
                let content = match answer.await.unwrap_or(Completeness::Complete) {
                    Completeness::Complete => IsCompleteReply::complete(),
                    Completeness::Incomplete => IsCompleteReply::incomplete("  ".to_string()),
                    Completeness::Invalid => IsCompleteReply::invalid(),
                };
                Some(reply(content, request))
            }
            JupyterMessageContent::CompleteRequest(complete) => {
                let (tell, answer) = oneshot::channel();
                let _ = self.jobs.send(Job::Complete {
                    code: complete.code.clone(),
                    cursor: complete.cursor_pos,
                    reply: tell,
                });
                let (matches, start, end) = answer.await.unwrap_or_default();
                Some(reply(
                    CompleteReply {
                        matches,
                        cursor_start: start,
                        cursor_end: end,
                        metadata: Default::default(),
                        status: ReplyStatus::Ok,
                        error: None,
                    },
                    request,
                ))
            }
            JupyterMessageContent::InspectRequest(inspect) => {
                let (tell, answer) = oneshot::channel();
                let _ = self.jobs.send(Job::Inspect {
                    code: inspect.code.clone(),
                    cursor: inspect.cursor_pos,
                    reply: tell,
                });
                let text = answer.await.ok().flatten();
                Some(reply(
                    InspectReply {
                        found: text.is_some(),
                        data: match text {
                            Some(text) => Media::new(vec![MediaType::Plain(text)]),
                            None => Media::default(),
                        },
                        metadata: Default::default(),
                        status: ReplyStatus::Ok,
                        error: None,
                    },
                    request,
                ))
            }
            JupyterMessageContent::HistoryRequest(_) | JupyterMessageContent::UnknownMessage(_)
                if request.header.msg_type == "history_request" =>
            {
                let asked = serde_json::to_value(&request.content).unwrap_or_default();
                Some(reply(self.history_reply(&asked), request))
            }
            JupyterMessageContent::CommInfoRequest(_) => Some(reply(
                UnknownMessage {
                    msg_type: "comm_info_reply".to_string(),
                    content: serde_json::json!({"status": "ok", "comms": {}}),
                },
                request,
            )),
            // A request whose content is none of the protocol's, even with
            // its defaults, is answered with an error rather than left to
            // wait.
            _ if request.header.msg_type.ends_with("_request") => {
                let asked = &request.header.msg_type;
                Some(reply(
                    UnknownMessage {
                        msg_type: asked.replace("_request", "_reply"),
                        content: serde_json::json!({
                            "status": "error",
                            "ename": "BadRequest",
                            "evalue": format!("this kernel cannot read this `{asked}`'s content"),
                            "traceback": [],
                        }),
                    },
                    request,
                ))
            }
            _ => {
                eprintln!(
                    "tapec jupyter kernel: no answer for `{}` on shell",
                    request.header.msg_type
                );
                None
            }
        }
    }

    async fn execute(
        &mut self,
        request: &JupyterMessage,
        code: String,
        expressions: Vec<(String, String)>,
        silent: bool,
        store: bool,
    ) -> JupyterMessage {
        if store {
            self.count += 1;
        }
        let count = ExecutionCount::new(self.count.max(1));
        if !silent {
            self.publish(published(
                ExecuteInput {
                    code: code.clone(),
                    execution_count: count,
                },
                request,
            ));
        }
        let (events_in, mut events) = mpsc::unbounded_channel();
        self.interrupts.flag.store(false, Ordering::SeqCst);
        self.interrupts.running.store(true, Ordering::SeqCst);
        let _ = self.jobs.send(Job::Execute {
            code: code.clone(),
            name: format!("cell [{}]", count.0),
            expressions,
            events: events_in,
        });
        let mut next: Option<Event> = None;
        let mut shown = String::new();
        let (outcome, values) = loop {
            let event = match next.take() {
                Some(event) => event,
                None => match events.recv().await {
                    Some(event) => event,
                    None => break (Outcome::Interrupted("interrupted".to_string()), Vec::new()),
                },
            };
            match event {
                Event::Output(Output::Stream { stderr, text }) => {
                    let (text, after) = joined(text, stderr, &mut events);
                    next = after;
                    if !stderr {
                        shown.push_str(&text);
                    }
                    if !silent {
                        self.publish(published(stream(stderr, text), request));
                    }
                }
                Event::Output(Output::Display(forms)) => {
                    if !silent {
                        self.publish(published(
                            DisplayData {
                                data: media(forms),
                                metadata: Default::default(),
                                transient: None,
                            },
                            request,
                        ));
                    }
                }
                Event::End(outcome, values) => break (outcome, values),
            }
        };
        self.interrupts.running.store(false, Ordering::SeqCst);
        let error = match outcome {
            Outcome::Done { result } => {
                if let Some(text) = result {
                    shown.push_str(&text);
                    if !silent {
                        self.publish(published(
                            ExecuteResult {
                                execution_count: count,
                                data: Media::new(vec![MediaType::Plain(text)]),
                                metadata: Default::default(),
                                // The protocol's schema wants an object.
                                transient: Some(Default::default()),
                            },
                            request,
                        ));
                    }
                }
                None
            }
            Outcome::Failed(failure) => Some(ReplyError {
                ename: failure.ename,
                evalue: failure.evalue,
                traceback: failure.traceback,
            }),
            Outcome::Interrupted(what) => Some(ReplyError {
                ename: "interrupted".to_string(),
                evalue: what.clone(),
                traceback: vec![what],
            }),
        };
        if store {
            self.history.push((self.count, code, shown));
        }
        if let Some(error) = &error
            && !silent
        {
            self.publish(published(
                ErrorOutput {
                    ename: error.ename.clone(),
                    evalue: error.evalue.clone(),
                    traceback: error.traceback.clone(),
                },
                request,
            ));
        }
        reply(
            ExecuteReply {
                status: if error.is_some() {
                    ReplyStatus::Error
                } else {
                    ReplyStatus::Ok
                },
                execution_count: count,
                payload: Vec::new(),
                user_expressions: Some(
                    values
                        .into_iter()
                        .map(|(key, value)| (key, expression_result(value)))
                        .collect(),
                ),
                error: error.map(Box::new),
            },
            request,
        )
    }

    /// `history_request`: the cells run, by `tail`, `range` or `search`
    /// (a glob with `*` and `?`, as IPython's), in session 1.
    fn history_reply(&self, asked: &serde_json::Value) -> HistoryReply {
        let field = |name: &str| asked.get(name);
        let int = |name: &str| field(name).and_then(|v| v.as_i64());
        let output = field("output").and_then(|v| v.as_bool()).unwrap_or(false);
        let mut chosen: Vec<&(usize, String, String)> = match field("hist_access_type")
            .and_then(|v| v.as_str())
            .unwrap_or("tail")
        {
            "range" => {
                let start = int("start").unwrap_or(0);
                let stop = int("stop").unwrap_or(i64::MAX);
                self.history
                    .iter()
                    .filter(|(n, _, _)| start <= *n as i64 && (*n as i64) < stop)
                    .collect()
            }
            "search" => {
                let pattern = field("pattern").and_then(|v| v.as_str()).unwrap_or("*");
                let mut found: Vec<&(usize, String, String)> = self
                    .history
                    .iter()
                    .filter(|(_, code, _)| glob(pattern, code))
                    .collect();
                if field("unique").and_then(|v| v.as_bool()).unwrap_or(false) {
                    let mut seen = std::collections::HashSet::new();
                    found.reverse();
                    found.retain(|(_, code, _)| seen.insert(code.clone()));
                    found.reverse();
                }
                found
            }
            _ => self.history.iter().collect(),
        };
        let access = field("hist_access_type").and_then(|v| v.as_str());
        if access != Some("range")
            && let Some(n) = int("n").filter(|&n| n >= 0)
        {
            let n = n as usize;
            chosen = chosen.split_off(chosen.len().saturating_sub(n));
        }
        HistoryReply {
            history: chosen
                .into_iter()
                .map(|(n, code, shown)| {
                    if output {
                        HistoryEntry::InputOutput(1, *n, (code.clone(), shown.clone()))
                    } else {
                        HistoryEntry::Input(1, *n, code.clone())
                    }
                })
                .collect(),
            status: ReplyStatus::Ok,
            error: None,
        }
    }
}

/// Whether `text` matches a glob of `*` (any run) and `?` (any one).
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Positions in the pattern reachable after each character of the text.
    let mut at = vec![false; p.len() + 1];
    at[0] = true;
    let close = |at: &mut Vec<bool>| {
        for k in 0..p.len() {
            if at[k] && p[k] == '*' {
                at[k + 1] = true;
            }
        }
    };
    close(&mut at);
    for c in t {
        let mut next = vec![false; p.len() + 1];
        for k in 0..p.len() {
            if at[k] {
                match p[k] {
                    '*' => next[k] = true,
                    '?' => next[k + 1] = true,
                    q if q == c => next[k + 1] = true,
                    _ => {}
                }
            }
        }
        close(&mut next);
        at = next;
    }
    at[p.len()]
}

/// After a cell that failed and asked `stop_on_error`, the requests sent
/// behind it before its reply: read until the shell has been quiet for a
/// moment, before the failed cell's reply goes out, so that none of them
/// can be a request sent after the client saw the error.
async fn queued_behind(
    shell: &mut jupyter_zmq_client::KernelShellConnection,
) -> Result<Vec<JupyterMessage>, String> {
    let quiet = std::time::Duration::from_millis(20);
    let mut queued = Vec::new();
    while let Ok(got) = tokio::time::timeout(quiet, read(shell, "shell")).await {
        queued.extend(got?);
    }
    Ok(queued)
}

/// Answers a request queued behind a failed cell: an `execute_request` is
/// answered `aborted` and not run (as IPython's kernel does), any other
/// request as usual.
async fn answer_queued(state: &mut Shell, request: &JupyterMessage) -> Option<JupyterMessage> {
    match &request.content {
        JupyterMessageContent::ExecuteRequest(_) => Some(reply(
            ExecuteReply {
                status: ReplyStatus::Aborted,
                execution_count: ExecutionCount::new(state.count.max(1)),
                payload: Vec::new(),
                user_expressions: Some(Default::default()),
                error: None,
            },
            request,
        )),
        _ => state.handle(request).await,
    }
}

async fn serve(
    info: ConnectionInfo,
    jobs: std::sync::mpsc::Sender<Job>,
    interrupts: Arc<Interrupts>,
) -> Result<(), String> {
    let session = uuid::Uuid::new_v4().to_string();
    let bind = |what: &str, e: jupyter_zmq_client::RuntimeError| {
        format!("cannot bind the {what} socket at {}: {e}", info.ip)
    };
    let mut heartbeat = create_kernel_heartbeat_connection(&info)
        .await
        .map_err(|e| bind("heartbeat", e))?;
    let mut shell = create_kernel_shell_connection(&info, &session)
        .await
        .map_err(|e| bind("shell", e))?;
    let mut control = create_kernel_control_connection(&info, &session)
        .await
        .map_err(|e| bind("control", e))?;
    let _stdin = create_kernel_stdin_connection(&info, &session)
        .await
        .map_err(|e| bind("stdin", e))?;
    let mut iopub = create_kernel_iopub_xpub_connection(&info, &session)
        .await
        .map_err(|e| bind("iopub", e))?;

    // The heartbeat echoes what it is sent.
    tokio::spawn(async move {
        while let Ok(ping) = heartbeat.socket.recv().await {
            if heartbeat.socket.send(ping).await.is_err() {
                break;
            }
        }
    });

    // Iopub: publishes what the others give it, and greets each new
    // subscriber (`iopub_welcome`).
    let (to_iopub, mut outbox) = mpsc::unbounded_channel::<JupyterMessage>();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                message = outbox.recv() => match message {
                    Some(message) => {
                        if let Err(e) = iopub.send(message).await {
                            eprintln!("tapec jupyter kernel: cannot publish: {e}");
                        }
                    }
                    None => break,
                },
                event = iopub.recv_subscription() => {
                    if let Ok(SubscriptionEvent::Subscribe(topic)) = event {
                        let welcome = jupyter_protocol::IoPubWelcome::new(topic);
                        let _ = iopub.send(from_kernel(welcome.into())).await;
                    }
                }
            }
        }
    });

    // Control: interrupts and shutdown, answered while a cell runs.
    let control_iopub = to_iopub.clone();
    let control_interrupts = interrupts.clone();
    let control_task = tokio::spawn(async move {
        loop {
            let request = match read(&mut control, "control").await {
                Ok(Some(request)) => request,
                Ok(None) => continue,
                Err(message) => return Err(message),
            };
            match &request.content {
                JupyterMessageContent::InterruptRequest(_) => {
                    control_interrupts.interrupt();
                    let answer = InterruptReply {
                        status: ReplyStatus::Ok,
                        error: None,
                    };
                    let _ = control.send(reply(answer, &request)).await;
                }
                JupyterMessageContent::ShutdownRequest(shutdown) => {
                    control_interrupts.interrupt();
                    let answer = ShutdownReply {
                        restart: shutdown.restart,
                        status: ReplyStatus::Ok,
                        error: None,
                    };
                    let _ = control.send(reply(answer, &request)).await;
                    let _ = control_iopub.send(published(Status::idle(), &request));
                    // Give the sockets a moment to send the reply.
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    return Ok(());
                }
                JupyterMessageContent::KernelInfoRequest(_) => {
                    let _ = control.send(reply(kernel_info(), &request)).await;
                }
                _ => eprintln!(
                    "tapec jupyter kernel: no answer for `{}` on control",
                    request.header.msg_type
                ),
            }
        }
    });

    let mut state = Shell {
        jobs,
        iopub: to_iopub,
        interrupts,
        count: 0,
        history: Vec::new(),
    };
    let shell_task = async move {
        loop {
            let request = match read(&mut shell, "shell").await {
                Ok(Some(request)) => request,
                Ok(None) => continue,
                Err(message) => return Err::<(), String>(message),
            };
            state.publish(published(Status::busy(), &request));
            let stops = matches!(&request.content,
                JupyterMessageContent::ExecuteRequest(e) if e.stop_on_error);
            let answer = state.handle(&request).await;
            let failed = matches!(answer.as_ref().map(|a| &a.content),
                Some(JupyterMessageContent::ExecuteReply(r)) if matches!(r.status, ReplyStatus::Error));
            let queued = if stops && failed {
                queued_behind(&mut shell).await?
            } else {
                Vec::new()
            };
            if let Some(answer) = answer
                && let Err(e) = shell.send(answer).await
            {
                eprintln!("tapec jupyter kernel: cannot answer on shell: {e}");
            }
            state.publish(published(Status::idle(), &request));
            for request in queued {
                state.publish(published(Status::busy(), &request));
                if let Some(answer) = answer_queued(&mut state, &request).await
                    && let Err(e) = shell.send(answer).await
                {
                    eprintln!("tapec jupyter kernel: cannot answer on shell: {e}");
                }
                state.publish(published(Status::idle(), &request));
            }
        }
    };
    tokio::select! {
        done = control_task => done.unwrap_or_else(|e| Err(e.to_string())),
        done = shell_task => done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::hmac;

    /// An execute_request's frames as a client sends them, signed with
    /// `signing_key` (none: an empty signature).
    fn frames(signing_key: Option<&[u8]>) -> zeromq::ZmqMessage {
        let parts: Vec<Vec<u8>> = vec![
            serde_json::json!({
                "msg_id": "1", "username": "u", "session": "s",
                "date": "2026-01-01T00:00:00Z", "msg_type": "execute_request", "version": "5.3"
            })
            .to_string()
            .into_bytes(),
            b"{}".to_vec(),
            b"{}".to_vec(),
            serde_json::json!({"code": "x := 1;", "silent": false, "store_history": true,
                "user_expressions": {}, "allow_stdin": false, "stop_on_error": true})
            .to_string()
            .into_bytes(),
        ];
        let signature = match signing_key {
            Some(key) => {
                let key = hmac::Key::new(hmac::HMAC_SHA256, key);
                let mut context = hmac::Context::with_key(&key);
                for part in &parts {
                    context.update(part);
                }
                let tag = context.sign();
                tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
            }
            None => String::new(),
        };
        let mut all: Vec<bytes::Bytes> = vec![
            b"client".to_vec().into(),
            b"<IDS|MSG>".to_vec().into(),
            signature.into_bytes().into(),
        ];
        all.extend(parts.into_iter().map(bytes::Bytes::from));
        zeromq::ZmqMessage::try_from(all).expect("frames")
    }

    fn key() -> Option<hmac::Key> {
        Some(hmac::Key::new(hmac::HMAC_SHA256, b"the-key"))
    }

    #[test]
    fn a_message_signed_with_the_key_is_read() {
        let message = message_of(frames(Some(b"the-key")), &key()).expect("read");
        assert_eq!(message.header.msg_type, "execute_request");
        assert_eq!(
            message.zmq_identities,
            vec![bytes::Bytes::from_static(b"client")]
        );
        assert!(matches!(
            message.content,
            JupyterMessageContent::ExecuteRequest(ref e) if e.code == "x := 1;"
        ));
    }

    #[test]
    fn a_message_signed_with_another_key_or_none_is_refused() {
        let wrong = message_of(frames(Some(b"another-key")), &key()).unwrap_err();
        assert!(wrong.contains("signature does not match"), "{wrong}");
        let missing = message_of(frames(None), &key()).unwrap_err();
        assert!(!missing.is_empty());
    }

    #[test]
    fn a_request_without_its_optional_fields_is_read_with_the_protocols_defaults() {
        use serde_json::json;
        let typed = |kind: &str, content: serde_json::Value| {
            JupyterMessageContent::from_type_and_content(kind, with_defaults(kind, content))
                .expect("typed")
        };
        // The crate's types alone refuse these.
        assert!(
            JupyterMessageContent::from_type_and_content(
                "execute_request",
                json!({"code": "x := 1;"})
            )
            .is_err()
        );
        assert!(matches!(
            typed("execute_request", json!({"code": "x := 1;"})),
            JupyterMessageContent::ExecuteRequest(ref e)
                if e.code == "x := 1;" && !e.silent && e.store_history && e.stop_on_error
        ));
        for cursor in [json!(null), json!(-1), json!(99)] {
            assert!(matches!(
                typed("complete_request", json!({"code": "Ta", "cursor_pos": cursor})),
                JupyterMessageContent::CompleteRequest(ref c) if c.cursor_pos == 2
            ));
        }
        assert!(matches!(
            typed("inspect_request", json!({"code": "tapé"})),
            JupyterMessageContent::InspectRequest(ref i) if i.cursor_pos == 4
        ));
        assert!(matches!(
            typed("is_complete_request", json!({})),
            JupyterMessageContent::IsCompleteRequest(ref i) if i.code.is_empty()
        ));
    }

    #[test]
    fn globs_match_as_ipythons_history_search() {
        assert!(glob("1 + ?;", "1 + 2;"));
        assert!(!glob("1 + ?;", "1 + 22;"));
        assert!(glob("*Sum*", "s := Sum(x);"));
        assert!(!glob("Sum*", "s := Sum(x);"));
    }

    #[test]
    fn the_kernel_names_its_language() {
        let info = serde_json::to_value(kernel_info()).expect("json");
        let language = &info["language_info"];
        assert_eq!(language["name"], "tape");
        assert_eq!(language["file_extension"], ".tape");
        assert_eq!(language["mimetype"], "text/x-tape");
        assert_eq!(language["codemirror_mode"], "pascal");
        assert_eq!(language["pygments_lexer"], "delphi");
    }
}
