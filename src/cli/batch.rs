//! `ignite run FILE --batch ROWS --out RESULTS`: the contract once per
//! JSON Lines row, results in row order, resumable.
//!
//! A row is a non-blank line of ROWS (a file or `-` for stdin), numbered by
//! its line number from 1. Each result is one line of RESULTS (stdout when
//! there is no `--out`): `{"row": N, "outputs": {...}}` or `{"row": N,
//! "error": {"code", "kind", "message", "node", "cause"}}`, with `"row_data"`:
//! the row's fields that are not inputs, under `--keep-fields`. Rows whose number RESULTS
//! already holds are skipped, so running the same command again resumes; a
//! line a kill cut short is removed first. A progress bar (rows, failures,
//! rate, ETA, tokens, cost) is drawn on stderr when it is a terminal; the
//! usage of the rows run (per model, with costs) and the cache hits follow
//! the summary, and are printed too when a signal stops the batch.

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use crate::effects::Cache;
use crate::eval::{Fields, Val};
use crate::ir::ContractId;
use crate::runtime::batch::{Row, RowDone, run_batch};
use crate::runtime::{Engine, InputsFrom, RunOptions};
use crate::usage::UsageTotals;

/// Where results go.
enum Sink {
    File(File),
    Stdout,
}

/// What `ignite run --batch` was asked to do.
pub(super) struct Batch<'a> {
    /// The rows file, `-` for stdin.
    pub rows: &'a str,
    /// `--out`; stdout when absent.
    pub out: Option<&'a Path>,
    /// Rows run at once.
    pub jobs: usize,
    /// `--keep-fields`.
    pub keep_fields: bool,
    /// The result cache, when it is on (for its hit counts).
    pub cache: Option<&'a Arc<Cache>>,
    /// The most bytes a media file of a row (`{"path": ...}`) may hold.
    pub max_bytes: usize,
}

/// Runs the batch; 0 when every row succeeded, 3 when a row failed, 2 for
/// unreadable or unwritable files.
pub(super) fn run(
    engine: &Engine,
    contract: ContractId,
    batch: &Batch<'_>,
    options: &RunOptions,
) -> ExitCode {
    let Batch { rows, out, jobs, keep_fields, cache, max_bytes } = *batch;
    // A row's `{"path": ...}` media are read from the rows file's folder.
    let folder = Path::new(rows).parent().filter(|_| rows != "-").unwrap_or(Path::new("."));
    let reach = super::media::Reach::new(folder, max_bytes);
    let declared = &engine.program()[contract];
    let options = &RunOptions { inputs_from: InputsFrom::Row, ..options.clone() };
    // With `--keep-fields`, fields that are not inputs go to `row_data`.
    let input_names: Option<Vec<String>> = keep_fields
        .then(|| engine.program()[contract].inputs().map(|(_, p)| p.name.clone()).collect());
    let (done, mut sink) = match out.map(open_results).transpose() {
        Ok(Some((done, file))) => (done, Sink::File(file)),
        Ok(None) => (Done::default(), Sink::Stdout),
        Err(message) => return super::usage(&message),
    };
    let reader: Box<dyn BufRead + Send> = if rows == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        match File::open(rows) {
            Ok(file) => Box::new(BufReader::new(file)),
            Err(e) => return super::usage(&format!("cannot read rows `{rows}`: {e}")),
        }
    };
    let total = if rows == "-" { None } else { count_rows(rows) };
    let bar = progress(total.map(|t| t.saturating_sub(done.len())), "rows");
    let (mut failed, mut ran, mut write_error) = (0u64, 0u64, None);
    // Shared with the signal handler, which prints it when a signal stops
    // the batch.
    let usage = Arc::new(Mutex::new(UsageTotals::default()));
    let stopped = (Arc::clone(&usage), cache.cloned());
    super::signals::report_on_stop(move || {
        let usage = crate::sync::lock(&stopped.0).render();
        usage + &super::cache_summary(stopped.1.as_ref())
    });
    let pending = reader
        .lines()
        .enumerate()
        .map(|(i, line)| (i as u64 + 1, line))
        .filter(|(number, line)| {
            !done.contains(*number) && line.as_ref().map_or(true, |l| !l.trim().is_empty())
        })
        .map(|(number, line)| {
            let mut inputs = parse_row(line).and_then(|mut given| {
                reach.load(declared.inputs().map(|(_, p)| (&*p.name, &p.ty)), &mut given)?;
                Ok(given)
            });
            let mut row_data = Fields::new();
            if let (Some(names), Ok(given)) = (&input_names, &mut inputs) {
                let (taken, kept) = std::mem::take(given)
                    .into_iter()
                    .partition(|(name, _)| names.iter().any(|n| n == name));
                (*given, row_data) = (taken, kept);
            }
            Row { number, inputs, row_data }
        });
    run_batch(engine, contract, pending, jobs, options, |row: RowDone| {
        ran += 1;
        failed += u64::from(row.failed);
        // The lock is let go before the write: after a signal, writes wait
        // for ever, and the signal handler reads the usage.
        let (tokens, cost) = {
            let mut usage = crate::sync::lock(&usage);
            usage.merge(&row.usage);
            (usage.tokens(), usage.cost_usd())
        };
        if write_error.is_none() {
            write_error = write_line(&mut sink, &row.line).err();
        }
        if let Some(bar) = &bar {
            bar.inc(1);
            let (input, output) = tokens;
            let cost = cost.map(|c| format!(", {c:.4} USD")).unwrap_or_default();
            bar.set_message(format!("{failed} failed, {} tokens{cost}", input + output));
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if let Some(message) = write_error {
        return super::usage(&message);
    }
    let skipped = match done.len() {
        0 => String::new(),
        already => format!(", {already} already done"),
    };
    eprintln!("batch: {ran} rows run, {failed} failed{skipped}");
    let usage = crate::sync::lock(&usage).render();
    eprint!("{usage}{}", super::cache_summary(cache));
    if failed > 0 { ExitCode::from(3) } else { ExitCode::SUCCESS }
}

/// The row numbers a results file holds, as sorted, disjoint runs of
/// consecutive numbers (first, last). A batch writes its results in row
/// order, so a file holds a run per resumed stop and per blank line of the
/// rows, not one entry per row: resuming a batch of millions of rows keeps
/// a few numbers in memory.
#[derive(Debug, Default)]
struct Done {
    runs: Vec<(u64, u64)>,
}

impl Done {
    /// Adds `row`; call [`Done::settle`] before asking.
    fn insert(&mut self, row: u64) {
        match self.runs.last_mut() {
            Some((_, last)) if last.checked_add(1) == Some(row) => *last = row,
            _ => self.runs.push((row, row)),
        }
    }

    /// Sorts the runs and merges those that touch or overlap.
    fn settle(&mut self) {
        self.runs.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.runs.len());
        for &(first, last) in &self.runs {
            match merged.last_mut() {
                Some((_, end)) if first <= end.saturating_add(1) => *end = (*end).max(last),
                _ => merged.push((first, last)),
            }
        }
        self.runs = merged;
    }

    fn contains(&self, row: u64) -> bool {
        let after = self.runs.partition_point(|&(first, _)| first <= row);
        after > 0 && row <= self.runs[after - 1].1
    }

    /// How many rows.
    fn len(&self) -> u64 {
        self.runs
            .iter()
            .fold(0, |n, (first, last)| n.saturating_add((last - first).saturating_add(1)))
    }
}

/// One line of a results file: only its row number is read.
#[derive(serde::Deserialize)]
struct ResultLine {
    row: u64,
}

/// The row numbers RESULTS holds and the file opened for appending; a last
/// line a kill cut short is cut off. The file is read a line at a time.
fn open_results(path: &Path) -> Result<(Done, File), String> {
    let shown = path.display();
    let mut done = Done::default();
    // The length of the whole lines: a last line without its newline was
    // cut short by a kill.
    let mut whole = 0u64;
    match File::open(path) {
        Ok(file) => {
            let mut reader = BufReader::new(file);
            let mut line = Vec::new();
            for number in 1.. {
                line.clear();
                let read = reader
                    .read_until(b'\n', &mut line)
                    .map_err(|e| format!("cannot read results `{shown}`: {e}"))?;
                if line.last() != Some(&b'\n') {
                    break;
                }
                whole += read as u64;
                match serde_json::from_slice::<ResultLine>(&line) {
                    Ok(result) => done.insert(result.row),
                    Err(_) => {
                        return Err(format!(
                            "line {number} of `{shown}` is not a batch result; use another `--out` file"
                        ));
                    }
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read results `{shown}`: {e}")),
    }
    done.settle();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot write results `{shown}`: {e}"))?;
    file.set_len(whole).map_err(|e| format!("cannot repair `{shown}`: {e}"))?;
    Ok((done, file))
}

fn parse_row(line: std::io::Result<String>) -> Result<Fields, String> {
    match serde_json::from_str::<Val>(&line.map_err(|e| format!("cannot read the row: {e}"))?) {
        Ok(Val::Object(inputs)) => Ok(inputs.into_fields()),
        Ok(other) => Err(format!("a row must be a JSON object of inputs, got {}", other.kind())),
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

/// A progress bar on stderr when it is a terminal, counting `unit`s.
pub(super) fn progress(total: Option<u64>, unit: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let (bar, template) = match total {
        Some(total) => (
            ProgressBar::new(total),
            format!("{{bar:30}} {{pos}}/{{len}} {unit}, {{msg}}, {{per_sec}}, ETA {{eta}}"),
        ),
        None => (
            ProgressBar::new_spinner(),
            format!("{{spinner}} {{pos}} {unit}, {{msg}}, {{per_sec}}"),
        ),
    };
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    Some(bar)
}

#[cfg(test)]
mod tests {
    use super::{Done, open_results};

    fn done(rows: &[u64]) -> Done {
        let mut done = Done::default();
        for &row in rows {
            done.insert(row);
        }
        done.settle();
        done
    }

    #[test]
    fn rows_in_order_are_one_run() {
        let rows: Vec<u64> = (1..=100_000).collect();
        let done = done(&rows);
        assert_eq!(done.runs, [(1, 100_000)]);
        assert_eq!(done.len(), 100_000);
        assert!(done.contains(1) && done.contains(100_000));
        assert!(!done.contains(0) && !done.contains(100_001));
    }

    #[test]
    fn gaps_repeats_and_disorder_are_kept_exactly() {
        // Blank line 3, a resumed run that rewrote row 5, rows out of order.
        let done = done(&[1, 2, 4, 5, 5, 6, 9, 8, 20, u64::MAX]);
        assert_eq!(done.runs, [(1, 2), (4, 6), (8, 9), (20, 20), (u64::MAX, u64::MAX)]);
        assert_eq!(done.len(), 9);
        let held: Vec<u64> = (0..=21).filter(|&r| done.contains(r)).collect();
        assert_eq!(held, [1, 2, 4, 5, 6, 8, 9, 20]);
        assert!(done.contains(u64::MAX));
    }

    #[test]
    fn no_results_hold_no_row() {
        let done = done(&[]);
        assert_eq!(done.len(), 0);
        assert!(!done.contains(1));
    }

    #[test]
    fn a_cut_last_line_is_not_done_and_is_cut_off() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("out.jsonl");
        let whole = "{\"row\": 1, \"outputs\": {}}\n{\"row\": 3, \"error\": {}}\n";
        std::fs::write(&path, format!("{whole}{{\"row\": 4, \"outp")).expect("written");
        let (done, _file) = open_results(&path).expect("results");
        assert_eq!(done.runs, [(1, 1), (3, 3)]);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), whole);
    }

    #[test]
    fn a_line_without_a_row_number_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("out.jsonl");
        std::fs::write(&path, "{\"row\": 1}\n{\"name\": \"x\"}\n").expect("written");
        let error = open_results(&path).expect_err("not results");
        assert!(error.starts_with("line 2 of `"), "{error}");
        assert!(error.ends_with("is not a batch result; use another `--out` file"), "{error}");
    }
}
