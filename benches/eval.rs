//! Eval benchmarks: `ignite eval` with the release binary, end to end.
//! `cargo bench --bench eval`; figures go to BENCHMARKS.md.
//!
//! - overhead: 1,000 rows × 3 samples, each one agent call against a local
//!   fake provider (OpenAI wire format) that answers every request after
//!   50 ms, `--jobs 64`, an empty cache. The ideal is 3,000 / 64 × 50 ms ≈
//!   2.34 s (64 calls always in flight, nothing else costing time); the
//!   ratio wall / ideal, process start and the dataset check included, is
//!   what counts (target: within 1.2×).
//! - cached: the same command again: every sample from the cache, no
//!   request (the fake counts them).
//! - report: the `--report` page of that eval grown to 10,000 rows × 1
//!   sample, its size and the time to write it.
//! - run page: a generated run of 10,000 nodes (100 chains of 100
//!   `compute`s) recorded with `--record`, its `ignite report` page, the
//!   page's size, the time to write it, and Chromium's load time beside
//!   that of a page of one line (Chromium's own start).
//! - memory: the peak resident size of `ignite eval --save` over 100,000
//!   rows × 1 sample against a fake that answers at once (`--no-cache`),
//!   beside that of 1,000 rows: what a sample costs in memory.

#![allow(clippy::print_stdout, clippy::cast_precision_loss, clippy::unwrap_used, missing_docs)]

mod binary;
mod peak;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const LATENCY: Duration = Duration::from_millis(50);

fn main() {
    let binary = binary::release_binary();
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let server = runtime.block_on(async {
        let server = wiremock::MockServer::start().await;
        let reply = serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": "a short answer"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3}
        });
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(reply).set_delay(LATENCY))
            .mount(&server)
            .await;
        server
    });
    std::fs::write(dir.path().join("answers.ign"), program(&server.uri()))
        .expect("program written");
    write_rows(&dir.path().join("rows.jsonl"), 1_000);
    let jobs = 64_u32;
    let ideal = LATENCY.mul_f64(3_000.0 / f64::from(jobs));
    println!("| run | samples | `--jobs` | ideal | wall | ratio | requests |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for run in ["empty cache", "fully cached"] {
        let before = runtime.block_on(server.received_requests()).map_or(0, |r| r.len());
        let wall = eval(&binary, dir.path(), jobs, &[]);
        let after = runtime.block_on(server.received_requests()).map_or(0, |r| r.len());
        let ratio = format!("{:.2}×", wall.as_secs_f64() / ideal.as_secs_f64());
        println!(
            "| {run} | 3,000 | {jobs} | {:.2} s | {:.2} s | {} | {} |",
            ideal.as_secs_f64(),
            wall.as_secs_f64(),
            if run == "empty cache" { ratio.as_str() } else { "–" },
            after - before
        );
    }
    // The report page of 10,000 rows (one sample each; the cache is warm
    // for the first 1,000 rows only).
    write_rows(&dir.path().join("rows.jsonl"), 10_000);
    let page = dir.path().join("page.html");
    let wall = eval(&binary, dir.path(), 256, &["--repeat", "1", "--report", "page.html"]);
    let size = std::fs::metadata(&page).map_or(0, |m| m.len());
    println!();
    println!(
        "report: 10,000 rows × 1 sample, {:.1} MB page, eval with `--report` {:.2} s",
        size as f64 / 1e6,
        wall.as_secs_f64()
    );
    if let Some(load) = chromium_load(&page) {
        println!(
            "report: headless Chromium loads and lays it out (`--dump-dom`) in {:.2} s",
            load.as_secs_f64()
        );
    }
    drop(server);
    run_page(&binary, dir.path());
    memory(&binary, &runtime);
}

/// The eval of the bench against the provider at `uri`.
fn program(uri: &str) -> String {
    format!(
        "provider Local {{\n  kind openai\n  base_url \"{uri}/v1\"\n}}\n\
         agent Echo {{\n  provider Local\n  model \"m\"\n  input q: string\n}}\n\
         contract Ask {{\n  input q: string\n  compute a = Echo(q: q)\n  output a\n}}\n\
         eval \"answers\" {{\n  run Ask\n  dataset \"rows.jsonl\"\n  repeat 3\n  \
         score short = len(a) <= 40\n  score words = len(split(a, \" \")) / 10\n}}\n"
    )
}

/// The peak resident size of `ignite eval --save` over 1,000 and 100,000
/// rows against a fake answering at once.
fn memory(binary: &Path, runtime: &tokio::runtime::Runtime) {
    let server = runtime.block_on(async {
        let server = wiremock::MockServer::builder().disable_request_recording().start().await;
        let reply = serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": "a short answer"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3}
        });
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(reply))
            .mount(&server)
            .await;
        server
    });
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("answers.ign"), program(&server.uri()))
        .expect("program written");
    println!();
    println!("| rows × 1 sample | `--save` file | wall | peak RSS |");
    println!("| ---: | ---: | ---: | ---: |");
    for rows in [1_000, 100_000] {
        write_rows(&dir.path().join("rows.jsonl"), rows);
        let mut command = Command::new(binary);
        command
            .current_dir(dir.path())
            .args(["eval", "--jobs", "64", "--repeat", "1", "--no-cache", "--save", "out.json"])
            .env("OPENAI_API_KEY", "sk-bench");
        let started = Instant::now();
        let peak = peak::peak_rss_of(command);
        let wall = started.elapsed();
        let size = std::fs::metadata(dir.path().join("out.json")).map_or(0, |m| m.len());
        println!(
            "| {rows} | {:.1} MB | {:.2} s | {:.1} MB |",
            size as f64 / 1e6,
            wall.as_secs_f64(),
            peak as f64 / 1e6
        );
    }
}

/// The page of a generated run of 10,000 nodes.
fn run_page(binary: &Path, dir: &Path) {
    let mut program = String::from("contract Wide {\n  input seed: integer\n");
    for chain in 0..100 {
        for i in 0..100 {
            let previous = if i == 0 { "seed".to_owned() } else { format!("n{chain}_{}", i - 1) };
            let _ = writeln!(program, "  compute n{chain}_{i} = {previous} + {i}");
        }
    }
    for chain in 0..100 {
        let _ = writeln!(program, "  output n{chain}_99");
    }
    program.push_str("}\n");
    std::fs::write(dir.join("wide.ign"), program).expect("program written");
    let ignite = |args: &[&str]| {
        let started = Instant::now();
        let out = Command::new(binary).current_dir(dir).args(args).output().expect("ignite runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        started.elapsed()
    };
    let run = ignite(&["run", "wide.ign", "--input", "seed=1", "--record", "wide.jsonl"]);
    let write = ignite(&["report", "wide.jsonl", "-o", "wide.html"]);
    let size = std::fs::metadata(dir.join("wide.html")).map_or(0, |m| m.len());
    println!();
    println!(
        "run page: 10,000 nodes, run with `--record` {:.2} s, `ignite report` {:.2} s, {:.1} MB page",
        run.as_secs_f64(),
        write.as_secs_f64(),
        size as f64 / 1e6
    );
    std::fs::write(dir.join("one.html"), "<!DOCTYPE html><p>one line</p>\n").expect("page written");
    if let (Some(load), Some(start)) =
        (chromium_load(&dir.join("wide.html")), chromium_load(&dir.join("one.html")))
    {
        println!(
            "run page: headless Chromium loads it (`--dump-dom`) in {:.2} s; a one-line page takes {:.2} s",
            load.as_secs_f64(),
            start.as_secs_f64()
        );
    }
}

/// How long Debian's headless Chromium (`scripts/peers.sh install
/// chromium`), kept on the loopback, takes to load `page` and print its
/// DOM; `None` when it is not installed.
fn chromium_load(page: &Path) -> Option<Duration> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let which =
        Command::new(root.join("scripts/peers.sh")).args(["which", "chromium"]).output().ok()?;
    if !which.status.success() {
        return None;
    }
    let chromium = String::from_utf8_lossy(&which.stdout).trim().to_owned();
    let profile = tempfile::tempdir().ok()?;
    let started = Instant::now();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .ok()?;
    out.status.success().then(|| started.elapsed())
}

/// Runs `ignite eval` in `dir` with `--jobs jobs` and `extra`; its wall time.
fn eval(binary: &Path, dir: &Path, jobs: u32, extra: &[&str]) -> Duration {
    let started = Instant::now();
    let out = Command::new(binary)
        .current_dir(dir)
        .args(["eval", "--jobs", &jobs.to_string()])
        .args(extra)
        .env("OPENAI_API_KEY", "sk-bench")
        .output()
        .expect("ignite runs");
    let wall = started.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wall
}

fn write_rows(path: &Path, rows: u32) {
    let mut text = String::new();
    for i in 0..rows {
        let _ = writeln!(text, "{{\"id\": {i}, \"inputs\": {{\"q\": \"question {i}\"}}}}");
    }
    std::fs::write(path, text).expect("rows written");
}
