//! [`Observer`]: what the scheduler's core tells the parts that watch a
//! run, and the three a run has: the timeline ([`Trace`]), OpenTelemetry
//! spans ([`Span`]) and the journal's activity tokens ([`Activity`], which
//! a durable journal such as Restate's waits on before it starts steps).
//!
//! The core calls the hooks; it never names a trace, a span or a token.
//! Each observer keeps what it needs per execution (and per `for` of
//! calls) in its [`Observer::Scope`], which the core stores beside the
//! execution, and hands a started call its [`Observer::Call`] (the tool or
//! agent task takes the trace, its span and the token with it). A run's
//! observers are a tuple, [`Watchers`]: each hook calls the three in turn,
//! statically, so a run with nothing watched costs a few branches.
//!
//! | hook | trace | spans | activity |
//! | --- | --- | --- | --- |
//! | run started / ended | a `run` line for the journal, with the failure | the run span | |
//! | execution started / finished / failed | a `compose` line | the `compose` node's span | |
//! | a `for` starts its calls | its item count | the `for` node's span | |
//! | node finished (on the scheduler's threads) | a line | a node span (not per item) | |
//! | nodes skipped (unchosen arms) | a `skipped` line | | |
//! | call started / finished | a line when it finished (and a `wait` line for the journal, for the thread's wait it ended) | the call's span | the task's token |
//! | answer handled, thread waiting | the wait starts | | the thread's token goes |
//!
//! The trace hands its lines to the run's journal or recording too (see
//! [`Trace::onto`]): they are what `ignite report` draws a run's timeline
//! from.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::RunError;
use crate::effects::Activity;
use crate::telemetry::{RunSpan, Span};
use crate::trace::Trace;

/// A node (or item, or call) as the observers see it. The path
/// (`Root.child > node[3]`) is built only when an observer shows it.
pub(super) struct Site<'a> {
    /// Builds the path.
    pub(super) path: &'a dyn Fn() -> String,
    /// What it is: `compute`, `guard`, `tool`, `compose`, ...
    pub(super) label: &'static str,
    /// The agent an agent call runs.
    pub(super) agent: Option<&'a str>,
    /// An item of a `for` (which has no span of its own).
    pub(super) item: bool,
}

/// Watches a run: the core calls these as the run goes.
pub(super) trait Observer: Sync {
    /// What it keeps per execution and per `for` of calls: the parent of
    /// the spans of their nodes.
    type Scope: Clone + Send + Sync;
    /// What a started call's task carries.
    type Call: Send;

    /// The run of `contract` starts: the root execution's scope.
    fn run_started(&self, contract: &str) -> Self::Scope;
    /// The run ended, failed with `error` when there is one.
    fn run_ended(&self, scope: &Self::Scope, error: Option<&RunError>);
    /// True when the nodes under `scope` are timed (only then does the
    /// core read the clock for them).
    fn timed(&self, scope: &Self::Scope) -> bool;
    /// True when the nodes a branch leaves unchosen are wanted.
    fn wants_skipped(&self) -> bool;
    /// The call at `call` starts a child execution under `parent`.
    fn exec_started(&self, parent: &Self::Scope, call: &Site<'_>) -> Self::Scope;
    /// A child execution gave its outputs to the call at `call`.
    fn exec_finished(&self, scope: &Self::Scope, call: &Site<'_>);
    /// A child execution failed with `code` (on its way to a `try` or
    /// out of the run).
    fn exec_failed(&self, scope: &Self::Scope, code: &str);
    /// A `for` node at `node` starts its calls, one per item of `items`.
    fn group_started(&self, parent: &Self::Scope, node: &Site<'_>, items: usize) -> Self::Scope;
    /// Every item of a `for` node's calls gave its value.
    fn group_finished(&self, scope: &Self::Scope);
    /// A node (or item) the scheduler's threads ran finished; `started`
    /// is when it started (the core read the clock: [`Observer::timed`]).
    fn node_finished(
        &self,
        scope: &Self::Scope,
        node: &Site<'_>,
        started: Instant,
        error: Option<&str>,
    );
    /// A node only unchosen arms read will not run.
    fn skipped(&self, node: &Site<'_>);
    /// A tool or agent call starts under `scope`.
    fn call_started(&self, scope: &Self::Scope, call: &Site<'_>) -> Self::Call;
    /// A call started at `started` answered, and the core handled it.
    fn call_finished(&self, call: &Site<'_>, started: Instant, ok: bool);
    /// The scheduler's thread handled an answer it found waiting.
    fn answered(&self);
    /// The scheduler's thread has nothing to do and waits for an answer
    /// (the one it gets is handled as its own).
    fn waiting(&self);
}

/// A run's observers: the timeline, the spans, the activity tokens.
pub(super) type Watchers<'a> = (Tracing<'a>, Spans<'a>, Tokens<'a>);

/// What a started tool or agent call carries: the timeline (its model
/// calls and tool calls record there), its span, the activity to hold a
/// token of while it runs.
pub(super) type Watch = (Arc<Trace>, Span, Option<Arc<Activity>>);

/// The run's observers.
pub(super) fn watchers<'a>(
    trace: &'a Arc<Trace>,
    span: &'a RunSpan,
    activity: Option<&'a Arc<Activity>>,
) -> Watchers<'a> {
    let tracing = Tracing { trace, contract: OnceLock::new(), waiting: Mutex::new(None) };
    (tracing, Spans(span), Tokens(activity))
}

/// The per-node timeline ([`Trace`]).
pub(super) struct Tracing<'a> {
    trace: &'a Arc<Trace>,
    /// The contract run.
    contract: OnceLock<String>,
    /// Since when the scheduler's thread waits for an answer, when tracing.
    waiting: Mutex<Option<Instant>>,
}

impl Observer for Tracing<'_> {
    /// When the run or a child execution started, when tracing.
    type Scope = Option<Instant>;
    type Call = Arc<Trace>;

    fn run_started(&self, contract: &str) -> Self::Scope {
        let _ = self.contract.set(contract.to_owned());
        self.trace.enabled().then(Instant::now)
    }

    fn run_ended(&self, scope: &Self::Scope, error: Option<&RunError>) {
        let (Some(started), Some(contract)) = (*scope, self.contract.get()) else { return };
        let (status, detail) = match error {
            Some(error) => ("failed", format!("{}: {error}", error.code().as_str())),
            None => ("ok", String::new()),
        };
        self.trace.record_for_timelines(contract, "run", status, started, detail);
    }

    fn timed(&self, _: &Self::Scope) -> bool {
        self.trace.enabled()
    }

    fn wants_skipped(&self) -> bool {
        self.trace.enabled()
    }

    fn exec_started(&self, _: &Self::Scope, _: &Site<'_>) -> Self::Scope {
        self.trace.enabled().then(Instant::now)
    }

    fn exec_finished(&self, scope: &Self::Scope, call: &Site<'_>) {
        if let Some(started) = *scope {
            self.trace.record((call.path)(), call.label, "ok", started, String::new());
        }
    }

    fn exec_failed(&self, _: &Self::Scope, _: &str) {}

    fn group_started(&self, _: &Self::Scope, node: &Site<'_>, items: usize) -> Self::Scope {
        if self.trace.enabled() {
            self.trace.record_items((node.path)(), items);
        }
        None
    }

    fn group_finished(&self, _: &Self::Scope) {}

    fn node_finished(
        &self,
        _: &Self::Scope,
        node: &Site<'_>,
        started: Instant,
        error: Option<&str>,
    ) {
        if self.trace.enabled() {
            let (status, detail) =
                error.map_or(("ok", String::new()), |e| ("failed", e.to_owned()));
            self.trace.record((node.path)(), node.label, status, started, detail);
        }
    }

    fn skipped(&self, node: &Site<'_>) {
        self.trace.record((node.path)(), node.label, "skipped", Instant::now(), String::new());
    }

    fn call_started(&self, _: &Self::Scope, _: &Site<'_>) -> Self::Call {
        Arc::clone(self.trace)
    }

    fn call_finished(&self, call: &Site<'_>, started: Instant, ok: bool) {
        if self.trace.enabled() {
            // The answer the thread waited for, when it waited.
            let waited = crate::sync::lock(&self.waiting).take();
            if let Some(since) = waited {
                self.trace.record_for_timelines(&(call.path)(), "wait", "ok", since, String::new());
            }
            let status = if ok { "ok" } else { "failed" };
            self.trace.record((call.path)(), call.label, status, started, String::new());
        }
    }

    fn answered(&self) {}

    fn waiting(&self) {
        if self.trace.enabled() {
            *crate::sync::lock(&self.waiting) = Some(Instant::now());
        }
    }
}

/// OpenTelemetry spans: the run's, one per node, `compose` and `for`
/// spans holding their nodes'.
pub(super) struct Spans<'a>(&'a RunSpan);

impl Spans<'_> {
    /// The span of a node from now on, under `parent`.
    fn node(parent: &Span, node: &Site<'_>) -> Span {
        if !parent.is_recording() {
            return Span::none();
        }
        parent.node(node.path, node.label, node.agent)
    }
}

impl Observer for Spans<'_> {
    type Scope = Span;
    type Call = Span;

    fn run_started(&self, contract: &str) -> Self::Scope {
        Span::run(contract, self.0)
    }

    fn run_ended(&self, scope: &Self::Scope, error: Option<&RunError>) {
        scope.end(error.map(|e| e.code().as_str()));
    }

    fn timed(&self, scope: &Self::Scope) -> bool {
        scope.is_recording()
    }

    fn wants_skipped(&self) -> bool {
        false
    }

    fn exec_started(&self, parent: &Self::Scope, call: &Site<'_>) -> Self::Scope {
        Self::node(parent, call)
    }

    fn exec_finished(&self, scope: &Self::Scope, _: &Site<'_>) {
        scope.end(None);
    }

    fn exec_failed(&self, scope: &Self::Scope, code: &str) {
        scope.fail(code);
    }

    fn group_started(&self, parent: &Self::Scope, node: &Site<'_>, _: usize) -> Self::Scope {
        Self::node(parent, node)
    }

    fn group_finished(&self, scope: &Self::Scope) {
        scope.end(None);
    }

    fn node_finished(
        &self,
        scope: &Self::Scope,
        node: &Site<'_>,
        started: Instant,
        error: Option<&str>,
    ) {
        if !node.item {
            scope.node_since(started, node.path, node.label).end(error);
        }
    }

    fn skipped(&self, _: &Site<'_>) {}

    fn call_started(&self, scope: &Self::Scope, call: &Site<'_>) -> Self::Call {
        Self::node(scope, call)
    }

    fn call_finished(&self, _: &Site<'_>, _: Instant, _: bool) {}

    fn answered(&self) {}

    fn waiting(&self) {}
}

/// The journal's activity tokens ([`Activity`]): the scheduler's thread
/// holds one unless it waits for a task, each task one while it runs (see
/// `effects::track`), each answer one until the thread handled it.
pub(super) struct Tokens<'a>(Option<&'a Arc<Activity>>);

impl Tokens<'_> {
    fn leave(&self) {
        if let Some(activity) = self.0 {
            activity.leave();
        }
    }
}

impl Observer for Tokens<'_> {
    type Scope = ();
    type Call = Option<Arc<Activity>>;

    fn run_started(&self, _: &str) {}

    fn run_ended(&self, (): &(), _: Option<&RunError>) {}

    fn timed(&self, (): &()) -> bool {
        false
    }

    fn wants_skipped(&self) -> bool {
        false
    }

    fn exec_started(&self, (): &(), _: &Site<'_>) {}

    fn exec_finished(&self, (): &(), _: &Site<'_>) {}

    fn exec_failed(&self, (): &(), _: &str) {}

    fn group_started(&self, (): &(), _: &Site<'_>, _: usize) {}

    fn group_finished(&self, (): &()) {}

    fn node_finished(&self, (): &(), _: &Site<'_>, _: Instant, _: Option<&str>) {}

    fn skipped(&self, _: &Site<'_>) {}

    fn call_started(&self, (): &(), _: &Site<'_>) -> Self::Call {
        self.0.cloned()
    }

    fn call_finished(&self, _: &Site<'_>, _: Instant, _: bool) {}

    fn answered(&self) {
        // Handled: the message's token of the run's activity goes.
        self.leave();
    }

    fn waiting(&self) {
        // Waiting, the thread gives its token back; the message's token
        // becomes its own.
        self.leave();
    }
}

/// Three observers, each told of everything in turn.
impl<A: Observer, B: Observer, C: Observer> Observer for (A, B, C) {
    type Scope = (A::Scope, B::Scope, C::Scope);
    type Call = (A::Call, B::Call, C::Call);

    fn run_started(&self, contract: &str) -> Self::Scope {
        (self.0.run_started(contract), self.1.run_started(contract), self.2.run_started(contract))
    }

    fn run_ended(&self, scope: &Self::Scope, error: Option<&RunError>) {
        self.0.run_ended(&scope.0, error);
        self.1.run_ended(&scope.1, error);
        self.2.run_ended(&scope.2, error);
    }

    fn timed(&self, scope: &Self::Scope) -> bool {
        self.0.timed(&scope.0) || self.1.timed(&scope.1) || self.2.timed(&scope.2)
    }

    fn wants_skipped(&self) -> bool {
        self.0.wants_skipped() || self.1.wants_skipped() || self.2.wants_skipped()
    }

    fn exec_started(&self, parent: &Self::Scope, call: &Site<'_>) -> Self::Scope {
        (
            self.0.exec_started(&parent.0, call),
            self.1.exec_started(&parent.1, call),
            self.2.exec_started(&parent.2, call),
        )
    }

    fn exec_finished(&self, scope: &Self::Scope, call: &Site<'_>) {
        self.0.exec_finished(&scope.0, call);
        self.1.exec_finished(&scope.1, call);
        self.2.exec_finished(&scope.2, call);
    }

    fn exec_failed(&self, scope: &Self::Scope, code: &str) {
        self.0.exec_failed(&scope.0, code);
        self.1.exec_failed(&scope.1, code);
        self.2.exec_failed(&scope.2, code);
    }

    fn group_started(&self, parent: &Self::Scope, node: &Site<'_>, items: usize) -> Self::Scope {
        (
            self.0.group_started(&parent.0, node, items),
            self.1.group_started(&parent.1, node, items),
            self.2.group_started(&parent.2, node, items),
        )
    }

    fn group_finished(&self, scope: &Self::Scope) {
        self.0.group_finished(&scope.0);
        self.1.group_finished(&scope.1);
        self.2.group_finished(&scope.2);
    }

    fn node_finished(
        &self,
        scope: &Self::Scope,
        node: &Site<'_>,
        started: Instant,
        error: Option<&str>,
    ) {
        self.0.node_finished(&scope.0, node, started, error);
        self.1.node_finished(&scope.1, node, started, error);
        self.2.node_finished(&scope.2, node, started, error);
    }

    fn skipped(&self, node: &Site<'_>) {
        self.0.skipped(node);
        self.1.skipped(node);
        self.2.skipped(node);
    }

    fn call_started(&self, scope: &Self::Scope, call: &Site<'_>) -> Self::Call {
        (
            self.0.call_started(&scope.0, call),
            self.1.call_started(&scope.1, call),
            self.2.call_started(&scope.2, call),
        )
    }

    fn call_finished(&self, call: &Site<'_>, started: Instant, ok: bool) {
        self.0.call_finished(call, started, ok);
        self.1.call_finished(call, started, ok);
        self.2.call_finished(call, started, ok);
    }

    fn answered(&self) {
        self.0.answered();
        self.1.answered();
        self.2.answered();
    }

    fn waiting(&self) {
        self.0.waiting();
        self.1.waiting();
        self.2.waiting();
    }
}
