//! Contracts as an HTTP service: the router behind `ignite serve`.
//!
//! Input: an [`Engine`] and [`Limits`]. Output: an axum server answering
//!
//! | request | answer |
//! | --- | --- |
//! | `POST /contracts/NAME` | the run's outputs (inputs are the JSON body) |
//! | `GET /contracts` | every top-level contract with its input and output JSON Schemas |
//! | `GET /openapi.json` | an OpenAPI 3.1 document of the above |
//! | `GET /health` | `{"status": "ok", ...}` |
//! | `GET /runs/ID` | where a run of a program with approvals stands (see `runs.rs`) |
//! | `POST /runs/ID/approvals/CALL` | `{"approve": true\|false, "note": ".."}`: a decision; the run resumes by itself |
//!
//! Runs go through [`Engine::run_traced`] exactly as `ignite run` does; errors are
//! JSON objects carrying the CLI's diagnostic codes (`docs/serve.md`). A
//! run's answer carries its run ID, tokens and cost as `x-ignite-*`
//! headers, and every request is one access-log line on stderr.
//! At most [`Limits::max_runs`] runs go at once (others wait for a turn,
//! within the time limit); a run that outlasts [`Limits::timeout`] is
//! answered 504 and stopped: no new node starts, and its tool and agent
//! calls in flight are cancelled (their child processes killed), which
//! gives its turn back. When the shutdown future resolves, new requests are answered 503,
//! the server waits for every run in flight, then stops.

pub(crate) mod runs;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::diagnostic::Code;
use crate::ir::{self, ContractId, Program, Type, TypeKind};
use crate::runtime::{Engine, InputsFrom, RunError, RunOptions};
use crate::telemetry::RunSpan;
use crate::tools::schema::{params_schema, type_schema};
use crate::trace::Trace;
use crate::usage::UsageTotals;

/// How much the server takes on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// How many runs may go at once.
    pub max_runs: usize,
    /// The longest a request may wait for its turn and run.
    pub timeout: Duration,
}

/// Why a run got no turn ([`Service::turn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoTurn {
    /// The server is draining: it takes no new runs.
    ShuttingDown,
    /// Every turn stayed taken until the run's deadline.
    TimedOut,
}

/// The shared state of one server.
pub(crate) struct Service {
    engine: Arc<Engine>,
    /// Top-level contracts by name, in declaration order.
    contracts: Vec<(String, ContractId)>,
    limits: Limits,
    turns: Arc<Semaphore>,
    draining: AtomicBool,
    /// The journaled runs, when a tool of the program `requires_approval`.
    runs: Option<runs::Runs>,
}

impl Service {
    /// A service for every top-level contract of `engine`'s program.
    #[must_use]
    pub(crate) fn new(engine: Engine, limits: Limits) -> Self {
        let contracts =
            engine.roots().into_iter().map(|id| (engine.program()[id].name.clone(), id)).collect();
        let approvals = engine.program().tools.iter().any(|t| t.approval.is_some());
        let runs = approvals.then(|| runs::Runs::new(crate::effects::JOURNAL_DIR.into()));
        Self {
            runs,
            engine: Arc::new(engine),
            contracts,
            turns: Arc::new(Semaphore::new(limits.max_runs)),
            limits,
            draining: AtomicBool::new(false),
        }
    }

    /// The engine runs go to (shared with the MCP endpoint of `serve --mcp`).
    #[must_use]
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The contracts served with their schemas, as `GET /contracts` lists them.
    #[must_use]
    pub(crate) fn catalog(&self) -> Value {
        Value::Array(
            self.contracts
                .iter()
                .map(|(name, id)| {
                    json!({
                        "name": name,
                        "inputs": self.input_schema(*id),
                        "outputs": self.output_schema(*id),
                    })
                })
                .collect(),
        )
    }

    fn input_schema(&self, id: ContractId) -> Value {
        input_schema(self.engine.program(), id)
    }

    fn output_schema(&self, id: ContractId) -> Value {
        output_schema(self.engine.program(), id)
    }

    /// The OpenAPI 3.1 document of the server.
    #[must_use]
    pub(crate) fn openapi(&self) -> Value {
        let error = json!({"$ref": "#/components/schemas/Error"});
        let errors = |codes: &[&str]| {
            let mut out = Map::new();
            for code in codes {
                out.insert(
                    (*code).to_owned(),
                    json!({
                        "description": "An error with ignite's code",
                        "content": {"application/json": {"schema": error}},
                    }),
                );
            }
            out
        };
        let mut paths = Map::new();
        for (name, id) in &self.contracts {
            let mut responses = Map::new();
            responses.insert(
                "200".into(),
                json!({
                    "description": "The contract's outputs",
                    "content": {"application/json": {"schema": self.output_schema(*id)}},
                }),
            );
            responses.extend(errors(&["400", "413", "422", "500", "503", "504"]));
            if self.runs.is_some() {
                responses.insert("202".into(), json!({
                    "description": "The run paused: calls wait for approval",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Run"}}},
                }));
            }
            paths.insert(
                format!("/contracts/{name}"),
                json!({"post": {
                    "operationId": format!("run_{name}"),
                    "summary": format!("Run contract `{name}`"),
                    "requestBody": {
                        "required": false,
                        "content": {"application/json": {"schema": self.input_schema(*id)}},
                    },
                    "responses": responses,
                }}),
            );
        }
        let listing = json!({"type": "array", "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "inputs": {"type": "object"},
                "outputs": {"type": "object"},
            },
            "required": ["name", "inputs", "outputs"],
        }});
        paths.insert(
            "/contracts".into(),
            json!({"get": {
                "operationId": "list_contracts",
                "summary": "The contracts served, with their input and output JSON Schemas",
                "responses": {"200": {
                    "description": "The contracts",
                    "content": {"application/json": {"schema": listing}},
                }},
            }}),
        );
        paths.insert(
            "/health".into(),
            json!({"get": {
                "operationId": "health",
                "summary": "Whether the server takes runs",
                "responses": {
                    "200": {"description": "Serving", "content": {"application/json": {"schema": {
                        "type": "object",
                        "properties": {
                            "status": {"type": "string"},
                            "running": {"type": "integer"},
                        },
                    }}}},
                    "503": errors(&["503"])["503"],
                },
            }}),
        );
        paths.insert(
            "/openapi.json".into(),
            json!({"get": {
                "operationId": "openapi",
                "summary": "This document",
                "responses": {"200": {
                    "description": "The OpenAPI document",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }},
            }}),
        );
        let mut schemas = Map::new();
        schemas.insert(
            "Error".into(),
            json!({
                "type": "object",
                "properties": {"error": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string"},
                        "kind": {"type": "string"},
                        "message": {"type": "string"},
                        "path": {"type": "string"},
                        "cause": {"type": ["string", "null"]},
                        "help": {"type": ["string", "null"]},
                        "diagnostics": {"type": "array", "items": {"type": "object"}},
                    },
                    "required": ["code", "message"],
                }},
                "required": ["error"],
            }),
        );
        if self.runs.is_some() {
            runs::document(&mut paths, &errors(&["400", "404", "409"]));
            schemas.insert("Run".into(), runs::schema());
        }
        json!({
            "openapi": "3.1.0",
            "info": {
                "title": "ignite contracts",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "paths": paths,
            "components": {"schemas": schemas},
        })
    }

    /// Runs contract `name` on the JSON `body`; once the run starts, the
    /// answer carries its run ID and usage headers ([`with_usage`]).
    async fn call(self: Arc<Self>, name: &str, body: &[u8], span: RunSpan) -> Response {
        let Some(&(_, contract)) = self.contracts.iter().find(|(n, _)| n == name) else {
            let message = match self.engine.contract(Some(name)) {
                Ok(_) => format!(
                    "contract `{name}` is composed by other contracts and not served on its own; the served ones are `{}`",
                    self.contracts.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join("`, `")
                ),
                Err(error) => error.to_string(),
            };
            return failure(StatusCode::NOT_FOUND, Code::ServeUnknownContract.as_str(), message);
        };
        let inputs = match parse_inputs(body) {
            Ok(inputs) => inputs,
            Err(message) => {
                return failure(StatusCode::BAD_REQUEST, Code::ServeBadBody.as_str(), message);
            }
        };
        let deadline = tokio::time::Instant::now() + self.limits.timeout;
        let timed_out = || {
            failure(
                StatusCode::GATEWAY_TIMEOUT,
                Code::RunDeadline.as_str(),
                format!("the run did not finish within {:?} and was stopped", self.limits.timeout),
            )
        };
        let turn = match self.turn(deadline).await {
            Ok(turn) => turn,
            Err(NoTurn::ShuttingDown) => return shutting_down(),
            Err(NoTurn::TimedOut) => return timed_out(),
        };
        let name = name.to_owned();
        let (engine, run_id) = match &self.runs {
            Some(runs) => match runs.start(&self.engine, contract, &name, &inputs) {
                Ok((engine, id)) => (Arc::new(engine), id),
                Err(message) => {
                    return failure(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        Code::ServeInternal.as_str(),
                        message,
                    );
                }
            },
            None => (Arc::clone(&self.engine), format!("{:016x}", fastrand::u64(..))),
        };
        let trace = Arc::new(Trace::new(false));
        let spent = Arc::clone(&trace);
        let run = tokio::task::spawn_blocking(move || {
            let result = engine.run_traced(
                contract,
                &inputs,
                &RunOptions {
                    span,
                    inputs_from: InputsFrom::Body,
                    deadline: Some(deadline.into_std()),
                    ..RunOptions::default()
                },
                &spent,
            );
            drop(turn);
            result
        });
        let result = tokio::time::timeout_at(deadline, run).await;
        if let (Some(runs), Ok(Ok(result))) = (&self.runs, &result) {
            runs.ended(&run_id, contract, result, |e| run_error(self.engine.program(), e));
        }
        let response = match result {
            Err(_) | Ok(Ok(Err(RunError::Deadline))) => timed_out(),
            Ok(Ok(Err(RunError::Paused { calls }))) => {
                (StatusCode::ACCEPTED, axum::Json(runs::waiting(&run_id, &calls))).into_response()
            }
            Ok(Err(join)) => failure(
                StatusCode::INTERNAL_SERVER_ERROR,
                Code::ServeInternal.as_str(),
                format!("the run stopped abnormally: {join}"),
            ),
            Ok(Ok(Ok(outputs))) => {
                (StatusCode::OK, axum::Json(Value::Object(outputs))).into_response()
            }
            Ok(Ok(Err(error))) => self.run_error(&error),
        };
        with_usage(response, &run_id, &trace.usage())
    }

    /// `GET /runs/ID`.
    fn show_run(&self, id: &str) -> Response {
        match self.runs.as_ref().and_then(|runs| runs.show(id)) {
            Some(body) => (StatusCode::OK, axum::Json(body)).into_response(),
            None => failure(
                StatusCode::NOT_FOUND,
                Code::ServeApproval.as_str(),
                format!("this server has no run `{id}` waiting or journaled"),
            ),
        }
    }

    /// `POST /runs/ID/approvals/CALL`: records the decision; once no call
    /// of the run waits, resumes it in the background.
    fn decide(self: Arc<Self>, id: &str, call: &str, body: &[u8]) -> Response {
        let decision = match parse_decision(body) {
            Ok(decision) => decision,
            Err(message) => {
                return failure(StatusCode::BAD_REQUEST, Code::ServeBadBody.as_str(), message);
            }
        };
        let Some(runs) = &self.runs else {
            return failure(
                StatusCode::NOT_FOUND,
                Code::ServeApproval.as_str(),
                format!("this server has no run `{id}`: no tool of its program requires approval"),
            );
        };
        let resumed = match runs.decide(&self.engine, id, call, &decision) {
            Ok(resumed) => resumed,
            Err((status, code, message)) => return failure(status, code, message),
        };
        if let Some((engine, contract, inputs)) = resumed {
            let service = Arc::clone(&self);
            let run = id.to_owned();
            tokio::task::spawn_blocking(move || {
                let options = RunOptions { inputs_from: InputsFrom::Body, ..RunOptions::default() };
                let result =
                    engine.run_traced(contract, &inputs, &options, &Arc::new(Trace::new(false)));
                if let Some(runs) = &service.runs {
                    runs.ended(&run, contract, &result, |e| run_error(service.engine.program(), e));
                }
            });
        }
        match self.runs.as_ref().and_then(|runs| runs.show(id)) {
            Some(body) => (StatusCode::ACCEPTED, axum::Json(body)).into_response(),
            None => StatusCode::ACCEPTED.into_response(),
        }
    }

    fn run_error(&self, error: &RunError) -> Response {
        let (status, body) = run_error(self.engine.program(), error);
        (status, axum::Json(body)).into_response()
    }

    /// A turn to run (one of [`Limits::max_runs`], shared by the HTTP
    /// API and `serve --mcp`'s calls), waited for until `deadline`. The
    /// run holds it until it stops.
    ///
    /// # Errors
    /// The server is shutting down, or no turn came by `deadline`.
    pub(crate) async fn turn(
        &self,
        deadline: tokio::time::Instant,
    ) -> Result<OwnedSemaphorePermit, NoTurn> {
        if self.draining.load(Ordering::SeqCst) {
            return Err(NoTurn::ShuttingDown);
        }
        match tokio::time::timeout_at(deadline, self.turns.clone().acquire_owned()).await {
            Ok(Ok(turn)) => Ok(turn),
            Ok(Err(_)) => Err(NoTurn::ShuttingDown),
            Err(_) => Err(NoTurn::TimedOut),
        }
    }

    /// What the server takes on.
    #[must_use]
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Runs in flight.
    fn running(&self) -> usize {
        self.limits.max_runs.saturating_sub(self.turns.available_permits())
    }
}

/// A failed run as a status and a JSON body: 422 for inputs (every
/// problem listed), failed guards and a spent budget (the same request
/// would spend it again, so it is not a status clients retry), 500 for
/// other failed nodes.
pub(crate) fn run_error(program: &Program, error: &RunError) -> (StatusCode, Value) {
    let diagnostics =
        error.diagnostics().map_or(Value::Array(Vec::new()), |d| d.to_json(&program.sources));
    let status = match error {
        RunError::Inputs { .. } | RunError::Output { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        RunError::Contract { .. } => StatusCode::NOT_FOUND,
        RunError::Deadline => StatusCode::GATEWAY_TIMEOUT,
        RunError::Paused { .. } => StatusCode::ACCEPTED,
        RunError::Node { code: Code::GuardFailed | Code::RunBudget, .. } => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        RunError::Node { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let mut body = error.to_json();
    if let RunError::Contract { .. } = error {
        body.insert("code".into(), Code::ServeUnknownContract.as_str().into());
    }
    body.insert("diagnostics".into(), diagnostics);
    (status, json!({"error": body}))
}

/// The JSON Schema of contract `id`'s inputs (no other properties).
pub(crate) fn input_schema(program: &Program, id: ContractId) -> Value {
    let mut schema = params_schema(program[id].inputs().map(|(_, p)| p));
    if let Some(object) = schema.as_object_mut() {
        object.insert("additionalProperties".into(), false.into());
    }
    schema
}

/// The JSON Schema of contract `id`'s outputs: each has the static type
/// `check` inferred for what it reads (an input's type, an agent's `result`
/// or `string`, a tool's `result`, a computed value's type, a field of a
/// record); an output whose type is not known statically may be any JSON
/// value. `integer` is certain where it is given: integer arithmetic fails
/// on overflow rather than turning into a float, and `/` is a `number`.
pub(crate) fn output_schema(program: &Program, id: ContractId) -> Value {
    let contract = &program[id];
    let mut properties = Map::new();
    for output in &contract.outputs {
        let node = &contract.nodes[output.node.index()];
        let mut schema = type_schema(&output_type(contract, output));
        let mut from = node.name.to_string();
        for field in &output.fields {
            from.push('.');
            from.push_str(field);
        }
        schema.insert("description".into(), format!("from `{from}`").into());
        properties.insert(output.name.clone(), Value::Object(schema));
    }
    let required = contract.outputs.iter().map(|o| Value::String(o.name.clone())).collect();
    crate::tools::schema::object_schema(properties, required)
}

/// The static type of `output`: its node's, down its record fields (a
/// field of a nullable record may be null); `any` past anything else.
fn output_type(contract: &ir::Contract, output: &ir::Output) -> Type {
    let mut ty = contract.types.get(output.node.index()).cloned().unwrap_or_else(Type::any);
    for field in &output.fields {
        ty = match &ty.kind {
            TypeKind::Record(record) => record.field(field).map_or_else(Type::any, |f| {
                let mut field_ty = f.ty.clone();
                field_ty.nullable |= ty.nullable;
                field_ty
            }),
            _ => Type::any(),
        };
    }
    ty
}

/// The header naming a run: its ID, also in the access log.
pub(crate) const RUN_ID: &str = "x-ignite-run-id";
/// The run's input tokens, all models together.
pub(crate) const INPUT_TOKENS: &str = "x-ignite-input-tokens";
/// The run's output tokens, all models together.
pub(crate) const OUTPUT_TOKENS: &str = "x-ignite-output-tokens";
/// The run's cost in USD, when its providers have a `price`.
pub(crate) const COST_USD: &str = "x-ignite-cost-usd";

/// `response` with the run's ID and what its model calls spent as headers.
fn with_usage(mut response: Response, run_id: &str, usage: &UsageTotals) -> Response {
    let (input, output) = usage.tokens();
    let mut values = vec![
        (RUN_ID, run_id.to_owned()),
        (INPUT_TOKENS, input.to_string()),
        (OUTPUT_TOKENS, output.to_string()),
    ];
    if let Some(cost) = usage.cost_usd() {
        values.push((COST_USD, format!("{cost:.6}")));
    }
    let headers = response.headers_mut();
    for (name, value) in values {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    response
}

/// One line on stderr per request: method, path, status, duration, and
/// for a run its ID, tokens and cost (from the headers [`with_usage`] set).
async fn access_log(request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let response = next.run(request).await;
    let header =
        |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let mut line = format!(
        "serve: {method} {path} {} {:.1}ms",
        response.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    if let Some(id) = header(RUN_ID) {
        let tokens = |name| header(name).unwrap_or_else(|| "0".to_owned());
        line.push_str(&format!(
            " run {id} tokens {} in / {} out",
            tokens(INPUT_TOKENS),
            tokens(OUTPUT_TOKENS)
        ));
        if let Some(cost) = header(COST_USD) {
            line.push_str(&format!(" cost {cost} USD"));
        }
    }
    // One whole line; a closed stderr loses it, the answer still goes.
    line.push('\n');
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    response
}

/// The body as an inputs object; an empty body is no inputs.
pub(crate) fn parse_inputs(body: &[u8]) -> Result<Map<String, Value>, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(body) {
        Ok(Value::Object(inputs)) => Ok(inputs),
        Ok(other) => Err(format!(
            "the body must be a JSON object of inputs, got {}",
            crate::ir::value_kind(&other)
        )),
        Err(e) => Err(format!("the body is not valid JSON: {e}")),
    }
}

/// A decision's body: `{"approve": true|false, "note": ".."}` (the note
/// is a denial's reason).
pub(crate) fn parse_decision(body: &[u8]) -> Result<crate::effects::Decision, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not valid JSON: {e}"))?;
    let note = value.get("note").and_then(Value::as_str).map(str::to_owned);
    match value.get("approve") {
        Some(Value::Bool(true)) => Ok(crate::effects::Decision::Approve(note)),
        Some(Value::Bool(false)) => Ok(crate::effects::Decision::Deny(
            note.unwrap_or_else(|| "denied over HTTP".to_owned()),
        )),
        _ => Err("the body must be `{\"approve\": true|false, \"note\": \"..\"}`".to_owned()),
    }
}

/// `{"error": {"code": .., "message": ..}}` with `status`.
fn failure(status: StatusCode, code: &str, message: String) -> Response {
    (status, axum::Json(json!({"error": {"code": code, "message": message}}))).into_response()
}

fn shutting_down() -> Response {
    failure(
        StatusCode::SERVICE_UNAVAILABLE,
        Code::ServeShuttingDown.as_str(),
        "the server is shutting down and takes no new runs".to_owned(),
    )
}

/// The routes of `service`.
pub(crate) fn router(service: Arc<Service>) -> Router {
    let max_body = service.limits.max_body;
    Router::new()
        .route(
            "/contracts",
            get(|State(s): State<Arc<Service>>| async move { axum::Json(s.catalog()) }),
        )
        .route("/contracts/{name}", post(run_contract))
        .route(
            "/runs/{id}",
            get(|State(s): State<Arc<Service>>, Path(id): Path<String>| async move {
                s.show_run(&id)
            }),
        )
        .route(
            "/runs/{id}/approvals/{call}",
            post(
                |State(s): State<Arc<Service>>,
                 Path((id, call)): Path<(String, String)>,
                 body: Bytes| async move { s.decide(&id, &call, &body) },
            ),
        )
        .route(
            "/openapi.json",
            get(|State(s): State<Arc<Service>>| async move { axum::Json(s.openapi()) }),
        )
        .route(
            "/health",
            get(|State(s): State<Arc<Service>>| async move {
                axum::Json(json!({"status": "ok", "running": s.running()}))
            }),
        )
        .layer(DefaultBodyLimit::max(max_body))
        .layer(middleware::from_fn_with_state(Arc::clone(&service), refuse_when_draining))
        .layer(middleware::from_fn(access_log))
        .with_state(service)
}

async fn run_contract(
    State(service): State<Arc<Service>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match body {
        Ok(body) => service.call(&name, &body, RunSpan::from_headers(&headers)).await,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => failure(
            StatusCode::PAYLOAD_TOO_LARGE,
            Code::ServeTooLarge.as_str(),
            format!("the body is larger than the limit of {} bytes", service.limits.max_body),
        ),
        Err(rejection) => {
            failure(rejection.status(), Code::ServeBadBody.as_str(), rejection.body_text())
        }
    }
}

async fn refuse_when_draining(
    State(service): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    if service.draining.load(Ordering::SeqCst) {
        return shutting_down();
    }
    next.run(request).await
}

/// Serves on `listener`, with the routes of `mounted` beside the API
/// (`ignite serve --mcp`: the MCP endpoint, whose calls take turns too),
/// until `stop` resolves, then refuses new runs (503), waits for the runs
/// in flight, then for `end_mounted` (the mounted routes' answers in
/// flight sent and their open streams ended) and returns.
///
/// # Errors
/// The listener failed.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    service: Arc<Service>,
    mounted: Router,
    stop: impl Future<Output = ()> + Send + 'static,
    end_mounted: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(Arc::clone(&service)).merge(mounted);
    let drained = async move {
        stop.await;
        service.draining.store(true, Ordering::SeqCst);
        let all = u32::try_from(service.limits.max_runs).unwrap_or(u32::MAX);
        // Every turn back means no run is in flight; closing makes requests
        // still waiting for a turn answer 503.
        let _all_turns = service.turns.acquire_many(all).await;
        service.turns.close();
        // Not before: an MCP call's answer goes out on its stream.
        end_mounted.await;
    };
    axum::serve(listener, app).with_graceful_shutdown(drained).await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::http::StatusCode;
    use serde_json::Value;

    use super::{Limits, Service};
    use crate::effects::{Effect, EffectStore, Effects, Lookup, Outcome};
    use crate::runtime::Engine;
    use crate::telemetry::RunSpan;

    /// A store with a bug: it panics when asked.
    struct Panicking;

    impl EffectStore for Panicking {
        fn lookup(&self, _: &Effect<'_>) -> Lookup {
            panic!("a store with a bug")
        }

        fn record(&self, _: &Effect<'_>, _: &Outcome) -> Result<(), String> {
            Ok(())
        }
    }

    /// A service of `engine` that runs one request at a time; its
    /// time-out is far above the tests' guard against a hang.
    fn one_at_a_time(engine: Engine) -> Arc<Service> {
        let limits = Limits { max_body: 1 << 20, max_runs: 1, timeout: Duration::from_secs(600) };
        Arc::new(Service::new(engine, limits))
    }

    /// `service`'s answer to a run of `contract` on `body`: its status and
    /// JSON body.
    async fn answer(service: &Arc<Service>, contract: &str, body: &[u8]) -> (StatusCode, Value) {
        let call = Arc::clone(service).call(contract, body, RunSpan::default());
        let response = tokio::time::timeout(Duration::from_secs(120), call)
            .await
            .expect("the request is answered, not left waiting");
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
        (status, serde_json::from_slice(&body).expect("JSON"))
    }

    /// A call that panics (a bug, here an embedder's store) fails its node,
    /// naming the panic, instead of leaving the request waiting until its
    /// time-out; the server goes on serving.
    #[tokio::test]
    async fn a_call_that_panics_fails_its_node_and_the_server_goes_on() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("echo.ign");
        let program = r#"
tool Echo {
  description "Echoes a word"
  param word: string
  exec "sh" "-c" "cat"
}

contract Echoing {
  input word: string
  compute echoed = Echo(word: word)
  output echoed
}
"#;
        std::fs::write(&file, program).expect("written");
        let program = crate::compile(&file).program.expect("compiles");
        let engine = Engine::new(program).with_effects(Effects::live().with(Arc::new(Panicking)));
        let service = one_at_a_time(engine);
        for _ in 0..2 {
            let (status, body) = answer(&service, "Echoing", br#"{"word": "hi"}"#).await;
            assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
            assert_eq!(body["error"]["code"], "ignite::run::tool_failed", "{body}");
            let message = body["error"]["message"].as_str().expect("a message");
            assert!(message.contains("stopped abnormally (a store with a bug)"), "{message}");
            assert_eq!(service.running(), 0, "the run's turn is given back");
        }
        // The engine's runtime may not be dropped on an async thread.
        tokio::task::spawn_blocking(move || drop(service)).await.expect("dropped");
    }

    /// A run stopped by its contract's budget is the client's 422 (not a
    /// server's 500, and not a 429 that clients retry by themselves).
    #[tokio::test]
    async fn a_spent_budget_is_a_422_naming_the_budget() {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = r#"[{"tool_calls": [{"id": "1", "name": "look", "arguments": {}}]},
                          {"text": "done"}]"#;
        std::fs::write(dir.path().join("script.json"), script).expect("written");
        let file = dir.path().join("budget.ign");
        let program = r#"
tool Look {
  description "Looks"
  returns "seen"
}

agent Asker {
  provider script "script.json"
  model "scripted"
  tools Look
  max_tool_iterations 1
  input task: string
}

contract Asked {
  budget model_calls 1
  input task: string
  compute answer = Asker(task: task)
  output answer
}
"#;
        std::fs::write(&file, program).expect("written");
        let program = crate::compile(&file).program.expect("compiles");
        let service = one_at_a_time(Engine::new(program));
        let (status, body) = answer(&service, "Asked", br#"{"task": "t"}"#).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(body["error"]["code"], "ignite::run::budget", "{body}");
        let message = body["error"]["message"].as_str().expect("a message");
        assert!(message.contains("the budget `model_calls 1` of contract `Asked`"), "{message}");
        tokio::task::spawn_blocking(move || drop(service)).await.expect("dropped");
    }

    /// Turns are what HTTP runs and `serve --mcp`'s calls share: with all
    /// of them taken a run waits until its deadline, and a draining
    /// server gives none.
    #[tokio::test]
    async fn a_turn_waits_until_the_deadline_and_none_is_given_when_draining() {
        use super::NoTurn;
        use std::sync::atomic::Ordering;
        use tokio::time::{Instant, timeout};

        let program =
            crate::compile_source("t.ign", "contract C {\n  input a: integer\n  output a\n}\n")
                .program
                .expect("compiles");
        let limits = Limits { max_body: 1 << 10, max_runs: 1, timeout: Duration::from_secs(60) };
        let service = Arc::new(Service::new(Engine::new(program), limits));
        let soon = || Instant::now() + Duration::from_millis(50);
        let first = service.turn(soon()).await.expect("a turn is free");
        assert_eq!(service.running(), 1);
        assert_eq!(service.turn(soon()).await.err(), Some(NoTurn::TimedOut));
        let waiting = {
            let service = Arc::clone(&service);
            tokio::spawn(async move {
                service.turn(Instant::now() + Duration::from_secs(30)).await.is_ok()
            })
        };
        drop(first);
        assert!(timeout(Duration::from_secs(30), waiting).await.expect("in time").expect("joined"));
        service.draining.store(true, Ordering::SeqCst);
        assert_eq!(service.turn(soon()).await.err(), Some(NoTurn::ShuttingDown));
        tokio::task::spawn_blocking(move || drop(service)).await.expect("dropped");
    }
}
