//! The dependency-counting core: runs the needed nodes of a contract (and
//! of the child contracts it composes) as their dependencies complete.
//!
//! Input: a graph and its work behind [`Nodes`] (the checked program's,
//! see `program.rs`; fake nodes in the tests), an [`Observer`], the
//! bounds of a run ([`Bounds`]). Output: the root's outputs or the run's
//! error.
//!
//! One thread (the caller's) owns every value. Each execution (the root
//! contract, and each `compose` child) has a value table and a count of
//! unfinished dependencies per needed node; a node becomes ready when its
//! count reaches zero. Ready nodes are handled by [`Kind`]:
//! - pure nodes (`compute`, `guard`) are evaluated on the spot; a very
//!   wide batch of them (a fan-out of thousands) is evaluated in parallel,
//!   by this thread and a rayon pool's threads taking chunks of it as
//!   they come (the first chunk starts at once). A chain therefore costs
//!   no hand-off between threads.
//! - a call that composes starts a child execution in the same core, so
//!   the waiting of a child's nodes overlaps with everything else.
//! - a call that waits (tools, agents) is started by [`Nodes::start`] and
//!   reports back over a channel ([`Done`]); at most [`Bounds::limit`]
//!   wait at once.
//! - a branch (`if`/`match` as a node's expression) first waits for what
//!   its condition reads, chooses an arm, and only then asks for what that
//!   arm reads: nodes only unchosen arms read never run ("needed" grows
//!   while the run goes).
//! - a `for` node evaluates its array; a pure body runs per item on the
//!   spot, a call body becomes one job per item, queued like any call (so
//!   the limit bounds them and a failure stops new ones from starting).
//! - a call waiting for approval is no failure: its node stays undone, the
//!   rest of the run goes on, and once nothing else can run the run pauses
//!   ([`RunError::Paused`] lists the calls).
//! - under `try`, a call's failure (or its child execution's) becomes the
//!   call's value; the abandoned child is marked dead, with everything it
//!   started, and its late results are dropped.
//!
//! No recursion follows the graph, so a chain of a million nodes runs.
//! Values do not depend on the order nodes complete in; when several nodes
//! fail, the first failed guard is reported, else the node declared first.
//! After a failure the ready pure nodes still run (no call starts), so a
//! guard that would fail is reported before the error it guards against
//! (and a call a guard gates never starts once the guard failed).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvError, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::exec::{Exec, Gather, arm_of, job_path, node_path, waits_on};
use super::failure::Failure;
use super::job::Job;
use super::nodes::{At, CallKind, Done, Kind, Nodes};
use super::observer::{Observer, Site};
use crate::eval::{Fields, Val};
use crate::ir::NodeId;
use crate::runtime::{Cancel, RunError};

mod calls;

/// Ready pure nodes at or above this count are evaluated as one batch.
const PARALLEL_BATCH: usize = 64;

/// A batch of at least this many jobs is shared with the pool's threads; a
/// smaller one is evaluated by the scheduler's thread alone, for whom
/// handing it out costs more than it saves (a traced fan of 1,000 to 3,000
/// nodes took 0.6 µs a node alone and 0.7–0.9 shared on 2 cores, 10,000
/// took as long either way; BENCHMARKS.md, "The agent loop and small-graph
/// execution won back").
const SHARED_BATCH: usize = 4096;

/// How many jobs of a shared batch a thread takes at a time.
const CHUNK: usize = 32;

/// How much may run at once.
pub(super) struct Bounds {
    /// How many waiting calls may be in flight at once.
    pub(super) limit: usize,
    /// `runner inline`: nothing else happens while a call waits.
    pub(super) inline: bool,
    /// The pool of wide batches of pure nodes; rayon's global pool otherwise.
    pub(super) pool: Option<Arc<rayon::ThreadPool>>,
    /// When the run stops if it has not finished.
    pub(super) deadline: Option<Instant>,
    /// Stops the run as at its deadline when cancelled.
    pub(super) cancel: Option<Cancel>,
}

/// The scheduler of one run.
pub(super) struct Core<'o, N: Nodes, O: Observer<Call = N::Watch>> {
    nodes: N,
    observer: &'o O,
    execs: Vec<Exec<N::Contract, O::Scope>>,
    /// Ready jobs run by this thread (pure nodes, branches, collections, composes).
    pure: Vec<Job>,
    /// Ready waiting calls not yet started.
    waiting: VecDeque<Job>,
    in_flight: usize,
    bounds: Bounds,
    tx: Sender<Done<N::Answer>>,
    rx: Receiver<Done<N::Answer>>,
    /// The calls started, stopped when the run ends.
    tasks: Vec<N::Task>,
    failures: Vec<Failure>,
    /// Calls waiting for approval: the run pauses once nothing else can run.
    paused: Vec<Failure>,
    result: Option<Fields>,
}

impl<'o, N: Nodes, O: Observer<Call = N::Watch>> Core<'o, N, O> {
    pub(super) fn new(nodes: N, observer: &'o O, bounds: Bounds) -> Self {
        let (tx, rx) = channel();
        Core {
            nodes,
            observer,
            execs: Vec::new(),
            pure: Vec::new(),
            waiting: VecDeque::new(),
            in_flight: 0,
            bounds,
            tx,
            rx,
            tasks: Vec::new(),
            failures: Vec::new(),
            paused: Vec::new(),
            result: None,
        }
    }

    /// Runs `contract` from its input values to its `outputs` (indexes),
    /// under the observers' `scope`.
    pub(super) fn run(
        &mut self,
        contract: N::Contract,
        values: Vec<Val>,
        outputs: Vec<usize>,
        scope: O::Scope,
    ) -> Result<Fields, RunError> {
        self.start(contract, values, outputs, None, scope);
        self.drive()
    }

    fn drive(&mut self) -> Result<Fields, RunError> {
        loop {
            while let Ok(done) = self.rx.try_recv() {
                self.complete(done);
                self.observer.answered();
            }
            if !self.failures.is_empty() {
                self.settle();
                return Err(self.first_failure());
            }
            if let Some(outputs) = self.result.take() {
                return Ok(outputs);
            }
            let cancelled = self.bounds.cancel.as_ref().is_some_and(Cancel::is_cancelled);
            let deadline = self.bounds.deadline;
            if cancelled || deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(RunError::Deadline);
            }
            // `runner inline`: nothing else starts while a call waits.
            let held = self.bounds.inline && self.in_flight > 0;
            if self.in_flight < self.bounds.limit && !held {
                if let Some(job) = self.waiting.pop_front() {
                    self.start_waiting(job);
                    continue;
                }
            }
            if !held && !self.pure.is_empty() {
                self.step();
                continue;
            }
            // Nothing can run but what waits for approval: the run pauses.
            if self.in_flight == 0 && !self.paused.is_empty() {
                return Err(self.pause());
            }
            // Nothing to do here: wait for a task. A DAG always has one in
            // flight at this point; a closed channel would mean a lost task.
            self.observer.waiting();
            let received = self.receive(deadline)?;
            match received {
                Ok(done) if self.in_flight > 0 => self.complete(done),
                _ => {
                    return Err(RunError::Contract {
                        message: "internal error: the scheduler has nothing to run".to_owned(),
                    });
                }
            }
        }
    }

    /// The next answer, waited for until `deadline`; a cancellable run
    /// wakes every [`Cancel::NOTICED_WITHIN`] to look.
    fn receive(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Result<Done<N::Answer>, RecvError>, RunError> {
        loop {
            let wake = self
                .bounds
                .cancel
                .as_ref()
                .map(|cancel| (cancel.is_cancelled(), Instant::now() + Cancel::NOTICED_WITHIN));
            if let Some((true, _)) = wake {
                return Err(RunError::Deadline);
            }
            let until = match (deadline, wake) {
                (Some(deadline), Some((_, wake))) => Some(deadline.min(wake)),
                (deadline, wake) => deadline.or(wake.map(|(_, at)| at)),
            };
            match self.nodes.wait(&self.rx, until) {
                Err(RecvTimeoutError::Timeout) if deadline.is_some() && deadline == until => {
                    return Err(RunError::Deadline);
                }
                Err(RecvTimeoutError::Timeout) => {}
                other => return Ok(other.map_err(|_| RecvError)),
            }
        }
    }

    /// Starts an execution of `contract` with its input values.
    fn start(
        &mut self,
        contract: N::Contract,
        values: Vec<Val>,
        outputs: Vec<usize>,
        parent: Option<Job>,
        scope: O::Scope,
    ) {
        let n = self.nodes.size(contract);
        let mut table = vec![Val::Null; n];
        let mut done = vec![false; n];
        for (id, value) in self.nodes.inputs(contract).zip(values) {
            table[id.index()] = value;
            done[id.index()] = true;
        }
        let exec = self.execs.len();
        let dead = parent.is_some_and(|call| {
            let parent = &mut self.execs[call.exec];
            parent.children.push(exec);
            parent.dead
        });
        let mut roots: Vec<NodeId> =
            outputs.iter().map(|&o| self.nodes.output(contract, o)).collect();
        roots.extend(
            (0..n).map(NodeId::from_index).filter(|&i| self.nodes.kind(contract, i) == Kind::Guard),
        );
        self.execs.push(Exec {
            contract,
            values: table,
            pending: vec![0; n],
            needed: vec![false; n],
            done,
            remaining: 0,
            outputs,
            parent,
            chosen: HashMap::new(),
            gathers: HashMap::new(),
            dead,
            children: Vec::new(),
            scope,
        });
        self.demand(exec, roots);
        if self.execs[exec].remaining == 0 {
            self.finish_exec(exec);
        }
    }

    /// What a node waits for before it can run (a branch: before it
    /// chooses, or once chosen, what its arm reads).
    fn deps_of(&self, exec: usize, node: NodeId) -> &[NodeId] {
        let e = &self.execs[exec];
        self.nodes.deps(e.contract, node, arm_of(&self.nodes, e, node))
    }

    /// Marks `roots` and what they wait for as needed; readies those with
    /// nothing left to wait for.
    fn demand(&mut self, exec: usize, roots: Vec<NodeId>) {
        let mut stack = roots;
        while let Some(node) = stack.pop() {
            if std::mem::replace(&mut self.execs[exec].needed[node.index()], true) {
                continue;
            }
            let deps = self.deps_of(exec, node);
            stack.extend_from_slice(deps);
            // A node's pending count depends only on what is done, not on
            // what else is needed: count it now (no list of new nodes).
            let e = &self.execs[exec];
            if e.done[node.index()] {
                continue;
            }
            let pending = deps.iter().filter(|d| !e.done[d.index()]).count();
            let e = &mut self.execs[exec];
            e.remaining += 1;
            e.pending[node.index()] = u32::try_from(pending).unwrap_or(u32::MAX);
            if pending == 0 {
                self.push(Job::node(exec, node));
            }
        }
    }

    /// The call a job makes, if it makes one.
    fn call_of(&self, job: Job) -> Option<CallKind> {
        let e = &self.execs[job.exec];
        let arm = arm_of(&self.nodes, e, job.node);
        self.nodes.call(e.contract, job.node, arm, job.item.is_some())
    }

    /// A job's call, its values and item.
    fn at(&self, job: Job) -> At<'_, N::Contract> {
        let e = &self.execs[job.exec];
        let item = job.item.and_then(|i| Some(&e.gathers.get(&job.node)?.items[i as usize]));
        At {
            contract: e.contract,
            job,
            arm: arm_of(&self.nodes, e, job.node),
            values: &e.values,
            item,
        }
    }

    fn push(&mut self, job: Job) {
        match self.call_of(job) {
            Some(CallKind { waits: true, .. }) => self.waiting.push_back(job),
            _ => self.pure.push(job),
        }
    }

    /// True when `exec` or an execution above it was abandoned.
    fn is_dead(&self, exec: usize) -> bool {
        self.execs[exec].dead
    }

    /// Abandons `exec` and every execution under it (each is marked once,
    /// so a deep composition stays linear).
    fn abandon(&mut self, exec: usize) {
        let mut stack = vec![exec];
        while let Some(exec) = stack.pop() {
            let e = &mut self.execs[exec];
            if !std::mem::replace(&mut e.dead, true) {
                stack.extend_from_slice(&e.children);
            }
        }
    }

    /// Runs ready pure jobs: one on this thread, or a wide batch in parallel.
    fn step(&mut self) {
        if self.pure.len() < PARALLEL_BATCH || self.bounds.inline {
            if let Some(job) = self.pure.pop() {
                self.run_pure(job);
            }
            return;
        }
        let batch = std::mem::take(&mut self.pure);
        let (nodes, observer, execs) = (&self.nodes, self.observer, self.execs.as_slice());
        let results = shared_out(&batch, self.bounds.pool.as_deref(), |&job| {
            evaluate(nodes, observer, execs, job)
        });
        for (job, result) in batch.into_iter().zip(results) {
            match result {
                Some(Ok(value)) => self.finish(job, value),
                Some(Err(failure)) => self.fail(failure),
                None => self.run_pure(job),
            }
        }
    }

    /// Evaluates a pure node or guard (see [`evaluate`]).
    fn evaluate(&self, job: Job) -> Option<Result<Val, Failure>> {
        evaluate(&self.nodes, self.observer, &self.execs, job)
    }

    /// Tells the observers that a job run by the scheduler's threads finished.
    fn observed(&self, job: Job, started: Instant, error: Option<&str>) {
        observed(&self.nodes, self.observer, &self.execs, job, started, error);
    }

    /// After a failure: runs the ready pure nodes and guards (no call
    /// starts), so that a failing guard is known before reporting.
    fn settle(&mut self) {
        loop {
            let jobs = std::mem::take(&mut self.pure);
            let (simple, rest): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|&job| {
                let e = &self.execs[job.exec];
                matches!(self.nodes.kind(e.contract, job.node), Kind::Pure | Kind::Guard)
            });
            self.pure = rest;
            if simple.is_empty() {
                return;
            }
            for job in simple {
                self.run_pure(job);
            }
        }
    }

    fn run_pure(&mut self, job: Job) {
        if self.is_dead(job.exec) {
            return;
        }
        if let Some(result) = self.evaluate(job) {
            return match result {
                Ok(value) => self.finish(job, value),
                Err(failure) => self.fail(failure),
            };
        }
        let e = &self.execs[job.exec];
        match self.nodes.kind(e.contract, job.node) {
            Kind::Branch => match e.chosen.get(&job.node).copied() {
                None => match self.nodes.choose(e.contract, &e.values, job) {
                    Ok(arm) => self.chose(job, arm),
                    Err(failure) => self.fail(failure),
                },
                Some(arm) if self.call_of(job).is_none() => {
                    let timed = self.observer.timed(&e.scope).then(Instant::now);
                    let result = self.nodes.arm(e.contract, arm, &e.values, job);
                    self.settled(job, timed, result);
                }
                Some(_) => self.compose(job),
            },
            Kind::For if job.item.is_none() => self.expand(job),
            _ => self.compose(job),
        }
    }

    /// A job run on this thread gave `result`: the observers are told
    /// (when `started`), then it finishes or fails.
    fn settled(&mut self, job: Job, started: Option<Instant>, result: Result<Val, Failure>) {
        if let Some(started) = started {
            self.observed(job, started, result.as_ref().err().map(|f| f.code.as_str()));
        }
        match result {
            Ok(value) => self.finish(job, value),
            Err(failure) => self.fail(failure),
        }
    }

    /// A branch chose `arm`: what the arm reads is now needed.
    fn chose(&mut self, job: Job, arm: usize) {
        let e = &mut self.execs[job.exec];
        e.chosen.insert(job.node, arm);
        let deps = self.deps_of(job.exec, job.node).to_vec();
        let e = &self.execs[job.exec];
        let pending = deps.iter().filter(|d| !e.done[d.index()]).count();
        self.execs[job.exec].pending[job.node.index()] = u32::try_from(pending).unwrap_or(u32::MAX);
        self.demand(job.exec, deps);
        if pending == 0 {
            self.push(job);
        }
    }

    /// A `for` node: its items, then the body per item.
    fn expand(&mut self, job: Job) {
        let e = &self.execs[job.exec];
        let started = self.observer.timed(&e.scope).then(Instant::now);
        let items = match self.nodes.items(e.contract, &e.values, job) {
            Ok(items) => items,
            Err(failure) => return self.fail(failure),
        };
        if self.call_of(job.with_item(0)).is_none() {
            let mut results = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let item_job = job.with_item(i);
                let item_started = started.map(|_| Instant::now());
                let result = self.nodes.each(e.contract, &e.values, item, item_job);
                if let Some(item_started) = item_started {
                    let error = result.as_ref().err().map(|f| f.code.as_str());
                    self.observed(item_job, item_started, error);
                }
                match result {
                    Ok(value) => results.push(value),
                    Err(failure) => return self.settled(job, started, Err(failure)),
                }
            }
            return self.settled(job, started, Ok(Val::array(results)));
        }
        let count = items.len();
        if count == 0 {
            return self.finish(job, Val::array(Vec::new()));
        }
        let items = items.into_owned();
        let path = || self.path_of(job);
        let site = self.call_site(job, &path);
        let scope = self.observer.group_started(&e.scope, &site, count);
        let gather = Gather { items, results: vec![Val::Null; count], left: count, scope };
        self.execs[job.exec].gathers.insert(job.node, gather);
        for i in 0..count {
            self.push(job.with_item(i));
        }
    }

    /// A job as the observers see its call.
    fn call_site<'a>(&'a self, job: Job, path: &'a dyn Fn() -> String) -> Site<'a> {
        let e = &self.execs[job.exec];
        let arm = arm_of(&self.nodes, e, job.node);
        let (label, agent) = self.nodes.call_label(e.contract, job.node, arm, job.item.is_some());
        Site { path, label, agent, item: job.item.is_some() }
    }

    /// The observers' scope a job's call starts under: its execution's,
    /// or for an item its `for` node's.
    fn scope_of(&self, job: Job) -> &O::Scope {
        let e = &self.execs[job.exec];
        match job.item.and_then(|_| e.gathers.get(&job.node)) {
            Some(gather) => &gather.scope,
            None => &e.scope,
        }
    }

    /// The path of a job in messages and traces: `Root.child > node[3]`.
    fn path_of(&self, job: Job) -> String {
        job_path(&self.nodes, &self.execs, job)
    }

    /// The path of a node, without an item: `Root.child > node`.
    fn node_path(&self, exec: usize, node: NodeId) -> String {
        node_path(&self.nodes, &self.execs, exec, node)
    }

    /// Stores a node's value and readies the dependents it was the last for.
    fn finish(&mut self, job: Job, value: Val) {
        let (exec, node) = (job.exec, job.node);
        if self.observer.wants_skipped()
            && self.nodes.kind(self.execs[exec].contract, node) == Kind::Branch
        {
            self.skipped(exec, node);
        }
        let e = &mut self.execs[exec];
        e.values[node.index()] = value;
        e.done[node.index()] = true;
        e.remaining -= 1;
        let nodes = &self.nodes;
        let mut ready = Vec::new();
        for &dependent in nodes.dependents(e.contract, node) {
            let i = dependent.index();
            if e.needed[i] && !e.done[i] && waits_on(nodes, e, dependent, node) {
                e.pending[i] -= 1;
                if e.pending[i] == 0 {
                    ready.push(dependent);
                }
            }
        }
        let done = e.remaining == 0;
        for dependent in ready {
            self.push(Job::node(exec, dependent));
        }
        if done {
            self.finish_exec(exec);
        }
    }

    /// Tells the observers of the nodes that only the unchosen arms of a
    /// finished branch read.
    fn skipped(&self, exec: usize, node: NodeId) {
        let e = &self.execs[exec];
        let chosen = e.chosen.get(&node).copied();
        let mut seen = vec![false; e.needed.len()];
        let mut stack: Vec<NodeId> = Vec::new();
        let arms = self.nodes.arms(e.contract, node);
        for arm in (0..arms).filter(|&arm| Some(arm) != chosen) {
            stack.extend_from_slice(self.nodes.deps(e.contract, node, Some(arm)));
        }
        while let Some(skipped) = stack.pop() {
            let i = skipped.index();
            if e.needed[i] || e.done[i] || std::mem::replace(&mut seen[i], true) {
                continue;
            }
            let path = || self.node_path(exec, skipped);
            let label = self.nodes.label(e.contract, skipped);
            self.observer.skipped(&Site { path: &path, label, agent: None, item: false });
            stack.extend_from_slice(self.nodes.reads(e.contract, skipped));
        }
    }

    /// Collects a finished execution's outputs: the run's result for the
    /// root, the value of the call that started it for a child.
    fn finish_exec(&mut self, exec: usize) {
        let e = &self.execs[exec];
        let outputs = match self.nodes.collect(e.contract, &e.outputs, &e.values, exec) {
            Ok(outputs) => outputs,
            Err(failure) => return self.fail(failure),
        };
        // A finished child's table is no longer read.
        self.execs[exec].values = Vec::new();
        match self.execs[exec].parent {
            Some(parent) => {
                let path = || self.path_of(parent);
                let site = self.call_site(parent, &path);
                self.observer.exec_finished(&self.execs[exec].scope, &site);
                self.deliver(parent, Ok(Val::object(outputs)));
            }
            None => self.result = Some(outputs),
        }
    }

    /// The first failed guard, else the failure of the earliest-declared
    /// node (and item) among those that failed.
    /// The run's pause: every call waiting for approval, in node order.
    fn pause(&mut self) -> RunError {
        self.paused.sort_by_key(|f| f.job);
        let calls = self.paused.iter().filter_map(Failure::waits_for).flatten().cloned().collect();
        RunError::Paused { calls }
    }

    fn first_failure(&mut self) -> RunError {
        while let Ok(done) = self.rx.try_recv() {
            if N::failed(&done.answer) {
                self.complete(done);
            }
        }
        let (nodes, execs) = (&self.nodes, &self.execs);
        let not_guard = |job: Job| nodes.kind(execs[job.exec].contract, job.node) != Kind::Guard;
        self.failures.sort_by_key(|f| (not_guard(f.job), f.job));
        let failure = self.failures.swap_remove(0);
        let path = self.path_of(failure.job);
        failure.into_error(path)
    }
}

/// Evaluates a pure node or guard; `None` for the others, which the core
/// runs itself. Runs on rayon's threads too for a wide batch.
fn evaluate<N: Nodes, O: Observer>(
    nodes: &N,
    observer: &O,
    execs: &[Exec<N::Contract, O::Scope>],
    job: Job,
) -> Option<Result<Val, Failure>> {
    let e = &execs[job.exec];
    if !matches!(nodes.kind(e.contract, job.node), Kind::Pure | Kind::Guard) {
        return None;
    }
    let started = observer.timed(&e.scope).then(Instant::now);
    let result = nodes.evaluate(e.contract, &e.values, job);
    if let Some(started) = started {
        let error = result.as_ref().err().map(|f| f.code.as_str());
        observed(nodes, observer, execs, job, started, error);
    }
    Some(result)
}

/// Tells the observers that a job run by the scheduler's threads finished.
fn observed<N: Nodes, O: Observer>(
    nodes: &N,
    observer: &O,
    execs: &[Exec<N::Contract, O::Scope>],
    job: Job,
    started: Instant,
    error: Option<&str>,
) {
    let e = &execs[job.exec];
    let path = || job_path(nodes, execs, job);
    let site = Site {
        path: &path,
        label: nodes.label(e.contract, job.node),
        agent: None,
        item: job.item.is_some(),
    };
    observer.node_finished(&e.scope, &site, started, error);
}

/// `work` done on every item of `items`, the results in order. From
/// [`SHARED_BATCH`] items on, they go [`CHUNK`] at a time to whichever
/// thread asks next: this one (the scheduler's) starts at once, with no
/// hand-off, and the other threads of `pool` (rayon's global pool when
/// `None`; started on its first use) join in as they come, so as many
/// threads work as the pool has, this one included. Fewer items never
/// reach the pool.
pub(super) fn shared_out<T: Sync, R: Send + Sync>(
    items: &[T],
    pool: Option<&rayon::ThreadPool>,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    if items.len() < SHARED_BATCH {
        return items.iter().map(work).collect();
    }
    let chunks: Vec<&[T]> = items.chunks(CHUNK).collect();
    let done: Vec<OnceLock<Vec<R>>> = chunks.iter().map(|_| OnceLock::new()).collect();
    let next = AtomicUsize::new(0);
    // Does the next chunk nobody took; false when none is left.
    let take = || {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(chunk) = chunks.get(i) else { return false };
        let _ = done[i].set(chunk.iter().map(&work).collect());
        true
    };
    if take() && next.load(Ordering::Relaxed) < chunks.len() {
        let helpers = pool
            .map_or_else(rayon::current_num_threads, rayon::ThreadPool::current_num_threads)
            .saturating_sub(1);
        match pool {
            Some(pool) => pool.in_place_scope(|scope| share(scope, helpers, &take)),
            None => rayon::in_place_scope(|scope| share(scope, helpers, &take)),
        }
    }
    // Every chunk was taken, and the scope waited for its helpers.
    done.into_iter().flat_map(|chunk| chunk.into_inner().unwrap_or_default()).collect()
}

/// `take` until it is false, on this thread and on `helpers` threads of
/// `scope`'s pool.
fn share<'s>(scope: &rayon::Scope<'s>, helpers: usize, take: &'s (impl Fn() -> bool + Sync)) {
    for _ in 0..helpers {
        scope.spawn(|_| while take() {});
    }
    while take() {}
}
