//! `tools/call` round trips per second: `ignite mcp tests/mcp/shop.ign`
//! (stdio, then Streamable HTTP) next to the official Python SDK's own
//! server (`benches/mcp/python_server.py`) answering the same tool, `add`.
//! One client sends a call, waits for its answer, sends the next, for a
//! fixed time; the client is the same small JSON-RPC loop for both
//! servers, so the figures compare the servers. The four servers run at
//! once and take turns of half a second, ignite's and Python's
//! alternating, so the load of a shared machine falls on both alike.
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

/// How long each server is called for in one turn.
const SLICE: Duration = Duration::from_millis(500);

/// Turns per server: 5 s of calls each in all.
const TURNS: u32 = 10;

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

/// Checks that `answer` is the sum `add` gives for call `id` (`id + 1`).
fn add_answered(answer: &Value, id: u64) {
    assert_eq!(answer["result"]["structuredContent"]["result"], json!(id + 1), "{answer}");
}

fn python() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    root.join(".peers/python/bin/python").display().to_string()
}

/// A stdio server, initialized, and the id of its next call.
struct StdioServer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    id: u64,
}

impl StdioServer {
    fn start(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Self { child, input, output, id: 1 };
        server.send(&initialize());
        server.receive();
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").expect("written");
        self.input.flush().expect("flushed");
    }

    fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.output.read_line(&mut line).expect("an answer");
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        assert!(answer.get("result").is_some(), "{answer}");
        answer
    }

    /// Calls `add` one after another for `spell`; how many answered.
    fn calls_for(&mut self, spell: Duration) -> u64 {
        let (first, started) = (self.id, Instant::now());
        while started.elapsed() < spell {
            self.send(&call(self.id));
            let answer = self.receive();
            add_answered(&answer, self.id);
            self.id += 1;
        }
        self.id - first
    }

    fn stop(mut self) {
        drop(self.input);
        let _ = self.child.wait();
    }
}

/// A Streamable HTTP endpoint, initialized (in the session it opened, when
/// it opens one), and the id of its next call.
struct HttpServer {
    client: reqwest::Client,
    url: String,
    session: Option<String>,
    id: u64,
}

impl HttpServer {
    async fn open(url: &str) -> Self {
        let mut server = Self {
            client: igniter::http_client::builder().build().expect("an HTTP client"),
            url: url.to_owned(),
            session: None,
            id: 1,
        };
        let opened = server.post(initialize()).await;
        server.session =
            opened.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let _ = opened.text().await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = server.post(note).await.text().await;
        server
    }

    async fn post(&self, body: Value) -> reqwest::Response {
        let mut request = self
            .client
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18")
            .json(&body);
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session);
        }
        request.send().await.expect("an answer")
    }

    /// Calls `add` one after another for `spell`; how many answered.
    async fn calls_for(&mut self, spell: Duration) -> u64 {
        let (first, started) = (self.id, Instant::now());
        while started.elapsed() < spell {
            let text = self.post(call(self.id)).await.text().await.expect("a body");
            // A JSON body, or SSE events (a priming one first) whose last
            // `data:` line is the answer.
            let json = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:").map(str::trim))
                .rfind(|d| !d.is_empty())
                .unwrap_or(&text);
            let answer: Value = serde_json::from_str(json.trim()).expect("JSON");
            add_answered(&answer, self.id);
            self.id += 1;
        }
        self.id - first
    }
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

    let mut stdio = [
        StdioServer::start(Command::new(ignite).arg("mcp").arg(&shop).arg("--no-cache")),
        StdioServer::start(Command::new(python()).arg(&server)),
    ];
    let (mut ignite_child, url) = started(
        Command::new(ignite).arg("mcp").arg(&shop).args(["--no-cache", "--http", "127.0.0.1:0"]),
        "listening on ",
    );
    let port = free_port();
    let (mut python_child, _) =
        started(Command::new(python()).arg(&server).arg(port.to_string()), "Uvicorn running on");
    let mut http = [
        HttpServer::open(&url).await,
        HttpServer::open(&format!("http://127.0.0.1:{port}/mcp")).await,
    ];
    // Turns of SLICE each, ignite's and Python's alternating, so that a
    // busy moment of the shared machine falls on both alike.
    let mut calls = [[0_u64; 2]; 2];
    for _ in 0..TURNS {
        for (side, server) in stdio.iter_mut().enumerate() {
            calls[0][side] += server.calls_for(SLICE);
        }
        for (side, server) in http.iter_mut().enumerate() {
            calls[1][side] += server.calls_for(SLICE).await;
        }
    }
    stdio.into_iter().for_each(StdioServer::stop);
    let _ = ignite_child.kill();
    let _ = python_child.kill();

    let spell = SLICE * TURNS;
    let rate = |n: u64| n as f64 / spell.as_secs_f64();
    println!("tools/call round trips per second, one client, {spell:?} each in {TURNS} turns");
    println!("| transport | ignite mcp | Python SDK server | ratio |");
    println!("| --- | --- | --- | --- |");
    for (name, [ignite, python]) in [("stdio", calls[0]), ("Streamable HTTP", calls[1])] {
        let (ignite, python) = (rate(ignite), rate(python));
        println!("| {name} | {ignite:.0} | {python:.0} | {:.1}× |", ignite / python);
    }
    // The engine owns a runtime, which may not be dropped in async code.
    let shop = shop.clone();
    std::thread::spawn(move || in_run(ignite, &shop)).join().expect("the bench runs");
}
