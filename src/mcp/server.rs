//! The MCP server: a [`Catalog`] answered over the official Rust SDK.
//!
//! `rmcp` speaks the protocol (both eras: the `initialize` handshake of
//! `2025-06-18` and `2025-11-25`, and the per-request version of
//! `2026-07-28`), frames JSON-RPC and routes requests; [`Server`] answers
//! `tools/list` from the catalog and `tools/call` by running the tool or
//! the contract on the [`Engine`], exactly as `ignite run` would (guards,
//! capabilities, effect stores). A call the client cancels
//! (`notifications/cancelled`) is stopped as Ctrl-C stops a run: a tool's
//! child is killed, a contract starts no new node and its calls in flight
//! are cancelled. A call's failure is a tool result with
//! `isError: true`: its text names the code, the node path and every
//! problem, and `_meta["dev.ignite/error"]` holds the same as JSON (the
//! `error` object `ignite serve` answers; not `structuredContent`, which
//! clients check against the `outputSchema` of successes). A call that outlasts the server's
//! time limit, or that the client cancels, is stopped: no new node starts
//! and the calls in flight are cancelled (their children killed).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, MetaObject, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Map, Value, json};
use tokio::sync::OwnedSemaphorePermit;

use super::progress::Progress;
use super::{Catalog, Entry, Target};
use crate::diagnostic::Code;
use crate::failure::NodeError;
use crate::runtime::{Cancel, Engine, InputsFrom, RunError, RunOptions};
use crate::serve::{NoTurn, Service};
use crate::trace::Trace;

/// The `_meta` key of a failed call's error as JSON.
pub(crate) const ERROR_META: &str = "dev.ignite/error";

/// A program served over MCP (a clone per HTTP session shares it).
#[derive(Clone)]
pub(crate) struct Server {
    engine: Arc<Engine>,
    catalog: Arc<Catalog>,
    /// The longest one call may take (its wait for a turn included).
    timeout: Duration,
    /// `ignite serve --mcp`: the HTTP service whose turns calls take.
    turns: Option<Arc<Service>>,
}

impl Server {
    /// Serves `catalog`'s entries of `engine`, each call stopped after `timeout`.
    #[must_use]
    pub(crate) fn new(engine: Arc<Engine>, catalog: Catalog, timeout: Duration) -> Self {
        Self { engine, catalog: Arc::new(catalog), timeout, turns: None }
    }

    /// Makes each call take a turn of `service` (its `--max-runs`) first,
    /// as its HTTP runs do, and be refused once it shuts down.
    #[must_use]
    pub(crate) fn with_turns(mut self, service: Arc<Service>) -> Self {
        self.turns = Some(service);
        self
    }

    /// A turn for a call that must start by `deadline` (none to take
    /// outside `ignite serve`), or why there is none.
    async fn turn(
        &self,
        deadline: tokio::time::Instant,
    ) -> Result<Option<OwnedSemaphorePermit>, Failure> {
        let Some(service) = &self.turns else { return Ok(None) };
        match service.turn(deadline).await {
            Ok(turn) => Ok(Some(turn)),
            Err(NoTurn::ShuttingDown) => {
                let code = Code::ServeShuttingDown.as_str();
                let message = "the server is shutting down and takes no new runs";
                Err(Failure {
                    text: format!("error[{code}]: {message}\nhelp: call again once it is back"),
                    json: json!({"code": code, "message": message}),
                })
            }
            Err(NoTurn::TimedOut) => {
                let code = Code::RunDeadline.as_str();
                let most = service.limits().max_runs;
                let message = format!(
                    "no turn to run came within {:?}: {most} run(s) were in flight, the most `--max-runs` allows",
                    self.timeout
                );
                Err(Failure {
                    text: format!(
                        "error[{code}]: {message}\nhelp: call again later, or start the server with a larger `--max-runs` or `--timeout`"
                    ),
                    json: json!({"code": code, "message": message}),
                })
            }
        }
    }

    /// The listed entries as MCP tools.
    fn tools(&self) -> Vec<Tool> {
        self.catalog
            .entries()
            .iter()
            .map(|entry| {
                Tool::new(
                    entry.name.clone(),
                    entry.description.clone(),
                    Arc::new(entry.input_schema.clone()),
                )
                .with_raw_output_schema(Arc::new(entry.output_schema.clone()))
            })
            .collect()
    }

    /// Runs `entry` on `arguments`: its value, or its failure as an error
    /// result. A contract's run stops when `cancel` is cancelled; with
    /// `progress`, each finished node is reported.
    async fn run(
        &self,
        entry: &Entry,
        arguments: Map<String, Value>,
        cancel: &Cancel,
        progress: Option<Progress>,
    ) -> CallToolResult {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let answer = match self.turn(deadline).await {
            Err(failure) => Err(failure),
            Ok(turn) => self.start(entry, arguments, cancel, progress, deadline, turn).await,
        };
        match answer {
            // `structured` adds the same JSON as a text block.
            Ok(value) => CallToolResult::structured(entry.structured(value)),
            Err(failure) => {
                // No `structuredContent`: clients check it against the
                // `outputSchema`, which describes successes.
                let mut meta = JsonObject::new();
                meta.insert(ERROR_META.into(), failure.json);
                CallToolResult::error(vec![ContentBlock::text(failure.text)])
                    .with_meta(Some(MetaObject::from(meta)))
            }
        }
    }
}

impl Server {
    /// Runs `entry` on `arguments` by `deadline`, holding `turn` until it
    /// stopped: its value or its failure.
    async fn start(
        &self,
        entry: &Entry,
        arguments: Map<String, Value>,
        cancel: &Cancel,
        progress: Option<Progress>,
        deadline: tokio::time::Instant,
        turn: Option<OwnedSemaphorePermit>,
    ) -> Result<Value, Failure> {
        let engine = Arc::clone(&self.engine);
        let limit = self.timeout;
        match entry.target {
            Target::Tool(tool) => {
                let call = engine.call_tool(tool, Value::Object(arguments));
                let answer = match tokio::time::timeout_at(deadline, call).await {
                    Ok(answer) => answer.map_err(|error| node_failure(&entry.name, &error)),
                    Err(_) => Err(deadline_failure(limit)),
                };
                drop(turn);
                if let (Some(progress), Ok(_)) = (&progress, &answer) {
                    progress.send(1, 1, Some(entry.name.clone())).await;
                }
                answer
            }
            Target::Contract(contract) => {
                let cancel = cancel.clone();
                let trace = Arc::new(Trace::new(progress.is_some()));
                let root = &engine.program()[contract];
                let total = root.nodes.len() - root.inputs().count();
                let watching =
                    progress.map(|progress| progress.watch(Arc::clone(&trace), &root.name, total));
                let run = tokio::task::spawn_blocking(move || {
                    let options = RunOptions {
                        inputs_from: InputsFrom::Arguments,
                        deadline: Some(deadline.into_std()),
                        cancel: Some(cancel),
                        ..RunOptions::default()
                    };
                    let result = engine.run_traced(contract, &arguments, &options, &trace);
                    // The turn is back once the run stopped, not before.
                    drop(turn);
                    result
                });
                let run = run.await;
                if let Some((ended, task)) = watching {
                    let _ = ended.send(matches!(run, Ok(Ok(_))));
                    let _ = task.await;
                }
                match run {
                    Ok(Ok(outputs)) => Ok(Value::Object(outputs)),
                    Ok(Err(RunError::Deadline)) => Err(deadline_failure(limit)),
                    Ok(Err(error)) => Err(run_failure(&error)),
                    Err(join) => {
                        let code = Code::ServeInternal.as_str();
                        Err(Failure {
                            text: format!("error[{code}]: the run stopped abnormally: {join}"),
                            json: json!({"code": code, "message": join.to_string()}),
                        })
                    }
                }
            }
        }
    }
}

/// A failed call: the text a client shows and the JSON of the error.
struct Failure {
    text: String,
    json: Value,
}

/// `error[CODE]: message`, then the node path, the problems and the help.
fn render(body: &Map<String, Value>, problems: &[(String, Option<String>)]) -> String {
    let field = |name: &str| body.get(name).and_then(Value::as_str);
    let mut text = format!(
        "error[{}]: {}",
        field("code").unwrap_or("ignite::run::failed"),
        field("message").unwrap_or("the call failed")
    );
    if let Some(path) = field("path") {
        let _ = write!(text, "\nnode: {path}");
    }
    if let Some(cause) = field("cause") {
        let _ = write!(text, "\ncause: {cause}");
    }
    for (problem, help) in problems {
        let _ = write!(text, "\n- {problem}");
        if let Some(help) = help {
            let _ = write!(text, " (help: {help})");
        }
    }
    if let Some(help) = field("help") {
        let _ = write!(text, "\nhelp: {help}");
    }
    text
}

/// A failed contract run.
fn run_failure(error: &RunError) -> Failure {
    let mut body = error.to_json();
    let problems: Vec<(String, Option<String>)> = match error {
        RunError::Inputs { problems, .. } => {
            problems.iter().map(|p| (p.message.clone(), p.help.clone())).collect()
        }
        _ => Vec::new(),
    };
    if !problems.is_empty() {
        let list = problems
            .iter()
            .map(|(message, help)| json!({"message": message, "help": help}))
            .collect();
        body.insert("problems".into(), Value::Array(list));
    }
    Failure { text: render(&body, &problems), json: Value::Object(body) }
}

/// A failed tool call: the tool's own error, at path `tool`.
fn node_failure(tool: &str, error: &NodeError) -> Failure {
    let mut body = Map::new();
    body.insert("code".into(), error.code().as_str().into());
    body.insert("kind".into(), error.kind().into());
    body.insert("message".into(), format!("{tool}: {error}").into());
    body.insert("path".into(), tool.into());
    body.insert("help".into(), error.help().into());
    Failure { text: render(&body, &[]), json: Value::Object(body) }
}

/// A call stopped at the server's time limit.
fn deadline_failure(limit: Duration) -> Failure {
    let mut failure = run_failure(&RunError::Deadline);
    let _ = write!(failure.text, "\nhelp: the server stops a call after {limit:?} (`--timeout`)");
    failure
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ignite", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "ignite's typed tools and contracts; a failed call names the code and the node path",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(entry) = self.catalog.find(&request.name) else {
            return Err(ErrorData::invalid_params(self.catalog.unknown(&request.name), None));
        };
        let arguments: JsonObject = request.arguments.unwrap_or_default();
        let cancel = Cancel::default();
        let progress = Progress::of(&context);
        tokio::select! {
            result = self.run(entry, arguments, &cancel, progress) => Ok(result.into()),
            () = context.ct.cancelled() => {
                // A tool's call ends as its future is dropped (its child
                // killed); a contract's run stops at its next look.
                cancel.cancel();
                Err(ErrorData::internal_error("the call was cancelled by the client", None))
            }
        }
    }
}

/// Serves `server` on standard input and output until the client closes
/// them, refusing a message over `cap` bytes. Nothing else is written to
/// standard output.
///
/// # Errors
/// The client did not open the session, or the transport failed.
pub(crate) async fn serve_stdio(server: Server, cap: usize) -> Result<(), String> {
    let (input, output) = rmcp::transport::stdio_pipes();
    let running = server
        .serve(super::stdio::LineTransport::new(input, output, cap))
        .await
        .map_err(|e| format!("the MCP session did not start: {e}"))?;
    running.waiting().await.map_err(|e| format!("the MCP session failed: {e}"))?;
    Ok(())
}
