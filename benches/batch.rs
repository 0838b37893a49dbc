//! Batch benchmarks: `ignite run FILE --batch ROWS --out RESULTS` with the
//! release binary, end to end. `cargo bench --bench batch`; figures go to
//! BENCHMARKS.md.
//!
//! - agents: 10,000 rows, each one agent call against a local fake
//!   provider (OpenAI wire format) that answers every request after 50 ms,
//!   `--jobs 256`. The ideal is 10,000 / 256 × 50 ms ≈ 1.95 s (256 calls
//!   always in flight, nothing else costing time); the ratio wall / ideal,
//!   process start included, is what counts on a shared machine.
//! - memory: a pure contract over 10,000 / 100,000 / 1,000,000 rows; the
//!   peak resident set of the `ignite` process must not grow with the row
//!   count.

#![allow(clippy::print_stdout, missing_docs)]

mod binary;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LATENCY: Duration = Duration::from_millis(50);

fn main() {
    let binary = binary::release_binary();
    let dir = tempfile::tempdir().expect("temp dir");
    agents(&binary, dir.path());
    memory(&binary, dir.path());
}

fn agents(binary: &Path, dir: &Path) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let server = runtime.block_on(async {
        let server = wiremock::MockServer::builder().disable_request_recording().start().await;
        let reply = serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 1}
        });
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(reply).set_delay(LATENCY))
            .mount(&server)
            .await;
        server
    });
    let contract = dir.join("agents.ign");
    std::fs::write(
        &contract,
        format!(
            "provider Local {{\n  kind openai\n  base_url \"{}/v1\"\n}}\n\
             agent Echo {{\n  provider Local\n  model \"m\"\n  input q: string\n}}\n\
             contract Ask {{\n  input q: string\n  compute a = Echo(q: q)\n  output a\n}}\n",
            server.uri()
        ),
    )
    .expect("contract written");
    let jobs = 256_u32;
    println!("| rows | `--jobs` | ideal | wall | ratio | peak RSS |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for rows in [2_500_u32, 10_000, 10_000, 10_000] {
        let file = dir.join(format!("questions{rows}.jsonl"));
        write_rows(&file, rows, |i, line| {
            let _ = write!(line, "{{\"q\": \"question {i}\"}}");
        });
        let ideal = LATENCY.mul_f64(f64::from(rows) / f64::from(jobs));
        let out = dir.join("answers.jsonl");
        let (wall, peak) = batch(binary, &contract, &file, &out, jobs);
        std::fs::remove_file(&out).expect("results written");
        println!(
            "| {rows} | {jobs} | {:.2} s | {:.2} s | {:.2}× | {peak} MB |",
            ideal.as_secs_f64(),
            wall.as_secs_f64(),
            wall.as_secs_f64() / ideal.as_secs_f64()
        );
    }
    drop(server);
}

fn memory(binary: &Path, dir: &Path) {
    let contract = dir.join("pure.ign");
    std::fs::write(
        &contract,
        "contract Double {\n  input x: integer\n  input name: string\n  compute y = x * 2\n  \
         compute greeting = \"hello {name}\"\n  output y\n  output greeting\n}\n",
    )
    .expect("contract written");
    println!();
    println!("| rows | `--jobs` | wall | per row | peak RSS |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    for rows in [10_000, 100_000, 1_000_000] {
        let file = dir.join(format!("pure{rows}.jsonl"));
        write_rows(&file, rows, |i, line| {
            let _ = write!(line, "{{\"x\": {i}, \"name\": \"row {i}\"}}");
        });
        let out = dir.join("results.jsonl");
        let (wall, peak) = batch(binary, &contract, &file, &out, 8);
        println!(
            "| {rows} | 8 | {:.2} s | {:.1} µs | {peak} MB |",
            wall.as_secs_f64(),
            wall.as_secs_f64() * 1e6 / f64::from(rows)
        );
        if rows == 1_000_000 {
            // Keep the first half of the results: the same command resumes.
            let text = std::fs::read_to_string(&out).expect("results");
            let half = text.match_indices('\n').nth(rows as usize / 2 - 1).expect("lines").0;
            std::fs::write(&out, &text[..=half]).expect("results cut");
            let (wall, peak) = batch(binary, &contract, &file, &out, 8);
            println!(
                "| {rows}, resumed half done | 8 | {:.2} s | {:.1} µs | {peak} MB |",
                wall.as_secs_f64(),
                wall.as_secs_f64() * 2e6 / f64::from(rows)
            );
        }
        std::fs::remove_file(&out).expect("results written");
        std::fs::remove_file(&file).expect("rows written");
    }
}

/// Writes `rows` lines, each made by `line`.
fn write_rows(path: &Path, rows: u32, line: impl Fn(u32, &mut String)) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("rows file"));
    let mut text = String::new();
    for i in 0..rows {
        text.clear();
        line(i, &mut text);
        text.push('\n');
        out.write_all(text.as_bytes()).expect("row written");
    }
    out.flush().expect("rows written");
}

/// Runs the batch, appending to the results file `out`; its wall time and
/// the process's peak resident set in MB. Every row must succeed.
fn batch(binary: &Path, contract: &Path, rows: &Path, out: &Path, jobs: u32) -> (Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(binary)
        .arg("run")
        .arg(contract)
        .arg("--batch")
        .arg(rows)
        .arg("--out")
        .arg(out)
        .args(["--jobs", &jobs.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ignite starts");
    // `VmHWM` is the peak of the process's own memory (the `wait4` peak
    // also counts the memory of the process that started it: this bench).
    // It is read until the process has exited (then it is gone), and the
    // largest reading kept: while the process exits it reads lower.
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0;
    let status = loop {
        if let Some(kb) = std::fs::read_to_string(&status_file).ok().and_then(|s| high_water(&s)) {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(status) = child.try_wait().expect("ignite runs") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let wall = started.elapsed();
    assert!(status.success(), "the batch must succeed: `{}`", out.display());
    (wall, peak_kb / 1024)
}

/// The `VmHWM` of a `/proc/PID/status` text, in KB.
fn high_water(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}
