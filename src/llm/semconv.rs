//! Model calls as OpenTelemetry GenAI spans (see [`crate::telemetry`]):
//! `chat {model}` with the request's model and settings, then the
//! reply's model, usage and finish reason. The conversation goes in only
//! when content capture is on, in the conventions' message format.

use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;
use serde_json::{Value, json};

use super::message::{Content, Message, ModelReply, ModelRequest, StopReason};
use crate::telemetry::{self, Span, text_part};

/// The span of one attempt of `request` to `url` of a `provider` kind,
/// under the agent's node span `node`.
pub(crate) fn chat_span(node: &Span, provider: &str, request: &ModelRequest, url: &str) -> Span {
    node.child(
        SpanKind::Client,
        || format!("chat {}", request.model),
        || {
            let mut attributes = vec![
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new(
                    "gen_ai.provider.name",
                    telemetry::provider_name(provider).to_owned(),
                ),
                KeyValue::new("gen_ai.request.model", request.model.clone()),
            ];
            if let Some(temperature) = request.temperature {
                attributes.push(KeyValue::new("gen_ai.request.temperature", temperature));
            }
            if let Some(max_tokens) = request.max_tokens {
                attributes.push(KeyValue::new("gen_ai.request.max_tokens", i64::from(max_tokens)));
            }
            attributes.extend(telemetry::server_attributes(url));
            if telemetry::capture_content() {
                if let Some(system) = &request.system {
                    let parts = json!([text_part(system)]);
                    attributes
                        .push(telemetry::json_attribute("gen_ai.system_instructions", &parts));
                }
                let messages: Vec<Value> = request.messages.iter().map(message).collect();
                attributes
                    .push(telemetry::json_attribute("gen_ai.input.messages", &json!(messages)));
            }
            attributes
        },
    )
}

/// Notes what `reply` says about the call on its span.
pub(crate) fn note_reply(span: &Span, reply: &ModelReply) {
    span.set(|| {
        let reason = finish_reason(&reply.stop);
        let mut attributes = vec![
            KeyValue::new("gen_ai.usage.input_tokens", count(reply.usage.input_tokens)),
            KeyValue::new("gen_ai.usage.output_tokens", count(reply.usage.output_tokens)),
            KeyValue::new(
                "gen_ai.response.finish_reasons",
                telemetry::strings(vec![reason.to_owned()]),
            ),
        ];
        if telemetry::capture_content() {
            let mut output = message(&Message::Assistant {
                text: reply.text.clone(),
                tool_calls: reply.tool_calls.clone(),
                echo: None,
            });
            output["finish_reason"] = json!(reason);
            attributes.push(telemetry::json_attribute("gen_ai.output.messages", &json!([output])));
        }
        attributes
    });
}

fn count(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}

/// The conventions' finish reason: `stop`, `tool_call`, `length`,
/// `content_filter`, or the provider's own word.
fn finish_reason(stop: &StopReason) -> &str {
    match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_call",
        StopReason::MaxTokens => "length",
        StopReason::PauseTurn => "pause_turn",
        StopReason::Blocked(_) => "content_filter",
        StopReason::Other(reason) => reason,
    }
}

/// One message in the conventions' format: a role and typed parts.
fn message(message: &Message) -> Value {
    match message {
        Message::User(content) => {
            let parts: Vec<Value> = content
                .iter()
                .map(|piece| match piece {
                    Content::Text(text) => text_part(text),
                    // The bytes are named by their digest, never put in a span.
                    Content::Media(media) => json!({
                        "type": "file",
                        "modality": media.format.kind.name(),
                        "mime_type": media.format.media_type,
                        "file_id": media.sha256().map(|d| format!("sha256:{d}")),
                    }),
                })
                .collect();
            json!({"role": "user", "parts": parts})
        }
        Message::Assistant { text, tool_calls, .. } => {
            let mut parts = Vec::with_capacity(tool_calls.len() + 1);
            if !text.is_empty() {
                parts.push(text_part(text));
            }
            parts.extend(tool_calls.iter().map(|call| {
                json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments})
            }));
            json!({"role": "assistant", "parts": parts})
        }
        Message::ToolResults(results) => {
            let parts: Vec<Value> = results
                .iter()
                .map(|r| json!({"type": "tool_call_response", "id": r.id, "response": r.content}))
                .collect();
            json!({"role": "tool", "parts": parts})
        }
    }
}
