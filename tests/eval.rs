//! `ignite eval` from the outside, against a fake OpenAI server on
//! 127.0.0.1 whose requests are counted: scores and intervals, the cache
//! that makes a second identical eval call no model and an edited agent
//! re-pay only its own calls (and those that depend on them), rows that
//! cannot run reported before any call, a judge answering junk, and a
//! baseline (paired comparison, rows that got worse, the exit code).

#![allow(clippy::unwrap_used)]
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use insta_cmd::get_cargo_bin;
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn ignite(dir: &Path, server: &MockServer) -> Command {
    let mut command = Command::new(get_cargo_bin("ignite"));
    command
        .env("NO_COLOR", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.uri()))
        .current_dir(dir);
    command
}

fn run(command: &mut Command) -> (i32, String, String) {
    let Output { status, stdout, stderr } = command.output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (status.code().unwrap_or(-1), text(stdout), text(stderr))
}

fn reply(content: &str) -> ResponseTemplate {
    reply_after(content, Duration::ZERO)
}

fn reply_after(content: &str, delay: Duration) -> ResponseTemplate {
    ResponseTemplate::new(200).set_delay(delay).set_body_json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
}

/// A writer answering "A line about TOPIC." (with `again` for a prompt
/// that says "again"), and a grader giving 0.75, or junk for "mud".
async fn server() -> MockServer {
    let server = MockServer::start().await;
    for topic in ["tea", "coffee", "mud"] {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(body_string_contains(format!("Write one line again about {topic}")))
            .respond_with(reply(&format!("Again a line about {topic}.")))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(body_string_contains(format!("Write one line about {topic}")))
            .respond_with(reply(&format!("A line about {topic}.")))
            .mount(&server)
            .await;
    }
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("Grade"))
        .and(body_string_contains("mud"))
        .respond_with(reply("{\"verdict\": \"muddy\"}"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("Grade"))
        .respond_with(reply("{\"score\": 0.75}"))
        .mount(&server)
        .await;
    server
}

const PROGRAM: &str = r#"
type Verdict {
  score: float
}

agent Writer {
  provider openai
  model "gpt-4o-mini"
  input topic: string
  prompt "Write one line about {topic}"
}

agent Grader {
  provider openai
  model "gpt-4o-mini"
  input line: string
  result Verdict
  result_retries 0
  prompt "Grade this line: {line}"
}

contract Blurb {
  input topic: string
  compute line = Writer(topic)
  output line
}

eval "blurbs" {
  run Blurb
  dataset "rows.jsonl"
  repeat 2
  score mentions = contains(line, inputs.topic)
  score graded = Grader(line: line)
  require mentions >= 0.5
}
"#;

const ROWS: &str = concat!(
    "{\"id\": \"t\", \"inputs\": {\"topic\": \"tea\"}}\n",
    "{\"id\": \"c\", \"inputs\": {\"topic\": \"coffee\"}}\n",
    "{\"id\": \"m\", \"inputs\": {\"topic\": \"mud\"}}\n",
);

fn sandbox(program: &str, rows: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blurbs.ign"), program).unwrap();
    std::fs::write(dir.path().join("rows.jsonl"), rows).unwrap();
    dir
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.map_or(0, |r| r.len())
}

/// Requests whose body contains `text`.
async fn requests_with(server: &MockServer, text: &str) -> usize {
    let all = server.received_requests().await.unwrap_or_default();
    all.iter().filter(|r| String::from_utf8_lossy(&r.body).contains(text)).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn scores_then_a_second_run_calls_no_model_and_an_edit_repays_only_its_calls() {
    let server = server().await;
    let dir = sandbox(PROGRAM, ROWS);
    let (code, stdout, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--format", "json", "--save", "base.json"]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    // 3 rows × 2 samples, a writer and a grader call each.
    assert_eq!(requests(&server).await, 12);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let eval = &report["evals"][0];
    assert_eq!(eval["rows"], 3);
    assert_eq!(eval["samples"].as_array().unwrap().len(), 6);
    let mentions = &eval["scores"][0];
    assert_eq!(
        (mentions["name"].as_str(), mentions["kind"].as_str()),
        (Some("mentions"), Some("rate"))
    );
    assert_eq!(mentions["mean"], 1.0);
    // Wilson's interval of 6 out of 6.
    assert!((mentions["low"].as_f64().unwrap() - 0.6097).abs() < 1e-3, "{mentions}");
    // The junk judge fails its score (scored 0), the others give 0.75.
    let graded = &eval["scores"][1];
    assert_eq!(graded["failed"], 2, "{graded}");
    assert!((graded["mean"].as_f64().unwrap() - 0.5).abs() < 1e-9, "{graded}");
    let mud = eval["samples"].as_array().unwrap().iter().find(|s| s["id"] == "m").unwrap();
    let why = mud["score_errors"]["graded"].as_str().unwrap();
    assert!(why.contains("judge `Grader` failed"), "{why}");
    assert_eq!(eval["passed"], true);
    assert_eq!(eval["tokens"]["input"], 120);

    // The same eval again: every sample from the cache, no request.
    let (code, stdout, stderr) = run(ignite(dir.path(), &server).args(["eval"]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(requests(&server).await, 12, "a second identical eval makes no model call");
    assert!(stdout.contains("mentions  1.000  [0.610, 1.000]  rate"), "{stdout}");

    // A new grader prompt: only the grader's 6 calls again.
    let regraded = PROGRAM.replace("Grade this line", "Grade this line, strictly");
    std::fs::write(dir.path().join("blurbs.ign"), &regraded).unwrap();
    let (code, _, stderr) = run(ignite(dir.path(), &server).args(["eval"]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(requests(&server).await, 18);
    assert_eq!(requests_with(&server, "Write one line").await, 6, "the writer is not asked again");

    // A new writer prompt: the writer's calls, and the grader's (its line changed).
    let rewritten = regraded.replace("Write one line about", "Write one line again about");
    std::fs::write(dir.path().join("blurbs.ign"), &rewritten).unwrap();
    let (code, stdout, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--baseline", "base.json"]));
    assert_eq!(requests(&server).await, 30, "{stdout}{stderr}");
    // Same scores as the baseline: no change, exit 0.
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("vs baseline `mentions`: +0.000"), "{stdout}");

    // --no-cache takes fresh samples.
    let (code, _, stderr) = run(ignite(dir.path(), &server).args(["eval", "--no-cache"]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(requests(&server).await, 42);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worse_score_than_the_baseline_fails_and_lists_the_rows_worst_first() {
    let server = server().await;
    let dir = sandbox(PROGRAM, ROWS);
    let (code, stdout, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--save", "base.json"]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    // Now `mentions` asks for a word no line has on two rows.
    let worse = PROGRAM.replace(
        "contains(line, inputs.topic)",
        "contains(line, inputs.topic) and inputs.topic != \"tea\" and inputs.topic != \"coffee\"",
    );
    std::fs::write(dir.path().join("blurbs.ign"), worse).unwrap();
    let (code, stdout, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--baseline", "base.json"]));
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("require mentions >= 0.5: FAILED"), "{stdout}");
    assert!(stdout.contains("vs baseline `mentions`: -0.667"), "{stdout}");
    assert!(stdout.contains(": worse"), "{stdout}");
    let first = stdout.lines().position(|l| l.contains("worse: row `c` sample 0")).unwrap();
    let last = stdout.lines().position(|l| l.contains("worse: row `t` sample 1")).unwrap();
    assert!(first < last, "{stdout}");
    assert_eq!(requests(&server).await, 12, "the second run came from the cache");

    // A baseline of another eval, or not a saved run at all: a clear error.
    std::fs::write(
        dir.path().join("other.json"),
        r#"{"ignite_eval": 1, "evals": [{"name": "other", "samples": []}]}"#,
    )
    .unwrap();
    let (code, _, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--baseline", "other.json"]));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("baseline `other.json` has no eval `blurbs` (it has `other`)"),
        "{stderr}"
    );
    std::fs::write(dir.path().join("junk.json"), "[1, 2]").unwrap();
    let (code, _, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--baseline", "junk.json"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("is not a saved eval run"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn rows_that_cannot_run_are_reported_by_line_before_any_call() {
    let server = server().await;
    let rows = concat!(
        "{\"id\": \"t\", \"inputs\": {\"topic\": \"tea\"}}\n",
        "{\"id\": \"t\", \"inputs\": {\"topic\": \"coffee\"}}\n",
        "{\"inputs\": {\"topic\": \"mud\"}}\n",
        "{\"id\": \"x\", \"inputs\": {\"topik\": \"mud\"}}\n",
    );
    let dir = sandbox(PROGRAM, rows);
    let (code, stdout, stderr) = run(ignite(dir.path(), &server).args(["eval"]));
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("nothing was run"), "{stderr}");
    assert!(stderr.contains("line 2: id `t` is also the id of line 1"), "{stderr}");
    assert!(stderr.contains("line 3: no `id`"), "{stderr}");
    assert!(stderr.contains("line 4: inputs: unknown input `topik`"), "{stderr}");
    assert_eq!(requests(&server).await, 0);
    // An empty dataset.
    std::fs::write(dir.path().join("rows.jsonl"), "\n").unwrap();
    let (code, _, stderr) = run(ignite(dir.path(), &server).args(["eval"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("has no rows"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn junit_and_markdown_reports() {
    let server = server().await;
    let dir = sandbox(PROGRAM, ROWS);
    let (code, stdout, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--format", "junit"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("<testsuite name=\"blurbs\" tests=\"1\" failures=\"0\">"), "{stdout}");
    assert!(stdout.contains("<testcase name=\"require mentions &gt;= 0.5\"/>"), "{stdout}");
    let (code, stdout, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--format", "markdown"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("| mentions | 1.000 | [0.610, 1.000] | – |"), "{stdout}");
}

#[test]
fn the_example_eval_runs_offline_from_its_cassette() {
    let mut command = Command::new(get_cargo_bin("ignite"));
    command
        .env("NO_COLOR", "1")
        .env_remove("OPENAI_API_KEY")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "eval",
            "contracts/evals/summaries.ign",
            "--replay",
            "contracts/evals/summaries.cassette.json",
        ]);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("4 rows × 2 samples of `Summarize`"), "{stdout}");
    assert!(stdout.contains("faithful  0.825  [0.725, 0.906]  mean"), "{stdout}");
    assert!(stdout.contains("require short >= 0.8 and faithful >= 0.6: ok"), "{stdout}");
    // The cassette's usage, not 0: what the recorded calls had spent.
    assert!(
        stdout
            .contains("640 input + 192 output tokens (640 + 192 of them spent before: answered from the cache or a recording)"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_half_way_keeps_what_finished_and_a_rerun_resumes_from_the_cache() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("Grade"))
        .respond_with(reply_after("{\"score\": 1}", Duration::from_millis(150)))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(reply_after(
            "A line about tea and coffee and mud.",
            Duration::from_millis(150),
        ))
        .mount(&server)
        .await;
    let dir = sandbox(PROGRAM, ROWS);
    let child = ignite(dir.path(), &server)
        .args(["eval", "--jobs", "1", "--save", "partial.json", "--report", "partial.html"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until a few calls were answered, then stop it as Ctrl-C does.
    let started = Instant::now();
    while requests(&server).await < 4 && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sends a signal to the child this test started.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("stopped by SIGINT; finished samples are in the cache"), "{stderr}");
    let paid = requests(&server).await;
    assert!((4..12).contains(&paid), "stopped half-way: {paid} requests");

    // What finished is saved, marked partial: every sample whole, a writer
    // and a grader call each.
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("partial.json")).unwrap())
            .unwrap();
    assert_eq!(saved["partial"], true, "{saved}");
    let eval = &saved["evals"][0];
    let samples = eval["samples"].as_array().unwrap();
    let finished = samples.len();
    // The 4th request was still being answered: at least one sample finished.
    assert!((1..6).contains(&finished), "{saved}");
    assert!(paid >= 2 * finished, "{paid} requests for {finished} samples");
    assert_eq!(
        (&eval["stopped"], &eval["finished"], &eval["planned"]),
        (&json!(true), &json!(finished), &json!(6))
    );
    assert!(
        samples.iter().all(|s| s["outputs"]["line"].is_string() && s["scores"]["graded"] == 1.0),
        "{saved}"
    );
    assert!(
        stderr.contains(&format!("saved the {finished} finished samples (of 6) to `partial.json` and `partial.html`, marked partial")),
        "{stderr}"
    );
    let page = std::fs::read_to_string(dir.path().join("partial.html")).unwrap();
    assert!(page.contains(&format!("stopped after {finished} of 6 samples")), "{page}");
    assert_eq!(page.matches("<details class=\"sample").count(), finished);

    // A partial baseline is refused: a gate would compare only part of it.
    let (code, _, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--baseline", "partial.json"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("baseline `partial.json` is partial (a stop cut its run short: eval `blurbs` stopped after"),
        "{stderr}"
    );
    assert_eq!(requests(&server).await, paid, "a refused baseline runs nothing");

    // The same command again resumes: the saved samples' calls come from the cache.
    let (code, stdout, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--save", "partial.json"]));
    assert_eq!(code, 0, "{stdout}{stderr}");
    let rerun = requests(&server).await - paid;
    assert!(rerun <= 2 * (6 - finished), "{finished} samples saved, {rerun} requests after");
    assert!(stdout.contains("mentions  1.000"), "{stdout}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("partial.json")).unwrap())
            .unwrap();
    assert_eq!(
        (&saved["partial"], saved["evals"][0]["samples"].as_array().map(Vec::len)),
        (&json!(false), Some(6))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn filter_and_repeat_choose_what_runs() {
    let server = server().await;
    let dir = sandbox(PROGRAM, ROWS);
    let (code, _, stderr) = run(ignite(dir.path(), &server).args(["eval", "--filter", "nothing"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("no eval name contains `nothing`"), "{stderr}");
    let (code, stdout, stderr) =
        run(ignite(dir.path(), &server).args(["eval", "--filter", "blur", "--repeat", "1"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("3 rows × 1 samples"), "{stdout}");
    assert_eq!(requests(&server).await, 6);
}
