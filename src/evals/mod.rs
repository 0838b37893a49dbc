//! Running `eval` blocks: the library side of `ignite eval`.
//!
//! Input: a checked program's [`ir::Eval`]s and [`Options`]. Output: one
//! [`EvalRun`] per selected eval: every sample of every row (its scores and
//! latency in memory; its inputs, outputs or error and usage in a
//! [`SampleFile`] when [`Options::details`] asks) and each score's mean
//! with its 95% interval.
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
//! While the samples run, [`Running`] summarizes what finished at any
//! moment: a stop (Ctrl-C) saves that much.
//!
//! | file | concept |
//! | --- | --- |
//! | `dataset.rs` | JSON Lines rows, read a line at a time, checked before anything runs |
//! | `stats.rs` | Wilson and bootstrap intervals, percentiles |
//! | `samples.rs` | a finished sample as kept in memory, the others' details on disk |
//! | `compare.rs` | a saved run as a baseline: paired differences, rows that got worse |
//! | `report.rs` | human, JSON, JUnit and Markdown reports; the `--save` file |

pub(crate) mod compare;
pub(crate) mod dataset;
pub(crate) mod report;
pub(crate) mod samples;
pub(crate) mod stats;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::effects::Effects;
use crate::eval::{self, Val};
use crate::ir::{self, Judge, ScoreKind, ScoreValue};
use crate::runtime::{Engine, RunOptions};
use crate::usage::UsageTotals;
use dataset::{DatasetError, Row, Rows};
pub(crate) use samples::{Sample, SampleFile};
use stats::Estimate;

/// The effect stores of one sample's run, by sample number.
pub(crate) type Stores<'s> = dyn Fn(u32) -> Effects + Send + Sync + 's;

/// How many failed runs a run keeps the error of (the first, in row then
/// sample order; every error is in the samples' details).
pub(crate) const FIRST_FAILURES: usize = 5;

/// How to run the evals.
pub(crate) struct Options<'o> {
    /// Only evals whose name contains this text.
    pub filter: Option<String>,
    /// Samples run at once (at least 1).
    pub jobs: usize,
    /// Samples of each row, instead of each eval's `repeat`.
    pub repeat: Option<u32>,
    /// Keep every sample's details (inputs, expected value, outputs,
    /// errors, usage) in a [`SampleFile`], for a document or a page.
    pub details: bool,
    /// The stores of each sample's run.
    pub stores: &'o Stores<'o>,
    /// Called after each sample with (samples done, samples in all).
    pub progress: &'o (dyn Fn(usize, usize) + Sync),
    /// Called when an eval's samples start, with what finishes as they run
    /// (a stop saves it: [`Running::partial`]).
    pub started: &'o (dyn Fn(Arc<Running>) + Sync),
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

/// A failed run: its row's id, the sample number and the error.
pub(crate) type Failure = (String, u32, String);

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
    /// Samples it was to run (rows × repeat).
    pub planned: usize,
    /// Every finished sample, in row then sample order.
    pub samples: Vec<Sample>,
    /// Their details, when kept ([`Options::details`]).
    pub details: Option<Arc<Mutex<SampleFile>>>,
    /// Every sample's usage, added up.
    pub usage: UsageTotals,
    /// The first [`FIRST_FAILURES`] failed runs, in row then sample order.
    pub first_failures: Vec<Failure>,
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
        self.samples.iter().filter(|s| s.failed).count()
    }

    /// Rows (distinct ids) among the samples.
    #[must_use]
    pub(crate) fn rows(&self) -> usize {
        let mut ids: Vec<&str> = self.samples.iter().map(|s| s.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
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

    /// The details of `sample` (one of [`EvalRun::samples`]); empty when
    /// they were not kept.
    ///
    /// # Errors
    /// The sample file cannot be read.
    pub(crate) fn details(&self, sample: &Sample) -> std::io::Result<Map<String, Value>> {
        match (&self.details, sample.details) {
            (Some(file), Some(at)) => crate::sync::lock(file).read(at),
            _ => Ok(Map::new()),
        }
    }
}

/// What an eval's finished samples gave so far.
#[derive(Debug, Default)]
struct Collected {
    samples: Vec<Sample>,
    usage: UsageTotals,
    first_failures: Vec<(usize, Failure)>,
    /// Why the sample file could not be written, the first time.
    broken: Option<String>,
}

/// An eval while its samples run: what finished so far can be summarized
/// at any moment ([`Running::partial`]), from another thread.
#[derive(Debug)]
pub(crate) struct Running {
    eval: ir::Eval,
    contract: String,
    repeat: u32,
    planned: usize,
    details: Option<Arc<Mutex<SampleFile>>>,
    collected: Mutex<Collected>,
}

impl Running {
    /// Adds a finished sample (its details to the sample file).
    fn add(&self, done: Done) {
        let Done { mut sample, usage, error, details } = done;
        let mut broken = None;
        if let (Some(file), Some(details)) = (&self.details, details) {
            match crate::sync::lock(file).append(&details) {
                Ok(at) => sample.details = Some(at),
                Err(e) => broken = Some(format!("cannot keep the samples' details: {e}")),
            }
        }
        let mut collected = crate::sync::lock(&self.collected);
        collected.broken = collected.broken.take().or(broken);
        collected.usage.merge(&usage);
        if let Some(error) = error {
            let at = (sample.line, sample.sample as usize);
            let first = &mut collected.first_failures;
            let place = first.partition_point(|(line, f)| (*line, f.1 as usize) < at);
            if place < FIRST_FAILURES {
                first.insert(place, (sample.line, (sample.id.clone(), sample.sample, error)));
                first.truncate(FIRST_FAILURES);
            }
        }
        collected.samples.push(sample);
    }

    /// Samples finished so far.
    fn finished(&self) -> usize {
        crate::sync::lock(&self.collected).samples.len()
    }

    /// What finished so far, as a run stopped at this moment.
    #[must_use]
    pub(crate) fn partial(&self) -> EvalRun {
        self.summarize(true)
    }

    /// What finished, summarized; `stopped` when not every sample ran.
    fn summarize(&self, stopped: bool) -> EvalRun {
        let collected = crate::sync::lock(&self.collected);
        let mut samples = collected.samples.clone();
        samples.sort_by_key(|s| (s.line, s.sample));
        let (scores, requires) = summaries(&self.eval, &samples);
        EvalRun {
            name: self.eval.name.clone(),
            contract: self.contract.clone(),
            dataset: self.eval.dataset.clone(),
            repeat: self.repeat,
            planned: self.planned,
            stopped: stopped || samples.len() < self.planned,
            samples,
            details: self.details.clone(),
            usage: collected.usage.clone(),
            first_failures: collected.first_failures.iter().map(|(_, f)| f.clone()).collect(),
            scores,
            requires,
        }
    }
}

/// A sample as it finished: its summary, usage, error and details.
struct Done {
    sample: Sample,
    usage: UsageTotals,
    error: Option<String>,
    details: Option<Map<String, Value>>,
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
    let planned = rows * repeat as usize;
    let reader = Rows::open(&eval.dataset).map_err(fail)?;
    let details = if options.details {
        let file = SampleFile::new()
            .map_err(|e| fail(format!("cannot make a file for the samples' details: {e}")))?;
        Some(Arc::new(Mutex::new(file)))
    } else {
        None
    };
    let running = Arc::new(Running {
        eval: eval.clone(),
        contract: contract.name.clone(),
        repeat,
        planned,
        details,
        collected: Mutex::new(Collected::default()),
    });
    (options.started)(Arc::clone(&running));
    run_samples(engine, eval, options, reader, &running);
    if let Some(broken) = crate::sync::lock(&running.collected).broken.clone() {
        return Err(fail(broken));
    }
    Ok(running.summarize(false))
}

/// Runs every sample of the rows `reader` gives on `options.jobs`
/// threads, each one added to `running` as it finishes.
fn run_samples(
    engine: &Engine,
    eval: &ir::Eval,
    options: &Options<'_>,
    reader: Rows,
    running: &Running,
) {
    let repeat = running.repeat;
    // The rows were checked: a row that fails now (the file changed) is skipped.
    let work = Mutex::new(reader.filter_map(Result::ok).flat_map(move |row| {
        let row = Arc::new(row);
        (0..repeat).map(move |sample| (Arc::clone(&row), sample))
    }));
    let total = running.planned;
    std::thread::scope(|threads| {
        for _ in 0..options.jobs.clamp(1, total.max(1)) {
            threads.spawn(|| {
                loop {
                    // Stopped (Ctrl-C): no new sample starts.
                    if crate::shutdown::halted() {
                        return;
                    }
                    let next = crate::sync::lock(&work).next();
                    let Some((row, sample)) = next else { return };
                    running.add(run_sample(engine, eval, &row, sample, options));
                    (options.progress)(running.finished(), total);
                }
            });
        }
    });
}

/// Runs one sample of `row` and scores it.
fn run_sample(
    engine: &Engine,
    eval: &ir::Eval,
    row: &Row,
    sample: u32,
    options: &Options<'_>,
) -> Done {
    let started = Instant::now();
    let engine = engine.sibling((options.stores)(sample));
    let mut usage = UsageTotals::default();
    let run = engine.run(eval.contract, &row.inputs, &RunOptions::default());
    let (outputs, error, scores) = match run {
        Ok(out) => {
            usage.merge(&out.usage);
            let scores: Vec<Result<f64, String>> = eval
                .scores
                .iter()
                .map(|score| score_of(&engine, score, &out.outputs, row, &mut usage))
                .collect();
            (Some(out.outputs), None, scores)
        }
        Err(e) => {
            let failed = eval.scores.iter().map(|_| Err("the run failed".to_owned()));
            (None, Some(e.to_string()), failed.collect())
        }
    };
    let latency = started.elapsed();
    let details = options.details.then(|| {
        let mut errors = Map::new();
        for (score, scored) in eval.scores.iter().zip(&scores) {
            if let Err(why) = scored {
                errors.insert(score.name.clone(), why.clone().into());
            }
        }
        report::details(row, outputs, error.as_deref(), errors, &usage)
    });
    let sample = Sample {
        line: row.line,
        id: row.id.clone(),
        sample,
        failed: error.is_some(),
        scores: scores.into_iter().map(Result::ok).collect(),
        latency,
        details: None,
    };
    Done { sample, usage, error, details }
}

/// Score `score` of a sample whose run gave `outputs`.
fn score_of(
    engine: &Engine,
    score: &ir::Score,
    outputs: &Map<String, Value>,
    row: &Row,
    usage: &mut UsageTotals,
) -> Result<f64, String> {
    let mut vars: Vec<Val> = outputs.values().map(Val::from).collect();
    vars.push(Val::from(Value::Object(row.inputs.clone())));
    vars.push(Val::from(&row.expected));
    let value = match &score.value {
        ScoreValue::Expr(expr) => match eval::eval(expr, vars.as_slice()) {
            Ok(value) => value.into_json(),
            Err(e) => return Err(e.message),
        },
        ScoreValue::Judge { judge, args } => {
            let mut given = Map::new();
            for (name, expr) in args {
                match eval::eval(expr, vars.as_slice()) {
                    Ok(value) => given.insert(name.clone(), value.into_json()),
                    Err(e) => return Err(format!("argument `{name}`: {}", e.message)),
                };
            }
            call_judge(engine, *judge, &given, usage)?
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
fn number(value: &Value, kind: ScoreKind) -> Result<f64, String> {
    match value {
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) if kind != ScoreKind::Rate => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(x),
            _ => Err(format!("the score {n} is not a finite number")),
        },
        Value::Object(fields) if fields.contains_key("score") => number(&fields["score"], kind),
        other => Err(format!(
            "a score is a boolean or a number (or a record with a `score`), got {}",
            crate::ir::describe(other)
        )),
    }
}

/// Each score's summary over `samples` of `eval`, and each `require`
/// as written with whether it holds.
fn summaries(eval: &ir::Eval, samples: &[Sample]) -> (Vec<ScoreSummary>, Vec<(String, bool)>) {
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
            let failed = samples.iter().filter(|s| !s.failed && s.scores[i].is_none()).count();
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
    (scores, requires)
}
