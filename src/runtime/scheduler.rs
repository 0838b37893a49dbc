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
//! No recursion follows the graph, so a chain of a million nodes runs.
//! Values do not depend on the order nodes complete in; when several nodes
//! fail, the one declared first is reported.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Instant;

use rayon::prelude::*;
use serde_json::{Map, Value};

use super::{Engine, RunError, RunOptions, inputs};
use crate::diagnostic::Code;
use crate::eval::{self, describe};
use crate::ir::{ContractId, Expr, NodeId, NodeKind, Param, Program, Runner};
use crate::source::Span;
use crate::trace::Trace;

/// Ready pure nodes at or above this count are evaluated in parallel.
const PARALLEL_BATCH: usize = 64;

/// Runs `contract` and returns its requested outputs.
pub(super) fn run(
    engine: &Engine,
    contract: ContractId,
    given: &Map<String, Value>,
    options: &RunOptions,
    trace: &Arc<Trace>,
) -> Result<Map<String, Value>, RunError> {
    let program = engine.program();
    let root = &program[contract];
    let outputs = requested_outputs(program, contract, &options.outputs)?;
    let params: Vec<_> = root.inputs().map(|(_, p)| p.clone()).collect();
    let values = inputs::bind(&params, given, root.name_span)
        .map_err(|problems| RunError::Inputs { contract: root.name.clone(), problems })?;
    let runner = options.jobs.map_or(root.runner, Runner::Pool);
    let pool = match runner {
        Runner::Pool(n) => rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build().ok(),
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
    };
    scheduler.start(contract, values, outputs, None, root.name.clone());
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
    /// `Root.child.grandchild`.
    path: String,
    values: Vec<Value>,
    /// Unfinished dependencies of each needed node.
    pending: Vec<u32>,
    needed: Vec<bool>,
    /// Needed nodes not finished yet.
    remaining: usize,
    /// Indexes of the outputs to produce.
    outputs: Vec<usize>,
    /// The `compose` node waiting for this execution.
    parent: Option<(usize, NodeId)>,
    /// When it started, when tracing.
    started: Option<Instant>,
}

/// A node of an execution: `(exec index, node)`.
type Job = (usize, NodeId);

/// A waiting node's result, sent back from its task.
struct Done {
    job: Job,
    started: Instant,
    result: Result<Value, String>,
}

/// A node that failed.
struct Failure {
    job: Job,
    message: String,
    span: Span,
    code: Code,
}

struct Scheduler<'e> {
    engine: &'e Engine,
    program: &'e Program,
    trace: &'e Arc<Trace>,
    execs: Vec<Exec>,
    /// Ready nodes run by this thread (pure nodes and composes).
    pure: Vec<Job>,
    /// Ready tool and agent nodes not yet started.
    waiting: VecDeque<Job>,
    in_flight: usize,
    /// How many tool and agent nodes may wait at once.
    limit: usize,
    /// `runner inline`: nothing else happens while a node waits.
    inline: bool,
    /// The pool of `runner thread_pool` / `--jobs`; rayon's global pool otherwise.
    pool: Option<rayon::ThreadPool>,
    tx: Sender<Done>,
    rx: Receiver<Done>,
    tasks: Vec<tokio::task::AbortHandle>,
    failures: Vec<Failure>,
    result: Option<Map<String, Value>>,
}

impl Scheduler<'_> {
    fn drive(&mut self) -> Result<Map<String, Value>, RunError> {
        loop {
            while let Ok(done) = self.rx.try_recv() {
                self.complete(done);
            }
            if !self.failures.is_empty() {
                return Err(self.first_failure());
            }
            if let Some(outputs) = self.result.take() {
                return Ok(outputs);
            }
            // `runner inline`: nothing else starts while a node waits.
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
            match self.rx.recv() {
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
        values: Vec<Value>,
        outputs: Vec<usize>,
        parent: Option<Job>,
        path: String,
    ) {
        let c = &self.program[contract];
        let n = c.nodes.len();
        let mut needed = vec![false; n];
        let mut stack: Vec<NodeId> = outputs.iter().map(|&o| c.outputs[o].node).collect();
        stack.extend(
            c.nodes
                .iter()
                .enumerate()
                .filter(|(_, node)| matches!(node.kind, NodeKind::Guard { .. }))
                .map(|(i, _)| NodeId::from_index(i)),
        );
        while let Some(node) = stack.pop() {
            if !needed[node.index()] {
                needed[node.index()] = true;
                stack.extend_from_slice(c.graph.deps(node));
            }
        }
        let pending = (0..n)
            .map(|i| u32::try_from(c.graph.deps(NodeId::from_index(i)).len()).unwrap_or(u32::MAX))
            .collect();
        let remaining = needed.iter().filter(|&&b| b).count();
        // With no needed node the execution is finished right away; else
        // the last node to finish (an input, possibly) finishes it.
        let nothing_needed = remaining == 0;
        let exec = self.execs.len();
        let mut table = vec![Value::Null; n];
        let input_ids: Vec<NodeId> = c.inputs().map(|(id, _)| id).collect();
        for (&id, value) in input_ids.iter().zip(values) {
            table[id.index()] = value;
        }
        self.execs.push(Exec {
            contract,
            path,
            values: table,
            pending,
            needed,
            remaining,
            outputs,
            parent,
            started: self.trace.enabled().then(Instant::now),
        });
        for i in 0..n {
            let id = NodeId::from_index(i);
            let e = &self.execs[exec];
            if e.needed[i] && e.pending[i] == 0 && !matches!(c.nodes[i].kind, NodeKind::Input(_)) {
                self.push((exec, id));
            }
        }
        for id in input_ids {
            if self.execs[exec].needed[id.index()] {
                let value = std::mem::take(&mut self.execs[exec].values[id.index()]);
                self.finish((exec, id), value);
            }
        }
        if nothing_needed {
            self.finish_exec(exec);
        }
    }

    fn push(&mut self, job: Job) {
        let contract = &self.program[self.execs[job.0].contract];
        match contract[job.1].kind {
            NodeKind::Tool { .. } | NodeKind::Agent { .. } => self.waiting.push_back(job),
            _ => self.pure.push(job),
        }
    }

    /// Runs ready pure nodes: one on this thread, or a wide batch in parallel.
    fn step(&mut self) {
        if self.pure.len() < PARALLEL_BATCH || self.inline {
            if let Some(job) = self.pure.pop() {
                self.run_pure(job);
            }
            return;
        }
        let batch = std::mem::take(&mut self.pure);
        let (program, execs, trace) = (self.program, &self.execs, self.trace.as_ref());
        let evaluate = || -> Vec<Option<Result<Value, Failure>>> {
            batch.par_iter().map(|&job| evaluate(program, execs, trace, job)).collect()
        };
        let results = match &self.pool {
            Some(pool) => pool.install(evaluate),
            None => evaluate(),
        };
        for (job, result) in batch.into_iter().zip(results) {
            match result {
                Some(Ok(value)) => self.finish(job, value),
                Some(Err(failure)) => self.failures.push(failure),
                None => self.run_pure(job),
            }
        }
    }

    fn run_pure(&mut self, job: Job) {
        match evaluate(self.program, &self.execs, self.trace, job) {
            Some(Ok(value)) => self.finish(job, value),
            Some(Err(failure)) => self.failures.push(failure),
            None => self.compose(job),
        }
    }

    /// Starts the child execution of a `compose` node.
    fn compose(&mut self, job: Job) {
        let e = &self.execs[job.0];
        let node = &self.program[e.contract][job.1];
        let NodeKind::Compose { contract, args } = &node.kind else {
            unreachable!("only compose nodes are not evaluated in place")
        };
        let child = &self.program[*contract];
        let given = match eval_args(args, &e.values) {
            Ok(given) => given,
            Err(failure) => return self.failures.push(failure.at(job)),
        };
        let params: Vec<_> = child.inputs().map(|(_, p)| p.clone()).collect();
        match bind_call(&params, &given, node.span, job) {
            Ok(values) => {
                let path = format!("{}.{}", e.path, node.name);
                let outputs = (0..child.outputs.len()).collect();
                self.start(*contract, values, outputs, Some(job), path);
            }
            Err(failure) => self.failures.push(failure),
        }
    }

    /// Starts a tool or agent node as a task on the I/O runtime.
    fn start_waiting(&mut self, job: Job) {
        let e = &self.execs[job.0];
        let node = &self.program[e.contract][job.1];
        let Some(io) = self.engine.io() else {
            let message = "could not start the runtime for tools and agents".to_owned();
            return self.failures.push(Failure {
                job,
                message,
                span: node.span,
                code: Code::NodeFailed,
            });
        };
        let started = Instant::now();
        let tx = self.tx.clone();
        let program = Arc::clone(&self.engine.program);
        let toolbox = self.engine.toolbox.clone();
        let task = match &node.kind {
            NodeKind::Tool { tool, args } => {
                let given = match eval_args(args, &e.values) {
                    Ok(given) => given,
                    Err(failure) => return self.failures.push(failure.at(job)),
                };
                let tool = *tool;
                io.spawn(async move {
                    let result = toolbox.call(&program, tool, Value::Object(given)).await;
                    let _ =
                        tx.send(Done { job, started, result: result.map_err(|e| e.to_string()) });
                })
            }
            NodeKind::Agent { agent, args } => {
                let params = &self.program[*agent].inputs;
                let bound = eval_args(args, &e.values)
                    .map_err(|failure| failure.at(job))
                    .and_then(|given| bind_call(params, &given, node.span, job));
                let given: Map<String, Value> = match bound {
                    Ok(values) => params.iter().map(|p| p.name.clone()).zip(values).collect(),
                    Err(failure) => return self.failures.push(failure),
                };
                let (agent, llm, trace) = (*agent, self.engine.llm.clone(), Arc::clone(self.trace));
                let path = format!("{} > {}", e.path, node.name);
                io.spawn(async move {
                    let result =
                        llm.run_agent(&program, agent, &given, &toolbox, &trace, &path).await;
                    let result = result.map(Value::String).map_err(|e| e.to_string());
                    let _ = tx.send(Done { job, started, result });
                })
            }
            _ => unreachable!("only tool and agent nodes wait"),
        };
        self.tasks.push(task.abort_handle());
        self.in_flight += 1;
    }

    fn complete(&mut self, done: Done) {
        self.in_flight -= 1;
        let e = &self.execs[done.job.0];
        let node = &self.program[e.contract][done.job.1];
        if self.trace.enabled() {
            let path = format!("{} > {}", e.path, node.name);
            let status = if done.result.is_ok() { "ok" } else { "failed" };
            self.trace.record(&path, node.kind.label(), status, done.started, String::new());
        }
        match done.result {
            Ok(value) => self.finish(done.job, value),
            Err(message) => {
                let (code, message) = match &node.kind {
                    NodeKind::Agent { agent, .. } => {
                        let name = &self.program[*agent].name;
                        (Code::AgentFailed, format!("agent `{name}` failed: {message}"))
                    }
                    NodeKind::Tool { tool, .. } => {
                        let name = &self.program[*tool].tool_name;
                        (Code::ToolFailed, format!("tool `{name}` failed: {message}"))
                    }
                    _ => (Code::NodeFailed, message),
                };
                self.failures.push(Failure { job: done.job, message, span: node.span, code });
            }
        }
    }

    /// Stores a node's value and readies the dependents it was the last for.
    fn finish(&mut self, job: Job, value: Value) {
        let (exec, node) = job;
        let e = &mut self.execs[exec];
        e.values[node.index()] = value;
        e.remaining -= 1;
        let contract = &self.program[e.contract];
        let mut ready = Vec::new();
        for &dependent in contract.graph.dependents(node) {
            if e.needed[dependent.index()] {
                let pending = &mut e.pending[dependent.index()];
                *pending -= 1;
                if *pending == 0 {
                    ready.push(dependent);
                }
            }
        }
        let done = e.remaining == 0;
        for dependent in ready {
            self.push((exec, dependent));
        }
        if done {
            self.finish_exec(exec);
        }
    }

    /// Collects a finished execution's outputs: the run's result for the
    /// root, the `compose` node's value for a child.
    fn finish_exec(&mut self, exec: usize) {
        let e = &mut self.execs[exec];
        let contract = &self.program[e.contract];
        let mut outputs = Map::with_capacity(e.outputs.len());
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
                        let job = (exec, output.node);
                        return self.failures.push(Failure {
                            job,
                            message,
                            span: output.span,
                            code: Code::NodeFailed,
                        });
                    }
                }
            }
            outputs.insert(output.name.clone(), value.clone());
        }
        // A finished child's table is no longer read.
        e.values = Vec::new();
        let (started, parent) = (e.started, e.parent);
        if let (Some(started), Some((parent, node))) = (started, parent) {
            let p = &self.execs[parent];
            let path = format!("{} > {}", p.path, self.program[p.contract][node].name);
            self.trace.record(&path, "compose", "ok", started, String::new());
        }
        match parent {
            Some(parent) => self.finish(parent, Value::Object(outputs)),
            None => self.result = Some(outputs),
        }
    }

    /// The failure of the earliest-declared node among those that failed.
    fn first_failure(&mut self) -> RunError {
        while let Ok(done) = self.rx.try_recv() {
            if done.result.is_err() {
                self.complete(done);
            }
        }
        self.failures.sort_by_key(|f| (f.job.0, f.job.1));
        let failure = self.failures.swap_remove(0);
        let e = &self.execs[failure.job.0];
        let node = &self.program[e.contract][failure.job.1];
        RunError::Node {
            path: format!("{} > {}", e.path, node.name),
            message: failure.message,
            span: failure.span,
            code: failure.code,
        }
    }
}

impl Failure {
    fn at(mut self, job: Job) -> Self {
        self.job = job;
        self
    }
}

/// Evaluates a pure node; `None` for a `compose`, which the scheduler starts.
fn evaluate(
    program: &Program,
    execs: &[Exec],
    trace: &Trace,
    job: Job,
) -> Option<Result<Value, Failure>> {
    let e = &execs[job.0];
    let node = &program[e.contract][job.1];
    let started = trace.enabled().then(Instant::now);
    let result = match &node.kind {
        NodeKind::Compute(expr) => eval_node(expr, &e.values, job),
        NodeKind::Guard { condition, message } => {
            guard(condition, message.as_ref(), &e.values, job, node.span, &node.name)
        }
        NodeKind::Compose { .. } => return None,
        NodeKind::Input(_) | NodeKind::Tool { .. } | NodeKind::Agent { .. } => {
            unreachable!("inputs are bound at start; tools and agents wait")
        }
    };
    if let Some(started) = started {
        let path = format!("{} > {}", e.path, node.name);
        let status = if result.is_ok() { "ok" } else { "failed" };
        trace.record(&path, node.kind.label(), status, started, String::new());
    }
    Some(result)
}

fn eval_node(expr: &Expr, values: &[Value], job: Job) -> Result<Value, Failure> {
    eval::eval(expr, values).map_err(|e| Failure {
        job,
        message: e.message,
        span: e.span,
        code: Code::NodeFailed,
    })
}

fn guard(
    condition: &Expr,
    message: Option<&Expr>,
    values: &[Value],
    job: Job,
    span: Span,
    name: &str,
) -> Result<Value, Failure> {
    match eval_node(condition, values, job)? {
        Value::Bool(true) => Ok(Value::Bool(true)),
        Value::Bool(false) => {
            let text = match message.map(|m| eval_node(m, values, job)).transpose()? {
                Some(Value::String(s)) => s,
                Some(other) => other.to_string(),
                None => format!("guard `{name}` failed"),
            };
            Err(Failure { job, message: text, span, code: Code::GuardFailed })
        }
        other => Err(Failure {
            job,
            message: format!("guard `{name}` needs a boolean, got {}", describe(&other)),
            span: condition.span,
            code: Code::NodeFailed,
        }),
    }
}

/// Binds a call's arguments to the callee's params (defaults, types), as
/// one failure listing every problem.
fn bind_call(
    params: &[Param],
    given: &Map<String, Value>,
    span: Span,
    job: Job,
) -> Result<Vec<Value>, Failure> {
    inputs::bind(params, given, span).map_err(|problems| {
        let message = problems.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; ");
        Failure { job, message, span, code: Code::NodeFailed }
    })
}

/// Evaluates call arguments into an object by name. The failure's job is
/// set by the caller.
fn eval_args(args: &[(String, Expr)], values: &[Value]) -> Result<Map<String, Value>, Failure> {
    let mut out = Map::with_capacity(args.len());
    for (name, expr) in args {
        let value = eval_node(expr, values, (0, NodeId(0)))?;
        out.insert(name.clone(), value);
    }
    Ok(out)
}
