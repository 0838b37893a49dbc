//! Batch runs: one contract over many rows of inputs, several rows at once,
//! results handed back in row order.
//!
//! Input: an [`Engine`], a contract, rows (each a number and an inputs
//! object, or why the line is not one) and how many rows may run at once.
//! Output: one [`RowDone`] per row, in the order the rows came, as soon as
//! it and every row before it are done. A row's failure (bad inputs, a
//! failing node) is that row's result and does not stop the others.
//!
//! Rows are pulled lazily by `jobs` worker threads; a worker does not take
//! a row more than `4 × jobs` ahead of the last one handed back, so memory
//! stays flat however many rows there are.

use std::collections::BTreeMap;
use std::sync::mpsc::channel;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use serde_json::{Value, json};

use super::{Engine, RunError, RunOptions, inputs};
use crate::eval::{Fields, Val};
use crate::ir::ContractId;
use crate::trace::Trace;
use crate::usage::UsageTotals;

/// One row to run.
#[derive(Debug)]
pub struct Row {
    /// Its number (the line number in a file).
    pub number: u64,
    /// Its inputs, or why the line is not an inputs object.
    pub inputs: Result<Fields, String>,
    /// Fields of the row kept apart from the inputs (`--keep-fields`),
    /// copied to the result line as `row_data` when there are any.
    pub row_data: Fields,
}

/// One row's result.
#[derive(Debug)]
pub struct RowDone {
    /// `{"row": N, "outputs": {...}}` or `{"row": N, "error": {"code", "message", "node"}}`,
    /// with `"row_data"` when the row kept fields apart.
    pub line: Value,
    /// True when the row failed.
    pub failed: bool,
    /// What its model calls spent.
    pub usage: UsageTotals,
}

/// Runs `contract` once per row, up to `jobs` rows at once, and calls
/// `emit` with each result in row order.
pub fn run_batch(
    engine: &Engine,
    contract: ContractId,
    rows: impl Iterator<Item = Row> + Send,
    jobs: usize,
    options: &RunOptions,
    mut emit: impl FnMut(RowDone),
) {
    let jobs = jobs.max(1);
    let window = (jobs as u64) * 4;
    // The rows and the sequence number of the next one taken.
    let source = Mutex::new((rows, 0u64));
    // How many results were handed back.
    let emitted = Arc::new((Mutex::new(0u64), Condvar::new()));
    let (tx, rx) = channel::<(u64, RowDone)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (tx, source, emitted) = (tx.clone(), &source, Arc::clone(&emitted));
            scope.spawn(move || {
                loop {
                    let (seq, row) = {
                        let mut source = crate::sync::lock(source);
                        let seq = source.1;
                        let (count, more) = &*emitted;
                        let mut done = crate::sync::lock(count);
                        while seq >= *done + window {
                            done = more.wait(done).unwrap_or_else(PoisonError::into_inner);
                        }
                        drop(done);
                        let Some(row) = source.0.next() else { break };
                        source.1 += 1;
                        (seq, row)
                    };
                    if tx.send((seq, run_row(engine, contract, row, options))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut pending = BTreeMap::new();
        let mut next = 0u64;
        for (seq, done) in rx {
            pending.insert(seq, done);
            while let Some(done) = pending.remove(&next) {
                emit(done);
                next += 1;
                let (count, more) = &*emitted;
                *crate::sync::lock(count) = next;
                more.notify_all();
            }
        }
    });
}

fn run_row(engine: &Engine, contract: ContractId, row: Row, options: &RunOptions) -> RowDone {
    let trace = Arc::new(Trace::new(false));
    let number = row.number;
    let span = options.span.with(|| {
        vec![opentelemetry::KeyValue::new(
            "ignite.batch.row",
            i64::try_from(number).unwrap_or(i64::MAX),
        )]
    });
    let options = RunOptions { span, ..options.clone() };
    let result = match row.inputs {
        Ok(inputs) => engine.run_values(contract, inputs, &options, &trace),
        Err(message) => Err(RunError::Contract { message }),
    };
    let usage = trace.usage();
    let mut done = match result {
        Ok(outputs) => {
            RowDone { line: json!({"row": number, "outputs": outputs}), failed: false, usage }
        }
        Err(error) => {
            let mut body = error.to_json();
            // A row's line names the node apart: the message does not repeat it.
            let message = match &error {
                RunError::Inputs { problems, .. } => inputs::one_line(problems),
                RunError::Node { message, .. } => message.clone(),
                other => other.to_string(),
            };
            let node = body.remove("path").unwrap_or(Value::Null);
            let line = json!({"row": number, "error": {
                "code": body["code"],
                "kind": body["kind"],
                "message": message,
                "node": node,
                "cause": body.get("cause").cloned().unwrap_or(Value::Null),
            }});
            RowDone { line, failed: true, usage }
        }
    };
    if !row.row_data.is_empty() {
        done.line["row_data"] = Val::object(row.row_data).into_json();
    }
    done
}
