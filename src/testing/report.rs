//! Reports of a test run: the human listing, JSON and JUnit XML. Pure:
//! each returns the text, the command line prints it.
//!
//! Human: one line per test (`ok` or `FAIL`, file, name), each failure's
//! details indented under its line, unused snapshots, and `N passed, M
//! failed` last. JSON: one object with every test, its status, duration
//! and failures. JUnit: `<testsuites>` with one `<testsuite>` per file and
//! one `<testcase>` per test, a `<failure>` per failed test.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Failure, TestResult};
use crate::markup::escape;

/// Everything a report shows.
#[derive(Debug, Clone, Default)]
pub(crate) struct Report {
    /// Test results in file and declaration order.
    pub results: Vec<TestResult>,
    /// Files whose tests could not run (they do not compile), with why.
    pub broken: Vec<(PathBuf, String)>,
    /// Snapshot files that no test uses.
    pub unused: Vec<PathBuf>,
}

impl Report {
    /// Passed tests.
    #[must_use]
    pub(crate) fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.passed()).count()
    }

    /// Failed tests, and files whose tests could not run.
    #[must_use]
    pub(crate) fn failed(&self) -> usize {
        self.results.len() - self.passed() + self.broken.len()
    }

    /// The closing line.
    #[must_use]
    pub(crate) fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed(), self.failed())
    }

    /// The human listing.
    #[must_use]
    pub(crate) fn human(&self) -> String {
        let mut out = String::new();
        for (file, why) in &self.broken {
            let _ = writeln!(out, "FAIL {}: {why}", file.display());
        }
        for result in &self.results {
            let status = if result.passed() { "ok  " } else { "FAIL" };
            let _ = write!(out, "{status} {}: {}", result.file.display(), result.name);
            if let Some(path) = &result.wrote {
                let _ = write!(out, " (wrote {})", path.display());
            }
            out.push('\n');
            for line in result.failures.iter().flat_map(Failure::lines) {
                let _ = writeln!(out, "     {line}");
            }
        }
        for path in &self.unused {
            let _ = writeln!(out, "unused snapshot {} (no test writes it)", path.display());
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    /// The JSON report.
    #[must_use]
    pub(crate) fn json(&self) -> Value {
        let tests: Vec<Value> = self
            .results
            .iter()
            .map(|r| {
                json!({
                    "file": r.file.display().to_string(),
                    "name": r.name,
                    "line": r.line,
                    "status": if r.passed() { "passed" } else { "failed" },
                    "duration_ms": millis(r.duration),
                    "failures": r.failures.iter().map(|f| json!({
                        "message": f.summary(),
                        "details": f.lines(),
                    })).collect::<Vec<_>>(),
                    "snapshot_written": r.wrote.as_ref().map(|p| p.display().to_string()),
                })
            })
            .collect();
        let broken: Vec<Value> = self
            .broken
            .iter()
            .map(|(file, why)| json!({"file": file.display().to_string(), "message": why}))
            .collect();
        let unused: Vec<String> = self.unused.iter().map(|p| p.display().to_string()).collect();
        json!({
            "passed": self.passed(),
            "failed": self.failed(),
            "tests": tests,
            "broken_files": broken,
            "unused_snapshots": unused,
        })
    }

    /// The JUnit XML report.
    #[must_use]
    pub(crate) fn junit(&self) -> String {
        let mut files: Vec<(String, Vec<&TestResult>)> = Vec::new();
        for result in &self.results {
            let file = result.file.display().to_string();
            match files.iter_mut().find(|(f, _)| *f == file) {
                Some((_, results)) => results.push(result),
                None => files.push((file, vec![result])),
            }
        }
        let total: Duration = self.results.iter().map(|r| r.duration).sum();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"ignite\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">",
            self.results.len() + self.broken.len(),
            self.results.len() - self.passed(),
            self.broken.len(),
            seconds(total)
        );
        for (file, why) in &self.broken {
            let file = escape(&file.display().to_string());
            let _ = writeln!(
                out,
                "  <testsuite name=\"{file}\" tests=\"1\" failures=\"0\" errors=\"1\">"
            );
            let _ = writeln!(out, "    <testcase name=\"{file}\" classname=\"{file}\">");
            let _ = writeln!(out, "      <error message=\"{}\"/>", escape(why));
            out.push_str("    </testcase>\n  </testsuite>\n");
        }
        for (file, results) in &files {
            let failed = results.iter().filter(|r| !r.passed()).count();
            let time: Duration = results.iter().map(|r| r.duration).sum();
            let file = escape(file);
            let _ = writeln!(
                out,
                "  <testsuite name=\"{file}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" time=\"{}\">",
                results.len(),
                seconds(time)
            );
            for result in results {
                let _ = write!(
                    out,
                    "    <testcase name=\"{}\" classname=\"{file}\" time=\"{}\"",
                    escape(&result.name),
                    seconds(result.duration)
                );
                if result.passed() {
                    out.push_str("/>\n");
                    continue;
                }
                out.push_str(">\n");
                for failure in &result.failures {
                    let _ = writeln!(
                        out,
                        "      <failure message=\"{}\">{}</failure>",
                        escape(&failure.summary()),
                        escape(&failure.lines().join("\n")).replace("&#10;", "\n")
                    );
                }
                out.push_str("    </testcase>\n");
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn seconds(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}
