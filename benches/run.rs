//! Runtime benchmarks: scheduler overhead per node and the overlap of
//! waiting nodes. `cargo bench --bench run`; figures go to BENCHMARKS.md.
//!
//! - chain: 10,000 `compute` nodes, each adding 1 to the previous;
//! - fan-out: 10,000 independent `compute` nodes reading one input;
//! - http fan-out: 64 `http get` tool nodes against a local server that
//!   answers after 200 ms (critical path: 200 ms);
//! - exec fan-out: 16 `exec` tool nodes that each sleep 200 ms;
//! - agent fan-out: 8 agent nodes against a local OpenAI-format server
//!   that answers in 300 ms (critical path: 300 ms).
//!
//! Parse and check are excluded: each program is compiled once and run
//! several times; the median run is reported.

#![allow(clippy::print_stdout, missing_docs)]

mod server;
mod support;

/// mimalloc, as the `ignite` binary uses: with the system allocator the
/// checked program's expressions land among the freed syntax tree's
/// chunks, and a wide fan-out evaluates them out of cache (BENCHMARKS.md,
/// "run").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fmt::Write as _;
use std::time::Duration;

use igniter::runtime::RunOptions;
use serde_json::{Map, Value};
use support::{engine, median_run};

fn main() {
    let nodes = 10_000;
    let mut chain = String::from("contract Chain {\n  input x: integer\n  compute n0 = x + 1\n");
    for i in 1..nodes {
        let _ = writeln!(chain, "  compute n{i} = n{} + 1", i - 1);
    }
    let _ = writeln!(chain, "  output n{}\n}}", nodes - 1);
    let mut fan = String::from("contract Fan {\n  input x: integer\n");
    for i in 0..nodes {
        let _ = writeln!(fan, "  compute f{i} = x * {i} + 1");
    }
    for i in 0..nodes {
        let _ = writeln!(fan, "  output f{i}");
    }
    fan.push_str("}\n");
    println!("| benchmark | nodes | median run | per node |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, text) in [("chain", chain), ("fan-out", fan)] {
        let median = median_of(&text, 15);
        let per_node = median.as_secs_f64() * 1e9 / f64::from(nodes);
        println!("| {name} | {nodes} | {:.2} ms | {per_node:.0} ns |", median.as_secs_f64() * 1e3);
    }
    io_fan_outs();
}

fn median_of(text: &str, runs: usize) -> Duration {
    let inputs: Map<String, Value> = [("x".to_owned(), Value::from(1))].into_iter().collect();
    median_run(&engine(text), &inputs, &RunOptions::default(), runs)
}

fn io_fan_outs() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let server = server::slow_server(&runtime, Duration::from_millis(200));
    let agents_server = runtime.block_on(async {
        let server = wiremock::MockServer::start().await;
        let reply = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]});
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(
                wiremock::ResponseTemplate::new(200).set_body_json(reply).set_delay(Duration::from_millis(300)),
            )
            .mount(&server)
            .await;
        server
    });
    let mut agents = format!(
        "provider Local {{\n  kind openai\n  base_url \"{}/v1\"\n}}\nagent Echo {{\n  provider Local\n  model \"m\"\n  input q: string\n}}\ncontract Agents {{\n  input x: integer\n",
        agents_server.uri()
    );
    for i in 0..8 {
        let _ =
            writeln!(agents, "  compute a{i} = Echo(q: \"question {{x + {i}}}\")\n  output a{i}");
    }
    agents.push_str("}\n");
    let mut http = format!(
        "tool Slow {{\n  description \"answers in 200 ms\"\n  param i: integer\n  http get \"{}/slow\"\n}}\ncontract Http {{\n  input x: integer\n",
        server.uri()
    );
    for i in 0..64 {
        let _ = writeln!(http, "  compute h{i} = Slow(i: x + {i})\n  output h{i}");
    }
    http.push_str("}\n");
    let mut exec = String::from(
        "tool Nap {\n  description \"sleeps 200 ms\"\n  param i: integer\n  exec \"sh\" \"-c\" \"cat > /dev/null; sleep 0.2; echo 1\"\n}\ncontract Exec {\n  input x: integer\n",
    );
    for i in 0..16 {
        let _ = writeln!(exec, "  compute e{i} = Nap(i: x + {i})\n  output e{i}");
    }
    exec.push_str("}\n");
    println!();
    println!("| fan-out | nodes | critical path | median wall | ratio |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let cases = [
        ("http 200 ms", 64, http, 0.2),
        ("exec 200 ms", 16, exec, 0.2),
        ("agents 300 ms", 8, agents, 0.3),
    ];
    for (name, nodes, text, path) in cases {
        let median = median_of(&text, 5);
        let ratio = median.as_secs_f64() / path;
        println!(
            "| {name} | {nodes} | {:.0} ms | {:.0} ms | {ratio:.2}x |",
            path * 1e3,
            median.as_secs_f64() * 1e3
        );
    }
    drop((server, agents_server));
}
