//! `ignite check` on hostile programs: time grows linearly with the input.
//!
//! Generates, into a temporary folder, programs that once took quadratic
//! time, each at 2,000 and 8,000 declarations or nodes, and prints the
//! 8k/2k ratio (linear: 4): broken declarations (every one a syntax
//! error), a chain of nodes each nesting the previous one in a list (its
//! static type one level deeper each time), and `for` nodes; and `ignite
//! run` of a chain of contracts each composing the last. Then one line of
//! 10,000,000 operators and a 4,000-deep `else if` chain (both refused
//! before parsing). Times the release binary on each, best of 3.
//!
//! Run with `cargo build --release && cargo bench --bench hostile`.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod binary;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A generator of a program with `n` declarations or nodes, the command
/// after the file, and the exit code it must give.
type Case = (&'static str, fn(usize) -> String, &'static [&'static str], i32);

const CHECK: &[&str] = &[];
const RUN: &[&str] = &["--input", "x=1"];

fn main() {
    let binary = binary::release_binary();
    let dir = std::env::temp_dir().join(format!("ignite-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("case.ign");
    let best = |text: String, run: &[&str], code: i32| {
        std::fs::write(&file, text).unwrap();
        (0..3).map(|_| time(&binary, &file, run, code)).min().unwrap()
    };
    let scaled: [Case; 4] = [
        ("broken declarations", broken, CHECK, 1),
        ("nodes nesting lists", nested_lists, CHECK, 0),
        ("`for` nodes", fors, CHECK, 0),
        ("run: compositions", compositions, RUN, 0),
    ];
    for (name, generate, run, code) in scaled {
        let small = best(generate(2_000), run, code);
        let large = best(generate(8_000), run, code);
        println!(
            "{name:<24} ×2,000 {:>9.1} ms   ×8,000 {:>9.1} ms   ratio {:.1} (linear: 4)",
            ms(small),
            ms(large),
            large.as_secs_f64() / small.as_secs_f64()
        );
    }
    let once = [
        ("one line of 10,000,000 operators", operators(10_000_000)),
        ("`else if` chain 4,000 deep", else_ifs(4_000)),
    ];
    for (name, text) in once {
        println!("{name:<36} {:>10.1} ms", ms(best(text, CHECK, 1)));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn ms(time: Duration) -> f64 {
    time.as_secs_f64() * 1000.0
}

/// Wall time of `ignite check file` (`ignite run file ARGS` when `run` has
/// arguments), which must exit with `code`.
fn time(binary: &Path, file: &Path, run: &[&str], code: i32) -> Duration {
    let command = if run.is_empty() { "check" } else { "run" };
    let start = Instant::now();
    let output = Command::new(binary).arg(command).arg(file).args(run).output().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(output.status.code(), Some(code), "{}", String::from_utf8_lossy(&output.stderr));
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

/// `compute l{i} = [l{i-1}]`: each node's static type nests the last.
fn nested_lists(n: usize) -> String {
    let mut out = String::from("contract C {\n  input a: integer\n  compute l0 = [a]\n");
    for i in 1..n {
        let _ = writeln!(out, "  compute l{i} = [l{}]", i - 1);
    }
    let _ = write!(out, "  output l{}\n}}\n", n - 1);
    out
}

/// `compute f{i} = for x in xs: x + i`, every one an output.
fn fors(n: usize) -> String {
    let mut out = String::from("contract C {\n  input xs: array<integer>\n");
    for i in 0..n {
        let _ = writeln!(out, "  compute f{i} = for x in xs: x + {i}\n  output f{i}");
    }
    out.push_str("}\n");
    out
}

/// Contract `C{i}` composes `C{i-1}`: an execution `n` levels deep.
fn compositions(n: usize) -> String {
    let mut out =
        String::from("contract C0 {\n  input x: integer\n  compute y = x + 1\n  output y\n}\n");
    for i in 1..n {
        let _ = write!(
            out,
            "contract C{i} {{\n  input x: integer\n  compose c = C{}(x: x)\n  output c.y as y\n}}\n",
            i - 1
        );
    }
    out
}
