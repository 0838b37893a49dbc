//! The checked program as the core's [`Nodes`]: its graph, evaluating its
//! expressions, binding a call's arguments, and starting tool and agent
//! calls as tasks on the engine's tokio runtime, through the effects seam
//! (`effects::Scope`), each holding a token of the journal's activity
//! (`effects::track`).
//!
//! Input: an [`Engine`]. Output: what the core asks for, one node at a
//! time; a call's task sends its answer back over the core's channel and
//! ends its span when the call ends (not when the core sees it).
//!
//! When the engine's runs drive their calls ([`Engine::with_calls_on_run_thread`],
//! what `ignite run` does), the runtime has no threads of its own: the
//! scheduler's thread runs the calls' tasks while it waits for an answer
//! ([`Nodes::wait`]), as one event loop, as `curl -Z` does. A burst of
//! calls to a fast server then costs no hand-offs between threads, and a
//! call that finishes early gives its connection to one not yet connected
//! (BENCHMARKS.md, "Bursts").

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::Instant;

use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::failure::{Cause, Failure, call_failure};
use super::job::Job;
use super::nodes::{At, CallKind, Done, Kind, Nodes, NotStarted, wait_blocking};
use super::observer::Watch;
use crate::diagnostic::Code;
use crate::effects;
use crate::eval::{self, Fields, Scope, Val, describe};
use crate::failure::NodeError;
use crate::ir::{
    Body, BranchKind, Call, Callee, ContractId, Expr, ExprKind, NodeId, NodeKind, Param, Pattern,
    Program,
};
use crate::runtime::{Engine, inputs};
use crate::source::Span as SourceSpan;

/// The nodes of an engine's program.
pub(super) struct Ir<'e> {
    engine: &'e Engine,
    program: &'e Program,
    /// How many calls may wait at once: a model turn's tool calls too.
    limit: usize,
    /// Notified by each call's task once its answer is sent: what a
    /// scheduler's thread that runs the calls waits on.
    answered: Arc<tokio::sync::Notify>,
}

impl<'e> Ir<'e> {
    pub(super) fn new(engine: &'e Engine, limit: usize) -> Self {
        Ir { engine, program: engine.program(), limit, answered: Arc::default() }
    }

    /// The call a node makes: its own, its chosen arm's, or (`item`) its
    /// `for` body's.
    fn call_of(
        &self,
        contract: ContractId,
        node: NodeId,
        arm: Option<usize>,
        item: bool,
    ) -> Option<&'e Call> {
        match &self.program[contract][node].kind {
            NodeKind::Call(call) => Some(call),
            NodeKind::Branch(branch) => match &branch.arms[arm?].body {
                Body::Call(call) => Some(call),
                Body::Pure(_) => None,
            },
            NodeKind::For(each) if item => match &each.body {
                Body::Call(call) => Some(call),
                Body::Pure(_) => None,
            },
            _ => None,
        }
    }

    /// The call of a waiting or composing job.
    fn call_at(&self, at: &At<'_, ContractId>) -> &'e Call {
        self.call_of(at.contract, at.job.node, at.arm, at.job.item.is_some())
            .unwrap_or_else(|| unreachable!("the core starts only calls"))
    }

    /// A call's arguments, seeing the node table and the item for a `for` item.
    fn call_args(&self, at: &At<'_, ContractId>, call: &Call) -> Result<Fields, Failure> {
        let node = &self.program[at.contract][at.job.node];
        let result = match (&node.kind, at.item) {
            (NodeKind::For(each), Some(item)) => {
                eval_args(&call.args, &ItemScope { values: at.values, var: each.var, item })
            }
            _ => eval_args(&call.args, at.values),
        };
        result.map_err(|failure| failure.at(at.job))
    }
}

/// A started tool or agent task: aborted when dropped (the run ended).
pub(super) struct Task(tokio::task::AbortHandle);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Nodes for Ir<'_> {
    type Contract = ContractId;
    type Answer = Result<Value, Cause>;
    type Watch = Watch;
    type Task = Task;

    fn size(&self, contract: ContractId) -> usize {
        self.program[contract].nodes.len()
    }

    fn inputs(&self, contract: ContractId) -> impl Iterator<Item = NodeId> + '_ {
        self.program[contract].inputs().map(|(id, _)| id)
    }

    fn output(&self, contract: ContractId, output: usize) -> NodeId {
        self.program[contract].outputs[output].node
    }

    fn outputs(&self, contract: ContractId) -> usize {
        self.program[contract].outputs.len()
    }

    fn arms(&self, contract: ContractId, node: NodeId) -> usize {
        match &self.program[contract][node].kind {
            NodeKind::Branch(branch) => branch.arms.len(),
            _ => 0,
        }
    }

    fn kind(&self, contract: ContractId, node: NodeId) -> Kind {
        match &self.program[contract][node].kind {
            NodeKind::Input(_) => Kind::Input,
            NodeKind::Compute(_) => Kind::Pure,
            NodeKind::Guard { .. } => Kind::Guard,
            NodeKind::Branch(_) => Kind::Branch,
            NodeKind::For(_) => Kind::For,
            NodeKind::Call(_) => Kind::Call,
        }
    }

    fn deps(&self, contract: ContractId, node: NodeId, arm: Option<usize>) -> &[NodeId] {
        let contract = &self.program[contract];
        match &contract[node].kind {
            NodeKind::Branch(branch) => match arm {
                Some(arm) => &branch.arms[arm].deps,
                None => &branch.deps,
            },
            _ => contract.graph.deps(node),
        }
    }

    fn reads(&self, contract: ContractId, node: NodeId) -> &[NodeId] {
        self.program[contract].graph.deps(node)
    }

    fn dependents(&self, contract: ContractId, node: NodeId) -> &[NodeId] {
        self.program[contract].graph.dependents(node)
    }

    fn call(
        &self,
        contract: ContractId,
        node: NodeId,
        arm: Option<usize>,
        item: bool,
    ) -> Option<CallKind> {
        self.call_of(contract, node, arm, item).map(|call| CallKind {
            waits: matches!(call.callee, Callee::Tool(_) | Callee::Agent(_)),
            catch: call.catch,
        })
    }

    fn contract_name(&self, contract: ContractId) -> &str {
        &self.program[contract].name
    }

    fn node_name(&self, contract: ContractId, node: NodeId) -> &str {
        &self.program[contract][node].name
    }

    fn label(&self, contract: ContractId, node: NodeId) -> &'static str {
        self.program[contract][node].kind.label()
    }

    fn call_label(
        &self,
        contract: ContractId,
        node: NodeId,
        arm: Option<usize>,
        item: bool,
    ) -> (&'static str, Option<&str>) {
        let callee = self.call_of(contract, node, arm, item).map(|call| call.callee);
        let label = callee.map_or_else(|| self.label(contract, node), Callee::label);
        let agent = match callee {
            Some(Callee::Agent(agent)) => Some(self.program[agent].name.as_str()),
            _ => None,
        };
        (label, agent)
    }

    fn evaluate(&self, contract: ContractId, values: &[Val], job: Job) -> Result<Val, Failure> {
        let node = &self.program[contract][job.node];
        match &node.kind {
            NodeKind::Compute(expr) => eval_node(expr, values, job),
            NodeKind::Guard { condition, message } => {
                guard(condition, message.as_deref(), values, job, node.span, &node.name)
            }
            _ => unreachable!("only `compute` and `guard` nodes evaluate"),
        }
    }

    fn choose(&self, contract: ContractId, values: &[Val], job: Job) -> Result<usize, Failure> {
        let NodeKind::Branch(branch) = &self.program[contract][job.node].kind else {
            unreachable!("only branches choose")
        };
        choose(branch.kind, &branch.arms, &branch.on, values)
            .map_err(|message| Failure::new(job, message, branch.on.span, Code::NodeFailed))
    }

    fn arm(
        &self,
        contract: ContractId,
        arm: usize,
        values: &[Val],
        job: Job,
    ) -> Result<Val, Failure> {
        let NodeKind::Branch(branch) = &self.program[contract][job.node].kind else {
            unreachable!("only branches have arms")
        };
        let Body::Pure(expr) = &branch.arms[arm].body else {
            unreachable!("a call arm composes or waits")
        };
        eval_node(expr, values, job)
    }

    fn items<'v>(
        &self,
        contract: ContractId,
        values: &'v [Val],
        job: Job,
    ) -> Result<Cow<'v, [Val]>, Failure> {
        let NodeKind::For(each) = &self.program[contract][job.node].kind else {
            unreachable!("only `for` nodes expand")
        };
        items(each, values, job)
    }

    fn each(
        &self,
        contract: ContractId,
        values: &[Val],
        item: &Val,
        job: Job,
    ) -> Result<Val, Failure> {
        let NodeKind::For(each) = &self.program[contract][job.node].kind else {
            unreachable!("only `for` nodes expand")
        };
        let Body::Pure(body) = &each.body else { unreachable!("a call body waits or composes") };
        let scope = ItemScope { values, var: each.var, item };
        eval::eval(body, &scope)
            .map_err(|error| Failure::new(job, error.message, error.span, Code::NodeFailed))
    }

    fn bind(&self, at: &At<'_, ContractId>) -> Result<(ContractId, Vec<Val>), Failure> {
        let call = self.call_at(at);
        let Callee::Contract(contract) = call.callee else {
            unreachable!("only contract calls run on the scheduler's thread")
        };
        let node = &self.program[at.contract][at.job.node];
        let child = &self.program[contract];
        let values = self.call_args(at, call).and_then(|given| {
            let params: Vec<_> = child.inputs().map(|(_, p)| p.clone()).collect();
            bind_call(&params, &given, node.span, at.job)
        })?;
        Ok((contract, values))
    }

    fn start(
        &self,
        at: &At<'_, ContractId>,
        path: String,
        tx: &Sender<Done<Self::Answer>>,
        watch: impl FnOnce() -> Watch,
    ) -> Result<Task, NotStarted> {
        let job = at.job;
        let node = &self.program[at.contract][job.node];
        let Some(io) = self.engine.io() else {
            let message = "could not start the runtime for tools and agents".to_owned();
            let failure = Failure::new(job, message, node.span, Code::NodeFailed);
            return Err(NotStarted::Machinery(failure));
        };
        let call = self.call_at(at);
        let given = self.call_args(at, call).map_err(NotStarted::Args)?;
        let started = Instant::now();
        let (tx, answered) = (tx.clone(), Arc::clone(&self.answered));
        let program = Arc::clone(&self.engine.program);
        let toolbox = self.engine.toolbox.clone();
        let (trace, span, activity) = watch();
        let scope = effects::Scope::new(self.engine.effects.clone(), path)
            .with_item(job.item)
            .with_trace(Arc::clone(&trace))
            .with_span(span.clone());
        let work: BoxFuture<'static, Result<Value, NodeError>> = match call.callee {
            Callee::Tool(tool) => Box::pin(async move {
                let key = scope.next_key();
                scope
                    .call_tool(&key, None, &toolbox, &program, tool, Value::Object(json(given)))
                    .await
            }),
            Callee::Agent(agent) => {
                let params = &self.program[agent].inputs;
                // Runtime values all the way: a document's base64 is shared,
                // not copied into JSON and back.
                let given: Fields = bind_call(params, &given, node.span, job)
                    .map_err(NotStarted::Args)
                    .map(|values| params.iter().map(|p| p.name.clone()).zip(values).collect())?;
                let llm = self.engine.llm.clone();
                // A model turn's tool calls wait like nodes: as many at once as
                // nodes may wait.
                let toolbox = match self.limit {
                    usize::MAX => toolbox,
                    limit => toolbox.with_turn_calls(limit),
                };
                Box::pin(async move {
                    llm.run_agent_on(&program, agent, &given, &toolbox, &trace, &scope).await
                })
            }
            Callee::Contract(_) => unreachable!("contract calls do not wait"),
        };
        let task = io.spawn(effects::track(activity.as_ref(), async move {
            // A panic in the call (a bug, in ignite or in an embedder's store)
            // fails its node: unanswered, the run would wait for ever.
            let result = AssertUnwindSafe(work)
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| Err(NodeError::panicked(panic.as_ref())));
            span.end(result.as_ref().err().map(|e| e.code().as_str()));
            let _ = tx.send(Done { job, started, answer: result });
            answered.notify_one();
        }));
        Ok(Task(task.abort_handle()))
    }

    fn wait(
        &self,
        rx: &Receiver<Done<Self::Answer>>,
        until: Option<Instant>,
    ) -> Result<Done<Self::Answer>, RecvTimeoutError> {
        let Some(io) = self.engine.io().filter(|_| self.engine.calls_on_run_thread) else {
            return wait_blocking(rx, until);
        };
        io.block_on(async {
            loop {
                match rx.try_recv() {
                    Ok(done) => return Ok(done),
                    Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                    Err(TryRecvError::Empty) => {}
                }
                // A notice sent since the look is kept for this wait.
                let answered = self.answered.notified();
                match until {
                    Some(until) => tokio::time::timeout_at(until.into(), answered)
                        .await
                        .map_err(|_| RecvTimeoutError::Timeout)?,
                    None => answered.await,
                }
            }
        })
    }

    fn failed(answer: &Self::Answer) -> bool {
        answer.is_err()
    }

    fn answer(&self, at: &At<'_, ContractId>, answer: Self::Answer) -> Result<Val, Failure> {
        let callee = self.call_at(at).callee;
        let span = self.program[at.contract][at.job.node].span;
        answer
            .map(Val::from)
            .map_err(|cause| call_failure(cause, self.program, Some(callee), at.job, span))
    }

    fn collect(
        &self,
        contract: ContractId,
        wanted: &[usize],
        values: &[Val],
        exec: usize,
    ) -> Result<Fields, Failure> {
        let contract = &self.program[contract];
        let mut outputs = Fields::with_capacity(wanted.len());
        for &o in wanted {
            let output = &contract.outputs[o];
            let mut value = &values[output.node.index()];
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
                        return Err(Failure::new(job, message, output.span, Code::NodeFailed));
                    }
                }
            }
            outputs.insert(output.name.clone(), value.clone());
        }
        Ok(outputs)
    }
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
                Some(Val::String(s)) => String::from(&s),
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
pub(super) fn json(fields: Fields) -> Map<String, Value> {
    fields.into_iter().map(|(name, value)| (name, value.into_json())).collect()
}
