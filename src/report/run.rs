//! The page of one run, drawn from its journal (`ignite run --journal`)
//! or recording (`--record`): the header (contract, inputs), then every
//! effect in the order it completed, grouped by the node that made it
//! (`Contract > node`, `node[3]` for an item of a `for`): model calls
//! with their token usage, tool calls, and failures first and marked, each
//! with its request and result a click away.

use std::fmt::Write as _;

use serde_json::Value;

use crate::markup::escape;

/// The page of the run whose journal or recording lines (its header
/// first) are `lines`.
#[must_use]
pub(crate) fn run_page(source: &str, lines: &[Value]) -> String {
    let mut body = format!("<h1>Run <code>{}</code></h1>\n", escape(source));
    let (header, effects) = match lines.split_first() {
        Some((first, rest)) if first.get("key").is_none() => (Some(first), rest),
        _ => (None, lines),
    };
    if let Some(header) = header {
        let contract =
            header.get("contract").and_then(Value::as_str).unwrap_or("(the only contract)");
        let inputs = serde_json::to_string_pretty(&header["inputs"]).unwrap_or_default();
        let _ = writeln!(
            body,
            "<p>contract <code>{}</code></p>\n<details class=\"inputs\"><summary>inputs</summary><pre>{}</pre></details>",
            escape(contract),
            escape(&inputs)
        );
    }
    let failed = effects.iter().filter(|e| e.get("failed").is_some()).count();
    let models = effects.iter().filter(|e| e["kind"] == "model").count();
    let _ = writeln!(
        body,
        "<p>{} effects: {models} model calls, {} tool calls, {failed} failed</p>",
        effects.len(),
        effects.iter().filter(|e| e["kind"] == "tool").count()
    );
    for e in effects.iter().filter(|e| e.get("failed").is_some()) {
        let _ = writeln!(
            body,
            "<p class=\"failure\">failed: <code>{}</code> {}: {}</p>",
            escape(node(e)),
            escape(&text(&e["name"])),
            escape(&text(&e["failed"]["message"]))
        );
    }
    body.push_str("<table class=\"timeline\">\n<tr><th>#</th><th>node</th><th>call</th><th>usage</th><th>result</th></tr>\n");
    for (i, e) in effects.iter().enumerate() {
        effect_row(&mut body, i, e);
    }
    body.push_str("</table>\n");
    super::page("Run report", &body)
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
