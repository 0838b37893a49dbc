//! Run traces: what ran, for how long, with what result.
//!
//! The runtime records one entry per node; agents add one per model call
//! (with retries and token usage), per wait for a provider's limits and
//! per tool call. Model calls also add to the run's [`UsageTotals`] and
//! spend on its budgets ([`Meter`]s, which admit each request first). `ignite run --trace`
//! prints [`Trace::render`] on stderr, also when the run fails. Recording is
//! a no-op when disabled. A run journaled or recorded also hands every
//! entry, as it is recorded, to its [`Timeline`]s (the journal's file
//! keeps them for `ignite report`).

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::budget::Meter;
use crate::failure::NodeError;
use crate::usage::{ModelCall, UsageTotals};

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Node path: `Report.pricing > tax`; agent steps add ` > model` or ` > tool name`.
    pub path: String,
    /// `compute`, `tool`, `agent`, `compose`, `guard`, `input`, `model`, `tool_call`,
    /// `progress` (an MCP server's progress notification during a call).
    pub kind: &'static str,
    /// `ok`, `failed`, `retry`, ...
    pub status: &'static str,
    /// When it started, from the start of the run.
    pub start: Duration,
    /// How long it took.
    pub duration: Duration,
    /// Extra facts: tokens, attempt, error text.
    pub detail: String,
}

/// Where a run's entries go as they are recorded, besides its trace: a
/// journal or recording file (see `effects`).
pub trait Timeline: Send + Sync + std::fmt::Debug {
    /// Keeps `entry`, one of the run's. One that cannot be kept (a full
    /// disk) costs the timeline that entry, not the run.
    fn step(&self, entry: &Entry);
}

/// A thread-safe list of entries for one run.
#[derive(Debug)]
pub struct Trace {
    /// Entries are kept for [`Trace::render`].
    keep: bool,
    /// Where entries go as they are recorded.
    timelines: Vec<Arc<dyn Timeline>>,
    origin: Instant,
    entries: Mutex<Vec<Entry>>,
    /// What the model calls that answered spent.
    usage: Mutex<UsageTotals>,
    /// The budgets the run's model calls spend on.
    meters: Mutex<Vec<Arc<Meter>>>,
    /// The `for` nodes whose calls started, with their item counts.
    items: Mutex<Vec<(String, usize)>>,
}

impl Trace {
    /// A trace that records when `enabled`.
    #[must_use]
    pub fn new(enabled: bool) -> Self {
        Self {
            keep: enabled,
            timelines: Vec::new(),
            origin: Instant::now(),
            entries: Mutex::new(Vec::new()),
            usage: Mutex::new(UsageTotals::default()),
            meters: Mutex::new(Vec::new()),
            items: Mutex::new(Vec::new()),
        }
    }

    /// Hands every entry to `timelines` too, as it is recorded (so the
    /// entries are timed even when they are not kept).
    #[must_use]
    pub fn onto(mut self, timelines: Vec<Arc<dyn Timeline>>) -> Self {
        self.timelines = timelines;
        self
    }

    /// Makes the run's model calls spend on `meter` too (a run adds its
    /// contract's budget and `--budget`'s when it starts).
    pub fn add_meter(&self, meter: Arc<Meter>) {
        crate::sync::lock(&self.meters).push(meter);
    }

    /// Lets one model request go out under every budget of the run.
    ///
    /// # Errors
    /// [`NodeError::Budget`] when it would pass one; it must not be sent.
    pub fn admit_model_request(&self) -> Result<(), NodeError> {
        let meters = crate::sync::lock(&self.meters).clone();
        crate::budget::admit(&meters)
    }

    /// True when entries are recorded (kept, or handed to a [`Timeline`]).
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.keep || !self.timelines.is_empty()
    }

    /// Records a step that began at `started` and ends now (`path` is
    /// copied only when it is kept).
    pub fn record(
        &self,
        path: impl Into<String>,
        kind: &'static str,
        status: &'static str,
        started: Instant,
        detail: String,
    ) {
        if !self.enabled() {
            return;
        }
        let entry = self.entry(path, kind, status, started, detail);
        for timeline in &self.timelines {
            timeline.step(&entry);
        }
        if self.keep {
            crate::sync::lock(&self.entries).push(entry);
        }
    }

    /// Records a step for the [`Timeline`]s only, not for `--trace`: the
    /// run's end (with its failure), the scheduler's waits.
    pub fn record_for_timelines(
        &self,
        path: &str,
        kind: &'static str,
        status: &'static str,
        started: Instant,
        detail: String,
    ) {
        if self.timelines.is_empty() {
            return;
        }
        let entry = self.entry(path, kind, status, started, detail);
        for timeline in &self.timelines {
            timeline.step(&entry);
        }
    }

    fn entry(
        &self,
        path: impl Into<String>,
        kind: &'static str,
        status: &'static str,
        started: Instant,
        detail: String,
    ) -> Entry {
        Entry {
            path: path.into(),
            kind,
            status,
            start: started.saturating_duration_since(self.origin),
            duration: started.elapsed(),
            detail,
        }
    }

    /// Records that the `for` node at `path` starts `count` calls, one per
    /// item (each item's line comes when it finished).
    pub fn record_items(&self, path: impl Into<String>, count: usize) {
        if self.enabled() {
            let mut items = crate::sync::lock(&self.items);
            items.push((path.into(), count));
        }
    }

    /// The `for` nodes whose calls started, with their item counts, in
    /// the order they started.
    #[must_use]
    pub fn item_counts(&self) -> Vec<(String, usize)> {
        crate::sync::lock(&self.items).clone()
    }

    /// Records a model call that answered and adds what it spent to the
    /// run's usage (also when the timeline is disabled).
    pub fn record_model(&self, path: &str, started: Instant, detail: String, call: &ModelCall<'_>) {
        crate::sync::lock(&self.usage).add(call);
        if !call.reused {
            let (input, output) = (call.usage.input_tokens, call.usage.output_tokens);
            let cost = call.price.map(|p| p.cost(input, output));
            for meter in crate::sync::lock(&self.meters).iter() {
                meter.spend(input + output, cost);
            }
        }
        if self.enabled() {
            let (input, output) = (call.usage.input_tokens, call.usage.output_tokens);
            let reused = if call.reused { ", reused" } else { "" };
            let cost = call
                .price
                .map_or_else(String::new, |p| format!(", cost ${:.6}", p.cost(input, output)));
            let detail = format!("{detail}, tokens {input} in / {output} out{cost}{reused}");
            self.record(path, "model", "ok", started, detail);
        }
    }

    /// What the model calls that answered spent, per provider and model.
    #[must_use]
    pub fn usage(&self) -> UsageTotals {
        crate::sync::lock(&self.usage).clone()
    }

    /// The entries, ordered by start time then path.
    #[must_use]
    pub fn entries(&self) -> Vec<Entry> {
        let mut entries = crate::sync::lock(&self.entries).clone();
        entries.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| a.path.cmp(&b.path)));
        entries
    }

    /// A timeline table: start, duration, status, kind, path, detail; then
    /// the usage table, when a model answered.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::from("   start  duration  status  kind       node\n");
        let entries = self.entries();
        for e in &entries {
            let _ = writeln!(
                out,
                "{:>6.1}ms {:>7.1}ms  {:<6}  {:<9}  {}{}",
                e.start.as_secs_f64() * 1000.0,
                e.duration.as_secs_f64() * 1000.0,
                e.status,
                e.kind,
                e.path,
                if e.detail.is_empty() { String::new() } else { format!("  ({})", e.detail) }
            );
        }
        let cached = |status: &str| {
            entries.iter().filter(|e| e.kind == "cache" && e.status == status).count()
        };
        let (hits, misses) = (cached("hit"), cached("miss"));
        if hits + misses > 0 {
            let _ = writeln!(out, "cache: {hits} hits, {misses} misses");
        }
        out.push_str(&self.usage().render());
        out
    }
}
