//! `ignite plan` from the outside: the JSON form, and the dry run's
//! promise that it performs nothing. Every example in `contracts/` and
//! every fixture that checks clean is dry-run (each contract, on its
//! inputs file or `{}`) by real `ignite plan --inputs` processes whose
//! providers all point at a local server that counts every request, next
//! to a program whose `exec` tool writes a marker file and whose `http`
//! tool and agent go to that server. Afterwards the server has seen
//! nothing, the marker does not exist and no file in the fixture folders
//! changed; the same program run for real trips all three (so the test
//! can fail).

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use serde_json::{Value, json};
use support::ignite;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Counts every request, whatever its method and path.
struct Counted(Arc<AtomicUsize>);

impl Respond for Counted {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.0.fetch_add(1, Ordering::SeqCst);
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}
        }))
    }
}

async fn counting() -> (MockServer, Arc<AtomicUsize>) {
    let server = MockServer::start().await;
    let count = Arc::new(AtomicUsize::new(0));
    Mock::given(wiremock::matchers::any())
        .respond_with(Counted(Arc::clone(&count)))
        .mount(&server)
        .await;
    (server, count)
}

/// `ignite` whose every provider kind points at `server`, with keys set.
fn pointed(dir: &Path, server: &MockServer) -> Command {
    let mut command = ignite(dir);
    let uri = server.uri();
    for var in ["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GEMINI_BASE_URL", "OLLAMA_HOST"] {
        command.env(var, &uri);
    }
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"] {
        command.env(var, "sk-fake");
    }
    command
}

async fn output(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
}

/// A program with every kind of effect: an `exec` tool that writes
/// `marker`, an `http` tool and an agent on `server`.
fn effects_program(dir: &Path, server: &MockServer) {
    let text = format!(
        r#"tool Mark {{
  param note: string
  exec "sh" "-c" "cat > marker && echo done"
}}

tool Fetch {{
  param id: string
  http post "{uri}/fetch"
}}

agent Ask {{
  provider openai
  model "m"
  input q: string
}}

contract Everything {{
  input note: string
  compute fetched = Fetch(id: note)
  compute marked = Mark(note: note)
  compute answer = Ask(q: "{{note}} {{fetched}}")
  output marked
  output answer
}}
"#,
        uri = server.uri()
    );
    std::fs::write(dir.join("everything.ign"), text).unwrap();
    std::fs::write(dir.join("inputs.json"), r#"{"note": "hi"}"#).unwrap();
}

/// Every file under `dir` with its length and modification time.
fn listing(dir: &Path, out: &mut BTreeMap<PathBuf, (u64, SystemTime)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            listing(&entry.path(), out);
        } else {
            out.insert(entry.path(), (meta.len(), meta.modified().unwrap()));
        }
    }
}

/// The `.ign` files that check clean: the examples and the fixtures that
/// run or plan.
fn programs(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "contracts",
        "tests/corpus/ok",
        "tests/corpus/run",
        "tests/corpus/run_err",
        "tests/corpus/plan",
    ] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "ign") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_performs_nothing_on_any_example_or_fixture() {
    let (server, count) = counting().await;
    let dir = tempfile::tempdir().unwrap();
    effects_program(dir.path(), &server);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut before = BTreeMap::new();
    for folder in ["contracts", "tests/corpus"] {
        listing(&root.join(folder), &mut before);
    }

    let mut command = pointed(dir.path(), &server);
    command.args(["plan", "everything.ign", "--inputs", "inputs.json", "--format", "json"]);
    let out = output(command).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dry: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed: Vec<(&str, &str)> = dry["effects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["callee"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, [("tool", "Fetch"), ("tool", "Mark"), ("agent", "Ask")]);
    assert_eq!(dry["effects"][1]["args"], json!({"note": "hi"}));
    assert_eq!(dry["effects"][2]["after"], json!({"q": ["Everything.fetched"]}));

    let mut planned = 0;
    for file in programs(root) {
        let compilation = igniter::compile(&file);
        let Some(program) = compilation.program else {
            panic!("{} does not check", file.display());
        };
        let inputs = file.with_extension("inputs.json");
        let inputs = if inputs.exists() { inputs } else { dir.path().join("empty.json") };
        std::fs::write(dir.path().join("empty.json"), "{}").unwrap();
        for contract in &program.contracts {
            let mut command = pointed(file.parent().unwrap(), &server);
            command.arg("plan").arg(&file).arg("--contract").arg(&contract.name);
            command.arg("--inputs").arg(&inputs);
            let out = output(command).await;
            assert!(
                out.status.success(),
                "{} {}: {}",
                file.display(),
                contract.name,
                String::from_utf8_lossy(&out.stderr)
            );
            planned += 1;
        }
    }
    assert!(planned > 50, "only {planned} contracts were dry-run");
    assert_eq!(count.load(Ordering::SeqCst), 0, "a dry run sent a request");
    assert!(!dir.path().join("marker").exists(), "a dry run ran the exec tool");
    let mut after = BTreeMap::new();
    for folder in ["contracts", "tests/corpus"] {
        listing(&root.join(folder), &mut after);
    }
    assert!(before == after, "a dry run changed a file in contracts/ or tests/corpus/");

    // The same program run for real performs all three effects.
    let mut command = pointed(dir.path(), &server);
    command.args(["run", "everything.ign", "--inputs", "inputs.json"]);
    let out = output(command).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(count.load(Ordering::SeqCst), 2, "the http tool and the agent");
    assert!(dir.path().join("marker").exists());
}

/// `--format json` of a static plan: the numbers of the fixture worked out
/// by hand, as a machine reads them.
#[tokio::test]
async fn the_plan_as_json() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = ignite(root);
    command.args(["plan", "tests/corpus/plan/triage.ign", "--format", "json"]);
    let out = output(command).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["contract"], "Triage");
    assert_eq!(plan["total"]["model_calls"], 30);
    assert_eq!(plan["total"]["tools"]["Notify"]["calls"], 3);
    assert_eq!(plan["total"]["tools"]["Lookup"]["agent_turns"], 24);
    assert_eq!(plan["budget"]["model_calls"], 40);
    assert_eq!(plan["nodes"][0]["node"], "verdicts");
}
