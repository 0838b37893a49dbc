//! How long `ignite test` takes on 1,000 test blocks over a small
//! contract, process start included.
//!
//! The generated file holds one contract (an `exec` tool node, a guard, a
//! few pure nodes, three outputs) and 1,000 tests: each runs the contract
//! with its own input, mocks the tool for its arguments and checks two
//! `expect`s; every tenth also compares a snapshot and every twentieth
//! expects an error instead. Snapshots are written once with `--update`,
//! then the release binary is timed over several runs (min and median).
//!
//! Run with `cargo build --release && cargo bench --bench testing`; when
//! `target/release/ignite` is missing it is built first.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod binary;

use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

const TESTS: usize = 1_000;
const RUNS: usize = 10;

fn main() {
    let binary = binary::release_binary();
    let dir = std::env::temp_dir().join(format!("ignite-bench-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("shop.ign");
    std::fs::write(&file, generate()).unwrap();
    let update = Command::new(&binary).arg("test").arg(&file).arg("--update").output().unwrap();
    assert!(update.status.success(), "{}", String::from_utf8_lossy(&update.stdout));
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            let output = Command::new(&binary).arg("test").arg(&file).output().unwrap();
            let elapsed = started.elapsed();
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(stdout.ends_with(&format!("{TESTS} passed, 0 failed\n")), "{stdout}");
            elapsed
        })
        .collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("| tests | min | median | runs |");
    println!("| ---: | ---: | ---: | ---: |");
    println!("| {TESTS} | {:.1} ms | {:.1} ms | {RUNS} |", ms(times[0]), ms(times[RUNS / 2]));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn generate() -> String {
    let mut text = String::from(
        r#"tool Lookup {
  description "Look up a product"
  param sku: string "SKU"
  exec "sh" "-c" "echo must-not-run >&2; exit 1"
}

contract Price {
  input sku: string
  input qty: integer = 1
  compute product = Lookup(sku: sku)
  guard in_stock = product.stock >= qty else "only {product.stock} of {sku} in stock"
  compute subtotal = product.price * qty
  compute tax = round(subtotal * 0.2, 2)
  compute label = "{upper(product.name)} x{qty}"
  output subtotal
  output tax
  output label
}
"#,
    );
    for i in 0..TESTS {
        let _ = write!(
            text,
            "\ntest \"order {i}\" {{\n  run Price(sku: \"S{i}\", qty: {qty})\n  mock Lookup(sku: \"S{i}\") returns {{name: \"item {i}\", price: {i}.5, stock: {stock}}}\n",
            qty = i % 5 + 1,
            stock = if i % 20 == 0 { 0 } else { 10 },
        );
        if i % 20 == 0 {
            text.push_str("  expect_error \"in stock\"\n}\n");
            continue;
        }
        let _ = writeln!(text, "  expect subtotal == {i}.5 * {}", i % 5 + 1);
        let _ = writeln!(text, "  expect starts_with(label, \"ITEM {i} \")");
        if i % 10 == 0 {
            text.push_str("  snapshot\n");
        }
        text.push_str("}\n");
    }
    text
}
