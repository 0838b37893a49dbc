//! Anthropic conventions against a local fake server speaking the Messages
//! API's documented reply shapes: stop reasons (`refusal`,
//! `model_context_window_exceeded`, `pause_turn`, `max_tokens`), thinking
//! blocks going back unchanged, `ANTHROPIC_AUTH_TOKEN`, cache usage.

use igniter::ir::ProviderChoice;
use igniter::llm::LlmError;
use igniter::trace::Trace;
use serde_json::{Value, json};

use crate::fixtures::{agent, llm, llm_with, named, program, run, text_reply};
use crate::http::{bodies, ok, server, single};

/// A Messages API reply with `content` blocks and `stop_reason`.
fn message(content: Value, stop: &str) -> Value {
    json!({"id": "msg_01", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": content, "stop_reason": stop,
        "stop_sequence": null, "usage": {"input_tokens": 30, "output_tokens": 12}})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "add", "input": {"a": 1, "b": 2}})
}

#[tokio::test]
async fn refusal_and_context_window_fail_naming_the_reason_and_run_no_tool() {
    for reason in ["refusal", "model_context_window_exceeded"] {
        let content = json!([{"type": "text", "text": "I started to"}, tool_use("toolu_1")]);
        let server = server(vec![ok(message(content, reason))]).await;
        let trace = Trace::new(true);
        let err = run(&llm(), &single(named("anthropic"), &server, 5_000, 0), &trace, "hi")
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Stopped { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "model `m1` (provider `Fake`) of agent `Assistant` stopped with reason \
                 `{reason}`; partial text: \"I started to\""
            )
        );
        assert!(trace.entries().iter().all(|e| e.kind != "tool_call"), "{reason}");
        assert_eq!(bodies(&server).await.len(), 1);
    }
}

#[tokio::test]
async fn max_tokens_stays_an_error() {
    let content = json!([{"type": "text", "text": "partial"}, tool_use("toolu_1")]);
    let server = server(vec![ok(message(content, "max_tokens"))]).await;
    let err = run(&llm(), &single(named("anthropic"), &server, 5_000, 0), &Trace::new(true), "hi")
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Truncated { .. }), "{err}");
}

#[tokio::test]
async fn pause_turn_sends_the_content_back_and_continues() {
    let paused = json!([
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
         "input": {"query": "widget price"}},
        {"type": "text", "text": "Searching..."}
    ]);
    let continuing = server(vec![
        ok(message(paused.clone(), "pause_turn")),
        ok(text_reply(named("anthropic"), "The widget costs $5.")),
    ])
    .await;
    let program = single(named("anthropic"), &continuing, 5_000, 0);
    let answer = run(&llm(), &program, &Trace::new(false), "price?").await.unwrap();
    assert_eq!(answer, "The widget costs $5.");
    let sent = bodies(&continuing).await;
    assert_eq!(sent.len(), 2);
    let messages = sent[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1], json!({"role": "assistant", "content": paused}));

    // Bounded by max_tool_iterations (3): the fourth pause fails the run.
    let pausing = server(vec![ok(message(paused, "pause_turn"))]).await;
    let err = run(&llm(), &single(named("anthropic"), &pausing, 5_000, 0), &Trace::new(false), "x")
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::ToolLoop { limit: 3, .. }), "{err}");
    assert_eq!(bodies(&pausing).await.len(), 4);
}

#[tokio::test]
async fn thinking_blocks_go_back_unchanged() {
    let content = json!([
        {"type": "thinking", "thinking": "The user wants 1+2; use the add tool.",
         "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
        {"type": "text", "text": "Let me add."},
        tool_use("toolu_9")
    ]);
    let server = server(vec![
        ok(message(content.clone(), "tool_use")),
        ok(text_reply(named("anthropic"), "3")),
    ])
    .await;
    let answer =
        run(&llm(), &single(named("anthropic"), &server, 5_000, 0), &Trace::new(false), "1+2?")
            .await
            .unwrap();
    assert_eq!(answer, "3");
    let sent = bodies(&server).await;
    assert_eq!(sent[1]["messages"][1], json!({"role": "assistant", "content": content}));
    assert_eq!(sent[1]["messages"][2]["content"][0]["tool_use_id"], "toolu_9");
}

#[tokio::test]
async fn auth_token_is_sent_as_bearer_and_the_api_key_wins() {
    let server = server(vec![ok(text_reply(named("anthropic"), "hi"))]).await;
    let program =
        program(vec![agent(vec![ProviderChoice::Kind(named("anthropic"))], &["claude"])], vec![]);
    let token = "sk-ant-oat-token-5678";
    let llm = llm_with(&[("ANTHROPIC_AUTH_TOKEN", token), ("ANTHROPIC_BASE_URL", &server.uri())]);
    let trace = Trace::new(true);
    run(&llm, &program, &trace, "hi").await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].headers["authorization"], format!("Bearer {token}").as_str());
    assert!(requests[0].headers.get("x-api-key").is_none());
    assert!(!format!("{llm:?}{}", trace.render()).contains(token));

    let llm = llm_with(&[
        ("ANTHROPIC_AUTH_TOKEN", token),
        ("ANTHROPIC_API_KEY", "sk-ant-api-key"),
        ("ANTHROPIC_BASE_URL", &server.uri()),
    ]);
    run(&llm, &program, &Trace::new(false), "hi").await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[1].headers["x-api-key"], "sk-ant-api-key");
    assert!(requests[1].headers.get("authorization").is_none());

    let llm = llm_with(&[("ANTHROPIC_BASE_URL", &server.uri())]);
    let err = run(&llm, &program, &Trace::new(false), "hi").await.unwrap_err();
    assert!(
        err.to_string().contains("`ANTHROPIC_API_KEY` or `ANTHROPIC_AUTH_TOKEN` are not set"),
        "{err}"
    );
}

#[tokio::test]
async fn cache_tokens_count_in_the_input_and_are_shown_apart() {
    let mut reply = text_reply(named("anthropic"), "cached");
    reply["usage"] = json!({"input_tokens": 10, "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 50, "output_tokens": 5});
    let server = server(vec![ok(reply)]).await;
    let trace = Trace::new(true);
    run(&llm(), &single(named("anthropic"), &server, 5_000, 0), &trace, "hi").await.unwrap();
    let model = trace.entries().into_iter().find(|e| e.kind == "model").unwrap();
    assert!(
        model.detail.ends_with("cache 100 write / 50 read, tokens 160 in / 5 out"),
        "{}",
        model.detail
    );
}

#[tokio::test]
async fn temperature_is_not_sent() {
    // The Messages API (SDK 2.x) no longer takes `temperature`, `top_p` or
    // `top_k`: an agent's `temperature` stays out of the body (and `check`
    // warns, see tests/corpus/err/ignored_setting.ign).
    let server = server(vec![ok(text_reply(named("anthropic"), "ok"))]).await;
    let mut program = single(named("anthropic"), &server, 5_000, 0);
    program.agents[0].temperature = Some(0.2);
    program.agents[0].max_tokens = Some(64);
    run(&llm(), &program, &Trace::new(false), "hi").await.unwrap();
    let sent = bodies(&server).await;
    for field in ["temperature", "top_p", "top_k"] {
        assert!(sent[0].get(field).is_none(), "{field}: {}", sent[0]);
    }
    insta::assert_json_snapshot!(sent[0]);
}
