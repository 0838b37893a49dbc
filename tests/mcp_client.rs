//! ignite's MCP client against real servers, all local: the fixture server
//! of tests/mcp/fixture_server.py (the official Python SDK's server, over
//! stdio and Streamable HTTP), the pinned `mcp-server-time` (PyPI) and
//! `@modelcontextprotocol/server-everything` (npm), each a real child of
//! the `ignite` binary. Each test writes a program into a temporary
//! folder, locks it with `ignite mcp lock` and runs it.

#![allow(clippy::unwrap_used)] // helpers of the tests below

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A program in a temporary folder.
struct Project {
    dir: tempfile::TempDir,
}

fn python() -> PathBuf {
    support::peers::peer("python", "python")
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fixture_server.py")
}

/// A server declaration `mcp Fixture { ... }` running the fixture server
/// with `extra` statements.
fn fixture_server(extra: &str) -> String {
    format!(
        "mcp Fixture {{\n  command {:?} {:?}\n  env FIXTURE_MODE = env(\"FIXTURE_MODE\", \"normal\")\n{extra}}}\n",
        python().display().to_string(),
        fixture().display().to_string()
    )
}

impl Project {
    fn new(text: &str) -> Self {
        let project = Self { dir: tempfile::tempdir().expect("a temp folder") };
        project.write(text);
        project
    }

    fn write(&self, text: &str) {
        std::fs::write(self.dir.path().join("p.ign"), text).expect("writes");
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn ignite(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ignite"));
        command.args(args).current_dir(self.dir.path()).env("NO_COLOR", "1");
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().expect("ignite runs")
    }

    fn lock(&self) {
        let out = self.ignite(&["mcp", "lock", "p.ign"], &[]);
        assert!(out.status.success(), "lock failed: {}", text(&out.stderr));
        assert!(self.path("ignite.lock").is_file());
    }

    /// `ignite run p.ign ARGS`: the outputs, or the failure's stderr.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Value, String> {
        let mut all = vec!["run", "p.ign"];
        all.extend_from_slice(args);
        let out = self.ignite(&all, env);
        if out.status.success() {
            Ok(serde_json::from_slice(&out.stdout).expect("outputs are JSON"))
        } else {
            // Messages are wrapped to the terminal's width: one line each.
            Err(text(&out.stderr).replace("\n  │ ", " "))
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn calls_the_fixture_server_over_stdio_typed_from_the_lock() {
    let project = Project::new(&format!(
        "{}
tool Add {{
  mcp Fixture \"add\"
}}
tool Forecast {{
  mcp Fixture \"forecast\"
}}
tool Echo {{
  mcp Fixture \"echo\"
}}
tool Count {{
  mcp Fixture \"count\"
}}
contract Day {{
  input city: string
  compute sum = Add(a: 2, b: 3)
  compute weather = Forecast(city: city)
  compute echoed = Echo(text: \"hello {{city}}\")
  compute steps = Count(steps: 3)
  output sum
  output weather
  output echoed
  output steps
}}
",
        fixture_server("")
    ));
    let out = project.ignite(&["check", "p.ign"], &[]);
    assert!(!out.status.success(), "no lock yet");
    assert!(text(&out.stderr).contains("run `ignite mcp lock FILE`"), "{}", text(&out.stderr));
    project.lock();
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path("ignite.lock")).unwrap())
            .unwrap();
    let forecast = &lock["servers"]["Fixture"]["tools"]["forecast"];
    assert_eq!(forecast["description"], "The forecast of a city");
    assert_eq!(forecast["inputSchema"]["required"], json!(["city"]));
    assert!(forecast["outputSchema"]["properties"]["sunny"].is_object(), "{forecast}");
    assert!(forecast["hash"].as_str().unwrap().starts_with("sha256:"));
    // Typed from the lock: a wrong argument is a check error, offline.
    let out = project.ignite(&["check", "p.ign"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let outputs = project.run(&["--input", "city=Paris"], &[]).expect("runs");
    assert_eq!(outputs["sum"], json!({"result": 5}));
    assert_eq!(outputs["weather"], json!({"city": "Paris", "celsius": 22.5, "sunny": true}));
    assert_eq!(outputs["echoed"], json!({"result": "hello Paris"}));
    assert_eq!(outputs["steps"], json!({"result": 3}));
}

#[test]
fn calls_mcp_server_time() {
    let project = Project::new(&format!(
        "mcp Clock {{
  command {:?} \"-m\" \"mcp_server_time\" \"--local-timezone\" \"UTC\"
}}
tool Now {{
  mcp Clock \"get_current_time\"
}}
tool Convert {{
  mcp Clock \"convert_time\"
}}
contract Time {{
  compute now = Now(timezone: \"Asia/Tokyo\")
  compute converted = Convert(source_timezone: \"UTC\", time: \"12:00\", target_timezone: \"Europe/Paris\")
  output now
  output converted
}}
",
        python().display().to_string()
    ));
    project.lock();
    let outputs = project.run(&[], &[]).expect("runs");
    assert_eq!(outputs["now"]["timezone"], "Asia/Tokyo");
    assert!(outputs["now"]["datetime"].as_str().unwrap().ends_with("+09:00"), "{outputs}");
    assert_eq!(outputs["converted"]["target"]["timezone"], "Europe/Paris");
}

#[test]
fn a_changed_server_fails_the_run_before_any_effect() {
    let program = format!(
        "{}
tool Mark {{
  exec \"sh\" \"-c\" \"touch marked\"
}}
tool Echo {{
  mcp Fixture \"echo\"
}}
tool Add {{
  mcp Fixture \"add\"
}}
contract First {{
  compute mark = Mark()
  compute echoed = Echo(text: \"x\")
  output mark
  output echoed
}}
contract Second {{
  compute sum = Add(a: 1, b: 2)
  output sum
}}
",
        fixture_server("")
    );
    let project = Project::new(&program);
    project.lock();
    let drift = [("FIXTURE_MODE", "drift")];
    let error = project.run(&["--contract", "First"], &drift).expect_err("drifted");
    assert!(error.contains("ignite::tools::mcp_drift"), "{error}");
    assert!(
        error.contains("tool `echo` of MCP server `Fixture` changed since `ignite.lock`"),
        "{error}"
    );
    assert!(error.contains("its `description` changed; nothing was called"), "{error}");
    assert!(!project.path("marked").exists(), "an effect ran before the check");
    let error = project.run(&["--contract", "Second"], &drift).expect_err("drifted");
    assert!(error.contains("MCP server `Fixture` no longer lists tool `add`"), "{error}");
    project.run(&["--contract", "First"], &[]).expect("the locked server runs");
    assert!(project.path("marked").exists());
}

#[test]
fn failures_name_the_server_and_end_within_their_timeouts() {
    let broken = format!(
        "mcp Broken {{\n  command {:?} {:?}\n  env FIXTURE_MODE = env(\"BROKEN_MODE\", \"normal\")\n  timeout 15\n}}\n",
        python().display().to_string(),
        fixture().display().to_string()
    );
    let project = Project::new(&format!(
        "{}{broken}
tool Fail {{
  mcp Fixture \"fail\"
}}
tool Crash {{
  mcp Fixture \"crash\"
}}
tool Slow {{
  timeout 1
  mcp Fixture \"slow\"
}}
tool Big {{
  mcp Fixture \"big\"
}}
tool Echo {{
  mcp Broken \"echo\"
}}
contract Failing {{
  compute failed = Fail(message: \"the disk is full\")
  output failed
}}
contract Crashing {{
  compute crashed = Crash()
  output crashed
}}
contract Sleepy {{
  compute slept = Slow(seconds: 30)
  output slept
}}
contract Huge {{
  input megabytes: integer
  compute text = Big(megabytes: megabytes)
  output text
}}
contract Startup {{
  compute echoed = Echo(text: \"x\")
  output echoed
}}
",
        fixture_server("")
    ));
    project.lock();
    let error = project.run(&["--contract", "Failing"], &[]).expect_err("fails");
    assert!(error.contains("MCP tool `fail` of `Fixture` answered an error"), "{error}");
    assert!(error.contains("the disk is full"), "{error}");
    let error = project.run(&["--contract", "Crashing"], &[]).expect_err("crashes");
    assert!(error.contains("MCP server `Fixture`"), "{error}");
    assert!(error.contains("fixture: crashing on purpose"), "the stderr tail: {error}");
    let started = Instant::now();
    let error = project.run(&["--contract", "Sleepy"], &[]).expect_err("times out");
    assert!(error.contains("ignite::tools::timeout"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    // (Only the size of a value that should not have come is shown.)
    let huge = |args: &[&str]| {
        let mut all = vec!["--contract", "Huge"];
        all.extend_from_slice(args);
        project.run(&all, &[]).map(|v| v.to_string().len()).expect_err("too big")
    };
    let error = huge(&["--input", "megabytes=9"]);
    assert!(error.contains("larger than the size limit of 8388608 bytes"), "{error}");
    let error = huge(&["--input", "megabytes=1", "--max-bytes", "1M"]);
    assert!(error.contains("larger than the size limit of 1048576 bytes"), "{error}");
    let started = Instant::now();
    let error = huge(&["--input", "megabytes=100"]);
    assert!(
        error.contains("a message of MCP server `Fixture` is larger than the size limit"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
    // Servers that die at start or never answer.
    let error =
        project.run(&["--contract", "Startup"], &[("BROKEN_MODE", "die")]).expect_err("dies");
    assert!(error.contains("MCP server `Broken`"), "{error}");
    assert!(error.contains("fixture: cannot start, no such database"), "{error}");
    let started = Instant::now();
    let error =
        project.run(&["--contract", "Startup"], &[("BROKEN_MODE", "mute")]).expect_err("mute");
    assert!(error.contains("no answer to `initialize` within 15 s"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    // Lines that are not JSON-RPC before the server starts are skipped.
    let outputs = project.run(&["--contract", "Startup"], &[("BROKEN_MODE", "garbage")]);
    assert_eq!(outputs.expect("runs")["echoed"], json!({"result": "x"}));
}

#[test]
fn the_child_gets_the_declared_variables_and_a_minimal_environment() {
    let project = Project::new(&format!(
        "{}
tool Environment {{
  mcp Fixture \"environment\"
}}
contract Env {{
  compute names = Environment()
  output names
}}
",
        fixture_server("  env TZ = \"UTC\"\n")
    ));
    project.lock();
    let secrets = [("OPENAI_API_KEY", "sk-secret"), ("IGNITE_PRIVATE", "x")];
    let outputs = project.run(&[], &secrets).expect("runs");
    let names: Vec<&str> = outputs["names"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(names.contains(&"TZ") && names.contains(&"FIXTURE_MODE") && names.contains(&"PATH"));
    let allowed =
        ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TZ", "FIXTURE_MODE"];
    // Python itself may set `LC_CTYPE` when it coerces the C locale.
    let extra: Vec<&&str> =
        names.iter().filter(|n| !allowed.contains(n) && **n != "LC_CTYPE").collect();
    assert!(extra.is_empty(), "the child saw {extra:?}");
}

/// A free port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `command`, waits until `port` accepts connections; the child.
fn serve_http(mut command: Command, port: u16) -> std::process::Child {
    let child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the server starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the server did not listen on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

/// Kills a child at the end of a test, whatever happens.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn calls_the_fixture_server_over_streamable_http() {
    let port = free_port();
    let mut command = Command::new(python());
    command.arg(fixture()).args(["--http", &port.to_string()]);
    let _server = Killed(serve_http(command, port));
    let project = Project::new(&format!(
        "mcp Fixture {{
  url \"http://127.0.0.1:{port}/mcp\"
  header \"X-Token\" = env(\"FIXTURE_TOKEN\")
  timeout 10
}}
tool Echo {{
  mcp Fixture \"echo\"
}}
tool Forecast {{
  mcp Fixture \"forecast\"
}}
contract Http {{
  compute echoed = Echo(text: \"over http\")
  compute weather = Forecast(city: \"London\", days: 2)
  output echoed
  output weather
}}
"
    ));
    let out = project.ignite(&["mcp", "lock", "p.ign"], &[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("needs `FIXTURE_TOKEN`"), "{}", text(&out.stderr));
    let token = [("FIXTURE_TOKEN", "t0ken")];
    let out = project.ignite(&["mcp", "lock", "p.ign"], &token);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let outputs = project.run(&[], &token).expect("runs");
    assert_eq!(outputs["echoed"], json!({"result": "over http"}));
    assert_eq!(outputs["weather"], json!({"city": "London", "celsius": 23.5, "sunny": false}));
}

/// The `@modelcontextprotocol/server-everything` program for `transport`.
fn everything(transport: &str) -> String {
    format!(
        "{transport}
tool Echo {{
  mcp Everything \"echo\"
}}
tool Sum {{
  mcp Everything \"get-sum\"
}}
contract Both {{
  compute echoed = Echo(message: \"hi\")
  compute sum = Sum(a: 2, b: 40)
  output echoed
  output sum
}}
"
    )
}

fn check_everything(project: &Project) {
    project.lock();
    let outputs = project.run(&[], &[]).expect("runs");
    assert!(outputs["echoed"].as_str().unwrap_or_default().contains("hi"), "{outputs}");
    assert!(outputs["sum"].to_string().contains("42"), "{outputs}");
}

#[test]
fn calls_server_everything_over_stdio() {
    let node = support::peers::peer("node", "node");
    let script = support::peers::peer("node", "mcp-server-everything");
    let project = Project::new(&everything(&format!(
        "mcp Everything {{\n  command {:?} {:?} \"stdio\"\n  timeout 30\n}}",
        node.display().to_string(),
        script.display().to_string()
    )));
    check_everything(&project);
}

#[test]
fn calls_server_everything_over_streamable_http() {
    let node = support::peers::peer("node", "node");
    let script = support::peers::peer("node", "mcp-server-everything");
    let port = free_port();
    let mut command = Command::new(node);
    command.arg(script).arg("streamableHttp").env("PORT", port.to_string());
    let _server = Killed(serve_http(command, port));
    let project = Project::new(&everything(&format!(
        "mcp Everything {{\n  url \"http://127.0.0.1:{port}/mcp\"\n  timeout 30\n}}"
    )));
    check_everything(&project);
}

#[test]
fn mcp_calls_are_effects_record_replay_cache_journal_mocks_guards() {
    let project = Project::new(&format!(
        "{}
tool Echo {{
  cache
  mcp Fixture \"echo\"
}}
tool Crash {{
  mcp Fixture \"crash\"
}}
contract Say {{
  input text: string
  compute echoed = Echo(text: text)
  output echoed
}}
contract Guarded {{
  input go: boolean
  guard allowed = go else \"not allowed\"
  compute crashed = Crash()
  output crashed
}}
test \"a mock answers the MCP tool\" {{
  run Say(text: \"x\")
  mock Echo returns {{result: \"mocked\"}}
  expect echoed.result == \"mocked\"
}}
",
        fixture_server("")
    ));
    project.lock();
    let dead = [("FIXTURE_MODE", "die")];
    // Record, then replay with a server that cannot start.
    let live = project.run(
        &["--contract", "Say", "--input", "text=a", "--record", "rec.jsonl", "--no-cache"],
        &[],
    );
    assert_eq!(live.expect("runs")["echoed"], json!({"result": "a"}));
    let replayed = project
        .run(&["--contract", "Say", "--input", "text=a", "--replay", "rec.jsonl"], &dead)
        .expect("replays offline");
    assert_eq!(replayed["echoed"], json!({"result": "a"}));
    // The cache answers the second call.
    let out = project.ignite(&["run", "p.ign", "--contract", "Say", "--input", "text=b"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = project.ignite(&["run", "p.ign", "--contract", "Say", "--input", "text=b"], &[]);
    assert!(text(&out.stderr).contains("cache: 1 hits, 0 misses"), "{}", text(&out.stderr));
    // The journal keeps the call; resuming does not call again.
    let out = project.ignite(
        &["run", "p.ign", "--contract", "Say", "--input", "text=j", "--journal", "--no-cache"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let journals: Vec<_> =
        std::fs::read_dir(project.path(".ignite/runs")).unwrap().flatten().collect();
    assert_eq!(journals.len(), 1);
    let journal = std::fs::read_to_string(journals[0].path()).unwrap();
    assert!(journal.contains("\"echo\"") || journal.contains("Echo"), "{journal}");
    // A failing guard stops the MCP call gated on it.
    let error =
        project.run(&["--contract", "Guarded", "--input", "go=false"], &[]).expect_err("guarded");
    assert!(error.contains("not allowed"), "{error}");
    assert!(!error.contains("crashing on purpose"), "{error}");
    // Mocks answer without a server.
    let out = project.ignite(&["test", "p.ign"], &dead);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
}

#[test]
fn an_agent_calls_an_mcp_tool_in_its_loop_recorded_and_replayed() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let provider = runtime.block_on(wiremock::MockServer::start());
    let tool_call = json!({
        "id": "r1", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "forecast", "arguments": "{\"city\": \"Oslo\"}"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}
    });
    let answer = json!({
        "id": "r2", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Oslo: 22.5 degrees"}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5}
    });
    runtime.block_on(async {
        use wiremock::matchers::{body_string_contains, method};
        wiremock::Mock::given(method("POST"))
            .and(body_string_contains("\"tool_call_id\""))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(&answer))
            .with_priority(1)
            .mount(&provider)
            .await;
        wiremock::Mock::given(method("POST"))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(&tool_call))
            .with_priority(2)
            .mount(&provider)
            .await;
    });
    let project = Project::new(&format!(
        "{}
provider Fake {{
  kind openai
  base_url env(\"FAKE_URL\")
  api_key env(\"FAKE_KEY\")
}}
tool Forecast {{
  requires_capability weather
  mcp Fixture \"forecast\"
}}
agent Planner {{
  provider Fake
  model \"fake\"
  tools Forecast
  capabilities weather
  input city: string
  prompt \"Weather in {{city}}?\"
}}
contract Plan {{
  input city: string
  compute plan = Planner(city: city)
  output plan
}}
",
        fixture_server("")
    ));
    project.lock();
    let env = [("FAKE_URL", provider.uri()), ("FAKE_KEY", "k".to_owned())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let live = project
        .run(&["--input", "city=Oslo", "--record", "agent.jsonl"], &env)
        .expect("the agent runs");
    assert_eq!(live["plan"], "Oslo: 22.5 degrees");
    let requests = runtime.block_on(provider.received_requests()).unwrap();
    let second = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(
        second.contains("22.5") && second.contains("Oslo"),
        "the tool's result went back: {second}"
    );
    let recording = std::fs::read_to_string(project.path("agent.jsonl")).unwrap();
    assert!(recording.contains("forecast"), "{recording}");
    drop(runtime);
    // Offline: no provider, no server.
    let replayed = project
        .run(
            &["--input", "city=Oslo", "--replay", "agent.jsonl"],
            &[("FIXTURE_MODE", "die"), ("FAKE_URL", "http://127.0.0.1:9"), ("FAKE_KEY", "k")],
        )
        .expect("replays offline");
    assert_eq!(replayed["plan"], "Oslo: 22.5 degrees");
    // The agent path is guarded by capabilities.
    let ungranted = std::fs::read_to_string(project.path("p.ign"))
        .unwrap()
        .replace("  capabilities weather\n", "");
    project.write(&ungranted);
    let out = project.ignite(&["check", "p.ign"], &[]);
    assert!(
        text(&out.stderr).contains("ignite::lower::missing_capability"),
        "{}",
        text(&out.stderr)
    );
}

/// Sends one JSON-RPC message (a line) to `stdin`.
fn send(stdin: &mut std::process::ChildStdin, message: &Value) {
    use std::io::Write as _;
    writeln!(stdin, "{message}").expect("writes");
}

/// The next JSON-RPC message with `id` on `stdout`.
fn answer(stdout: &mut impl std::io::BufRead, id: u64) -> Value {
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).expect("reads") > 0, "the server ended");
        let message: Value = serde_json::from_str(&line).expect("JSON-RPC on stdout");
        if message["id"] == id {
            return message;
        }
    }
}

#[test]
fn the_outing_example_calls_its_mcp_server_and_is_served_over_mcp() {
    support::peers::peer("python", "python");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_ignite"))
        .args(["mcp", "contracts/outing.ign", "--no-cache"])
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ignite mcp starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
    );
    assert_eq!(answer(&mut stdout, 1)["result"]["protocolVersion"], "2025-06-18");
    send(&mut stdin, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(&mut stdin, &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = answer(&mut stdout, 2);
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["forecast", "Outing"], "{listed}");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "Outing", "arguments": {"city": "Lisbon"}}}),
    );
    let called = answer(&mut stdout, 3);
    assert_eq!(
        called["result"]["structuredContent"],
        json!({"plan": "a picnic in Lisbon", "celsius": 26.5}),
        "{called}"
    );
    drop(stdin);
    let _ = child.wait();
}

#[test]
fn a_call_that_times_out_is_cancelled_on_the_server() {
    let project = Project::new(&format!(
        "{}
tool Slow {{
  timeout 1
  mcp Fixture \"slow\"
}}
tool Patient {{
  mcp Fixture \"slow\"
}}
contract Cancel {{
  compute first = try Slow(seconds: 20)
  compute second = Patient(seconds: if first.ok then 0 else 3)
  output first
  output second
}}
",
        fixture_server("  env FIXTURE_LOG = env(\"FIXTURE_LOG\", \"\")\n")
    ));
    project.lock();
    let log = project.path("fixture.log");
    let log_text = log.display().to_string();
    let outputs = project.run(&[], &[("FIXTURE_LOG", &log_text)]).expect("runs");
    assert_eq!(outputs["first"]["ok"], false, "{outputs}");
    assert!(outputs["first"]["error"].as_str().unwrap().contains("timed out"), "{outputs}");
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(seen.contains("cancelled slow(20.0)"), "the server saw no cancellation: {seen:?}");
}

#[test]
fn image_content_is_an_image_value() {
    let project = Project::new(&format!(
        "{}
tool Picture {{
  mcp Fixture \"picture\"
  result image
}}
tool Captioned {{
  mcp Fixture \"captioned\"
  result array
}}
contract Pictures {{
  compute picture = Picture(width: 3, height: 2)
  compute captioned = Captioned(caption: \"grey\")
  output picture
  output captioned
}}
",
        fixture_server("")
    ));
    project.lock();
    let outputs = project.run(&[], &[]).expect("runs");
    // A lone image is an `image` value, checked as one (`result image`).
    let picture = &outputs["picture"];
    assert_eq!(picture["media_type"], "image/png", "{outputs}");
    let data = picture["data"].as_str().unwrap();
    assert!(data.starts_with("iVBORw0KGgo"), "a base64 PNG: {data}");
    // Text beside an image: both, in their order.
    let captioned = outputs["captioned"].as_array().expect("a list");
    assert_eq!(captioned[0], "grey");
    assert_eq!(captioned[1]["media_type"], "image/png");
}

/// The fixture's log (`FIXTURE_LOG`) once it holds `needle`, waited for at
/// most `limit`.
fn logged(log: &Path, needle: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let seen = std::fs::read_to_string(log).unwrap_or_default();
        if seen.contains(needle) {
            return seen;
        }
        assert!(Instant::now() < deadline, "the fixture never logged {needle:?}: {seen:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pid the fixture logged at start (`started PID`), the last one.
fn server_pid(log: &str) -> u32 {
    let line = log.lines().rfind(|l| l.starts_with("started ")).expect("a started line");
    line["started ".len()..].trim().parse().expect("a pid")
}

/// True once process `pid` is gone (a zombie counts as gone: it runs no more).
fn gone(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            // `PID (comm) STATE ...`
            Ok(stat) if stat.rsplit(") ").next().is_some_and(|rest| rest.starts_with('Z')) => {
                return true;
            }
            Ok(_) if Instant::now() >= deadline => return false,
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Sends `signal` (`-INT`, `-TERM`, `-KILL`) to `pid`.
fn signal(pid: u32, signal: &str) {
    let sent = Command::new("kill").args([signal, &pid.to_string()]).status().expect("kill runs");
    assert!(sent.success(), "kill {signal} {pid}");
}

/// Waits at most `limit` for `child` to exit.
fn exits(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("waits") {
            return status;
        }
        assert!(Instant::now() < deadline, "ignite did not exit within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A program whose contract `Wait` calls the fixture's `slow` for 30 s
/// (and `Quick` its `echo`), the fixture logging to `fixture.log`.
fn waiting_project() -> (Project, PathBuf) {
    let project = Project::new(&format!(
        "{}
tool Patient {{
  mcp Fixture \"slow\"
}}
tool Echo {{
  mcp Fixture \"echo\"
}}
contract Wait {{
  compute slept = Patient(seconds: 30)
  output slept
}}
contract Quick {{
  compute echoed = Echo(text: \"warm\")
  output echoed
}}
",
        fixture_server("  env FIXTURE_LOG = env(\"FIXTURE_LOG\", \"\")\n")
    ));
    project.lock();
    let log = project.path("fixture.log");
    (project, log)
}

#[test]
fn ctrl_c_and_a_served_deadline_cancel_the_call_and_leave_no_child() {
    // Ctrl-C in `ignite run`: the server hears `notifications/cancelled`,
    // then its input closes and its group is killed.
    let (project, log) = waiting_project();
    let mut run = Command::new(env!("CARGO_BIN_EXE_ignite"))
        .args(["run", "p.ign", "--contract", "Wait"])
        .current_dir(project.dir.path())
        .env("FIXTURE_LOG", &log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ignite runs");
    let seen = logged(&log, "slow 30.0", Duration::from_secs(60));
    let pid = server_pid(&seen);
    let started = Instant::now();
    signal(run.id(), "-INT");
    let status = exits(&mut run, Duration::from_secs(10));
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let seen = std::fs::read_to_string(&log).unwrap();
    assert!(seen.contains("cancelled slow(30.0)"), "the server saw no cancellation: {seen:?}");
    assert!(gone(pid, Duration::from_secs(5)), "the server {pid} outlived ignite");

    // `serve --timeout`: the run is stopped at its deadline and the call
    // cancelled; the server child goes when serve stops.
    std::fs::remove_file(&log).unwrap();
    let mut serve = Command::new(env!("CARGO_BIN_EXE_ignite"))
        .args(["serve", "p.ign", "--port", "0", "--timeout", "10"])
        .current_dir(project.dir.path())
        .env("FIXTURE_LOG", &log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ignite serve starts");
    let address = listening_on(serve.stderr.take().expect("stderr"));
    // The server starts with the first run (Python takes its time); the
    // deadline is for the second's call.
    let answer = post(&address, "/contracts/Quick", "{}");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let answer = post(&address, "/contracts/Wait", "{}");
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
    assert!(answer.contains("ignite::run::deadline"), "{answer}");
    let seen = logged(&log, "cancelled slow(30.0)", Duration::from_secs(10));
    let pid = server_pid(&seen);
    signal(serve.id(), "-TERM");
    assert!(exits(&mut serve, Duration::from_secs(10)).success());
    assert!(gone(pid, Duration::from_secs(5)), "the server {pid} outlived ignite serve");
}

/// The `ADDRESS` of the `listening on http://ADDRESS` line on `stderr`;
/// the rest of stderr is drained on a thread.
fn listening_on(stderr: std::process::ChildStderr) -> String {
    use std::io::BufRead as _;
    let mut lines = std::io::BufReader::new(stderr).lines();
    let address = loop {
        let line = lines.next().expect("serve says where it listens").expect("reads");
        if let Some(address) = line.split("listening on http://").nth(1) {
            break address.trim().to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    address
}

/// `POST path` with `body` to `address`: the whole answer, head and body.
fn post(address: &str, path: &str, body: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(address).expect("connects");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("sends");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("reads");
    answer
}

#[test]
fn resume_does_not_repeat_a_finished_mcp_call() {
    let project = Project::new(&format!(
        "{}
tool Echo {{
  mcp Fixture \"echo\"
}}
tool Gate {{
  mcp Fixture \"gate\"
}}
contract Twice {{
  input gate: string
  compute first = Echo(text: \"one\")
  compute second = Gate(path: if first.result == \"one\" then gate else \"never\")
  output first
  output second
}}
",
        fixture_server("  env FIXTURE_LOG = env(\"FIXTURE_LOG\", \"\")\n")
    ));
    project.lock();
    let log = project.path("fixture.log");
    let gate = project.path("open").display().to_string();
    let mut run = Command::new(env!("CARGO_BIN_EXE_ignite"))
        .args(["run", "p.ign", "--journal", "--input", &format!("gate={gate}")])
        .current_dir(project.dir.path())
        .env("FIXTURE_LOG", &log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ignite runs");
    // The first call finished (the second needs its value) and the second waits.
    logged(&log, &format!("gate {gate}"), Duration::from_secs(60));
    signal(run.id(), "-KILL");
    assert_eq!(exits(&mut run, Duration::from_secs(10)).code(), None, "killed");
    let journals: Vec<_> =
        std::fs::read_dir(project.path(".ignite/runs")).unwrap().flatten().collect();
    assert_eq!(journals.len(), 1, "{journals:?}");
    let file_name = journals[0].file_name();
    let id = file_name.to_str().unwrap().trim_end_matches(".jsonl");
    std::fs::write(project.path("open"), "").unwrap();
    let outputs = project
        .run(&["--resume", id], &[("FIXTURE_LOG", &log.display().to_string())])
        .expect("resumes");
    assert_eq!(outputs["first"], json!({"result": "one"}));
    assert_eq!(outputs["second"], json!({"result": format!("opened {gate}")}));
    let seen = std::fs::read_to_string(&log).unwrap();
    assert_eq!(seen.matches("echo one").count(), 1, "the finished call ran again: {seen:?}");
    assert_eq!(seen.matches("gate ").count(), 2, "the unfinished call runs again: {seen:?}");
}

#[test]
fn a_flooding_server_is_cut_off_and_progress_shows_in_the_trace() {
    let project = Project::new(&format!(
        "{}
tool Flood {{
  timeout 20
  mcp Fixture \"flood\"
}}
tool Count {{
  mcp Fixture \"count\"
}}
contract Junk {{
  input kind: string
  compute flooded = Flood(kind: kind)
  output flooded
}}
contract Steps {{
  compute steps = Count(steps: 3)
  output steps
}}
",
        fixture_server("  env FIXTURE_LOG = env(\"FIXTURE_LOG\", \"\")\n")
    ));
    project.lock();
    let log = project.path("fixture.log");
    let env = [("FIXTURE_LOG", log.display().to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // Lines of junk: cut off well before the call's timeout.
    let started = Instant::now();
    let error =
        project.run(&["--contract", "Junk", "--input", "kind=lines"], &env).expect_err("floods");
    assert!(
        error.contains("MCP server `Fixture` wrote more than 1048576 bytes to its stdout that are not JSON-RPC messages"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    let pid = server_pid(&std::fs::read_to_string(&log).unwrap());
    assert!(gone(pid, Duration::from_secs(5)), "the flooding server {pid} outlived ignite");
    // One endless line: cut off at the line limit.
    let started = Instant::now();
    let error = project
        .run(&["--contract", "Junk", "--input", "kind=endless", "--max-bytes", "1M"], &env)
        .expect_err("floods");
    assert!(
        error.contains("a message of MCP server `Fixture` is larger than the size limit"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    let pid = server_pid(&std::fs::read_to_string(&log).unwrap());
    assert!(gone(pid, Duration::from_secs(5)), "the flooding server {pid} outlived ignite");
    // Progress notifications during a call are in the trace.
    let out = project.ignite(&["run", "p.ign", "--contract", "Steps", "--trace"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let trace = text(&out.stderr);
    for step in 1..=3 {
        assert!(trace.contains(&format!("`count` of `Fixture`: {step}/3 step {step}")), "{trace}");
    }
}

#[test]
fn locking_one_file_keeps_the_servers_of_the_folders_other_files() {
    let project = Project::new(&format!(
        "{}
tool Echo {{
  mcp Fixture \"echo\"
}}
contract Say {{
  compute echoed = Echo(text: \"a\")
  output echoed
}}
",
        fixture_server("")
    ));
    let other = format!(
        "mcp Other {{\n  command {:?} {:?}\n}}
tool Add {{
  mcp Other \"add\"
}}
contract Sum {{
  compute sum = Add(a: 1, b: 2)
  output sum
}}
",
        python().display().to_string(),
        fixture().display().to_string()
    );
    std::fs::write(project.path("q.ign"), other).unwrap();
    project.lock();
    let out = project.ignite(&["mcp", "lock", "q.ign"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let servers = |project: &Project| -> Vec<String> {
        let lock: Value =
            serde_json::from_str(&std::fs::read_to_string(project.path("ignite.lock")).unwrap())
                .unwrap();
        lock["servers"].as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(servers(&project), ["Fixture", "Other"]);
    for file in ["p.ign", "q.ign"] {
        let out = project.ignite(&["check", file], &[]);
        assert!(out.status.success(), "{file}: {}", text(&out.stderr));
    }
    // `--prune` keeps only what the file declares.
    let out = project.ignite(&["mcp", "lock", "q.ign", "--prune"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("pruned `Fixture`"), "{}", text(&out.stderr));
    assert_eq!(servers(&project), ["Other"]);
    let out = project.ignite(&["check", "p.ign"], &[]);
    assert!(text(&out.stderr).contains("MCP server `Fixture` is not in `ignite.lock`"));
}

#[test]
fn calls_a_server_over_https_when_its_certificate_is_trusted() {
    let certs = support::tls::TestCa::new();
    let dir = certs.dir();
    let port = free_port();
    let mut command = Command::new(python());
    command.arg(fixture()).args(["normal", "--https", &port.to_string()]);
    command.arg(dir.join("server.pem")).arg(dir.join("server.key"));
    let _server = Killed(serve_http(command, port));
    let project = Project::new(&format!(
        "mcp Fixture {{
  url \"https://127.0.0.1:{port}/mcp\"
  timeout 20
}}
tool Echo {{
  mcp Fixture \"echo\"
}}
contract Secure {{
  compute echoed = Echo(text: \"over tls\")
  output echoed
}}
"
    ));
    let out = project.ignite(&["check", "p.ign"], &[]);
    assert!(
        text(&out.stderr).contains("ignite::lower::mcp_lock"),
        "https is accepted: {}",
        text(&out.stderr)
    );
    // Untrusted: the handshake fails, naming the server and what to trust.
    let out = project.ignite(&["mcp", "lock", "p.ign"], &[]);
    assert!(!out.status.success());
    let error = text(&out.stderr);
    assert!(
        error.contains(&format!(
            "MCP server `Fixture` (url \"https://127.0.0.1:{port}/mcp\"): cannot connect"
        )),
        "{error}"
    );
    assert!(error.contains("the server's certificate must verify"), "{error}");
    // A system with no roots at all: the Mozilla roots, not a panic.
    let empty = certs.empty().display().to_string();
    let none = [("SSL_CERT_FILE", empty.as_str()), ("SSL_CERT_DIR", "")];
    let out = project.ignite(&["mcp", "lock", "p.ign"], &none);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("the server's certificate must verify"),
        "{}",
        text(&out.stderr)
    );
    // Trusted through `SSL_CERT_FILE`.
    let ca = certs.ca().display().to_string();
    let trusted = [("SSL_CERT_FILE", ca.as_str())];
    let out = project.ignite(&["mcp", "lock", "p.ign"], &trusted);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let outputs = project.run(&[], &trusted).expect("runs over https");
    assert_eq!(outputs["echoed"], json!({"result": "over tls"}));
}
