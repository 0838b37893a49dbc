//! OpenAI Chat Completions conventions against a local fake server speaking
//! the documented reply shapes: `message.refusal`, `content_filter` and
//! `length` finish reasons, tool-call `arguments` sent back byte for byte,
//! and `max_tokens` for compatible servers.

use igniter::ir::ProviderChoice;
use igniter::llm::{LlmError, Server, wire};
use igniter::trace::Trace;
use serde_json::{Value, json};

use crate::fixtures::{agent, declared, llm, named, program, provider_id, run, text_reply};
use crate::http::{bodies, ok, server, single};

/// A chat completion with one choice.
fn completion(message: Value, finish: &str) -> Value {
    json!({"id": "chatcmpl-9", "object": "chat.completion", "created": 1_741_570_283,
        "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "message": message,
        "logprobs": null, "finish_reason": finish}],
        "usage": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0}}})
}

fn call(id: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "add", "arguments": arguments}})
}

#[tokio::test]
async fn refusal_fails_the_node_naming_it() {
    let message = json!({"role": "assistant", "content": null,
        "refusal": "I'm sorry, I can't help with that.", "annotations": []});
    let server = server(vec![ok(completion(message, "stop"))]).await;
    let err = run(&llm(), &single(named("openai"), &server, 5_000, 0), &Trace::new(false), "hi")
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Stopped { .. }), "{err}");
    assert!(
        err.to_string().ends_with(
            "stopped with reason `refusal`; partial text: \"I'm sorry, I can't help with that.\""
        ),
        "{err}"
    );
}

#[tokio::test]
async fn content_filter_and_length_run_no_tool() {
    for (finish, is_stop) in [("content_filter", true), ("length", false)] {
        let message = json!({"role": "assistant", "content": null, "refusal": null,
            "tool_calls": [call("call_1", "{\"a\": 1, \"b\": 2}")]});
        let server = server(vec![ok(completion(message, finish))]).await;
        let trace = Trace::new(true);
        let err = run(&llm(), &single(named("openai"), &server, 5_000, 0), &trace, "hi")
            .await
            .unwrap_err();
        if is_stop {
            assert!(err.to_string().contains("stopped with reason `content_filter`"), "{err}");
        } else {
            assert!(matches!(err, LlmError::Truncated { .. }), "{err}");
        }
        assert!(trace.entries().iter().all(|e| e.kind != "tool_call"), "{finish}");
    }
}

#[tokio::test]
async fn tool_call_arguments_go_back_byte_for_byte() {
    let raw = "{ \"b\" : 2,\n  \"a\":1 }";
    let message = json!({"role": "assistant", "content": null, "refusal": null,
        "tool_calls": [call("call_abc", raw)]});
    let server =
        server(vec![ok(completion(message, "tool_calls")), ok(text_reply(named("openai"), "3"))])
            .await;
    let answer = run(&llm(), &single(named("openai"), &server, 5_000, 0), &Trace::new(false), "q")
        .await
        .unwrap();
    assert_eq!(answer, "3");
    let sent = bodies(&server).await;
    let assistant = &sent[1]["messages"][2];
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], raw);
    assert_eq!(assistant["tool_calls"][0]["id"], "call_abc");
    assert_eq!(
        sent[1]["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_abc",
        "content": "3"})
    );
}

#[tokio::test]
async fn token_limit_field_follows_the_server() {
    // A declared provider at another base URL is a compatible server: `max_tokens`.
    let server = server(vec![ok(text_reply(named("openai"), "ok"))]).await;
    let mut a = agent(vec![ProviderChoice::Declared(provider_id(0))], &["local"]);
    a.max_tokens = Some(64);
    let provider = declared("Local", named("openai"), &format!("{}/v1", server.uri()), 5_000, 0);
    run(&llm(), &program(vec![a], vec![provider]), &Trace::new(false), "hi").await.unwrap();
    let sent = bodies(&server).await;
    assert_eq!(sent[0]["max_tokens"], 64);
    assert!(sent[0].get("max_completion_tokens").is_none());
    // The official endpoint gets `max_completion_tokens` (the body is what would be sent).
    let request = igniter::llm::ModelRequest {
        model: "gpt-4o".into(),
        system: None,
        messages: vec![igniter::llm::Message::user("hi")],
        tools: Vec::new(),
        temperature: None,
        max_tokens: Some(64),
        result: None,
    };
    let official = wire::request_body(named("openai"), &request, Server::Official);
    assert_eq!(official["max_completion_tokens"], 64);
    assert!(official.get("max_tokens").is_none());
}

#[tokio::test]
async fn arguments_that_are_not_json_are_a_tool_error_turn() {
    let message = json!({"role": "assistant", "content": null, "refusal": null,
        "tool_calls": [call("call_x", "{\"a\": 1,")]});
    let server =
        server(vec![ok(completion(message, "tool_calls")), ok(text_reply(named("openai"), "ok"))])
            .await;
    let trace = Trace::new(true);
    let answer =
        run(&llm(), &single(named("openai"), &server, 5_000, 0), &trace, "q").await.unwrap();
    assert_eq!(answer, "ok");
    let sent = bodies(&server).await;
    assert_eq!(sent[1]["messages"][2]["tool_calls"][0]["function"]["arguments"], "{\"a\": 1,");
    let result = sent[1]["messages"][3]["content"].as_str().unwrap();
    assert!(result.starts_with("Error: arguments must be a JSON object"), "{result}");
    assert!(trace.entries().iter().any(|e| e.kind == "tool_call" && e.status == "failed"));
}

#[tokio::test]
async fn reasoning_models_get_max_completion_tokens_at_any_server() {
    for (model, field) in [
        ("o1", "max_completion_tokens"),
        ("o3-mini", "max_completion_tokens"),
        ("o4-mini", "max_completion_tokens"),
        ("gpt-5", "max_completion_tokens"),
        ("gpt-5.1-codex", "max_completion_tokens"),
        ("openai/o3", "max_completion_tokens"),
        ("gpt-4o", "max_tokens"),
        ("o10x", "max_tokens"),
        ("llama-o3", "max_tokens"),
    ] {
        let server = server(vec![ok(text_reply(named("openai"), "ok"))]).await;
        let mut a = agent(vec![ProviderChoice::Declared(provider_id(0))], &[model]);
        a.max_tokens = Some(64);
        let provider =
            declared("Local", named("openai"), &format!("{}/v1", server.uri()), 5_000, 0);
        run(&llm(), &program(vec![a], vec![provider]), &Trace::new(false), "hi").await.unwrap();
        let sent = bodies(&server).await;
        assert_eq!(sent[0][field], 64, "{model}: {}", sent[0]);
        let other = if field == "max_tokens" { "max_completion_tokens" } else { "max_tokens" };
        assert!(sent[0].get(other).is_none(), "{model}: {}", sent[0]);
        if model == "o4-mini" {
            // The whole body a compatible server gets for a reasoning model.
            insta::assert_json_snapshot!(sent[0]);
        }
    }
}
