//! Anthropic Messages API wire format (`POST {base}/v1/messages`).
//!
//! Request: top-level `system`, `messages` whose assistant tool calls are
//! `tool_use` blocks and whose tool results are one user message of
//! `tool_result` blocks (`is_error` on failures), `tools` with
//! `input_schema`, the required `max_tokens` (the agent's, else 4096) and no
//! sampling settings (the API no longer takes `temperature`, `top_p` or
//! `top_k`; `check` warns about a `temperature`); a structured `result` is asked
//! for with structured outputs, `output_config: {format: {type:
//! "json_schema", schema}}` (generally available, no beta header; see
//! docs/language.md for why not a forced tool). Reply: `content` blocks
//! (`text`, `tool_use`, and `thinking` / `redacted_thinking` blocks, which
//! go back unchanged, signatures included, as the assistant turn of the
//! next request), `stop_reason` (`refusal` is a block, `pause_turn` a turn
//! to continue, unknown ones fail), `usage` (cache writes and reads count in
//! the input total). A user message with images or documents is a list of
//! blocks in the prompt's order: `text`, `image` and `document`, each with a
//! `base64` source.

use serde_json::{Map, Value, json};

use super::message::{
    Content, Echo, Message, ModelReply, ModelRequest, Server, StopReason, ToolCall, Usage, count,
    object,
};
use crate::tools::ToolView;

/// The kind's name in `.ign`.
pub const NAME: &str = crate::ir::ProviderKind::ANTHROPIC.name();

/// `max_tokens` sent when the agent sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The API version header value.
pub(crate) const VERSION: &str = "2023-06-01";

/// A tool as a `tools` entry: `{name, description, input_schema}`.
#[must_use]
pub fn tool(view: &ToolView) -> Value {
    json!({"name": view.name, "description": view.description, "input_schema": view.parameters})
}

/// The request body for `request`.
#[must_use]
pub fn request_body(request: &ModelRequest, _: Server) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("max_tokens".into(), json!(request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)));
    if let Some(system) = &request.system {
        body.insert("system".into(), json!(system));
    }
    body.insert("messages".into(), request.messages.iter().map(message).collect());
    if !request.tools.is_empty() {
        body.insert("tools".into(), request.tools.iter().map(tool).collect());
    }
    if let Some(result) = &request.result {
        body.insert(
            "output_config".into(),
            json!({"format": {"type": "json_schema", "schema": result.schema}}),
        );
    }
    Value::Object(body)
}

/// A user message's content: its text alone as a string, else blocks in
/// order (`text`, and `image` or `document` with a base64 source).
fn user_content(content: &[Content]) -> Value {
    if let [Content::Text(text)] = content {
        return json!(text);
    }
    content
        .iter()
        .map(|piece| match piece {
            Content::Text(text) => json!({"type": "text", "text": text}),
            Content::Media(media) => {
                let source = object([
                    ("type", "base64".into()),
                    ("media_type", media.format.media_type.into()),
                    ("data", media.data.as_str().into()),
                ]);
                let kind = if media.is_image() { "image" } else { "document" };
                object([("type", kind.into()), ("source", source)])
            }
        })
        .collect()
}

fn message(message: &Message) -> Value {
    match message {
        Message::User(content) => {
            object([("role", "user".into()), ("content", user_content(content))])
        }
        Message::Assistant { echo, .. } if Echo::for_kind(echo.as_ref(), NAME).is_some() => {
            json!({"role": "assistant", "content": Echo::for_kind(echo.as_ref(), NAME)})
        }
        Message::Assistant { text, tool_calls, .. } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": text})
        }
        Message::Assistant { text, tool_calls, .. } => {
            let mut blocks = Vec::new();
            if !text.is_empty() {
                blocks.push(json!({"type": "text", "text": text}));
            }
            for call in tool_calls {
                let input = match &call.arguments {
                    Value::Object(_) => call.arguments.clone(),
                    _ => json!({}),
                };
                blocks.push(
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                );
            }
            json!({"role": "assistant", "content": blocks})
        }
        Message::ToolResults(results) => {
            let blocks: Vec<Value> = results
                .iter()
                .map(|r| {
                    let mut block =
                        json!({"type": "tool_result", "tool_use_id": r.id, "content": r.content});
                    if r.is_error {
                        block["is_error"] = json!(true);
                    }
                    block
                })
                .collect();
            json!({"role": "user", "content": blocks})
        }
    }
}

/// Parses a 2xx reply body.
///
/// # Errors
/// When the body is not a Messages API reply; the text says what is missing.
pub fn parse_reply(body: &Value) -> Result<ModelReply, String> {
    let blocks =
        body.get("content").and_then(Value::as_array).ok_or("reply has no `content` array")?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let field = |name: &str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or(format!("`tool_use` block without `{name}`"))
                };
                tool_calls.push(ToolCall {
                    id: field("id")?,
                    name: field("name")?,
                    arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
                });
            }
            _ => {}
        }
    }
    let stop = match body.get("stop_reason").and_then(Value::as_str) {
        Some("end_turn" | "stop_sequence") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("pause_turn") => StopReason::PauseTurn,
        Some("refusal") => StopReason::Blocked("refusal".to_owned()),
        Some(other) => StopReason::Other(other.to_owned()),
    };
    let usage = body.get("usage");
    let (cache_write, cache_read) =
        (count(usage, "cache_creation_input_tokens"), count(usage, "cache_read_input_tokens"));
    let usage = Usage {
        input_tokens: count(usage, "input_tokens") + cache_write + cache_read,
        output_tokens: count(usage, "output_tokens"),
        cache_write_tokens: cache_write,
        cache_read_tokens: cache_read,
        ..Usage::default()
    };
    // The blocks go back as they came: thinking and redacted_thinking blocks
    // (signatures included) must precede the tool_use blocks they led to.
    let echo = Some(Echo { kind: NAME, content: Value::Array(blocks.clone()) });
    Ok(ModelReply { text, tool_calls, stop, usage, echo })
}
