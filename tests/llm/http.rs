//! The loop and the HTTP providers against local fake servers, for each wire format.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use igniter::effects::Scope;
use igniter::ir::{ProviderChoice, ProviderKind};
use igniter::llm::LlmError;
use igniter::trace::Trace;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::fixtures::{
    agent, base_url, declared, kinds, llm, llm_with, named, program, provider_id, recording, run,
    run_with, sent_results, text_reply, tool_reply, url_path,
};

/// Answers with `responses` in order, then repeats the last one.
struct Seq(Mutex<VecDeque<ResponseTemplate>>);

impl Respond for Seq {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut queue = self.0.lock().unwrap();
        if queue.len() > 1 { queue.pop_front().unwrap() } else { queue[0].clone() }
    }
}

pub(crate) async fn server(responses: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Seq(Mutex::new(responses.into())))
        .mount(&server)
        .await;
    server
}

pub(crate) fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

pub(crate) async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

/// A program whose agent uses one declared provider of `kind` at `server`.
pub(crate) fn single(
    kind: ProviderKind,
    server: &MockServer,
    timeout_ms: u64,
    retries: u32,
) -> igniter::ir::Program {
    let provider = declared("Fake", kind, &base_url(kind, &server.uri()), timeout_ms, retries);
    program(vec![agent(vec![ProviderChoice::Declared(provider_id(0))], &["m1"])], vec![provider])
}

#[tokio::test]
async fn error_table_results_in_call_order() {
    for kind in kinds() {
        let calls = [
            ("c1", "add", json!({"a": 2, "b": 3})),
            ("c2", "no_such_tool", json!({})),
            ("c3", "add", json!({"a": "two"})),
            ("c4", "divide", json!({"a": 1, "b": 0})),
            ("c5", "lookup", json!({"sku": "SKU-1"})),
        ];
        let server =
            server(vec![ok(tool_reply(kind, &calls, false)), ok(text_reply(kind, "done"))]).await;
        let program = single(kind, &server, 5_000, 0);
        let trace = Trace::new(true);
        assert_eq!(run(&llm(), &program, &trace, "hi").await.unwrap(), "done", "{kind:?}");
        let sent = bodies(&server).await;
        assert_eq!(sent.len(), 2);
        let results = sent_results(kind, &sent[1]);
        assert_eq!(results.len(), 5, "{kind:?}: {}", sent[1]);
        assert_eq!(results[0].0, "5");
        assert_eq!(results[1].0, "Unknown tool: no_such_tool");
        assert!(results[2].0.starts_with("Error: "), "{}", results[2].0);
        assert!(results[3].0.starts_with("Error: "), "{}", results[3].0);
        assert_eq!(results[4].0, r#"{"sku":"SKU-1","price":29.99}"#);
        if matches!(kind.name(), "anthropic" | "gemini") {
            let flags: Vec<bool> = results.iter().map(|r| r.1).collect();
            assert_eq!(flags, [false, true, true, true, false]);
        }
        let tool_calls = trace.entries().iter().filter(|e| e.kind == "tool_call").count();
        assert_eq!(tool_calls, 5);
        let model = trace.entries().into_iter().find(|e| e.kind == "model").unwrap();
        assert!(model.detail.contains("tokens 20 in / 8 out"), "{}", model.detail);
    }
}

#[tokio::test]
async fn capability_failure_runs_no_tool() {
    for kind in kinds() {
        let calls =
            [("c1", "add", json!({"a": 1, "b": 1})), ("c2", "send_email", json!({"to": "x"}))];
        let server =
            server(vec![ok(tool_reply(kind, &calls, false)), ok(text_reply(kind, "no"))]).await;
        let trace = Trace::new(true);
        let err = run(&llm(), &single(kind, &server, 5_000, 0), &trace, "hi").await.unwrap_err();
        assert!(matches!(err, LlmError::Capability(_)), "{err}");
        assert!(err.to_string().contains("send_email"), "{err}");
        assert_eq!(bodies(&server).await.len(), 1);
        assert!(trace.entries().iter().all(|e| e.kind != "tool_call"));
    }
}

#[tokio::test]
async fn tool_loop_limit() {
    for kind in kinds() {
        let calls = [("c1", "add", json!({"a": 1, "b": 1}))];
        let server = server(vec![ok(tool_reply(kind, &calls, false))]).await;
        let err = run(&llm(), &single(kind, &server, 5_000, 0), &Trace::new(false), "hi")
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::ToolLoop { limit: 3, .. }), "{err}");
        assert_eq!(err.to_string(), "agent `Assistant` exceeded max_tool_iterations (3)");
        assert_eq!(bodies(&server).await.len(), 4);
    }
}

#[tokio::test]
async fn truncated_reply_runs_no_tool() {
    for kind in kinds() {
        let calls = [("c1", "add", json!({"a": 1, "b": 1}))];
        let server = server(vec![ok(tool_reply(kind, &calls, true))]).await;
        let trace = Trace::new(true);
        let err = run(&llm(), &single(kind, &server, 5_000, 0), &trace, "hi").await.unwrap_err();
        assert!(matches!(err, LlmError::Truncated { .. }), "{err}");
        assert!(trace.entries().iter().all(|e| e.kind != "tool_call"));
    }
}

#[tokio::test]
async fn malformed_json() {
    for kind in kinds() {
        let server = server(vec![ResponseTemplate::new(200).set_body_string("{not json")]).await;
        let err = run(&llm(), &single(kind, &server, 5_000, 2), &Trace::new(false), "hi")
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Malformed { .. }), "{err}");
        assert_eq!(err.code().as_str(), "ignite::llm::malformed");
        let server = server_json(json!({"unexpected": true})).await;
        let err = run(&llm(), &single(kind, &server, 5_000, 2), &Trace::new(false), "hi")
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Malformed { .. }), "{err}");
    }
}

async fn server_json(body: Value) -> MockServer {
    server(vec![ok(body)]).await
}

#[tokio::test]
async fn rate_limit_then_success_honours_retry_after() {
    for kind in kinds() {
        let limited = ResponseTemplate::new(429)
            .insert_header("retry-after", "0.2")
            .set_body_json(json!({"error": {"type": "rate_limit_error", "message": "slow down"}}));
        let server = server(vec![limited, ok(text_reply(kind, "fine"))]).await;
        let trace = Trace::new(true);
        let started = Instant::now();
        let text = run(&llm(), &single(kind, &server, 5_000, 2), &trace, "hi").await.unwrap();
        assert_eq!(text, "fine");
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert_eq!(bodies(&server).await.len(), 2);
        let statuses: Vec<String> = trace.entries().iter().map(|e| e.status.to_owned()).collect();
        assert_eq!(statuses, ["retry", "ok"]);
        assert!(trace.entries()[0].detail.contains("status 429: slow down"));
    }
}

#[tokio::test]
async fn server_errors_fall_back_to_second_provider() {
    for kind in kinds() {
        let failing = server(vec![ResponseTemplate::new(500).set_body_string("boom")]).await;
        let working = server(vec![ok(text_reply(named("openai"), "from b"))]).await;
        let a = declared("A", kind, &base_url(kind, &failing.uri()), 5_000, 2);
        let b =
            declared("B", named("openai"), &base_url(named("openai"), &working.uri()), 5_000, 0);
        let providers = vec![
            ProviderChoice::Declared(provider_id(0)),
            ProviderChoice::Declared(provider_id(1)),
        ];
        let program = program(vec![agent(providers, &["model-a", "model-b"])], vec![a, b]);
        let text = run(&llm(), &program, &Trace::new(false), "hi").await.unwrap();
        assert_eq!(text, "from b");
        assert_eq!(bodies(&failing).await.len(), 3);
        let sent = bodies(&working).await;
        assert_eq!(sent[0]["model"], "model-b");
    }
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    for kind in kinds() {
        let bad = ResponseTemplate::new(400)
            .set_body_json(json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad model"}}));
        let server = server(vec![bad]).await;
        let err = run(&llm(), &single(kind, &server, 5_000, 2), &Trace::new(false), "hi")
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "provider `Fake` failed after 1 attempt(s): status 400: bad model"
        );
        assert_eq!(bodies(&server).await.len(), 1);
    }
}

#[tokio::test]
async fn timeouts_are_retried_then_fail() {
    let kind = named("openai");
    let slow = ResponseTemplate::new(200)
        .set_body_json(text_reply(kind, "late"))
        .set_delay(Duration::from_secs(2));
    let server = server(vec![slow]).await;
    let err =
        run(&llm(), &single(kind, &server, 100, 1), &Trace::new(false), "hi").await.unwrap_err();
    match &err {
        LlmError::Provider { status: None, attempts: 2, message, .. } => {
            assert!(message.contains("timed out"), "{message}");
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn missing_key_sends_nothing_and_names_the_variable() {
    let server = server(vec![ok(text_reply(named("anthropic"), "x"))]).await;
    // Even with a working fallback: a configuration error does not fall back.
    let providers =
        vec![ProviderChoice::Kind(named("anthropic")), ProviderChoice::Kind(named("ollama"))];
    let program = program(vec![agent(providers, &["m"])], vec![]);
    let llm = llm_with(&[("ANTHROPIC_BASE_URL", &server.uri()), ("OLLAMA_HOST", &server.uri())]);
    let err = run(&llm, &program, &Trace::new(false), "hi").await.unwrap_err();
    assert!(matches!(err, LlmError::Config { .. }));
    assert!(err.to_string().contains("`ANTHROPIC_API_KEY`"), "{err}");
    assert!(bodies(&server).await.is_empty());
}

#[tokio::test]
async fn env_settings_and_headers() {
    let server = server(vec![ok(text_reply(named("anthropic"), "hello"))]).await;
    let program =
        program(vec![agent(vec![ProviderChoice::Kind(named("anthropic"))], &["claude"])], vec![]);
    let llm = llm_with(&[
        ("ANTHROPIC_API_KEY", "sk-ant-xyz"),
        ("ANTHROPIC_BASE_URL", &format!("{}/", server.uri())),
    ]);
    assert_eq!(run(&llm, &program, &Trace::new(false), "hi").await.unwrap(), "hello");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].url.path(), "/v1/messages");
    assert_eq!(requests[0].headers["x-api-key"], "sk-ant-xyz");
    assert_eq!(requests[0].headers["anthropic-version"], "2023-06-01");
    let openai = server_json(text_reply(named("openai"), "hi")).await;
    let program = crate::fixtures::program(
        vec![agent(vec![ProviderChoice::Kind(named("openai"))], &["gpt"])],
        vec![],
    );
    let llm = llm_with(&[
        ("OPENAI_API_KEY", "sk-oa"),
        ("OPENAI_BASE_URL", &format!("{}/v1", openai.uri())),
    ]);
    assert_eq!(run(&llm, &program, &Trace::new(false), "hi").await.unwrap(), "hi");
    let requests = openai.received_requests().await.unwrap();
    assert_eq!(requests[0].url.path(), url_path(named("openai"), "gpt"));
    assert_eq!(requests[0].headers["authorization"], "Bearer sk-oa");
}

#[tokio::test]
async fn keys_never_leak() {
    let key = "sk-test-secret-1234";
    for kind in kinds() {
        let echo = ResponseTemplate::new(401)
            .set_body_json(json!({"error": {"message": format!("invalid key {key}")}}));
        let server = server(vec![echo]).await;
        let dir =
            std::env::temp_dir().join(format!("ignite-llm-leak-{}-{kind:?}", std::process::id()));
        let llm = llm();
        let recording = recording(&dir);
        let trace = Trace::new(true);
        let program = single(kind, &server, 5_000, 0);
        let err = run_with(&llm, &program, &trace, "hi", recording.clone()).await.unwrap_err();
        recording.finish().unwrap();
        let recording = std::fs::read_to_string(&dir).unwrap();
        std::fs::remove_file(&dir).ok();
        for text in
            [err.to_string(), format!("{err:?}"), format!("{llm:?}"), trace.render(), recording]
        {
            assert!(!text.contains(key), "{text}");
        }
    }
}

/// A key straddling the point where a long error text is clipped is
/// redacted whole: redaction comes before clipping.
#[tokio::test]
async fn keys_are_redacted_before_clipping() {
    let key = "sk-test-secret-1234";
    let message = format!("{}{key} is not valid", "x".repeat(290));
    let echo = ResponseTemplate::new(401).set_body_json(json!({"error": {"message": message}}));
    for kind in kinds() {
        let server = server(vec![echo.clone()]).await;
        let err = run(&llm(), &single(kind, &server, 5_000, 0), &Trace::new(false), "hi")
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("xxx***"), "{text}");
        assert!(!text.contains("sk-t"), "{text}");
    }
}

/// A key a server echoes in 2xx replies (in tool arguments, in the answer)
/// reaches neither the answer, nor the next request, nor the recording.
#[tokio::test]
async fn keys_echoed_in_replies_go_nowhere() {
    let key = "sk-test-secret-1234";
    for kind in kinds() {
        let calls = [("c1", "lookup", json!({"sku": key}))];
        let server = server(vec![
            ok(tool_reply(kind, &calls, false)),
            ok(text_reply(kind, &format!("your key is {key}"))),
        ])
        .await;
        let dir =
            std::env::temp_dir().join(format!("ignite-llm-echo-{}-{kind:?}", std::process::id()));
        let recording = recording(&dir);
        let program = single(kind, &server, 5_000, 0);
        let answer = run_with(&llm(), &program, &Trace::new(false), "hi", recording.clone()).await;
        recording.finish().unwrap();
        let recording = std::fs::read_to_string(&dir).unwrap();
        std::fs::remove_file(&dir).ok();
        assert_eq!(answer.unwrap(), "your key is ***", "{kind:?}");
        let sent = bodies(&server).await;
        assert_eq!(sent.len(), 2);
        assert!(sent[1].to_string().contains("***"), "{}", sent[1]);
        for text in [sent[1].to_string(), recording] {
            assert!(!text.contains(key), "{kind:?}: {text}");
        }
    }
}

/// A provider redirecting to another host does not get the key sent there:
/// the redirect is not followed, not retried, and the error says why.
#[tokio::test]
async fn cross_origin_redirects_are_not_followed() {
    for kind in kinds() {
        let other = server(vec![ok(text_reply(kind, "stolen"))]).await;
        let moved = ResponseTemplate::new(307).insert_header("location", other.uri().as_str());
        let server = server(vec![moved]).await;
        let err = run(&llm(), &single(kind, &server, 5_000, 2), &Trace::new(false), "hi")
            .await
            .unwrap_err();
        match &err {
            LlmError::Provider { status: Some(307), attempts: 1, message, .. } => {
                assert!(message.starts_with("redirect to `http://127.0.0.1:"), "{message}");
            }
            other => panic!("{kind:?}: {other}"),
        }
        assert!(bodies(&other).await.is_empty(), "{kind:?}");
    }
}

/// A reply over the size limit is not read on: a malformed reply, named so.
#[tokio::test]
async fn replies_over_the_limit_fail() {
    for kind in kinds() {
        let server = server(vec![ok(text_reply(kind, &"x".repeat(2000)))]).await;
        let llm = llm().with_max_bytes(1000);
        let err = run(&llm, &single(kind, &server, 5_000, 0), &Trace::new(false), "hi")
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "provider `Fake` sent a malformed reply: the reply of provider `Fake` is larger than \
             the size limit of 1000 bytes; raise it with `--max-bytes`"
        );
    }
}

#[tokio::test]
async fn concurrent_agents_share_one_llm() {
    let kind = named("openai");
    let slow = ResponseTemplate::new(200)
        .set_body_json(text_reply(kind, "ok"))
        .set_delay(Duration::from_millis(100));
    let server = server(vec![slow]).await;
    let program = single(kind, &server, 5_000, 0);
    let llm = llm();
    let trace = Trace::new(false);
    let runs = (0..8).map(|i| {
        let (llm, program, trace) = (&llm, &program, &trace);
        async move { run(llm, program, trace, &format!("q{i}")).await }
    });
    let results = futures_util::future::join_all(runs).await;
    assert!(results.iter().all(|r| matches!(r.as_deref(), Ok("ok"))));
    assert_eq!(bodies(&server).await.len(), 8);
}

/// A native tool whose params come from schemars only.
struct Stock;

#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct StockArgs {
    /// Product SKU identifier
    sku: String,
    /// Warehouse to count in
    warehouse: Option<String>,
}

impl igniter::tools::NativeTool for Stock {
    fn name(&self) -> &str {
        "stock_level"
    }
    fn description(&self) -> &str {
        "Units in stock for a SKU"
    }
    fn parameters(&self) -> Value {
        igniter::tools::schema_for::<StockArgs>()
    }
    fn call(&self, args: Value) -> Result<Value, String> {
        Ok(json!({"sku": args["sku"], "units": 12}))
    }
}

#[tokio::test]
async fn native_tool_reaches_the_model_with_its_schemars_params() {
    use igniter::ir::{AgentId, Implementation, Tool, ToolId};
    let mut toolbox = igniter::tools::Toolbox::new();
    toolbox.register_native(Stock);
    let expected = igniter::tools::schema_for::<StockArgs>();
    assert_eq!(expected["required"], json!(["sku"]));
    for kind in kinds() {
        let calls = [("c1", "stock_level", json!({"sku": "A"})), ("c2", "stock_level", json!({}))];
        let server =
            server(vec![ok(tool_reply(kind, &calls, false)), ok(text_reply(kind, "12"))]).await;
        let mut program = single(kind, &server, 5_000, 0);
        // Declared `native` with no params and no description: both come from the native.
        program.tools.push(Tool {
            name: "StockLevel".into(),
            tool_name: "stock_level".into(),
            description: String::new(),
            params: Vec::new(),
            capabilities: Vec::new(),
            approval: None,
            implementation: Implementation::Native { name: "stock_level".into() },
            result: None,
            timeout: None,
            retries: 0,
            cache: None,
            dir: ".".into(),
            span: crate::fixtures::span(),
        });
        program.agents[0].tools = vec![ToolId::from_index(4)];
        let trace = Trace::new(false);
        let answer = llm()
            .run_agent(
                &program,
                AgentId::from_index(0),
                &crate::fixtures::question("q"),
                &toolbox,
                &trace,
                &Scope::live("p"),
            )
            .await
            .unwrap();
        assert_eq!(answer, "12");
        let sent = bodies(&server).await;
        let tool = match kind.name() {
            "anthropic" => sent[0]["tools"][0]["input_schema"].clone(),
            "gemini" => {
                sent[0]["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"].clone()
            }
            _ => sent[0]["tools"][0]["function"]["parameters"].clone(),
        };
        let described = match kind.name() {
            "anthropic" => sent[0]["tools"][0]["description"].clone(),
            "gemini" => sent[0]["tools"][0]["functionDeclarations"][0]["description"].clone(),
            _ => sent[0]["tools"][0]["function"]["description"].clone(),
        };
        assert_eq!(described, "Units in stock for a SKU", "{kind:?}");
        assert_eq!(tool["properties"]["sku"]["description"], "Product SKU identifier", "{kind:?}");
        // OpenAI's strict shape lists every property, the optional one nullable.
        let required =
            if kind.name() == "openai" { json!(["sku", "warehouse"]) } else { json!(["sku"]) };
        assert_eq!(tool["required"], required, "{kind:?}");
        // Validated against the same schema: the call without `sku` is a tool error.
        let results = sent_results(kind, &sent[1]);
        assert_eq!(results[0].0, r#"{"sku":"A","units":12}"#, "{kind:?}");
        assert!(results[1].0.contains("`sku`: missing required property"), "{kind:?}: {results:?}");
    }
}

/// A stop reason ignite does not know fails the node naming it, and an
/// empty answer is never a success, for every provider.
#[tokio::test]
async fn unknown_stop_reasons_and_empty_answers_fail() {
    for kind in kinds() {
        let reply = crate::fixtures::with_stop(kind, text_reply(kind, "half"), "mystery_reason");
        let stopping = server(vec![ok(reply)]).await;
        let err = run(&llm(), &single(kind, &stopping, 5_000, 0), &Trace::new(false), "hi")
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Stopped { .. }), "{kind:?}: {err}");
        assert!(
            err.to_string().contains("reason `mystery_reason`; partial text: \"half\""),
            "{kind:?}: {err}"
        );
        let empty = server(vec![ok(text_reply(kind, ""))]).await;
        let err = run(&llm(), &single(kind, &empty, 5_000, 0), &Trace::new(false), "hi")
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Empty { .. }), "{kind:?}: {err}");
    }
}

/// Only the settings the agent sets are sent, under each provider's name.
#[tokio::test]
async fn only_written_settings_are_sent() {
    for kind in kinds() {
        let server = server(vec![ok(text_reply(kind, "a"))]).await;
        let mut program = single(kind, &server, 5_000, 0);
        run(&llm(), &program, &Trace::new(false), "hi").await.unwrap();
        program.agents[0].temperature = Some(0.3);
        program.agents[0].max_tokens = Some(99);
        run(&llm(), &program, &Trace::new(false), "hi").await.unwrap();
        let sent = bodies(&server).await;
        let (temperature, limit) = match kind.name() {
            "anthropic" => ("/temperature", "/max_tokens"),
            // A declared base URL is a compatible server.
            "openai" => ("/temperature", "/max_tokens"),
            "ollama" => ("/options/temperature", "/options/num_predict"),
            "gemini" => ("/generationConfig/temperature", "/generationConfig/maxOutputTokens"),
            other => panic!("{other}"),
        };
        assert_eq!(sent[0].pointer(temperature), None, "{kind:?}: {}", sent[0]);
        // A kind whose API no longer takes `temperature` (Anthropic) is not sent it.
        let expected = if kind.ignores("temperature") { None } else { Some(json!(0.3)) };
        assert_eq!(sent[1].pointer(temperature), expected.as_ref(), "{kind:?}");
        assert_eq!(sent[1].pointer(limit), Some(&json!(99)), "{kind:?}");
        if kind.name() != "anthropic" {
            // Anthropic requires a limit: 4096 when the agent sets none.
            assert_eq!(sent[0].pointer(limit), None, "{kind:?}: {}", sent[0]);
        }
    }
}

/// `base_url env(...)` and `model env(...)` are read when the run starts:
/// the variable, else the default, else a configuration error naming it.
#[tokio::test]
async fn base_url_and_model_from_the_environment() {
    use igniter::ir::SettingText;
    let server =
        server(vec![ok(text_reply(named("openai"), "a")), ok(text_reply(named("openai"), "b"))])
            .await;
    let env = |var: &str, default: Option<&str>| SettingText::Env {
        var: var.into(),
        default: default.map(str::to_owned),
    };
    let mut program = single(named("openai"), &server, 5_000, 0);
    program.providers[0].base_url = Some(env("DEV_URL", None));
    program.agents[0].models = vec![env("DEV_MODEL", Some("m-default"))];
    let url = format!("{}/v1", server.uri());
    let llm = llm_with(&[("TEST_KEY", "k"), ("DEV_URL", &url)]);
    assert_eq!(run(&llm, &program, &Trace::new(false), "hi").await.unwrap(), "a");
    let llm = llm_with(&[("TEST_KEY", "k"), ("DEV_URL", &url), ("DEV_MODEL", "m-prod")]);
    assert_eq!(run(&llm, &program, &Trace::new(false), "hi").await.unwrap(), "b");
    let sent = bodies(&server).await;
    assert_eq!((&sent[0]["model"], &sent[1]["model"]), (&json!("m-default"), &json!("m-prod")));
    // Unset, without a default: nothing is sent, the error names the variable.
    let err =
        run(&llm_with(&[("TEST_KEY", "k")]), &program, &Trace::new(false), "hi").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("environment variable `DEV_URL` is not set (`base_url` of provider `Fake`)"),
        "{err}"
    );
    program.providers[0].base_url = Some(SettingText::Literal(url));
    program.agents[0].models = vec![env("DEV_MODEL", None)];
    let err =
        run(&llm_with(&[("TEST_KEY", "k")]), &program, &Trace::new(false), "hi").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("environment variable `DEV_MODEL` is not set (`model` of agent `Assistant`)"),
        "{err}"
    );
    assert_eq!(bodies(&server).await.len(), 2);
}
