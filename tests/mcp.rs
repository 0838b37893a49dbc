//! `ignite mcp` driven by real MCP clients: the official Python SDK's
//! (`mcp` on PyPI, pinned in scripts/requirements-test.txt) runs the
//! pytest files of tests/mcp/ against the `ignite` binary over stdio, in
//! both protocol eras; the MCP Inspector's CLI and the official
//! conformance suite (Node packages pinned in scripts/peers/package.json).

mod support;

use std::path::Path;
use std::process::Command;

/// Runs `pytest` on `tests/mcp/FILE` with `IGNITE` naming the binary.
fn pytest(file: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    let out = Command::new(support::peers::peer("python", "python"))
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", file])
        .current_dir(&dir)
        .env("IGNITE", env!("CARGO_BIN_EXE_ignite"))
        .env("NO_COLOR", "1")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "pytest {file} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_python_sdk_client_lists_and_calls_over_stdio() {
    pytest("test_server.py");
}

#[test]
fn the_python_sdk_client_lists_and_calls_over_streamable_http() {
    pytest("test_http.py");
}

/// `mcp-inspector --cli ARGS -- ignite mcp tests/mcp/shop.ign`, run by
/// the Node 22 the peers pin (the Inspector needs it); its stdout, and
/// whether it succeeded.
fn inspector(args: &[&str]) -> (bool, String, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    let home = tempfile::tempdir().expect("a temp folder");
    let out = Command::new(support::peers::peer("node", "node"))
        .arg(support::peers::peer("node", "mcp-inspector"))
        .arg("--cli")
        .args(args)
        .args(["--", env!("CARGO_BIN_EXE_ignite"), "mcp", "shop.ign", "--no-cache"])
        .current_dir(&dir)
        .env("HOME", home.path())
        .env("MCP_CATALOG_PATH", home.path().join("mcp.json"))
        .output()
        .expect("the inspector runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_inspector_cli_lists_and_calls_over_stdio() {
    let (ok, listed, log) = inspector(&["--method", "tools/list", "--strict"]);
    assert!(ok, "tools/list failed:\n{listed}\n{log}");
    let listed: serde_json::Value = serde_json::from_str(&listed).expect("JSON");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["add", "quote_item", "nap", "broken", "mark", "Checkout", "Slow", "Marked"]);
    let (ok, called, log) = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "Checkout",
        "--tool-arg",
        "sku=tea",
        "count=3",
    ]);
    assert!(ok, "tools/call failed:\n{called}\n{log}");
    let called: serde_json::Value = serde_json::from_str(&called).expect("JSON");
    assert_eq!(
        called["structuredContent"],
        serde_json::json!({"quote": {"sku": "tea", "total": 7.5}, "doubled": 6})
    );
    let (ok, failed, log) = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "Checkout",
        "--tool-arg",
        "sku=tea",
        "count=0",
    ]);
    // The Inspector prints the result, then exits 1 for `isError`.
    assert!(!ok, "an error result fails the command:\n{failed}\n{log}");
    assert!(log.contains("returned isError:true"), "{log}");
    let failed: serde_json::Value = serde_json::from_str(&failed).expect("the result as JSON");
    assert_eq!(failed["isError"], true);
    let text = failed["content"][0]["text"].as_str().expect("a text block");
    assert!(text.starts_with("error[ignite::run::guard_failed]"), "{text}");
    assert!(text.contains("node: Checkout > some"), "{text}");
}

/// Kills and reaps a child when dropped (a test that fails leaves none).
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The official conformance suite (`@modelcontextprotocol/conformance`,
/// run by the pinned Node 22) runs its server scenarios against `ignite
/// mcp --http tests/mcp/conformance.ign`. It passes when exactly the
/// scenarios of tests/mcp/conformance-expected.yml fail: a new failure
/// and a listed scenario that passes both fail it.
#[test]
fn the_conformance_suite_passes_its_server_scenarios_but_the_listed_ones() {
    use std::io::BufRead as _;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    let node = support::peers::peer("node", "node");
    let suite = node
        .parent()
        .and_then(Path::parent)
        .expect("node_modules/.bin")
        .join("@modelcontextprotocol/conformance/dist/index.js");
    let mut server = Command::new(env!("CARGO_BIN_EXE_ignite"))
        .args(["mcp", "conformance.ign", "--no-cache", "--http", "127.0.0.1:0"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ignite starts");
    let stderr = server.stderr.take().expect("piped");
    let server = Reaped(server);
    let mut url = None;
    for line in std::io::BufReader::new(stderr).lines() {
        let line = line.expect("stderr is text");
        if let Some(endpoint) = line.strip_prefix("listening on ") {
            url = Some(endpoint.to_owned());
            break;
        }
    }
    let url = url.expect("ignite printed its endpoint");
    let results = tempfile::tempdir().expect("a temp folder");
    let mut suite = Command::new(&node)
        .arg(&suite)
        .args(["server", "--url", &url, "--expected-failures", "conformance-expected.yml"])
        .arg("--output-dir")
        .arg(results.path())
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the suite starts");
    // The suite takes about 15 s; past 3 min it hangs.
    let started = Instant::now();
    while suite.try_wait().expect("the suite runs").is_none() {
        assert!(started.elapsed() < Duration::from_secs(180), "the suite hangs");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = suite.wait_with_output().expect("the suite's output");
    drop(server);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the conformance suite failed:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.contains("Baseline check passed: all failures are expected."), "{report}");
    assert!(report.contains("tools-call-with-progress: 1 passed, 0 failed"), "{report}");
}
