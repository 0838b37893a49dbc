//! [`ScriptModel`]: scripted replies from a JSON file, offline
//! (`provider script "fixtures/assistant.json"`).
//!
//! The file is a JSON array; each request of one agent run takes the next
//! element (every run starts at the first):
//!
//! ```json
//! [
//!   {"tool_calls": [{"id": "call_1", "name": "database_lookup", "arguments": {"sku": "SKU-001"}}],
//!    "text": "optional text next to the calls"},
//!   {"text": "Widget Pro costs $29.99.", "usage": {"input_tokens": 120, "output_tokens": 9}}
//! ]
//! ```
//!
//! Fields of a reply, all optional: `text` (default `""`); `tool_calls`,
//! each with `name`, `arguments` (default `{}`) and `id` (default `call_N`,
//! N counting calls of the reply from 1); `usage` (`input_tokens`,
//! `output_tokens`, default 0); `stop_reason` (`end_turn`, `tool_use`,
//! `max_tokens` or `refusal`, default `tool_use` when there are calls, else
//! `end_turn`);
//! `error` — a message that makes this request fail like a provider error
//! (to exercise fallbacks); `when` — a text: the reply answers only a
//! request whose last user message (the prompt, or a repair request)
//! contains it, so one script serves several inputs. A request takes the
//! first reply after the last one taken whose `when` is absent or fits;
//! replies skipped for their `when` are not taken later. Unknown fields
//! are errors.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use serde::Deserialize;
use serde_json::Value;

use super::client::{BoxFuture, CallContext, ModelClient};
use super::error::LlmError;
use super::message::{Message, ModelReply, ModelRequest, StopReason, ToolCall, Usage};
use crate::usage::ModelCall;

/// One scripted reply.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptReply {
    #[serde(default)]
    text: String,
    #[serde(default)]
    tool_calls: Vec<ScriptCall>,
    #[serde(default)]
    usage: Option<ScriptUsage>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    when: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default = "empty_object")]
    arguments: Value,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Scripted replies for one agent run.
#[derive(Debug)]
pub(crate) struct ScriptModel {
    path: PathBuf,
    replies: Vec<ScriptReply>,
    /// Where the search for the next reply starts.
    next: Mutex<usize>,
}

impl ScriptModel {
    /// Reads and checks the script file (off the async threads).
    pub(crate) async fn load(path: PathBuf) -> Result<Self, LlmError> {
        let read_path = path.clone();
        let text = tokio::task::spawn_blocking(move || std::fs::read_to_string(read_path))
            .await
            .map_err(|e| script_error(&path, e.to_string()))?
            .map_err(|e| script_error(&path, e.to_string()))?;
        Self::parse(path, &text)
    }

    /// Checks script `text` read from `path`.
    pub(crate) fn parse(path: PathBuf, text: &str) -> Result<Self, LlmError> {
        let replies: Vec<ScriptReply> = serde_json::from_str(text)
            .map_err(|e| script_error(&path, format!("not a list of replies: {e}")))?;
        for (i, reply) in replies.iter().enumerate() {
            if let Some(stop) = &reply.stop_reason {
                if !matches!(stop.as_str(), "end_turn" | "tool_use" | "max_tokens" | "refusal") {
                    let message = format!("reply {}: unknown `stop_reason` `{stop}`", i + 1);
                    return Err(script_error(&path, message));
                }
            }
        }
        Ok(Self { path, replies, next: Mutex::new(0) })
    }

    fn reply(&self, cx: CallContext<'_>, request: &ModelRequest) -> Result<ModelReply, LlmError> {
        let started = Instant::now();
        let model = request.model.as_str();
        let said = request.messages.iter().rev().find_map(|m| match m {
            Message::User(content) => Some(super::message::text_of(content)),
            _ => None,
        });
        let fits = |reply: &ScriptReply| {
            reply
                .when
                .as_deref()
                .is_none_or(|when| said.as_deref().is_some_and(|s| s.contains(when)))
        };
        // A scripted reply stands for a request: the run's budgets admit it.
        cx.trace.admit_model_request()?;
        let mut next = crate::sync::lock(&self.next);
        let found = self.replies.iter().enumerate().skip(*next).find(|(_, r)| fits(r));
        let index = found.map_or(self.replies.len(), |(i, _)| i);
        *next = index + 1;
        drop(next);
        let trace_path = format!("{} > model", cx.path);
        let detail = format!("provider script, model {model}, reply {}", index + 1);
        let Some((_, reply)) = found else {
            cx.trace.record(&trace_path, "model", "failed", started, detail);
            let fitting = if self.replies.iter().any(|r| r.when.is_some()) {
                " that fit the message (by `when`)"
            } else {
                ""
            };
            let message = format!(
                "ran out of replies{fitting} after {} (agent `{}`)",
                self.replies.len(),
                cx.agent
            );
            return Err(script_error(&self.path, message));
        };
        if let Some(message) = &reply.error {
            cx.trace.record(
                &trace_path,
                "model",
                "failed",
                started,
                format!("{detail}, {message}"),
            );
            return Err(LlmError::Provider {
                provider: "script".to_owned(),
                status: None,
                message: message.clone(),
                attempts: 1,
            });
        }
        let tool_calls: Vec<ToolCall> = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: c.id.clone().unwrap_or_else(|| format!("call_{}", i + 1)),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        let stop = match reply.stop_reason.as_deref() {
            Some("max_tokens") => StopReason::MaxTokens,
            Some("refusal") => StopReason::Blocked("refusal".to_owned()),
            Some("end_turn") => StopReason::EndTurn,
            Some(_) => StopReason::ToolUse,
            None if tool_calls.is_empty() => StopReason::EndTurn,
            None => StopReason::ToolUse,
        };
        let usage = reply.usage.map_or_else(Usage::default, |u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            ..Usage::default()
        });
        let call = ModelCall { provider: "script", model, usage, price: None, reused: false };
        cx.trace.record_model(&trace_path, started, detail, &call);
        Ok(ModelReply { text: reply.text.clone(), tool_calls, stop, usage, echo: None })
    }
}

impl ModelClient for ScriptModel {
    fn provider(&self) -> &str {
        "script"
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cx: CallContext<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, LlmError>> {
        Box::pin(async move { self.reply(cx, request) })
    }
}

fn script_error(path: &std::path::Path, message: String) -> LlmError {
    LlmError::Script { path: path.to_owned(), message }
}
