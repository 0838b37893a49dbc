//! Effects-seam benchmarks. `cargo bench --bench effects`; figures go to
//! BENCHMARKS.md.
//!
//! - journal: a contract of 1,000 fast tool calls, run live and with
//!   `--journal`'s store (one appended line per call), alternating in one
//!   process on a noisy shared machine: compare the ratio, not the times.
//!   Twice: in-process `returns` tools (a few µs a call; 101 rounds, also
//!   the median of each round's own ratio), then `exec "cat"` tools (a
//!   real child process a call, 8 at once).
//! - the journal on real effects: live and journaled runs of 1,000 `exec`
//!   calls (a child process each), 1,000 `http` calls to a local server and
//!   500 model calls to a local fake OpenAI server, 8 at once; the journal
//!   is created, written and finished inside the timing.
//! - one journal line: `record` alone, the mean over a new journal's first
//!   1,000 lines (page faults of the new file included).
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
use igniter::runtime::{Engine, RunOptions};
use igniter::telemetry::Span;
use serde_json::{Map, Value, json};
use support::{engine, median_run};

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    journal(dir.path(), "returns n + 1", None, 101);
    journal(dir.path(), "exec \"cat\"", Some(8), 5);
    journal_files(dir.path());
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
            plain.push(timed_run(&live, &inputs, &options));
            journaled.push(timed_run(&with, &inputs, &options));
        } else {
            journaled.push(timed_run(&with, &inputs, &options));
            plain.push(timed_run(&live, &inputs, &options));
        }
    }
    println!("`{body}`, median of {rounds} rounds:");
    println!("| {calls} tool calls | live | journaled | ratio | ratio within a round |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (what, time) in [("wall time", 0), ("CPU time (all threads)", 1)] {
        let time = |runs: &[[Duration; 2]]| runs.iter().map(|run| run[time]).collect::<Vec<_>>();
        let (live, with) = (time(&plain), time(&journaled));
        // The two runs of a round saw the same load: their ratio is the
        // steadier figure on a shared machine.
        let paired: Vec<f64> =
            live.iter().zip(&with).map(|(l, j)| j.as_secs_f64() / l.as_secs_f64()).collect();
        let (live, with, paired) = (median(live), median(with), median(paired));
        println!(
            "| {what} | {:.2} ms | {:.2} ms | {:.2} | {paired:.2} |",
            ms(live),
            ms(with),
            with.as_secs_f64() / live.as_secs_f64(),
        );
        println!(
            "| {what} per call | {:.2} µs | {:.2} µs | journal: {:.2} µs a call | |",
            us(live) / f64::from(calls),
            us(with) / f64::from(calls),
            (us(with) - us(live)) / f64::from(calls)
        );
    }
}

/// One run's wall time and the CPU time the process used meanwhile (all
/// threads, user and system): the CPU time is what other processes on a
/// shared machine do not change.
fn timed_run(engine: &Engine, inputs: &Map<String, Value>, options: &RunOptions) -> [Duration; 2] {
    let contract = engine.contract(None).expect("one contract");
    let (wall, cpu) = (Instant::now(), cpu_time());
    engine.run(contract, inputs, options).expect("benchmark runs");
    [wall.elapsed(), cpu_time() - cpu]
}

/// Live runs against journaled ones on effects that do real work.
fn journal_files(dir: &std::path::Path) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let (http, model) = runtime.block_on(async {
        let http = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(
                wiremock::ResponseTemplate::new(200).set_body_json(json!({"ok": true, "n": 7})),
            )
            .mount(&http)
            .await;
        let model = wiremock::MockServer::start().await;
        let reply = json!({"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]});
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(reply))
            .mount(&model)
            .await;
        (http, model)
    });
    let many = |head: String, call: &str, calls: usize| {
        let mut text = format!("{head}\ncontract Many {{\n  input x: integer\n");
        for i in 0..calls {
            let _ = writeln!(
                text,
                "  compute c{i} = {}\n  output c{i}",
                call.replace('#', &i.to_string())
            );
        }
        text.push_str("}\n");
        text
    };
    let cases = [
        (
            "1,000 `exec \"cat\"` calls",
            many(
                "tool Step {\n  param n: integer\n  exec \"cat\"\n}".to_owned(),
                "Step(n: x + #)",
                1_000,
            ),
        ),
        (
            "1,000 `http get` calls",
            many(
                format!(
                    "tool Get {{\n  param n: integer\n  http get \"{}/items/{{n}}\"\n}}",
                    http.uri()
                ),
                "Get(n: x + #)",
                1_000,
            ),
        ),
        (
            "500 model calls",
            many(
                format!(
                    "provider Local {{\n  kind openai\n  base_url \"{}/v1\"\n}}\nagent Echo {{\n  provider Local\n  model \"m\"\n  input q: string\n}}",
                    model.uri()
                ),
                "Echo(q: \"question {x + #}\")",
                500,
            ),
        ),
    ];
    let inputs: Map<String, Value> = [("x".to_owned(), Value::from(1))].into_iter().collect();
    let options = RunOptions { jobs: Some(8), ..RunOptions::default() };
    let rounds = 9;
    println!();
    println!(
        "The journal on real effects, 8 at once, median of {rounds} rounds (ratios: median of each round's own):"
    );
    println!("| effects | live | journaled | ratio | CPU ratio |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (what, text) in cases {
        let live = engine(&text);
        median_run(&live, &inputs, &options, 1);
        let mut times: [Vec<[Duration; 2]>; 2] = Default::default();
        for round in 0..rounds {
            // Which goes first alternates.
            for way in (0..2).map(|i| (i + round) % 2) {
                let runs = dir.join(format!("files-{round}-{way}"));
                times[way].push(timed(|| {
                    if way == 0 {
                        let contract = live.contract(None).expect("one contract");
                        live.run(contract, &inputs, &options).expect("benchmark runs");
                        return;
                    }
                    let (store, _) =
                        Recording::journal(&runs, RunHeader::default()).expect("journal");
                    let with = live.sibling(Effects::live().with(Arc::new(store)));
                    let contract = with.contract(None).expect("one contract");
                    with.run(contract, &inputs, &options).expect("benchmark runs");
                    with.effects().finish().expect("finished");
                }));
            }
        }
        let ratio = |a: usize, b: usize, time: usize| {
            median(
                times[a]
                    .iter()
                    .zip(&times[b])
                    .map(|(x, y)| x[time].as_secs_f64() / y[time].as_secs_f64())
                    .collect(),
            )
        };
        let wall = |way: usize| median(times[way].iter().map(|t| t[0]).collect());
        println!(
            "| {what} | {:.1} ms | {:.1} ms | {:.3} | {:.3} |",
            ms(wall(0)),
            ms(wall(1)),
            ratio(1, 0, 0),
            ratio(1, 0, 1),
        );
    }
}

/// The wall time of `run` and the CPU time the process used meanwhile.
fn timed(run: impl FnOnce()) -> [Duration; 2] {
    let (wall, cpu) = (Instant::now(), cpu_time());
    run();
    [wall.elapsed(), cpu_time() - cpu]
}

fn cpu_time() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `clock_gettime` writes the time into `now`, ours.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &raw mut now) };
    Duration::new(now.tv_sec.try_into().unwrap_or(0), now.tv_nsec.try_into().unwrap_or(0))
}

fn median<T: PartialOrd + Copy>(mut values: Vec<T>) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    values[values.len() / 2]
}

/// One journal line on its own: `EffectStore::record` of a tool call's
/// outcome, as the runtime calls it. The mean over the first 1,000 lines
/// of a new journal (so the page faults of a new file count), the median
/// of 21 journals.
fn append(dir: &std::path::Path) {
    let (request, outcome) = (json!({"n": 2}), Outcome::Value(json!(3)));
    let mut means: Vec<Duration> = (0..21)
        .map(|round| {
            let runs = dir.join(format!("append{round}"));
            let (store, _) = Recording::journal(&runs, RunHeader::default()).expect("journal");
            let scope = Scope::new(Effects::live(), "Many > c1");
            let keys: Vec<_> = (0..1_000).map(|_| scope.next_key()).collect();
            let started = Instant::now();
            for key in &keys {
                let effect = Effect {
                    key,
                    kind: EffectKind::Tool,
                    name: "Step",
                    route: "",
                    request: &request,
                    definition: None,
                    cache: None,
                    work: None,
                    media: &[],
                };
                store.record(&effect, &outcome).expect("appended");
            }
            started.elapsed() / 1_000
        })
        .collect();
    means.sort();
    println!(
        "| one journal line (`record`, mean of a new journal's first 1,000, median of 21) | | {:.2} µs | |",
        us(means[10])
    );
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
            definition: Some("agent Ask { ... }"),
            cache: Some(CachePolicy { ttl: None }),
            work: None,
            media: &[],
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
