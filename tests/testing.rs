//! `ignite test` from the outside: fixture programs whose tests pass
//! (`testing/pass/`) or fail (`testing/fail/`, one kind of failure per
//! file, the report snapshotted), `--update`, `--record` against a fake
//! provider, the JSON and JUnit reports, and mocks that keep tools from
//! running.

#![allow(clippy::unwrap_used)]
use std::path::Path;
use std::process::{Command, Output};

use insta_cmd::get_cargo_bin;
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn ignite() -> Command {
    let mut command = Command::new(get_cargo_bin("ignite"));
    command
        .env("NO_COLOR", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    command
}

fn run(command: &mut Command) -> (i32, String, String) {
    let Output { status, stdout, stderr } = command.output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (status.code().unwrap_or(-1), text(stdout), text(stderr))
}

#[test]
fn passing_tests_pass() {
    let (code, stdout, stderr) = run(ignite().args(["test", "tests/testing/pass"]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn each_kind_of_failure() {
    insta::glob!("testing/fail/*.ign", |file| {
        let file = file.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap();
        let (code, stdout, stderr) = run(ignite().arg("test").arg(file));
        assert_eq!(code, 1, "{stdout}{stderr}");
        assert!(stdout.starts_with("FAIL"), "{stdout}");
        insta::assert_snapshot!(stdout);
    });
}

#[test]
fn the_examples_tests_pass() {
    let (code, stdout, stderr) = run(ignite().args(["test", "contracts"]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.ends_with(" passed, 0 failed\n"), "{stdout}");
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, stderr) = run(ignite().args(["test", "no/such/folder"]));
    assert_eq!((code, stderr.as_str()), (2, "error: no such file or folder `no/such/folder`\n"));
    let (code, _, stderr) = run(ignite().args(["test", "tests/testing/pass", "--filter", "zzz"]));
    assert_eq!((code, stderr.as_str()), (2, "error: no test name contains `zzz`\n"));
}

#[test]
fn filter_selects_by_name() {
    let (code, stdout, _) =
        run(ignite().args(["test", "tests/testing/pass", "--filter", "out of stock"]));
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "ok   tests/testing/pass/mocks.ign: out of stock is refused\n1 passed, 0 failed\n"
    );
}

/// Copies `files` (relative to `tests/testing/`) into a fresh folder.
fn sandbox(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (from, to) in files {
        let to = dir.path().join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(Path::new("tests/testing").join(from), to).unwrap();
    }
    dir
}

const DISCOUNT_SNAPSHOT: &str = "pass/__snapshots__/mocks.a_discount_lowers_the_price.snap";
const AGENT_SNAPSHOT: &str = "pass/__snapshots__/mocks.an_agent_s_tool_calls_see_the_mocks.snap";

#[test]
fn mocked_tools_never_run() {
    let dir = sandbox(&[
        ("pass/mocks.ign", "mocks.ign"),
        ("pass/fixtures/assistant.json", "fixtures/assistant.json"),
        (DISCOUNT_SNAPSHOT, "__snapshots__/mocks.a_discount_lowers_the_price.snap"),
        (AGENT_SNAPSHOT, "__snapshots__/mocks.an_agent_s_tool_calls_see_the_mocks.snap"),
    ]);
    let (code, stdout, stderr) = run(ignite().arg("test").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(!dir.path().join("ran.log").exists(), "a mocked tool ran");
    // The same tool unmocked does run: the check above can fail.
    let text = std::fs::read_to_string(dir.path().join("mocks.ign")).unwrap();
    let unmocked = text.replace("mock Lookup(sku: \"SKU-001\")", "# mock");
    std::fs::write(dir.path().join("mocks.ign"), unmocked).unwrap();
    run(ignite().arg("test").arg(dir.path()).args(["--filter", "agent"]));
    assert_eq!(std::fs::read_to_string(dir.path().join("ran.log")).unwrap(), "lookup\n");
}

#[test]
fn update_writes_snapshots_then_they_pass() {
    let dir = sandbox(&[("pass/mocks.ign", "mocks.ign")]);
    let args = ["--filter", "discount"];
    let (code, stdout, _) = run(ignite().arg("test").arg(dir.path()).args(args));
    assert_eq!(code, 1);
    assert!(stdout.contains("run with `--update` to write it"), "{stdout}");
    let (code, stdout, _) = run(ignite().arg("test").arg(dir.path()).args(args).arg("--update"));
    assert_eq!(code, 0, "{stdout}");
    let snap = dir.path().join("__snapshots__/mocks.a_discount_lowers_the_price.snap");
    let written = std::fs::read_to_string(&snap).unwrap();
    let stored = Path::new("tests/testing").join(DISCOUNT_SNAPSHOT);
    assert_eq!(written, std::fs::read_to_string(stored).unwrap());
    let (code, stdout, _) = run(ignite().arg("test").arg(dir.path()).args(args));
    assert_eq!((code, stdout.contains("(wrote")), (0, false), "{stdout}");
    // A changed output is a diff, and `--update` accepts it.
    let text = std::fs::read_to_string(dir.path().join("mocks.ign")).unwrap();
    std::fs::write(dir.path().join("mocks.ign"), text.replace("price: 100.0", "price: 200.0"))
        .unwrap();
    let (code, stdout, _) = run(ignite().arg("test").arg(dir.path()).args(args));
    assert_eq!(code, 1);
    assert!(stdout.contains("-      \"price\": 90.0,\n"), "{stdout}");
    assert!(stdout.contains("+      \"price\": 180.0,\n"), "{stdout}");
}

#[test]
fn json_report() {
    let (code, stdout, _) =
        run(ignite().args(["test", "tests/testing/fail/expect_error.ign", "--format", "json"]));
    assert_eq!(code, 1);
    let mut report: Value = serde_json::from_str(&stdout).unwrap();
    for test in report["tests"].as_array_mut().unwrap() {
        assert!(test["duration_ms"].is_u64());
        test["duration_ms"] = json!(0);
    }
    insta::assert_json_snapshot!(report);
}

#[test]
fn junit_report_is_xml() {
    let (code, stdout, _) = run(ignite().args([
        "test",
        "tests/testing/pass",
        "tests/testing/fail",
        "--format",
        "junit",
    ]));
    assert_eq!(code, 1);
    // python3's XML parser reads it, and counts what the report says.
    let script = "import sys, xml.etree.ElementTree as ET\n\
        root = ET.fromstring(sys.stdin.read())\n\
        cases = root.findall('testsuite/testcase')\n\
        failed = [c for c in cases if c.find('failure') is not None]\n\
        print(root.tag, root.get('tests'), root.get('failures'), len(cases), len(failed))\n\
        print(failed[0].find('failure').text.splitlines()[0])";
    let mut python = Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut python.stdin.take().unwrap(), stdout.as_bytes()).unwrap();
    let output = python.wait_with_output().unwrap();
    assert!(output.status.success(), "not XML:\n{stdout}");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "testsuites 36 20 36 20
expect price == 85
"
    );
}

const RECORDED: &str = r#"
agent Writer {
  provider openai
  model "gpt-4o-mini"
  input topic: string
  prompt "Write one line about {topic}"
}

contract Blurb {
  input topic: string
  compute line = Writer(topic)
  output line
}

test "a line about tea" {
  run Blurb(topic: "tea")
  replay "cassettes/tea.json"
  expect contains(line, "tea")
  snapshot
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn record_writes_a_cassette_that_replays_offline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "Green tea wakes you gently."},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
        })))
        .expect(1)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blurb.ign"), RECORDED).unwrap();
    // Offline first: no cassette yet.
    let (code, stdout, _) = run(ignite().arg("test").arg(dir.path()));
    assert_eq!(code, 1);
    assert!(stdout.contains("--record"), "{stdout}");
    let (code, stdout, stderr) = run(ignite()
        .arg("test")
        .arg(dir.path())
        .args(["--record", "--update"])
        .env("OPENAI_BASE_URL", format!("{}/v1", server.uri()))
        .env("OPENAI_API_KEY", "sk-test"));
    assert_eq!(code, 0, "{stdout}{stderr}");
    let cassette = std::fs::read_to_string(dir.path().join("cassettes/tea.json")).unwrap();
    assert!(cassette.contains("Green tea wakes you gently."), "{cassette}");
    assert!(!cassette.contains("sk-test"));
    server.verify().await;
    drop(server);
    // Replayed with no key and no server.
    let (code, stdout, stderr) = run(ignite().arg("test").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        stdout,
        format!(
            "ok   {}: a line about tea\n1 passed, 0 failed\n",
            dir.path().join("blurb.ign").display()
        )
    );
}

/// A fake OpenAI server that answers each topic of `record/shared.ign`
/// once.
async fn drinks_server() -> MockServer {
    let server = MockServer::start().await;
    for (topic, line) in
        [("tea", "Green tea wakes you gently."), ("coffee", "Strong coffee hums at dawn.")]
    {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(body_string_contains(format!("about {topic}")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "gpt-4o-mini",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": line},
                    "finish_reason": "stop"
                }],
                "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
            })))
            .expect(1)
            .mount(&server)
            .await;
    }
    server
}

#[tokio::test(flavor = "multi_thread")]
async fn tests_sharing_a_cassette_record_both_then_replay_offline() {
    // At once (two jobs: one writer of the file, not two) and one after
    // the other (the second must not start the file afresh).
    for jobs in ["2", "1"] {
        let server = drinks_server().await;
        let dir = sandbox(&[("record/shared.ign", "shared.ign")]);
        // Not recorded yet: the hint records the whole file (a `--filter`
        // would leave the other test out of it).
        let (code, stdout, _) = run(ignite().arg("test").arg(dir.path()));
        let hint = format!(
            "record it with `ignite test {} --record`",
            dir.path().join("shared.ign").display()
        );
        assert_eq!((code, stdout.matches(&hint).count()), (1, 2), "{stdout}");
        let (code, stdout, stderr) = run(ignite()
            .arg("test")
            .arg(dir.path())
            .args(["--record", "--jobs", jobs])
            .env("OPENAI_BASE_URL", format!("{}/v1", server.uri()))
            .env("OPENAI_API_KEY", "sk-test"));
        assert_eq!(code, 0, "--jobs {jobs}: {stdout}{stderr}");
        server.verify().await;
        drop(server);
        let cassette = std::fs::read_to_string(dir.path().join("cassettes/drinks.json")).unwrap();
        assert!(cassette.contains("Green tea wakes you gently."), "{cassette}");
        assert!(cassette.contains("Strong coffee hums at dawn."), "{cassette}");
        // The header is the first test's, whichever ran first.
        let header: Value = serde_json::from_str(cassette.lines().next().unwrap()).unwrap();
        assert_eq!(header["inputs"], json!({"topic": "tea"}), "{cassette}");
        let (code, stdout, stderr) = run(ignite().arg("test").arg(dir.path()));
        assert_eq!(code, 0, "--jobs {jobs}: {stdout}{stderr}");
        assert!(stdout.ends_with("2 passed, 0 failed\n"), "{stdout}");
    }
}

#[test]
fn tests_whose_snapshots_would_share_a_file_are_refused() {
    // Before `check` refused them, `price: A1` and `price, A1` both wrote
    // `__snapshots__/snapshot_clash.price__A1.snap`, each over the other.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snapshot_clash.ign");
    std::fs::copy("tests/corpus/err/snapshot_clash.ign", &file).unwrap();
    let (code, stdout, stderr) = run(ignite().arg("test").arg(&file).arg("--update"));
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains("tests `price: A1` and `price, A1` would share one snapshot file"),
        "{stderr}"
    );
    assert!(stderr.contains("tests `price: A1` and `Price? a1` would share"), "{stderr}");
    assert!(!dir.path().join("__snapshots__").exists(), "a snapshot was written");
    // Renamed apart, each test writes its own file.
    let text = std::fs::read_to_string(&file).unwrap();
    let renamed = text
        .replace("\"price, A1\"", "\"price and calls, A1\"")
        .replace("\"Price? a1\"", "\"price again, a1\"");
    std::fs::write(&file, renamed).unwrap();
    let (code, stdout, stderr) = run(ignite().arg("test").arg(&file).arg("--update"));
    assert_eq!(code, 0, "{stdout}{stderr}");
    let mut written: Vec<String> = std::fs::read_dir(dir.path().join("__snapshots__"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(
        written,
        [
            "snapshot_clash.price__A1.snap",
            "snapshot_clash.price_again__a1.snap",
            "snapshot_clash.price_and_calls__A1.snap"
        ]
    );
}
