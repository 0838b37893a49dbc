//! `ignite run FILE --batch ROWS --out RESULTS`: the contract once per
//! JSON Lines row, results in row order, resumable.
//!
//! A row is a non-blank line of ROWS (a file or `-` for stdin), numbered by
//! its line number from 1. Each result is one line of RESULTS (stdout when
//! there is no `--out`): `{"row": N, "outputs": {...}}` or `{"row": N,
//! "error": {"code", "message", "node"}}`. Rows whose number RESULTS
//! already holds are skipped, so running the same command again resumes; a
//! line a kill cut short is removed first. A progress bar (rows, failures,
//! rate, ETA, tokens, cost) is drawn on stderr when it is a terminal; the
//! usage of the rows run (per model, with costs) follows the summary.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use crate::ir::ContractId;
use crate::runtime::batch::{Row, RowDone, run_batch};
use crate::runtime::{Engine, RunOptions};
use crate::usage::UsageTotals;

/// Where results go.
enum Sink {
    File(File),
    Stdout,
}

/// Runs the batch; 0 when every row succeeded, 3 when a row failed, 2 for
/// unreadable or unwritable files.
pub(super) fn run(
    engine: &Engine,
    contract: ContractId,
    rows: &str,
    out: Option<&Path>,
    jobs: usize,
    options: &RunOptions,
) -> ExitCode {
    let (done, mut sink) = match out.map(open_results).transpose() {
        Ok(Some((done, file))) => (done, Sink::File(file)),
        Ok(None) => (HashSet::new(), Sink::Stdout),
        Err(message) => return super::run::usage(&message),
    };
    let reader: Box<dyn BufRead + Send> = if rows == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        match File::open(rows) {
            Ok(file) => Box::new(BufReader::new(file)),
            Err(e) => return super::run::usage(&format!("cannot read rows `{rows}`: {e}")),
        }
    };
    let total = if rows == "-" { None } else { count_rows(rows) };
    let bar = progress(total.map(|t| t.saturating_sub(done.len() as u64)));
    let (mut failed, mut ran, mut usage, mut write_error) =
        (0u64, 0u64, UsageTotals::default(), None);
    let pending = reader
        .lines()
        .enumerate()
        .map(|(i, line)| (i as u64 + 1, line))
        .filter(|(number, line)| {
            !done.contains(number) && line.as_ref().map_or(true, |l| !l.trim().is_empty())
        })
        .map(|(number, line)| Row { number, inputs: parse_row(line) });
    run_batch(engine, contract, pending, jobs, options, |row: RowDone| {
        ran += 1;
        failed += u64::from(row.failed);
        usage.merge(&row.usage);
        if write_error.is_none() {
            write_error = write_line(&mut sink, &row.line).err();
        }
        if let Some(bar) = &bar {
            bar.inc(1);
            let (input, output) = usage.tokens();
            let cost = usage.cost_usd().map(|c| format!(", {c:.4} USD")).unwrap_or_default();
            bar.set_message(format!("{failed} failed, {} tokens{cost}", input + output));
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if let Some(message) = write_error {
        return super::run::usage(&message);
    }
    let skipped =
        if done.is_empty() { String::new() } else { format!(", {} already done", done.len()) };
    eprintln!("batch: {ran} rows run, {failed} failed{skipped}");
    eprint!("{}", usage.render());
    if failed > 0 { ExitCode::from(3) } else { ExitCode::SUCCESS }
}

/// The row numbers RESULTS holds and the file opened for appending; a last
/// line a kill cut short is cut off.
fn open_results(path: &Path) -> Result<(HashSet<u64>, File), String> {
    let shown = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read results `{shown}`: {e}")),
    };
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    let mut done = HashSet::new();
    for (i, line) in text[..whole].lines().enumerate() {
        let row = serde_json::from_str::<Value>(line).ok().and_then(|v| v["row"].as_u64());
        match row {
            Some(row) => done.insert(row),
            None => {
                return Err(format!(
                    "line {} of `{shown}` is not a batch result; use another `--out` file",
                    i + 1
                ));
            }
        };
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot write results `{shown}`: {e}"))?;
    file.set_len(whole as u64).map_err(|e| format!("cannot repair `{shown}`: {e}"))?;
    Ok((done, file))
}

fn parse_row(line: std::io::Result<String>) -> Result<serde_json::Map<String, Value>, String> {
    match serde_json::from_str::<Value>(&line.map_err(|e| format!("cannot read the row: {e}"))?) {
        Ok(Value::Object(inputs)) => Ok(inputs),
        Ok(other) => Err(format!(
            "a row must be a JSON object of inputs, got {}",
            crate::ir::value_kind(&other)
        )),
        Err(e) => Err(format!("the row is not valid JSON: {e}")),
    }
}

/// Writes one whole line; a signal never cuts it.
fn write_line(sink: &mut Sink, line: &Value) -> Result<(), String> {
    let mut text = line.to_string();
    text.push('\n');
    crate::shutdown::whole(|| match sink {
        Sink::File(file) => file.write_all(text.as_bytes()),
        Sink::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|()| out.flush())
        }
    })
    .map_err(|e| format!("cannot write a result: {e}"))
}

/// Non-blank lines of `path`, for the progress bar.
fn count_rows(path: &str) -> Option<u64> {
    let file = File::open(path).ok()?;
    let lines = BufReader::new(file).lines();
    Some(lines.map_while(Result::ok).filter(|l| !l.trim().is_empty()).count() as u64)
}

/// A progress bar on stderr when it is a terminal.
fn progress(total: Option<u64>) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let (bar, template) = match total {
        Some(total) => {
            (ProgressBar::new(total), "{bar:30} {pos}/{len} rows, {msg}, {per_sec}, ETA {eta}")
        }
        None => (ProgressBar::new_spinner(), "{spinner} {pos} rows, {msg}, {per_sec}"),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(bar)
}
