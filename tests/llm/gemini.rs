//! Gemini specifics against a local fake server speaking the documented
//! `generateContent` shapes: key variables and header, the model in the URL,
//! thought signatures and call ids sent back verbatim, finish reasons and
//! safety blocks, and a fallback chain across providers.

use igniter::ir::ProviderChoice;
use igniter::llm::LlmError;
use igniter::trace::Trace;
use serde_json::json;
use wiremock::ResponseTemplate;

use crate::fixtures::{
    agent, base_url, declared, llm, llm_with, named, program, provider_id, run, text_reply,
    url_path,
};
use crate::http::{bodies, ok, server, single};

fn gemini_agent_program() -> igniter::ir::Program {
    program(vec![agent(vec![ProviderChoice::Kind(named("gemini"))], &["gemini-2.5-flash"])], vec![])
}

#[tokio::test]
async fn env_variables_header_and_model_in_the_url() {
    let server = server(vec![ok(text_reply(named("gemini"), "hello"))]).await;
    let llm = llm_with(&[
        ("GEMINI_API_KEY", "gm-key"),
        ("GEMINI_BASE_URL", &format!("{}/", server.uri())),
    ]);
    assert_eq!(
        run(&llm, &gemini_agent_program(), &Trace::new(false), "hi").await.unwrap(),
        "hello"
    );
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].url.path(), url_path(named("gemini"), "gemini-2.5-flash"));
    assert_eq!(requests[0].headers["x-goog-api-key"], "gm-key");
    assert!(requests[0].headers.get("authorization").is_none());

    // GOOGLE_API_KEY wins when both are set, as in Google's SDK.
    let llm = llm_with(&[
        ("GEMINI_API_KEY", "gm-key"),
        ("GOOGLE_API_KEY", "google-key"),
        ("GEMINI_BASE_URL", &server.uri()),
    ]);
    run(&llm, &gemini_agent_program(), &Trace::new(false), "hi").await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[1].headers["x-goog-api-key"], "google-key");

    let llm = llm_with(&[("GEMINI_BASE_URL", &server.uri())]);
    let err = run(&llm, &gemini_agent_program(), &Trace::new(false), "hi").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "environment variables `GOOGLE_API_KEY` or `GEMINI_API_KEY` are not set (API key of \
         provider `gemini`)"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn model_names_cannot_change_the_route() {
    let server = server(vec![ok(text_reply(named("gemini"), "x"))]).await;
    let program =
        program(vec![agent(vec![ProviderChoice::Kind(named("gemini"))], &["a/b?c#d"])], vec![]);
    let llm = llm_with(&[("GEMINI_API_KEY", "k"), ("GEMINI_BASE_URL", &server.uri())]);
    run(&llm, &program, &Trace::new(false), "hi").await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].url.path(), "/v1beta/models/a%2Fb%3Fc%23d:generateContent");
    assert_eq!(requests[0].url.query(), None);
}

#[tokio::test]
async fn thought_signatures_and_call_ids_go_back_verbatim() {
    let model_turn = json!({"role": "model", "parts": [
        {"text": "thinking done", "thought": true, "thoughtSignature": "c2lnLTE="},
        {"functionCall": {"id": "fc-7", "name": "add", "args": {"a": 2, "b": 3}},
         "thoughtSignature": "c2lnLTI="}
    ]});
    let first = json!({"candidates": [{"content": model_turn, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 4,
            "thoughtsTokenCount": 30}});
    let server = server(vec![ok(first), ok(text_reply(named("gemini"), "five"))]).await;
    let program = single(named("gemini"), &server, 5_000, 0);
    assert_eq!(run(&llm(), &program, &Trace::new(false), "2+3?").await.unwrap(), "five");
    let sent = bodies(&server).await;
    assert_eq!(sent[1]["contents"][1], model_turn);
    assert_eq!(
        sent[1]["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse":
            {"name": "add", "response": {"output": "5"}, "id": "fc-7"}}]})
    );
}

#[tokio::test]
async fn safety_stops_and_blocked_prompts_fail_and_run_no_tool() {
    let call = json!({"functionCall": {"name": "add", "args": {"a": 1, "b": 1}}});
    let cases = [
        (
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Sure, here"}, call]},
                "finishReason": "SAFETY", "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT",
                "probability": "HIGH", "blocked": true}]}]}),
            "stopped with reason `SAFETY`; partial text: \"Sure, here\"",
        ),
        (
            json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                "usageMetadata": {"promptTokenCount": 9}}),
            "stopped with reason `prompt blocked: PROHIBITED_CONTENT`",
        ),
        (
            json!({"candidates": [{"content": {"role": "model", "parts": [call]},
                "finishReason": "MALFORMED_FUNCTION_CALL"}]}),
            "stopped with reason `MALFORMED_FUNCTION_CALL`",
        ),
    ];
    for (reply, expected) in cases {
        let server = server(vec![ok(reply)]).await;
        let trace = Trace::new(true);
        let err = run(&llm(), &single(named("gemini"), &server, 5_000, 0), &trace, "hi")
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Stopped { .. }), "{err}");
        assert!(err.to_string().contains(expected), "{err}");
        assert!(err.to_string().contains("model `m1` (provider `Fake`)"), "{err}");
        assert!(trace.entries().iter().all(|e| e.kind != "tool_call"));
    }
}

#[tokio::test]
async fn fallback_chains_across_providers_include_gemini() {
    // Gemini fails (503) and hands the conversation to Anthropic; then the
    // other way round.
    for (first, second) in [("gemini", "anthropic"), ("openai", "gemini")] {
        let failing = server(vec![ResponseTemplate::new(503).set_body_json(
            json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
        )])
        .await;
        let working = server(vec![ok(text_reply(named(second), "from b"))]).await;
        let a = declared("A", named(first), &base_url(named(first), &failing.uri()), 5_000, 1);
        let b = declared("B", named(second), &base_url(named(second), &working.uri()), 5_000, 0);
        let providers = vec![
            ProviderChoice::Declared(provider_id(0)),
            ProviderChoice::Declared(provider_id(1)),
        ];
        let program = program(vec![agent(providers, &["model-a", "model-b"])], vec![a, b]);
        let trace = Trace::new(true);
        assert_eq!(run(&llm(), &program, &trace, "hi").await.unwrap(), "from b");
        assert_eq!(bodies(&failing).await.len(), 2);
        assert!(
            trace.render().contains("status 503: The model is overloaded."),
            "{}",
            trace.render()
        );
        let requests = working.received_requests().await.unwrap();
        assert_eq!(requests[0].url.path(), url_path(named(second), "model-b"));
    }
}

#[tokio::test]
async fn thinking_tokens_count_as_output_and_cost() {
    let reply = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "42"}]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20,
            "thoughtsTokenCount": 300, "totalTokenCount": 420},
        "modelVersion": "gemini-2.5-flash"});
    let server = server(vec![ok(reply)]).await;
    let mut program = single(named("gemini"), &server, 5_000, 0);
    program.providers[0].price = Some(igniter::ir::Price { input: 1.0, output: 10.0 });
    let trace = Trace::new(true);
    assert_eq!(run(&llm(), &program, &trace, "hi").await.unwrap(), "42");
    let usage = trace.usage();
    let row = &usage.models()[0];
    // 20 answer tokens and 300 thinking tokens: all billed output.
    assert_eq!((row.input_tokens, row.output_tokens), (100, 320));
    let cost = row.cost_usd.unwrap();
    assert!((cost - (100.0 + 3_200.0) / 1e6).abs() < 1e-12, "{cost}");
    let model = trace.entries().into_iter().find(|e| e.kind == "model").unwrap();
    assert!(model.detail.contains("thinking 300"), "{}", model.detail);
}
