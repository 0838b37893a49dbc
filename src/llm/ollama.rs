//! Ollama wire format (`POST {host}/api/chat`, `stream: false`).
//!
//! Request: the system prompt as the first message, assistant tool calls
//! with `function.arguments` as an *object*, tool results as
//! `{role: "tool", tool_name, content}`, `tools` in the OpenAI function
//! shape, sampling settings under `options` (`num_predict` is the token
//! limit), and for a structured `result` its JSON Schema as `format`. Reply: `message`, `done_reason`, `prompt_eval_count` and
//! `eval_count`. Ollama has no call ids: missing ones become `call_N`.
//! A user message's images go in its `images` (base64, in the prompt's
//! order; a large one a mark here, see `body.rs`) beside its text; Ollama takes no documents (`check` reports
//! one, and the agent fails before sending one that comes at run time).

use serde_json::{Map, Value, json};

use super::message::{
    Content, Echo, ModelReply, ModelRequest, Server, StopReason, ToolCall, ToolResult, Usage,
    object,
};
use super::openai::chat_messages;
use crate::tools::ToolView;

/// The kind's name in `.ign`.
pub const NAME: &str = crate::ir::ProviderKind::OLLAMA.name();

/// A tool as a `tools` entry, in the OpenAI function shape, its parameters
/// cut to the keys Ollama's tool model defines: `type`, `required`,
/// `properties` (each: `type`, `items`, `description`, `enum`) and `items`.
/// Anything else (`default`, `additionalProperties`, `format` ...) is left out.
#[must_use]
pub fn tool(view: &ToolView) -> Value {
    let parameters: Map<String, Value> = entries(&view.parameters)
        .filter_map(|(key, value)| match key.as_str() {
            "properties" => {
                let properties = entries(value)
                    .map(|(name, p)| (name.clone(), Value::Object(keep(p, PROPERTY_KEYS))))
                    .collect();
                Some((key.clone(), Value::Object(properties)))
            }
            "type" | "$defs" | "items" | "required" => Some((key.clone(), value.clone())),
            _ => None,
        })
        .collect();
    json!({"type": "function", "function": {"name": view.name, "description": view.description,
        "parameters": parameters}})
}

/// The keys of one property in Ollama's tool model.
const PROPERTY_KEYS: &[&str] = &["type", "items", "description", "enum"];

fn entries(value: &Value) -> impl Iterator<Item = (&String, &Value)> {
    value.as_object().into_iter().flatten()
}

/// The entries of object `value` named in `keys`, in `value`'s order.
fn keep(value: &Value, keys: &[&str]) -> Map<String, Value> {
    entries(value)
        .filter(|(k, _)| keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A user message: its text, and its images under `images` (documents
/// never reach here: the HTTP client refuses them for this kind).
fn user_message(content: &[Content]) -> Value {
    let images: Vec<Value> = content
        .iter()
        .filter_map(|piece| match piece {
            Content::Media(media) if media.is_image() => Some(media.in_body(false)),
            _ => None,
        })
        .collect();
    let text = super::message::text_of(content);
    if images.is_empty() {
        return json!({"role": "user", "content": text});
    }
    object([("role", "user".into()), ("content", text.into()), ("images", Value::Array(images))])
}

/// The request body for `request`.
#[must_use]
pub fn request_body(request: &ModelRequest, _: Server) -> Value {
    let assistant = |text: &str, calls: &[ToolCall], _: Option<&Echo>| {
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
    let messages = chat_messages(request, user_message, assistant, result);
    body.insert("messages".into(), Value::Array(messages));
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
    if let Some(result) = &request.result {
        body.insert("format".into(), result.schema.clone());
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
