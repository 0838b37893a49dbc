//! Runs that last, from the outside: real `ignite` processes against a
//! local fake provider that counts requests, real `exec` children, real
//! signals. Journal and resume after SIGKILL, record and replay with a tool
//! that has a side effect, SIGINT and SIGTERM with a grandchild running.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{ignite, wait_for};
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A chain: a tool that appends to `marks.txt`, then two agents in a row.
fn chain(dir: &Path, server: &str) -> PathBuf {
    let text = r#"
provider Fake {
  kind openai
  base_url "BASE/v1"
  api_key env("FAKE_KEY")
  retries 0
}

tool Mark {
  description "Appends its text to marks.txt"
  param text: string
  exec "sh" "-c" "cat >> marks.txt; echo >> marks.txt; echo marked"
}

agent First {
  provider Fake
  model "m"
  input q: string
  prompt "first {q}"
}

agent Second {
  provider Fake
  model "m"
  input q: string
  prompt "second {q}"
}

contract Chain {
  input q: string
  compute mark = Mark(text: q)
  compute a = First(q: mark)
  compute b = Second(q: a)
  output b
}
"#
    .replace("BASE", server);
    let file = dir.join("chain.ign");
    std::fs::write(&file, text).unwrap();
    file
}

fn reply(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    }))
}

async fn answer(server: &MockServer, asked: &str, response: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(body_string_contains(asked))
        .respond_with(response)
        .mount(server)
        .await;
}

async fn requests_with(server: &MockServer, text: &str) -> usize {
    let requests = server.received_requests().await.unwrap_or_default();
    requests.iter().filter(|r| String::from_utf8_lossy(&r.body).contains(text)).count()
}

fn marks(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("marks.txt")).unwrap_or_default().lines().count()
}

fn outputs(output: &Output) -> Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn journals(dir: &Path) -> Vec<PathBuf> {
    let runs = dir.join(".ignite/runs");
    std::fs::read_dir(runs)
        .map_or_else(|_| Vec::new(), |entries| entries.map(|e| e.unwrap().path()).collect())
}

/// The lines that ended (not one cut short).
fn lines(path: &Path) -> usize {
    std::fs::read(path).unwrap_or_default().iter().filter(|&&b| b == b'\n').count()
}

/// The header and effect lines that ended (the run's timeline, its `step`
/// lines, left aside).
fn effect_lines(path: &Path) -> usize {
    let text = std::fs::read(path).unwrap_or_default();
    text.split_inclusive(|&b| b == b'\n')
        .filter(|line| line.ends_with(b"\n") && !line.starts_with(b"{\"step\""))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_sigkill_repeats_no_finished_effect() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    answer(&server, "first", reply("alpha")).await;
    answer(&server, "second", reply("late").set_delay(Duration::from_secs(60))).await;
    let file = chain(dir.path(), &server.uri());
    let mut child = ignite(dir.path())
        .args(["run", "chain.ign", "--journal", "--input", "q=go"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Header, the tool call, the first model exchange: then the second
    // model call hangs, and the process is killed without warning.
    let three = || journals(dir.path()).first().is_some_and(|j| effect_lines(j) == 3);
    wait_for("three journal lines", three).await;
    let mut polls = 0;
    while requests_with(&server, "second").await == 0 {
        polls += 1;
        assert!(polls < 1000, "the second request never came");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let journal = journals(dir.path()).remove(0);
    let id = journal.file_stem().unwrap().to_string_lossy().into_owned();
    // What the kill left: the three lines, whole, and nothing after them.
    let left = std::fs::read(&journal).unwrap();
    assert!(left.ends_with(b"\n") && !left.contains(&0) && effect_lines(&journal) == 3);
    assert_eq!(requests_with(&server, "first marked").await, 1);
    assert_eq!(marks(dir.path()), 1);

    server.reset().await;
    answer(&server, "first", reply("alpha")).await;
    answer(&server, "second", reply("beta")).await;
    // No inputs: the journal's are used.
    let resumed = ignite(dir.path()).args(["run", "chain.ign", "--resume", &id]).output().unwrap();
    assert_eq!(outputs(&resumed), json!({"b": "beta"}));
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(stderr.contains(&format!("run ID {id}")), "{stderr}");
    // The tool did not run again and only the unfinished call was sent.
    assert_eq!(marks(dir.path()), 1);
    assert_eq!(requests_with(&server, "first").await, 0);
    assert_eq!(requests_with(&server, "second").await, 1);
    // A finished run leaves whole JSON lines only: header, tool, two models.
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.ends_with('\n') && !text.contains('\0'), "{text}");
    let entries: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(entries.iter().filter(|e| e.get("step").is_none()).count(), 4, "{text}");
    // The journal now holds every effect: resuming again sends nothing.
    server.reset().await;
    let again = ignite(dir.path()).args(["run", "chain.ign", "--resume", &id]).output().unwrap();
    assert_eq!(outputs(&again), json!({"b": "beta"}));
    assert!(server.received_requests().await.unwrap_or_default().is_empty());
    assert_eq!(marks(dir.path()), 1);
    drop(file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_repeats_no_side_effect_and_names_the_first_difference() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    answer(&server, "first", reply("alpha")).await;
    answer(&server, "second", reply("beta")).await;
    chain(dir.path(), &server.uri());
    let recorded = ignite(dir.path())
        .args(["run", "chain.ign", "--input", "q=go", "--record", "run.jsonl"])
        .output()
        .unwrap();
    assert_eq!(outputs(&recorded), json!({"b": "beta"}));
    assert_eq!(marks(dir.path()), 1);
    drop(server);

    // No server, no key, and the tool does not run: the file is unchanged.
    let replayed = ignite(dir.path())
        .env_remove("FAKE_KEY")
        .args(["run", "chain.ign", "--input", "q=go", "--replay", "run.jsonl"])
        .output()
        .unwrap();
    assert_eq!(outputs(&replayed), json!({"b": "beta"}));
    assert_eq!(marks(dir.path()), 1);

    let other = ignite(dir.path())
        .env_remove("FAKE_KEY")
        .args(["run", "chain.ign", "--input", "q=gone", "--replay", "run.jsonl"])
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&other.stderr);
    let found = r#"no recorded call matches: at `/text`: recorded "go", sent"#;
    assert!(stderr.contains(found) && stderr.contains(r#""gone""#), "{stderr}");
    assert_eq!(marks(dir.path()), 1);
}

fn alive(pid: &str) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    !status.is_empty() && !status.contains("State:\tZ")
}

fn spawning(dir: &Path) {
    let text = r#"
tool Spawn {
  description "Starts a grandchild and waits for it"
  param n: integer
  exec "sh" "-c" "sleep 300 & echo $! > grandchild.pid; echo $$ > child.pid; wait"
}

contract Hold {
  input n: integer
  compute held = Spawn(n: n)
  output held
}
"#;
    std::fs::write(dir.join("hold.ign"), text).unwrap();
}

fn stop_with(child: &mut Child, signal: i32) -> Output {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(pid, signal);
    }
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(20), "ignite did not stop");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    Output { status: child.wait().unwrap(), stdout: Vec::new(), stderr: stderr.into_bytes() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_kill_the_process_group_and_exit() {
    for (signal, name, code) in [(libc::SIGINT, "SIGINT", 130), (libc::SIGTERM, "SIGTERM", 143)] {
        let dir = tempfile::tempdir().unwrap();
        spawning(dir.path());
        let mut child = ignite(dir.path())
            .args(["run", "hold.ign", "--input", "n=1", "--journal"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The tool writes the grandchild's pid, then its own.
        let (pid_file, tool_file) =
            (dir.path().join("grandchild.pid"), dir.path().join("child.pid"));
        wait_for("the tool and its grandchild", || {
            std::fs::read_to_string(&tool_file).is_ok_and(|p| p.ends_with('\n'))
        })
        .await;
        let grandchild = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
        let tool = std::fs::read_to_string(&tool_file).unwrap().trim().to_owned();
        assert!(alive(&grandchild));
        let output = stop_with(&mut child, signal);
        assert_eq!(output.status.code(), Some(code));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("ignite: stopped by {name}")), "{stderr}");
        assert!(stderr.contains("--resume"), "{stderr}");
        wait_for("the tool's process group to die", || !alive(&grandchild) && !alive(&tool)).await;
        // The journal holds whole lines only: the header, no half entry.
        let journal = journals(dir.path()).remove(0);
        assert!(std::fs::read_to_string(journal).unwrap().ends_with('\n'));
    }
}

/// A contract whose tool sleeps `n` tenths of a second and fails for a negative `n`.
fn sleepy(dir: &Path) {
    let text = r#"
tool Nap {
  description "Sleeps n tenths of a second (n < 10), then answers n"
  param n: integer
  exec "sh" "-c" "n=$(sed 's/[^0-9-]//g'); [ $n -ge 0 ] || exit 4; sleep 0.$n; echo $n"
}

contract Sleepy {
  input n: integer
  compute slept = Nap(n: n)
  output slept
}
"#;
    std::fs::write(dir.join("sleepy.ign"), text).unwrap();
}

fn result_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "a cut line: {text:?}");
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn batch_results_in_row_order_with_row_errors() {
    let dir = tempfile::tempdir().unwrap();
    sleepy(dir.path());
    let rows = "{\"n\": 3}\n{\"n\": 0}\n\n[1]\n{\"n\": \"x\"}\n{\"n\": -1}\n{\"n\": 1}\n";
    std::fs::write(dir.path().join("rows.jsonl"), rows).unwrap();
    let output = ignite(dir.path())
        .args(["run", "sleepy.ign", "--batch", "rows.jsonl", "--out", "out.jsonl", "--jobs", "4"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = result_lines(&dir.path().join("out.jsonl"));
    let rows: Vec<u64> = lines.iter().map(|l| l["row"].as_u64().unwrap()).collect();
    assert_eq!(rows, [1, 2, 4, 5, 6, 7]);
    assert_eq!(lines[0]["outputs"], json!({"slept": 3}));
    assert_eq!(lines[1]["outputs"], json!({"slept": 0}));
    assert_eq!(lines[2]["error"]["code"], "ignite::run::input");
    assert!(lines[2]["error"]["message"].as_str().unwrap().contains("got array"));
    assert_eq!(lines[3]["error"]["code"], "ignite::run::input");
    assert_eq!(lines[4]["error"]["code"], "ignite::run::tool_failed");
    assert_eq!(lines[4]["error"]["node"], "Sleepy > slept");
    assert_eq!(lines[4]["error"]["kind"], "failed");
    assert_eq!(lines[4]["error"]["cause"], "ignite::tools::failed");
    assert_eq!(
        (&lines[2]["error"]["kind"], &lines[2]["error"]["cause"]),
        (&json!("input"), &Value::Null)
    );
    assert_eq!(lines[5]["outputs"], json!({"slept": 1}));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("batch: 6 rows run, 3 failed"), "{stderr}");
}

/// Row fields the contract does not take fail the row, saying how to keep
/// them; with `--keep-fields` they reach the result line as `row_data`.
#[test]
fn keep_fields_pass_row_data_through() {
    let dir = tempfile::tempdir().unwrap();
    sleepy(dir.path());
    let rows =
        "{\"n\": 1, \"id\": \"a-1\", \"tags\": [1]}\n{\"n\": 2}\n{\"n\": -1, \"id\": \"c\"}\n";
    std::fs::write(dir.path().join("rows.jsonl"), rows).unwrap();
    let batch = |keep: bool| {
        let mut args = vec!["run", "sleepy.ign", "--batch", "rows.jsonl"];
        if keep {
            args.push("--keep-fields");
        }
        let output = ignite(dir.path()).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).collect::<Vec<_>>()
    };
    let refused = batch(false);
    assert_eq!(refused[0]["error"]["code"], "ignite::run::input");
    let message = refused[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("unknown input `id` (`--keep-fields` passes fields the contract does not take through under `row_data`)"), "{message}");
    assert_eq!(refused[1]["outputs"], json!({"slept": 2}));
    let kept = batch(true);
    assert_eq!(
        kept[0],
        json!({"row": 1, "outputs": {"slept": 1}, "row_data": {"id": "a-1", "tags": [1]}})
    );
    assert_eq!(kept[1], json!({"row": 2, "outputs": {"slept": 2}}));
    assert_eq!(kept[2]["error"]["code"], "ignite::run::tool_failed");
    assert_eq!(kept[2]["row_data"], json!({"id": "c"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_stopped_by_sigint_resumes_with_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    sleepy(dir.path());
    let rows: String = (0..40).map(|_| "{\"n\": 2}\n").collect();
    std::fs::write(dir.path().join("rows.jsonl"), rows).unwrap();
    let out = dir.path().join("out.jsonl");
    let args = ["run", "sleepy.ign", "--batch", "rows.jsonl", "--out", "out.jsonl", "--jobs", "2"];
    let mut child = ignite(dir.path()).args(args).stderr(Stdio::piped()).spawn().unwrap();
    wait_for("a few results", || lines(&out) >= 3).await;
    let stopped = stop_with(&mut child, libc::SIGINT);
    assert_eq!(stopped.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert!(stderr.contains("holds whole lines"), "{stderr}");
    let before = result_lines(&out).len();
    assert!(before < 40, "the batch finished before the signal");
    let resumed = ignite(dir.path()).args(args).output().unwrap();
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(stderr.contains(&format!("{before} already done")), "{stderr}");
    let rows: Vec<u64> = result_lines(&out).iter().map(|l| l["row"].as_u64().unwrap()).collect();
    assert_eq!(rows, (1..=40).collect::<Vec<u64>>());
}

/// A batch stopped by SIGINT prints the usage of the rows it ran: each
/// row asks a scripted agent (10 tokens in, 2 out), then naps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_stopped_by_sigint_prints_its_usage() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"[{"text": "ok", "usage": {"input_tokens": 10, "output_tokens": 2}}]"#;
    std::fs::write(dir.path().join("replies.json"), script).unwrap();
    let text = r#"
agent Ask {
  provider script "replies.json"
  model "scripted"
  input n: integer
  prompt "{n}"
}

tool Nap {
  description "Sleeps a second"
  param answer: string
  exec "sh" "-c" "cat > /dev/null; sleep 1; echo done"
}

contract Slow {
  input n: integer
  compute answer = Ask(n: n)
  compute slept = Nap(answer: answer)
  output slept
}
"#;
    std::fs::write(dir.path().join("slow.ign"), text).unwrap();
    let rows: String = (0..40).map(|n| format!("{{\"n\": {n}}}\n")).collect();
    std::fs::write(dir.path().join("rows.jsonl"), rows).unwrap();
    let out = dir.path().join("out.jsonl");
    let args = ["run", "slow.ign", "--batch", "rows.jsonl", "--out", "out.jsonl", "--jobs", "2"];
    let mut child = ignite(dir.path()).args(args).stderr(Stdio::piped()).spawn().unwrap();
    wait_for("a few results", || lines(&out) >= 2).await;
    let stopped = stop_with(&mut child, libc::SIGINT);
    assert_eq!(stopped.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert!(stderr.contains("ignite: stopped by SIGINT"), "{stderr}");
    let table = stderr.split_once("usage ").map(|(_, t)| t).unwrap_or_else(|| panic!("{stderr}"));
    let row = table.lines().find(|l| l.starts_with("script scripted")).unwrap();
    let calls: u64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
    // At least the rows written asked the agent; each call is 10 + 2 tokens.
    assert!(calls >= 2, "{stderr}");
    assert!(row.contains(&format!(" {} ", calls * 10)), "{row}");
}

/// Runs `shell` under a pseudo-terminal (util-linux `script`); what the
/// terminal showed.
fn on_a_terminal(dir: &Path, shell: &str) -> String {
    let output = Command::new("script")
        .args(["--quiet", "--return", "--command", shell, "/dev/null"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("`script` (util-linux) runs a command under a pseudo-terminal");
    let shown = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{shown}{}", String::from_utf8_lossy(&output.stderr));
    shown
}

#[test]
fn the_batch_progress_bar_is_drawn_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    sleepy(dir.path());
    std::fs::write(dir.path().join("rows.jsonl"), "{\"n\": 3}\n{\"n\": -1}\n{\"n\": 3}\n").unwrap();
    let batch = format!(
        "'{}' run sleepy.ign --batch rows.jsonl --out out.jsonl --jobs 1",
        env!("CARGO_BIN_EXE_ignite")
    );
    // The results file was written: a run resumes, so it goes between runs.
    let fresh = |command: &str| {
        let _ = std::fs::remove_file(dir.path().join("out.jsonl"));
        format!("{command} || test $? -eq 3")
    };

    let shown = on_a_terminal(dir.path(), &fresh(&batch));
    for part in ["/3 rows", "1 failed", "0 tokens", "/s", "ETA "] {
        assert!(shown.contains(part), "no `{part}` on the terminal: {shown:?}");
    }
    assert!(shown.contains("batch: 3 rows run, 1 failed"), "{shown:?}");

    // stderr not a terminal (stdout still one): no bar, only the summary.
    let shown = on_a_terminal(dir.path(), &fresh(&format!("{batch} 2>stderr.txt")));
    let stderr = std::fs::read_to_string(dir.path().join("stderr.txt")).unwrap();
    assert_eq!(stderr, "batch: 3 rows run, 1 failed\n");
    assert!(!shown.contains("rows"), "{shown:?}");

    // Neither a terminal.
    let _ = std::fs::remove_file(dir.path().join("out.jsonl"));
    let output =
        ignite(dir.path()).args(["run", "sleepy.ign", "--batch", "rows.jsonl"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stderr), "batch: 3 rows run, 1 failed\n");
}

/// A cached tool that counts its real calls in `calls.txt`; `n < 0` fails.
fn cached(dir: &Path) {
    let text = r#"
tool Square {
  description "Squares n, counting real calls"
  param n: integer
  exec "sh" "-c" "n=$(sed 's/[^0-9-]//g'); echo $n >> calls.txt; [ $n -ge 0 ] || exit 4; echo $((n * n))"
  cache 7d
}

contract Squares {
  input n: integer
  compute squared = Square(n: n)
  output squared
}
"#;
    std::fs::write(dir.join("squares.ign"), text).unwrap();
}

fn calls(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("calls.txt")).unwrap_or_default().lines().count()
}

#[test]
fn two_processes_share_one_cache_and_failures_are_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    cached(dir.path());
    let rows: String = (0..40).map(|n| format!("{{\"n\": {n}}}\n")).collect();
    std::fs::write(dir.path().join("rows.jsonl"), rows + "{\"n\": -1}\n").unwrap();
    let batch = |out: &str| {
        ignite(dir.path())
            .args(["run", "squares.ign", "--batch", "rows.jsonl", "--out", out, "--jobs", "8"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // Two processes write the same 40 keys at the same time.
    let (mut a, mut b) = (batch("a.jsonl"), batch("b.jsonl"));
    assert_eq!(a.wait().unwrap().code(), Some(3));
    assert_eq!(b.wait().unwrap().code(), Some(3));
    let before = calls(dir.path());
    assert!(before >= 42, "every row ran in one process at least: {before}");
    let stats = ignite(dir.path()).args(["cache", "stats"]).output().unwrap();
    let stats = String::from_utf8_lossy(&stats.stdout).into_owned();
    assert!(stats.starts_with(".ignite/cache: 40 entries"), "{stats}");
    // A third run reads every success back whole and runs only the failure.
    let third = ignite(dir.path())
        .args(["run", "squares.ign", "--batch", "rows.jsonl", "--out", "c.jsonl"])
        .output()
        .unwrap();
    assert_eq!(third.status.code(), Some(3));
    assert_eq!(calls(dir.path()), before + 1);
    // The summary says how many results came from the cache.
    let stderr = String::from_utf8_lossy(&third.stderr);
    assert!(
        stderr.contains("batch: 41 rows run, 1 failed\ncache: 40 hits, 1 misses\n"),
        "{stderr}"
    );
    for trace in [false, true] {
        let mut args = vec!["run", "squares.ign", "--input", "n=3"];
        if trace {
            args.push("--trace");
        }
        let one = ignite(dir.path()).args(args).output().unwrap();
        assert_eq!(outputs(&one), json!({"squared": 9}));
        let stderr = String::from_utf8_lossy(&one.stderr);
        assert!(stderr.contains("cache: 1 hits, 0 misses"), "{stderr}");
        assert_eq!(stderr.contains("hit     cache"), trace, "{stderr}");
    }
    assert_eq!(calls(dir.path()), before + 1);
    let lines = result_lines(&dir.path().join("c.jsonl"));
    for (n, line) in lines.iter().take(40).enumerate() {
        assert_eq!(line["outputs"]["squared"], json!(n * n), "{line}");
    }
    assert_eq!(lines[40]["error"]["code"], "ignite::run::tool_failed");
    // `--no-cache` runs the tool again; `cache clear` empties the folder.
    let fresh = ignite(dir.path())
        .args(["run", "squares.ign", "--input", "n=3", "--no-cache"])
        .output()
        .unwrap();
    assert_eq!(outputs(&fresh), json!({"squared": 9}));
    assert_eq!(calls(dir.path()), before + 2);
    let cleared = ignite(dir.path()).args(["cache", "clear"]).output().unwrap();
    assert!(cleared.status.success());
    let stats = ignite(dir.path()).args(["cache", "stats"]).output().unwrap();
    assert!(String::from_utf8_lossy(&stats.stdout).contains(": 0 entries"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_agent_answers_without_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    answer(&server, "first", reply("alpha")).await;
    let text = r#"
provider Fake {
  kind openai
  base_url "BASE/v1"
  api_key env("FAKE_KEY")
}

agent First {
  provider Fake
  model "m"
  input q: string
  prompt "first {q}"
  cache
}

contract Ask {
  input q: string
  compute a = First(q: q)
  output a
}
"#
    .replace("BASE", &server.uri());
    std::fs::write(dir.path().join("ask.ign"), text).unwrap();
    let run = |q: &str| {
        let input = format!("q={q}");
        ignite(dir.path()).args(["run", "ask.ign", "--trace", "--input", &input]).output().unwrap()
    };
    let first = run("go");
    assert_eq!(outputs(&first), json!({"a": "alpha"}));
    assert!(String::from_utf8_lossy(&first.stderr).contains("miss    cache"));
    let again = run("go");
    assert_eq!(outputs(&again), json!({"a": "alpha"}));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("hit     cache      Ask > a  (First)"), "{stderr}");
    assert_eq!(requests_with(&server, "first go").await, 1);
    // Other inputs are another key.
    assert_eq!(outputs(&run("stop")), json!({"a": "alpha"}));
    assert_eq!(requests_with(&server, "first stop").await, 1);
}

/// Ctrl-C during a collection: the items running (each a child with a
/// grandchild) are killed with their process groups, and no later item
/// ever starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_during_a_collection_stops_its_items() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
tool Spawn {
  description "Starts a grandchild, notes both pids, waits"
  param n: integer
  exec "sh" "-c" "n=$(cat | tr -dc 0-9); sleep 300 & echo $! > grandchild.$n.pid; echo $$ > child.$n.pid; wait"
}

contract Many {
  input items: array<integer>
  compute held = for i in items: Spawn(n: i)
  output held
}
"#;
    std::fs::write(dir.path().join("many.ign"), text).unwrap();
    let mut child = ignite(dir.path())
        .args(["run", "many.ign", "--input", "items=[0, 1, 2, 3, 4, 5]", "--jobs", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = |kind: &str, n: usize| {
        std::fs::read_to_string(dir.path().join(format!("{kind}.{n}.pid")))
            .ok()
            .filter(|p| p.ends_with('\n'))
            .map(|p| p.trim().to_owned())
    };
    // The child notes its own pid after its grandchild's: wait for all four.
    wait_for("two items to start", || {
        (0..2).all(|n| pid("grandchild", n).is_some() && pid("child", n).is_some())
    })
    .await;
    let running: Vec<String> = (0..2)
        .flat_map(|n| [pid("grandchild", n), pid("child", n)])
        .map(|p| p.expect("pid written"))
        .collect();
    assert!(running.iter().all(|p| alive(p)));
    let output = stop_with(&mut child, libc::SIGINT);
    assert_eq!(output.status.code(), Some(130));
    let mut stdout = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    assert!(stdout.is_empty(), "no outputs are printed: {stdout}");
    wait_for("the running items' process groups to die", || running.iter().all(|p| !alive(p)))
        .await;
    let later: Vec<usize> = (2..6).filter(|&n| pid("child", n).is_some()).collect();
    assert!(later.is_empty(), "items started after Ctrl-C: {later:?}");
}
