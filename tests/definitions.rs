//! Keys by definition, from the outside: real `ignite` processes, real
//! files and `exec` children, a local fake provider that counts requests.
//! Editing what defines a tool (its declaration, a param's or the
//! result's type, the bytes of its script) or an agent (its prompt, a
//! setting, a tool's schema) misses the result cache, and `--resume` runs
//! the edited effect again instead of reusing the journal's result.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use support::ignite;
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A tool that squares `req.n` with a script of the project, counting its
/// real runs in `calls.txt`; `CACHE` is replaced by `cache` or nothing.
const TOOL: &str = r#"
type Req {
  n: integer
}

type Out {
  squared: integer
}

tool Square {
  description "Squares n"
  param req: Req
  result Out
  exec "sh" "tools/square.sh"
  CACHE
}

contract Squares {
  input n: integer
  compute squared = Square(req: {n: n})
  output squared
}
"#;

const SCRIPT: &str =
    "n=$(tr -dc 0-9); echo run >> calls.txt; echo \"{\\\"squared\\\": $((n * n))}\"\n";

/// Each edit of what defines the tool, as (what, from, to) in `squares.ign`
/// (or the script, for `script`).
const TOOL_EDITS: [(&str, &str, &str); 4] = [
    ("declaration", "\"Squares n\"", "\"Squares its n\""),
    ("param type", "type Req {\n  n: integer\n", "type Req {\n  n: integer\n  note: string?\n"),
    (
        "result type",
        "type Out {\n  squared: integer\n",
        "type Out {\n  squared: integer\n  note: string?\n",
    ),
    ("script", "echo run", "echo ran"),
];

fn tool_project(dir: &Path, cache: bool) {
    let text = TOOL.replace("CACHE", if cache { "cache" } else { "" });
    std::fs::write(dir.join("squares.ign"), text).unwrap();
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/square.sh"), SCRIPT).unwrap();
}

/// Replaces `from` with `to` in the program, or in the script for `script`.
fn edit(dir: &Path, what: &str, from: &str, to: &str) {
    let file = dir.join(if what == "script" { "tools/square.sh" } else { "squares.ign" });
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(from), "{what}: no {from:?} in {text}");
    std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
}

fn calls(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("calls.txt")).unwrap_or_default().lines().count()
}

fn outputs(output: &Output) -> Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The ID of the only journal of `dir`.
fn run_id(dir: &Path) -> String {
    let mut runs = std::fs::read_dir(dir.join(".ignite/runs")).unwrap();
    let journal = runs.next().unwrap().unwrap().path();
    assert!(runs.next().is_none(), "one journal");
    journal.file_stem().unwrap().to_string_lossy().into_owned()
}

#[test]
fn editing_what_defines_a_cached_tool_misses_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    tool_project(dir, true);
    let run = || ignite(dir).args(["run", "squares.ign", "--input", "n=3"]).output().unwrap();
    assert_eq!(outputs(&run()), json!({"squared": {"squared": 9}}));
    assert_eq!(outputs(&run()), json!({"squared": {"squared": 9}}));
    assert_eq!(calls(dir), 1, "the second run is answered by the cache");
    for (i, (what, from, to)) in TOOL_EDITS.iter().enumerate() {
        edit(dir, what, from, to);
        assert_eq!(outputs(&run()), json!({"squared": {"squared": 9}}), "{what}");
        assert_eq!(calls(dir), i + 2, "editing the {what} misses the cache");
        assert_eq!(outputs(&run()), json!({"squared": {"squared": 9}}), "{what}");
        assert_eq!(calls(dir), i + 2, "the edited tool's result is cached in turn");
    }
}

#[test]
fn resume_runs_an_edited_tool_again() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    tool_project(dir, false);
    let first =
        ignite(dir).args(["run", "squares.ign", "--journal", "--input", "n=3"]).output().unwrap();
    assert_eq!(outputs(&first), json!({"squared": {"squared": 9}}));
    let id = run_id(dir);
    let resume = || ignite(dir).args(["run", "squares.ign", "--resume", &id]).output().unwrap();
    assert_eq!(outputs(&resume()), json!({"squared": {"squared": 9}}));
    assert_eq!(calls(dir), 1, "an unchanged tool's result is reused");
    for (i, (what, from, to)) in TOOL_EDITS.iter().enumerate() {
        edit(dir, what, from, to);
        assert_eq!(outputs(&resume()), json!({"squared": {"squared": 9}}), "{what}");
        assert_eq!(calls(dir), i + 2, "editing the {what} runs the tool again");
        assert_eq!(outputs(&resume()), json!({"squared": {"squared": 9}}), "{what}");
        assert_eq!(calls(dir), i + 2, "the journal now holds the edited tool's result");
    }
}

/// An agent with a tool, on the fake provider at `BASE`; `CACHE` is
/// replaced by `cache` or nothing.
const AGENT: &str = r#"
provider Fake {
  kind openai
  base_url "BASE/v1"
  api_key env("FAKE_KEY")
  retries 0
}

tool Lookup {
  description "Looks a word up"
  param word: string
  exec "sh" "-c" "echo found"
}

agent First {
  provider Fake
  model "m"
  input q: string
  prompt "first {q}"
  temperature 0.5
  tools Lookup
  CACHE
}

contract Ask {
  input q: string
  compute a = First(q: q)
  output a
}
"#;

/// Each edit of what defines the agent, as (what, from, to) in `ask.ign`.
const AGENT_EDITS: [(&str, &str, &str); 3] = [
    ("prompt", "prompt \"first {q}\"", "prompt \"first of all {q}\""),
    ("setting", "temperature 0.5", "temperature 0.7"),
    ("tool schema", "param word: string", "param word: string \"The word\""),
];

async fn agent_project(dir: &Path, cache: bool) -> MockServer {
    let server = MockServer::start().await;
    let reply = ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": "alpha"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    }));
    Mock::given(method("POST"))
        .and(body_string_contains("first"))
        .respond_with(reply)
        .mount(&server)
        .await;
    let text =
        AGENT.replace("BASE", &server.uri()).replace("CACHE", if cache { "cache" } else { "" });
    std::fs::write(dir.join("ask.ign"), text).unwrap();
    server
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}

fn edit_agent(dir: &Path, what: &str, from: &str, to: &str) {
    let file = dir.join("ask.ign");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(from), "{what}: no {from:?}");
    std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_what_defines_a_cached_agent_misses_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let server = agent_project(dir, true).await;
    let run = || ignite(dir).args(["run", "ask.ign", "--input", "q=go"]).output().unwrap();
    assert_eq!(outputs(&run()), json!({"a": "alpha"}));
    assert_eq!(outputs(&run()), json!({"a": "alpha"}));
    assert_eq!(requests(&server).await, 1, "the second run is answered by the cache");
    for (i, (what, from, to)) in AGENT_EDITS.iter().enumerate() {
        edit_agent(dir, what, from, to);
        assert_eq!(outputs(&run()), json!({"a": "alpha"}), "{what}");
        assert_eq!(requests(&server).await, i + 2, "editing the {what} misses the cache");
        assert_eq!(outputs(&run()), json!({"a": "alpha"}), "{what}");
        assert_eq!(requests(&server).await, i + 2, "the edited agent's answer is cached");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_asks_an_edited_agent_again() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let server = agent_project(dir, false).await;
    let first = ignite(dir).args(["run", "ask.ign", "--journal", "--input", "q=go"]).output();
    assert_eq!(outputs(&first.unwrap()), json!({"a": "alpha"}));
    let id = run_id(dir);
    let resume = || ignite(dir).args(["run", "ask.ign", "--resume", &id]).output().unwrap();
    assert_eq!(outputs(&resume()), json!({"a": "alpha"}));
    assert_eq!(requests(&server).await, 1, "an unchanged agent's exchange is reused");
    for (i, (what, from, to)) in AGENT_EDITS.iter().enumerate() {
        edit_agent(dir, what, from, to);
        assert_eq!(outputs(&resume()), json!({"a": "alpha"}), "{what}");
        assert_eq!(requests(&server).await, i + 2, "editing the {what} asks the model again");
        assert_eq!(outputs(&resume()), json!({"a": "alpha"}), "{what}");
        assert_eq!(requests(&server).await, i + 2, "the journal now holds the new exchange");
    }
}
