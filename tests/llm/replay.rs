//! Record → replay round trips and mismatches.

use std::sync::Arc;

use igniter::effects::{Effects, Recording, Scope};
use igniter::ir::{AgentId, ProviderChoice};
use igniter::llm::{Llm, LlmError};
use igniter::tools::Toolbox;
use igniter::trace::Trace;
use serde_json::json;
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::fixtures::{
    agent, base_url, declared, kinds, llm, named, program, provider_id, question, recording,
    run_with, text_reply, tool_reply,
};

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ignite-llm-rec-{}-{name}.jsonl", std::process::id()))
}

fn replay(path: &std::path::Path) -> Effects {
    Effects::live().with(Arc::new(Recording::replay(path).unwrap()))
}

#[tokio::test]
async fn record_then_replay_offline() {
    for kind in kinds() {
        let server = MockServer::start().await;
        // First turn (no tool results yet) asks for a tool; the second answers.
        let calls = [("c1", "add", json!({"a": 2, "b": 2}))];
        Mock::given(method("POST"))
            .and(body_string_contains("\"4\""))
            .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(kind, "four")))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(tool_reply(kind, &calls, false)))
            .mount(&server)
            .await;
        let provider = declared("Fake", kind, &base_url(kind, &server.uri()), 5_000, 0);
        let program = program(
            vec![agent(vec![ProviderChoice::Declared(provider_id(0))], &["m"])],
            vec![provider],
        );
        let path = temp(&format!("{kind:?}"));
        let recorder = recording(&path);
        let (live, trace) = (llm(), Trace::new(false));
        let answer = run_with(&live, &program, &trace, "2+2?", recorder.clone()).await;
        assert_eq!(answer.unwrap(), "four");
        recorder.finish().unwrap();
        drop(server);

        // No key, no server: everything comes from the file, through the same parsing.
        let offline = Llm::with_env(Default::default());
        let replayer = replay(&path);
        let trace = Trace::new(true);
        let answer = run_with(&offline, &program, &trace, "2+2?", replayer.clone()).await;
        assert_eq!(answer.unwrap(), "four");
        assert_eq!(trace.entries().iter().filter(|e| e.kind == "tool_call").count(), 1);

        // Each exchange is used once: a second identical run has nothing left.
        let err = run_with(&offline, &program, &Trace::new(false), "2+2?", replayer).await;
        let err = err.unwrap_err();
        assert!(matches!(err, LlmError::Replay { .. }), "{err}");
        assert_eq!(err.code().as_str(), "ignite::effects::replay");

        let err = run_with(&offline, &program, &Trace::new(false), "3+3?", replay(&path)).await;
        let err = err.unwrap_err();
        let text = err.to_string();
        assert!(text.contains("agent `Assistant`") && text.contains("provider `Fake`"), "{text}");
        let at = match kind.name() {
            "anthropic" => "/messages/0/content",
            "gemini" => "/contents/0/parts/0/text",
            _ => "/messages/1/content",
        };
        assert!(text.contains(at) && text.contains("2+2?") && text.contains("3+3?"), "{text}");
        std::fs::remove_file(&path).ok();
    }
}

#[tokio::test]
async fn replay_is_independent_of_order() {
    let kind = named("openai");
    let server = MockServer::start().await;
    for q in ["one", "two", "three"] {
        Mock::given(method("POST"))
            .and(body_string_contains(q))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(text_reply(kind, &format!("answer {q}"))),
            )
            .mount(&server)
            .await;
    }
    let provider = declared("Fake", kind, &base_url(kind, &server.uri()), 5_000, 0);
    let program = program(
        vec![agent(vec![ProviderChoice::Declared(provider_id(0))], &["m"])],
        vec![provider],
    );
    let path = temp("order");
    let recorder = recording(&path);
    for q in ["one", "two", "three"] {
        run_with(&llm(), &program, &Trace::new(false), q, recorder.clone()).await.unwrap();
    }
    recorder.finish().unwrap();
    let offline = Llm::with_env(Default::default());
    let replayer = replay(&path);
    let trace = Trace::new(false);
    let toolbox = Toolbox::new();
    let runs = ["three", "one", "two"].map(|q| {
        let (offline, program, trace, toolbox) = (&offline, &program, &trace, &toolbox);
        let scope = Scope::new(replayer.clone(), "p");
        async move {
            offline
                .run_agent(program, AgentId::from_index(0), &question(q), toolbox, trace, &scope)
                .await
        }
    });
    let answers = futures_util::future::join_all(runs).await;
    let answers: Vec<String> =
        answers.into_iter().map(|a| crate::fixtures::text(&a.unwrap())).collect();
    assert_eq!(answers, ["answer three", "answer one", "answer two"]);
    std::fs::remove_file(&path).ok();
}
