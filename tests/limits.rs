//! Provider limits and model usage, from the outside: real `ignite`
//! processes (and the library's engine) against a local fake OpenAI-format
//! provider that notes when each request arrives.
//!
//! Timing assertions are lower bounds only (the limits hold requests back;
//! how fast the rest goes is the benchmarks' business). A small allowance
//! covers the moment between the limiter letting a request go and the
//! request reaching the server, which varies on a loaded machine.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{ignite, listening};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Notes each request's arrival and answers with the `i`-th response (the
/// last one again once they run out).
struct Noted {
    arrivals: Arc<Mutex<Vec<Instant>>>,
    responses: Vec<ResponseTemplate>,
}

impl Respond for Noted {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut arrivals = self.arrivals.lock().unwrap();
        arrivals.push(Instant::now());
        let i = (arrivals.len() - 1).min(self.responses.len() - 1);
        self.responses[i].clone()
    }
}

/// A server answering `responses` in order; the arrival times it notes.
async fn server(responses: Vec<ResponseTemplate>) -> (MockServer, Arc<Mutex<Vec<Instant>>>) {
    let server = MockServer::start().await;
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let noted = Noted { arrivals: Arc::clone(&arrivals), responses };
    Mock::given(method("POST")).respond_with(noted).mount(&server).await;
    (server, arrivals)
}

/// An OpenAI chat completion saying `text`, having used `tokens` (in, out).
fn reply(text: &str, (input, output): (u64, u64)) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": input, "completion_tokens": output}
    }))
}

/// Writes `ask.ign`: provider `Fake` at `server` with `settings`, an agent
/// `Ask` whose chain is `chain` (models `a`, then `b`), a contract `Asked`.
fn program(dir: &Path, server: &MockServer, settings: &str, chain: &str) {
    let text = format!(
        r#"provider Fake {{
  kind openai
  base_url "{}/v1"
  api_key env("FAKE_KEY")
{settings}
}}

agent Ask {{
  provider {chain}
  model "a" fallback "b"
  input q: string
  prompt "{{q}}"
}}

contract Asked {{
  input q: string
  compute answer = Ask(q: q)
  output answer
}}
"#,
        server.uri()
    );
    std::fs::write(dir.join("ask.ign"), text).unwrap();
}

/// Runs `ignite` with `args` in `dir` off the async threads.
async fn run(dir: &Path, args: &[&str]) -> Output {
    let mut command = ignite(dir);
    command.args(args);
    tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `n` rows `{"q": "row i"}` in `rows.jsonl`.
fn rows(dir: &Path, n: usize) {
    let rows: Vec<String> = (1..=n).map(|i| json!({"q": format!("row {i}")}).to_string()).collect();
    std::fs::write(dir.join("rows.jsonl"), rows.join("\n") + "\n").unwrap();
}

/// The arrival times, sorted, as offsets from the first.
fn offsets(arrivals: &Mutex<Vec<Instant>>) -> Vec<Duration> {
    let mut arrivals = arrivals.lock().unwrap().clone();
    arrivals.sort();
    arrivals.iter().map(|t| t.duration_since(arrivals[0])).collect()
}

/// Every gap between two arrivals is at least `spacing` (less the allowance).
fn assert_spaced(offsets: &[Duration], spacing: Duration) {
    let allowance = spacing / 4;
    for pair in offsets.windows(2) {
        assert!(pair[1] - pair[0] >= spacing - allowance, "arrivals {offsets:?}");
    }
}

/// Five rows at once share the provider's limiter: 300 a minute lets one
/// request start every 200 ms, with no burst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_spaces_the_requests_of_every_row_of_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (server, arrivals) = server(vec![reply("ok", (3, 1))]).await;
    program(dir.path(), &server, "  rate_limit 300 per minute", "Fake");
    rows(dir.path(), 5);
    let output = run(dir.path(), &["run", "ask.ign", "--batch", "rows.jsonl", "--jobs", "5"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let offsets = offsets(&arrivals);
    assert_eq!(offsets.len(), 5);
    assert_spaced(&offsets, Duration::from_millis(200));
}

/// A child process killed when dropped (also when a test fails).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ignite serve` has one limiter for all its requests: three at once
/// start 200 ms apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_spaces_the_requests_of_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let (server, arrivals) = server(vec![reply("ok", (3, 1))]).await;
    program(dir.path(), &server, "  rate_limit 300 per minute", "Fake");
    let mut child = Killed(
        ignite(dir.path())
            .args(["serve", "ask.ign", "--port", "0"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.0.stderr.take().unwrap();
    let (base, _) = tokio::task::spawn_blocking(move || listening(stderr)).await.unwrap();
    let client = support::http();
    let ask = |i: usize| {
        let request =
            client.post(format!("{base}/contracts/Asked")).json(&json!({"q": format!("q{i}")}));
        async move { request.send().await.unwrap().status().as_u16() }
    };
    let statuses = futures_util::future::join_all((0..3).map(ask)).await;
    assert_eq!(statuses, [200, 200, 200]);
    let offsets = offsets(&arrivals);
    assert_eq!(offsets.len(), 3);
    assert_spaced(&offsets, Duration::from_millis(200));
}

/// A retry (the server says to retry at once) and a fallback to another
/// model of the same provider are requests too: each waits its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_and_fallbacks_wait_for_the_rate_limit() {
    let dir = tempfile::tempdir().unwrap();
    let busy = ResponseTemplate::new(429).insert_header("retry-after", "0");
    let broken = ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "down"}}));
    let (server, arrivals) = server(vec![busy, broken, reply("ok", (3, 1))]).await;
    program(dir.path(), &server, "  retries 1\n  rate_limit 300 per minute", "Fake fallback Fake");
    let output = run(dir.path(), &["run", "ask.ign", "--input", "q=hi", "--trace"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let offsets = offsets(&arrivals);
    assert_eq!(offsets.len(), 3, "429, then 500 after the retry, then the fallback");
    assert_spaced(&offsets, Duration::from_millis(200));
    // The waits are in the trace.
    let trace = stderr(&output);
    assert!(trace.contains("wait    limit      Asked > answer > model"), "{trace}");
}

/// `token_limit 100 per second` with replies that used 100 tokens each:
/// by the third request 200 tokens (and its estimate) were charged to a
/// bucket holding 100 and refilled at 100 a second, so it starts at least
/// a second after the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_limit_charges_what_replies_used() {
    let dir = tempfile::tempdir().unwrap();
    let (server, arrivals) = server(vec![reply("ok", (90, 10))]).await;
    program(dir.path(), &server, "  token_limit 100 per second", "Fake");
    rows(dir.path(), 3);
    let output = run(dir.path(), &["run", "ask.ign", "--batch", "rows.jsonl", "--jobs", "1"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let offsets = offsets(&arrivals);
    assert_eq!(offsets.len(), 3);
    assert!(offsets[2] >= Duration::from_millis(1000), "arrivals {offsets:?}");
}

/// The usage after a run and after a batch: calls, tokens and cost per
/// model; a replayed run spent nothing new, and says what the recording had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_and_cost_after_a_run_a_batch_and_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = server(vec![reply("ok", (1200, 300))]).await;
    program(dir.path(), &server, "  price input 3.0 output 15.0", "Fake");
    let once =
        run(dir.path(), &["run", "ask.ign", "--input", "q=hi", "--record", "run.jsonl"]).await;
    assert!(once.status.success(), "{}", stderr(&once));
    rows(dir.path(), 3);
    let batch = run(dir.path(), &["run", "ask.ign", "--batch", "rows.jsonl"]).await;
    assert!(batch.status.success(), "{}", stderr(&batch));
    drop(server);
    let replayed =
        run(dir.path(), &["run", "ask.ign", "--input", "q=hi", "--replay", "run.jsonl"]).await;
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    // 1,200 in at $3/M and 300 out at $15/M: $0.0081 a call.
    insta::assert_snapshot!(
        format!("----- run\n{}----- batch\n{}----- replay\n{}", stderr(&once), stderr(&batch), stderr(&replayed)),
        @r"
    ----- run
    usage   calls  tokens in  tokens out  cost USD
    Fake a      1       1200         300  0.008100
    ----- batch
    batch: 3 rows run, 0 failed
    usage   calls  tokens in  tokens out  cost USD
    Fake a      3       3600         900  0.024300
    ----- replay
    usage   calls  tokens in  tokens out  cost USD
    Fake a      0          0           0         -
    and 1 model call answered by a recording or journal (spent before: 1200 tokens in, 300 out, 0.008100 USD)
    "
    );
}

/// The library: a run's usage is on its [`RunOutput`], per provider and
/// model, fallbacks included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_reports_usage_per_model() {
    let dir = tempfile::tempdir().unwrap();
    let broken = ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "down"}}));
    let (server, _) = server(vec![broken, reply("ok", (1000, 100))]).await;
    program(dir.path(), &server, "  retries 0\n  price input 1 output 2", "Fake fallback Fake");
    let compilation = igniter::compile(&dir.path().join("ask.ign"));
    let program = compilation.program.unwrap();
    let vars = [("FAKE_KEY".to_owned(), "sk-fake".to_owned())].into();
    let engine = igniter::runtime::Engine::new(program).with_llm(igniter::llm::Llm::with_env(vars));
    let inputs = json!({"q": "hi"}).as_object().unwrap().clone();
    let output = tokio::task::spawn_blocking(move || {
        let contract = engine.contract(None).unwrap();
        engine.run(contract, &inputs, &igniter::runtime::RunOptions::default()).unwrap()
    })
    .await
    .unwrap();
    assert_eq!(output.outputs["answer"], Value::from("ok"));
    // The failed request to `a` answered nothing: only `b` spent tokens.
    let models = output.usage.models();
    assert_eq!(models.len(), 1, "{models:?}");
    let b = &models[0];
    assert_eq!((b.provider.as_str(), b.model.as_str(), b.calls), ("Fake", "b", 1));
    assert_eq!((b.input_tokens, b.output_tokens), (1000, 100));
    assert!((b.cost_usd.unwrap() - 0.0012).abs() < 1e-12);
    assert_eq!(output.usage.tokens(), (1000, 100));
}
