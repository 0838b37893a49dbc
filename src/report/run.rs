//! The page of one run, drawn from its journal (`ignite run --journal`)
//! or recording (`--record`): the header (program and its hash, contract,
//! inputs), the failure, then the run's timeline, drawn from the file's
//! `step` lines (what the scheduler's observer and the agents traced): a
//! row per node, item of a `for` (`node[3]`), model call (its tokens and
//! cost), tool call, wait and skipped arm, in the order they started, each
//! with a bar on the run's time axis; then every effect in the order it
//! completed, by the node that made it, failures first and marked, each
//! with its request and result a click away. A file written before
//! ignite kept the timeline has its effects only, with a note.
//!
//! A journal resumed by later processes holds one run per process (each
//! ends with its `run` step): each gets its own timeline.
//!
//! Rows are plain blocks with `content-visibility: auto`, so the browser
//! lays out only the rows in view: a run of 10,000 nodes opens as fast as
//! a short one (see BENCHMARKS.md).

use std::fmt::Write as _;

use serde_json::Value;

use crate::markup::escape;

/// The page of the run whose journal or recording lines (its header
/// first) are `lines`.
#[must_use]
pub(crate) fn run_page(source: &str, lines: &[Value]) -> String {
    let mut body = format!("<h1>Run <code>{}</code></h1>\n", escape(source));
    let (header, rest) = match lines.split_first() {
        Some((first, rest)) if first.get("key").is_none() && first.get("step").is_none() => {
            (Some(first), rest)
        }
        _ => (None, lines),
    };
    let effects: Vec<&Value> = rest.iter().filter(|l| l.get("key").is_some()).collect();
    let steps: Vec<&Value> = rest.iter().filter_map(|l| l.get("step")).collect();
    if let Some(header) = header {
        header_lines(&mut body, header);
    }
    let failed = effects.iter().filter(|e| e.get("failed").is_some()).count();
    let models = effects.iter().filter(|e| e["kind"] == "model").count();
    let _ = writeln!(
        body,
        "<p>{} effects: {models} model calls, {} tool calls, {failed} failed</p>",
        effects.len(),
        effects.iter().filter(|e| e["kind"] == "tool").count()
    );
    // The run's failure: its `run` step's, else (no timeline) the effects'.
    let ends: Vec<&&Value> =
        steps.iter().filter(|s| s["kind"] == "run" && s["status"] == "failed").collect();
    for end in &ends {
        let _ = writeln!(
            body,
            "<p class=\"failure run-failure\">the run failed: {}</p>",
            escape(&text(&end["detail"]))
        );
    }
    for e in effects.iter().filter(|e| e.get("failed").is_some()) {
        let _ = writeln!(
            body,
            "<p class=\"failure\">failed: <code>{}</code> {}: {}</p>",
            escape(node(e)),
            escape(&text(&e["name"])),
            escape(&text(&e["failed"]["message"]))
        );
    }
    if steps.is_empty() {
        body.push_str(
            "<p class=\"note\">this file has no timeline: it was written before ignite kept \
             the run's node events (record or journal the run again to see one); its effects only</p>\n",
        );
    } else {
        let runs = attempts(&steps);
        for (i, run) in runs.iter().enumerate() {
            let title = if runs.len() == 1 {
                "Timeline".to_owned()
            } else {
                format!("Timeline of process {} of {}", i + 1, runs.len())
            };
            timeline(&mut body, &title, run);
        }
    }
    body.push_str("<h2>Effects</h2>\n<table class=\"effects\">\n<tr><th>#</th><th>node</th><th>call</th><th>usage</th><th>result</th></tr>\n");
    for (i, e) in effects.iter().enumerate() {
        effect_row(&mut body, i, e);
    }
    body.push_str("</table>\n");
    super::page("Run report", &body)
}

fn header_lines(out: &mut String, header: &Value) {
    if let Some(program) = header.get("program") {
        let _ = writeln!(
            out,
            "<p class=\"program\">program <code>{}</code> <span class=\"muted\">sha256 <code class=\"hash\">{}</code></span></p>",
            escape(&text(&program["path"])),
            escape(&text(&program["hash"]))
        );
    }
    let contract = header.get("contract").and_then(Value::as_str).unwrap_or("(the only contract)");
    let inputs = serde_json::to_string_pretty(&header["inputs"]).unwrap_or_default();
    let _ = writeln!(
        out,
        "<p>contract <code>{}</code></p>\n<details class=\"inputs\"><summary>inputs</summary><pre>{}</pre></details>",
        escape(contract),
        escape(&inputs)
    );
}

/// The steps split by process: each process's ends with its `run` step
/// (the last may have none: a killed process).
fn attempts<'a>(steps: &[&'a Value]) -> Vec<Vec<&'a Value>> {
    let mut runs = vec![Vec::new()];
    for &step in steps {
        if let Some(run) = runs.last_mut() {
            run.push(step);
        }
        if step["kind"] == "run" {
            runs.push(Vec::new());
        }
    }
    runs.retain(|run| !run.is_empty());
    runs
}

fn micros(step: &Value, key: &str) -> u64 {
    step[key].as_u64().unwrap_or(0)
}

/// One process's timeline: a row per step, by start then node.
fn timeline(out: &mut String, title: &str, steps: &[&Value]) {
    let mut steps = steps.to_vec();
    steps.sort_by(|a, b| {
        (micros(a, "start_us"), a["node"].as_str())
            .cmp(&(micros(b, "start_us"), b["node"].as_str()))
    });
    let origin = steps.iter().map(|s| micros(s, "start_us")).min().unwrap_or(0);
    let end = steps.iter().map(|s| micros(s, "start_us") + micros(s, "us")).max().unwrap_or(0);
    let span = end.saturating_sub(origin).max(1);
    let count = |kinds: &[&str]| steps.iter().filter(|s| kinds.contains(&kind(s))).count();
    let skipped = steps.iter().filter(|s| s["status"] == "skipped").count();
    let items = steps.iter().filter(|s| is_item(s)).count();
    let _ = writeln!(
        out,
        "<h2>{title}</h2>\n<p class=\"summary\">{} steps over {}: {} model calls, {} tool calls, {} waits, {items} items, {skipped} skipped</p>",
        steps.len(),
        millis(span),
        count(&["model"]),
        count(&["tool", "tool_call"]),
        count(&["wait", "limit"]),
    );
    out.push_str("<div class=\"timeline\">\n<div class=\"step head\"><span>start</span><span>took</span><span>status</span><span>kind</span><span>node</span><span></span></div>\n");
    for step in steps {
        step_row(out, step, origin, span);
    }
    out.push_str("</div>\n");
}

fn kind(step: &Value) -> &str {
    step["kind"].as_str().unwrap_or("")
}

/// An item of a `for`: its path ends with the item's index.
fn is_item(step: &Value) -> bool {
    step["node"].as_str().is_some_and(|n| n.ends_with(']')) && kind(step) != "wait"
}

fn millis(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

fn step_row(out: &mut String, step: &Value, origin: u64, span: u64) {
    let (start, took) = (micros(step, "start_us").saturating_sub(origin), micros(step, "us"));
    let at = |us: u64| us as f64 * 100.0 / span as f64;
    let status = text(&step["status"]);
    let detail = text(&step["detail"]);
    let _ = writeln!(
        out,
        "<div class=\"step{item}\" data-kind=\"{kind}\" data-status=\"{status}\">\
         <span>{}</span><span>{}</span><span class=\"status\">{status}</span><span>{kind}</span><code class=\"node\">{}</code>\
         <span class=\"lane\"><i style=\"left:{:.2}%;width:{:.2}%\"></i></span>{}</div>",
        millis(start),
        millis(took),
        escape(&text(&step["node"])),
        at(start),
        at(took).max(0.2),
        if detail.is_empty() {
            String::new()
        } else {
            format!("<span class=\"detail\">{}</span>", escape(&detail))
        },
        kind = escape(kind(step)),
        status = escape(&status),
        item = if is_item(step) { " item" } else { "" },
    );
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The node path of an effect, with `[item]` for an item of a `for`.
fn node(e: &Value) -> &str {
    e["key"]["node"].as_str().unwrap_or("")
}

/// A model reply's token usage, in any provider's wording.
fn usage(e: &Value) -> String {
    let usage = &e["value"]["response"]["usage"];
    let pick = |keys: &[&str]| keys.iter().find_map(|k| usage.get(*k).and_then(Value::as_u64));
    match (
        pick(&["input_tokens", "prompt_tokens", "prompt_eval_count"]),
        pick(&["output_tokens", "completion_tokens", "eval_count"]),
    ) {
        (Some(input), Some(output)) => format!("{input} in / {output} out"),
        _ => String::new(),
    }
}

fn effect_row(out: &mut String, i: usize, e: &Value) {
    let failed = e.get("failed").is_some();
    let item = e["key"]["item"].as_u64().map_or_else(String::new, |n| format!("[{n}]"));
    let request = serde_json::to_string_pretty(&e["request"]).unwrap_or_default();
    let result = if failed { &e["failed"] } else { &e["value"] };
    let result = serde_json::to_string_pretty(result).unwrap_or_default();
    let _ = writeln!(
        out,
        "<tr class=\"effect {}{}\"><td>{i}</td><td><code>{}{item}</code></td><td>{} <code>{}</code></td><td>{}</td>\
         <td><details><summary>{}</summary><div>request</div><pre>{}</pre><div>{}</div><pre>{}</pre></details></td></tr>",
        escape(&text(&e["kind"])),
        if failed { " failed" } else { "" },
        escape(node(e)),
        escape(&text(&e["kind"])),
        escape(&text(&e["name"])),
        usage(e),
        if failed { "failed" } else { "ok" },
        escape(&request),
        if failed { "failure" } else { "result" },
        escape(&result),
    );
}
