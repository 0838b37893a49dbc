//! The HTML page of `ignite eval --report`, opened in a real headless
//! Chromium (Debian's, installed by `scripts/peers.sh install chromium`)
//! kept on the loopback: every host but 127.0.0.1 resolves to nothing and
//! the browser's own background traffic is off. The page is checked
//! through the DOM Chromium builds from it (`--dump-dom`).

#![allow(clippy::unwrap_used)]
mod support;

use std::path::Path;
use std::process::Command;

use insta_cmd::get_cargo_bin;

const PROGRAM: &str = r#"
contract Classify {
  input message: string
  compute priority = if contains(message, "refund") then "high" else "normal"
  compute words = len(split(message, " "))
  guard short = len(message) < 40 else "too long"
  output priority
  output words
}

eval "triage <b>" {
  run Classify
  dataset "rows.jsonl"
  repeat 2
  score priority = priority == expected.priority
  score words = words / 10
  require priority >= 0.5
}
"#;

/// The DOM of the page at `page` after Chromium loaded it.
fn dom(page: &Path) -> String {
    let chromium = support::peers::peer("chromium", "chromium");
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--metrics-recording-only",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_eval_page_shows_scores_requires_and_every_sample_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("triage.ign"), PROGRAM).unwrap();
    std::fs::write(
        dir.path().join("rows.jsonl"),
        concat!(
            "{\"id\": \"r1\", \"inputs\": {\"message\": \"refund please\"}, \"expected\": {\"priority\": \"high\"}}\n",
            "{\"id\": \"r2\", \"inputs\": {\"message\": \"hello <script>x</script>\"}, \"expected\": {\"priority\": \"high\"}}\n",
            "{\"id\": \"r3\", \"inputs\": {\"message\": \"a message that is far too long to be triaged here\"}}\n",
        ),
    )
    .unwrap();
    let out = Command::new(get_cargo_bin("ignite"))
        .current_dir(dir.path())
        .args(["eval", "--save", "base.json", "--report", "page.html"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    // Against itself as the baseline: deltas of 0.
    let out = Command::new(get_cargo_bin("ignite"))
        .current_dir(dir.path())
        .args(["eval", "--baseline", "base.json", "--report", "again.html"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let page = std::fs::read_to_string(dir.path().join("page.html")).unwrap();
    assert!(!page.contains("http://") && !page.contains("https://"), "nothing fetched");
    assert!(!page.contains("<script"), "no script; the row's text is escaped");

    // `ignite report` draws the same page from the saved file.
    let out = Command::new(get_cargo_bin("ignite"))
        .current_dir(dir.path())
        .args(["report", "base.json", "-o", "saved.html"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("saved.html")).unwrap(), page);

    let dom = dom(&dir.path().join("again.html"));
    assert!(dom.contains("<title>Eval report</title>"), "{dom}");
    assert!(dom.contains("<section class=\"eval\" data-eval=\"triage &lt;b&gt;\">"), "{dom}");
    assert!(
        dom.contains("<tr class=\"score\" data-score=\"priority\"><td>priority</td><td>0.333</td>"),
        "{dom}"
    );
    assert!(dom.contains("<tr class=\"score\" data-score=\"words\">"), "{dom}");
    assert!(dom.contains("+0.000 [+0.000, +0.000]"), "the baseline's delta: {dom}");
    assert!(
        dom.contains(
            "require <code>priority &gt;= 0.5</code>: <span class=\"failed\">failed</span>"
        ),
        "{dom}"
    );
    assert_eq!(dom.matches("<details class=\"sample").count(), 6, "{dom}");
    // The failed runs come first, with their error.
    let failed = dom.find("<details class=\"sample failed\">").unwrap();
    let ok = dom.find("<details class=\"sample\">").unwrap();
    assert!(failed < ok, "{dom}");
    assert!(dom.contains("too long"), "{dom}");
    assert!(dom.contains("hello &lt;script&gt;x&lt;/script&gt;"), "{dom}");
}

#[test]
fn the_run_page_of_a_recording_shows_every_effect_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("run.html");
    let out = Command::new(get_cargo_bin("ignite"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["report", "contracts/evals/summaries.cassette.json", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dom = dom(&page);
    assert!(dom.contains("<title>Run report</title>"), "{dom}");
    assert!(dom.contains("16 effects: 16 model calls, 0 tool calls, 0 failed"), "{dom}");
    assert_eq!(dom.matches("<tr class=\"effect model\">").count(), 16, "{dom}");
    assert!(dom.contains("<code>Summarize &gt; summary</code>"), "{dom}");
    assert!(dom.contains("40 in / 12 out"), "{dom}");
    assert!(dom.contains("The customer asks for the March invoice again."), "{dom}");
    // Recorded before ignite kept the timeline: the effects, with a note.
    assert!(dom.contains("this file has no timeline"), "{dom}");
    assert!(!dom.contains("<div class=\"timeline\">"), "{dom}");

    // Not a run nor an eval: a clear error.
    std::fs::write(dir.path().join("junk.json"), "[1]\n").unwrap();
    let out = Command::new(get_cargo_bin("ignite"))
        .current_dir(dir.path())
        .args(["report", "junk.json", "-o", "x.html"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("neither a journal or recording nor a saved eval"), "{stderr}");
}

/// Images and documents are shown by kind, size and SHA-256, never their
/// bytes: in the inputs, the requests (Anthropic's `source.data` and
/// OpenAI's `data:` URL, stored as blobs or inline) and the results.
#[test]
fn the_run_page_shows_media_by_digest_and_size_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("invoices.html");
    let out = Command::new(get_cargo_bin("ignite"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["report", "contracts/invoices/invoices.jsonl", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let invoices = dom(&page);
    let pdf = "b3ff683dc8212deb0499587ba8a169299fbd815ab3c1c8001fb67bb3a3347c8f";
    let png = "86dac1f3e73cd73c5642b6a6180d0cd5d4dbf1b9169bdea3469820ffe3c9b43b";
    // The inputs: `{media_type, bytes, sha256}`.
    let input = format!(
        "\"media_type\": \"application/pdf\",\n    \"bytes\": 1025,\n    \"sha256\": \"{pdf}\""
    );
    assert!(invoices.contains(&input), "{invoices}");
    // A request's content block: the blob's words.
    let block = format!("media image/png, 1149 bytes, sha256 {png}");
    assert!(invoices.contains(&block), "{invoices}");
    assert!(!invoices.contains("ignite-blob:"), "{invoices}");

    // Inline base64 (small values are not blobs) in a request's `data:` URL
    // and a tool's result.
    let gif = "R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=";
    let lines = [
        serde_json::json!({"version": 2, "contract": "Thumbs",
            "inputs": {"photo": {"media_type": "image/gif", "data": gif}}}),
        serde_json::json!({"key": {"node": "Thumbs > read", "seq": 0}, "kind": "model",
            "name": "openai", "route": "http://127.0.0.1/v1/chat/completions",
            "request": {"model": "m", "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": format!("data:image/gif;base64,{gif}")}}]}]},
            "value": {"response": {"choices": []}}}),
        serde_json::json!({"key": {"node": "Thumbs > small", "seq": 0}, "kind": "tool",
            "name": "Thumb", "request": {"photo": {"media_type": "image/gif", "data": gif}},
            "value": {"media_type": "image/gif", "data": gif}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("thumbs.jsonl"), text).unwrap();
    let out = Command::new(get_cargo_bin("ignite"))
        .current_dir(dir.path())
        .args(["report", "thumbs.jsonl", "-o", "thumbs.html"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dom = dom(&dir.path().join("thumbs.html"));
    assert!(!dom.contains("R0lGOD"), "{dom}");
    let digest = "6adc3d4c1056996e4e8b765a62604c78b1f867cceb3b15d0b9bedb7c4857f992";
    // The input, the tool's argument and its result.
    assert_eq!(dom.matches(&format!("\"sha256\": \"{digest}\"")).count(), 3, "{dom}");
    assert_eq!(dom.matches("\"bytes\": 35").count(), 3, "{dom}");
    assert!(dom.contains(&format!("media image/gif, 35 bytes, sha256 {digest}")), "{dom}");
}

/// A run with a skipped arm, a `for` over two items (each a child
/// contract calling a real child process) and a tool that fails.
const FLOW: &str = r#"
tool Stock {
  description "Counts the stock (a real child process)"
  param sku: string
  exec "sh" "-c" "cat > /dev/null; echo 3"
}

tool Fetch {
  description "Fails: the warehouse is closed"
  param sku: string
  param lines: integer
  exec "sh" "-c" "cat > /dev/null; echo the warehouse is closed >&2; exit 1"
}

contract Line {
  input sku: string
  compute stock = Stock(sku: sku)
  output stock
}

contract Order {
  input vip: boolean
  input skus: array<string>
  compute vip_note = upper("vip")
  compute basic_note = lower("BASIC")
  compute note = if vip then vip_note else basic_note
  compose lines = for s in skus: Line(sku: s)
  compute fetched = Fetch(sku: note, lines: len(lines))
  output note
  output lines
  output fetched
}
"#;

/// The timeline rows (`<div class="step...`) of `dom`, the header's first.
fn steps(dom: &str) -> Vec<&str> {
    dom.split("<div class=\"step").skip(1).map(|row| row.split("</div>").next().unwrap()).collect()
}

#[test]
fn the_run_page_of_a_journal_draws_its_timeline_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flow.ign"), FLOW).unwrap();
    let run = |extra: &[&str]| {
        Command::new(get_cargo_bin("ignite"))
            .current_dir(dir.path())
            .args(["run", "flow.ign", "--input", "vip=false", "--input", r#"skus=["a","b"]"#])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&["--journal"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let id = stderr.strip_prefix("run ID ").unwrap().split(' ').next().unwrap();
    let out = Command::new(get_cargo_bin("ignite"))
        .current_dir(dir.path())
        .args(["report", id, "-o", "run.html"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = dom(&dir.path().join("run.html"));
    let dom = page.as_str();

    // The program and its hash, as the journal's header keeps them.
    let hash = {
        let journal = std::fs::read_to_string(dir.path().join(format!(".ignite/runs/{id}.jsonl")));
        let header: serde_json::Value =
            serde_json::from_str(journal.unwrap().lines().next().unwrap()).unwrap();
        header["program"]["hash"].as_str().unwrap().to_owned()
    };
    assert_eq!(hash.len(), 64, "{hash}");
    assert!(dom.contains(&format!("program <code>flow.ign</code> <span class=\"muted\">sha256 <code class=\"hash\">{hash}</code>")), "{dom}");
    assert!(dom.contains("<h2>Timeline</h2>"), "{dom}");
    assert!(!dom.contains("this file has no timeline"), "{dom}");

    let rows = steps(dom);
    let row = |node: &str| {
        let needle = format!("<code class=\"node\">{node}</code>");
        rows.iter()
            .position(|r| r.contains(&needle))
            .unwrap_or_else(|| panic!("no row of {node}: {dom}"))
    };
    // Nodes in the order they started: `note` reads `basic_note`,
    // `fetched` reads `note` and the items; the run's own row spans them
    // all, first.
    assert!(rows[1].contains("data-kind=\"run\" data-status=\"failed\""), "{}", rows[1]);
    assert!(row("Order &gt; basic_note") < row("Order &gt; note"), "{dom}");
    assert!(row("Order &gt; note") < row("Order &gt; fetched"), "{dom}");
    assert!(row("Order &gt; lines[1]") < row("Order &gt; fetched"), "{dom}");
    // The arm not chosen: skipped.
    let skipped = rows[row("Order &gt; vip_note")];
    assert!(skipped.contains("data-kind=\"compute\" data-status=\"skipped\""), "{skipped}");
    // Each item of the `for`, and the tool call inside it.
    for i in 0..2 {
        let item = rows[row(&format!("Order &gt; lines[{i}]"))];
        assert!(item.starts_with(" item\" data-kind=\"compose\" data-status=\"ok\""), "{item}");
        let tool = rows[row(&format!("Order.lines[{i}] &gt; stock"))];
        assert!(tool.contains("data-kind=\"tool\" data-status=\"ok\""), "{tool}");
    }
    // The failure: the node's row, and the run's end with its message.
    let failed = rows[row("Order &gt; fetched")];
    assert!(failed.contains("data-kind=\"tool\" data-status=\"failed\""), "{failed}");
    assert!(
        dom.contains(
            "the run failed: ignite::run::tool_failed: Order &gt; fetched: tool `fetch` failed"
        ),
        "{dom}"
    );
    assert!(dom.contains("the warehouse is closed"), "{dom}");
    assert!(dom.contains("3 effects: 0 model calls, 3 tool calls, 1 failed"), "{dom}");

    // A recording keeps the same timeline (after its sorted effects), and
    // still replays.
    let out = run(&["--record", "flow.jsonl"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(get_cargo_bin("ignite"))
        .current_dir(dir.path())
        .args(["report", "flow.jsonl", "-o", "recorded.html"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recorded = self::dom(&dir.path().join("recorded.html"));
    assert!(
        steps(&recorded).iter().any(|r| r.contains("Order &gt; vip_note") && r.contains("skipped")),
        "{recorded}"
    );
    let out = run(&["--replay", "flow.jsonl"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the warehouse is closed"));
}
