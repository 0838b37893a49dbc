//! `tools/call` round trips per second: `ignite mcp tests/mcp/shop.ign`
//! (stdio, then Streamable HTTP) next to the official Python SDK's own
//! server (`benches/mcp/python_server.py`) answering the same tool, `add`.
//! One client sends a call, waits for its answer, sends the next, for a
//! fixed time; the client is the same small JSON-RPC loop for both
//! servers, so the figures compare the servers.
//!
//! Then the overhead an MCP tool call adds inside a run: one contract
//! calls `add` [`CALLS`] times in a `for`, once as a `returns` tool of its
//! own and once as `mcp Shop "add"` of `ignite mcp tests/mcp/shop.ign` (a
//! local stdio server; the connection made by a first run, kept after).
//!
//! `scripts/peers.sh install python && cargo bench --bench mcp`; figures
//! go to BENCHMARKS.md.

#![allow(clippy::print_stdout, missing_docs)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const SPELL: Duration = Duration::from_secs(5);

/// Calls of the tool per run in the in-run overhead bench.
const CALLS: usize = 200;

/// Runs of each contract timed in the in-run overhead bench.
const RUNS: usize = 10;

/// Seconds per call of `contract` in `engine`, the median of [`RUNS`] runs
/// of [`CALLS`] calls (after one untimed run).
fn per_call(engine: &igniter::runtime::Engine, contract: &str) -> f64 {
    let id = engine.contract(Some(contract)).expect("the contract");
    let xs: Vec<Value> = (0..CALLS).map(|i| json!(i)).collect();
    let inputs = json!({"xs": xs}).as_object().cloned().expect("an object");
    let options = igniter::runtime::RunOptions::default();
    engine.run(id, &inputs, &options).expect("the first run");
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            let out = engine.run(id, &inputs, &options).expect("runs");
            assert_eq!(out.outputs["sums"].as_array().map(Vec::len), Some(CALLS));
            started.elapsed().as_secs_f64() / CALLS as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[RUNS / 2]
}

/// The in-run overhead of an MCP call over a local stdio server.
fn in_run(ignite: &str, shop: &Path) {
    let dir = tempfile::tempdir().expect("a temp folder");
    let program = format!(
        "mcp Shop {{\n  command {:?} \"mcp\" {:?} \"--no-cache\"\n}}\n\
         tool Remote {{\n  mcp Shop \"add\"\n}}\n\
         tool Local {{\n  param a: integer\n  param b: integer\n  result integer\n  returns a + b\n}}\n\
         contract ViaMcp {{\n  input xs: array<integer>\n  compute sums = for x in xs: Remote(a: x, b: 1)\n  output sums\n}}\n\
         contract InProcess {{\n  input xs: array<integer>\n  compute sums = for x in xs: Local(a: x, b: 1)\n  output sums\n}}\n",
        ignite,
        shop.display().to_string()
    );
    let file = dir.path().join("overhead.ign");
    std::fs::write(&file, program).expect("written");
    let locked = Command::new(ignite).args(["mcp", "lock"]).arg(&file).output().expect("locks");
    assert!(locked.status.success(), "{}", String::from_utf8_lossy(&locked.stderr));
    let compiled = igniter::compile(&file);
    let engine = igniter::runtime::Engine::new(compiled.program.expect("compiles"));
    let local = per_call(&engine, "InProcess");
    let remote = per_call(&engine, "ViaMcp");
    println!();
    println!("in-run cost of one call of `add`, {CALLS} calls per run, median of {RUNS} runs");
    println!("| tool | per call | calls/s |");
    println!("| --- | --- | --- |");
    for (name, seconds) in
        [("`returns` (in process)", local), ("`mcp Shop \"add\"` (stdio)", remote)]
    {
        println!("| {name} | {:.1} µs | {:.0} |", seconds * 1e6, 1.0 / seconds);
    }
    println!("overhead of MCP: {:.1} µs per call", (remote - local) * 1e6);
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    }})
}

fn call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": id, "b": 1}}})
}

fn python() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    root.join(".peers/python/bin/python").display().to_string()
}

/// Round trips per second over stdio with `command`.
fn stdio(command: &mut Command) -> f64 {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server starts");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let send = |input: &mut ChildStdin, message: &Value| {
        writeln!(input, "{message}").expect("written");
        input.flush().expect("flushed");
    };
    let receive = |output: &mut BufReader<ChildStdout>| {
        let mut line = String::new();
        output.read_line(&mut line).expect("an answer");
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        assert!(answer.get("result").is_some(), "{answer}");
        answer
    };
    send(&mut input, &initialize());
    receive(&mut output);
    send(&mut input, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (mut id, started) = (1, Instant::now());
    while started.elapsed() < SPELL {
        send(&mut input, &call(id));
        let answer = receive(&mut output);
        assert_eq!(answer["result"]["structuredContent"]["result"], json!(id + 1), "{answer}");
        id += 1;
    }
    let rate = id as f64 / started.elapsed().as_secs_f64();
    drop(input);
    let _ = child.wait();
    rate
}

/// Round trips per second over Streamable HTTP at `url`, each call in the
/// session `initialize` opened (when the server opens one).
async fn http(url: &str) -> f64 {
    let client = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut request = client
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18")
            .json(&body);
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session);
        }
        request.send()
    };
    let opened = post(initialize(), None).await.expect("initialize");
    let session =
        opened.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let _ = opened.text().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = post(note, session.clone()).await.expect("initialized").text().await;
    let (mut id, started) = (1, Instant::now());
    while started.elapsed() < SPELL {
        let text =
            post(call(id), session.clone()).await.expect("a call").text().await.expect("a body");
        // A JSON body, or SSE events (a priming one first) whose last
        // `data:` line is the answer.
        let json = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:").map(str::trim))
            .rfind(|d| !d.is_empty())
            .unwrap_or(&text);
        let answer: Value = serde_json::from_str(json.trim()).expect("JSON");
        assert_eq!(answer["result"]["structuredContent"]["result"], json!(id + 1), "{answer}");
        id += 1;
    }
    id as f64 / started.elapsed().as_secs_f64()
}

/// Starts `command` and reads its stderr up to a line starting with
/// `prefix`; the child and the rest of that line.
fn started(command: &mut Command, prefix: &str) -> (Child, String) {
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let rest = loop {
        let line = lines.next().expect("a line").expect("text");
        if let Some(rest) = line.split_once(prefix).map(|(_, r)| r.to_owned()) {
            break rest;
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    (child, rest)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("addr").port()
}

#[tokio::main]
async fn main() {
    let shop = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/shop.ign");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/mcp/python_server.py");
    let ignite = env!("CARGO_BIN_EXE_ignite");

    let ignite_stdio = stdio(Command::new(ignite).arg("mcp").arg(&shop).arg("--no-cache"));
    let python_stdio = stdio(Command::new(python()).arg(&server));

    let (mut ignite_child, url) = started(
        Command::new(ignite).arg("mcp").arg(&shop).args(["--no-cache", "--http", "127.0.0.1:0"]),
        "listening on ",
    );
    let ignite_http = http(&url).await;
    let _ = ignite_child.kill();
    let port = free_port();
    let (mut python_child, _) =
        started(Command::new(python()).arg(&server).arg(port.to_string()), "Uvicorn running on");
    let python_http = http(&format!("http://127.0.0.1:{port}/mcp")).await;
    let _ = python_child.kill();

    println!("tools/call round trips per second, one client, {SPELL:?} each");
    println!("| transport | ignite mcp | Python SDK server | ratio |");
    println!("| --- | --- | --- | --- |");
    for (name, ignite, python) in
        [("stdio", ignite_stdio, python_stdio), ("Streamable HTTP", ignite_http, python_http)]
    {
        println!("| {name} | {ignite:.0} | {python:.0} | {:.1}× |", ignite / python);
    }
    // The engine owns a runtime, which may not be dropped in async code.
    let shop = shop.clone();
    std::thread::spawn(move || in_run(ignite, &shop)).join().expect("the bench runs");
}
