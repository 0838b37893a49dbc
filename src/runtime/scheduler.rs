//! The scheduler: runs the needed nodes of a contract (and of the child
//! contracts it composes) as their dependencies complete.
//!
//! One thread (the caller's) owns every value. Each execution (the root
//! contract, and each `compose` child) has a value table and a count of
//! unfinished dependencies per node; a node becomes ready when its count
//! reaches zero. Ready nodes are handled by kind:
//! - pure nodes (`compute` of an expression, `guard`) are evaluated on the
//!   spot; a wide batch of them (a fan-out) is evaluated in parallel on a
//!   rayon pool. A chain therefore costs no hand-off between threads.
//! - `compose` starts a child execution in the same scheduler, so the
//!   waiting of a child's nodes overlaps with everything else.
//! - tool and agent nodes are spawned on the engine's tokio runtime and
//!   report back over a channel; they hold no CPU worker while waiting.
//!
//! - a branch (`if`/`match` as a node's expression) first waits for what
//!   its condition reads, chooses an arm, and only then asks for what that
//!   arm reads: nodes only unchosen arms read never run ("needed" grows
//!   while the run goes).
//! - a `for` node evaluates its array; a pure body runs per item on the
//!   spot, a call body becomes one job per item, queued like any tool,
//!   agent or compose node (so `--jobs` bounds them and a failure stops
//!   new ones from starting).
//! - under `try`, a call's failure (or its child execution's) becomes the
//!   call's value; the abandoned child is marked dead and ignored.
//!
//! No recursion follows the graph, so a chain of a million nodes runs.
//! Values do not depend on the order nodes complete in; when several nodes
//! fail, the first failed guard is reported, else the node declared first.
//! After a failure the ready pure nodes still run (no effect starts), so
//! a guard that would fail is reported before the error it guards against.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvError, RecvTimeoutError, Sender, channel};
use std::time::Instant;

use rayon::prelude::*;
use serde_json::{Map, Value};

use super::{Engine, RunError, RunOptions, inputs};
use crate::diagnostic::Code;
use crate::effects;
use crate::eval::{self, Fields, Scope, Val, describe};
use crate::failure::NodeError;
use crate::ir::{
    Body, BranchKind, Call, Callee, ContractId, Expr, ExprKind, NodeId, NodeKind, Param, Pattern,
    Program, Runner,
};
use crate::source::Span as SourceSpan;
use crate::telemetry::Span;
use crate::trace::Trace;

/// Ready pure nodes at or above this count are evaluated in parallel.
const PARALLEL_BATCH: usize = 64;

/// Runs `contract` and returns its requested outputs, in a run span.
pub(super) fn run(
    engine: &Engine,
    contract: ContractId,
    given: &Map<String, Value>,
    options: &RunOptions,
    trace: &Arc<Trace>,
) -> Result<Map<String, Value>, RunError> {
    let span = Span::run(&engine.program()[contract].name, &options.span);
    let result = run_in(engine, contract, given, options, trace, &span);
    span.end(result.as_ref().err().map(|e| e.code().as_str()));
    result
}

fn run_in(
    engine: &Engine,
    contract: ContractId,
    given: &Map<String, Value>,
    options: &RunOptions,
    trace: &Arc<Trace>,
    span: &Span,
) -> Result<Map<String, Value>, RunError> {
    let program = engine.program();
    let root = &program[contract];
    let outputs = requested_outputs(program, contract, &options.outputs)?;
    let params: Vec<_> = root.inputs().map(|(_, p)| p.clone()).collect();
    let given: Fields = given.iter().map(|(k, v)| (k.clone(), Val::from(v))).collect();
    let values = inputs::bind(&params, &given, root.name_span, Some(options.inputs_from))
        .map_err(|problems| RunError::Inputs { contract: root.name.clone(), problems })?;
    let runner = options.jobs.map_or(root.runner, Runner::Pool);
    let pool = match runner {
        Runner::Pool(n) => engine.pool(n),
        _ => None,
    };
    let (tx, rx) = channel();
    let mut scheduler = Scheduler {
        engine,
        program,
        trace,
        execs: Vec::new(),
        pure: Vec::new(),
        waiting: VecDeque::new(),
        in_flight: 0,
        limit: match runner {
            Runner::Default => usize::MAX,
            Runner::Inline => 1,
            Runner::Pool(n) => n.max(1),
        },
        inline: runner == Runner::Inline,
        pool,
        tx,
        rx,
        tasks: Vec::new(),
        failures: Vec::new(),
        result: None,
        deadline: options.deadline,
    };
    scheduler.start(contract, values, outputs, None, span.clone());
    let result = scheduler.drive();
    for task in &scheduler.tasks {
        task.abort();
    }
    result
}

/// The output indexes asked for: all when `names` is empty.
fn requested_outputs(
    program: &Program,
    contract: ContractId,
    names: &[String],
) -> Result<Vec<usize>, RunError> {
    let c = &program[contract];
    if names.is_empty() {
        return Ok((0..c.outputs.len()).collect());
    }
    names
        .iter()
        .map(|name| {
            c.outputs.iter().position(|o| &o.name == name).ok_or_else(|| {
                let all: Vec<&str> = c.outputs.iter().map(|o| o.name.as_str()).collect();
                RunError::Output {
                    contract: c.name.clone(),
                    output: name.clone(),
                    suggestion: crate::lower::suggest::closest(name, all.iter().copied())
                        .map(str::to_owned),
                    span: c.name_span,
                }
            })
        })
        .collect()
}

/// One running contract: the root or a composed child.
struct Exec {
    contract: ContractId,
    values: Vec<Val>,
    /// Unfinished dependencies each needed node is waiting for.
    pending: Vec<u32>,
    needed: Vec<bool>,
    done: Vec<bool>,
    /// Needed nodes (inputs aside) not finished yet.
    remaining: usize,
    /// Indexes of the outputs to produce.
    outputs: Vec<usize>,
    /// The call waiting for this execution (`None` for the root); its
    /// path (`Root.child.grandchild`, `Root.lines[3]` for a per-item child)
    /// is built from the parents only when shown, so a deep composition
    /// does not hold a path per level.
    parent: Option<Job>,
    /// When it started, when tracing.
    started: Option<Instant>,
    /// The arm each branch chose.
    chosen: HashMap<NodeId, usize>,
    /// The per-item results of `for` nodes with call bodies.
    gathers: HashMap<NodeId, Gather>,
    /// Abandoned: a `try` above caught its failure (its or an ancestor's);
    /// late results are dropped.
    dead: bool,
    /// The executions its `compose` nodes started, to abandon with it.
    children: Vec<usize>,
    /// The parent of its nodes' spans: the run's, or the `compose` node's.
    span: Span,
}

/// A `for` node's items and results while its calls run.
struct Gather {
    items: Vec<Val>,
    results: Vec<Val>,
    left: usize,
    /// The `for` node's span, the parent of its items'.
    span: Span,
}

/// A node of an execution, and the item for a `for` node's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Job {
    exec: usize,
    node: NodeId,
    item: Option<u32>,
}

impl Job {
    fn node(exec: usize, node: NodeId) -> Self {
        Self { exec, node, item: None }
    }
}

/// A waiting call's result, sent back from its task.
struct Done {
    job: Job,
    started: Instant,
    result: Result<Value, NodeError>,
}

/// A node (or item) that failed.
struct Failure {
    job: Job,
    message: String,
    span: SourceSpan,
    code: Code,
    /// The tool's or agent's error behind it, or the node's own.
    cause: Box<NodeError>,
}

/// The variables of a `for` body: the contract's nodes and the item.
struct ItemScope<'v> {
    values: &'v [Val],
    var: u32,
    item: &'v Val,
}

impl Scope for ItemScope<'_> {
    fn var(&self, var: u32) -> &Val {
        if var == self.var { self.item } else { &self.values[var as usize] }
    }
}

struct Scheduler<'e> {
    engine: &'e Engine,
    program: &'e Program,
    trace: &'e Arc<Trace>,
    execs: Vec<Exec>,
    /// Ready jobs run by this thread (pure nodes, branches, collections, composes).
    pure: Vec<Job>,
    /// Ready tool and agent calls not yet started.
    waiting: VecDeque<Job>,
    in_flight: usize,
    /// How many tool and agent calls may wait at once.
    limit: usize,
    /// `runner inline`: nothing else happens while a call waits.
    inline: bool,
    /// The pool of `runner thread_pool` / `--jobs`; rayon's global pool otherwise.
    pool: Option<Arc<rayon::ThreadPool>>,
    tx: Sender<Done>,
    rx: Receiver<Done>,
    tasks: Vec<tokio::task::AbortHandle>,
    failures: Vec<Failure>,
    result: Option<Map<String, Value>>,
    /// When the run stops if it has not finished ([`RunOptions::deadline`]).
    deadline: Option<std::time::Instant>,
}

impl Scheduler<'_> {
    fn drive(&mut self) -> Result<Map<String, Value>, RunError> {
        loop {
            while let Ok(done) = self.rx.try_recv() {
                self.complete(done);
                // Handled: the message's token of the run's activity goes.
                if let Some(activity) = self.engine.effects.activity() {
                    activity.leave();
                }
            }
            if !self.failures.is_empty() {
                self.settle();
                return Err(self.first_failure());
            }
            if let Some(outputs) = self.result.take() {
                return Ok(outputs);
            }
            if self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(RunError::Deadline);
            }
            // `runner inline`: nothing else starts while a call waits.
            let held = self.inline && self.in_flight > 0;
            if self.in_flight < self.limit && !held {
                if let Some(job) = self.waiting.pop_front() {
                    self.start_waiting(job);
                    continue;
                }
            }
            if !held && !self.pure.is_empty() {
                self.step();
                continue;
            }
            // Nothing to do here: wait for a task. A DAG always has one in
            // flight at this point; a closed channel would mean a lost task.
            // Waiting, this thread gives its token of the run's activity
            // back; the message's token becomes its own.
            let activity = self.engine.effects.activity();
            if let Some(activity) = activity {
                activity.leave();
            }
            let received = match self.deadline {
                Some(deadline) => {
                    match self.rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                        Err(RecvTimeoutError::Timeout) => return Err(RunError::Deadline),
                        other => other.map_err(|_| RecvError),
                    }
                }
                None => self.rx.recv(),
            };
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

    /// Starts an execution of `contract` with its input values.
    fn start(
        &mut self,
        contract: ContractId,
        values: Vec<Val>,
        outputs: Vec<usize>,
        parent: Option<Job>,
        span: Span,
    ) {
        let c = &self.program[contract];
        let n = c.nodes.len();
        let mut table = vec![Val::Null; n];
        let mut done = vec![false; n];
        for ((id, _), value) in c.inputs().zip(values) {
            table[id.index()] = value;
            done[id.index()] = true;
        }
        let exec = self.execs.len();
        let dead = parent.is_some_and(|call| {
            let parent = &mut self.execs[call.exec];
            parent.children.push(exec);
            parent.dead
        });
        self.execs.push(Exec {
            contract,
            values: table,
            pending: vec![0; n],
            needed: vec![false; n],
            done,
            remaining: 0,
            outputs: outputs.clone(),
            parent,
            started: self.trace.enabled().then(Instant::now),
            chosen: HashMap::new(),
            gathers: HashMap::new(),
            dead,
            children: Vec::new(),
            span,
        });
        let mut roots: Vec<NodeId> = outputs.iter().map(|&o| c.outputs[o].node).collect();
        roots.extend(
            c.nodes
                .iter()
                .enumerate()
                .filter(|(_, node)| matches!(node.kind, NodeKind::Guard { .. }))
                .map(|(i, _)| NodeId::from_index(i)),
        );
        self.demand(exec, roots);
        if self.execs[exec].remaining == 0 {
            self.finish_exec(exec);
        }
    }

    /// What a node waits for before it can run (a branch: before it
    /// chooses, or once chosen, what its arm reads).
    fn deps_of(&self, exec: usize, node: NodeId) -> &[NodeId] {
        let e = &self.execs[exec];
        let contract = &self.program[e.contract];
        match &contract[node].kind {
            NodeKind::Branch(branch) => match e.chosen.get(&node) {
                Some(&arm) => &branch.arms[arm].deps,
                None => &branch.deps,
            },
            _ => contract.graph.deps(node),
        }
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
    fn call_of(&self, job: Job) -> Option<&Call> {
        let e = &self.execs[job.exec];
        match &self.program[e.contract][job.node].kind {
            NodeKind::Call(call) => Some(call),
            NodeKind::Branch(branch) => match &branch.arms[*e.chosen.get(&job.node)?].body {
                Body::Call(call) => Some(call),
                Body::Pure(_) => None,
            },
            NodeKind::For(each) if job.item.is_some() => match &each.body {
                Body::Call(call) => Some(call),
                Body::Pure(_) => None,
            },
            _ => None,
        }
    }

    fn push(&mut self, job: Job) {
        match self.call_of(job).map(|call| call.callee) {
            Some(Callee::Tool(_) | Callee::Agent(_)) => self.waiting.push_back(job),
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
        if self.pure.len() < PARALLEL_BATCH || self.inline {
            if let Some(job) = self.pure.pop() {
                self.run_pure(job);
            }
            return;
        }
        let batch = std::mem::take(&mut self.pure);
        let (program, execs, trace) = (self.program, &self.execs, self.trace.as_ref());
        let evaluate = || -> Vec<Option<Result<Val, Failure>>> {
            batch.par_iter().map(|&job| evaluate(program, execs, trace, job)).collect()
        };
        let results = match &self.pool {
            Some(pool) => pool.install(evaluate),
            None => evaluate(),
        };
        for (job, result) in batch.into_iter().zip(results) {
            match result {
                Some(Ok(value)) => self.finish(job, value),
                Some(Err(failure)) => self.fail(failure),
                None => self.run_pure(job),
            }
        }
    }

    /// After a failure: runs the ready pure nodes and guards (no effect
    /// starts), so that a failing guard is known before reporting.
    fn settle(&mut self) {
        loop {
            let jobs = std::mem::take(&mut self.pure);
            let (simple, rest): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|&job| {
                let e = &self.execs[job.exec];
                matches!(
                    self.program[e.contract][job.node].kind,
                    NodeKind::Compute(_) | NodeKind::Guard { .. }
                )
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
        if let Some(result) = evaluate(self.program, &self.execs, self.trace, job) {
            return match result {
                Ok(value) => self.finish(job, value),
                Err(failure) => self.fail(failure),
            };
        }
        let e = &self.execs[job.exec];
        let node = &self.program[e.contract][job.node];
        match &node.kind {
            NodeKind::Branch(branch) if !e.chosen.contains_key(&job.node) => {
                match choose(branch.kind, &branch.arms, &branch.on, &e.values) {
                    Ok(arm) => self.chose(job, arm),
                    Err(message) => {
                        self.fail(Failure::new(job, message, branch.on.span, Code::NodeFailed));
                    }
                }
            }
            NodeKind::Branch(branch) => match &branch.arms[e.chosen[&job.node]].body {
                Body::Pure(expr) => {
                    let started = Instant::now();
                    let result = eval_node(expr, e.values.as_slice(), job);
                    self.record(job, result.is_ok(), started);
                    match result {
                        Ok(value) => self.finish(job, value),
                        Err(failure) => self.fail(failure),
                    }
                }
                Body::Call(_) => self.compose(job),
            },
            NodeKind::For(_) if job.item.is_none() => self.expand(job),
            _ => self.compose(job),
        }
    }

    /// Records a job that ran on this thread, when tracing; a node (not
    /// an item of a pure `for`) also as a span.
    fn record(&self, job: Job, ok: bool, started: Instant) {
        let e = &self.execs[job.exec];
        let label = self.program[e.contract][job.node].kind.label();
        if job.item.is_none() {
            let error = (!ok).then_some(Code::NodeFailed.as_str());
            e.span.node_since(started, || self.path_of(job), label).end(error);
        }
        if self.trace.enabled() {
            let status = if ok { "ok" } else { "failed" };
            self.trace.record(&self.path_of(job), label, status, started, String::new());
        }
    }

    /// The span of `job` from now on, under its execution's span (an
    /// item's: under its `for` node's).
    fn span(&self, job: Job) -> Span {
        let e = &self.execs[job.exec];
        let parent = match job.item.and_then(|_| e.gathers.get(&job.node)) {
            Some(gather) => &gather.span,
            None => &e.span,
        };
        if !parent.is_recording() {
            return Span::none();
        }
        let callee = self.call_of(job).map(|call| call.callee);
        let label =
            callee.map_or_else(|| self.program[e.contract][job.node].kind.label(), Callee::label);
        let agent = match callee {
            Some(Callee::Agent(agent)) => Some(self.program[agent].name.as_str()),
            _ => None,
        };
        parent.node(|| self.path_of(job), label, agent)
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
        let node = &self.program[e.contract][job.node];
        let NodeKind::For(each) = &node.kind else { unreachable!("only `for` nodes expand") };
        let started = Instant::now();
        let items = match items(each, &e.values, job) {
            Ok(items) => items,
            Err(failure) => return self.fail(failure),
        };
        match &each.body {
            Body::Pure(body) => {
                let mut results = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let scope = ItemScope { values: &e.values, var: each.var, item };
                    let item_job = Job { item: u32::try_from(i).ok(), ..job };
                    let item_started = self.trace.enabled().then(Instant::now);
                    let result = eval::eval(body, &scope);
                    if let Some(item_started) = item_started {
                        self.record(item_job, result.is_ok(), item_started);
                    }
                    match result {
                        Ok(value) => results.push(value),
                        Err(error) => {
                            self.record(job, false, started);
                            let code = Code::NodeFailed;
                            return self.fail(Failure::new(
                                item_job,
                                error.message,
                                error.span,
                                code,
                            ));
                        }
                    }
                }
                self.record(job, true, started);
                self.finish(job, Val::array(results));
            }
            Body::Call(_) => {
                let count = items.len();
                if count == 0 {
                    return self.finish(job, Val::array(Vec::new()));
                }
                let items = items.into_owned();
                let span = self.span(job);
                let gather = Gather { items, results: vec![Val::Null; count], left: count, span };
                self.execs[job.exec].gathers.insert(job.node, gather);
                for i in 0..count {
                    self.push(Job { item: u32::try_from(i).ok(), ..job });
                }
            }
        }
    }

    /// The values a job's call and its arguments see: the node table, and
    /// the item for a `for` item.
    fn call_args(&self, job: Job, call: &Call) -> Result<Fields, Failure> {
        let e = &self.execs[job.exec];
        let node = &self.program[e.contract][job.node];
        let result = match (&node.kind, job.item) {
            (NodeKind::For(each), Some(i)) => {
                let item = &e.gathers[&job.node].items[i as usize];
                eval_args(&call.args, &ItemScope { values: &e.values, var: each.var, item })
            }
            _ => eval_args(&call.args, e.values.as_slice()),
        };
        result.map_err(|failure| failure.at(job))
    }

    /// The path of a job in messages and traces: `Root.child > node[3]`.
    fn path_of(&self, job: Job) -> String {
        job_path(self.program, &self.execs, job)
    }

    /// Starts the child execution of a contract call.
    fn compose(&mut self, job: Job) {
        let call = self.call_of(job).unwrap_or_else(|| unreachable!("compose jobs call"));
        let Callee::Contract(contract) = call.callee else {
            unreachable!("only contract calls run on this thread")
        };
        let e = &self.execs[job.exec];
        let node = &self.program[e.contract][job.node];
        let child = &self.program[contract];
        let bound = self.call_args(job, call).and_then(|given| {
            let params: Vec<_> = child.inputs().map(|(_, p)| p.clone()).collect();
            bind_call(&params, &given, node.span, job)
        });
        match bound {
            Ok(values) => {
                let outputs = (0..child.outputs.len()).collect();
                let span = self.span(job);
                self.start(contract, values, outputs, Some(job), span);
            }
            Err(failure) => self.deliver(job, Err(failure)),
        }
    }

    /// Starts a tool or agent call as a task on the I/O runtime.
    fn start_waiting(&mut self, job: Job) {
        if self.is_dead(job.exec) {
            return;
        }
        let node = &self.program[self.execs[job.exec].contract][job.node];
        let Some(io) = self.engine.io() else {
            let message = "could not start the runtime for tools and agents".to_owned();
            return self.fail(Failure::new(job, message, node.span, Code::NodeFailed));
        };
        let call = self.call_of(job).unwrap_or_else(|| unreachable!("waiting jobs call"));
        let given = match self.call_args(job, call) {
            Ok(given) => given,
            Err(failure) => return self.deliver(job, Err(failure)),
        };
        let started = Instant::now();
        let tx = self.tx.clone();
        let program = Arc::clone(&self.engine.program);
        let toolbox = self.engine.toolbox.clone();
        let span = self.span(job);
        let scope = effects::Scope::new(
            self.engine.effects.clone(),
            node_path(self.program, &self.execs, job),
        )
        .with_item(job.item)
        .with_trace(Arc::clone(self.trace))
        .with_span(span.clone());
        let activity = self.engine.effects.activity();
        let task = match call.callee {
            Callee::Tool(tool) => io.spawn(effects::track(activity, async move {
                let key = scope.next_key();
                let result = scope
                    .call_tool(&key, None, &toolbox, &program, tool, Value::Object(json(given)))
                    .await;
                span.end(result.as_ref().err().map(|e| e.code().as_str()));
                let _ = tx.send(Done { job, started, result });
            })),
            Callee::Agent(agent) => {
                let params = &self.program[agent].inputs;
                let given: Map<String, Value> = match bind_call(params, &given, node.span, job) {
                    Ok(values) => params
                        .iter()
                        .map(|p| p.name.clone())
                        .zip(values.into_iter().map(Val::into_json))
                        .collect(),
                    Err(failure) => return self.deliver(job, Err(failure)),
                };
                let (llm, trace) = (self.engine.llm.clone(), Arc::clone(self.trace));
                // A model turn's tool calls wait like nodes: as many at once as
                // nodes may wait.
                let toolbox = match self.limit {
                    usize::MAX => toolbox,
                    limit => toolbox.with_turn_calls(limit),
                };
                io.spawn(effects::track(activity, async move {
                    let result =
                        llm.run_agent(&program, agent, &given, &toolbox, &trace, &scope).await;
                    span.end(result.as_ref().err().map(|e| e.code().as_str()));
                    let _ = tx.send(Done { job, started, result });
                }))
            }
            Callee::Contract(_) => unreachable!("contract calls do not wait"),
        };
        self.tasks.push(task.abort_handle());
        self.in_flight += 1;
    }

    fn complete(&mut self, done: Done) {
        self.in_flight -= 1;
        if self.is_dead(done.job.exec) {
            return;
        }
        let job = done.job;
        let callee = self.call_of(job).map(|call| call.callee);
        if self.trace.enabled() {
            let status = if done.result.is_ok() { "ok" } else { "failed" };
            let label = callee.map_or("call", Callee::label);
            self.trace.record(&self.path_of(job), label, status, done.started, String::new());
        }
        let result = done.result.map(Val::from).map_err(|cause| {
            let message = cause.to_string();
            let (code, message) = match callee {
                // Agent errors mostly name the agent already: no "agent `X`
                // failed: agent `X` exceeded ...".
                Some(Callee::Agent(agent)) => {
                    let name = format!("agent `{}`", self.program[agent].name);
                    let message = if message.contains(&name) {
                        message
                    } else {
                        format!("{name} failed: {message}")
                    };
                    (Code::AgentFailed, message)
                }
                Some(Callee::Tool(tool)) => {
                    let name = &self.program[tool].tool_name;
                    (Code::ToolFailed, format!("tool `{name}` failed: {message}"))
                }
                _ => (Code::NodeFailed, message),
            };
            let span = self.program[self.execs[job.exec].contract][job.node].span;
            Failure { job, message, span, code, cause: Box::new(cause) }
        });
        self.deliver(job, result);
    }

    /// A call's result: under `try` it becomes `{ok, ...}`; a failure
    /// otherwise fails the run. An item's value goes to its `for` node.
    fn deliver(&mut self, job: Job, result: Result<Val, Failure>) {
        if self.is_dead(job.exec) {
            return;
        }
        let catch = self.call_of(job).is_some_and(|call| call.catch);
        let value = match (catch, result) {
            (true, Ok(value)) => Val::object(Fields::from([
                ("ok".to_owned(), Val::Bool(true)),
                ("value".to_owned(), value),
            ])),
            (true, Err(f)) => Val::object(Fields::from([
                ("ok".to_owned(), Val::Bool(false)),
                ("error".to_owned(), Val::string(f.message)),
                ("code".to_owned(), Val::from(f.code.as_str())),
                ("kind".to_owned(), Val::from(f.cause.kind())),
            ])),
            (false, Ok(value)) => value,
            (false, Err(failure)) => return self.fail(failure),
        };
        let Some(i) = job.item else { return self.finish(job, value) };
        let e = &mut self.execs[job.exec];
        let Some(gather) = e.gathers.get_mut(&job.node) else { return };
        gather.results[i as usize] = value;
        gather.left -= 1;
        if gather.left == 0 {
            let results = std::mem::take(&mut gather.results);
            if let Some(done) = e.gathers.remove(&job.node) {
                done.span.end(None);
            }
            self.finish(Job::node(job.exec, job.node), Val::array(results));
        }
    }

    /// A failure: the nearest `try` above a child execution catches it
    /// (the child is abandoned); otherwise it fails the run.
    fn fail(&mut self, failure: Failure) {
        if self.is_dead(failure.job.exec) {
            return;
        }
        let mut exec = failure.job.exec;
        while let Some(parent) = self.execs[exec].parent {
            // The `compose` node whose execution failed.
            self.execs[exec].span.fail(failure.code.as_str());
            if self.call_of(parent).is_some_and(|call| call.catch) {
                self.abandon(exec);
                return self.deliver(parent, Err(failure));
            }
            exec = parent.exec;
        }
        self.failures.push(failure);
    }

    /// Stores a node's value and readies the dependents it was the last for.
    fn finish(&mut self, job: Job, value: Val) {
        let (exec, node) = (job.exec, job.node);
        if self.trace.enabled() {
            if let NodeKind::Branch(_) = self.program[self.execs[exec].contract][node].kind {
                self.trace_skipped(exec, node);
            }
        }
        let e = &mut self.execs[exec];
        e.values[node.index()] = value;
        e.done[node.index()] = true;
        e.remaining -= 1;
        let contract = &self.program[e.contract];
        let mut ready = Vec::new();
        for &dependent in contract.graph.dependents(node) {
            let i = dependent.index();
            if e.needed[i] && !e.done[i] && waits_on(contract, e, dependent, node) {
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

    /// Records as skipped the nodes that only the unchosen arms of a
    /// finished branch read.
    fn trace_skipped(&self, exec: usize, node: NodeId) {
        let e = &self.execs[exec];
        let contract = &self.program[e.contract];
        let NodeKind::Branch(branch) = &contract[node].kind else { return };
        let chosen = e.chosen.get(&node).copied();
        let mut seen = vec![false; contract.nodes.len()];
        let mut stack: Vec<NodeId> = branch
            .arms
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != chosen)
            .flat_map(|(_, arm)| arm.deps.iter().copied())
            .collect();
        while let Some(skipped) = stack.pop() {
            let i = skipped.index();
            if e.needed[i] || e.done[i] || std::mem::replace(&mut seen[i], true) {
                continue;
            }
            let path = node_path(self.program, &self.execs, Job::node(exec, skipped));
            self.trace.record(
                &path,
                contract[skipped].kind.label(),
                "skipped",
                Instant::now(),
                String::new(),
            );
            stack.extend_from_slice(contract.graph.deps(skipped));
        }
    }

    /// Collects a finished execution's outputs: the run's result for the
    /// root, the value of the call that started it for a child.
    fn finish_exec(&mut self, exec: usize) {
        let e = &mut self.execs[exec];
        let contract = &self.program[e.contract];
        let mut outputs = Fields::with_capacity(e.outputs.len());
        for &o in &e.outputs {
            let output = &contract.outputs[o];
            let mut value = &e.values[output.node.index()];
            for field in &output.fields {
                match value.get(field) {
                    Some(inner) => value = inner,
                    None => {
                        let message = format!(
                            "output `{}`: no field `{field}` in {}",
                            output.name,
                            describe(value)
                        );
                        let job = Job::node(exec, output.node);
                        return self.fail(Failure::new(
                            job,
                            message,
                            output.span,
                            Code::NodeFailed,
                        ));
                    }
                }
            }
            outputs.insert(output.name.clone(), value.clone());
        }
        // A finished child's table is no longer read.
        e.values = Vec::new();
        if e.parent.is_some() {
            e.span.end(None);
        }
        let (started, parent) = (e.started, e.parent);
        if let (Some(started), Some(parent)) = (started, parent) {
            self.trace.record(&self.path_of(parent), "compose", "ok", started, String::new());
        }
        match parent {
            Some(parent) => self.deliver(parent, Ok(Val::object(outputs))),
            // The table is gone: what only the outputs hold moves into the JSON.
            None => self.result = Some(json(outputs)),
        }
    }

    /// The first failed guard, else the failure of the earliest-declared
    /// node (and item) among those that failed.
    fn first_failure(&mut self) -> RunError {
        while let Ok(done) = self.rx.try_recv() {
            if done.result.is_err() {
                self.complete(done);
            }
        }
        let program = self.program;
        let execs = &self.execs;
        let not_guard = |job: Job| {
            !matches!(program[execs[job.exec].contract][job.node].kind, NodeKind::Guard { .. })
        };
        self.failures.sort_by_key(|f| (not_guard(f.job), f.job));
        let failure = self.failures.swap_remove(0);
        RunError::Node {
            path: self.path_of(failure.job),
            message: failure.message,
            span: failure.span,
            code: failure.code,
            cause: failure.cause,
        }
    }
}

/// True when `dependent` is waiting for `dep` to finish: a branch waits
/// for its condition's nodes, then for its chosen arm's.
fn waits_on(contract: &crate::ir::Contract, e: &Exec, dependent: NodeId, dep: NodeId) -> bool {
    match &contract[dependent].kind {
        NodeKind::Branch(branch) => match e.chosen.get(&dependent) {
            Some(&arm) => branch.arms[arm].deps.contains(&dep),
            None => branch.deps.contains(&dep),
        },
        _ => true,
    }
}

impl Failure {
    fn new(job: Job, message: String, span: SourceSpan, code: Code) -> Self {
        let cause = Box::new(match code {
            Code::GuardFailed => NodeError::Guard(message.clone()),
            _ => NodeError::Eval(message.clone()),
        });
        Failure { job, message, span, code, cause }
    }

    fn at(mut self, job: Job) -> Self {
        self.job = job;
        self
    }
}

/// The path of an execution: `Root`, `Root.child`, `Root.lines[3]`.
fn exec_path(program: &Program, execs: &[Exec], exec: usize) -> String {
    let mut calls = Vec::new();
    let mut at = &execs[exec];
    while let Some(call) = at.parent {
        calls.push(call);
        at = &execs[call.exec];
    }
    let mut path = program[at.contract].name.clone();
    for call in calls.iter().rev() {
        path.push('.');
        path.push_str(&program[execs[call.exec].contract][call.node].name);
        if let Some(i) = call.item {
            let _ = write!(path, "[{i}]");
        }
    }
    path
}

/// The path of a job's node, without its item: `Root.child > node`.
fn node_path(program: &Program, execs: &[Exec], job: Job) -> String {
    let name = &program[execs[job.exec].contract][job.node].name;
    format!("{} > {name}", exec_path(program, execs, job.exec))
}

/// The path of a job: `Root.child > node[3]`.
fn job_path(program: &Program, execs: &[Exec], job: Job) -> String {
    let path = node_path(program, execs, job);
    match job.item {
        Some(i) => format!("{path}[{i}]"),
        None => path,
    }
}

/// Evaluates a `compute` or `guard` node; `None` for the others, which the
/// scheduler runs itself.
fn evaluate(
    program: &Program,
    execs: &[Exec],
    trace: &Trace,
    job: Job,
) -> Option<Result<Val, Failure>> {
    let e = &execs[job.exec];
    let node = &program[e.contract][job.node];
    let started = (trace.enabled() || e.span.is_recording()).then(Instant::now);
    let result = match &node.kind {
        NodeKind::Compute(expr) => eval_node(expr, e.values.as_slice(), job),
        NodeKind::Guard { condition, message } => {
            guard(condition, message.as_deref(), &e.values, job, node.span, &node.name)
        }
        _ => return None,
    };
    if let Some(started) = started {
        let path = node_path(program, execs, job);
        let error = result.as_ref().err().map(|f| f.code.as_str());
        e.span.node_since(started, || path.clone(), node.kind.label()).end(error);
        let status = if error.is_none() { "ok" } else { "failed" };
        trace.record(&path, node.kind.label(), status, started, String::new());
    }
    Some(result)
}

/// The index of the arm a branch takes for the value of `on`.
fn choose(
    kind: BranchKind,
    arms: &[crate::ir::Arm],
    on: &Expr,
    values: &[Val],
) -> Result<usize, String> {
    let value = eval::eval(on, values).map_err(|e| e.message)?;
    if kind == BranchKind::If && !matches!(value, Val::Bool(_)) {
        return Err(format!("`if` needs a boolean, got {}", describe(&value)));
    }
    arms.iter()
        .position(|arm| match &arm.pattern {
            Pattern::Wildcard => true,
            Pattern::Literal(literal) => eval::equal(&Val::from(literal), &value),
        })
        .ok_or_else(|| format!("no arm of `match` fits {}", describe(&value)))
}

/// The items of a `for` node that pass its filter.
/// The items of a `for` node that pass its filter: borrowed from the
/// node table when the array is a node's value and there is no filter.
fn items<'v>(
    each: &crate::ir::Collection,
    values: &'v [Val],
    job: Job,
) -> Result<Cow<'v, [Val]>, Failure> {
    let not_array = |value: &Val| {
        let message = format!("`for` needs an array, got {}", describe(value));
        Failure::new(job, message, each.items.span, Code::NodeFailed)
    };
    let items: Cow<'v, [Val]> = match &each.items.kind {
        ExprKind::Var(var) => match &values[*var as usize] {
            Val::Array(items) => Cow::Borrowed(items.as_slice()),
            other => return Err(not_array(other)),
        },
        _ => match eval_node(&each.items, values, job)? {
            Val::Array(items) => Cow::Owned(Arc::unwrap_or_clone(items)),
            other => return Err(not_array(&other)),
        },
    };
    let Some(filter) = &each.filter else { return Ok(items) };
    let mut kept = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let scope = ItemScope { values, var: each.var, item };
        let item_job = Job { item: u32::try_from(i).ok(), ..job };
        let keep = eval::eval(filter, &scope)
            .map_err(|e| Failure::new(item_job, e.message, e.span, Code::NodeFailed))?;
        match keep {
            Val::Bool(true) => kept.push(item.clone()),
            Val::Bool(false) => {}
            other => {
                let message = format!("the `for` filter needs a boolean, got {}", describe(&other));
                return Err(Failure::new(item_job, message, filter.span, Code::NodeFailed));
            }
        }
    }
    Ok(Cow::Owned(kept))
}

fn eval_node<S: Scope + ?Sized>(expr: &Expr, values: &S, job: Job) -> Result<Val, Failure> {
    eval::eval(expr, values).map_err(|e| Failure::new(job, e.message, e.span, Code::NodeFailed))
}

fn guard(
    condition: &Expr,
    message: Option<&Expr>,
    values: &[Val],
    job: Job,
    span: SourceSpan,
    name: &str,
) -> Result<Val, Failure> {
    match eval_node(condition, values, job)? {
        Val::Bool(true) => Ok(Val::Bool(true)),
        Val::Bool(false) => {
            let text = match message.map(|m| eval_node(m, values, job)).transpose()? {
                Some(Val::String(s)) => Arc::unwrap_or_clone(s),
                Some(other) => other.to_string(),
                None => format!("guard `{name}` failed"),
            };
            Err(Failure::new(job, text, span, Code::GuardFailed))
        }
        other => Err(Failure::new(
            job,
            format!("guard `{name}` needs a boolean, got {}", describe(&other)),
            condition.span,
            Code::NodeFailed,
        )),
    }
}

/// Binds a call's arguments to the callee's params (defaults, types), as
/// one failure listing every problem.
fn bind_call(
    params: &[Param],
    given: &Fields,
    span: SourceSpan,
    job: Job,
) -> Result<Vec<Val>, Failure> {
    inputs::bind(params, given, span, None).map_err(|problems| {
        let message = inputs::one_line(&problems);
        Failure::new(job, message, span, Code::NodeFailed)
    })
}

/// Evaluates call arguments into an object by name. The failure's job is
/// set by the caller.
fn eval_args<S: Scope + ?Sized>(args: &[(String, Expr)], values: &S) -> Result<Fields, Failure> {
    let mut out = Fields::with_capacity(args.len());
    for (name, expr) in args {
        let value = eval_node(expr, values, Job::node(0, NodeId(0)))?;
        out.insert(name.clone(), value);
    }
    Ok(out)
}

/// Named values (a tool call's arguments, the run's outputs) as JSON:
/// what nothing else holds is moved, not copied.
fn json(fields: Fields) -> Map<String, Value> {
    fields.into_iter().map(|(name, value)| (name, value.into_json())).collect()
}
