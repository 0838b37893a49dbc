//! Running `eval` blocks: the library side of `ignite eval`.
//!
//! Input: a checked program's [`ir::Eval`]s and [`Options`]. Output: one
//! [`EvalRun`] per selected eval: every sample of every row (outputs or
//! error, scores, usage, latency) and each score's mean with its 95%
//! interval.
//!
//! An eval first reads its whole dataset once ([`dataset::check`]) and
//! stops before any call when a row cannot run, naming every such row by
//! line. Then rows are read again one at a time and each sample runs the
//! contract on the ordinary runtime ([`Engine`]), through the effect
//! stores [`Options::stores`] gives for its sample number (the cache keys
//! them by it, so samples differ and a re-run pays only what changed).
//! A score is evaluated over the outputs, `inputs` and `expected`; a
//! judge's call runs the agent or contract on the same engine. A sample
//! whose run fails scores 0 on every score and keeps its error; a judge
//! that fails or answers junk fails only that score of that sample.
//!
//! | file | concept |
//! | --- | --- |
//! | `dataset.rs` | JSON Lines rows, read a line at a time, checked before anything runs |
//! | `stats.rs` | Wilson and bootstrap intervals, percentiles |
//! | `compare.rs` | a saved run as a baseline: paired differences, rows that got worse |
//! | `report.rs` | human, JSON, JUnit and Markdown reports; the `--save` file |

pub(crate) mod compare;
pub(crate) mod dataset;
pub(crate) mod report;
pub(crate) mod stats;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::effects::Effects;
use crate::eval::{self, Val};
use crate::ir::{self, Judge, ScoreKind, ScoreValue};
use crate::runtime::{Engine, RunOptions};
use crate::usage::UsageTotals;
use dataset::{DatasetError, Row, Rows};
use stats::Estimate;

/// The effect stores of one sample's run, by sample number.
pub(crate) type Stores<'s> = dyn Fn(u32) -> Effects + Send + Sync + 's;

/// How to run the evals.
pub(crate) struct Options<'o> {
    /// Only evals whose name contains this text.
    pub filter: Option<String>,
    /// Samples run at once (at least 1).
    pub jobs: usize,
    /// Samples of each row, instead of each eval's `repeat`.
    pub repeat: Option<u32>,
    /// The stores of each sample's run.
    pub stores: &'o Stores<'o>,
    /// Called after each sample with (samples done, samples in all).
    pub progress: &'o (dyn Fn(usize, usize) + Sync),
}

/// One score's value in one sample.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scored {
    /// A number (a boolean is 1 or 0).
    Value(f64),
    /// The score could not be computed: why.
    Failed(String),
}

/// One sample of one row.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    /// The row's line in the dataset.
    pub line: usize,
    /// The row's `id`.
    pub id: String,
    /// The sample number (from 0).
    pub sample: u32,
    /// The row's inputs.
    pub inputs: Map<String, Value>,
    /// The row's expected value.
    pub expected: Value,
    /// The contract's outputs, when it ran.
    pub outputs: Option<Map<String, Value>>,
    /// Why the run failed.
    pub error: Option<String>,
    /// Each score's value, in the eval's order.
    pub scores: Vec<Scored>,
    /// How long the run and its judges took.
    pub latency: Duration,
    /// What its model calls spent (judges included).
    pub usage: UsageTotals,
}

impl Sample {
    /// Score `i` as a number: 0 when it failed (a failed run scores 0).
    #[must_use]
    pub(crate) fn value(&self, i: usize) -> f64 {
        match self.scores.get(i) {
            Some(Scored::Value(v)) => *v,
            _ => 0.0,
        }
    }
}

/// One score's summary.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScoreSummary {
    /// Its name.
    pub name: String,
    /// True for a rate (every value a boolean).
    pub rate: bool,
    /// The mean and its 95% interval.
    pub estimate: Estimate,
    /// Samples where it could not be computed (the run's failures apart).
    pub failed: usize,
}

/// A finished (or stopped) eval.
#[derive(Debug, Clone)]
pub(crate) struct EvalRun {
    /// The eval's name.
    pub name: String,
    /// The contract it runs.
    pub contract: String,
    /// The dataset.
    pub dataset: PathBuf,
    /// Samples of each row.
    pub repeat: u32,
    /// Every finished sample, in row then sample order.
    pub samples: Vec<Sample>,
    /// Each score's summary, in the eval's order.
    pub scores: Vec<ScoreSummary>,
    /// Each `require` as written and whether it holds.
    pub requires: Vec<(String, bool)>,
    /// True when stopped before every sample ran.
    pub stopped: bool,
}

impl EvalRun {
    /// Samples whose run failed.
    #[must_use]
    pub(crate) fn failures(&self) -> usize {
        self.samples.iter().filter(|s| s.error.is_some()).count()
    }

    /// Rows (distinct ids) among the samples.
    #[must_use]
    pub(crate) fn rows(&self) -> usize {
        let mut ids: Vec<&str> = self.samples.iter().map(|s| s.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    /// Every sample's usage, added up.
    #[must_use]
    pub(crate) fn usage(&self) -> UsageTotals {
        let mut total = UsageTotals::default();
        self.samples.iter().for_each(|s| total.merge(&s.usage));
        total
    }

    /// The 50th and 95th percentile of the samples' latencies.
    #[must_use]
    pub(crate) fn latency(&self) -> (Duration, Duration) {
        let mut ms: Vec<f64> = self.samples.iter().map(|s| s.latency.as_secs_f64()).collect();
        ms.sort_by(f64::total_cmp);
        let at = |p| Duration::from_secs_f64(stats::percentile(&ms, p).max(0.0));
        (at(50.0), at(95.0))
    }

    /// True when every `require` holds.
    #[must_use]
    pub(crate) fn passed(&self) -> bool {
        self.requires.iter().all(|(_, holds)| *holds)
    }
}

/// Why an eval could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EvalError {
    /// The eval.
    pub eval: String,
    /// What is wrong; for rows, one line each.
    pub message: String,
}

/// The evals of `engine`'s program declared in its root file that
/// `options.filter` selects.
#[must_use]
pub(crate) fn selected<'e>(engine: &'e Engine, options: &Options<'_>) -> Vec<&'e ir::Eval> {
    let root = crate::source::FileId(0);
    engine
        .program()
        .evals
        .iter()
        .filter(|e| e.file == root)
        .filter(|e| options.filter.as_deref().is_none_or(|f| e.name.contains(f)))
        .collect()
}

/// Runs `eval` of `engine`'s program.
///
/// # Errors
/// The dataset cannot be read, is empty, or has rows that cannot run
/// (every one named by line): nothing was called.
pub(crate) fn run(
    engine: &Engine,
    eval: &ir::Eval,
    options: &Options<'_>,
) -> Result<EvalRun, EvalError> {
    let program = engine.program();
    let contract = &program[eval.contract];
    let params: Vec<ir::Param> = contract.inputs().map(|(_, p)| p.clone()).collect();
    let fail = |message: String| EvalError { eval: eval.name.clone(), message };
    let rows = match dataset::check(&eval.dataset, &params, contract.span) {
        Ok(rows) => rows,
        Err(DatasetError::Io(message)) => return Err(fail(message)),
        Err(DatasetError::Empty) => {
            return Err(fail(format!("dataset `{}` has no rows", eval.dataset.display())));
        }
        Err(DatasetError::Rows(problems)) => {
            let mut message = format!(
                "{} row problem(s) in dataset `{}`; nothing was run:",
                problems.len(),
                eval.dataset.display()
            );
            for p in &problems {
                message.push_str(&format!("\n  line {}: {}", p.line, p.message));
            }
            return Err(fail(message));
        }
    };
    let repeat = options.repeat.unwrap_or(eval.repeat).max(1);
    let total = rows * repeat as usize;
    let reader = Rows::open(&eval.dataset).map_err(fail)?;
    let samples = run_samples(engine, eval, options, reader, repeat, total);
    let stopped = samples.len() < total;
    Ok(summarize(eval, contract.name.clone(), repeat, samples, stopped))
}

/// Runs every sample of the rows `reader` gives on `options.jobs`
/// threads, in row then sample order.
fn run_samples(
    engine: &Engine,
    eval: &ir::Eval,
    options: &Options<'_>,
    reader: Rows,
    repeat: u32,
    total: usize,
) -> Vec<Sample> {
    // The rows were checked: a row that fails now (the file changed) is skipped.
    let work = Mutex::new(reader.filter_map(Result::ok).flat_map(move |row| {
        let row = Arc::new(row);
        (0..repeat).map(move |sample| (Arc::clone(&row), sample))
    }));
    let done = Mutex::new(Vec::with_capacity(total));
    std::thread::scope(|threads| {
        for _ in 0..options.jobs.clamp(1, total.max(1)) {
            threads.spawn(|| {
                loop {
                    // Stopped (Ctrl-C): no new sample starts.
                    if crate::shutdown::halted() {
                        return;
                    }
                    let next = work.lock().unwrap_or_else(PoisonError::into_inner).next();
                    let Some((row, sample)) = next else { return };
                    let result = run_sample(engine, eval, &row, sample, options);
                    let mut done = done.lock().unwrap_or_else(PoisonError::into_inner);
                    done.push(result);
                    (options.progress)(done.len(), total);
                }
            });
        }
    });
    let mut samples = done.into_inner().unwrap_or_else(PoisonError::into_inner);
    samples.sort_by_key(|s| (s.line, s.sample));
    samples
}

/// Runs one sample of `row` and scores it.
fn run_sample(
    engine: &Engine,
    eval: &ir::Eval,
    row: &Row,
    sample: u32,
    options: &Options<'_>,
) -> Sample {
    let started = Instant::now();
    let engine = engine.sibling((options.stores)(sample));
    let mut usage = UsageTotals::default();
    let run = engine.run(eval.contract, &row.inputs, &RunOptions::default());
    let (outputs, error, scores) = match run {
        Ok(out) => {
            usage.merge(&out.usage);
            let scores = eval
                .scores
                .iter()
                .map(|score| score_of(&engine, score, &out.outputs, row, &mut usage))
                .collect();
            (Some(out.outputs), None, scores)
        }
        Err(e) => {
            let failed = eval.scores.iter().map(|_| Scored::Failed("the run failed".into()));
            (None, Some(e.to_string()), failed.collect())
        }
    };
    Sample {
        line: row.line,
        id: row.id.clone(),
        sample,
        inputs: row.inputs.clone(),
        expected: row.expected.clone(),
        outputs,
        error,
        scores,
        latency: started.elapsed(),
        usage,
    }
}

/// Score `score` of a sample whose run gave `outputs`.
fn score_of(
    engine: &Engine,
    score: &ir::Score,
    outputs: &Map<String, Value>,
    row: &Row,
    usage: &mut UsageTotals,
) -> Scored {
    let mut vars: Vec<Val> = outputs.values().map(Val::from).collect();
    vars.push(Val::from(Value::Object(row.inputs.clone())));
    vars.push(Val::from(&row.expected));
    let value = match &score.value {
        ScoreValue::Expr(expr) => match eval::eval(expr, vars.as_slice()) {
            Ok(value) => value.into_json(),
            Err(e) => return Scored::Failed(e.message),
        },
        ScoreValue::Judge { judge, args } => {
            let mut given = Map::new();
            for (name, expr) in args {
                match eval::eval(expr, vars.as_slice()) {
                    Ok(value) => given.insert(name.clone(), value.into_json()),
                    Err(e) => return Scored::Failed(format!("argument `{name}`: {}", e.message)),
                };
            }
            match call_judge(engine, *judge, &given, usage) {
                Ok(value) => value,
                Err(message) => return Scored::Failed(message),
            }
        }
    };
    number(&value, score.kind)
}

/// Runs a judge: an agent's answer, or a contract's `score` output.
fn call_judge(
    engine: &Engine,
    judge: Judge,
    given: &Map<String, Value>,
    usage: &mut UsageTotals,
) -> Result<Value, String> {
    match judge {
        Judge::Agent(agent) => {
            let (answer, spent) = engine.call_agent(agent, given);
            usage.merge(&spent);
            answer.map_err(|e| format!("judge `{}` failed: {e}", engine.program()[agent].name))
        }
        Judge::Contract(contract) => {
            let name = &engine.program()[contract].name;
            let out = engine
                .run(contract, given, &RunOptions::default())
                .map_err(|e| format!("judge `{name}` failed: {e}"))?;
            usage.merge(&out.usage);
            Ok(out.outputs.get("score").cloned().unwrap_or(Value::Null))
        }
    }
}

/// A score's value as a number: a boolean is 1 or 0, a number itself, a
/// record its numeric `score`; anything else fails with what it was.
fn number(value: &Value, kind: ScoreKind) -> Scored {
    match value {
        Value::Bool(b) => Scored::Value(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) if kind != ScoreKind::Rate => match n.as_f64() {
            Some(x) if x.is_finite() => Scored::Value(x),
            _ => Scored::Failed(format!("the score {n} is not a finite number")),
        },
        Value::Object(fields) if fields.contains_key("score") => number(&fields["score"], kind),
        other => Scored::Failed(format!(
            "a score is a boolean or a number (or a record with a `score`), got {}",
            crate::ir::describe(other)
        )),
    }
}

/// The summaries of `samples` of `eval`.
fn summarize(
    eval: &ir::Eval,
    contract: String,
    repeat: u32,
    samples: Vec<Sample>,
    stopped: bool,
) -> EvalRun {
    let scores: Vec<ScoreSummary> = eval
        .scores
        .iter()
        .enumerate()
        .map(|(i, score)| {
            let values: Vec<f64> = samples.iter().map(|s| s.value(i)).collect();
            let rate = match score.kind {
                ScoreKind::Rate => true,
                ScoreKind::Number => false,
                ScoreKind::Unknown => values.iter().all(|v| *v == 0.0 || *v == 1.0),
            };
            let failed = samples
                .iter()
                .filter(|s| s.error.is_none() && matches!(s.scores[i], Scored::Failed(_)))
                .count();
            ScoreSummary {
                name: score.name.clone(),
                rate,
                estimate: stats::estimate(&values, rate),
                failed,
            }
        })
        .collect();
    let means: Vec<Val> = scores.iter().map(|s| Val::from(&Value::from(s.estimate.mean))).collect();
    let requires = eval
        .requires
        .iter()
        .map(|require| {
            let holds =
                matches!(eval::eval(&require.condition, means.as_slice()), Ok(Val::Bool(true)));
            (require.text.clone(), holds)
        })
        .collect();
    EvalRun {
        name: eval.name.clone(),
        contract,
        dataset: eval.dataset.clone(),
        repeat,
        samples,
        scores,
        requires,
        stopped,
    }
}
