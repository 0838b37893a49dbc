//! Run fixtures: `corpus/run/*.ign` must run (snapshot: the outputs and
//! the nodes that ran), `corpus/run_err/*.ign` must fail (snapshot: the
//! rendered error), and every `contracts/*.ign` runs with its
//! `*.inputs.json`. The sidecar `NAME.inputs.json` is the JSON object of
//! inputs (what `ignite run --inputs` reads); the contract run is the
//! file's top-level one.
//!
//! `corpus/stored/*.ign` are answered from a store beside them: resumed
//! from `NAME.journal.jsonl`, replayed from `NAME.replay.jsonl`, or looked
//! up in the result cache `NAME.cache/`, each holding a value that does not
//! fit where the live effect would fit. Each must fail as the live answer
//! would (snapshot: the rendered error).

#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};

use std::sync::Arc;

use igniter::effects::{Cache, Effects, Recording};
use igniter::runtime::{Engine, RunOptions};
use serde_json::{Map, Value};

/// `path` relative to the crate, so snapshots do not depend on where the
/// repository is checked out.
fn relative(path: &Path) -> PathBuf {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(path).to_path_buf()
}

/// Runs the fixture at `path` live; the snapshot text and whether it
/// succeeded. The same whether its calls run on the engine's I/O threads
/// or on the run's own thread while it waits (as under `ignite run`).
fn run(path: &Path) -> (String, bool) {
    let threads = run_with(path, Effects::live());
    let on_run_thread = run_on(path, Effects::live(), Engine::with_calls_on_run_thread);
    assert_eq!(on_run_thread, threads, "{}: calls on the run's thread", path.display());
    threads
}

/// Runs the fixture at `path` through `effects`.
fn run_with(path: &Path, effects: Effects) -> (String, bool) {
    run_on(path, effects, |engine| engine)
}

/// Runs the fixture at `path` through `effects` on the engine `set` makes.
fn run_on(path: &Path, effects: Effects, set: fn(Engine) -> Engine) -> (String, bool) {
    let path = relative(path);
    let inputs: Map<String, Value> = std::fs::read_to_string(path.with_extension("inputs.json"))
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or_default();
    let compilation = igniter::compile(&path);
    let program = compilation.program.unwrap_or_else(|| {
        panic!(
            "{} has errors:\n{}",
            path.display(),
            compilation.diagnostics.render(&compilation.sources, false, 80)
        )
    });
    let engine = set(Engine::new(program).with_effects(effects));
    let options = RunOptions { trace: true, ..RunOptions::default() };
    let result = engine.contract(None).and_then(|contract| engine.run(contract, &inputs, &options));
    match result {
        Ok(output) => {
            let mut nodes: Vec<String> = output
                .trace
                .entries()
                .into_iter()
                .map(|e| format!("{} [{}] {}", e.path, e.kind, e.status))
                .collect();
            nodes.sort();
            let outputs = serde_json::to_string_pretty(&Value::Object(output.outputs)).unwrap();
            (format!("----- OUTPUTS\n{outputs}\n----- NODES\n{}\n", nodes.join("\n")), true)
        }
        Err(error) => {
            let rendered = match error.diagnostics() {
                Some(diagnostics) => diagnostics.render(&engine.program().sources, false, 80),
                None => format!("{error}\n"),
            };
            (format!("----- ERROR\n{rendered}"), false)
        }
    }
}

#[test]
fn runs() {
    insta::glob!("corpus/run/*.ign", |path| {
        let (snapshot, ok) = run(path);
        assert!(ok, "{} is in run/ but fails:\n{snapshot}", path.display());
        insta::assert_snapshot!(snapshot);
    });
}

#[test]
fn run_errors() {
    insta::glob!("corpus/run_err/*.ign", |path| {
        let (snapshot, ok) = run(path);
        assert!(!ok, "{} is in run_err/ but succeeds; move it to run/", path.display());
        insta::assert_snapshot!(snapshot);
    });
}

#[test]
fn stored_answers_are_checked() {
    insta::glob!("corpus/stored/*.ign", |path| {
        let journal = path.with_extension("journal.jsonl");
        let replay = path.with_extension("replay.jsonl");
        let cache = path.with_extension("cache");
        assert!(
            journal.exists() || replay.exists() || cache.is_dir(),
            "{} has no .journal.jsonl, .replay.jsonl or .cache/ beside it",
            path.display()
        );
        let mut snapshot = String::new();
        if cache.is_dir() {
            // The cache writes what it misses: look up in a copy.
            let copy = tempfile::tempdir().unwrap();
            copy_dir(&cache, copy.path());
            let cached = Cache::new(copy.path().to_path_buf());
            let (text, ok) = run_with(path, Effects::live().with(Arc::new(cached)));
            assert!(!ok, "{} answered from its cache succeeds:\n{text}", path.display());
            snapshot.push_str(&format!("===== CACHED IN {}\n{text}", relative(&cache).display()));
        }
        if journal.exists() {
            // `--resume` appends to its journal: resume a copy.
            let runs = tempfile::tempdir().unwrap();
            std::fs::copy(&journal, runs.path().join("fixture.jsonl")).unwrap();
            let resumed = Recording::resume(runs.path(), "fixture").unwrap();
            let (text, ok) = run_with(path, Effects::live().with(Arc::new(resumed)));
            assert!(!ok, "{} resumed from its journal succeeds:\n{text}", path.display());
            snapshot
                .push_str(&format!("===== RESUMED FROM {}\n{text}", relative(&journal).display()));
        }
        if replay.exists() {
            let replayed = Recording::replay(&relative(&replay)).unwrap();
            let (text, ok) = run_with(path, Effects::live().with(Arc::new(replayed)));
            assert!(!ok, "{} replayed succeeds:\n{text}", path.display());
            snapshot
                .push_str(&format!("===== REPLAYED FROM {}\n{text}", relative(&replay).display()));
        }
        insta::assert_snapshot!(snapshot);
    });
}

/// Copies the folder tree `from` into `to`.
fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn examples() {
    insta::glob!(env!("CARGO_MANIFEST_DIR"), "contracts/*.ign", |path| {
        assert!(
            path.with_extension("inputs.json").exists(),
            "{} has no .inputs.json",
            path.display()
        );
        let (snapshot, ok) = run(path);
        assert!(ok, "example {} fails:\n{snapshot}", path.display());
        insta::assert_snapshot!(snapshot);
    });
}

/// Runs `program` (in `gather.ign`, in a fresh folder) whose agent reads
/// `script.json`: one turn of `calls` calls of tool `name`, then "done".
fn run_one_turn(
    program: &str,
    name: &str,
    calls: usize,
    jobs: Option<usize>,
) -> (tempfile::TempDir, igniter::runtime::RunOutput) {
    let dir = tempfile::tempdir().unwrap();
    let calls: Vec<Value> = (0..calls)
        .map(
            |i| serde_json::json!({"id": format!("call_{i}"), "name": name, "arguments": {"i": i}}),
        )
        .collect();
    let script = serde_json::json!([{"tool_calls": calls}, {"text": "done"}]);
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    let file = dir.path().join("gather.ign");
    std::fs::write(&file, program).unwrap();
    let compilation = igniter::compile(&file);
    let engine = Engine::new(compilation.program.expect("compiles"));
    let contract = engine.contract(None).unwrap();
    let options = RunOptions { jobs, trace: true, ..RunOptions::default() };
    let output = engine.run(contract, &Map::new(), &options).unwrap();
    assert_eq!(output.outputs["reply"], "done");
    (dir, output)
}

/// An agent with the one tool `tool` (declared in `tool`), asked once.
fn agent_program(tool: &str) -> String {
    format!(
        r#"
{tool}

agent Gatherer {{
  provider script "script.json"
  model "scripted"
  tools Meet
  input task: string
}}

contract Gather {{
  input task: string = "meet"
  compute reply = Gatherer(task)
  output reply
}}
"#
    )
}

/// The tool calls of one model turn run concurrently: each call of `Meet`
/// waits (up to 10 s) until all four have started, so run one after the
/// other they would all fail.
#[test]
fn tool_calls_of_one_turn_run_concurrently() {
    let tool = r#"
tool Meet {
  description "Waits until four calls have started"
  param i: integer
  exec "sh" "-c" "cat > /dev/null; touch started.$$; n=0; while [ $(ls started.* | wc -l) -lt 4 ]; do sleep 0.02; n=$((n+1)); if [ $n -gt 500 ]; then echo alone >&2; exit 1; fi; done; echo met"
}"#;
    let (_dir, output) = run_one_turn(&agent_program(tool), "meet", 4, None);
    let failed: Vec<_> = output
        .trace
        .entries()
        .into_iter()
        .filter(|e| e.kind == "tool_call" && e.status != "ok")
        .collect();
    assert!(failed.is_empty(), "tool calls failed: {failed:?}");
    let met = output.trace.entries().into_iter().filter(|e| e.kind == "tool_call").count();
    assert_eq!(met, 4);
}

/// `--jobs 2` bounds one turn's tool calls like any waiting node: each of
/// the six calls logs how many were running while it ran (itself
/// included), and none saw more than two.
#[test]
fn tool_calls_of_one_turn_are_bounded_by_jobs() {
    let tool = r#"
tool Meet {
  description "Logs how many calls run at once"
  param i: integer
  exec "sh" "-c" "cat > /dev/null; touch running.$$; sleep 0.2; ls running.* | wc -l >> seen.log; rm running.$$; echo ok"
}"#;
    let (dir, output) = run_one_turn(&agent_program(tool), "meet", 6, Some(2));
    let calls = output.trace.entries().into_iter().filter(|e| e.kind == "tool_call").count();
    assert_eq!(calls, 6);
    let seen = std::fs::read_to_string(dir.path().join("seen.log")).unwrap();
    let seen: Vec<usize> = seen.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(seen.len(), 6);
    assert!(seen.iter().all(|&n| n <= 2), "more than two calls at once: {seen:?}");
}

/// With neither a runner nor `--jobs`, one turn runs at most 64 of its
/// tool calls at once (`tools::DEFAULT_TURN_CALLS`): of 70 calls that each
/// hold on for a second, none saw more than 64 running.
#[test]
fn tool_calls_of_one_turn_have_a_default_cap() {
    let tool = r#"
tool Meet {
  description "Logs how many calls run at once"
  param i: integer
  exec "sh" "-c" "cat > /dev/null; touch running.$$; sleep 1; ls running.* | wc -l >> seen.log; rm running.$$; echo ok"
}"#;
    let (dir, output) = run_one_turn(&agent_program(tool), "meet", 70, None);
    let calls = output.trace.entries().into_iter().filter(|e| e.kind == "tool_call").count();
    assert_eq!(calls, 70);
    let seen = std::fs::read_to_string(dir.path().join("seen.log")).unwrap();
    let seen: Vec<usize> = seen.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(seen.len(), 70);
    let most = seen.iter().copied().max().unwrap_or(0);
    assert_eq!(igniter::tools::DEFAULT_TURN_CALLS, 64);
    assert!(most <= 64, "more than 64 calls at once: {seen:?}");
    assert!(most > 2, "the calls ran concurrently: {seen:?}");
}

/// A provider of kind `openai` on 127.0.0.1, from threads of its own (as
/// one in another process): it asks for tool `step` `turns` times, then
/// answers "done", over HTTP/1.1 keep-alive, the body a moment after the
/// head. Returns its base URL and the count
/// of connections it accepted.
fn counting_provider(turns: usize) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let asked = Arc::clone(&asked);
            std::thread::spawn(move || {
                stream.set_nodelay(true).unwrap();
                let mut reader = BufReader::new(stream);
                while let Ok(Some(_)) = support::read_request(&mut reader) {
                    let turn = asked.fetch_add(1, Ordering::SeqCst);
                    let message = if turn < turns {
                        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{
                            "id": format!("c{turn}"), "type": "function",
                            "function": {"name": "step", "arguments": format!("{{\"i\": {turn}}}")}}]})
                    } else {
                        serde_json::json!({"role": "assistant", "content": "done"})
                    };
                    let reply = serde_json::json!({"choices": [{"message": message,
                        "finish_reason": if turn < turns { "tool_calls" } else { "stop" }}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 2}})
                    .to_string();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        reply.len()
                    );
                    let stream = reader.get_mut();
                    stream.write_all(head.as_bytes()).unwrap();
                    // The body a moment later, so the client reads them apart.
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    stream.write_all(reply.as_bytes()).unwrap();
                }
            });
        }
    });
    (base, accepted)
}

/// An agent's turns go out on one connection: each request on the one the
/// last reply came back on, which the pool has back by then (under `ignite
/// run`, on the run's thread, the next turn used to open a second one).
#[test]
fn an_agent_s_turns_share_one_connection() {
    let (base, accepted) = counting_provider(5);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("walk.ign");
    let program = format!(
        r#"
provider Fake {{
  kind openai
  base_url "{base}"
  retries 0
}}

tool Step {{
  description "Takes one step"
  param i: integer
  returns i + 1
}}

agent Walker {{
  provider Fake
  model "m"
  tools Step
  input q: string
  prompt "{{q}}"
}}

contract Walk {{
  input q: string = "go"
  compute answer = Walker(q: q)
  output answer
}}
"#
    );
    std::fs::write(&file, program).unwrap();
    let compilation = igniter::compile(&file);
    let engine = Engine::new(compilation.program.expect("compiles")).with_calls_on_run_thread();
    let contract = engine.contract(None).unwrap();
    let output = engine.run(contract, &Map::new(), &RunOptions::default()).unwrap();
    assert_eq!(output.outputs["answer"], "done");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// `http` tool nodes of a contract against a local server: GET sends the
/// arguments as a query string, POST as a JSON body; a non-2xx status
/// fails the node with the status in the message.
#[test]
fn http_tool_nodes() {
    use wiremock::matchers::{body_json, method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/price"))
            .and(query_param("sku", "SKU-1"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(serde_json::json!({"price": 9.5})),
            )
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/orders"))
            .and(body_json(serde_json::json!({"sku": "SKU-1", "total": 19.0})))
            .respond_with(ResponseTemplate::new(201).set_body_string("order 7 accepted"))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/broken"))
            .respond_with(ResponseTemplate::new(503).set_body_string("maintenance"))
            .mount(&server)
            .await;
        server
    });
    let program = format!(
        r#"
tool Price {{
  description "Price of a SKU"
  param sku: string
  http get "{uri}/price"
}}
tool Order {{
  description "Place an order"
  param sku: string
  param total: float
  http post "{uri}/orders"
}}
tool Broken {{
  description "Always down"
  param sku: string
  http get "{uri}/broken"
}}
contract Buy {{
  input sku: string
  input fail: boolean = false
  compute price = Price(sku)
  compute order = Order(sku: sku, total: price.price * 2)
  compute status = if fail then Broken(sku) else "ok"
  output order
}}
"#,
        uri = server.uri()
    );
    let compilation = igniter::compile_source("buy.ign", &program);
    let rendered = compilation.diagnostics.render(&compilation.sources, false, 80);
    // A call as an arm of a branch is a node's whole expression.
    assert!(compilation.program.is_some() && rendered.contains("unused_node"), "{rendered}");

    let program = program.replace(
        "compute status = if fail then Broken(sku) else \"ok\"\n  output order",
        "compute status = Broken(sku)\n  output order\n  output status",
    );
    let engine = Engine::new(igniter::compile_source("buy.ign", &program).program.unwrap());
    let contract = engine.contract(None).unwrap();
    let inputs: Map<String, Value> =
        [("sku".to_owned(), Value::from("SKU-1"))].into_iter().collect();
    let only_order = RunOptions { outputs: vec!["order".to_owned()], ..RunOptions::default() };
    let output = engine.run(contract, &inputs, &only_order).unwrap();
    assert_eq!(output.outputs["order"], "order 7 accepted");
    let error = engine.run(contract, &inputs, &RunOptions::default()).unwrap_err();
    assert_eq!(
        error.cause().map(igniter::diagnostic::Code::as_str),
        Some("ignite::tools::http_status")
    );
    assert_eq!(error.kind(), "http_status");
    let error = error.to_string();
    assert!(
        error.contains("Buy > status") && error.contains("503") && error.contains("maintenance"),
        "{error}"
    );
}

/// Guards gate effects: with the guard false, neither the child process
/// that writes a file nor the HTTP call runs (the server counts requests),
/// while the lookup the guard needs does run. With the guard true, both
/// effects happen once.
#[test]
fn a_failing_guard_stops_the_effects_it_gates() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/orders"))
            .respond_with(ResponseTemplate::new(201).set_body_string("order placed"))
            .mount(&server)
            .await;
        server
    });
    let dir = tempfile::tempdir().unwrap();
    let program = format!(
        r#"
tool Lookup {{
  description "Stock of a SKU (writes looked_up)"
  param stock: integer
  exec "sh" "-c" "cat > /dev/null; touch looked_up; echo 0"
}}
tool Ticket {{
  description "Creates a ticket (writes ticket)"
  param sku: string
  exec "sh" "-c" "cat > /dev/null; touch ticket; echo created"
}}
tool Order {{
  description "Places an order"
  param sku: string
  http post "{uri}/orders"
}}
contract Buy {{
  input sku: string
  input stock: integer
  compute looked_up = Lookup(stock)
  guard in_stock = stock + looked_up > 0 else "SKU {{sku}} is out of stock"
  compute ticket = Ticket(sku)
  compute order = Order(sku)
  output ticket
  output order
}}
"#,
        uri = server.uri()
    );
    let file = dir.path().join("buy.ign");
    std::fs::write(&file, program).unwrap();
    let engine = Engine::new(igniter::compile(&file).program.expect("compiles"));
    let contract = engine.contract(None).unwrap();
    let inputs = |stock: i64| -> Map<String, Value> {
        serde_json::from_value(serde_json::json!({"sku": "A-1", "stock": stock})).unwrap()
    };
    let error = engine.run(contract, &inputs(0), &RunOptions::default()).unwrap_err();
    assert_eq!(error.to_string(), "Buy > in_stock: SKU A-1 is out of stock");
    assert!(dir.path().join("looked_up").exists(), "the lookup the guard needs runs");
    assert!(!dir.path().join("ticket").exists(), "the gated child process never ran");
    let requests = runtime.block_on(server.received_requests()).unwrap();
    assert!(requests.is_empty(), "the gated HTTP call never happened: {requests:?}");

    let output = engine.run(contract, &inputs(1), &RunOptions::default()).unwrap();
    assert_eq!(output.outputs["order"], "order placed");
    assert!(dir.path().join("ticket").exists());
    assert_eq!(runtime.block_on(server.received_requests()).unwrap().len(), 1);
}

/// `retries N` on `exec` and `http` tools: a child process that fails
/// twice then succeeds, and a server that answers 503 twice then 200, both
/// succeed with `retries 2`; a 404 is not retried; with `retries 1` the
/// flaky process still fails.
#[test]
fn tools_with_retries_try_again() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/flaky"))
            .respond_with(ResponseTemplate::new(503).set_body_string("busy"))
            .up_to_n_times(2)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/flaky"))
            .respond_with(ResponseTemplate::new(200).set_body_string("finally"))
            .with_priority(2)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/missing"))
            .respond_with(ResponseTemplate::new(404).set_body_string("no such thing"))
            .mount(&server)
            .await;
        server
    });
    let dir = tempfile::tempdir().unwrap();
    let program = |exec_retries: u32| {
        format!(
            r#"
tool Flaky {{
  description "Fails until its third attempt"
  param run: string
  retries {exec_retries}
  exec "sh" "-c" "cat > /dev/null; echo x >> attempts.$0; [ $(wc -l < attempts.$0) -ge 3 ] && echo done || exit 1" "{exec_retries}"
}}
tool Busy {{
  description "503 twice, then 200"
  retries 2
  http get "{uri}/flaky"
}}
tool Missing {{
  description "404"
  retries 3
  http get "{uri}/missing"
}}
contract Retry {{
  compute process = Flaky(run: "x")
  compute busy = Busy()
  compute missing = try Missing()
  output process
  output busy
  output missing
}}
"#,
            uri = server.uri()
        )
    };
    let run = |retries: u32| {
        let file = dir.path().join(format!("retry{retries}.ign"));
        std::fs::write(&file, program(retries)).unwrap();
        let compilation = igniter::compile(&file);
        let engine = Engine::new(compilation.program.expect("compiles"));
        let contract = engine.contract(None).unwrap();
        engine.run(contract, &Map::new(), &RunOptions::default())
    };
    let output = run(2).unwrap();
    assert_eq!(output.outputs["process"], "done");
    assert_eq!(output.outputs["busy"], "finally");
    assert_eq!(output.outputs["missing"]["ok"], false);
    let requests = runtime.block_on(server.received_requests()).unwrap();
    let count = |p: &str| requests.iter().filter(|r| r.url.path() == p).count();
    assert_eq!((count("/flaky"), count("/missing")), (3, 1), "503 retried, 404 not");

    let error = run(1).unwrap_err().to_string();
    assert!(error.contains("Retry > process") && error.contains("exited"), "{error}");
}

/// Fail-fast: with one call at a time, the failing first item stops the
/// `for` and no later item's child process ever starts.
#[test]
fn a_failing_item_starts_no_further_items() {
    let dir = tempfile::tempdir().unwrap();
    let program = r#"
tool Step {
  description "Fails for item 0, else leaves a file"
  param i: integer
  exec "sh" "-c" "i=$(cat | tr -dc 0-9); [ \"$i\" = 0 ] && exit 1; touch ran.$i; echo $i"
}
contract Steps {
  input items: array<integer>
  compute steps = for i in items: Step(i)
  output steps
}
"#;
    let file = dir.path().join("steps.ign");
    std::fs::write(&file, program).unwrap();
    let engine = Engine::new(igniter::compile(&file).program.expect("compiles"));
    let contract = engine.contract(None).unwrap();
    let inputs: Map<String, Value> =
        serde_json::from_value(serde_json::json!({"items": [0, 1, 2, 3]})).unwrap();
    let options = RunOptions { jobs: Some(1), ..RunOptions::default() };
    let error = engine.run(contract, &inputs, &options).unwrap_err().to_string();
    assert!(error.starts_with("Steps > steps[0]: tool `step` failed"), "{error}");
    let ran: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("ran."))
        .collect();
    // Items start in order, one at a time: without fail-fast, 1 to 3
    // would run after 0 failed.
    assert!(ran.is_empty(), "items started after the failure: {ran:?}");
}

/// A failed tool call is recorded with its kind and replays as it failed;
/// a recording written before failures had kinds (`{message, code,
/// help}`) still replays, with its message and code, as kind `kept`.
#[test]
fn recorded_failures_replay_with_their_kind_and_old_ones_still_replay() {
    use igniter::effects::{Effects, Recording, RunHeader};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let program = r#"
tool Broken {
  description "Always exits 3"
  exec "sh" "-c" "exit 3"
}

contract Try {
  compute r = try Broken()
  output r
}
"#;
    let engine = |effects: Effects| {
        let compiled = igniter::compile_source("try.ign", program).program.unwrap();
        Engine::new(compiled).with_effects(effects)
    };
    let run = |engine: Engine| {
        let contract = engine.contract(None).unwrap();
        let output = engine.run(contract, &Map::new(), &RunOptions::default()).unwrap();
        engine.effects().finish().unwrap();
        output.outputs["r"].clone()
    };
    let path = dir.path().join("try.jsonl");
    let header = RunHeader { program: None, contract: None, inputs: Map::new() };
    let recording = Recording::record(&path, header).unwrap();
    let live = run(engine(Effects::live().with(Arc::new(recording))));
    assert_eq!(live["kind"], "failed");
    let text = std::fs::read_to_string(&path).unwrap();
    let line: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(line["failed"]["code"], "ignite::tools::failed");
    assert_eq!(line["failed"]["kind"], "failed");
    let replayed = run(engine(Effects::live().with(Arc::new(Recording::replay(&path).unwrap()))));
    assert_eq!(replayed, live);

    // The same line as an earlier version wrote it.
    let mut old = line.clone();
    old["failed"] = serde_json::json!({
        "message": "`sh` exited with status 3 (no stderr)",
        "code": "ignite::tools::failed",
    });
    let header = text.lines().next().unwrap();
    std::fs::write(&path, format!("{header}\n{old}\n")).unwrap();
    let replayed = run(engine(Effects::live().with(Arc::new(Recording::replay(&path).unwrap()))));
    assert_eq!(replayed["error"], live["error"]);
    assert_eq!(replayed["code"], "ignite::run::tool_failed");
    assert_eq!(replayed["kind"], "kept");
}

/// A store that cannot keep a result fails the call with the store's code:
/// here a cache whose folder is a regular file.
#[test]
fn a_cache_that_cannot_be_written_fails_the_call() {
    use igniter::effects::{Cache, Effects};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-folder");
    std::fs::write(&blocker, "a file").unwrap();
    let program = r#"
tool Greet {
  description "Greets"
  exec "sh" "-c" "cat > /dev/null; echo hi"
  cache
}

contract Hello {
  compute greeting = Greet()
  output greeting
}
"#;
    let compiled = igniter::compile_source("hello.ign", program).program.unwrap();
    let engine =
        Engine::new(compiled).with_effects(Effects::live().with(Arc::new(Cache::new(blocker))));
    let contract = engine.contract(None).unwrap();
    let error = engine.run(contract, &Map::new(), &RunOptions::default()).unwrap_err();
    assert_eq!(
        error.cause().map(igniter::diagnostic::Code::as_str),
        Some("ignite::effects::store")
    );
    assert_eq!(error.kind(), "store");
    assert!(error.to_string().contains("cannot write the cache"), "{error}");
}

/// A run whose calls run on its own thread still stops at its deadline and
/// when cancelled from another thread, its call in flight cancelled.
#[test]
fn calls_on_the_run_thread_stop_at_the_deadline_and_when_cancelled() {
    let program = "tool Wait {\n  description \"waits\"\n  exec \"sleep\" \"30\"\n}\n\
                   contract Slow {\n  compute out = Wait()\n  output out\n}\n";
    let compiled = igniter::compile_source("slow.ign", program).program.expect("compiles");
    let engine = Engine::new(compiled).with_calls_on_run_thread();
    let contract = engine.contract(None).unwrap();
    let inputs = Map::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(200);
    let options = RunOptions { deadline: Some(deadline), ..RunOptions::default() };
    let error = engine.run(contract, &inputs, &options).unwrap_err();
    assert_eq!(error.kind(), "deadline");
    let cancel = igniter::runtime::Cancel::default();
    let options = RunOptions { cancel: Some(cancel.clone()), ..RunOptions::default() };
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        cancel.cancel();
    });
    let error = engine.run(contract, &inputs, &options).unwrap_err();
    assert_eq!(error.kind(), "deadline");
    stopper.join().unwrap();
}
