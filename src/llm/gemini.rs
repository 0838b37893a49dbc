//! Google Gemini `generateContent` wire format
//! (`POST {base}/v1beta/models/{model}:generateContent`, key in `x-goog-api-key`).
//!
//! Request: the system prompt as `systemInstruction`, `contents` of `user`
//! and `model` turns made of `parts` (`text`, `functionCall {name, args}`,
//! `functionResponse {name, response}`; a failed call answers
//! `{"error": text}`, others `{"output": text}`), `tools` as one entry of
//! `functionDeclarations` whose parameters are JSON Schema
//! (`parametersJsonSchema`), and `generationConfig` (`temperature`,
//! `maxOutputTokens`) with only the settings the agent sets; a structured
//! `result` adds `responseMimeType: "application/json"` and the schema as
//! `responseJsonSchema` (JSON Schema, like `parametersJsonSchema`, rather
//! than the OpenAPI subset of `responseSchema`, so the same schema serves).
//!
//! Reply: `candidates[0].content.parts`, `finishReason`, `usageMetadata`
//! (`promptTokenCount`, `candidatesTokenCount` plus the billed thinking
//! `thoughtsTokenCount` as output, kept apart too), or no candidate and a
//! `promptFeedback.blockReason` when the prompt itself was blocked. A model
//! turn goes back verbatim in the next request (an [`Echo`]), so thought
//! signatures and call ids reach the API unchanged; call ids the API did
//! not send are generated as `call_N` and never sent back. Images and
//! documents of a user turn are `inlineData` parts (`mimeType`, base64
//! `data`) in the prompt's order.

use serde_json::{Map, Value, json};

use super::message::{
    Content, Echo, Message, ModelReply, ModelRequest, Server, StopReason, ToolCall, ToolResult,
    Usage, count, object,
};
use crate::tools::ToolView;

/// The kind's name in `.ign`.
pub const NAME: &str = crate::ir::ProviderKind::GEMINI.name();

/// A tool as a function declaration: `{name, description, parametersJsonSchema}`.
#[must_use]
pub fn tool(view: &ToolView) -> Value {
    json!({"name": view.name, "description": view.description,
        "parametersJsonSchema": view.parameters})
}

/// The request body for `request`.
#[must_use]
pub fn request_body(request: &ModelRequest, _: Server) -> Value {
    let mut body = Map::new();
    if let Some(system) = &request.system {
        body.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
    }
    let mut contents = Vec::new();
    // Ids the API itself gave the calls of the last model turn.
    let mut api_ids: Vec<String> = Vec::new();
    for message in &request.messages {
        match message {
            Message::User(content) => {
                let parts: Vec<Value> = content
                    .iter()
                    .map(|piece| match piece {
                        Content::Text(text) => json!({"text": text}),
                        Content::Media(media) => object([(
                            "inlineData",
                            object([
                                ("mimeType", media.format.media_type.into()),
                                ("data", media.data.as_str().into()),
                            ]),
                        )]),
                    })
                    .collect();
                contents.push(object([("role", "user".into()), ("parts", Value::Array(parts))]));
            }
            Message::Assistant { text, tool_calls, echo } => {
                let content = match Echo::for_kind(echo.as_ref(), NAME) {
                    Some(content) => content.clone(),
                    None => model_turn(text, tool_calls),
                };
                api_ids = content
                    .get("parts")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.pointer("/functionCall/id").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect();
                contents.push(content);
            }
            Message::ToolResults(results) => {
                let parts: Vec<Value> =
                    results.iter().map(|r| function_response(r, &api_ids)).collect();
                contents.push(json!({"role": "user", "parts": parts}));
            }
        }
    }
    body.insert("contents".into(), Value::Array(contents));
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request.tools.iter().map(tool).collect();
        body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
    }
    let mut config = Map::new();
    if let Some(t) = request.temperature {
        config.insert("temperature".into(), json!(t));
    }
    if let Some(n) = request.max_tokens {
        config.insert("maxOutputTokens".into(), json!(n));
    }
    if let Some(result) = &request.result {
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseJsonSchema".into(), result.schema.clone());
    }
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }
    Value::Object(body)
}

/// A model turn rebuilt from its text and calls (a turn another format produced).
fn model_turn(text: &str, calls: &[ToolCall]) -> Value {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(json!({"text": text}));
    }
    for call in calls {
        let args = match &call.arguments {
            Value::Object(_) => call.arguments.clone(),
            _ => json!({}),
        };
        parts.push(json!({"functionCall": {"name": call.name, "args": args}}));
    }
    json!({"role": "model", "parts": parts})
}

fn function_response(result: &ToolResult, api_ids: &[String]) -> Value {
    let key = if result.is_error { "error" } else { "output" };
    let mut response = json!({"name": result.name, "response": {key: result.content}});
    if api_ids.contains(&result.id) {
        response["id"] = json!(result.id);
    }
    json!({"functionResponse": response})
}

/// Parses a 2xx reply body.
///
/// # Errors
/// When the body is not a `generateContent` reply; the text says what is missing.
pub fn parse_reply(body: &Value) -> Result<ModelReply, String> {
    let metadata = body.get("usageMetadata");
    let mut usage = Usage::from_fields(metadata, "promptTokenCount", "candidatesTokenCount");
    // Thinking is billed output: counted in the output total, and apart.
    usage.thinking_tokens = count(metadata, "thoughtsTokenCount");
    usage.output_tokens += usage.thinking_tokens;
    let Some(candidate) = body.get("candidates").and_then(Value::as_array).and_then(|c| c.first())
    else {
        return match body.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
            Some(reason) => Ok(ModelReply {
                text: String::new(),
                tool_calls: Vec::new(),
                stop: StopReason::Blocked(format!("prompt blocked: {reason}")),
                usage,
                echo: None,
            }),
            None => Err("reply has no `candidates`".to_owned()),
        };
    };
    let content = candidate.get("content");
    let parts = content.and_then(|c| c.get("parts")).and_then(Value::as_array);
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for part in parts.into_iter().flatten() {
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(t) = part.get("text").and_then(Value::as_str) {
            text.push_str(t);
        }
        if let Some(call) = part.get("functionCall") {
            let name =
                call.get("name").and_then(Value::as_str).ok_or("`functionCall` without `name`")?;
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call_{}", tool_calls.len() + 1), str::to_owned);
            let arguments = call.get("args").cloned().unwrap_or_else(|| json!({}));
            tool_calls.push(ToolCall { id, name: name.to_owned(), arguments });
        }
    }
    let stop = match candidate.get("finishReason").and_then(Value::as_str) {
        Some("STOP") | None if !tool_calls.is_empty() => StopReason::ToolUse,
        Some("STOP") | None => StopReason::EndTurn,
        Some("MAX_TOKENS") => StopReason::MaxTokens,
        Some(
            reason @ ("SAFETY" | "RECITATION" | "LANGUAGE" | "BLOCKLIST" | "PROHIBITED_CONTENT"
            | "SPII" | "IMAGE_SAFETY"),
        ) => StopReason::Blocked(reason.to_owned()),
        Some(other) => StopReason::Other(other.to_owned()),
    };
    if parts.is_none() && matches!(stop, StopReason::EndTurn) {
        return Err("candidate has no `content.parts`".to_owned());
    }
    let echo =
        content.filter(|_| !tool_calls.is_empty()).map(|c| Echo { kind: NAME, content: c.clone() });
    Ok(ModelReply { text, tool_calls, stop, usage, echo })
}
