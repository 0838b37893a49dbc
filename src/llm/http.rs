//! [`HttpModel`]: a [`ModelClient`] over reqwest for one [`Endpoint`].
//!
//! One call = up to `retries + 1` attempts, each with the endpoint's
//! timeout. Connection errors, timeouts, 408, 409, 429 and 5xx are retried
//! after a [`Backoff`] delay (or `retry-after`); other statuses fail at
//! once. Every attempt is traced (`retry`, `ok`, `failed`) and is one
//! effect (see [`crate::effects`]): a store may answer it (a replay, a
//! resumed journal) and every store keeps what the network answered.
//! When a store answers everything, nobody sleeps before a retry.
//! An attempt that goes to the network first waits for the declaration's
//! limiter (`rate_limit`, `token_limit`; see `limits.rs`), and its reply's
//! usage settles the token estimate it took. Before that, the run's
//! budgets admit it (see [`crate::budget`]): past one it is not sent.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::body::{Pieces, RequestBody};
use super::client::{BoxFuture, CallContext, ModelClient};
use super::error::LlmError;
use super::limits::estimate_tokens;
use super::message::{ModelReply, ModelRequest};
use super::providers::Auth;
use super::retry::{Backoff, parse_retry_after, retryable_status};
use super::settings::Endpoint;
use super::{semconv, wire};
use crate::effects::{self, Attachment, Effect, EffectError, EffectKind, Work};
use crate::telemetry::{self, Span};
use crate::usage::ModelCall;

/// What every HTTP provider of one [`Llm`](super::Llm) shares.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    /// The connection pool, built by the first request (a run without
    /// agents never builds it), or why it could not be built.
    pub(crate) http: Arc<OnceLock<Result<reqwest::Client, String>>>,
    pub(crate) backoff: Backoff,
    /// The size limit of a reply body.
    pub(crate) max_bytes: usize,
}

/// The connection pool of a [`Shared`]: redirects only within the
/// request's origin.
fn client() -> Result<reqwest::Client, String> {
    crate::http_client::builder()
        .redirect(crate::tools::http::redirect_policy(crate::tools::http::Follow::Any))
        .build()
        .map_err(|e| e.to_string())
}

/// One endpoint's client.
#[derive(Debug)]
pub(crate) struct HttpModel {
    pub(crate) endpoint: Endpoint,
    pub(crate) shared: Shared,
    /// The agent's index in the program and the link's in its chain: how
    /// a durable journal's worker finds this endpoint again ([`Work::Model`]).
    pub(crate) origin: (u32, u32),
    /// The URL of the first request, as text and parsed: the next
    /// requests (an agent's turns) go to it too, and are not parsed again.
    pub(crate) url: OnceLock<(String, reqwest::Url)>,
}

/// Why an attempt has no response to keep.
enum Unkept {
    /// Nothing came back (connection, timeout): retried, never recorded.
    Transport(String),
    /// The attempt cannot go on (no client, a reply over the size limit).
    Error(LlmError),
}

impl std::fmt::Display for Unkept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(message) => f.write_str(message),
            Self::Error(error) => write!(f, "{error}"),
        }
    }
}

/// A reply's body as a store keeps it: the JSON it parsed as, or its text.
enum Reply {
    Json(Value),
    Text(String),
}

impl Reply {
    /// The body as text.
    fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Self::Json(json) => json.to_string().into(),
            Self::Text(text) => text.into(),
        }
    }
}

/// The result of one attempt.
enum Outcome {
    /// A response; `live` when it came from the network (not from a store).
    Response {
        status: u16,
        body: Reply,
        retry_after: Option<std::time::Duration>,
        live: bool,
    },
    Transport(String),
}

impl ModelClient for HttpModel {
    fn provider(&self) -> &str {
        &self.endpoint.label
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cx: CallContext<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, LlmError>> {
        Box::pin(self.call(request, cx))
    }
}

impl HttpModel {
    async fn call(
        &self,
        request: &ModelRequest,
        cx: CallContext<'_>,
    ) -> Result<ModelReply, LlmError> {
        if let Some(kind) = request.media_kinds().find(|&k| !self.endpoint.kind.takes(k)) {
            return Err(LlmError::config(format!(
                "agent `{}` sends {} {} to provider `{}`, whose kind `{}` takes none: \
                 use a provider kind that does (`anthropic`, `openai`, `gemini`)",
                cx.agent,
                if kind == crate::media::Kind::Image { "an" } else { "a" },
                kind.name(),
                self.endpoint.label,
                self.endpoint.kind.name(),
            )));
        }
        let body = wire::request(self.endpoint.kind, request, self.endpoint.server());
        let url = self.endpoint.url(&request.model);
        let attempts = self.endpoint.retries.saturating_add(1);
        let trace_path = format!("{} > model", cx.path);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let started = Instant::now();
            let detail = format!(
                "provider {}, model {}, attempt {attempt}/{attempts}",
                self.endpoint.label, request.model
            );
            let span =
                semconv::chat_span(cx.scope.span(), self.endpoint.kind.name(), request, &url);
            let sent = self.send(&body, &url, cx, &span).await;
            // Every way out of this attempt ends its span.
            let (status, message, retryable, retry_after) = match sent.inspect_err(|e| {
                span.end(Some(e.code().as_str()));
            })? {
                Outcome::Response { status, body, live, .. } if (200..300).contains(&status) => {
                    let parsed = match &body {
                        Reply::Json(json) => wire::parse_reply_json(self.endpoint.kind, json),
                        Reply::Text(text) => wire::parse_reply(self.endpoint.kind, text),
                    };
                    return match parsed {
                        Ok(reply) => {
                            let usage = reply.usage;
                            let call = ModelCall {
                                provider: &self.endpoint.label,
                                model: &request.model,
                                usage,
                                price: self.endpoint.price,
                                reused: !live,
                            };
                            let detail = detail + &usage.cache_note() + &usage.thinking_note();
                            cx.trace.record_model(&trace_path, started, detail, &call);
                            semconv::note_reply(&span, &reply);
                            span.end(None);
                            Ok(reply)
                        }
                        Err(message) => {
                            let note = format!("{detail}, malformed reply: {message}");
                            cx.trace.record(&trace_path, "model", "failed", started, note);
                            span.end(Some("malformed_reply"));
                            Err(LlmError::Malformed {
                                provider: self.endpoint.label.clone(),
                                message,
                            })
                        }
                    };
                }
                Outcome::Response { status, body, retry_after, .. } => (
                    Some(status),
                    wire::error_message(&body.text()),
                    retryable_status(status),
                    retry_after,
                ),
                Outcome::Transport(message) => {
                    span.fail("transport");
                    (None, message, true, None)
                }
            };
            span.end(None);
            let what = status.map_or_else(|| message.clone(), |s| format!("status {s}: {message}"));
            if retryable && attempt < attempts {
                cx.trace.record(
                    &trace_path,
                    "model",
                    "retry",
                    started,
                    format!("{detail}, {what}"),
                );
                if !cx.scope.effects().offline() {
                    tokio::time::sleep(self.shared.backoff.delay(attempt - 1, retry_after)).await;
                }
                continue;
            }
            cx.trace.record(&trace_path, "model", "failed", started, format!("{detail}, {what}"));
            return Err(LlmError::Provider {
                provider: self.endpoint.label.clone(),
                status,
                message,
                attempts: attempt,
            });
        }
    }

    /// One attempt to `url`, as an effect: from a store, a durable
    /// journal's step, or the network (see [`HttpModel::attempt`]).
    async fn send(
        &self,
        body: &RequestBody,
        url: &str,
        cx: CallContext<'_>,
        span: &Span,
    ) -> Result<Outcome, LlmError> {
        let endpoint = &self.endpoint;
        let key = cx.scope.next_key();
        let journaled = cx.scope.effects().journaled();
        let work = journaled.then(|| Work::Model {
            agent: self.origin.0,
            link: self.origin.1,
            url: url.to_owned(),
            body: body.expanded(),
        });
        let effect = Effect {
            key: &key,
            kind: EffectKind::Model,
            name: &endpoint.label,
            route: url,
            request: &body.json,
            definition: None,
            cache: None,
            work: work.as_ref(),
            media: &body.media,
        };
        // A journal's step is spent by this run, wherever it ran: the
        // run's budgets admit it before it is asked for (a replay counts
        // it again in a run that starts counting afresh, so once).
        if journaled {
            cx.trace.admit_model_request()?;
        }
        let mut live = journaled;
        let work = async {
            // Past the run's budget the request is not sent.
            cx.trace.admit_model_request().map_err(Unkept::Error)?;
            live = true;
            self.attempt(&body.json, &body.media, url, Some((cx.trace, cx.path))).await
        };
        let mut response = match cx.scope.perform(&effect, span, work).await {
            Ok(effects::Outcome::Value(r) | effects::Outcome::Failed(r)) => r,
            // A journal keeps a transport failure as a failed step.
            Err(EffectError::Live(Unkept::Transport(message)) | EffectError::Journal(message)) => {
                return Ok(Outcome::Transport(message));
            }
            Err(EffectError::Live(Unkept::Error(error))) => return Err(error),
            Err(EffectError::Refused(hint)) => {
                return Err(LlmError::Replay {
                    agent: Some(cx.agent.to_owned()),
                    provider: Some(endpoint.label.clone()),
                    hint,
                });
            }
            Err(EffectError::Store(message)) => return Err(LlmError::Store { message }),
        };
        span.set(|| telemetry::response_attributes(&response["response"]));
        let status = response["status"].as_u64().and_then(|s| u16::try_from(s).ok()).unwrap_or(0);
        let body = match response.get_mut("response").map(Value::take).unwrap_or_default() {
            Value::Null => {
                Reply::Text(response["response_text"].as_str().unwrap_or_default().to_owned())
            }
            json => Reply::Json(json),
        };
        let retry_after =
            response["retry_after"].as_f64().and_then(|s| Duration::try_from_secs_f64(s).ok());
        Ok(Outcome::Response { status, body, retry_after, live })
    }

    /// One attempt to `url` over the network with `body` (its marks
    /// standing for `media`), once the declaration's
    /// limiter lets a request of `body`'s estimated tokens start (a wait is
    /// noted in `trace` at `path > model`): the status and the reply (with
    /// the key redacted) and its `retry-after` delay as stores keep them.
    /// A 2xx reply's usage settles the estimate. The live work of a model
    /// exchange, here or on a durable journal's worker.
    ///
    /// # Errors
    /// Nothing came back, or the attempt cannot go on.
    async fn attempt(
        &self,
        body: &Value,
        media: &[Attachment],
        url: &str,
        trace: Option<(&crate::trace::Trace, &str)>,
    ) -> Result<effects::Outcome, Unkept> {
        let endpoint = &self.endpoint;
        let limiter = endpoint.limiter.as_deref();
        let body = Pieces::of(body, media);
        let estimate =
            limiter.filter(|l| l.counts_tokens()).map_or(0, |_| estimate_tokens(body.len()));
        if let Some(limiter) = limiter {
            let started = Instant::now();
            let waited = limiter.acquire(estimate).await;
            if let (Some((trace, path)), true) = (trace, waited >= Duration::from_millis(1)) {
                let detail = format!("provider {}, limits of the declaration", endpoint.label);
                trace.record(format!("{path} > model"), "limit", "wait", started, detail);
            }
        }
        let (status, text, retry_after) = self.post(body, url).await?;
        let ok = (200..300).contains(&status);
        if let (Some(limiter), true) = (limiter, ok) {
            if let Ok(reply) = wire::parse_reply(endpoint.kind, &text) {
                limiter.settle(estimate, reply.usage.input_tokens + reply.usage.output_tokens);
            }
        }
        let mut response = match serde_json::from_str::<Value>(&text) {
            Ok(json) => json!({"status": status, "response": json}),
            Err(_) => json!({"status": status, "response_text": text}),
        };
        if let Some(after) = retry_after {
            response["retry_after"] = json!(after.as_secs_f64());
        }
        Ok(if ok { effects::Outcome::Value(response) } else { effects::Outcome::Failed(response) })
    }

    /// [`HttpModel::attempt`] as a journal's worker does it: the outcome,
    /// or the failure as a message.
    pub(crate) async fn perform(
        &self,
        body: &Value,
        url: &str,
    ) -> Result<effects::Outcome, String> {
        self.attempt(body, &[], url, None).await.map_err(|e| e.to_string())
    }

    /// Posts `body` to `url`: the status, the body with the key redacted
    /// and the `retry-after` delay.
    async fn post(
        &self,
        body: Pieces,
        url: &str,
    ) -> Result<(u16, String, Option<std::time::Duration>), Unkept> {
        let endpoint = &self.endpoint;
        let client = self.shared.http.get_or_init(client).as_ref().map_err(|e| {
            Unkept::Error(LlmError::config(format!("the HTTP client could not be created: {e}")))
        })?;
        let request = match self.parsed(url) {
            Some(url) => client.post(url),
            // reqwest says what is wrong with it.
            None => client.post(url),
        };
        let mut builder = request
            .timeout(endpoint.timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.into_body());
        for (name, value) in self.headers() {
            builder = builder.header(name, value);
        }
        let response = builder.send().await.map_err(|e| Unkept::Transport(self.describe(&e)))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let location = crate::tools::http::location(&response);
        // Redacted before anything reads it: an echoed key never reaches an
        // error (clipped or not), an answer, the next request or a recording.
        let what = format!("the reply of provider `{}`", endpoint.label);
        let text = match crate::tools::http::read_body(response, self.shared.max_bytes, &what).await
        {
            Ok(Ok(text)) => self.redact(&text),
            Ok(Err(too_big)) => {
                return Err(Unkept::Error(LlmError::Malformed {
                    provider: endpoint.label.clone(),
                    message: too_big,
                }));
            }
            Err(e) => return Err(Unkept::Transport(self.describe(&e))),
        };
        let text = crate::tools::http::refused_redirect(status, location.as_deref())
            .map_or(text, |note| self.redact(&note));
        Ok((status, text, retry_after))
    }

    /// `url` parsed, from the first request's when it is the same.
    fn parsed(&self, url: &str) -> Option<reqwest::Url> {
        match self.url.get() {
            Some((text, parsed)) if text == url => Some(parsed.clone()),
            Some(_) => reqwest::Url::parse(url).ok(),
            None => {
                let parsed = reqwest::Url::parse(url).ok()?;
                Some(self.url.get_or_init(|| (url.to_owned(), parsed)).1.clone())
            }
        }
    }

    /// The kind's fixed headers, then the key as the kind sends it.
    fn headers(&self) -> Vec<(&'static str, String)> {
        let spec = self.endpoint.kind.spec();
        let mut headers: Vec<(&'static str, String)> =
            spec.headers.iter().map(|&(name, value)| (name, value.to_owned())).collect();
        match &self.endpoint.key {
            Some((key, Auth::Bearer)) => {
                headers.push(("authorization", format!("Bearer {}", key.expose())));
            }
            Some((key, Auth::Header(name))) => headers.push((name, key.expose().to_owned())),
            None => {}
        }
        headers
    }

    fn describe(&self, error: &reqwest::Error) -> String {
        if error.is_timeout() {
            return format!("timed out after {}s", self.endpoint.timeout.as_secs_f64());
        }
        let what = if error.is_connect() { "connection failed" } else { "request failed" };
        self.redact(&format!("{what}{}", crate::tools::http::causes(error)))
    }

    /// Removes the key from server text, in case a server echoes it. Every
    /// text a server sends passes here first (see [`HttpModel::send`]).
    fn redact(&self, text: &str) -> String {
        match &self.endpoint.key {
            Some((key, _)) if key.expose().len() >= 4 => text.replace(key.expose(), "***"),
            _ => text.to_owned(),
        }
    }
}
