//! Bursts: 512 `http get` tool calls at once against a local server that
//! answers at once, `ignite run` against `curl -Z` fetching the same 512
//! URLs. `cargo bench --bench burst`; figures go to BENCHMARKS.md.
//!
//! Both are whole processes timed from outside and alternated (ignite,
//! curl, ignite, ...), so a busy moment of the shared machine costs both
//! sides; the median of each and their ratio are printed. ignite runs
//! `for i in items: Get(i)` over 512 items with `--jobs 512` (each call is
//! one node: the tool's arguments validated, the URL built, the request,
//! the JSON answer parsed and checked against `result`); curl fetches
//! `/items/0` ... `/items/511` with `--parallel --parallel-max 512`,
//! writing the bodies to `/dev/null`. ignite's side includes what curl's
//! does not: compiling the program and printing the 512 answers.

#![allow(clippy::print_stdout, missing_docs)]

mod binary;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CALLS: usize = 512;
const ROUNDS: usize = 31;

fn main() {
    let binary = binary::release_binary();
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let server = runtime.block_on(async {
        let server = wiremock::MockServer::builder().disable_request_recording().start().await;
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(
                wiremock::ResponseTemplate::new(200).set_body_json(serde_json::json!({"ok": true})),
            )
            .mount(&server)
            .await;
        server
    });
    let program = dir.path().join("burst.ign");
    std::fs::write(
        &program,
        format!(
            "type Answer {{\n  ok: boolean\n}}\n\
             tool Get {{\n  description \"answers at once\"\n  param i: integer\n  \
             http get \"{}/items/{{i}}\"\n  result Answer\n}}\n\
             contract Burst {{\n  input items: array<integer>\n  \
             compute out = for i in items: Get(i)\n  output out\n}}\n",
            server.uri()
        ),
    )
    .expect("program written");
    let items: Vec<usize> = (0..CALLS).collect();
    let items = format!("items={}", serde_json::to_string(&items).expect("json"));
    let jobs = CALLS.to_string();
    let mut ignite = Command::new(&binary);
    ignite.arg("run").arg(&program).args(["--input", &items, "--jobs", &jobs]);
    let glob = format!("{}/items/[0-{}]", server.uri(), CALLS - 1);
    let mut curl = Command::new("curl");
    curl.args([
        "--silent",
        "--no-progress-meter",
        "--fail",
        "--parallel",
        "--parallel-max",
        &jobs,
        "-o",
        "/dev/null",
    ]);
    curl.arg(&glob);
    // One untimed round each: the page cache and the server warm up.
    time(&mut ignite);
    time(&mut curl);
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        ours.push(time(&mut ignite));
        theirs.push(time(&mut curl));
    }
    let (ours, theirs) = (median(ours), median(theirs));
    println!("| {CALLS} `http get` calls at once | median wall ({ROUNDS} rounds) |");
    println!("| --- | ---: |");
    println!("| `ignite run` (`--jobs {CALLS}`) | {:.1} ms |", ms(ours));
    println!("| `curl -Z --parallel-max {CALLS}` | {:.1} ms |", ms(theirs));
    println!("| ratio | **{:.2}×** |", ours.as_secs_f64() / theirs.as_secs_f64());
    drop(server);
}

/// Runs `command` to its end, its output thrown away; how long it took.
fn time(command: &mut Command) -> Duration {
    let start = Instant::now();
    let status = command
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .expect("the command starts");
    let took = start.elapsed();
    assert!(status.success(), "{command:?} failed");
    took
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
