//! What the core asks of a graph ([`Nodes`]) and the small types it
//! speaks in: a job ([`Job`], a node of an execution and maybe an item,
//! from `job.rs`),
//! how a node is scheduled ([`Kind`], [`CallKind`]), a call's place
//! ([`At`]) and a waiting call's answer ([`Done`]), and how the core
//! waits for one ([`wait_blocking`], unless the graph drives its calls).
//!
//! The checked program implements [`Nodes`] in `program.rs`; the tests
//! implement it with fake nodes.

use std::borrow::Cow;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

use super::failure::Failure;
use super::job::Job;
use crate::eval::{Fields, Val};
use crate::ir::NodeId;

/// How the core schedules a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Given when its execution starts.
    Input,
    /// Evaluated by [`Nodes::evaluate`] as soon as it is ready.
    Pure,
    /// Pure, always needed; reported first when several nodes fail.
    Guard,
    /// Chooses an arm ([`Nodes::choose`]), then waits for what it reads.
    Branch,
    /// Its items ([`Nodes::items`]), then its body per item.
    For,
    /// A call of a contract, tool or agent.
    Call,
}

/// How a call runs.
#[derive(Debug, Clone, Copy)]
pub(super) struct CallKind {
    /// Started by [`Nodes::start`] (a tool, an agent); else it composes.
    pub(super) waits: bool,
    /// Under `try`.
    pub(super) catch: bool,
}

/// A call's place: what [`Nodes`] needs to make it.
pub(super) struct At<'v, C> {
    pub(super) contract: C,
    pub(super) job: Job,
    /// The arm chosen, for a branch's call.
    pub(super) arm: Option<usize>,
    /// The execution's value table.
    pub(super) values: &'v [Val],
    /// The item, for a `for` node's call.
    pub(super) item: Option<&'v Val>,
}

/// A waiting call's answer, sent back by its task.
pub(super) struct Done<A> {
    pub(super) job: Job,
    pub(super) started: Instant,
    pub(super) answer: A,
}

/// Why a waiting call did not start.
pub(super) enum NotStarted {
    /// Its arguments: a `try` above catches it.
    Args(Failure),
    /// What runs calls is missing: the run fails.
    Machinery(Failure),
}

/// The graph of each contract and the work of its nodes.
pub(super) trait Nodes: Sync {
    /// A contract of the graph.
    type Contract: Copy + Send + Sync;
    /// What a started call sends back.
    type Answer: Send + 'static;
    /// What a started call's task carries for the observers.
    type Watch;
    /// A started call: dropping it stops the call.
    type Task;

    /// How many nodes `contract` has.
    fn size(&self, contract: Self::Contract) -> usize;
    /// Its inputs, in the order of their values.
    fn inputs(&self, contract: Self::Contract) -> impl Iterator<Item = NodeId> + '_;
    /// The node an output reads.
    fn output(&self, contract: Self::Contract, output: usize) -> NodeId;
    /// How many outputs `contract` declares.
    fn outputs(&self, contract: Self::Contract) -> usize;
    /// How many arms a branch has.
    fn arms(&self, contract: Self::Contract, node: NodeId) -> usize;
    /// How `node` is scheduled.
    fn kind(&self, contract: Self::Contract, node: NodeId) -> Kind;
    /// What `node` waits for before it runs; a branch: what its condition
    /// reads (`arm` is `None`), or once chosen, what `arm` reads.
    fn deps(&self, contract: Self::Contract, node: NodeId, arm: Option<usize>) -> &[NodeId];
    /// Every node `node` reads (a branch: its condition and all its arms).
    fn reads(&self, contract: Self::Contract, node: NodeId) -> &[NodeId];
    /// The nodes that read `node`.
    fn dependents(&self, contract: Self::Contract, node: NodeId) -> &[NodeId];
    /// The call `node` makes (a branch: its chosen arm's; a `for`: each
    /// item's, when `item`).
    fn call(
        &self,
        contract: Self::Contract,
        node: NodeId,
        arm: Option<usize>,
        item: bool,
    ) -> Option<CallKind>;
    /// The contract's name, in paths.
    fn contract_name(&self, contract: Self::Contract) -> &str;
    /// The node's name, in paths.
    fn node_name(&self, contract: Self::Contract, node: NodeId) -> &str;
    /// What the node is, for the observers.
    fn label(&self, contract: Self::Contract, node: NodeId) -> &'static str;
    /// What a node's call is, and the agent it runs (for the observers).
    fn call_label(
        &self,
        contract: Self::Contract,
        node: NodeId,
        arm: Option<usize>,
        item: bool,
    ) -> (&'static str, Option<&str>);

    /// Evaluates a [`Kind::Pure`] or [`Kind::Guard`] node.
    fn evaluate(&self, contract: Self::Contract, values: &[Val], job: Job) -> Result<Val, Failure>;
    /// The arm a branch takes.
    fn choose(&self, contract: Self::Contract, values: &[Val], job: Job) -> Result<usize, Failure>;
    /// The value of a branch's pure arm.
    fn arm(
        &self,
        contract: Self::Contract,
        arm: usize,
        values: &[Val],
        job: Job,
    ) -> Result<Val, Failure>;
    /// A `for` node's items.
    fn items<'v>(
        &self,
        contract: Self::Contract,
        values: &'v [Val],
        job: Job,
    ) -> Result<Cow<'v, [Val]>, Failure>;
    /// A `for` node's pure body for one item (`job` names the item).
    fn each(
        &self,
        contract: Self::Contract,
        values: &[Val],
        item: &Val,
        job: Job,
    ) -> Result<Val, Failure>;
    /// The contract a composing call runs, and its input values.
    fn bind(&self, at: &At<'_, Self::Contract>) -> Result<(Self::Contract, Vec<Val>), Failure>;
    /// Starts the waiting call of node `path` (`Root.child > node`),
    /// whose task sends its [`Done`] on `tx`; `watch` gives what the task
    /// carries for the observers.
    fn start(
        &self,
        at: &At<'_, Self::Contract>,
        path: String,
        tx: &Sender<Done<Self::Answer>>,
        watch: impl FnOnce() -> Self::Watch,
    ) -> Result<Self::Task, NotStarted>;
    /// The next answer on `rx`, waited for until `until` at the latest
    /// (then `Timeout`). The default blocks the thread while the calls run
    /// elsewhere; the checked program's may run them on this thread while
    /// it waits (see `program.rs`).
    fn wait(
        &self,
        rx: &Receiver<Done<Self::Answer>>,
        until: Option<Instant>,
    ) -> Result<Done<Self::Answer>, RecvTimeoutError> {
        wait_blocking(rx, until)
    }
    /// True when a call's answer is a failure.
    fn failed(answer: &Self::Answer) -> bool;
    /// A waiting call's value, from its answer.
    fn answer(&self, at: &At<'_, Self::Contract>, answer: Self::Answer) -> Result<Val, Failure>;
    /// A finished execution's outputs (`wanted` are indexes).
    fn collect(
        &self,
        contract: Self::Contract,
        wanted: &[usize],
        values: &[Val],
        exec: usize,
    ) -> Result<Fields, Failure>;
}

/// The next answer on `rx`, the thread blocked until it comes or `until`.
pub(super) fn wait_blocking<A>(
    rx: &Receiver<Done<A>>,
    until: Option<Instant>,
) -> Result<Done<A>, RecvTimeoutError> {
    match until {
        Some(until) => rx.recv_timeout(until.saturating_duration_since(Instant::now())),
        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
    }
}

impl Job {
    /// The job of item `i` of this `for` node.
    pub(super) fn with_item(self, i: usize) -> Self {
        Job { item: u32::try_from(i).ok(), ..self }
    }
}
