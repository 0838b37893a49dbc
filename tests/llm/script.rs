//! The loop with the offline script provider.

use std::path::PathBuf;

use igniter::ir::ProviderChoice;
use igniter::llm::LlmError;
use igniter::trace::Trace;
use serde_json::{Value, json};

use crate::fixtures::{agent, llm, program, run};

fn script(name: &str, replies: &Value) -> PathBuf {
    let path = std::env::temp_dir().join(format!("ignite-llm-{}-{name}.json", std::process::id()));
    std::fs::write(&path, replies.to_string()).unwrap();
    path
}

async fn run_script(name: &str, replies: Value) -> (Result<String, LlmError>, Trace) {
    let path = script(name, &replies);
    let program = program(vec![agent(vec![ProviderChoice::Script(path.clone())], &[])], vec![]);
    let trace = Trace::new(true);
    let result = run(&llm(), &program, &trace, "hi").await;
    std::fs::remove_file(path).ok();
    (result, trace)
}

#[tokio::test]
async fn tool_turn_then_text() {
    let replies = json!([
        {"tool_calls": [{"id": "call_1", "name": "add", "arguments": {"a": 1, "b": 2}},
                        {"name": "lookup", "arguments": {"sku": "S"}}],
         "usage": {"input_tokens": 7, "output_tokens": 3}},
        {"text": "three"}
    ]);
    let (result, trace) = run_script("ok", replies).await;
    assert_eq!(result.unwrap(), "three");
    let entries = trace.entries();
    let kinds: Vec<&str> = entries.iter().map(|e| e.kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "tool_call").count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == "model").count(), 2);
    assert!(entries.iter().any(|e| e.detail.contains("tokens 7 in / 3 out")));
    assert!(entries.iter().any(|e| e.path == "Report > assistant > tool add"));
}

#[tokio::test]
async fn capability_error_is_immediate() {
    let replies =
        json!([{"tool_calls": [{"name": "send_email", "arguments": {"to": "a"}}]}, {"text": "x"}]);
    let (result, trace) = run_script("cap", replies).await;
    let err = result.unwrap_err();
    assert!(matches!(err, LlmError::Capability(_)), "{err}");
    assert!(trace.entries().iter().all(|e| e.kind != "tool_call"));
}

#[tokio::test]
async fn tool_loop_and_truncation_and_exhaustion() {
    let call = json!({"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]});
    let (result, _) = run_script("loop", json!([call, call, call, call, call])).await;
    assert!(matches!(result.unwrap_err(), LlmError::ToolLoop { limit: 3, .. }));
    let truncated = json!([{"tool_calls": [{"name": "add"}], "stop_reason": "max_tokens"}]);
    let (result, trace) = run_script("trunc", truncated).await;
    assert!(matches!(result.unwrap_err(), LlmError::Truncated { .. }));
    assert!(trace.entries().iter().all(|e| e.kind != "tool_call"));
    let (result, _) = run_script("empty", json!([])).await;
    let err = result.unwrap_err();
    assert!(err.to_string().contains("ran out of replies after 0"), "{err}");
    let (result, _) = run_script("bad", json!([{"txt": "typo"}])).await;
    assert!(matches!(result.unwrap_err(), LlmError::Script { .. }));
}

#[tokio::test]
async fn script_error_falls_back() {
    let first = script("fb1", &json!([{"error": "overloaded"}]));
    let second = script("fb2", &json!([{"text": "second"}]));
    let providers =
        vec![ProviderChoice::Script(first.clone()), ProviderChoice::Script(second.clone())];
    let program = program(vec![agent(providers, &[])], vec![]);
    let result = run(&llm(), &program, &Trace::new(false), "hi").await;
    std::fs::remove_file(first).ok();
    std::fs::remove_file(second).ok();
    assert_eq!(result.unwrap(), "second");
}

#[tokio::test]
async fn replies_chosen_by_when() {
    // Each run takes the first reply after the last one taken whose `when`
    // is absent or in the last user message; a tool turn keeps its place.
    let replies = json!([
        {"when": "apple", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
        {"when": "apple", "text": "an apple"},
        {"when": "pear", "text": "a pear"},
        {"text": "anything else"}
    ]);
    let path = script("when", &replies);
    let program = program(vec![agent(vec![ProviderChoice::Script(path.clone())], &[])], vec![]);
    for (question, answer) in
        [("an apple?", "an apple"), ("a pear?", "a pear"), ("a plum?", "anything else")]
    {
        let trace = Trace::new(true);
        assert_eq!(run(&llm(), &program, &trace, question).await.unwrap(), answer, "{question}");
        let tools = trace.entries().iter().filter(|e| e.kind == "tool_call").count();
        assert_eq!(tools, usize::from(question == "an apple?"), "{question}");
    }
    // Nothing fits after the pear: the error says the replies were chosen by `when`.
    let only = json!([{"when": "pear", "text": "a pear"}]);
    let (result, _) = run_script("when_none", only).await;
    let err = result.unwrap_err();
    assert!(
        err.to_string().contains("ran out of replies that fit the message (by `when`)"),
        "{err}"
    );
    std::fs::remove_file(path).ok();
}
