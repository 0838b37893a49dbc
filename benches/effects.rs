//! Effects-seam benchmarks. `cargo bench --bench effects`; figures go to
//! BENCHMARKS.md.
//!
//! - journal: a contract of 1,000 fast tool calls, run live and with
//!   `--journal`'s store (one appended line per call), alternating in one
//!   process on a noisy shared machine: compare the ratio, not the times.
//!   Twice: in-process `returns` tools (a few µs a call), then `exec
//!   "cat"` tools (a real child process a call, 8 at once).
//! - cache hit: one agent-call effect answered by the cache (a warm
//!   `Cache` entry, through the same `Scope::perform` the runtime uses),
//!   median and p90 of 2,000.

#![allow(clippy::print_stdout, missing_docs)]

mod support;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use igniter::effects::{
    Cache, CachePolicy, Effect, EffectKind, EffectStore as _, Effects, Outcome, Recording,
    RunHeader, Scope,
};
use igniter::runtime::RunOptions;
use igniter::telemetry::Span;
use serde_json::{Map, Value, json};
use support::{engine, median_run};

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    journal(dir.path(), "returns n + 1", None, 21);
    journal(dir.path(), "exec \"cat\"", Some(8), 5);
    append(dir.path());
    cache_hit(dir.path());
}

/// Live and journaled runs of 1,000 calls of a tool implemented by
/// `body`, `jobs` at once, alternating for `rounds` rounds.
fn journal(dir: &std::path::Path, body: &str, jobs: Option<usize>, rounds: usize) {
    let calls = 1_000;
    let mut text = format!(
        "tool Step {{\n  param n: integer\n  {body}\n}}\n\ncontract Many {{\n  input x: integer\n"
    );
    for i in 0..calls {
        let _ = writeln!(text, "  compute c{i} = Step(n: x + {i})");
    }
    for i in 0..calls {
        let _ = writeln!(text, "  output c{i}");
    }
    text.push_str("}\n");
    let inputs: Map<String, Value> = [("x".to_owned(), Value::from(1))].into_iter().collect();
    let options = RunOptions { jobs, ..RunOptions::default() };
    let live = engine(&text);
    // Warm the shared I/O runtime, so neither side pays its start.
    median_run(&live, &inputs, &options, 1);
    let (mut plain, mut journaled) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let runs = dir.join(format!("runs{round}"));
        let (store, _) = Recording::journal(&runs, RunHeader::default()).expect("journal");
        let with = live.sibling(Effects::live().with(Arc::new(store)));
        // Which goes first alternates too: the second run of a round finds
        // the allocator and the I/O threads warmer.
        if round % 2 == 0 {
            plain.push(median_run(&live, &inputs, &options, 1));
            journaled.push(median_run(&with, &inputs, &options, 1));
        } else {
            journaled.push(median_run(&with, &inputs, &options, 1));
            plain.push(median_run(&live, &inputs, &options, 1));
        }
    }
    plain.sort();
    journaled.sort();
    let (plain, journaled) = (plain[rounds / 2], journaled[rounds / 2]);
    println!("`{body}`, median of {rounds} rounds:");
    println!("| benchmark | live | journaled | ratio |");
    println!("| --- | ---: | ---: | ---: |");
    println!(
        "| {calls} tool calls | {:.2} ms | {:.2} ms | {:.2} |",
        ms(plain),
        ms(journaled),
        journaled.as_secs_f64() / plain.as_secs_f64()
    );
    println!(
        "| per call | {:.2} µs | {:.2} µs | journal: {:.2} µs a call |",
        us(plain) / f64::from(calls),
        us(journaled) / f64::from(calls),
        (us(journaled) - us(plain)) / f64::from(calls)
    );
}

/// One journal line on its own: `EffectStore::record` of a tool call's
/// outcome, as the runtime calls it (median of 10,000).
fn append(dir: &std::path::Path) {
    let (store, _) =
        Recording::journal(&dir.join("append"), RunHeader::default()).expect("journal");
    let scope = Scope::new(Effects::live(), "Many > c1");
    let (request, outcome) = (json!({"n": 2}), Outcome::Value(json!(3)));
    let mut times: Vec<Duration> = (0..10_000)
        .map(|_| {
            let key = scope.next_key();
            let effect = Effect {
                key: &key,
                kind: EffectKind::Tool,
                name: "Step",
                route: "",
                request: &request,
                cache: None,
                work: None,
            };
            let started = Instant::now();
            store.record(&effect, &outcome).expect("appended");
            started.elapsed()
        })
        .collect();
    times.sort();
    println!("| one journal line (`record`, median of 10,000) | | {:.2} µs | |", us(times[5_000]));
}

fn cache_hit(dir: &std::path::Path) {
    let cache = Effects::live().with(Arc::new(Cache::new(dir.join("cache"))));
    let scope = Scope::new(cache, "Bench > ask");
    let request = json!({
        "chain": [["anthropic", "claude"]],
        "system": "Be brief.",
        "prompt": "What is 2+2?",
        "tools": []
    });
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let ask = |scope: &Scope| {
        let key = scope.next_key();
        let effect = Effect {
            key: &key,
            kind: EffectKind::Agent,
            name: "Ask",
            route: "",
            request: &request,
            cache: Some(CachePolicy { ttl: None, definition: "agent Ask { ... }" }),
            work: None,
        };
        let live = async { Ok::<_, std::convert::Infallible>(Outcome::Value(json!("four"))) };
        let started = Instant::now();
        let answer = runtime.block_on(scope.perform(&effect, &Span::none(), live)).expect("effect");
        let elapsed = started.elapsed();
        assert_eq!(answer, Outcome::Value(json!("four")));
        elapsed
    };
    ask(&scope);
    let mut times: Vec<Duration> = (0..2_000).map(|_| ask(&scope)).collect();
    times.sort();
    println!();
    println!("| benchmark | median | p90 |");
    println!("| --- | ---: | ---: |");
    println!(
        "| agent call answered by the cache | {:.1} µs | {:.1} µs |",
        times[1_000].as_secs_f64() * 1e6,
        times[1_800].as_secs_f64() * 1e6
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
