//! `mcp Server "tool"` tools: calls of an MCP server's tools with the
//! official Rust SDK (`rmcp`), and the connections they share.
//!
//! Input: an [`ir::McpTool`] (the server, the remote name, the tool as
//! locked) and validated arguments. Output: the call's value —
//! `structuredContent` when the server sends it, else the text of its
//! text blocks — or a [`ToolError`] naming the server.
//!
//! - **Connections** start on first use, one per server per [`Clients`]
//!   (a toolbox's, so one per process for `ignite run` and `serve`), and
//!   are kept; one that closed is started again by the next call.
//! - **A `command` server** is a child over stdio in its own process group
//!   (killed when the connection goes, and by [`crate::shutdown`]), run in
//!   the declaring file's folder with an environment holding only
//!   [`PASSED_VARS`] and the declared `env` (never a provider key or any
//!   other variable of ignite's). Its stderr tail is kept and shown when
//!   connecting or a call fails.
//! - **A `url` server** is Streamable HTTP, with the declared headers.
//! - **Drift**: the live `tools/list` is compared with the lock before a
//!   call ([`Clients::check`], which a run also calls for every MCP tool
//!   it can reach before it starts); a missing or changed tool fails,
//!   naming what changed ([`ToolError::McpDrift`]).
//! - **Limits**: connecting and each call are bounded by the tool's
//!   `timeout`, else the server's (progress does not extend it); a call
//!   that outlasts it, or whose future is dropped (a run's deadline), is
//!   cancelled with `notifications/cancelled`. A value larger than the
//!   toolbox's size limit fails; so does a child that floods its stdout
//!   with lines that are not messages ([`Lines`]).
//! - **Stopping** ([`crate::shutdown::halt`], Ctrl-C): every call in flight
//!   sends `notifications/cancelled`, then each connection is closed and
//!   its child given a moment to exit before its group is killed.
//! - **Progress**: a server's `notifications/progress` for a call go to the
//!   run's trace ([`PROGRESS`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ProgressNotificationParam, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceExt as _, transport::async_rw::AsyncRwTransport};
use serde_json::{Map, Value};
use tokio::io::AsyncReadExt as _;
use tokio::process::Command;

use super::ToolError;
use super::group::{self, Group};
use super::http::Follow;
use crate::ir::{self, LockedTool, McpServer, McpTransport};

/// The variables of ignite's environment a server child gets (what the
/// official SDKs pass), besides its declared `env`.
pub(crate) const PASSED_VARS: [&str; 7] =
    ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG"];

/// How much of a child's stderr is kept for messages.
const STDERR_KEPT: usize = 2048;

/// How many bytes of lines that are not JSON-RPC messages a child may write
/// to its stdout in a row (a stray log line passes, a flood does not).
const JUNK_LIMIT: usize = 1024 * 1024;

/// The child sent a message over the line limit (see [`Lines`]).
const OVERSIZED: u8 = 1;
/// The child flooded its stdout with lines that are not messages.
const FLOODED: u8 = 2;

/// How long a stopping ignite waits for its calls in flight to tell their
/// servers they are cancelled, before it kills the servers.
const CANCEL_WAIT: Duration = Duration::from_secs(1);

/// What a call's progress notifications are told to, in words.
pub(crate) type ProgressSink = Arc<dyn Fn(String) + Send + Sync>;

tokio::task_local! {
    /// Where a call's progress notifications go: `effects` records them
    /// in the run's trace, on the node (or agent step) that calls.
    pub(crate) static PROGRESS: ProgressSink;
}

/// Set once ignite stops: every call in flight cancels itself.
static STOP: std::sync::LazyLock<tokio::sync::watch::Sender<bool>> =
    std::sync::LazyLock::new(|| tokio::sync::watch::Sender::new(false));

/// How many calls are in flight, and the condition [`stop_calls`] waits on.
static IN_FLIGHT: (Mutex<usize>, std::sync::Condvar) = (Mutex::new(0), std::sync::Condvar::new());

/// A call counted in [`IN_FLIGHT`] while it lives.
struct InFlight;

impl InFlight {
    /// Counts a call, unless ignite is stopping (`None`). The first call
    /// makes [`crate::shutdown::halt`] run [`stop_calls`].
    fn enter() -> Option<Self> {
        static HOOKED: std::sync::Once = std::sync::Once::new();
        HOOKED.call_once(|| crate::shutdown::before_kill(stop_calls));
        *crate::sync::lock(&IN_FLIGHT.0) += 1;
        let entered = Self;
        // Counted first, then looked: `stop_calls` sets the flag first,
        // then waits for the count, so no call slips between the two.
        (!*STOP.borrow()).then_some(entered)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut count = crate::sync::lock(&IN_FLIGHT.0);
        *count = count.saturating_sub(1);
        IN_FLIGHT.1.notify_all();
    }
}

/// Cancels every call in flight (each sends `notifications/cancelled` to
/// its server) and waits for them, at most [`CANCEL_WAIT`]: run by
/// [`crate::shutdown::halt`] before it kills the servers' process groups.
fn stop_calls() {
    STOP.send_replace(true);
    let count = crate::sync::lock(&IN_FLIGHT.0);
    let _ = IN_FLIGHT.1.wait_timeout_while(count, CANCEL_WAIT, |count| *count > 0);
    // Then each server's input is closed (how MCP ends a stdio server) and
    // its child given the rest of the wait to act on the cancellations
    // and exit, before `halt` kills what is left.
    let open: Vec<Arc<Closer>> =
        crate::sync::lock(&OPEN).drain(..).filter_map(|closer| closer.upgrade()).collect();
    for closer in &open {
        if let Some(token) = crate::sync::lock(&closer.token).take() {
            token.cancel();
        }
    }
    let until = std::time::Instant::now() + CANCEL_WAIT;
    for closer in open.iter().filter_map(|closer| closer.exited.as_ref()) {
        let exited = crate::sync::lock(&closer.0);
        let left = until.saturating_duration_since(std::time::Instant::now());
        let _ = closer.1.wait_timeout_while(exited, left, |exited| !*exited);
    }
}

/// The open connections, for [`stop_calls`] to close.
static OPEN: Mutex<Vec<std::sync::Weak<Closer>>> = Mutex::new(Vec::new());

/// How [`stop_calls`] closes a connection and sees its child exit.
struct Closer {
    /// Ends the connection's service, which closes its transport.
    token: Mutex<Option<rmcp::service::RunningServiceCancellationToken>>,
    /// Set when the child exited (a `command` server's).
    exited: Option<Arc<Exited>>,
}

/// Whether a child exited, and the condition to wait on it.
type Exited = (Mutex<bool>, std::sync::Condvar);

/// The senders of the calls' progress notifications, by progress token.
type ProgressSenders = Arc<
    Mutex<HashMap<ProgressToken, tokio::sync::mpsc::UnboundedSender<ProgressNotificationParam>>>,
>;

/// Resolves once ignite stops.
async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    // (The guard `wait_for` gives is not `Send`: it is not kept.)
    let _ = stop.wait_for(|stopping| *stopping).await.map(|_| ());
}

/// The failure of a call that ignite's stop cancelled.
fn stopping(server: &McpServer) -> ToolError {
    ToolError::Unreachable(format!(
        "MCP server `{}`: the call was cancelled, ignite is stopping",
        server.name
    ))
}

/// A sent request that the server is told of when it is abandoned.
struct Abandoned {
    peer: Peer<RoleClient>,
    /// The request, until it is answered.
    id: Option<RequestId>,
}

impl Abandoned {
    /// Tells the server now, and waits until the notification is sent.
    async fn cancel(&mut self, reason: &str) {
        if let Some(id) = self.id.take() {
            let _ = self.peer.notify_cancelled(cancelled(id, reason)).await;
        }
    }
}

impl Drop for Abandoned {
    /// A call dropped unanswered (its run ended: a deadline, an MCP
    /// client's cancellation) tells the server as soon as it can.
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let _ = peer.notify_cancelled(cancelled(id, "the run stopped")).await;
        });
    }
}

/// The params of `notifications/cancelled` for `id`.
fn cancelled(id: RequestId, reason: &str) -> CancelledNotificationParam {
    CancelledNotificationParam::new(Some(id), Some(reason.to_owned()))
}

/// The trace's words for one progress notification of a call.
fn progress_detail(mcp: &ir::McpTool, step: &ProgressNotificationParam) -> String {
    let mut detail = format!("`{}` of `{}`: {}", mcp.tool, mcp.server.name, step.progress);
    if let Some(total) = step.total {
        detail.push_str(&format!("/{total}"));
    }
    if let Some(message) = &step.message {
        detail.push_str(&format!(" {message}"));
    }
    detail
}

/// The client side of a connection: hands each progress notification to
/// the call that its token names.
#[derive(Default)]
struct Handler {
    calls: ProgressSenders,
}

/// A call's progress notifications, until it is dropped.
struct Progress {
    receiver: tokio::sync::mpsc::UnboundedReceiver<ProgressNotificationParam>,
    token: ProgressToken,
    calls: ProgressSenders,
}

impl Handler {
    /// The progress notifications of the call with `token`.
    fn watch(&self, token: ProgressToken) -> Progress {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        crate::sync::lock(&self.calls).insert(token.clone(), sender);
        Progress { receiver, token, calls: Arc::clone(&self.calls) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        crate::sync::lock(&self.calls).remove(&self.token);
    }
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let calls = crate::sync::lock(&self.calls);
        if let Some(call) = calls.get(&params.progress_token) {
            let _ = call.send(params);
        }
    }
}

/// The MCP connections of a toolbox, by server name.
#[derive(Default)]
pub(crate) struct Clients {
    servers: Mutex<HashMap<String, Slot>>,
}

/// A server's connection, when there is one; locked while it starts.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

/// One live connection.
struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// The tools it listed when it connected, as the lock would hold them.
    tools: BTreeMap<String, LockedTool>,
    /// The child's stderr tail (empty for HTTP).
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Why the child's output ended the connection, if it did: [`OVERSIZED`]
    /// or [`FLOODED`] (0: it did not).
    broken: Arc<AtomicU8>,
    /// The size limit the connection was made with.
    max_bytes: usize,
    /// Kills the child's process group when the connection goes.
    _group: Option<Group>,
    /// Listed in [`OPEN`] while the connection lives.
    _closer: Arc<Closer>,
}

impl Clients {
    /// Calls `mcp`'s tool with `args`, within `timeout`, its value at most
    /// `max_bytes` long. The server's progress notifications for the call
    /// go to the trace of the task's [`PROGRESS`], when it has one; they do
    /// not extend `timeout`.
    pub(crate) async fn call(
        &self,
        mcp: &ir::McpTool,
        args: Map<String, Value>,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<Value, ToolError> {
        let connection = self.connection(&mcp.server, max_bytes).await?;
        check_tool(&connection, mcp)?;
        let mut params = CallToolRequestParams::new(mcp.tool.clone());
        params.arguments = Some(args);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let Some(in_flight) = InFlight::enter() else { return Err(stopping(&mcp.server)) };
        let peer = connection.service.peer();
        let sent = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await;
        let handle = match sent {
            Ok(handle) => handle,
            Err(error) => return Err(self.call_failed(mcp, &connection, &error).await),
        };
        let mut progress = connection.service.service().watch(handle.progress_token.clone());
        let mut abandoned = Abandoned { peer: peer.clone(), id: Some(handle.id.clone()) };
        let sink = PROGRESS.try_with(Arc::clone).ok();
        let record = |step: &ProgressNotificationParam| {
            if let Some(sink) = &sink {
                sink(progress_detail(mcp, step));
            }
        };
        let mut stop = STOP.subscribe();
        let response = handle.await_response();
        let limit = tokio::time::sleep(timeout);
        tokio::pin!(response, limit);
        let result = loop {
            // In this order: a stop or the timeout first, and progress that
            // came in before the answer is recorded before it.
            tokio::select! {
                biased;
                () = stopped(&mut stop) => {
                    abandoned.cancel("ignite is stopping").await;
                    // The process exits once its servers had their chance:
                    // the run gets no answer that it could report first.
                    drop(in_flight);
                    return std::future::pending().await;
                }
                () = &mut limit => {
                    abandoned.cancel("timed out").await;
                    return Err(ToolError::Timeout(timeout));
                }
                Some(step) = progress.receiver.recv() => record(&step),
                answered = &mut response => {
                    abandoned.id = None;
                    break answered;
                }
            }
        };
        // rmcp hands each notification to a task of its own, and the answer
        // straight to the call: progress the server sent before its answer
        // may still be on its way. Those tasks run first once this one
        // yields; then what they passed on is recorded.
        tokio::task::yield_now().await;
        while let Ok(step) = progress.receiver.try_recv() {
            record(&step);
        }
        let result = match result {
            Ok(ServerResult::CallToolResult(result)) => result,
            Ok(_) => {
                let message =
                    format!("the call of `{}` got an answer that is not a tool's result", mcp.tool);
                return Err(failed(&mcp.server, &connection, &message));
            }
            Err(error) => return Err(self.call_failed(mcp, &connection, &error).await),
        };
        value_of(&mcp.server, &mcp.tool, result, max_bytes)
    }

    /// The failure of a call that got no result; a closed connection is
    /// dropped (the next call starts another).
    async fn call_failed(
        &self,
        mcp: &ir::McpTool,
        connection: &Arc<Connection>,
        error: &ServiceError,
    ) -> ToolError {
        if matches!(error, ServiceError::TransportClosed) {
            self.forget(&mcp.server.name, connection).await;
        }
        failed(&mcp.server, connection, &format!("the call of `{}` failed: {error}", mcp.tool))
    }

    /// Fails when the live tool list of `mcp`'s server lacks the tool or
    /// lists it differently from the lock (connecting first if needed).
    pub(crate) async fn check(&self, mcp: &ir::McpTool, max_bytes: usize) -> Result<(), ToolError> {
        let connection = self.connection(&mcp.server, max_bytes).await?;
        check_tool(&connection, mcp)
    }

    /// The live tools of `server`, as the lock would hold them (for `ignite
    /// mcp lock`).
    pub(crate) async fn list(
        &self,
        server: &Arc<McpServer>,
        max_bytes: usize,
    ) -> Result<BTreeMap<String, LockedTool>, ToolError> {
        Ok(self.connection(server, max_bytes).await?.tools.clone())
    }

    /// The connection to `server`, started when there is none.
    async fn connection(
        &self,
        server: &Arc<McpServer>,
        max_bytes: usize,
    ) -> Result<Arc<Connection>, ToolError> {
        let slot = {
            let mut servers = crate::sync::lock(&self.servers);
            Arc::clone(servers.entry(server.name.clone()).or_default())
        };
        let mut slot = slot.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(Arc::clone(connection));
        }
        let connection = Arc::new(connect(server, max_bytes).await?);
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }

    /// Drops `connection` of `name` (it closed): the next call starts another.
    async fn forget(&self, name: &str, connection: &Arc<Connection>) {
        let slot = crate::sync::lock(&self.servers).get(name).cloned();
        if let Some(slot) = slot {
            let mut slot = slot.lock().await;
            if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, connection)) {
                *slot = None;
            }
        }
    }
}

/// The drift check of one tool against a connection's list.
fn check_tool(connection: &Connection, mcp: &ir::McpTool) -> Result<(), ToolError> {
    let server = &mcp.server.name;
    let Some(live) = connection.tools.get(&mcp.tool) else {
        return Err(ToolError::McpDrift(format!(
            "MCP server `{server}` no longer lists tool `{}`, which `{}` has; nothing was called (run `ignite mcp lock FILE` once the program no longer needs it)",
            mcp.tool,
            ir::LOCK_FILE
        )));
    };
    let changes = mcp.locked.changes(live);
    if changes.is_empty() {
        return Ok(());
    }
    Err(ToolError::McpDrift(format!(
        "tool `{}` of MCP server `{server}` changed since `{}`: its {} changed; nothing was called (review the change, then run `ignite mcp lock FILE`)",
        mcp.tool,
        ir::LOCK_FILE,
        crate::suggest::list(&changes)
    )))
}

/// Connects to `server` and lists its tools, within its timeout.
async fn connect(server: &Arc<McpServer>, max_bytes: usize) -> Result<Connection, ToolError> {
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let broken = Arc::new(AtomicU8::new(0));
    let mut exited = None;
    let (service, group) = match &server.transport {
        McpTransport::Command { program, args } => {
            let limit = line_limit(max_bytes);
            let (child, group, child_exited) =
                spawn(server, program, args, &stderr, limit, &broken)?;
            exited = Some(child_exited);
            let started =
                tokio::time::timeout(server.timeout, Handler::default().serve(child)).await;
            (started, Some(group))
        }
        McpTransport::Url(url) => {
            let config = http_config(server, url)?;
            let transport = StreamableHttpClientTransport::with_client(http_client()?, config);
            (tokio::time::timeout(server.timeout, Handler::default().serve(transport)).await, None)
        }
    };
    let partial = |message: String| {
        if let Some(error) = broken_reason(server, &broken, max_bytes) {
            return error;
        }
        let connection_stderr = tail(&stderr);
        let detail = if connection_stderr.is_empty() {
            String::new()
        } else {
            format!("\nstderr of `{}`:\n{connection_stderr}", server.name)
        };
        ToolError::Unreachable(format!(
            "MCP server `{}` ({}): {message}{detail}",
            server.name, server.transport
        ))
    };
    let service = match service {
        Err(_) => {
            return Err(partial(format!(
                "no answer to `initialize` within {} s",
                server.timeout.as_secs_f64()
            )));
        }
        Ok(Err(error)) => {
            let mut message = format!("cannot connect: {}", causes(&error));
            if matches!(&server.transport, McpTransport::Url(url) if url.starts_with("https://")) {
                // (rmcp keeps the TLS reason of a failed handshake to itself.)
                message.push_str(" (over `https` the server's certificate must verify against the system's certificate authorities, or those `SSL_CERT_FILE` names, or on a system with none the Mozilla ones built into ignite)");
            }
            return Err(partial(message));
        }
        Ok(Ok(service)) => service,
    };
    let listed = tokio::time::timeout(server.timeout, service.peer().list_all_tools()).await;
    let listed = match listed {
        Err(_) => {
            return Err(partial(format!(
                "no answer to `tools/list` within {} s",
                server.timeout.as_secs_f64()
            )));
        }
        Ok(Err(error)) => return Err(partial(format!("`tools/list` failed: {error}"))),
        Ok(Ok(tools)) => tools,
    };
    let tools = listed
        .into_iter()
        .map(|tool| {
            let locked = LockedTool::new(
                tool.description.as_ref().map(ToString::to_string),
                Value::Object((*tool.input_schema).clone()),
                tool.output_schema.as_ref().map(|s| Value::Object((**s).clone())),
                tool.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok()),
            );
            (tool.name.to_string(), locked)
        })
        .collect();
    let closer = Arc::new(Closer { token: Mutex::new(Some(service.cancellation_token())), exited });
    let mut open = crate::sync::lock(&OPEN);
    open.retain(|closer| closer.strong_count() > 0);
    open.push(Arc::downgrade(&closer));
    drop(open);
    Ok(Connection { service, tools, stderr, broken, max_bytes, _group: group, _closer: closer })
}

/// JSON-RPC over a child's stdout and stdin.
type ChildTransport = AsyncRwTransport<RoleClient, Lines, tokio::process::ChildStdin>;

/// Starts `server`'s child: stdout and stdin for JSON-RPC, stderr kept.
fn spawn(
    server: &McpServer,
    program: &str,
    args: &[String],
    stderr: &Arc<Mutex<Vec<u8>>>,
    limit: usize,
    broken: &Arc<AtomicU8>,
) -> Result<(ChildTransport, Group, Arc<Exited>), ToolError> {
    let dir = std::path::absolute(&server.dir).unwrap_or_else(|_| server.dir.clone());
    let program_path =
        if program.contains('/') { dir.join(program).into_os_string() } else { program.into() };
    let mut command = Command::new(&program_path);
    command.env_clear();
    for var in PASSED_VARS {
        if let Some(value) = std::env::var_os(var) {
            command.env(var, value);
        }
    }
    for (var, value) in &server.env {
        let value =
            value.resolve(|v| std::env::var(v).ok()).map_err(|missing| ToolError::Config {
                message: format!(
                    "MCP server `{}` needs `{missing}` for its `env {var}`, and it is not set",
                    server.name
                ),
            })?;
        command.env(var, value);
    }
    command.args(args).current_dir(&dir);
    let (mut child, group) = group::spawn(&mut command).map_err(|e| {
        ToolError::Unreachable(format!(
            "MCP server `{}`: cannot start `{program}` in `{}`: {e}",
            server.name,
            dir.display()
        ))
    })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ToolError::Unreachable(format!(
            "MCP server `{}`: `{program}` started without pipes",
            server.name
        )));
    };
    if let Some(mut child_stderr) = child.stderr.take() {
        let kept = Arc::clone(stderr);
        tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = child_stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                let mut kept = crate::sync::lock(&kept);
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > 2 * STDERR_KEPT {
                    let cut = kept.len() - STDERR_KEPT;
                    kept.drain(..cut);
                }
            }
        });
    }
    // The child is reaped when the connection (and with it the pipes) goes;
    // its group is killed by `group` then.
    let exited = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let reaped = Arc::clone(&exited);
    tokio::spawn(async move {
        let _ = child.wait().await;
        *crate::sync::lock(&reaped.0) = true;
        reaped.1.notify_all();
    });
    let stdout =
        Lines { inner: stdout, line: 0, message: None, junk: 0, limit, broken: Arc::clone(broken) };
    // rmcp's own cap would drop a long line silently; this one ends the
    // connection first, so the call fails at once and says why.
    let transport =
        AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(limit.saturating_add(1));
    Ok((transport, group, exited))
}

/// The longest message line for values of at most `max_bytes`: a result
/// carries its value twice (a text block and `structuredContent`).
fn line_limit(max_bytes: usize) -> usize {
    max_bytes.saturating_mul(2).saturating_add(64 * 1024)
}

/// A child's stdout that fails once a line grows past `limit` bytes, or
/// once [`JUNK_LIMIT`] bytes in a row are lines that are not messages.
pub(crate) struct Lines {
    inner: tokio::process::ChildStdout,
    /// Bytes since the last newline.
    line: usize,
    /// Whether the line so far is a message (it starts with `{` or `[`);
    /// `None` before its first byte that is not a space.
    message: Option<bool>,
    /// Bytes of the lines in a row that are not messages.
    junk: usize,
    limit: usize,
    broken: Arc<AtomicU8>,
}

impl Lines {
    /// Takes in one byte: the reason to end the connection, if any.
    fn scan(&mut self, byte: u8) -> Option<u8> {
        if byte == b'\n' {
            self.line = 0;
            if self.message == Some(true) {
                self.junk = 0;
            }
            self.message = None;
            return None;
        }
        self.line += 1;
        if self.message.is_none() && !byte.is_ascii_whitespace() {
            self.message = Some(byte == b'{' || byte == b'[');
        }
        if self.message == Some(false) {
            self.junk += 1;
        }
        if self.line > self.limit {
            Some(OVERSIZED)
        } else if self.junk > JUNK_LIMIT {
            Some(FLOODED)
        } else {
            None
        }
    }
}

impl tokio::io::AsyncRead for Lines {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if polled.is_ready() {
            let lines = &mut *self;
            for &byte in &buf.filled()[before..] {
                if let Some(reason) = lines.scan(byte) {
                    lines.broken.store(reason, Ordering::SeqCst);
                    let message = "the server's output ended the connection";
                    return std::task::Poll::Ready(Err(std::io::Error::other(message)));
                }
            }
        }
        polled
    }
}

/// Why `broken` ended a connection, in words naming `server`.
fn broken_reason(server: &McpServer, broken: &AtomicU8, max_bytes: usize) -> Option<ToolError> {
    match broken.load(Ordering::SeqCst) {
        OVERSIZED => {
            let what = format!("a message of MCP server `{}`", server.name);
            Some(ToolError::Failed(super::too_big(&what, max_bytes)))
        }
        FLOODED => Some(ToolError::Unreachable(format!(
            "MCP server `{}` wrote more than {JUNK_LIMIT} bytes to its stdout that are not JSON-RPC messages; the connection was closed (a server must log to stderr)",
            server.name
        ))),
        _ => None,
    }
}

/// The HTTP client of one `url` connection: ignite's TLS (the roots of
/// providers and `http` tools, [`crate::http_client`]), and otherwise as
/// rmcp's own client: redirects only with the same request
/// ([`Follow::SameRequest`]), and no idle connection kept for the next
/// request (reusing one whose last body was not read to its end waits on
/// the server's delayed ACK, ~40 ms on Linux).
fn http_client() -> Result<reqwest::Client, ToolError> {
    crate::http_client::builder()
        .pool_max_idle_per_host(0)
        .redirect(super::http::redirect_policy(Follow::SameRequest))
        .build()
        .map_err(|e| ToolError::Failed(format!("cannot start the http client: {e}")))
}

/// The HTTP transport's settings: the URL and the declared headers.
fn http_config(
    server: &McpServer,
    url: &str,
) -> Result<StreamableHttpClientTransportConfig, ToolError> {
    let mut headers = HashMap::new();
    for (name, value) in &server.headers {
        let value =
            value.resolve(|v| std::env::var(v).ok()).map_err(|missing| ToolError::Config {
                message: format!(
                    "MCP server `{}` needs `{missing}` for its header `{name}`, and it is not set",
                    server.name
                ),
            })?;
        let bad = |what: &str| ToolError::Config {
            message: format!("MCP server `{}`: header `{name}` has an invalid {what}", server.name),
        };
        let header_name =
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
        let mut header_value =
            reqwest::header::HeaderValue::from_str(&value).map_err(|_| bad("value"))?;
        header_value.set_sensitive(true);
        headers.insert(header_name, header_value);
    }
    Ok(StreamableHttpClientTransportConfig::with_uri(url.to_owned()).custom_headers(headers))
}

/// The value of a call's result: `structuredContent`; else its content:
/// text alone is a string, a lone image an `image` value (`{media_type,
/// data}`), and text beside images a list of strings and images in their
/// order. An `isError` result is a failure with its text.
fn value_of(
    server: &McpServer,
    tool: &str,
    result: CallToolResult,
    max_bytes: usize,
) -> Result<Value, ToolError> {
    let text: Vec<&str> =
        result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.as_str()).collect();
    let text = text.join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::Failed(format!(
            "MCP tool `{tool}` of `{}` answered an error: {text}",
            server.name
        )));
    }
    let images = result.content.iter().filter(|c| c.as_image().is_some()).count();
    let value = match result.structured_content {
        Some(value) => value,
        None if images == 0 => Value::String(text),
        None => {
            let mut parts: Vec<Value> = result
                .content
                .iter()
                .filter_map(|c| match (c.as_text(), c.as_image()) {
                    (Some(t), _) => Some(Value::String(t.text.clone())),
                    (_, Some(image)) => Some(serde_json::json!({
                        "media_type": image.mime_type,
                        "data": image.data,
                    })),
                    _ => None,
                })
                .collect();
            if parts.len() == 1 { parts.remove(0) } else { Value::Array(parts) }
        }
    };
    let size = serde_json::to_vec(&value).map_or(0, |v| v.len());
    if size > max_bytes {
        let what = format!("the result of MCP tool `{tool}` of `{}`", server.name);
        return Err(ToolError::Failed(super::too_big(&what, max_bytes)));
    }
    Ok(value)
}

/// A failure of a call on `connection`, with the child's stderr tail.
fn failed(server: &McpServer, connection: &Connection, message: &str) -> ToolError {
    if let Some(error) = broken_reason(server, &connection.broken, connection.max_bytes) {
        return error;
    }
    let stderr = tail(&connection.stderr);
    if stderr.is_empty() {
        ToolError::Unreachable(format!("MCP server `{}`: {message}", server.name))
    } else {
        ToolError::Unreachable(format!(
            "MCP server `{}`: {message}\nstderr of `{}`:\n{stderr}",
            server.name, server.name
        ))
    }
}

/// `error` and each error under it (a TLS handshake's reason is deep
/// under rmcp's "error sending request"), joined by `: `.
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let words = inner.to_string();
        if !text.contains(&words) {
            text.push_str(": ");
            text.push_str(&words);
        }
        cause = inner.source();
    }
    text
}

/// The kept stderr, as text.
fn tail(kept: &Mutex<Vec<u8>>) -> String {
    let kept = crate::sync::lock(kept);
    let start = kept.len().saturating_sub(STDERR_KEPT);
    String::from_utf8_lossy(&kept[start..]).trim().to_owned()
}
