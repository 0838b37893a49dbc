//! The wire formats through the provider table: request bodies, reply
//! parsing and error-body messages for a [`ProviderKind`]. Pure functions
//! (body in, reply out), so the bodies are snapshot-tested and replay goes
//! through the same parsing.

use serde_json::Value;

use super::body::RequestBody;
use super::message::Server;
use super::message::{ModelReply, ModelRequest};
use crate::ir::ProviderKind;

/// The request body `kind` expects for `request`, sent to `server`, its
/// large media as marks beside their bytes (see [`RequestBody`]).
#[must_use]
pub fn request(kind: ProviderKind, request: &ModelRequest, server: Server) -> RequestBody {
    RequestBody::new((kind.spec().request_body)(request, server), request)
}

/// The request body `kind` expects for `request`, sent to `server`, with
/// its media in place: what goes over the wire.
#[must_use]
pub fn request_body(kind: ProviderKind, request: &ModelRequest, server: Server) -> Value {
    self::request(kind, request, server).expanded()
}

/// Parses the text of a 2xx reply.
///
/// # Errors
/// When it is not JSON or not `kind`'s reply shape; the text says why.
pub fn parse_reply(kind: ProviderKind, text: &str) -> Result<ModelReply, String> {
    let body: Value = serde_json::from_str(text)
        .map_err(|e| format!("body is not JSON ({e}): {}", clip(text)))?;
    parse_reply_json(kind, &body)
}

/// Parses a 2xx reply already read as JSON.
///
/// # Errors
/// When it is not `kind`'s reply shape; the text says why.
pub fn parse_reply_json(kind: ProviderKind, body: &Value) -> Result<ModelReply, String> {
    (kind.spec().parse_reply)(body)
}

/// The message of an error body: `error.message` (Anthropic, OpenAI,
/// Gemini), `error` (Ollama), `message`, else the body itself, clipped.
#[must_use]
pub fn error_message(text: &str) -> String {
    let json: Option<Value> = serde_json::from_str(text).ok();
    let found = json.as_ref().and_then(|b| {
        b.pointer("/error/message")
            .or_else(|| b.get("error").filter(|e| e.is_string()))
            .or_else(|| b.get("message"))
            .and_then(Value::as_str)
    });
    match found {
        Some(message) => clip(message),
        None if text.trim().is_empty() => "empty body".to_owned(),
        None => clip(text.trim()),
    }
}

fn clip(text: &str) -> String {
    if text.chars().count() > 300 {
        format!("{}...", text.chars().take(297).collect::<String>())
    } else {
        text.to_owned()
    }
}
