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
//! | `run.rs` | one run from its journal or recording: every effect by node, failures first |

mod eval;
mod run;

pub(crate) use eval::eval_page;
pub(crate) use run::run_page;

/// The page around `body`: the title, the shared style.
fn page(title: &str, body: &str) -> String {
    let title = crate::markup::escape(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
}

/// The style of every page: system fonts only (no font is fetched).
const STYLE: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em;color:#1d1d1f}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}\
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.25em .7em;text-align:left;border-bottom:1px solid #ddd}\
.bar{position:relative;width:240px;height:12px;background:#eee;border-radius:3px}\
.bar .ci{position:absolute;top:0;height:12px;background:#9ec5fe;border-radius:3px}\
.bar .mean{position:absolute;top:-2px;width:2px;height:16px;background:#0b57d0}\
.worse{color:#b3261e;font-weight:600}.better{color:#146c2e}.ok{color:#146c2e}.failed{color:#b3261e;font-weight:600}\
details{margin:.15em 0}summary{cursor:pointer}pre{background:#f6f6f6;padding:.5em;overflow:auto;margin:.3em 0}\
.muted{color:#666}.failure{color:#b3261e}tr.failed td{background:#fdecea}";
