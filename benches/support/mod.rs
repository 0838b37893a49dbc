//! What the runtime benchmarks share: compiling a program once and the
//! median of several runs.

use std::time::{Duration, Instant};

use igniter::runtime::{Engine, RunOptions};
use serde_json::{Map, Value};

/// An engine for `text`, which must compile.
pub(crate) fn engine(text: &str) -> Engine {
    let compilation = igniter::compile_source("bench.ign", text);
    Engine::new(compilation.program.expect("benchmark program compiles"))
}

/// The median wall time of `runs` runs of the engine's one contract.
pub(crate) fn median_run(
    engine: &Engine,
    inputs: &Map<String, Value>,
    options: &RunOptions,
    runs: usize,
) -> Duration {
    let contract = engine.contract(None).expect("one contract");
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            engine.run(contract, inputs, options).expect("benchmark runs");
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}
