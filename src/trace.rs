//! Run traces: what ran, for how long, with what result.
//!
//! The runtime records one entry per node; agents add one per model call
//! (with retries and token usage) and per tool call. `ignite run --trace`
//! prints [`Trace::render`] on stderr, also when the run fails. Recording is
//! a no-op when disabled.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Node path: `Report.pricing > tax`; agent steps add ` > model` or ` > tool name`.
    pub path: String,
    /// `compute`, `tool`, `agent`, `compose`, `guard`, `input`, `model`, `tool_call`.
    pub kind: String,
    /// `ok`, `failed`, `retry`, ...
    pub status: String,
    /// When it started, from the start of the run.
    pub start: Duration,
    /// How long it took.
    pub duration: Duration,
    /// Extra facts: tokens, attempt, error text.
    pub detail: String,
}

/// A thread-safe list of entries for one run.
#[derive(Debug)]
pub struct Trace {
    enabled: bool,
    origin: Instant,
    entries: Mutex<Vec<Entry>>,
    /// Tokens in and out of every model call that answered.
    tokens: Mutex<Option<(u64, u64)>>,
}

impl Trace {
    /// A trace that records when `enabled`.
    #[must_use]
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            origin: Instant::now(),
            entries: Mutex::new(Vec::new()),
            tokens: Mutex::new(None),
        }
    }

    /// True when entries are kept.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Records a step that began at `started` and ends now.
    pub fn record(&self, path: &str, kind: &str, status: &str, started: Instant, detail: String) {
        if !self.enabled {
            return;
        }
        let entry = Entry {
            path: path.to_owned(),
            kind: kind.to_owned(),
            status: status.to_owned(),
            start: started.saturating_duration_since(self.origin),
            duration: started.elapsed(),
            detail,
        };
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(entry);
    }

    /// Records a model call that answered, spending `tokens` (in, out), which
    /// are added to the run's totals (also when the trace is disabled).
    pub fn record_model(
        &self,
        path: &str,
        started: Instant,
        detail: String,
        (input, output): (u64, u64),
    ) {
        // Totals are kept even when the timeline is not (batch progress).
        {
            let mut tokens = self.tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let (total_in, total_out) = tokens.get_or_insert((0, 0));
            *total_in += input;
            *total_out += output;
        }
        if self.enabled {
            let detail = format!("{detail}, tokens {input} in / {output} out");
            self.record(path, "model", "ok", started, detail);
        }
    }

    /// The tokens (in, out) spent by the model calls that answered; `None`
    /// when no model answered.
    #[must_use]
    pub fn tokens(&self) -> Option<(u64, u64)> {
        *self.tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The entries, ordered by start time then path.
    #[must_use]
    pub fn entries(&self) -> Vec<Entry> {
        let mut entries =
            self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        entries.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| a.path.cmp(&b.path)));
        entries
    }

    /// A timeline table: start, duration, status, kind, path, detail; then
    /// the tokens spent, when a model answered.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::from("   start  duration  status  kind       node\n");
        for e in self.entries() {
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
        if let Some((input, output)) = self.tokens() {
            let _ = writeln!(out, "tokens: {input} in / {output} out");
        }
        out
    }
}
