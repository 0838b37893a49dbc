//! OpenAI Chat Completions wire format (`POST {base}/chat/completions`),
//! also spoken by compatible servers (vLLM, llama.cpp, LM Studio, ...).
//!
//! Request: the system prompt as the first message, assistant tool calls as
//! `tool_calls` whose `arguments` is a JSON *string*, one `role: "tool"`
//! message per result, `tools` in the `{type: "function", function}` shape,
//! the token limit as `max_completion_tokens` at the official base URL and
//! for reasoning models (`o1`, `o3`, `o4-mini`, `gpt-5` ...) anywhere, else
//! `max_tokens` (the name compatible servers understand), and for a
//! structured `result` a `response_format` of `type: "json_schema"` with the
//! schema in strict form ([`strict_schema`]). Reply:
//! `choices[0].message`, `finish_reason`, `usage`. A user message with
//! images or documents is a list of parts in the prompt's order: `text`,
//! `image_url` (a `data:` URL) and `file` (`file_data`, a `data:` URL); a
//! large one's base64 is a mark here, spliced in when sent (see `body.rs`).

use serde_json::{Map, Value, json};

use super::message::{
    Content, Echo, Message, ModelReply, ModelRequest, Server, StopReason, ToolCall, ToolResult,
    Usage, count, object,
};
use crate::tools::{ToolView, strict_schema};

/// The kind's name in `.ign`.
pub const NAME: &str = crate::ir::ProviderKind::OPENAI.name();

/// A tool as a `tools` entry: `{type: "function", function: {name, description,
/// parameters, strict}}`, the parameters written for strict mode
/// ([`strict_schema`]) and `strict: true` when every param type can be.
#[must_use]
pub fn tool(view: &ToolView) -> Value {
    let (parameters, strict) = strict_schema(&view.parameters);
    json!({
        "type": "function",
        "function": {
            "name": view.name,
            "description": view.description,
            "parameters": parameters,
            "strict": strict,
        },
    })
}

/// The request body for `request` sent to `server`.
#[must_use]
pub fn request_body(request: &ModelRequest, server: Server) -> Value {
    let assistant = |text: &str, calls: &[ToolCall], echo: Option<&Echo>| {
        if let Some(turn) = Echo::for_kind(echo, NAME) {
            return turn.clone();
        }
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": arguments_text(&c.arguments)}})
            })
            .collect();
        let content = if text.is_empty() { Value::Null } else { json!(text) };
        json!({"role": "assistant", "content": content, "tool_calls": calls})
    };
    let result =
        |r: &ToolResult| json!({"role": "tool", "tool_call_id": r.id, "content": r.content});
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    let messages = chat_messages(request, user_message, assistant, result);
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        body.insert("tools".into(), request.tools.iter().map(tool).collect());
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = request.max_tokens {
        let name = match server {
            Server::Official => "max_completion_tokens",
            Server::Compatible if reasoning_model(&request.model) => "max_completion_tokens",
            Server::Compatible => "max_tokens",
        };
        body.insert(name.into(), json!(n));
    }
    if let Some(result) = &request.result {
        let (schema, strict) = strict_schema(&result.schema);
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema",
                "json_schema": {"name": result.name, "strict": strict, "schema": schema}}),
        );
    }
    Value::Object(body)
}

/// The reasoning-model families, which take `max_completion_tokens` and not
/// `max_tokens` wherever they are served.
const REASONING_FAMILIES: [&str; 4] = ["o1", "o3", "o4", "gpt-5"];

/// True for a model of a [`REASONING_FAMILIES`] family: the family name
/// alone or followed by `-` or `.` (`o4-mini`, `gpt-5.1`), after any
/// `vendor/` prefix a router adds (`openai/o3`).
fn reasoning_model(model: &str) -> bool {
    let model = model.rsplit('/').next().unwrap_or(model);
    REASONING_FAMILIES.iter().any(|family| {
        model
            .strip_prefix(family)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-') || rest.starts_with('.'))
    })
}

/// The `messages` of the chat formats (OpenAI, Ollama): the system prompt
/// first, then the conversation. What differs between them is passed in:
/// how an assistant turn with tool calls and how one tool result look.
pub(super) fn chat_messages(
    request: &ModelRequest,
    user: impl Fn(&[Content]) -> Value,
    assistant: impl Fn(&str, &[ToolCall], Option<&Echo>) -> Value,
    result: impl Fn(&ToolResult) -> Value,
) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = &request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        match message {
            Message::User(content) => out.push(user(content)),
            Message::Assistant { text, tool_calls, .. } if tool_calls.is_empty() => {
                out.push(json!({"role": "assistant", "content": text}));
            }
            Message::Assistant { text, tool_calls, echo } => {
                out.push(assistant(text, tool_calls, echo.as_ref()));
            }
            Message::ToolResults(results) => out.extend(results.iter().map(&result)),
        }
    }
    out
}

/// A user message: its text alone as a string, else parts in order.
fn user_message(content: &[Content]) -> Value {
    if let [Content::Text(text)] = content {
        return json!({"role": "user", "content": text});
    }
    let mut documents = 0;
    let parts: Vec<Value> = content
        .iter()
        .map(|piece| match piece {
            Content::Text(text) => json!({"type": "text", "text": text}),
            Content::Media(media) if media.is_image() => object([
                ("type", "image_url".into()),
                ("image_url", object([("url", media.in_body(true))])),
            ]),
            Content::Media(media) => {
                documents += 1;
                let filename = format!("document-{documents}.pdf");
                let file =
                    object([("filename", filename.into()), ("file_data", media.in_body(true))]);
                object([("type", "file".into()), ("file", file)])
            }
        })
        .collect();
    object([("role", "user".into()), ("content", Value::Array(parts))])
}

/// Arguments as the string OpenAI expects: text the model sent as is, else JSON.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// Parses a 2xx reply body.
///
/// # Errors
/// When the body is not a chat completion; the text says what is missing.
pub fn parse_reply(body: &Value) -> Result<ModelReply, String> {
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or("reply has no `choices`")?;
    let message = choice.get("message").ok_or("reply has no `choices[0].message`")?;
    let mut text = message.get("content").and_then(Value::as_str).unwrap_or("").to_owned();
    let mut tool_calls = Vec::new();
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let function = call.get("function").ok_or("tool call without `function`")?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or("tool call without `function.name`")?;
        let id = call.get("id").and_then(Value::as_str).ok_or("tool call without `id`")?;
        let arguments = match function.get("arguments") {
            Some(Value::String(raw)) => {
                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()))
            }
            Some(other) => other.clone(),
            None => json!({}),
        };
        tool_calls.push(ToolCall { id: id.to_owned(), name: name.to_owned(), arguments });
    }
    let refusal = message.get("refusal").and_then(Value::as_str).filter(|r| !r.is_empty());
    let stop = match choice.get("finish_reason").and_then(Value::as_str) {
        _ if refusal.is_some() => StopReason::Blocked("refusal".to_owned()),
        Some("stop") | None => StopReason::EndTurn,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Blocked("content_filter".to_owned()),
        Some(other) => StopReason::Other(other.to_owned()),
    };
    if let Some(refusal) = refusal {
        text = refusal.to_owned();
    }
    let mut usage = Usage::from_fields(body.get("usage"), "prompt_tokens", "completion_tokens");
    usage.cache_read_tokens = count(body.get("usage"), "/prompt_tokens_details/cached_tokens");
    // Already in `completion_tokens`; kept apart to show.
    usage.thinking_tokens = count(body.get("usage"), "/completion_tokens_details/reasoning_tokens");
    // The calls go back exactly as sent: `arguments` byte for byte.
    let echo = message.get("tool_calls").filter(|_| !tool_calls.is_empty()).map(|calls| Echo {
        kind: NAME,
        content: json!({"role": "assistant", "content": message.get("content").cloned()
            .unwrap_or(Value::Null), "tool_calls": calls}),
    });
    Ok(ModelReply { text, tool_calls, stop, usage, echo })
}
