//! Control-flow benchmarks. `cargo bench --bench control`; figures go to
//! BENCHMARKS.md.
//!
//! - pure `for`: `for x in items: x * 2 + 1`, `for x in items:
//!   upper(x.name)`, and `matches` against `starts_with` on the names (a
//!   pattern is compiled once, not per item) over 100,000 items, against a
//!   baseline run of the same contract with `compute out = 1` (binding and dropping the input cost
//!   the same in both): the difference per item is the `for`'s cost (the
//!   loop and its result array, output included); the whole run per item is
//!   given too;
//! - `for` of `http get` calls: 1,000 items against a local server that
//!   answers each request after 50 ms, with `--jobs 100` (ideal: 10 waves
//!   of 50 ms = 500 ms).
//!
//! Each program is compiled once and run several times; the median run is
//! reported.

#![allow(clippy::print_stdout, clippy::expect_used, missing_docs)]

mod server;
mod support;

use std::time::Duration;

use igniter::runtime::RunOptions;
use serde_json::{Map, Value};
use support::{engine, median_run};

fn main() {
    let items = 100_000;
    let numbers: Vec<Value> = (0..items).map(Value::from).collect();
    let products: Vec<Value> = (0..items)
        .map(|i| serde_json::json!({"name": format!("product {i}"), "stock": i % 7}))
        .collect();
    println!("| case | items | median run | baseline run | `for` per item | run per item |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let cases = [
        ("x * 2 + 1", Value::Array(numbers)),
        ("upper(x.name)", Value::Array(products.clone())),
        ("matches(x.name, \"^product [0-9]*7$\")", Value::Array(products.clone())),
        ("starts_with(x.name, \"product 7\")", Value::Array(products)),
    ];
    for (body, value) in cases {
        let inputs: Map<String, Value> = [("items".to_owned(), value)].into_iter().collect();
        let contract = |expr: &str| {
            format!(
                "contract F {{\n  input items: array\n  compute out = {expr}\n  output out\n}}\n"
            )
        };
        let options = RunOptions::default();
        let run = median_run(
            &engine(&contract(&format!("for x in items: {body}"))),
            &inputs,
            &options,
            11,
        );
        let base = median_run(&engine(&contract("1")), &inputs, &options, 11);
        let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(items);
        println!(
            "| `for x in items: {body}` | {items} | {:.1} ms | {:.1} ms | {:.3} µs | {:.3} µs |",
            run.as_secs_f64() * 1e3,
            base.as_secs_f64() * 1e3,
            per(run.saturating_sub(base)),
            per(run)
        );
    }
    http_collection();
}

fn http_collection() {
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let server = server::slow_server(&runtime, Duration::from_millis(50));
    let text = format!(
        "tool Slow {{\n  description \"answers in 50 ms\"\n  param i: integer\n  http get \"{}/slow\"\n}}\ncontract Many {{\n  input items: array<integer>\n  compute out = for i in items: Slow(i)\n  output out\n}}\n",
        server.uri()
    );
    let items: Vec<Value> = (0..1000).map(Value::from).collect();
    let inputs: Map<String, Value> =
        [("items".to_owned(), Value::Array(items))].into_iter().collect();
    let options = RunOptions { jobs: Some(100), ..RunOptions::default() };
    let median = median_run(&engine(&text), &inputs, &options, 5);
    println!();
    println!("| case | calls | --jobs | ideal | median wall | ratio |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| `for` of `http get`, server answering in 50 ms | 1000 | 100 | 500 ms | {:.0} ms | {:.2}x |",
        median.as_secs_f64() * 1e3,
        median.as_secs_f64() / 0.5
    );
    drop(server);
}
