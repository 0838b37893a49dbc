//! Self-contained HTML pages: one string each, with inline CSS, no script
//! and nothing fetched from the network, so a page opens anywhere (a CI
//! artifact, a mail attachment) and shows the same thing.
//!
//! Pages are pure functions of saved data: an eval's page is drawn from
//! the document `ignite eval --save` writes (`eval.rs`), never from a
//! second recording path.
//!
//! | file | page |
//! | --- | --- |
//! | `eval.rs` | an eval run: scores with intervals as bars, baseline deltas, every sample a click away |
//! | `run.rs` | one run from its journal or recording: its timeline (nodes, calls, waits, skipped arms, items, the failure), then every effect by node, failures first |

mod eval;
mod run;

pub(crate) use eval::{eval_page, write_eval_page};
pub(crate) use run::run_page;

/// The page around `body`: the title, the shared style.
fn page(title: &str, body: &str) -> String {
    format!("{}{body}{PAGE_END}", page_start(title))
}

/// A page up to its body's content: the title, the shared style.
fn page_start(title: &str) -> String {
    let title = crate::markup::escape(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
    )
}

/// A page after its body's content.
const PAGE_END: &str = "</body>\n</html>\n";

/// The style of every page: system fonts only (no font is fetched).
const STYLE: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em;color:#1d1d1f}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}\
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.25em .7em;text-align:left;border-bottom:1px solid #ddd}\
.bar{position:relative;width:240px;height:12px;background:#eee;border-radius:3px}\
.bar .ci{position:absolute;top:0;height:12px;background:#9ec5fe;border-radius:3px}\
.bar .mean{position:absolute;top:-2px;width:2px;height:16px;background:#0b57d0}\
.worse{color:#b3261e;font-weight:600}.better{color:#146c2e}.ok{color:#146c2e}.failed{color:#b3261e;font-weight:600}\
details{margin:.15em 0}details.sample{content-visibility:auto;contain-intrinsic-size:auto 1.6em}summary{cursor:pointer}pre{background:#f6f6f6;padding:.5em;overflow:auto;margin:.3em 0}\
.muted{color:#666}.failure{color:#b3261e}tr.failed td{background:#fdecea}\
.timeline{font-size:13px}.step{display:grid;grid-template-columns:6em 6em 4.5em 6em minmax(14em,2fr) minmax(8em,1fr);\
gap:.5em;align-items:center;padding:.1em 0;border-bottom:1px solid #eee;content-visibility:auto;contain-intrinsic-size:auto 1.6em}\
.step.head{font-weight:600;content-visibility:visible}.step .detail{grid-column:5/7;color:#555;white-space:pre-wrap}\
.lane{position:relative;height:10px;background:#f3f3f3}.lane i{position:absolute;top:0;height:10px;background:#9ec5fe}\
.step[data-status=failed]{background:#fdecea;color:#b3261e}.step[data-status=failed] .lane i{background:#b3261e}\
.step[data-status=skipped]{color:#888}.step[data-status=skipped] .lane i{background:#ccc}\
.step[data-kind=wait] .lane i,.step[data-kind=limit] .lane i{background:#f2c14e}.step[data-kind=model] .lane i{background:#7c4dff}\
.step[data-kind=tool] .lane i,.step[data-kind=tool_call] .lane i{background:#0f9d58}.step[data-kind=run] .lane i{background:#0b57d0}\
.step.item code{color:#5b3c88}.note{background:#fff8e1;padding:.4em .7em}";
