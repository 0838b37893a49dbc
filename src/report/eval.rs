//! The page of an eval run, drawn from the document `ignite eval --save`
//! writes: per eval, each score's mean and 95% interval as a bar, the
//! `require`s, the baseline's deltas and the samples that got worse, then
//! every sample (inputs, expected, outputs or error, scores) in a
//! collapsed row, the failed ones first.

use std::fmt::Write as _;
use std::io;

use serde_json::Value;

use crate::markup::escape;

/// Gives eval `i`'s samples, in order, to the function it is given.
pub(crate) type Samples<'s> =
    dyn FnMut(usize, &mut dyn FnMut(&Value) -> io::Result<()>) -> io::Result<()> + 's;

/// The page of the saved eval document `document`.
#[must_use]
pub(crate) fn eval_page(document: &Value) -> String {
    let evals = document.get("evals").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let partial = document.get("partial") == Some(&Value::Bool(true));
    let mut page = Vec::new();
    // Neither memory nor the samples of a document in memory fail to be written.
    let _ = write_eval_page(&mut page, evals, partial, &mut |i, each| {
        let samples = evals[i].get("samples").and_then(Value::as_array);
        samples.into_iter().flatten().try_for_each(&mut *each)
    });
    String::from_utf8_lossy(&page).into_owned()
}

/// Writes the page of the evals whose summaries (a saved document's evals,
/// their `samples` aside) are `evals` to `out`; `samples` gives each one's
/// samples, twice (the failed runs are drawn first). `partial`: a stop cut
/// the run short.
///
/// # Errors
/// `out` cannot be written, or `samples` failed.
pub(crate) fn write_eval_page(
    out: &mut dyn io::Write,
    evals: &[Value],
    partial: bool,
    samples: &mut Samples<'_>,
) -> io::Result<()> {
    out.write_all(super::page_start("Eval report").as_bytes())?;
    out.write_all(b"<h1>Eval report</h1>\n")?;
    if partial {
        out.write_all(
            b"<p class=\"note partial\">Partial: the run was stopped before every sample ran.</p>\n",
        )?;
    }
    for (i, eval) in evals.iter().enumerate() {
        let mut head = String::new();
        eval_section(&mut head, eval);
        out.write_all(head.as_bytes())?;
        let count = eval
            .get("finished")
            .and_then(Value::as_u64)
            .or_else(|| eval.get("samples").and_then(Value::as_array).map(|s| s.len() as u64));
        writeln!(out, "<h3>{} samples</h3>", count.unwrap_or(0))?;
        // Failed runs first, then rows in dataset order.
        for failed in [true, false] {
            samples(i, &mut |s| {
                if s.get("error").is_none_or(Value::is_null) == failed {
                    return Ok(());
                }
                let mut line = String::new();
                sample(&mut line, s, failed);
                out.write_all(line.as_bytes())
            })?;
        }
        out.write_all(b"</section>\n")?;
    }
    out.write_all(super::PAGE_END.as_bytes())
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn num(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn eval_section(out: &mut String, eval: &Value) {
    let name = escape(&text(eval, "name"));
    let _ = writeln!(
        out,
        "<section class=\"eval\" data-eval=\"{name}\">\n<h2>eval <code>{name}</code></h2>"
    );
    let _ = writeln!(
        out,
        "<p>{} rows × {} samples of <code>{}</code>; {} failed runs; {} input + {} output tokens; latency p50 {} ms, p95 {} ms</p>",
        text(eval, "rows"),
        text(eval, "repeat"),
        escape(&text(eval, "contract")),
        text(eval, "failures"),
        eval["tokens"]["input"],
        eval["tokens"]["output"],
        eval["latency_ms"]["p50"],
        eval["latency_ms"]["p95"],
    );
    scores_table(out, eval);
    for require in eval.get("requires").and_then(Value::as_array).into_iter().flatten() {
        let holds = require.get("holds") == Some(&Value::Bool(true));
        let _ = writeln!(
            out,
            "<p class=\"require\">require <code>{}</code>: <span class=\"{}\">{}</span></p>",
            escape(&text(require, "require")),
            if holds { "ok" } else { "failed" },
            if holds { "ok" } else { "failed" }
        );
    }
    if eval.get("stopped") == Some(&Value::Bool(true)) {
        let _ = writeln!(
            out,
            "<p class=\"note\">stopped after {} of {} samples</p>",
            text(eval, "finished"),
            text(eval, "planned")
        );
    }
    worse_samples(out, eval);
}

/// A bar from 0 to the larger of 1 and the highest value shown.
fn bar(low: f64, mean: f64, high: f64, scale: f64) -> String {
    let at = |x: f64| (x / scale * 100.0).clamp(0.0, 100.0);
    format!(
        "<div class=\"bar\"><div class=\"ci\" style=\"left:{:.1}%;width:{:.1}%\"></div><div class=\"mean\" style=\"left:{:.1}%\"></div></div>",
        at(low),
        (at(high) - at(low)).max(0.5),
        at(mean)
    )
}

fn scores_table(out: &mut String, eval: &Value) {
    let scores = eval.get("scores").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let deltas = eval["baseline"]["deltas"].as_array();
    let scale = scores.iter().map(|s| num(s, "high")).fold(1.0, f64::max);
    out.push_str("<table class=\"scores\">\n<tr><th>score</th><th>mean</th><th>95% interval</th><th></th><th>vs baseline</th></tr>\n");
    for s in scores {
        let name = text(s, "name");
        let delta =
            deltas.and_then(|d| d.iter().find(|d| d["score"] == name.as_str())).map_or_else(
                || "–".to_owned(),
                |d| {
                    let (worse, low) = (d["worse"] == Value::Bool(true), num(&d["delta"], "low"));
                    let class = if worse {
                        "worse"
                    } else if low > 0.0 {
                        "better"
                    } else {
                        "muted"
                    };
                    format!(
                        "<span class=\"{class}\">{:+.3} [{:+.3}, {:+.3}]</span>",
                        num(&d["delta"], "mean"),
                        low,
                        num(&d["delta"], "high")
                    )
                },
            );
        let _ = writeln!(
            out,
            "<tr class=\"score\" data-score=\"{}\"><td>{}</td><td>{:.3}</td><td>[{:.3}, {:.3}] {}</td><td>{}</td><td>{delta}</td></tr>",
            escape(&name),
            escape(&name),
            num(s, "mean"),
            num(s, "low"),
            num(s, "high"),
            escape(&text(s, "kind")),
            bar(num(s, "low"), num(s, "mean"), num(s, "high"), scale),
        );
    }
    out.push_str("</table>\n");
}

fn worse_samples(out: &mut String, eval: &Value) {
    for d in eval["baseline"]["deltas"].as_array().into_iter().flatten() {
        let worse = d["worse_samples"].as_array().map_or(&[][..], Vec::as_slice);
        if worse.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<details class=\"worse-samples\"><summary>{} samples scored lower on <code>{}</code></summary><table>",
            worse.len(),
            escape(&text(d, "score"))
        );
        for w in worse {
            let _ = writeln!(
                out,
                "<tr><td>row <code>{}</code> sample {}</td><td>{} → {}</td></tr>",
                escape(&text(w, "id")),
                text(w, "sample"),
                text(w, "before"),
                text(w, "after")
            );
        }
        out.push_str("</table></details>\n");
    }
}

/// One sample as a collapsed row: its row, number and scores, then its
/// inputs, expected value, outputs or error and score errors.
fn sample(out: &mut String, s: &Value, failed: bool) {
    let scores: Vec<String> = s["scores"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{}={}", escape(k), v))
        .collect();
    let _ = write!(
        out,
        "<details class=\"sample{}\"><summary>row <code>{}</code> sample {} · {}{}</summary>",
        if failed { " failed" } else { "" },
        escape(&text(s, "id")),
        text(s, "sample"),
        scores.join(" "),
        if failed { " · run failed" } else { "" },
    );
    for key in ["inputs", "expected", "outputs", "error", "score_errors"] {
        let value = &s[key];
        if value.is_null() || value.as_object().is_some_and(serde_json::Map::is_empty) {
            continue;
        }
        let shown = serde_json::to_string_pretty(value).unwrap_or_default();
        let _ = write!(out, "<div>{key}</div><pre>{}</pre>", escape(&shown));
    }
    out.push_str("</details>\n");
}
