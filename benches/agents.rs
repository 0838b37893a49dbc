//! Agent loop overhead and concurrency (`cargo bench --bench agents`).
//!
//! 1. Loop overhead: one agent makes 25 tool turns, then answers. Against a
//!    scripted provider (no HTTP) the whole time is the loop's own cost:
//!    building requests, parsing replies, validating and running the tool,
//!    tracing. Against a local fake OpenAI server it adds loopback HTTP and
//!    the fake's matching; with 20 ms latency per call, wall time minus the
//!    latencies is that overhead plus timer granularity.
//! 2. Concurrency: 8 agents share one `Llm`, each call takes 300 ms; the
//!    ideal wall time is 300 ms.
//! 3. Structured results: one scripted reply read as text, against the same
//!    reply read as `result Ticket` (a record with an enum, a nullable and a
//!    defaulted field): the difference is what reading, filling defaults and
//!    validating an answer adds per reply.

#![allow(clippy::print_stdout, clippy::unwrap_used, missing_docs)]

use std::time::{Duration, Instant};

use igniter::effects::Scope;
use igniter::ir::{AgentId, Program};
use igniter::llm::Llm;
use igniter::tools::Toolbox;
use igniter::trace::Trace;
use serde_json::{Map, json};
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TURNS: usize = 25;

/// An agent with one `returns` tool whose provider is `provider` (with
/// `declaration` for a declared one).
fn program(dir: &std::path::Path, declaration: &str, provider: &str) -> Program {
    let text = format!(
        r#"
{declaration}
tool Add {{
  description "adds"
  param a: integer
  param b: integer
  returns a + b
}}
agent Bench {{
  provider {provider}
  model "m"
  tools Add
  max_tool_iterations 1000
  input q: string
}}
"#
    );
    let file = dir.join("bench.ign");
    std::fs::write(&file, text).unwrap();
    let compilation = igniter::compile(&file);
    compilation.program.unwrap_or_else(|| {
        panic!("{}", compilation.diagnostics.render(&compilation.sources, false, 100))
    })
}

fn call(i: usize) -> serde_json::Value {
    json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": format!("c{i}"), "type": "function", "function": {"name": "add", "arguments": "{\"a\":1,\"b\":2}"}}]},
        "finish_reason": "tool_calls"}]})
}

/// A server that asks for `add` until the conversation holds `TURNS` results, then answers.
async fn server(latency: Duration) -> MockServer {
    let server = MockServer::start().await;
    let marker = format!("\"tool_call_id\":\"c{TURNS}\"");
    let done = json!({"choices": [{"message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}]});
    Mock::given(method("POST"))
        .and(body_string_contains(marker.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(done).set_delay(latency))
        .mount(&server)
        .await;
    for i in (1..=TURNS).rev() {
        let previous = format!("\"tool_call_id\":\"c{}\"", i - 1);
        let mock = Mock::given(method("POST"));
        let mock = if i == 1 { mock } else { mock.and(body_string_contains(previous.as_str())) };
        mock.respond_with(ResponseTemplate::new(200).set_body_json(call(i)).set_delay(latency))
            .mount(&server)
            .await;
    }
    server
}

fn openai(uri: &str) -> String {
    format!("provider Fake {{\n  kind openai\n  base_url \"{uri}/v1\"\n  retries 0\n}}")
}

async fn run(llm: &Llm, program: &Program, q: &str) -> serde_json::Value {
    run_with(llm, program, q, &Toolbox::new()).await
}

/// As [`run`] with `toolbox`, whose compiled schemas outlive the run (as in
/// an engine, where every agent node shares one).
async fn run_with(llm: &Llm, program: &Program, q: &str, toolbox: &Toolbox) -> serde_json::Value {
    let mut inputs = Map::new();
    inputs.insert("q".into(), json!(q));
    let scope = Scope::live("bench");
    llm.run_agent(program, AgentId(0), &inputs, toolbox, &Trace::new(true), &scope).await.unwrap()
}

/// The best of 5 runs of the 25-turn conversation, per model call.
async fn per_call(llm: &Llm, program: &Program, latency: Duration) -> (Duration, Duration) {
    run(llm, program, "warm up").await;
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        assert_eq!(run(llm, program, "go").await, json!("done"));
        best = best.min(started.elapsed());
    }
    let calls = u32::try_from(TURNS + 1).unwrap();
    (best, best.saturating_sub(latency * calls) / calls)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = std::env::temp_dir().join(format!("ignite-agents-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let llm = Llm::with_env(Default::default());

    let mut script: Vec<serde_json::Value> = (1..=TURNS)
        .map(|i| json!({"tool_calls": [{"id": format!("c{i}"), "name": "add", "arguments": {"a": 1, "b": 2}}]}))
        .collect();
    script.push(json!({"text": "done"}));
    std::fs::write(dir.join("script.json"), serde_json::to_string(&script).unwrap()).unwrap();
    let scripted = program(&dir, "", "script \"script.json\"");
    println!("| case | best of 5 (26 model calls) | per iteration |");
    println!("| --- | ---: | ---: |");
    let (best, overhead) = per_call(&llm, &scripted, Duration::ZERO).await;
    println!("| scripted provider (no HTTP) | {best:.2?} | {overhead:.2?} |");
    for latency in [Duration::ZERO, Duration::from_millis(20)] {
        let server = server(latency).await;
        let program = program(&dir, &openai(&server.uri()), "Fake");
        let (best, overhead) = per_call(&llm, &program, latency).await;
        println!(
            "| OpenAI wire format, fake server, {latency:?} latency | {best:.2?} | {overhead:.2?} above latency |"
        );
    }

    let slow = MockServer::start().await;
    let done = json!({"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]});
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(done).set_delay(Duration::from_millis(300)),
        )
        .mount(&slow)
        .await;
    let program = program(&dir, &openai(&slow.uri()), "Fake");
    let started = Instant::now();
    let runs = (0..8).map(|i| {
        let (llm, program) = (&llm, &program);
        async move { run(llm, program, &format!("agent {i}")).await }
    });
    futures_util::future::join_all(runs).await;
    println!(
        "\n8 agents x one 300 ms call each: wall {:.1?} (critical path 300 ms)",
        started.elapsed()
    );
    structured(&llm, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The best of `runs` single-reply agent runs sharing one toolbox.
async fn best_of(llm: &Llm, program: &Program, runs: usize) -> Duration {
    let toolbox = Toolbox::new();
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let started = Instant::now();
        run_with(llm, program, "go", &toolbox).await;
        best = best.min(started.elapsed());
    }
    best
}

/// One reply as text and as a typed `Ticket`; the difference per reply.
async fn structured(llm: &Llm, dir: &std::path::Path) {
    let answer = r#"```json
{"title": "Printer on fire", "priority": "high", "note": null, "owner": "ops"}
```"#;
    let script = json!([{"text": answer}]);
    std::fs::write(dir.join("answer.json"), script.to_string()).unwrap();
    let agent = |result: &str| {
        format!(
            r#"
enum Priority {{ low, normal, high }}
type Ticket {{
  title: string "One line"
  priority: Priority
  note: string?
  owner: string
  tags: array<string> = []
}}
agent Bench {{
  provider script "answer.json"
  model "m"
  input q: string
  {result}
}}
"#
        )
    };
    let compile = |text: String| {
        let file = dir.join("structured.ign");
        std::fs::write(&file, text).unwrap();
        igniter::compile(&file).program.unwrap()
    };
    let text = compile(agent(""));
    let typed = compile(agent("result Ticket"));
    assert_eq!(run(llm, &typed, "check").await["priority"], "high");
    const RUNS: usize = 2_000;
    best_of(llm, &text, 100).await;
    best_of(llm, &typed, 100).await;
    let (plain, structured) = (best_of(llm, &text, RUNS).await, best_of(llm, &typed, RUNS).await);
    println!("\n| one reply | best of {RUNS} |\n| --- | ---: |");
    println!("| as text | {plain:.2?} |\n| as `result Ticket` | {structured:.2?} |");
    println!("structured result adds {:.2?} per reply", structured.saturating_sub(plain));
}
