//! `ignite check` on hostile programs: time grows linearly with the input.
//!
//! Generates, into a temporary folder, files of N broken declarations
//! (2,000 and 8,000: every declaration reports a syntax error), one line
//! of 10,000,000 operators, and a 4,000-deep `else if` chain, and times
//! the release binary on each (best of 3), printing the 8k/2k ratio.
//!
//! Run with `cargo build --release && cargo bench --bench hostile`.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod binary;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let binary = binary::release_binary();
    let dir = std::env::temp_dir().join(format!("ignite-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("broken declarations ×2,000", broken(2_000)),
        ("broken declarations ×8,000", broken(8_000)),
        ("one line of 10,000,000 operators", operators(10_000_000)),
        ("`else if` chain 4,000 deep", else_ifs(4_000)),
    ];
    let mut times = Vec::new();
    for (name, text) in cases {
        let file = dir.join("case.ign");
        std::fs::write(&file, text).unwrap();
        let best = (0..3).map(|_| time(&binary, &file)).min().unwrap();
        println!("{name:<36} {:>10.1} ms", best.as_secs_f64() * 1000.0);
        times.push(best);
    }
    println!(
        "8k/2k broken ratio: {:.1} (linear: 4)",
        times[1].as_secs_f64() / times[0].as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Wall time of `ignite check file`, which must report errors (exit 1).
fn time(binary: &Path, file: &Path) -> Duration {
    let start = Instant::now();
    let output = Command::new(binary).arg("check").arg(file).output().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    elapsed
}

fn broken(n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let _ = write!(
            out,
            "contract C{i} {{\n  input a: integer\n  compute b = a +\n  output b\n}}\n"
        );
    }
    out
}

fn operators(n: usize) -> String {
    format!(
        "contract C {{\n  input a: integer\n  compute b = a{}\n  output b\n}}\n",
        " + a".repeat(n)
    )
}

fn else_ifs(n: usize) -> String {
    let mut out = String::from("contract C {\n  input a: integer\n  compute b = ");
    for i in 0..n {
        let _ = write!(out, "if a == {i} then {i}\n    else ");
    }
    out.push_str("0\n  output b\n}\n");
    out
}
