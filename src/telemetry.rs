//! OpenTelemetry: the spans of runs, exported over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set.
//!
//! | span | name | parent | attributes |
//! | --- | --- | --- | --- |
//! | run | `run {Contract}` | the caller's (a `traceparent` under `serve`) | `ignite.contract`, the caller's (`ignite.batch.row`, `ignite.test`, ...) |
//! | node | its path, `Root.child > node[3]` | the run, or its `compose` / `for` node | `ignite.node.kind`; agents `gen_ai.agent.name` |
//! | model call | `chat {model}` | the agent's node | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.usage.*`, `gen_ai.response.finish_reasons` |
//! | tool call | `execute_tool {name}` | the tool's or agent's node | `gen_ai.tool.name`, `gen_ai.tool.call.id` |
//! | agent cache | `invoke_agent {name}` | the agent's node | `gen_ai.agent.name` |
//!
//! Every effect span says where its result came from (`ignite.effect.source`:
//! `live`, or the store that answered: `cache`, `replay`, `journal`). A
//! failure sets the span's status and `error.type` (a diagnostic code, an
//! HTTP status, `transport`). Prompts, replies and tool arguments are only
//! exported when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`;
//! keys and headers never are.
//!
//! Without the variable nothing is set up: every [`Span`] is empty and each
//! instrumentation point costs one branch. The standard `OTEL_*` variables
//! of the SDK and the OTLP exporter apply (service name, resource
//! attributes, headers, timeout, sampler, batching).

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{
    SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, Value as OtelValue};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use serde_json::{Value, json};

/// The variable that turns export on (or its traces-only form).
pub const ENDPOINT_VARS: [&str; 2] =
    ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"];

/// The switch that lets prompt, reply and tool text into spans.
pub const CAPTURE_VAR: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// How long one export request may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();
static TRACER: OnceLock<SdkTracer> = OnceLock::new();
static CAPTURE: AtomicBool = AtomicBool::new(false);
/// Why the last export request failed (a later success clears it): what
/// the process says when it ends.
static EXPORT_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// Sets up the exporter when an endpoint variable is set: `Ok(false)`
/// when none is (or `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`).
///
/// # Errors
/// The variables cannot be used (an unknown protocol, a bad endpoint): why.
pub fn init() -> Result<bool, String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if !ENDPOINT_VARS.iter().any(|name| var(name).is_some())
        || var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Ok(false);
    }
    match var("OTEL_TRACES_EXPORTER").as_deref() {
        None | Some("otlp") => {}
        Some("none") => return Ok(false),
        Some(other) => {
            return Err(format!(
                "OTEL_TRACES_EXPORTER=`{other}` is not supported: ignite exports `otlp` (or `none`)"
            ));
        }
    }
    let protocol = match var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .as_deref()
    {
        None | Some("http/protobuf") => Protocol::HttpBinary,
        Some("http/json") => Protocol::HttpJson,
        Some(other) => {
            return Err(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL=`{other}` is not supported: use `http/protobuf` (the default) or `http/json`"
            ));
        }
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_http_client(ExportClient::new()?)
        .build()
        .map_err(|e| format!("cannot set up the OTLP exporter: {e}"))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource())
        .build();
    let scope = opentelemetry::InstrumentationScope::builder("ignite")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let tracer = provider.tracer_with_scope(scope);
    CAPTURE.store(
        var(CAPTURE_VAR).is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        Ordering::Relaxed,
    );
    // A second call keeps the first exporter.
    let _ = PROVIDER.set(provider);
    let _ = TRACER.set(tracer);
    Ok(true)
}

/// The resource: `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`, with
/// `service.name` `ignite` when neither names the service.
fn resource() -> opentelemetry_sdk::Resource {
    let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES")
            .is_ok_and(|a| a.split(',').any(|kv| kv.trim().starts_with("service.name=")));
    let builder = opentelemetry_sdk::Resource::builder();
    if named { builder.build() } else { builder.with_service_name("ignite").build() }
}

/// True when spans are exported.
#[must_use]
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

/// True when prompt, reply and tool text may go into spans.
#[must_use]
pub fn capture_content() -> bool {
    CAPTURE.load(Ordering::Relaxed)
}

/// Exports every ended span now (a signal handler, before exiting).
pub fn flush() {
    if let Some(provider) = PROVIDER.get() {
        let _ = provider.force_flush();
    }
}

/// Exports what is left and stops the exporter.
///
/// # Errors
/// The last export failed (spans were lost): where to and why.
pub fn shutdown() -> Result<(), String> {
    let Some(provider) = PROVIDER.get() else { return Ok(()) };
    let ended = provider.shutdown();
    match crate::sync::lock(&EXPORT_FAILURE).take() {
        Some(failure) => Err(failure),
        None => ended.map_err(|e| format!("cannot export spans: {e}")),
    }
}

/// The caller's part of a run span: its parent and extra attributes.
#[derive(Debug, Clone, Default)]
pub struct RunSpan {
    /// The span the run belongs to (a remote one under `serve`).
    pub parent: Option<Context>,
    /// Facts about the run: `ignite.batch.row`, `ignite.test`, ...
    pub attributes: Vec<KeyValue>,
}

impl RunSpan {
    /// This with `attributes` added (computed only when spans are exported).
    #[must_use]
    pub fn with(&self, attributes: impl FnOnce() -> Vec<KeyValue>) -> Self {
        let mut run = self.clone();
        if enabled() {
            run.attributes.extend(attributes());
        }
        run
    }

    /// The run of a request that carries W3C trace context (`traceparent`,
    /// `tracestate`): its span joins the caller's trace.
    #[must_use]
    pub fn from_headers(headers: &axum::http::HeaderMap) -> Self {
        if !enabled() {
            return Self::default();
        }
        let propagator = opentelemetry_sdk::propagation::TraceContextPropagator::new();
        let parent = propagator.extract(&opentelemetry_http::HeaderExtractor(headers));
        let remote = parent.span().span_context().is_valid();
        Self { parent: remote.then_some(parent), attributes: Vec::new() }
    }
}

/// A span being recorded, or nothing (export off, or an empty parent).
/// Clones share the span; it ends at [`Span::end`] or when the last clone
/// is dropped.
#[derive(Debug, Clone, Default)]
pub struct Span(Option<Context>);

impl Span {
    /// No span: every method does nothing.
    #[must_use]
    pub fn none() -> Self {
        Self(None)
    }

    /// The span of a run of `contract`; empty when export is off.
    #[must_use]
    pub fn run(contract: &str, caller: &RunSpan) -> Self {
        let Some(tracer) = TRACER.get() else { return Self(None) };
        let mut attributes = Vec::with_capacity(caller.attributes.len() + 1);
        attributes.push(KeyValue::new("ignite.contract", contract.to_owned()));
        attributes.extend(caller.attributes.iter().cloned());
        let builder = tracer.span_builder(format!("run {contract}")).with_attributes(attributes);
        let parent = caller.parent.clone().unwrap_or_default();
        let span = tracer.build_with_context(builder, &parent);
        Self(Some(parent.with_span(span)))
    }

    /// True when this span is recorded.
    #[must_use]
    pub fn is_recording(&self) -> bool {
        self.0.is_some()
    }

    /// A child span starting now; `name` and `attributes` are only
    /// computed when this span is recorded.
    #[must_use]
    pub fn child(
        &self,
        kind: SpanKind,
        name: impl FnOnce() -> String,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Self {
        self.child_from(None, kind, name, attributes)
    }

    /// A child span that started at `started`.
    #[must_use]
    pub fn child_since(
        &self,
        started: Instant,
        name: impl FnOnce() -> String,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Self {
        self.child_from(Some(started), SpanKind::Internal, name, attributes)
    }

    fn child_from(
        &self,
        started: Option<Instant>,
        kind: SpanKind,
        name: impl FnOnce() -> String,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Self {
        let (Some(parent), Some(tracer)) = (&self.0, TRACER.get()) else { return Self(None) };
        let mut builder = tracer.span_builder(name()).with_kind(kind).with_attributes(attributes());
        if let Some(started) = started {
            builder = builder.with_start_time(SystemTime::now() - started.elapsed());
        }
        let span = tracer.build_with_context(builder, parent);
        Self(Some(parent.with_span(span)))
    }

    /// The node span of `path` (kind `kind`) under this one; agent nodes
    /// also carry their agent's name.
    #[must_use]
    pub fn node(&self, path: impl FnOnce() -> String, kind: &str, agent: Option<&str>) -> Self {
        self.child(SpanKind::Internal, path, || {
            let mut attributes = vec![KeyValue::new("ignite.node.kind", kind.to_owned())];
            if let Some(agent) = agent {
                attributes.push(KeyValue::new("gen_ai.operation.name", "invoke_agent"));
                attributes.push(KeyValue::new("gen_ai.agent.name", agent.to_owned()));
            }
            attributes
        })
    }

    /// The span of node `path` (kind `kind`) that started at `started`.
    #[must_use]
    pub fn node_since(&self, started: Instant, path: impl FnOnce() -> String, kind: &str) -> Self {
        self.child_since(started, path, || vec![KeyValue::new("ignite.node.kind", kind.to_owned())])
    }

    /// Adds attributes (computed only when recorded).
    pub fn set(&self, attributes: impl FnOnce() -> Vec<KeyValue>) {
        if let Some(cx) = &self.0 {
            cx.span().set_attributes(attributes());
        }
    }

    /// Marks the span failed: `error_type` is a short, stable name of the
    /// failure (a diagnostic code, an HTTP status), never message text.
    pub fn fail(&self, error_type: &str) {
        if let Some(cx) = &self.0 {
            let span = cx.span();
            span.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
            span.set_status(Status::error(error_type.to_owned()));
        }
    }

    /// Ends the span now: failed with `error_type` when there is one.
    pub fn end(&self, error_type: Option<&str>) {
        if let Some(cx) = &self.0 {
            if let Some(error_type) = error_type {
                self.fail(error_type);
            }
            cx.span().end();
        }
    }
}

/// `gen_ai.provider.name` for a provider kind (the semantic conventions'
/// well-known names where there is one).
#[must_use]
pub fn provider_name(kind: &str) -> &str {
    match kind {
        "gemini" => "gcp.gemini",
        other => other,
    }
}

/// `server.address` and `server.port` of `url` (never its path or query).
#[must_use]
pub fn server_attributes(url: &str) -> Vec<KeyValue> {
    let Ok(parsed) = reqwest::Url::parse(url) else { return Vec::new() };
    let mut attributes = Vec::with_capacity(2);
    if let Some(host) = parsed.host_str() {
        attributes.push(KeyValue::new("server.address", host.to_owned()));
    }
    if let Some(port) = parsed.port_or_known_default() {
        attributes.push(KeyValue::new("server.port", i64::from(port)));
    }
    attributes
}

/// `gen_ai.response.model` and `gen_ai.response.id` of a provider's JSON
/// reply, where the provider names them.
#[must_use]
pub fn response_attributes(reply: &Value) -> Vec<KeyValue> {
    let text = |keys: &[&str]| keys.iter().find_map(|k| reply.get(*k)?.as_str().map(str::to_owned));
    let mut attributes = Vec::with_capacity(2);
    if let Some(model) = text(&["model", "modelVersion"]) {
        attributes.push(KeyValue::new("gen_ai.response.model", model));
    }
    if let Some(id) = text(&["id", "responseId"]) {
        attributes.push(KeyValue::new("gen_ai.response.id", id));
    }
    attributes
}

/// A list of strings as an attribute value.
#[must_use]
pub fn strings(items: Vec<String>) -> OtelValue {
    OtelValue::Array(
        items.into_iter().map(Into::into).collect::<Vec<opentelemetry::StringValue>>().into(),
    )
}

/// A JSON value as an attribute (the conventions' structured attributes
/// are JSON text in OTLP/HTTP).
#[must_use]
pub fn json_attribute(key: &'static str, value: &Value) -> KeyValue {
    KeyValue::new(key, value.to_string())
}

/// One text part of a GenAI message.
#[must_use]
pub fn text_part(text: &str) -> Value {
    json!({"type": "text", "content": text})
}

/// Notes how the last export request went, for [`shutdown`] to report.
fn note_export(failure: Option<String>) {
    *crate::sync::lock(&EXPORT_FAILURE) = failure;
}

/// The exporter's HTTP client: a reqwest client like the providers' (their
/// TLS, [`crate::http_client`]), on a small runtime of its own (the SDK
/// exports from its own thread, with no runtime around it).
#[derive(Debug)]
struct ExportClient {
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl ExportClient {
    fn new() -> Result<Self, String> {
        let http = crate::http_client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot create the OTLP exporter's HTTP client: {e}"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the OTLP exporter's runtime: {e}"))?;
        Ok(Self { http, runtime })
    }

    fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let url = request.uri().to_string();
        let result = self.runtime.block_on(async {
            let request = reqwest::Request::try_from(request)?;
            let response = self.http.execute(request).await?;
            let mut answer = Response::builder().status(response.status());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let body = response.bytes().await?;
            Ok::<_, HttpError>(answer.body(body)?)
        });
        note_export(match &result {
            Ok(response) if response.status().is_success() => None,
            Ok(response) => {
                Some(format!("the OTLP endpoint `{url}` answered {}", response.status()))
            }
            Err(e) => Some(format!("cannot export spans to `{url}`: {e}")),
        });
        result
    }
}

impl HttpClient for ExportClient {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        // The exporter's thread does nothing else: the request is sent here.
        Box::pin(std::future::ready(self.send(request)))
    }
}

/// The error type of a failed outcome kept by the stores: its diagnostic
/// code, else its HTTP status, else `failed`.
#[must_use]
pub fn failure_type(failure: &Value) -> Cow<'static, str> {
    if let Some(code) = failure.get("code").and_then(Value::as_str) {
        return Cow::Owned(code.to_owned());
    }
    match failure.get("status").and_then(Value::as_u64) {
        Some(status) => Cow::Owned(status.to_string()),
        None => Cow::Borrowed("failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a OtelValue> {
        attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
    }

    #[test]
    fn server_attributes_keep_host_and_port_only() {
        let attributes = server_attributes("https://api.example.com/v1/chat?key=secret");
        assert_eq!(attributes.len(), 2);
        assert_eq!(find(&attributes, "server.address"), Some(&OtelValue::from("api.example.com")));
        assert_eq!(find(&attributes, "server.port"), Some(&OtelValue::I64(443)));
        assert!(server_attributes("not a url").is_empty());
    }

    #[test]
    fn response_attributes_read_each_providers_names() {
        let openai = response_attributes(&json!({"id": "chatcmpl-1", "model": "gpt-4o-2024"}));
        assert_eq!(find(&openai, "gen_ai.response.model"), Some(&OtelValue::from("gpt-4o-2024")));
        assert_eq!(find(&openai, "gen_ai.response.id"), Some(&OtelValue::from("chatcmpl-1")));
        let gemini =
            response_attributes(&json!({"modelVersion": "gemini-2.5", "responseId": "r1"}));
        assert_eq!(find(&gemini, "gen_ai.response.model"), Some(&OtelValue::from("gemini-2.5")));
        assert_eq!(find(&gemini, "gen_ai.response.id"), Some(&OtelValue::from("r1")));
        assert!(response_attributes(&json!({"model": 3})).is_empty());
    }

    #[test]
    fn failure_types_are_codes_or_statuses() {
        assert_eq!(
            failure_type(&json!({"code": "ignite::tools::failed", "message": "x"})),
            "ignite::tools::failed"
        );
        assert_eq!(failure_type(&json!({"status": 429, "response": {}})), "429");
        assert_eq!(failure_type(&json!("boom")), "failed");
    }

    #[test]
    fn without_an_exporter_spans_are_empty() {
        // No test of this crate calls `init`: nothing is exported.
        let run = Span::run("Report", &RunSpan::default());
        assert!(!run.is_recording());
        let child = run.child(SpanKind::Internal, || unreachable!("not computed"), Vec::new);
        assert!(!child.is_recording());
        assert!(RunSpan::default().with(|| unreachable!("not computed")).attributes.is_empty());
    }
}
