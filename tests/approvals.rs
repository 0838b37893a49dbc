//! Approvals from the outside: real `ignite` processes, a local payment
//! server (wiremock) that counts the refunds it is sent and their
//! `Idempotency-Key`s, real `exec` children that leave marks, and SIGKILL
//! before the decision, after it and during the approved call.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{ignite, wait_for};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A refund over the server's `/refunds` (approval above 100), a `Pay`
/// exec that marks `paid.txt` then waits for the file `go`, and a `Hold`
/// that waits for `go` too: what keeps a run busy while the test kills it.
fn program(dir: &Path, server: &str) -> PathBuf {
    let text = r#"
tool Refund {
  param order_id: string
  param amount: float
  requires_approval when amount > 100
  http post "BASE/refunds"
}

tool Pay {
  param amount: float
  requires_approval
  exec "sh" "-c" "cat >> paid.txt; echo >> paid.txt; while [ ! -f go ]; do sleep 0.05; done; echo true"
}

tool Hold {
  param step: string
  exec "sh" "-c" "cat > /dev/null; while [ ! -f go ]; do sleep 0.05; done; echo true"
}

contract Returns {
  input order_id: string
  input amount: float
  compute refund = Refund(order_id: order_id, amount: amount)
  compute held = Hold(step: order_id)
  output refund
  output held
}

contract Payout {
  input amount: float
  compute paid = Pay(amount: amount)
  output paid
}

contract Guarded {
  input amount: float
  compute refund = try Refund(order_id: "T", amount: amount)
  output refund
}
"#
    .replace("BASE", server);
    let file = dir.join("refunds.ign");
    std::fs::write(&file, text).unwrap();
    file
}

async fn payments(delay: Duration) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/refunds"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"refunded": true})).set_delay(delay),
        )
        .mount(&server)
        .await;
    server
}

/// The refunds the server was sent, and their distinct `Idempotency-Key`s.
async fn refunds(server: &MockServer) -> (usize, BTreeSet<String>) {
    let requests = server.received_requests().await.unwrap_or_default();
    let keys = requests
        .iter()
        .filter_map(|r| r.headers.get("idempotency-key"))
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    (requests.len(), keys)
}

fn start(dir: &Path, args: &[&str]) -> Child {
    ignite(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn run(dir: &Path, args: &[&str]) -> Output {
    ignite(dir).args(args).stdin(Stdio::null()).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn outputs(output: &Output) -> Value {
    assert!(output.status.success(), "{}", stderr(output));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn journal(dir: &Path) -> (PathBuf, String) {
    let runs = std::fs::read_dir(dir.join(".ignite/runs")).unwrap();
    let path = runs.map(|e| e.unwrap().path()).next().unwrap();
    let id = path.file_stem().unwrap().to_string_lossy().into_owned();
    (path, id)
}

fn journal_has(dir: &Path, text: &str) -> bool {
    let Ok(mut runs) = std::fs::read_dir(dir.join(".ignite/runs")) else { return false };
    runs.next().is_some_and(|e| {
        std::fs::read_to_string(e.unwrap().path()).unwrap_or_default().contains(text)
    })
}

/// The ID of the one call the journal says waits, from `ignite approvals`.
fn waiting_call(dir: &Path, id: &str) -> String {
    let listed = run(dir, &["approvals", id]);
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    let line = text.lines().find(|l| l.starts_with("  ")).unwrap_or_else(|| panic!("{text}"));
    line.split_whitespace().next().unwrap().to_owned()
}

fn kill(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

fn paid(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("paid.txt")).unwrap_or_default().lines().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_runs_once_across_kills_before_and_after_the_decision() {
    let dir = tempfile::tempdir().unwrap();
    let server = payments(Duration::ZERO).await;
    program(dir.path(), &server.uri());
    let args = ["run", "refunds.ign", "--contract", "Returns", "--journal"];
    let first = start(
        dir.path(),
        &[&args[..], &["--input", "order_id=A7", "--input", "amount=250"]].concat(),
    );
    // Before the decision: the call waits in the journal, `Hold` keeps the
    // run going, and the process is killed.
    wait_for("the pending call", || journal_has(dir.path(), r#""state":"pending""#)).await;
    let (path, id) = journal(dir.path());
    // The run holds its journal: a decision now is refused, nothing is written.
    let early = run(dir.path(), &["approve", &id]);
    assert_eq!(early.status.code(), Some(2));
    assert!(
        stderr(&early).contains("is being written by another ignite process"),
        "{}",
        stderr(&early)
    );
    kill(first);
    assert_eq!(refunds(&server).await.0, 0);
    let call = waiting_call(dir.path(), &id);
    assert!(call.starts_with("refund-"), "{call}");

    // Bad decisions are clear errors and change nothing.
    let unknown = run(dir.path(), &["approve", &id, "refund-0000000000"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("has no call `refund-0000000000` waiting"),
        "{}",
        stderr(&unknown)
    );
    let no_run = run(dir.path(), &["deny", "nope", &call, "--reason", "x"]);
    assert!(stderr(&no_run).contains("no journal for run `nope`"), "{}", stderr(&no_run));

    let approved = run(dir.path(), &["approve", &id, &call, "--note", "ok by Ana"]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    let again = run(dir.path(), &["deny", &id, &call, "--reason", "changed my mind"]);
    assert!(stderr(&again).contains("was already approved"), "{}", stderr(&again));

    // After the decision: the approved refund is sent and journaled, then
    // the resumed run is killed while `Hold` still waits.
    let resumed = start(dir.path(), &["run", "refunds.ign", "--resume", &id]);
    wait_for("the refund's outcome", || journal_has(dir.path(), r#""name":"refund""#)).await;
    kill(resumed);
    let (sent, keys) = refunds(&server).await;
    assert_eq!((sent, keys.len()), (1, 1));
    // Resumed again: the refund is answered from the journal, not sent.
    std::fs::write(dir.path().join("go"), "").unwrap();
    let done = run(dir.path(), &["run", "refunds.ign", "--resume", &id]);
    assert_eq!(outputs(&done), json!({"refund": {"refunded": true}, "held": true}));
    assert_eq!(refunds(&server).await.0, 1);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""note":"ok by Ana""#), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_call_cut_off_is_resent_with_the_same_idempotency_key() {
    let dir = tempfile::tempdir().unwrap();
    let slow = payments(Duration::from_secs(60)).await;
    program(dir.path(), &slow.uri());
    std::fs::write(dir.path().join("go"), "").unwrap();
    let paused = run(
        dir.path(),
        &[
            "run",
            "refunds.ign",
            "--contract",
            "Returns",
            "--journal",
            "--input",
            "order_id=A7",
            "--input",
            "amount=250",
        ],
    );
    assert_eq!(paused.status.code(), Some(4), "{}", stderr(&paused));
    let (_, id) = journal(dir.path());
    assert!(run(dir.path(), &["approve", &id]).status.success());
    // During the approved call: the server holds the request; kill.
    let resumed = start(dir.path(), &["run", "refunds.ign", "--resume", &id]);
    let mut polls = 0;
    while refunds(&slow).await.0 == 0 {
        polls += 1;
        assert!(polls < 3000, "the refund never came");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill(resumed);
    let (_, first_keys) = refunds(&slow).await;
    assert_eq!(first_keys.len(), 1);
    // The server answers at once now: the call is resent, with the same
    // key, so a server that honours it acts once.
    slow.reset().await;
    Mock::given(method("POST"))
        .and(path("/refunds"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"refunded": true})))
        .mount(&slow)
        .await;
    let done = run(dir.path(), &["run", "refunds.ign", "--resume", &id]);
    assert_eq!(outputs(&done), json!({"refund": {"refunded": true}, "held": true}));
    let (sent, keys) = refunds(&slow).await;
    assert_eq!(sent, 1);
    assert_eq!(keys, first_keys);
    assert!(keys.iter().all(|k| k.starts_with("ignite-")), "{keys:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_call_cut_off_is_asked_again_not_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let server = payments(Duration::ZERO).await;
    program(dir.path(), &server.uri());
    let paused = run(
        dir.path(),
        &["run", "refunds.ign", "--contract", "Payout", "--journal", "--input", "amount=5"],
    );
    assert_eq!(paused.status.code(), Some(4), "{}", stderr(&paused));
    let (_, id) = journal(dir.path());
    assert!(run(dir.path(), &["approve", &id]).status.success());
    // During the approved call: `Pay` has marked and waits for `go`.
    let resumed = start(dir.path(), &["run", "refunds.ign", "--resume", &id]);
    wait_for("the payment's mark", || paid(dir.path()) == 1).await;
    kill(resumed);
    // Resumed: the program may have acted, so it is not run again blindly.
    std::fs::write(dir.path().join("go"), "").unwrap();
    let asked = run(dir.path(), &["run", "refunds.ign", "--resume", &id]);
    assert_eq!(asked.status.code(), Some(4), "{}", stderr(&asked));
    assert!(stderr(&asked).contains("was cut off and may have acted"), "{}", stderr(&asked));
    assert_eq!(paid(dir.path()), 1);
    // Approved again, it runs again: a person's decision.
    assert!(run(dir.path(), &["approve", &id]).status.success());
    let done = run(dir.path(), &["run", "refunds.ign", "--resume", &id]);
    assert_eq!(outputs(&done), json!({"paid": true}));
    assert_eq!(paid(dir.path()), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_never_runs_and_changed_arguments_ask_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = payments(Duration::ZERO).await;
    program(dir.path(), &server.uri());
    std::fs::write(dir.path().join("go"), "").unwrap();
    let base =
        ["run", "refunds.ign", "--contract", "Returns", "--journal", "--input", "order_id=A7"];
    let paused = run(dir.path(), &[&base[..], &["--input", "amount=250"]].concat());
    assert_eq!(paused.status.code(), Some(4));
    let (_, id) = journal(dir.path());
    let text = stderr(&paused);
    assert!(text.contains(r#"refund(order_id: "A7", amount: 250) at Returns > refund"#), "{text}");
    assert!(text.contains(&format!("ignite approve {id}")), "{text}");
    assert!(text.contains(&format!("ignite run refunds.ign --resume {id}")), "{text}");
    // Other arguments on resume: a new call, which needs its own approval.
    let call = waiting_call(dir.path(), &id);
    assert!(run(dir.path(), &["approve", &id, &call]).status.success());
    let changed =
        run(dir.path(), &["run", "refunds.ign", "--resume", &id, "--input", "amount=300"]);
    assert_eq!(changed.status.code(), Some(4), "{}", stderr(&changed));
    let other = waiting_call(dir.path(), &id);
    assert_ne!(other, call);
    assert!(stderr(&changed).contains("amount: 300"), "{}", stderr(&changed));
    assert_eq!(refunds(&server).await.0, 0);
    // Denied: the node fails with `ignite::run::denied`, nothing is sent.
    let denied = run(dir.path(), &["deny", &id, &other, "--reason", "over the limit"]);
    assert!(denied.status.success(), "{}", stderr(&denied));
    let failed = run(dir.path(), &["run", "refunds.ign", "--resume", &id, "--input", "amount=300"]);
    assert_eq!(failed.status.code(), Some(3));
    let text = stderr(&failed);
    assert!(text.contains("ignite::run::denied") && text.contains("over the limit"), "{text}");
    assert_eq!(refunds(&server).await.0, 0);
    // A small refund needs no approval.
    let small = run(dir.path(), &[&base[..], &["--input", "amount=20"]].concat());
    assert_eq!(outputs(&small), json!({"refund": {"refunded": true}, "held": true}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_clear_error_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = payments(Duration::ZERO).await;
    program(dir.path(), &server.uri());
    std::fs::write(dir.path().join("go"), "").unwrap();
    // No journal and no terminal: the call fails before it starts.
    let headless = run(
        dir.path(),
        &[
            "run",
            "refunds.ign",
            "--contract",
            "Returns",
            "--input",
            "order_id=A7",
            "--input",
            "amount=250",
        ],
    );
    assert_eq!(headless.status.code(), Some(3));
    let text = stderr(&headless);
    assert!(
        text.contains("ignite::run::approval_required") && text.contains("--journal"),
        "{text}"
    );
    // `try` catches a denial... and a missing approver alike.
    let caught =
        run(dir.path(), &["run", "refunds.ign", "--contract", "Guarded", "--input", "amount=250"]);
    let value = outputs(&caught);
    assert_eq!(value["refund"]["kind"], "approval_required", "{value}");
    assert_eq!(refunds(&server).await.0, 0);

    let paused = run(
        dir.path(),
        &[
            "run",
            "refunds.ign",
            "--contract",
            "Returns",
            "--journal",
            "--input",
            "order_id=A7",
            "--input",
            "amount=250",
        ],
    );
    assert_eq!(paused.status.code(), Some(4));
    let (path, id) = journal(dir.path());
    let call = waiting_call(dir.path(), &id);
    // A journal edited by hand (a decision for a call that never waited):
    // resume and decisions refuse it, naming the line.
    let mut text = std::fs::read_to_string(&path).unwrap();
    let kept = text.clone();
    text.push_str(r#"{"approval":{"state":"approved","call":"refund-forged"}}"#);
    text.push('\n');
    std::fs::write(&path, &text).unwrap();
    let forged = run(dir.path(), &["run", "refunds.ign", "--resume", &id]);
    assert_eq!(forged.status.code(), Some(2));
    assert!(
        stderr(&forged)
            .contains("call `refund-forged` is approved, but it never waited for approval"),
        "{}",
        stderr(&forged)
    );
    let listed = run(dir.path(), &["approve", &id, &call]);
    assert!(stderr(&listed).contains("changed by hand"), "{}", stderr(&listed));
    assert_eq!(refunds(&server).await.0, 0);
    std::fs::write(&path, kept).unwrap();
    // A decision for a run of another program (another run's call ID).
    let other = run(
        dir.path(),
        &["run", "refunds.ign", "--contract", "Payout", "--journal", "--input", "amount=5"],
    );
    assert_eq!(other.status.code(), Some(4));
    let runs: Vec<String> = std::fs::read_dir(dir.path().join(".ignite/runs"))
        .unwrap()
        .map(|e| e.unwrap().path().file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let payout = runs.iter().find(|r| **r != id).unwrap();
    let wrong = run(dir.path(), &["approve", payout, &call]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        stderr(&wrong).contains(&format!("run `{payout}` has no call `{call}` waiting")),
        "{}",
        stderr(&wrong)
    );
    let listed = run(dir.path(), &["approvals"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains(&call) && text.contains("pay-"), "{text}");
    assert_eq!(paid(dir.path()), 0);
}

/// An OpenAI-style reply that calls `refund` with `amount`.
fn tool_call(amount: f64) -> ResponseTemplate {
    let arguments = json!({"order_id": "A7", "amount": amount}).to_string();
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "refund", "arguments": arguments}}
        ]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    }))
}

fn text_reply(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_tool_call_waits_and_a_denial_is_its_tool_result() {
    use wiremock::matchers::body_string_contains;
    let dir = tempfile::tempdir().unwrap();
    let server = payments(Duration::ZERO).await;
    let text = r#"
provider Fake {
  kind openai
  base_url "BASE/v1"
  api_key env("FAKE_KEY")
  retries 0
}
tool Refund {
  param order_id: string
  param amount: float
  requires_approval when amount > 100
  http post "BASE/refunds"
}
agent Support {
  provider Fake
  model "m"
  tools Refund
  input message: string
  prompt "{message}"
}
contract Desk {
  input message: string
  compute reply = Support(message: message)
  output reply
}
"#
    .replace("BASE", &server.uri());
    std::fs::write(dir.path().join("desk.ign"), text).unwrap();
    let denied_result = "Error: denied: over the limit";
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains(denied_result))
        .respond_with(text_reply("sorry, a person said no"))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(tool_call(250.0))
        .with_priority(2)
        .mount(&server)
        .await;
    let paused = run(dir.path(), &["run", "desk.ign", "--journal", "--input", "message=refund A7"]);
    assert_eq!(paused.status.code(), Some(4), "{}", stderr(&paused));
    assert!(stderr(&paused).contains("at Desk > reply"), "{}", stderr(&paused));
    let (_, id) = journal(dir.path());
    let call = waiting_call(dir.path(), &id);
    assert!(run(dir.path(), &["deny", &id, &call, "--reason", "over the limit"]).status.success());
    let done = run(dir.path(), &["run", "desk.ign", "--resume", &id]);
    assert_eq!(outputs(&done), json!({"reply": "sorry, a person said no"}));
    let requests = server.received_requests().await.unwrap_or_default();
    assert!(requests.iter().all(|r| r.url.path() != "/refunds"), "a denied refund was sent");
    // The first model exchange came from the journal on resume: two
    // requests in all, the second carrying the denial.
    let models: Vec<_> =
        requests.iter().filter(|r| r.url.path() == "/v1/chat/completions").collect();
    assert_eq!(models.len(), 2);
    assert!(String::from_utf8_lossy(&models[1].body).contains(denied_result));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_run_answers_202_and_resumes_by_itself_once_approved() {
    let dir = tempfile::tempdir().unwrap();
    let server = payments(Duration::ZERO).await;
    program(dir.path(), &server.uri());
    std::fs::write(dir.path().join("go"), "").unwrap();
    let mut child = ignite(dir.path())
        .args(["serve", "refunds.ign", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (base, lines) = support::listening(child.stderr.take().unwrap());
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    let client = support::http();
    let post = |path: String, body: Value| {
        let request = client.post(format!("{base}{path}")).json(&body);
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    let get = |path: String| {
        let request = client.get(format!("{base}{path}"));
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    let (status, paused) =
        post("/contracts/Returns".into(), json!({"order_id": "A7", "amount": 250.0})).await;
    assert_eq!(status, 202, "{paused}");
    assert_eq!(paused["status"], "waiting");
    assert_eq!(paused["code"], "ignite::run::awaiting_approval");
    let id = paused["run"].as_str().unwrap().to_owned();
    let call = paused["pending"][0]["call"].as_str().unwrap().to_owned();
    assert_eq!(paused["pending"][0]["node"], "Returns > refund");
    assert_eq!(get(format!("/runs/{id}")).await, (200, paused.clone()));
    assert_eq!(refunds(&server).await.0, 0);
    // A call that is not waiting, a body that is not a decision: refused.
    let (status, wrong) =
        post(format!("/runs/{id}/approvals/refund-0000000000"), json!({"approve": true})).await;
    assert_eq!(status, 409, "{wrong}");
    assert_eq!(wrong["error"]["code"], "ignite::serve::approval");
    let (status, _) = post(format!("/runs/{id}/approvals/{call}"), json!({"yes": 1})).await;
    assert_eq!(status, 400);
    let (status, _) = get("/runs/nope".into()).await;
    assert_eq!(status, 404);
    // Approved: the run resumes by itself and finishes.
    let (status, _) =
        post(format!("/runs/{id}/approvals/{call}"), json!({"approve": true, "note": "ok"})).await;
    assert_eq!(status, 202);
    let mut state = Value::Null;
    for _ in 0..500 {
        state = get(format!("/runs/{id}")).await.1;
        if state["status"] == "done" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(state["outputs"], json!({"refund": {"refunded": true}, "held": true}), "{state}");
    assert_eq!(refunds(&server).await.0, 1);
    let (status, _) = post(format!("/runs/{id}/approvals/{call}"), json!({"approve": false})).await;
    assert_eq!(status, 409);
    // A denial over HTTP: the node fails with `ignite::run::denied`.
    let (_, paused) =
        post("/contracts/Returns".into(), json!({"order_id": "B9", "amount": 900.0})).await;
    let (id, call) =
        (paused["run"].as_str().unwrap(), paused["pending"][0]["call"].as_str().unwrap());
    let (status, _) =
        post(format!("/runs/{id}/approvals/{call}"), json!({"approve": false, "note": "no"})).await;
    assert_eq!(status, 202);
    for _ in 0..500 {
        state = get(format!("/runs/{id}")).await.1;
        if state["status"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(state["error"]["code"], "ignite::run::denied", "{state}");
    assert_eq!(refunds(&server).await.0, 1);
    let (_, document) = get("/openapi.json".into()).await;
    assert!(document["paths"]["/runs/{id}/approvals/{call}"]["post"].is_object());
    assert!(document["paths"]["/contracts/Returns"]["post"]["responses"]["202"].is_object());
    child.kill().unwrap();
    child.wait().unwrap();
}
