//! What `ignite eval` prints and saves: the human summary, JSON (the
//! `--save` document, with the baseline comparison), JUnit XML and
//! Markdown, and the `--report` page. Functions from finished runs to text;
//! the document and the page read the samples' details back from their
//! file one sample at a time, as they are written.

use std::fmt::Write as _;
use std::io::Write;

use serde_json::{Map, Value, json};

use super::compare::{Comparison, SAVE_VERSION};
use super::dataset::Row;
use super::stats::Estimate;
use super::{EvalRun, Sample};
use crate::markup::escape as xml;
use crate::usage::UsageTotals;

/// A finished eval with its comparison with the baseline, if any.
pub(crate) type Outcome = (EvalRun, Option<Comparison>);

/// The `--save` document (and `--format json`): each eval's summary and
/// comparison, then its samples (outputs, scores, usage, latency), one a
/// line, read back from the samples' details as they are written.
/// `partial` when a stop cut the run short.
///
/// # Errors
/// `out` or a sample file cannot be written or read.
pub(crate) fn write_document(
    out: &mut dyn Write,
    runs: &[Outcome],
    partial: bool,
) -> std::io::Result<()> {
    write!(
        out,
        "{{\n  \"ignite_eval\": {SAVE_VERSION},\n  \"partial\": {partial},\n  \"evals\": ["
    )?;
    for (i, (run, comparison)) in runs.iter().enumerate() {
        let head = serde_json::to_string_pretty(&eval_json(run, comparison.as_ref()))?;
        // Its samples go before its closing brace.
        let head = head.strip_suffix('}').unwrap_or(&head).trim_end();
        let head = head.replace('\n', "\n    ");
        write!(out, "{}\n    {head},\n    \"samples\": [", if i == 0 { "" } else { "," })?;
        let mut first = true;
        for sample in &run.samples {
            let line = serde_json::to_string(&sample_json(run, sample)?)?;
            write!(out, "{}\n      {line}", if first { "" } else { "," })?;
            first = false;
        }
        out.write_all(b"\n    ]\n  }")?;
    }
    out.write_all(b"\n  ]\n}\n")
}

/// The page of `runs` (`--report`): the document's, drawn as it is read.
///
/// # Errors
/// `out` or a sample file cannot be written or read.
pub(crate) fn write_page(
    out: &mut dyn Write,
    runs: &[Outcome],
    partial: bool,
) -> std::io::Result<()> {
    let heads: Vec<Value> = runs.iter().map(|(run, c)| eval_json(run, c.as_ref())).collect();
    crate::report::write_eval_page(out, &heads, partial, &mut |i, each| {
        let run = &runs[i].0;
        run.samples.iter().try_for_each(|sample| each(&sample_json(run, sample)?))
    })
}

/// A sample's details as its sample file keeps them: what the document
/// shows of it beyond its scores and latency.
#[must_use]
pub(crate) fn details(
    row: &Row,
    outputs: Option<Map<String, Value>>,
    error: Option<&str>,
    score_errors: Map<String, Value>,
    usage: &UsageTotals,
) -> Map<String, Value> {
    let value = json!({
        "inputs": row.inputs,
        "expected": row.expected,
        "outputs": outputs,
        "error": error,
        "score_errors": score_errors,
        "tokens": tokens_json(usage),
        "cost_usd": cost(usage),
    });
    match value {
        Value::Object(fields) => fields,
        _ => Map::new(),
    }
}

/// One sample of the document: its row, number, scores (a failed one is
/// 0) and latency, then its details.
fn sample_json(run: &EvalRun, sample: &Sample) -> std::io::Result<Value> {
    let scores: Map<String, Value> = run
        .scores
        .iter()
        .enumerate()
        .map(|(i, summary)| (summary.name.clone(), json!(sample.value(i))))
        .collect();
    let mut out = json!({
        "line": sample.line,
        "id": sample.id,
        "sample": sample.sample,
        "scores": scores,
        "latency_ms": millis(sample.latency),
    });
    if let Value::Object(fields) = &mut out {
        fields.extend(run.details(sample)?);
    }
    Ok(out)
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

/// An eval's summary: everything of the document but its samples.
fn eval_json(run: &EvalRun, comparison: Option<&Comparison>) -> Value {
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
    let mut out = json!({
        "name": run.name,
        "contract": run.contract,
        "dataset": run.dataset.display().to_string(),
        "repeat": run.repeat,
        "rows": run.rows(),
        "planned": run.planned,
        "finished": run.samples.len(),
        "failures": run.failures(),
        "stopped": run.stopped,
        "passed": run.passed(),
        "scores": scores,
        "requires": run.requires.iter().map(|(text, holds)| json!({"require": text, "holds": holds})).collect::<Vec<_>>(),
        "tokens": tokens_json(&run.usage),
        "cost_usd": cost(&run.usage),
        "latency_ms": { "p50": millis(p50), "p95": millis(p95) },
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
        let stopped = if run.stopped {
            format!(" (stopped after {} of {} samples)", run.samples.len(), run.planned)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "eval `{}`: {} rows × {} samples of `{}`{stopped}",
            run.name,
            run.rows(),
            run.repeat,
            run.contract,
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
        let usage = &run.usage;
        let ((input, output), (old_input, old_output)) = (usage.tokens(), usage.reused_tokens());
        let (p50, p95) = run.latency();
        let cost = cost(usage).map_or_else(String::new, |c| format!(", ${c:.4}"));
        let recorded = if old_input + old_output > 0 {
            format!(
                " ({old_input} + {old_output} of them spent before: answered from the cache or a recording)"
            )
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
        for (id, sample, error) in &run.first_failures {
            let _ = writeln!(out, "  failed: row `{id}` sample {sample}: {error}");
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
