//! Ollama wire format (`POST {host}/api/chat`, `stream: false`).
//!
//! Request: the system prompt as the first message, assistant tool calls
//! with `function.arguments` as an *object*, tool results as
//! `{role: "tool", tool_name, content}`, `tools` in the OpenAI function
//! shape, sampling settings under `options` (`num_predict` is the token
//! limit). Reply: `message`, `done_reason`, `prompt_eval_count` and
//! `eval_count`. Ollama has no call ids: missing ones become `call_N`.

use serde_json::{Map, Value, json};

use super::message::{ModelReply, ModelRequest, StopReason, ToolCall, ToolResult, Usage};
use super::openai::{self, chat_messages};
use crate::tools::ToolView;

/// The kind's name in `.ign`.
pub const NAME: &str = "ollama";

/// A tool as a `tools` entry, in the OpenAI function shape.
#[must_use]
pub fn tool(view: &ToolView) -> Value {
    openai::tool(view)
}

/// The request body for `request`.
#[must_use]
pub fn request_body(request: &ModelRequest) -> Value {
    let assistant = |text: &str, calls: &[ToolCall]| {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| json!({"function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        json!({"role": "assistant", "content": text, "tool_calls": calls})
    };
    let result =
        |r: &ToolResult| json!({"role": "tool", "tool_name": r.name, "content": r.content});
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Value::Array(chat_messages(request, assistant, result)));
    if !request.tools.is_empty() {
        body.insert("tools".into(), request.tools.iter().map(tool).collect());
    }
    body.insert("stream".into(), json!(false));
    let mut options = Map::new();
    if let Some(t) = request.temperature {
        options.insert("temperature".into(), json!(t));
    }
    if let Some(n) = request.max_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    if !options.is_empty() {
        body.insert("options".into(), Value::Object(options));
    }
    Value::Object(body)
}

/// Parses a 2xx reply body.
///
/// # Errors
/// When the body is not a chat reply; the text says what is missing.
pub fn parse_reply(body: &Value) -> Result<ModelReply, String> {
    let message = body.get("message").ok_or("reply has no `message`")?;
    let text = message.get("content").and_then(Value::as_str).unwrap_or("").to_owned();
    let mut tool_calls = Vec::new();
    let calls = message.get("tool_calls").and_then(Value::as_array);
    for (i, call) in calls.into_iter().flatten().enumerate() {
        let function = call.get("function").ok_or("tool call without `function`")?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or("tool call without `function.name`")?;
        let arguments = match function.get("arguments") {
            Some(Value::String(raw)) => {
                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()))
            }
            Some(other) => other.clone(),
            None => json!({}),
        };
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("call_{}", i + 1), str::to_owned);
        tool_calls.push(ToolCall { id, name: name.to_owned(), arguments });
    }
    let stop = match body.get("done_reason").and_then(Value::as_str) {
        Some("length") => StopReason::MaxTokens,
        _ if !tool_calls.is_empty() => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_owned()),
    };
    let usage = Usage::from_fields(Some(body), "prompt_eval_count", "eval_count");
    Ok(ModelReply { text, tool_calls, stop, usage, echo: None })
}
