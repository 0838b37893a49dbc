//! Bursts: 512 `http get` tool calls at once against a local server that
//! answers at once, `ignite run` against `curl -Z` fetching the same 512
//! URLs. `cargo bench --bench burst [-- OTHER_IGNITE...]`; figures go to
//! BENCHMARKS.md.
//!
//! The server is a process of its own (`instant`: one thread, keep-alive),
//! so its work shares the cores with the measured commands but is not
//! counted as theirs. The commands are whole processes timed from outside
//! and alternated (ignite, curl, ignite, ...), so a busy moment of the
//! shared machine costs every side; for each, the medians of its wall time,
//! its CPU time (user + system, all threads) and its minor page faults, and
//! their ratios to curl's, are printed. Other `ignite` binaries named on
//! the command line join the alternation (an A/B of two builds in one run).
//!
//! ignite runs `for i in items: Get(i)` over 512 items with `--jobs 512`
//! (each call is one node: the tool's arguments validated, the URL built,
//! the request, the JSON answer parsed and checked against `result`); curl
//! fetches `/items/0` ... `/items/511` with `--parallel --parallel-max 512`,
//! writing the bodies to `/dev/null`. ignite's side includes what curl's
//! does not: compiling the program and printing the 512 answers.

#![allow(clippy::print_stdout, missing_docs)]

mod binary;
mod instant;
mod peak;

use std::process::Command;
use std::time::Duration;

use peak::Usage;

const CALLS: usize = 512;
const ROUNDS: usize = 41;

fn main() {
    instant::serve_if_asked();
    let binary = binary::release_binary();
    let others = std::env::args().skip(1).filter(|arg| !arg.starts_with('-'));
    let dir = tempfile::tempdir().expect("temp dir");
    let server = instant::Server::start();
    let program = dir.path().join("burst.ign");
    std::fs::write(
        &program,
        format!(
            "type Answer {{\n  ok: boolean\n}}\n\
             tool Get {{\n  description \"answers at once\"\n  param i: integer\n  \
             http get \"{}/items/{{i}}\"\n  result Answer\n}}\n\
             contract Burst {{\n  input items: array<integer>\n  \
             compute out = for i in items: Get(i)\n  output out\n}}\n",
            server.uri
        ),
    )
    .expect("program written");
    let items: Vec<usize> = (0..CALLS).collect();
    let items = format!("items={}", serde_json::to_string(&items).expect("json"));
    let jobs = CALLS.to_string();
    let mut sides: Vec<(String, Command)> = std::iter::once(binary.display().to_string())
        .chain(others)
        .map(|ignite| {
            let mut command = Command::new(&ignite);
            command.arg("run").arg(&program).args(["--input", &items, "--jobs", &jobs]);
            (format!("`{ignite} run` (`--jobs {CALLS}`)"), command)
        })
        .collect();
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
    curl.arg(format!("{}/items/[0-{}]", server.uri, CALLS - 1));
    sides.push((format!("`curl -Z --parallel-max {CALLS}`"), curl));
    // One untimed round: the page cache and the server warm up.
    for (_, command) in &mut sides {
        peak::usage_of(command);
    }
    let mut runs = vec![Vec::new(); sides.len()];
    for _ in 0..ROUNDS {
        for ((_, command), runs) in sides.iter_mut().zip(&mut runs) {
            runs.push(peak::usage_of(command));
        }
    }
    let medians: Vec<Usage> = runs.into_iter().map(median).collect();
    let curl = medians[medians.len() - 1];
    println!(
        "| {CALLS} `http get` calls at once, medians of {ROUNDS} rounds | wall | CPU | faults \
         | wall / curl | CPU / curl | faults / curl |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for ((name, _), usage) in sides.iter().zip(&medians) {
        println!(
            "| {name} | {:.1} ms | {:.1} ms | {} | {:.2}× | {:.2}× | {:.2}× |",
            ms(usage.wall),
            ms(usage.cpu),
            usage.faults,
            usage.wall.as_secs_f64() / curl.wall.as_secs_f64(),
            usage.cpu.as_secs_f64() / curl.cpu.as_secs_f64(),
            usage.faults as f64 / curl.faults as f64,
        );
    }
}

/// Each figure's median over the runs of one side.
fn median(mut runs: Vec<Usage>) -> Usage {
    let middle = runs.len() / 2;
    let mut of = |key: fn(&Usage) -> u128| {
        runs.sort_by_key(key);
        runs[middle]
    };
    Usage {
        wall: of(|u| u.wall.as_nanos()).wall,
        cpu: of(|u| u.cpu.as_nanos()).cpu,
        faults: of(|u| u128::from(u.faults)).faults,
        peak: of(|u| u.peak as u128).peak,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
