//! Peak memory of `ignite run` on programs whose nodes nest earlier values.
//!
//! Generates, into a temporary folder, a chain of N `compute` nodes where
//! each holds the node before it once: in a record (`{prev: n, v: 4}`), in
//! an array (`[n, 5, "item"]`), in the records a `for` body builds, and
//! through an index (`{first: n[0], k: 7}`). Copying each value into the
//! next one costs memory quadratic in N; sharing costs O(1) per node. Runs
//! the release binary once per size and prints the wall time and the peak
//! resident memory (`wait4`'s `ru_maxrss`) of the child.
//!
//! Run with `cargo build --release && cargo bench --bench values`.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod binary;
mod peak;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let binary = binary::release_binary();
    let dir = std::env::temp_dir().join(format!("ignite-values-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!("| nodes | program | wall | peak memory |");
    println!("| ---: | ---: | ---: | ---: |");
    for nodes in [3_400, 6_800] {
        let file = dir.join("nested.ign");
        let text = nested(nodes);
        std::fs::write(&file, &text).unwrap();
        let (wall, peak) = measure(&binary, &file);
        println!(
            "| {nodes} | {} KB | {:.2} s | {:.1} MB |",
            text.len() / 1000,
            wall.as_secs_f64(),
            peak as f64 / (1024.0 * 1024.0)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A contract of `nodes` nodes, each nesting the one before it once.
fn nested(nodes: usize) -> String {
    let mut text = String::from("contract Nest {\n  input x: integer\n  compute n0 = {v: x}\n");
    for k in 1..nodes {
        let p = k - 1;
        let _ = match k % 4 {
            0 => writeln!(text, "  compute n{k} = {{prev: n{p}, v: {k}}}"),
            1 => writeln!(text, "  compute n{k} = [n{p}, {k}, \"item\"]"),
            2 => writeln!(text, "  compute n{k} = for i in [{k}]: {{i: i, prev: n{p}}}"),
            _ => writeln!(text, "  compute n{k} = {{first: n{p}[0], k: {k}}}"),
        };
    }
    let _ = writeln!(text, "  compute size = len(n{})\n  output size\n}}", nodes - 1);
    text
}

/// Wall time and peak resident bytes of `ignite run file --input x=1`.
fn measure(binary: &Path, file: &Path) -> (Duration, usize) {
    let start = Instant::now();
    let peak = peak::peak_rss(binary, &["run", "--input", "x=1"], file);
    (start.elapsed(), peak)
}
