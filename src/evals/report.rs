//! What `ignite eval` prints and saves: the human summary, JSON (the
//! `--save` document, with the baseline comparison), JUnit XML and
//! Markdown. Pure functions from finished runs to text.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::compare::{Comparison, SAVE_VERSION};
use super::stats::Estimate;
use super::{EvalRun, Scored};
use crate::markup::escape as xml;
use crate::usage::UsageTotals;

/// A finished eval with its comparison with the baseline, if any.
pub(crate) type Outcome = (EvalRun, Option<Comparison>);

/// The `--save` document (and `--format json`): every sample, output,
/// score, usage and latency, each eval's summary and comparison.
#[must_use]
pub(crate) fn document(runs: &[Outcome]) -> Value {
    let evals: Vec<Value> =
        runs.iter().map(|(run, comparison)| eval_json(run, comparison.as_ref())).collect();
    json!({ "ignite_eval": SAVE_VERSION, "evals": evals })
}

fn estimate_json(e: &Estimate) -> Value {
    json!({ "mean": e.mean, "low": e.low, "high": e.high })
}

/// What model calls used: the tokens spent now and those a recording
/// answered for (`--replay`: spent when it was recorded), together and
/// apart, as `tokens`.
fn tokens_json(usage: &UsageTotals) -> Value {
    let ((input, output), (recorded_input, recorded_output)) =
        (usage.tokens(), usage.reused_tokens());
    json!({
        "input": input + recorded_input,
        "output": output + recorded_output,
        "recorded_input": recorded_input,
        "recorded_output": recorded_output,
    })
}

/// The cost of the tokens spent and of those a recording answered for.
fn cost(usage: &UsageTotals) -> Option<f64> {
    match (usage.cost_usd(), usage.reused_cost_usd()) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

fn eval_json(run: &EvalRun, comparison: Option<&Comparison>) -> Value {
    let usage = run.usage();
    let (p50, p95) = run.latency();
    let scores: Vec<Value> = run
        .scores
        .iter()
        .map(|s| {
            let mut v = estimate_json(&s.estimate);
            v["name"] = s.name.clone().into();
            v["kind"] = if s.rate { "rate" } else { "mean" }.into();
            v["failed"] = s.failed.into();
            v
        })
        .collect();
    let samples: Vec<Value> = run
        .samples
        .iter()
        .map(|s| {
            let mut scores = Map::new();
            let mut errors = Map::new();
            for (summary, scored) in run.scores.iter().zip(&s.scores) {
                match scored {
                    Scored::Value(v) => scores.insert(summary.name.clone(), json!(v)),
                    Scored::Failed(why) => {
                        errors.insert(summary.name.clone(), why.clone().into());
                        scores.insert(summary.name.clone(), json!(0.0))
                    }
                };
            }
            json!({
                "line": s.line,
                "id": s.id,
                "sample": s.sample,
                "inputs": s.inputs,
                "expected": s.expected,
                "outputs": s.outputs,
                "error": s.error,
                "scores": scores,
                "score_errors": errors,
                "latency_ms": millis(s.latency),
                "tokens": tokens_json(&s.usage),
                "cost_usd": cost(&s.usage),
            })
        })
        .collect();
    let mut out = json!({
        "name": run.name,
        "contract": run.contract,
        "dataset": run.dataset.display().to_string(),
        "repeat": run.repeat,
        "rows": run.rows(),
        "failures": run.failures(),
        "stopped": run.stopped,
        "passed": run.passed(),
        "scores": scores,
        "requires": run.requires.iter().map(|(text, holds)| json!({"require": text, "holds": holds})).collect::<Vec<_>>(),
        "tokens": tokens_json(&usage),
        "cost_usd": cost(&usage),
        "latency_ms": { "p50": millis(p50), "p95": millis(p95) },
        "samples": samples,
    });
    if let Some(c) = comparison {
        out["baseline"] = comparison_json(c);
    }
    out
}

fn comparison_json(c: &Comparison) -> Value {
    let deltas: Vec<Value> = c
        .deltas
        .iter()
        .map(|d| {
            let worse: Vec<Value> = d
                .worse_samples
                .iter()
                .map(|w| json!({"id": w.id, "sample": w.sample, "before": w.before, "after": w.after}))
                .collect();
            json!({
                "score": d.name,
                "pairs": d.pairs,
                "delta": estimate_json(&d.delta),
                "worse": d.worse,
                "worse_samples": worse,
            })
        })
        .collect();
    json!({ "deltas": deltas, "new_scores": c.new_scores })
}

fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 10.0).round() / 10.0
}

/// The human summary: per eval, each score's mean and interval, counts,
/// usage and latency, the `require`s and the baseline's deltas.
#[must_use]
pub(crate) fn human(runs: &[Outcome]) -> String {
    let mut out = String::new();
    for (run, comparison) in runs {
        let _ = writeln!(
            out,
            "eval `{}`: {} rows × {} samples of `{}`{}",
            run.name,
            run.rows(),
            run.repeat,
            run.contract,
            if run.stopped { " (stopped before the end)" } else { "" }
        );
        let width = run.scores.iter().map(|s| s.name.len()).max().unwrap_or(0);
        for s in &run.scores {
            let failed = if s.failed > 0 {
                format!(", {} failed to score", s.failed)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  {:width$}  {:.3}  [{:.3}, {:.3}]  {}{failed}",
                s.name,
                s.estimate.mean,
                s.estimate.low,
                s.estimate.high,
                if s.rate { "rate" } else { "mean" },
            );
        }
        let usage = run.usage();
        let ((input, output), (old_input, old_output)) = (usage.tokens(), usage.reused_tokens());
        let (p50, p95) = run.latency();
        let cost = cost(&usage).map_or_else(String::new, |c| format!(", ${c:.4}"));
        let recorded = if old_input + old_output > 0 {
            format!(" ({old_input} + {old_output} of them answered by a recording)")
        } else {
            String::new()
        };
        let (input, output) = (input + old_input, output + old_output);
        let _ = writeln!(
            out,
            "  {} samples, {} failed; {input} input + {output} output tokens{cost}{recorded}; latency p50 {:.0} ms, p95 {:.0} ms",
            run.samples.len(),
            run.failures(),
            millis(p50),
            millis(p95),
        );
        for sample in run.samples.iter().filter(|s| s.error.is_some()).take(5) {
            let _ = writeln!(
                out,
                "  failed: row `{}` sample {}: {}",
                sample.id,
                sample.sample,
                sample.error.as_deref().unwrap_or_default()
            );
        }
        for (text, holds) in &run.requires {
            let _ = writeln!(out, "  require {text}: {}", if *holds { "ok" } else { "FAILED" });
        }
        if let Some(c) = comparison {
            human_comparison(&mut out, c);
        }
    }
    out
}

fn human_comparison(out: &mut String, c: &Comparison) {
    for d in &c.deltas {
        let verdict = if d.worse {
            "worse"
        } else if d.delta.low > 0.0 {
            "better"
        } else {
            "no clear change"
        };
        let _ = writeln!(
            out,
            "  vs baseline `{}`: {:+.3} [{:+.3}, {:+.3}] over {} samples: {verdict}",
            d.name, d.delta.mean, d.delta.low, d.delta.high, d.pairs
        );
        for w in d.worse_samples.iter().take(10) {
            let _ = writeln!(
                out,
                "    worse: row `{}` sample {}: {} -> {}",
                w.id, w.sample, w.before, w.after
            );
        }
        if d.worse_samples.len() > 10 {
            let _ = writeln!(out, "    ... and {} more", d.worse_samples.len() - 10);
        }
    }
    for name in &c.new_scores {
        let _ = writeln!(out, "  vs baseline `{name}`: not in the baseline");
    }
}

/// Markdown: a table of each eval's scores (for a pull request comment).
#[must_use]
pub(crate) fn markdown(runs: &[Outcome]) -> String {
    let mut out = String::new();
    for (run, comparison) in runs {
        let _ = writeln!(out, "### eval `{}`\n", run.name);
        let _ = writeln!(
            out,
            "{} rows × {} samples of `{}`, {} failed\n",
            run.rows(),
            run.repeat,
            run.contract,
            run.failures()
        );
        let _ = writeln!(out, "| score | mean | 95% interval | vs baseline |");
        let _ = writeln!(out, "| --- | --- | --- | --- |");
        for s in &run.scores {
            let delta = comparison
                .as_ref()
                .and_then(|c| c.deltas.iter().find(|d| d.name == s.name))
                .map_or_else(
                    || "–".to_owned(),
                    |d| {
                        format!(
                            "{:+.3} [{:+.3}, {:+.3}]{}",
                            d.delta.mean,
                            d.delta.low,
                            d.delta.high,
                            if d.worse { " **worse**" } else { "" }
                        )
                    },
                );
            let _ = writeln!(
                out,
                "| {} | {:.3} | [{:.3}, {:.3}] | {delta} |",
                s.name, s.estimate.mean, s.estimate.low, s.estimate.high
            );
        }
        for (text, holds) in &run.requires {
            let _ =
                writeln!(out, "\n- require `{text}`: {}", if *holds { "ok" } else { "**failed**" });
        }
        out.push('\n');
    }
    out
}

/// JUnit XML: a suite per eval, a case per `require` and per score
/// compared with the baseline.
#[must_use]
pub(crate) fn junit(runs: &[Outcome]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    for (run, comparison) in runs {
        let mut cases = Vec::new();
        for (text, holds) in &run.requires {
            cases.push((
                format!("require {text}"),
                (!holds).then(|| "the condition does not hold".to_owned()),
            ));
        }
        for d in comparison.iter().flat_map(|c| &c.deltas) {
            let failure = d.worse.then(|| {
                format!(
                    "worse than the baseline: {:+.3} [{:+.3}, {:+.3}]",
                    d.delta.mean, d.delta.low, d.delta.high
                )
            });
            cases.push((format!("score {} vs baseline", d.name), failure));
        }
        let failures = cases.iter().filter(|(_, f)| f.is_some()).count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\">",
            xml(&run.name),
            cases.len()
        );
        for (name, failure) in cases {
            match failure {
                None => {
                    let _ = writeln!(out, "    <testcase name=\"{}\"/>", xml(&name));
                }
                Some(message) => {
                    let _ = writeln!(
                        out,
                        "    <testcase name=\"{}\">\n      <failure message=\"{}\"/>\n    </testcase>",
                        xml(&name),
                        xml(&message)
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
