//! `ignite serve --restate` end to end (cargo feature `restate`): the
//! official Restate server started by `scripts/restate-server.sh` on
//! 127.0.0.1, real `ignite` workers, a local fake provider that counts
//! requests and `exec` tools with side effects on files.
//!
//! `cargo test --features restate --test restate` (`.ci/run` does).

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::{ignite, listening, wait_for};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A Restate server with its data in a temporary folder; stopped when dropped.
struct Restate {
    pid: i32,
    ingress: String,
    admin: String,
    _data: tempfile::TempDir,
}

impl Restate {
    fn start() -> Self {
        let data = tempfile::tempdir().unwrap();
        let output = Command::new(script())
            .arg("start")
            .arg(data.path())
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(output.status.success(), "the Restate server did not start");
        let line = String::from_utf8(output.stdout).unwrap();
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name} in {line:?}"))
                .to_owned()
        };
        Self {
            pid: field("pid").parse().unwrap(),
            ingress: field("ingress"),
            admin: field("admin"),
            _data: data,
        }
    }

    /// Registers the deployment at `uri` (workers behind it).
    fn register(&self, uri: &str) -> Value {
        let output = Command::new(script()).args(["register", &self.admin, uri]).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// The names of the journaled steps of every invocation, in the order
    /// they were journaled (Restate's SQL introspection).
    async fn step_names(&self) -> Vec<String> {
        let query = "SELECT name FROM sys_journal WHERE name != '' ORDER BY appended_at, id, index";
        self.query(query).await.iter().map(|r| r["name"].as_str().unwrap().to_owned()).collect()
    }

    /// Waits until `query` returns `rows` rows.
    async fn wait_for_rows(&self, what: &str, query: &str, rows: usize) {
        for _ in 0..3000 {
            if self.query(query).await.len() == rows {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("timed out waiting for {what}");
    }

    /// The rows of `query` (Restate's SQL introspection).
    async fn query(&self, query: &str) -> Vec<Value> {
        let rows: Value = support::http()
            .post(format!("{}/query", self.admin))
            .header("accept", "application/json")
            .json(&json!({"query": query}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        rows["rows"].as_array().unwrap_or_else(|| panic!("no rows: {rows}")).clone()
    }

    /// Calls contract `name` through the ingress: the status and the body.
    async fn call(&self, name: &str, inputs: &Value, key: Option<&str>) -> (u16, Value) {
        call(&self.ingress, name, inputs, key).await
    }
}

/// Calls contract `name` through the ingress at `ingress`, with an
/// idempotency key if given: the status and the body.
async fn call(ingress: &str, name: &str, inputs: &Value, key: Option<&str>) -> (u16, Value) {
    let mut request = support::http()
        .post(format!("{ingress}/{name}/run"))
        .timeout(Duration::from_secs(120))
        .json(inputs);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

impl Drop for Restate {
    fn drop(&mut self) {
        // SAFETY: a plain kill(2) of the server this test started.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/restate-server.sh")
}

/// A running `ignite serve --restate`; killed when dropped.
struct Worker {
    child: Child,
    address: String,
}

impl Worker {
    fn start(dir: &Path, file: &str) -> Self {
        let mut child = ignite(dir)
            .args(["serve", file, "--restate", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (url, lines) = listening(child.stderr.take().unwrap());
        std::thread::spawn(move || lines.for_each(drop));
        let address = url.strip_prefix("http://").expect("an http URL").to_owned();
        Self { child, address }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One address for several workers, as a load balancer with fail-over
/// would give them: each connection goes to the first worker that accepts
/// it, so the first runs everything (the run and its steps) until it dies.
async fn forwarder(workers: Vec<String>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let workers = workers.clone();
            tokio::spawn(async move {
                for worker in &workers {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(worker).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        return;
                    }
                }
            });
        }
    });
    format!("http://{address}")
}

const STEPS: &str = r#"
provider Fake {
  kind openai
  base_url "BASE/v1"
  api_key env("FAKE_KEY")
  retries 0
}

tool Append {
  description "Appends a line to log.txt, with the worker's process ID"
  param line: string
  exec "sh" "-c" "read -r args; echo \"$PPID $args\" >> log.txt; echo appended"
}

agent Scribe {
  provider Fake
  model "m"
  tools Append
  input topic: string
  prompt "write about {topic}"
}

contract Steps {
  input topic: string
  compute text = Scribe(topic: topic)
  output text
}

tool Flaky {
  description "Fails until its third call"
  param n: integer
  exec "sh" "-c" "echo x >> flaky.txt; test $(wc -l < flaky.txt) -ge 3 && echo fine"
  retries 2
}

tool Broken {
  description "Always fails"
  exec "sh" "-c" "echo x >> broken.txt; echo broken >&2; exit 1"
  retries 1
}

contract Retried {
  input n: integer
  compute left = Append(line: "left")
  compute right = Append(line: "right")
  compute value = Flaky(n: n)
  output left
  output right
  output value
}

contract Failing {
  compute value = Broken()
  output value
}

tool Left {
  description "Waits (20 s at most) until Right has started too"
  exec "sh" "-c" "touch left.here; i=0; while [ ! -e right.here ]; do i=$((i+1)); test $i -gt 400 && exit 1; sleep 0.05; done; echo met"
}

tool Right {
  description "Waits (20 s at most) until Left has started too"
  exec "sh" "-c" "touch right.here; i=0; while [ ! -e left.here ]; do i=$((i+1)); test $i -gt 400 && exit 1; sleep 0.05; done; echo met"
}

contract Meeting {
  compute left = Left()
  compute right = Right()
  output left
  output right
}

agent Pair {
  provider Fake
  model "pair"
  tools Left, Right
  prompt "meet"
}

contract Pairing {
  compute text = Pair()
  output text
}

tool Slow {
  description "Notes the worker's process ID in slow.txt, then waits for the file go"
  exec "sh" "-c" "echo $PPID >> slow.txt; while [ ! -e go ]; do sleep 0.05; done; echo slow"
}

contract Fan {
  compute a = Append(line: "a")
  compute b = Append(line: "b")
  compute c = Slow()
  output a
  output b
  output c
}
"#;

/// The fake provider: the model asks for `TURNS` tool calls, one per turn,
/// then answers. Requests are counted per turn (the number of tool results
/// in the request); the first request of turn `slow` waits a minute.
struct Scribe {
    seen: Mutex<BTreeMap<usize, usize>>,
    slow: Option<usize>,
}

const TURNS: usize = 3;

impl Respond for Scribe {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let turn =
            body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
        let first = {
            let mut seen = self.seen.lock().unwrap();
            let count = seen.entry(turn).or_default();
            *count += 1;
            *count == 1
        };
        let usage = json!({"prompt_tokens": 3, "completion_tokens": 1});
        let reply = if turn < TURNS {
            let arguments = json!({"line": format!("step {}", turn + 1)}).to_string();
            ResponseTemplate::new(200).set_body_json(json!({
                "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{
                    "id": format!("call_{turn}"), "type": "function",
                    "function": {"name": "append", "arguments": arguments},
                }]}, "finish_reason": "tool_calls"}],
                "usage": usage,
            }))
        } else {
            ResponseTemplate::new(200).set_body_json(json!({
                "choices": [{"message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
                "usage": usage,
            }))
        };
        if first && self.slow == Some(turn) {
            reply.set_delay(Duration::from_secs(60))
        } else {
            reply
        }
    }
}

/// The fake provider, its requests per turn, and the folder with the program.
async fn setup(slow: Option<usize>) -> (MockServer, Arc<Scribe>, tempfile::TempDir) {
    let server = MockServer::start().await;
    let scribe = Arc::new(Scribe { seen: Mutex::new(BTreeMap::new()), slow });
    let responder = Arc::clone(&scribe);
    // Agent `Pair`: one turn asks for both `left` and `right`, the next answers.
    Mock::given(wiremock::matchers::body_partial_json(json!({"model": "pair"})))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let messages = body["messages"].as_array().unwrap();
            let results = messages.iter().filter(|m| m["role"] == "tool").count();
            let call = |name: &str| {
                let function = json!({"name": name, "arguments": "{}"});
                json!({"id": name, "type": "function", "function": function})
            };
            let (message, reason) = match results {
                0 => (
                    json!({"role": "assistant", "tool_calls": [call("left"), call("right")]}),
                    "tool_calls",
                ),
                2 => (json!({"role": "assistant", "content": "met twice"}), "stop"),
                _ => {
                    (json!({"role": "assistant", "content": format!("{results} results")}), "stop")
                }
            };
            let choice = json!({"message": message, "finish_reason": reason});
            ResponseTemplate::new(200).set_body_json(json!({"choices": [choice]}))
        })
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(move |request: &Request| responder.respond(request))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("steps.ign"), STEPS.replace("BASE", &server.uri())).unwrap();
    (server, scribe, dir)
}

fn seen(scribe: &Scribe) -> Vec<(usize, usize)> {
    scribe.seen.lock().unwrap().iter().map(|(turn, count)| (*turn, *count)).collect()
}

/// The lines of `log.txt`: the worker's process ID and the step.
fn log(dir: &Path) -> Vec<(u32, String)> {
    std::fs::read_to_string(dir.join("log.txt"))
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let (pid, args) = line.split_once(' ').unwrap();
            let args: Value = serde_json::from_str(args).unwrap();
            (pid.parse().unwrap(), args["line"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_survives_its_worker_and_repeats_no_finished_call() {
    let (_server, scribe, dir) = setup(Some(2)).await;
    let restate = Restate::start();
    let first = Worker::start(dir.path(), "steps.ign");
    let second = Worker::start(dir.path(), "steps.ign");
    let uri = forwarder(vec![first.address.clone(), second.address.clone()]).await;
    let registered = restate.register(&uri);
    let services: Vec<&str> = registered["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(services.len(), 6, "{registered}");
    for name in ["Steps", "Retried", "Failing", "Meeting", "Pairing", "Fan"] {
        assert!(services.contains(&name), "{registered}");
    }

    let ingress = restate.ingress.clone();
    let call =
        tokio::spawn(
            async move { call(&ingress, "Steps", &json!({"topic": "rivers"}), None).await },
        );
    // Two tool calls done, the third model request on its way: the worker
    // running the invocation is killed without warning.
    wait_for("the third model request", || seen(&scribe).len() == 3).await;
    let steps = log(dir.path());
    assert_eq!(steps.len(), 2, "{steps:?}");
    let running = steps[0].0;
    assert_eq!(steps[1].0, running, "one worker runs the invocation");
    let (mut killed, survivor) =
        if running == first.pid() { (first, second) } else { (second, first) };
    assert_eq!(killed.pid(), running);
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();

    let (status, outputs) = call.await.unwrap();
    assert_eq!((status, outputs), (200, json!({"text": "done"})));
    // Every tool call ran once; the third on the other worker.
    let steps = log(dir.path());
    let lines: Vec<&str> = steps.iter().map(|(_, line)| line.as_str()).collect();
    assert_eq!(lines, ["step 1", "step 2", "step 3"]);
    assert_eq!(steps[2].0, survivor.pid());
    // Every model request once, but the one cut off by the kill.
    assert_eq!(seen(&scribe), [(0, 1), (1, 1), (2, 2), (3, 1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_runs_the_effects_once() {
    let (_server, scribe, dir) = setup(None).await;
    let restate = Restate::start();
    let worker = Worker::start(dir.path(), "steps.ign");
    restate.register(&format!("http://{}", worker.address));
    let inputs = json!({"topic": "lakes"});
    let first = restate.call("Steps", &inputs, Some("order-17")).await;
    assert_eq!(first, (200, json!({"text": "done"})));
    // Every effect is a step named by its node path, count and kind.
    let names: Vec<String> = (0..=TURNS)
        .flat_map(|turn| {
            let model = format!("Steps > text#{} model:Fake", 2 * turn);
            let tool = format!("Steps > text#{} tool:append", 2 * turn + 1);
            if turn < TURNS { vec![model, tool] } else { vec![model] }
        })
        .collect();
    assert_eq!(restate.step_names().await, names);
    // One effect at a time (an agent's turns): steps of the run itself,
    // no child invocations.
    let children = "SELECT id FROM sys_invocation WHERE target_handler_name = 'step'";
    assert_eq!(restate.query(children).await, Vec::<Value>::new());
    let again = restate.call("Steps", &inputs, Some("order-17")).await;
    assert_eq!(again, first);
    assert_eq!(seen(&scribe), [(0, 1), (1, 1), (2, 1), (3, 1)]);
    assert_eq!(log(dir.path()).len(), TURNS);
    // Another key is another run.
    let other = restate.call("Steps", &inputs, Some("order-18")).await;
    assert_eq!(other, first);
    assert_eq!(seen(&scribe), [(0, 2), (1, 2), (2, 2), (3, 2)]);
    assert_eq!(log(dir.path()).len(), 2 * TURNS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_are_the_steps_and_errors_are_terminal() {
    let (_server, _scribe, dir) = setup(None).await;
    let restate = Restate::start();
    let worker = Worker::start(dir.path(), "steps.ign");
    restate.register(&format!("http://{}", worker.address));
    let count = |name: &str| {
        std::fs::read_to_string(dir.path().join(name)).unwrap_or_default().lines().count()
    };

    // `retries 2`: two failed attempts, then the third succeeds. The
    // retries are those of the step's child invocation: the two
    // independent tool nodes beside it do not run again.
    let (status, outputs) = restate.call("Retried", &json!({"n": 1}), None).await;
    let expected = json!({"left": "appended", "right": "appended", "value": "fine"});
    assert_eq!((status, outputs), (200, expected));
    assert_eq!(count("flaky.txt"), 3);
    let mut lines: Vec<String> = log(dir.path()).into_iter().map(|(_, line)| line).collect();
    lines.sort();
    assert_eq!(lines, ["left", "right"]);

    // `retries 1`: two attempts, then a terminal error with the CLI's code
    // and the node's path.
    let (status, body) = restate.call("Failing", &json!({}), None).await;
    assert_eq!(status, 500, "{body}");
    let error = error_of(&body);
    assert_eq!(error["code"], "ignite::run::tool_failed", "{body}");
    assert_eq!(error["cause"], "ignite::effects::journal", "{body}");
    assert_eq!(error["path"], "Failing > value", "{body}");
    assert_eq!(count("broken.txt"), 2);

    // Inputs that do not fit: 422 with every problem.
    let (status, body) = restate.call("Retried", &json!({"n": "one", "m": 2}), None).await;
    assert_eq!(status, 422, "{body}");
    let error = error_of(&body);
    assert_eq!(error["code"], "ignite::run::input", "{body}");
    assert_eq!(error["diagnostics"].as_array().unwrap().len(), 2, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn independent_steps_are_in_flight_together() {
    let (_server, _scribe, dir) = setup(None).await;
    let restate = Restate::start();
    let worker = Worker::start(dir.path(), "steps.ign");
    restate.register(&format!("http://{}", worker.address));
    // Each tool waits until the other has started: only steps in flight
    // together finish (one after the other, the first gives up after 20 s).
    let (status, outputs) = restate.call("Meeting", &json!({}), None).await;
    assert_eq!((status, outputs), (200, json!({"left": "met", "right": "met"})));
    // Each step is a child invocation of the run, on the private handler
    // `step`, with the step journaled under its effect key.
    let query = "SELECT target_handler_name, invoked_by_target FROM sys_invocation \
                 WHERE target_service_name = 'Meeting' ORDER BY target_handler_name";
    let invocations: Vec<(String, String)> = restate
        .query(query)
        .await
        .iter()
        .map(|r| {
            let field = |name: &str| r[name].as_str().unwrap_or_default().to_owned();
            (field("target_handler_name"), field("invoked_by_target"))
        })
        .collect();
    let child = ("step".to_owned(), "Meeting/run".to_owned());
    assert_eq!(invocations, [("run".to_owned(), String::new()), child.clone(), child]);
    let mut names = restate.step_names().await;
    names.sort();
    assert_eq!(names, ["Meeting > left#0 tool:left", "Meeting > right#0 tool:right"]);
    // The ingress does not offer `step`.
    let response = support::http()
        .post(format!("{}/Meeting/step", restate.ingress))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_client_error(), "{}", response.status());

    // The tool calls of one model turn are in flight together too.
    for file in ["left.here", "right.here"] {
        std::fs::remove_file(dir.path().join(file)).unwrap();
    }
    let (status, outputs) = restate.call("Pairing", &json!({}), None).await;
    assert_eq!((status, outputs), (200, json!({"text": "met twice"})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_during_parallel_steps_repeats_only_the_unfinished_one() {
    let (_server, _scribe, dir) = setup(None).await;
    let restate = Restate::start();
    let first = Worker::start(dir.path(), "steps.ign");
    let second = Worker::start(dir.path(), "steps.ign");
    let uri = forwarder(vec![first.address.clone(), second.address.clone()]).await;
    restate.register(&uri);
    let slow = |dir: &Path| -> Vec<u32> {
        let text = std::fs::read_to_string(dir.join("slow.txt")).unwrap_or_default();
        text.lines().map(|pid| pid.parse().unwrap()).collect()
    };

    let ingress = restate.ingress.clone();
    let call = tokio::spawn(async move { call(&ingress, "Fan", &json!({}), None).await });
    // `a` and `b` done while `c` waits: the worker is killed.
    wait_for("two steps done, one in flight", || {
        log(dir.path()).len() == 2 && slow(dir.path()).len() == 1
    })
    .await;
    // A step whose tool finished but whose result had not reached
    // Restate's journal yet runs again after the kill (at least once):
    // kill only once the run's journal holds both results.
    let results = "SELECT id FROM sys_journal WHERE entry_type = 'Notification: Call'";
    restate.wait_for_rows("the results of `a` and `b` in the journal", results, 2).await;
    let mut killed = first;
    assert!(log(dir.path()).iter().all(|(pid, _)| *pid == killed.pid()));
    assert_eq!(slow(dir.path()), [killed.pid()]);
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    wait_for("the step again on the other worker", || slow(dir.path()).len() == 2).await;
    std::fs::write(dir.path().join("go"), "").unwrap();

    let (status, outputs) = call.await.unwrap();
    let expected = json!({"a": "appended", "b": "appended", "c": "slow"});
    assert_eq!((status, outputs), (200, expected));
    // The finished steps ran once; the one cut off ran again, elsewhere.
    let mut lines: Vec<(u32, String)> = log(dir.path());
    lines.sort();
    assert_eq!(lines, [(killed.pid(), "a".to_owned()), (killed.pid(), "b".to_owned())]);
    assert_eq!(slow(dir.path()), [killed.pid(), second.pid()]);
}

/// The `error` object of ignite inside a Restate failure's message.
fn error_of(body: &Value) -> Value {
    let message = body["message"].as_str().unwrap_or_else(|| panic!("no message in {body}"));
    serde_json::from_str::<Value>(message).unwrap()["error"].clone()
}

const REFUNDS: &str = r#"
tool Refund {
  param order_id: string
  param amount: float
  requires_approval when amount > 100
  http post "BASE/refunds"
}

tool Note {
  description "Appends a line to log.txt, with the worker's process ID"
  param line: string
  exec "sh" "-c" "read -r args; echo \"$PPID $args\" >> log.txt; echo noted"
}

contract Refunds {
  input order_id: string
  input amount: float
  compute noted = Note(line: order_id)
  compute refund = Refund(order_id: order_id, amount: amount)
  output noted
  output refund
}

contract Single {
  input amount: float
  compute refund = Refund(order_id: "S1", amount: amount)
  output refund
}
"#;

/// Posts `body` to `path` of the ingress: the status and the body.
async fn post(ingress: &str, path: &str, body: &Value) -> (u16, Value) {
    let response = support::http()
        .post(format!("{ingress}/{path}"))
        .timeout(Duration::from_secs(120))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// Starts a run of `Refunds` on `inputs` without waiting: its run ID (the
/// invocation's).
async fn start_refund(ingress: &str, inputs: &Value) -> String {
    start(ingress, "Refunds", inputs).await
}

/// Starts a run of contract `name` on `inputs` without waiting: its run ID.
async fn start(ingress: &str, name: &str, inputs: &Value) -> String {
    let (status, body) = post(ingress, &format!("{name}/run/send"), inputs).await;
    assert_eq!(status, 202, "{body}");
    body["invocationId"].as_str().unwrap().to_owned()
}

/// Polls the run's object until `show` answers a state with `status`.
async fn wait_for_status(ingress: &str, run: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..3000 {
        let (code, body) = post(ingress, &format!("IgniteRuns/{run}/show"), &json!({})).await;
        if code == 200 && body["status"] == status {
            return body;
        }
        last = body;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("run {run} never reached `{status}`: {last}");
}

/// The answer of run `run` once it ends: the status and the body.
async fn outcome(ingress: &str, run: &str) -> (u16, Value) {
    let response = support::http()
        .get(format!("{ingress}/restate/invocation/{run}/attach"))
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_a_durable_promise_that_survives_its_worker() {
    let payments = MockServer::start().await;
    Mock::given(wiremock::matchers::path("/refunds"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"refunded": true})))
        .mount(&payments)
        .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("refunds.ign"), REFUNDS.replace("BASE", &payments.uri()))
        .unwrap();
    let restate = Restate::start();
    let first = Worker::start(dir.path(), "refunds.ign");
    let second = Worker::start(dir.path(), "refunds.ign");
    let uri = forwarder(vec![first.address.clone(), second.address.clone()]).await;
    let registered = restate.register(&uri);
    let services: Vec<&str> = registered["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(services.len(), 3, "{registered}");
    for name in ["IgniteRuns", "Refunds", "Single"] {
        assert!(services.contains(&name), "{registered}");
    }
    let ingress = restate.ingress.clone();
    let refunds = || payments.received_requests();

    // The run waits: the call that needs approval is reported with the
    // run's ID, the call beside it finished.
    let run = start_refund(&ingress, &json!({"order_id": "A7", "amount": 250.0})).await;
    let waiting = wait_for_status(&ingress, &run, "waiting").await;
    assert_eq!(waiting["run"], run.as_str(), "{waiting}");
    assert_eq!(waiting["code"], "ignite::run::awaiting_approval", "{waiting}");
    let pending = waiting["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{waiting}");
    assert_eq!(pending[0]["tool"], "refund", "{waiting}");
    assert_eq!(pending[0]["node"], "Refunds > refund", "{waiting}");
    assert_eq!(pending[0]["args"], json!({"order_id": "A7", "amount": 250.0}), "{waiting}");
    let call = pending[0]["call"].as_str().unwrap().to_owned();
    wait_for("the note", || log(dir.path()).len() == 1).await;
    assert_eq!(refunds().await.unwrap().len(), 0, "nothing refunded before the decision");

    // The worker that ran it dies while the run waits.
    let (mut killed, survivor) =
        if log(dir.path())[0].0 == first.pid() { (first, second) } else { (second, first) };
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();

    // A call that does not wait is refused; the approval resolves the
    // promise, and the other worker finishes the run.
    let decide = format!("IgniteRuns/{run}/decide");
    let (status, body) =
        post(&ingress, &decide, &json!({"call": "refund-0", "approve": true})).await;
    assert_eq!(status, 409, "{body}");
    let error = error_of(&body);
    assert_eq!(error["code"], "ignite::serve::approval", "{body}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("has no call `refund-0` waiting for approval"), "{message}");
    let (status, body) =
        post(&ingress, &decide, &json!({"call": call, "approve": true, "note": "ok"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "running", "{body}");
    let (status, outputs) = outcome(&ingress, &run).await;
    assert_eq!((status, outputs), (200, json!({"noted": "noted", "refund": {"refunded": true}})));
    let done = wait_for_status(&ingress, &run, "done").await;
    assert_eq!(done["outputs"]["refund"], json!({"refunded": true}), "{done}");
    // The finished call was not made again, the approved one once, on
    // the second worker, with the approval's idempotency key.
    assert_eq!(log(dir.path()), [(killed.pid(), "A7".to_owned())]);
    let sent = refunds().await.unwrap();
    assert_eq!(sent.len(), 1);
    let key = sent[0].headers.get("idempotency-key").unwrap().to_str().unwrap();
    assert!(key.starts_with("ignite-"), "{key}");
    // Approving it again changes nothing.
    let (status, body) = post(&ingress, &decide, &json!({"call": call, "approve": true})).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        error_of(&body)["message"].as_str().unwrap().contains("was already approved"),
        "{body}"
    );
    assert_eq!(refunds().await.unwrap().len(), 1);

    // A denial: the node fails with `ignite::run::denied`, nothing is sent.
    let run = start_refund(&ingress, &json!({"order_id": "B9", "amount": 900.0})).await;
    let waiting = wait_for_status(&ingress, &run, "waiting").await;
    let call = waiting["pending"][0]["call"].as_str().unwrap().to_owned();
    let decide = format!("IgniteRuns/{run}/decide");
    let (status, body) =
        post(&ingress, &decide, &json!({"call": call, "approve": false, "note": "too much"})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = outcome(&ingress, &run).await;
    assert_eq!(status, 500, "{body}");
    let error = error_of(&body);
    assert_eq!(error["code"], "ignite::run::denied", "{body}");
    assert_eq!(error["path"], "Refunds > refund", "{body}");
    let failed = wait_for_status(&ingress, &run, "failed").await;
    assert_eq!(failed["error"]["code"], "ignite::run::denied", "{failed}");
    let (status, body) = post(&ingress, &decide, &json!({"call": call, "approve": true})).await;
    assert_eq!(status, 409, "{body}");
    let message = error_of(&body)["message"].as_str().unwrap().to_owned();
    assert!(message.contains("was already denied (too much)"), "{message}");
    assert_eq!(refunds().await.unwrap().len(), 1, "a denied call is never sent");
    // A run nobody knows; a body that is not a decision.
    let (status, body) =
        post(&ingress, "IgniteRuns/inv_nothing/decide", &json!({"call": call, "approve": true}))
            .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = post(&ingress, &decide, &json!({"call": call})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(error_of(&body)["code"], "ignite::serve::bad_body", "{body}");

    // A call that waits alone (nothing else in flight): the promise is
    // the run's own, resolved the same way.
    let run = start(&ingress, "Single", &json!({"amount": 500.0})).await;
    let waiting = wait_for_status(&ingress, &run, "waiting").await;
    let call = waiting["pending"][0]["call"].as_str().unwrap().to_owned();
    let decide = format!("IgniteRuns/{run}/decide");
    let (status, body) = post(&ingress, &decide, &json!({"call": call, "approve": true})).await;
    assert_eq!(status, 200, "{body}");
    let (status, outputs) = outcome(&ingress, &run).await;
    assert_eq!((status, outputs), (200, json!({"refund": {"refunded": true}})));
    assert_eq!(refunds().await.unwrap().len(), 2);
    // The runs of `Refunds` waited in a child (the note was in flight
    // beside it), the run of `Single` in its own invocation.
    let children = |run: &str| {
        format!(
            "SELECT id FROM sys_invocation WHERE target_handler_name = 'approval' \
             AND invoked_by_target = '{run}/run'"
        )
    };
    assert_eq!(restate.query(&children("Refunds")).await.len(), 2);
    assert_eq!(restate.query(&children("Single")).await, Vec::<Value>::new());
    drop(survivor);
}

/// `STEPS` with a contract whose budget allows two model calls.
const BUDGETED: &str = r#"
contract Budgeted {
  budget model_calls 2
  input topic: string
  compute text = Scribe(topic: topic)
  output text
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_counts_each_model_step_once_across_workers() {
    let (server, scribe, dir) = setup(Some(1)).await;
    let source = format!("{STEPS}{BUDGETED}").replace("BASE", &server.uri());
    std::fs::write(dir.path().join("budget.ign"), source).unwrap();
    let restate = Restate::start();
    let first = Worker::start(dir.path(), "budget.ign");
    let second = Worker::start(dir.path(), "budget.ign");
    let uri = forwarder(vec![first.address.clone(), second.address.clone()]).await;
    restate.register(&uri);
    let ingress = restate.ingress.clone();
    let call =
        tokio::spawn(
            async move { call(&ingress, "Budgeted", &json!({"topic": "rivers"}), None).await },
        );
    // The second model request (the run's last within `model_calls 2`) is
    // on its way when the worker dies.
    wait_for("the second model request", || seen(&scribe).len() == 2).await;
    let mut killed = if log(dir.path())[0].0 == first.pid() { first } else { second };
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();

    // The other worker replays the first request from the journal and
    // sends the second again: two model calls, the third is not sent.
    let (status, body) = call.await.unwrap();
    assert!(status >= 400, "{status} {body}");
    let error = error_of(&body);
    assert_eq!(error["code"], "ignite::run::budget", "{body}");
    assert_eq!(error["path"], "Budgeted > text", "{body}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message
            .contains("the budget `model_calls 2` of contract `Budgeted` is spent: 2 model calls"),
        "{message}"
    );
    assert_eq!(seen(&scribe), [(0, 1), (1, 2)]);
    let lines: Vec<String> = log(dir.path()).into_iter().map(|(_, line)| line).collect();
    assert_eq!(lines, ["step 1", "step 2"]);
}
