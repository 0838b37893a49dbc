//! Run budgets from the outside: real `ignite run` processes against a
//! local fake OpenAI-format provider that counts the requests it gets. A
//! request past a budget must never reach it; the node fails with
//! `ignite::run::budget`, naming the budget and what was spent.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use support::ignite;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Counts requests and answers each with `response`.
struct Counted {
    count: Arc<AtomicUsize>,
    response: ResponseTemplate,
}

impl Respond for Counted {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.response.clone()
    }
}

/// A server answering every request with `response`, and its count.
async fn counting(response: ResponseTemplate) -> (MockServer, Arc<AtomicUsize>) {
    let server = MockServer::start().await;
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Counted { count: Arc::clone(&count), response };
    Mock::given(method("POST")).respond_with(counted).mount(&server).await;
    (server, count)
}

/// An OpenAI reply that calls tool `Lookup` again, having used `tokens`.
fn tool_call(tokens: (u64, u64)) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "Lookup", "arguments": "{\"q\": \"x\"}"}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": tokens.0, "completion_tokens": tokens.1}
    }))
}

/// An OpenAI reply saying `done`.
fn answer() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2}
    }))
}

/// Writes `ask.ign`: provider `Fake` at `server` (with `settings`), an agent
/// `Ask` with a pure tool `Lookup` and 10 tool turns, and `contract`.
fn program(dir: &Path, server: &MockServer, settings: &str, contract: &str) {
    let text = format!(
        r#"provider Fake {{
  kind openai
  base_url "{}/v1"
  api_key env("FAKE_KEY")
  retries 0
{settings}
}}

tool Lookup {{
  param q: string
  returns "found {{q}}"
}}

agent Ask {{
  provider Fake
  model "m"
  tools Lookup
  max_tool_iterations 10
  input q: string
  prompt "{{q}}"
}}

{contract}
"#,
        server.uri()
    );
    std::fs::write(dir.join("ask.ign"), text).unwrap();
}

const ASKED: &str = "contract Asked {\n  BUDGET\n  input q: string\n  compute answer = Ask(q: q)\n  output answer\n}";

/// `contract Asked` with `budget` as its budget line.
fn asked(budget: &str) -> String {
    ASKED.replace("BUDGET", budget)
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

/// A rendered error's lines joined again (the report wraps at 100 columns).
fn unwrapped(err: &str) -> String {
    err.lines().map(|l| l.trim_start_matches([' ', '│', '×'])).collect::<Vec<_>>().join(" ")
}

/// The model keeps calling tools; `model_calls 3` lets exactly three
/// requests out, and the fourth is never sent.
#[tokio::test]
async fn model_calls_stops_the_request_past_it() {
    let (server, count) = counting(tool_call((20, 8))).await;
    let dir = tempfile::tempdir().unwrap();
    program(dir.path(), &server, "", &asked("budget model_calls 3"));
    let out = run(dir.path(), &["run", "ask.ign", "--input", "q=hi"]).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(count.load(Ordering::SeqCst), 3, "{err}");
    assert!(err.contains("ignite::run::budget"), "{err}");
    // The node, the budget, its owner, the usage.
    assert!(
        unwrapped(&err).contains(
            "Asked > answer: agent `Ask` failed: the budget `model_calls 3` of contract `Asked` is spent: 3 model calls, 84 tokens so far; the model request was not sent"
        ),
        "{err}"
    );
}

/// `--budget` tightens the contract's budget (2 < 5) and sets one where
/// the contract has none.
#[tokio::test]
async fn the_command_line_tightens_the_budget() {
    let (server, count) = counting(tool_call((20, 8))).await;
    let dir = tempfile::tempdir().unwrap();
    program(dir.path(), &server, "", &asked("budget model_calls 5"));
    let out =
        run(dir.path(), &["run", "ask.ign", "--input", "q=hi", "--budget", "model_calls=2"]).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(count.load(Ordering::SeqCst), 2);
    assert!(stderr(&out).contains("the budget `model_calls 2` of `--budget` is spent"));

    let (server, count) = counting(tool_call((20, 8))).await;
    program(dir.path(), &server, "", &asked(""));
    let out =
        run(dir.path(), &["run", "ask.ign", "--input", "q=hi", "--budget", "model_calls=4"]).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(count.load(Ordering::SeqCst), 4);
}

/// `tokens` and `usd` stop the request that starts after they are spent:
/// 60 tokens a reply under `tokens 100` lets two out; at $0.50 a reply
/// (500,000 tokens at $1 per million) `usd 0.75` lets two out.
#[tokio::test]
async fn tokens_and_usd_stop_requests_once_spent() {
    let (server, count) = counting(tool_call((50, 10))).await;
    let dir = tempfile::tempdir().unwrap();
    program(dir.path(), &server, "", &asked("budget tokens 100"));
    let out = run(dir.path(), &["run", "ask.ign", "--input", "q=hi"]).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(count.load(Ordering::SeqCst), 2);
    assert!(stderr(&out).contains("the budget `tokens 100` of contract `Asked` is spent"));

    let (server, count) = counting(tool_call((400_000, 100_000))).await;
    program(dir.path(), &server, "  price input 1 output 1", &asked("budget usd 0.75"));
    let out = run(dir.path(), &["run", "ask.ign", "--input", "q=hi"]).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(count.load(Ordering::SeqCst), 2);
    assert!(err.contains("the budget `usd 0.75` of contract `Asked` is spent"), "{err}");
    assert!(err.contains("$1.0000 so far"), "{err}");
}

/// Retries are requests too: a provider failing with 500 and allowed 5
/// retries gets only the 2 requests of `model_calls 2`.
#[tokio::test]
async fn retries_count_against_the_budget() {
    let (server, count) = counting(ResponseTemplate::new(500)).await;
    let dir = tempfile::tempdir().unwrap();
    let text = asked("budget model_calls 2");
    program(dir.path(), &server, "", &text);
    let source = std::fs::read_to_string(dir.path().join("ask.ign")).unwrap();
    std::fs::write(dir.path().join("ask.ign"), source.replace("retries 0", "retries 5")).unwrap();
    let out = run(dir.path(), &["run", "ask.ign", "--input", "q=hi"]).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(count.load(Ordering::SeqCst), 2);
    assert!(stderr(&out).contains("ignite::run::budget"), "{}", stderr(&out));
}

/// The root's budget covers its children: a `for` over three items, each
/// composing a contract that asks the agent once, under `model_calls 2`.
/// Under `try` the refused item is a value (the calls in flight finish):
/// two answers and one `ignite::run::budget` failure.
#[tokio::test]
async fn children_of_compose_and_for_spend_the_root_budget() {
    let (server, count) = counting(answer()).await;
    let dir = tempfile::tempdir().unwrap();
    let contracts = r#"contract Each {
  input q: string
  compute answer = Ask(q: q)
  output answer
}

contract All {
  budget model_calls 2
  input qs: array<string>
  compose answers = for q in qs: try Each(q: q)
  output answers
}"#;
    program(dir.path(), &server, "", contracts);
    let args = ["run", "ask.ign", "--contract", "All", "--input", r#"qs=["a","b","c"]"#];
    let out = run(dir.path(), &args).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(count.load(Ordering::SeqCst), 2, "{err}");
    let outputs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let answers = outputs["answers"].as_array().unwrap();
    let ok = answers.iter().filter(|a| a["ok"] == true).count();
    let refused: Vec<&Value> = answers.iter().filter(|a| a["ok"] == false).collect();
    assert_eq!((ok, refused.len()), (2, 1), "{answers:?}");
    assert_eq!(refused[0]["code"], "ignite::run::budget");
    let said = refused[0]["error"].as_str().unwrap();
    assert!(said.contains("the budget `model_calls 2` of contract `All` is spent"), "{said}");
}

/// A whole `--batch` shares one `--budget`: five rows of one request
/// each under `model_calls=3` send three; two rows fail with the budget.
#[tokio::test]
async fn a_batch_shares_one_budget() {
    let (server, count) = counting(answer()).await;
    let dir = tempfile::tempdir().unwrap();
    program(dir.path(), &server, "", &asked(""));
    let rows: Vec<String> = (1..=5).map(|i| json!({"q": format!("row {i}")}).to_string()).collect();
    std::fs::write(dir.path().join("rows.jsonl"), rows.join("\n") + "\n").unwrap();
    let args = ["run", "ask.ign", "--batch", "rows.jsonl", "--budget", "model_calls=3"];
    let out = run(dir.path(), &args).await;
    assert_eq!(count.load(Ordering::SeqCst), 3, "{}", stderr(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    let refused = lines.iter().filter(|l| l["error"]["code"] == "ignite::run::budget").count();
    assert_eq!(refused, 2, "{lines:?}");
}

/// A bad `--budget` is a usage error naming the part.
#[tokio::test]
async fn a_bad_budget_flag_is_a_usage_error() {
    let (server, count) = counting(answer()).await;
    let dir = tempfile::tempdir().unwrap();
    program(dir.path(), &server, "", &asked(""));
    for (flag, says) in [
        ("calls=3", "unknown budget `calls`"),
        ("model_calls=1.5", "`model_calls` must be a whole number"),
        ("usd=-1", "`usd` must be a number of USD"),
        ("usd=1,usd=2", "`usd` is given twice"),
        ("usd", "is not `NAME=VALUE`"),
    ] {
        let out = run(dir.path(), &["run", "ask.ign", "--input", "q=hi", "--budget", flag]).await;
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{flag}: {}", stderr(&out));
    }
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

/// The example runs offline within its budget, and `--budget` stops it:
/// two scripted replies, then the third request is never asked for.
#[tokio::test]
async fn the_budgeted_example_runs_and_stops_at_a_tighter_budget() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = "contracts/budgeted_triage.ign";
    let inputs = "contracts/budgeted_triage.inputs.json";
    let out = run(root, &["run", file, "--inputs", inputs]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let outputs: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outputs["urgent"], json!(["billing"]));
    let out = run(root, &["run", file, "--inputs", inputs, "--budget", "model_calls=2"]).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let said = unwrapped(&err);
    assert!(
        said.contains("the budget `model_calls 2` of `--budget` is spent: 2 model calls"),
        "{err}"
    );
    let usage = err.lines().find(|l| l.starts_with("script scripted")).unwrap();
    assert_eq!(usage.split_whitespace().nth(2), Some("2"), "two replies asked for: {usage}");
}
