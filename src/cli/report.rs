//! `ignite report RUN_ID|FILE -o PAGE.html`: one self-contained HTML page
//! of a run (its journal `.ignite/runs/RUN_ID.jsonl`, or a recording
//! FILE) or of an eval (a file `ignite eval --save` wrote). A run's images
//! and documents are summarized (kind, size, SHA-256) before the page is
//! drawn: a page never holds their bytes.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use super::GlobalArgs;

/// Write a self-contained HTML page of a run (journal, recording) or a saved eval.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A run ID (its journal in `.ignite/runs/`), a recording or journal
    /// file, or a file `ignite eval --save` wrote.
    #[arg(value_name = "RUN_ID|FILE")]
    pub source: String,
    /// Where to write the page.
    #[arg(short = 'o', long = "output", value_name = "PAGE.html")]
    pub output: PathBuf,
}

impl ReportArgs {
    /// Writes the page; 0 done, 2 the source cannot be read or is not a
    /// run or an eval.
    #[must_use]
    pub fn run(self, _global: &GlobalArgs) -> ExitCode {
        let path = if Path::new(&self.source).is_file() {
            PathBuf::from(&self.source)
        } else {
            Path::new(".ignite/runs").join(format!("{}.jsonl", self.source))
        };
        let page = match page(&path, &self.source) {
            Ok(page) => page,
            Err(message) => return super::usage(&message),
        };
        match std::fs::write(&self.output, page) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => super::usage(&format!("cannot write `{}`: {e}", self.output.display())),
        }
    }
}

/// The page of the run or eval at `path` (`source` as the user named it).
fn page(path: &Path, source: &str) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| {
        format!(
            "cannot read `{}` ({e}): give a run ID of `.ignite/runs/`, a recording or a saved eval",
            path.display()
        )
    })?;
    let mut lines = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(mut value) => {
                // Images and documents by kind, size and digest, never their bytes.
                crate::effects::summarize_media(&mut value, path);
                lines.push(value);
            }
            // A saved eval is one pretty-printed object, not lines.
            Err(_) if i == 0 => return eval_page(path),
            Err(e) => {
                return Err(format!("`{}` line {}: not JSON ({e})", path.display(), i + 1));
            }
        }
    }
    if lines.first().is_some_and(|l| l.get("ignite_eval").is_some()) {
        return eval_page(path);
    }
    if !lines.first().is_some_and(|l| l.get("version").is_some() || l.get("key").is_some()) {
        return Err(format!(
            "`{}` is neither a journal or recording nor a saved eval",
            path.display()
        ));
    }
    Ok(crate::report::run_page(source, &lines))
}

/// The page of the saved eval at `path`.
fn eval_page(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let document: Value = serde_json::from_str(&text).map_err(|e| {
        format!("`{}` is neither a journal or recording nor a saved eval ({e})", path.display())
    })?;
    if document.get("ignite_eval").is_none() {
        return Err(format!(
            "`{}` is neither a journal or recording nor a saved eval",
            path.display()
        ));
    }
    Ok(crate::report::eval_page(&document))
}
