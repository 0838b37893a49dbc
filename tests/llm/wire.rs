//! Request bodies per provider (snapshots) and reply parsing.

use igniter::llm::{
    Message, ModelRequest, ResultSchema, Server, StopReason, ToolCall, ToolResult, wire,
};
use igniter::tools::ToolView;
use serde_json::json;

use crate::fixtures::{kinds, named, text_reply, tool_reply};

/// A conversation with a tool turn (one call ok, one failed) and its results.
fn conversation() -> ModelRequest {
    let parameters = json!({"type": "object", "properties": {"expression": {"type": "string"}},
        "required": ["expression"]});
    let tool = ToolView { name: "calculator".into(), description: "Arithmetic".into(), parameters };
    ModelRequest {
        model: "model-1".into(),
        system: Some("You are a product assistant.".into()),
        messages: vec![
            Message::user("What is 2+2 and 1/0?"),
            Message::Assistant {
                text: "Let me compute.".into(),
                tool_calls: vec![
                    ToolCall {
                        id: "id1".into(),
                        name: "calculator".into(),
                        arguments: json!({"expression": "2+2"}),
                    },
                    ToolCall {
                        id: "id2".into(),
                        name: "calculator".into(),
                        arguments: json!({"expression": "1/0"}),
                    },
                ],
                echo: None,
            },
            Message::ToolResults(vec![
                ToolResult {
                    id: "id1".into(),
                    name: "calculator".into(),
                    content: "4".into(),
                    is_error: false,
                },
                ToolResult {
                    id: "id2".into(),
                    name: "calculator".into(),
                    content: "Error: division by zero".into(),
                    is_error: true,
                },
            ]),
        ],
        tools: vec![tool],
        temperature: Some(0.2),
        max_tokens: Some(512),
        result: None,
    }
}

/// The structured-answer request field of every provider: OpenAI
/// `response_format` (strict), Anthropic `output_config.format`, Ollama
/// `format`, Gemini `responseJsonSchema`.
#[test]
fn structured_result_request_bodies() {
    let schema = json!({"type": "object", "properties": {
        "title": {"type": "string", "description": "One line"},
        "priority": {"type": "string", "enum": ["low", "high"]},
        "note": {"type": ["string", "null"]}},
        "required": ["title", "priority"], "additionalProperties": false});
    let request = ModelRequest {
        model: "m".into(),
        system: None,
        messages: vec![Message::user("Triage: the printer is on fire")],
        tools: vec![],
        temperature: None,
        max_tokens: None,
        result: Some(ResultSchema { name: "Ticket".into(), schema }),
    };
    let bodies: serde_json::Map<String, serde_json::Value> = kinds()
        .into_iter()
        .map(|k| (k.name().to_owned(), wire::request_body(k, &request, Server::Official)))
        .collect();
    insta::assert_json_snapshot!(bodies);
}

#[test]
fn anthropic_request_body() {
    insta::assert_json_snapshot!(wire::request_body(
        named("anthropic"),
        &conversation(),
        Server::Official
    ));
}

#[test]
fn openai_request_body() {
    insta::assert_json_snapshot!(wire::request_body(
        named("openai"),
        &conversation(),
        Server::Official
    ));
}

#[test]
fn ollama_request_body() {
    insta::assert_json_snapshot!(wire::request_body(
        named("ollama"),
        &conversation(),
        Server::Official
    ));
}

#[test]
fn gemini_request_body() {
    insta::assert_json_snapshot!(wire::request_body(
        named("gemini"),
        &conversation(),
        Server::Official
    ));
}

#[test]
fn parses_replies() {
    for kind in kinds() {
        let reply = wire::parse_reply(kind, &text_reply(kind, "hello").to_string()).unwrap();
        assert_eq!(
            (reply.text.as_str(), reply.stop, reply.usage.input_tokens),
            ("hello", StopReason::EndTurn, 10)
        );
        let calls = [("call_1", "add", json!({"a": 1})), ("call_2", "lookup", json!({"sku": "x"}))];
        let reply = wire::parse_reply(kind, &tool_reply(kind, &calls, false).to_string()).unwrap();
        assert_eq!(reply.stop, StopReason::ToolUse, "{kind:?}");
        let got: Vec<(&str, &str)> =
            reply.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str())).collect();
        assert_eq!(got, [("call_1", "add"), ("call_2", "lookup")]);
        assert_eq!(reply.tool_calls[0].arguments, json!({"a": 1}));
        assert_eq!(reply.usage.output_tokens, 8);
        let reply = wire::parse_reply(kind, &tool_reply(kind, &calls, true).to_string()).unwrap();
        assert_eq!(reply.stop, StopReason::MaxTokens);
        assert!(wire::parse_reply(kind, "<html>").is_err());
        assert!(wire::parse_reply(kind, "{\"x\": 1}").is_err());
    }
}

#[test]
fn openai_arguments_that_are_not_json_round_trip() {
    let body = json!({"choices": [{"message": {"content": null, "tool_calls": [{"id": "a", "type": "function",
        "function": {"name": "add", "arguments": "{broken"}}]}, "finish_reason": "tool_calls"}]});
    let reply = wire::parse_reply(named("openai"), &body.to_string()).unwrap();
    assert_eq!(reply.tool_calls[0].arguments, json!("{broken"));
    let request = ModelRequest {
        model: "m".into(),
        system: None,
        messages: vec![Message::Assistant {
            text: String::new(),
            tool_calls: reply.tool_calls,
            echo: reply.echo,
        }],
        tools: vec![],
        temperature: None,
        max_tokens: None,
        result: None,
    };
    let sent = wire::request_body(named("openai"), &request, Server::Official);
    assert_eq!(sent["messages"][0]["tool_calls"][0]["function"]["arguments"], "{broken");
}

#[test]
fn error_messages() {
    assert_eq!(
        wire::error_message(r#"{"type":"error","error":{"type":"x","message":"overloaded"}}"#),
        "overloaded"
    );
    assert_eq!(wire::error_message(r#"{"error":"model not found"}"#), "model not found");
    assert_eq!(wire::error_message(""), "empty body");
    assert_eq!(wire::error_message("plain"), "plain");
}
