//! `ignite serve` throughput and latency: the release binary serves
//! `contracts/pricing.ign`; 64 connections (one reqwest client each, kept
//! alive) post `Checkout` runs back to back for a fixed time.
//! `cargo bench --bench serve`; figures go to BENCHMARKS.md.
//!
//! The same run called in process (`Engine::run`, one thread) is measured
//! in the same process, so the two figures compare on this machine's load.

#![allow(clippy::print_stdout, missing_docs)]

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use igniter::runtime::{Engine, RunOptions};
use serde_json::{Map, Value, json};

const CONNECTIONS: usize = 64;
const SPELL: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ignite"))
        .args(["serve", "contracts/pricing.ign", "--port", "0", "--max-runs", "64"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ignite starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let base = loop {
        let line = lines.next().expect("an address").expect("text");
        if let Some(address) = line.strip_prefix("listening on ") {
            break address.to_owned();
        }
    };
    let url = format!("{base}/contracts/Checkout");
    let body = json!({"prices": [19.99, 5.5, 12], "discount_pct": 10});

    let started = Instant::now();
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let (url, body) = (url.clone(), body.clone());
            tokio::spawn(async move {
                let client = igniter::http_client::builder().build().expect("an HTTP client");
                let mut latencies = Vec::new();
                while started.elapsed() < SPELL {
                    let sent = Instant::now();
                    let response = client.post(&url).json(&body).send().await.expect("answer");
                    assert_eq!(response.status(), 200);
                    response.bytes().await.expect("body");
                    latencies.push(sent.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("client task"));
    }
    let elapsed = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    let throughput = latencies.len() as f64 / elapsed.as_secs_f64();

    let direct = in_process(&body);
    println!("| measure | value |");
    println!("| --- | ---: |");
    println!(
        "| requests ({CONNECTIONS} connections, {} s) | {} |",
        SPELL.as_secs(),
        latencies.len()
    );
    println!("| throughput | {throughput:.0} req/s |");
    println!("| p50 latency | {:.2} ms |", at(0.50).as_secs_f64() * 1e3);
    println!("| p99 latency | {:.2} ms |", at(0.99).as_secs_f64() * 1e3);
    println!("| in-process `Engine::run`, one thread | {:.0} runs/s |", direct);
}

/// Runs per second of the same contract called in process on one thread.
fn in_process(body: &Value) -> f64 {
    let compilation = igniter::compile(std::path::Path::new("contracts/pricing.ign"));
    let engine = Engine::new(compilation.program.expect("pricing compiles"));
    let contract = engine.contract(Some("Checkout")).expect("Checkout");
    let inputs: Map<String, Value> = body.as_object().cloned().expect("an object");
    let options = RunOptions::default();
    let started = Instant::now();
    let mut runs = 0_u32;
    while started.elapsed() < Duration::from_secs(3) {
        engine.run(contract, &inputs, &options).expect("the run succeeds");
        runs += 1;
    }
    f64::from(runs) / started.elapsed().as_secs_f64()
}
