//! OpenTelemetry export, from the outside: real `ignite` processes with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a local OTLP/HTTP receiver
//! (a wiremock server whose requests are decoded with
//! `opentelemetry-proto`), against a local fake OpenAI-style provider
//! whose agent calls a tool. The span tree, the GenAI attributes, what
//! never leaks (prompts, keys) and the content switch are checked.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message as _;
use serde_json::json;
use support::listening;
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-fake-KEY-never-exported";
const PROMPT: &str = "PROMPT-TEXT-never-exported";
const SYSTEM: &str = "SYSTEM-TEXT-never-exported";
const TOKEN: &str = "otel-token-42";

/// An agent that calls a tool, inside a composed contract, next to a tool node.
fn program(dir: &Path, provider: &str) -> PathBuf {
    let text = r#"
provider Fake {
  kind openai
  base_url "BASE/v1"
  api_key env("FAKE_KEY")
  retries 0
}

tool Shout {
  description "Shouts"
  param text: string
  exec "sh" "-c" "cat > /dev/null; echo SHOUTED"
}

agent Helper {
  provider Fake
  model "m"
  system_prompt "SYSTEM"
  tools Shout
  input q: string
  prompt "PROMPT {q}"
}

contract Inner {
  input q: string
  compute answer = Helper(q: q)
  output answer
}

contract Ask {
  input q: string
  compute mark = Shout(text: q)
  compose inner = Inner(q: q)
  compute size = len(inner.answer)
  output size
  output mark
}

test "the agent answers" {
  run Ask(q: "hi")
  replay "cassettes/answers.json"
  expect size == 4
  expect mark == "SHOUTED"
}
"#
    .replace("BASE", provider)
    .replace("SYSTEM", SYSTEM)
    .replace("PROMPT", PROMPT);
    let file = dir.join("ask.ign");
    std::fs::write(&file, text).unwrap();
    file
}

/// The fake provider: a tool call first, then `done` once the tool's result is in.
async fn provider() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_string_contains("tool_call_id"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-2",
            "model": "m-2026",
            "choices": [{"message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 2}
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1",
            "model": "m-2026",
            "choices": [{
                "message": {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_77", "type": "function",
                    "function": {"name": "shout", "arguments": "{\"text\": \"hi\"}"}
                }]},
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5}
        })))
        .mount(&server)
        .await;
    server
}

/// The OTLP/HTTP receiver: accepts every export.
async fn receiver() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    server
}

fn ignite(dir: &Path, receiver: &MockServer) -> Command {
    let mut command = support::ignite(dir);
    command
        .env("FAKE_KEY", KEY)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.uri())
        .env("OTEL_EXPORTER_OTLP_HEADERS", format!("x-otel-token={TOKEN}"))
        .env("OTEL_SERVICE_NAME", "otel-test")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT");
    command
}

/// `ignite run FILE --input q=hi`, exporting to `receiver`.
fn run_ask(dir: &Path, receiver: &MockServer, file: &Path) -> Command {
    let mut command = ignite(dir, receiver);
    command.arg("run").arg(file).args(["--input", "q=hi"]);
    command
}

/// What the receiver got: the spans, and every request body as bytes.
struct Exported {
    spans: Vec<Span>,
    bodies: Vec<Vec<u8>>,
    services: Vec<String>,
}

async fn exported(receiver: &MockServer) -> Exported {
    let requests = receiver.received_requests().await.unwrap();
    let mut out = Exported { spans: Vec::new(), bodies: Vec::new(), services: Vec::new() };
    for request in requests {
        assert_eq!(
            request.headers.get("x-otel-token").unwrap(),
            TOKEN,
            "OTEL_EXPORTER_OTLP_HEADERS"
        );
        assert_eq!(request.headers.get("content-type").unwrap(), "application/x-protobuf");
        let export = ExportTraceServiceRequest::decode(request.body.as_slice()).unwrap();
        for resource in export.resource_spans {
            let attributes = resource.resource.map(|r| r.attributes).unwrap_or_default();
            if let Some(name) = text(&attributes, "service.name") {
                out.services.push(name);
            }
            for scope in resource.scope_spans {
                out.spans.extend(scope.spans);
            }
        }
        out.bodies.push(request.body);
    }
    out
}

fn value<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    match value(attributes, key)? {
        Any::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

fn int(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match value(attributes, key)? {
        Any::IntValue(n) => Some(*n),
        _ => None,
    }
}

fn strings(attributes: &[KeyValue], key: &str) -> Vec<String> {
    match value(attributes, key) {
        Some(Any::ArrayValue(array)) => array
            .values
            .iter()
            .filter_map(|v: &AnyValue| match &v.value {
                Some(Any::StringValue(s)) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

impl Exported {
    fn named(&self, name: &str) -> Vec<&Span> {
        self.spans.iter().filter(|s| s.name == name).collect()
    }

    fn one(&self, name: &str) -> &Span {
        let found = self.named(name);
        let names: Vec<&str> = self.spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(found.len(), 1, "one span `{name}` among {names:?}");
        found[0]
    }

    fn children(&self, parent: &Span) -> Vec<&Span> {
        self.spans.iter().filter(|s| s.parent_span_id == parent.span_id).collect()
    }

    /// True when any exported byte sequence contains `needle`.
    fn contains(&self, needle: &str) -> bool {
        self.bodies.iter().any(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
    }
}

fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_exports_its_span_tree_with_genai_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let (provider, receiver) = (provider().await, receiver().await);
    let file = program(dir.path(), &provider.uri());
    let output = run_ask(dir.path(), &receiver, &file).output().unwrap();
    succeeded(&output);
    let outputs: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outputs, json!({"size": 4, "mark": "SHOUTED"}));
    let got = exported(&receiver).await;
    assert_eq!(got.services, vec!["otel-test"], "OTEL_SERVICE_NAME names the service");

    // run > node > (compose > node > chat, execute_tool)
    let run = got.one("run Ask");
    assert!(run.parent_span_id.is_empty(), "the run is the root");
    assert_eq!(text(&run.attributes, "ignite.contract").as_deref(), Some("Ask"));
    assert!(got.spans.iter().all(|s| s.trace_id == run.trace_id), "one trace");
    let mut nodes: Vec<&str> = got.children(run).iter().map(|s| s.name.as_str()).collect();
    nodes.sort_unstable();
    assert_eq!(nodes, ["Ask > inner", "Ask > mark", "Ask > size"]);
    let mark = got.one("Ask > mark");
    assert_eq!(text(&mark.attributes, "ignite.node.kind").as_deref(), Some("tool"));
    let inner = got.one("Ask > inner");
    assert_eq!(text(&inner.attributes, "ignite.node.kind").as_deref(), Some("compose"));
    let answer = got.one("Ask.inner > answer");
    assert_eq!(answer.parent_span_id, inner.span_id);
    assert_eq!(text(&answer.attributes, "gen_ai.agent.name").as_deref(), Some("Helper"));

    // Model calls: two turns, children of the agent's node.
    let chats = got.named("chat m");
    assert_eq!(chats.len(), 2);
    let mut usage = Vec::new();
    for chat in &chats {
        let a = &chat.attributes;
        assert_eq!(chat.parent_span_id, answer.span_id);
        assert_eq!(text(a, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(text(a, "gen_ai.provider.name").as_deref(), Some("openai"));
        assert_eq!(text(a, "gen_ai.request.model").as_deref(), Some("m"));
        assert_eq!(text(a, "gen_ai.response.model").as_deref(), Some("m-2026"));
        assert_eq!(text(a, "server.address").as_deref(), Some("127.0.0.1"));
        assert_eq!(text(a, "ignite.effect.source").as_deref(), Some("live"));
        usage.push((
            int(a, "gen_ai.usage.input_tokens").unwrap(),
            int(a, "gen_ai.usage.output_tokens").unwrap(),
            strings(a, "gen_ai.response.finish_reasons"),
            text(a, "gen_ai.response.id").unwrap(),
        ));
    }
    usage.sort();
    assert_eq!(
        usage,
        [
            (11, 5, vec!["tool_call".to_owned()], "chatcmpl-1".to_owned()),
            (20, 2, vec!["stop".to_owned()], "chatcmpl-2".to_owned())
        ]
    );

    // Tool calls: the agent's (with the model's call id) and the tool node's.
    let tools = got.named("execute_tool shout");
    assert_eq!(tools.len(), 2);
    let by_parent: HashMap<&[u8], &Span> =
        tools.iter().map(|s| (s.parent_span_id.as_slice(), *s)).collect();
    let from_agent = by_parent[answer.span_id.as_slice()];
    assert_eq!(text(&from_agent.attributes, "gen_ai.tool.call.id").as_deref(), Some("call_77"));
    let from_node = by_parent[mark.span_id.as_slice()];
    assert_eq!(text(&from_node.attributes, "gen_ai.tool.call.id"), None);
    for tool in tools {
        let a = &tool.attributes;
        assert_eq!(text(a, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
        assert_eq!(text(a, "gen_ai.tool.name").as_deref(), Some("shout"));
        assert_eq!(text(a, "gen_ai.tool.call.arguments"), None, "no content by default");
    }
    assert!(
        got.spans
            .iter()
            .all(|s| s.status.as_ref().is_none_or(|st| st.code != StatusCode::Error as i32))
    );

    // Neither prompts, nor the key, nor the exporter's header.
    for secret in [PROMPT, SYSTEM, KEY, TOKEN, "SHOUTED"] {
        assert!(!got.contains(secret), "`{secret}` was exported");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_content_is_exported_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (provider, receiver) = (provider().await, receiver().await);
    let file = program(dir.path(), &provider.uri());
    let output = run_ask(dir.path(), &receiver, &file)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .output()
        .unwrap();
    succeeded(&output);
    let got = exported(&receiver).await;
    let chats = got.named("chat m");
    let inputs: Vec<String> =
        chats.iter().filter_map(|c| text(&c.attributes, "gen_ai.input.messages")).collect();
    assert_eq!(inputs.len(), 2);
    assert!(inputs.iter().all(|m| m.contains(PROMPT)));
    let system = text(&chats[0].attributes, "gen_ai.system_instructions").unwrap();
    assert!(system.contains(SYSTEM));
    let outputs: Vec<String> =
        chats.iter().filter_map(|c| text(&c.attributes, "gen_ai.output.messages")).collect();
    assert!(outputs.iter().any(|m| m.contains("\"done\"")), "{outputs:?}");
    let results: Vec<String> = got
        .named("execute_tool shout")
        .iter()
        .filter_map(|s| text(&s.attributes, "gen_ai.tool.call.result"))
        .collect();
    assert_eq!(results, ["\"SHOUTED\"", "\"SHOUTED\""]);
    assert!(!got.contains(KEY) && !got.contains(TOKEN), "keys never go out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_marks_its_spans_and_still_exports_them() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = receiver().await;
    let provider = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "busy"}})),
        )
        .mount(&provider)
        .await;
    let file = program(dir.path(), &provider.uri());
    let output = run_ask(dir.path(), &receiver, &file).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let got = exported(&receiver).await;
    let failed = |span: &Span| {
        let status = span.status.clone().unwrap_or_default();
        assert_eq!(status.code, StatusCode::Error as i32, "{} failed", span.name);
        text(&span.attributes, "error.type").unwrap()
    };
    assert_eq!(failed(got.one("chat m")), "503");
    assert_eq!(failed(got.one("Ask.inner > answer")), "ignite::llm::provider");
    assert_eq!(failed(got.one("Ask > inner")), "ignite::run::agent_failed");
    assert_eq!(failed(got.one("run Ask")), "ignite::run::agent_failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_rows_and_test_blocks_get_a_run_span_each_and_stored_calls_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let (provider, receiver) = (provider().await, receiver().await);
    let file = program(dir.path(), &provider.uri());
    std::fs::write(dir.path().join("rows.jsonl"), "{\"q\": \"hi\"}\n{\"q\": \"ho\"}\n").unwrap();
    let output = ignite(dir.path(), &receiver)
        .arg("run")
        .arg(&file)
        .args(["--batch", "rows.jsonl", "--out", "out.jsonl"])
        .output()
        .unwrap();
    succeeded(&output);
    let got = exported(&receiver).await;
    let runs = got.named("run Ask");
    let mut rows: Vec<i64> =
        runs.iter().map(|r| int(&r.attributes, "ignite.batch.row").unwrap()).collect();
    rows.sort_unstable();
    assert_eq!(rows, [1, 2]);
    assert_ne!(runs[0].trace_id, runs[1].trace_id, "a trace per row");

    // `ignite test --record` asks the provider; `ignite test` replays.
    let record = ignite(dir.path(), &receiver).arg("test").arg(&file).arg("--record").output();
    succeeded(&record.unwrap());
    let asked = provider.received_requests().await.unwrap().len();
    let receiver = self::receiver().await;
    let output = ignite(dir.path(), &receiver).arg("test").arg(&file).output().unwrap();
    succeeded(&output);
    assert_eq!(provider.received_requests().await.unwrap().len(), asked, "replayed offline");
    let got = exported(&receiver).await;
    let run = got.one("run Ask");
    assert_eq!(text(&run.attributes, "ignite.test").as_deref(), Some("the agent answers"));
    // No call was made: each span says which store answered.
    let chats = got.named("chat m");
    assert_eq!(chats.len(), 2);
    for span in chats.into_iter().chain(got.named("execute_tool shout")) {
        let source = text(&span.attributes, "ignite.effect.source").unwrap();
        assert_eq!(source, "replay", "{}", span.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_tool_calls_are_marked_not_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = receiver().await;
    std::fs::write(
        dir.path().join("cached.ign"),
        r#"
tool Count {
  description "Counts its real calls"
  param n: integer
  exec "sh" "-c" "echo x >> calls.txt; echo 1"
  cache
}

contract Once {
  input n: integer
  compute c = Count(n: n)
  output c
}
"#,
    )
    .unwrap();
    for _ in 0..2 {
        let output = ignite(dir.path(), &receiver)
            .args(["run", "cached.ign", "--input", "n=3"])
            .output()
            .unwrap();
        succeeded(&output);
    }
    let calls = std::fs::read_to_string(dir.path().join("calls.txt")).unwrap();
    assert_eq!(calls.lines().count(), 1, "the second run is answered by the cache");
    let got = exported(&receiver).await;
    let mut sources: Vec<String> = got
        .named("execute_tool count")
        .iter()
        .map(|s| text(&s.attributes, "ignite.effect.source").unwrap())
        .collect();
    sources.sort();
    assert_eq!(sources, ["cache", "live"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_request_joins_the_callers_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (provider, receiver) = (provider().await, receiver().await);
    let file = program(dir.path(), &provider.uri());
    let mut child = ignite(dir.path(), &receiver)
        .arg("serve")
        .arg(&file)
        .args(["--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (base, _stderr) = listening(child.stderr.take().unwrap());
    let response = support::http()
        .post(format!("{base}/contracts/Ask"))
        .header("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        .json(&json!({"q": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    assert!(child.wait().unwrap().success());
    let got = exported(&receiver).await;
    let run = got.one("run Ask");
    assert_eq!(hex(&run.trace_id), "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(hex(&run.parent_span_id), "b7ad6b7169203331");
    assert_eq!(got.named("chat m").len(), 2);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_flushes_the_spans_that_ended() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = receiver().await;
    std::fs::write(
        dir.path().join("slow.ign"),
        r#"
tool Quick {
  description "Answers at once"
  param n: integer
  exec "sh" "-c" "echo 1"
}

tool Slow {
  description "Says it started, then waits"
  param n: integer
  exec "sh" "-c" "touch started; sleep 30; echo 2"
}

contract Interrupted {
  input n: integer
  compute a = Quick(n: n)
  compute b = Slow(n: a)
  output b
}
"#,
    )
    .unwrap();
    let mut child = ignite(dir.path(), &receiver)
        .args(["run", "slow.ign", "--input", "n=1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = dir.path().join("started");
    for _ in 0..1000 {
        if started.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(started.exists(), "the slow tool started");
    let sent = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let got = exported(&receiver).await;
    // The quick call ended before the signal: exported. Whether the slow
    // call and the run also end (killed) before the process exits is a
    // race; either way is right.
    assert_eq!(got.one("execute_tool quick").parent_span_id, got.one("Interrupted > a").span_id);
}

/// A served run stopped at its deadline has one code everywhere: the 504
/// body's and its run span's `error.type` (the span once said `no_contract`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_at_its_deadline_says_so_in_its_span() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = receiver().await;
    std::fs::write(
        dir.path().join("slow.ign"),
        r#"
tool Slow {
  description "Waits"
  exec "sleep" "30"
}

contract Wait {
  compute done = Slow()
  output done
}
"#,
    )
    .unwrap();
    let mut child = ignite(dir.path(), &receiver)
        .args(["serve", "slow.ign", "--port", "0", "--timeout", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (base, _stderr) = listening(child.stderr.take().unwrap());
    let response = support::http().post(format!("{base}/contracts/Wait")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 504);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "ignite::run::deadline");
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    assert!(child.wait().unwrap().success());
    let got = exported(&receiver).await;
    let run = got.one("run Wait");
    assert_eq!(run.status.clone().unwrap_or_default().code, StatusCode::Error as i32);
    assert_eq!(text(&run.attributes, "error.type").unwrap(), "ignite::run::deadline");
}
