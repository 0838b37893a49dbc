//! The core on fake nodes: small graphs whose nodes add what they read,
//! fail, guard, branch, loop and call (a call's answer comes from a real
//! thread after a delay), run through [`Core`] with an observer that
//! writes down what it is told.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::core::{Bounds, Core, shared_out};
use super::failure::Failure;
use super::job::Job;
use super::nodes::{At, CallKind, Done, Kind, Nodes, NotStarted};
use super::observer::{Observer, Site};
use crate::diagnostic::Code;
use crate::eval::{Fields, Val};
use crate::failure::PendingCall;
use crate::ir::NodeId;
use crate::runtime::RunError;
use crate::source::{FileId, Span};

/// What a fake call does.
#[derive(Clone, Copy)]
enum Callee {
    /// Answers after `ms` milliseconds: the sum of what it reads (or its
    /// item) times ten, or a failure.
    Wait { ms: u64, fail: bool },
    /// Runs contract `.0` with the sum of what it reads (or its item) as
    /// its one input.
    Compose(usize),
    /// Waits for an approval nobody gives.
    Pause,
}

/// What a fake node does.
enum Op {
    Input,
    /// The sum of what it reads, plus this.
    Add(i64),
    /// Fails.
    Fail,
    /// A guard that passes or fails.
    Guard(bool),
    /// Takes the arm at the index its first read holds; each arm's value
    /// is the sum of what it reads.
    Branch(Vec<Vec<NodeId>>),
    /// Over the array its first read holds: each item times ten, or a
    /// call per item.
    For(Option<Callee>),
    /// A call; under `try` when `catch`.
    Call(Callee, bool),
}

struct Node {
    name: String,
    op: Op,
    /// What it waits for (a branch: its condition).
    deps: Vec<NodeId>,
    /// Everything it reads (a branch: its arms' too).
    reads: Vec<NodeId>,
    dependents: Vec<NodeId>,
}

struct Contract {
    name: &'static str,
    nodes: Vec<Node>,
    outputs: Vec<NodeId>,
}

/// A contract of `nodes` (name, what it does, the indexes it reads) with
/// the nodes `outputs` as its outputs.
fn contract(name: &'static str, nodes: Vec<(&str, Op, &[u32])>, outputs: &[u32]) -> Contract {
    let mut built: Vec<Node> = nodes
        .into_iter()
        .map(|(name, op, deps)| {
            let deps: Vec<NodeId> = deps.iter().map(|&d| NodeId(d)).collect();
            let mut reads = deps.clone();
            if let Op::Branch(arms) = &op {
                reads.extend(arms.iter().flatten());
            }
            Node { name: name.to_owned(), op, deps, reads, dependents: Vec::new() }
        })
        .collect();
    for i in 0..built.len() {
        for read in built[i].reads.clone() {
            built[read.index()].dependents.push(NodeId::from_index(i));
        }
    }
    Contract { name, nodes: built, outputs: outputs.iter().map(|&o| NodeId(o)).collect() }
}

fn int(value: i64) -> Val {
    Val::from(Value::from(value))
}

fn ids(ids: &[u32]) -> Vec<NodeId> {
    ids.iter().map(|&i| NodeId(i)).collect()
}

/// What the fake calls did.
#[derive(Default)]
struct Calls {
    /// The paths of the calls started, in order.
    started: Mutex<Vec<String>>,
    /// Calls in flight now, and at most.
    flying: AtomicUsize,
    most: AtomicUsize,
}

impl Calls {
    fn started(&self) -> Vec<String> {
        self.started.lock().expect("log").clone()
    }
}

/// The fake program.
struct Fake {
    contracts: Vec<Contract>,
    calls: Arc<Calls>,
}

impl Fake {
    fn new(contracts: Vec<Contract>) -> Self {
        Fake { contracts, calls: Arc::default() }
    }

    fn node(&self, contract: usize, node: NodeId) -> &Node {
        &self.contracts[contract].nodes[node.index()]
    }

    fn callee(&self, contract: usize, node: NodeId, item: bool) -> Option<(Callee, bool)> {
        match &self.node(contract, node).op {
            Op::Call(callee, catch) => Some((*callee, *catch)),
            Op::For(Some(callee)) if item => Some((*callee, false)),
            _ => None,
        }
    }

    /// What a call reads: its item, else the sum of its reads.
    fn given(&self, at: &At<'_, usize>) -> i64 {
        match at.item {
            Some(item) => item.as_i64().unwrap_or_default(),
            None => sum(&self.node(at.contract, at.job.node).deps, at.values),
        }
    }
}

/// The answer of a [`Callee::Pause`].
const PAUSE: &str = "pause";

fn sum(deps: &[NodeId], values: &[Val]) -> i64 {
    deps.iter().map(|d| values[d.index()].as_i64().unwrap_or_default()).sum()
}

fn failure(job: Job, message: &str, code: Code) -> Failure {
    Failure::new(job, message.to_owned(), Span { file: FileId(0), start: 0, end: 0 }, code)
}

impl Nodes for Fake {
    type Contract = usize;
    type Answer = Result<i64, String>;
    type Watch = ();
    type Task = ();

    fn size(&self, contract: usize) -> usize {
        self.contracts[contract].nodes.len()
    }

    fn inputs(&self, contract: usize) -> impl Iterator<Item = NodeId> + '_ {
        let nodes = &self.contracts[contract].nodes;
        (0..nodes.len()).filter(|&i| matches!(nodes[i].op, Op::Input)).map(NodeId::from_index)
    }

    fn output(&self, contract: usize, output: usize) -> NodeId {
        self.contracts[contract].outputs[output]
    }

    fn outputs(&self, contract: usize) -> usize {
        self.contracts[contract].outputs.len()
    }

    fn arms(&self, contract: usize, node: NodeId) -> usize {
        match &self.node(contract, node).op {
            Op::Branch(arms) => arms.len(),
            _ => 0,
        }
    }

    fn kind(&self, contract: usize, node: NodeId) -> Kind {
        match self.node(contract, node).op {
            Op::Input => Kind::Input,
            Op::Add(_) | Op::Fail => Kind::Pure,
            Op::Guard(_) => Kind::Guard,
            Op::Branch(_) => Kind::Branch,
            Op::For(_) => Kind::For,
            Op::Call(..) => Kind::Call,
        }
    }

    fn deps(&self, contract: usize, node: NodeId, arm: Option<usize>) -> &[NodeId] {
        let node = self.node(contract, node);
        match (&node.op, arm) {
            (Op::Branch(arms), Some(arm)) => &arms[arm],
            _ => &node.deps,
        }
    }

    fn reads(&self, contract: usize, node: NodeId) -> &[NodeId] {
        &self.node(contract, node).reads
    }

    fn dependents(&self, contract: usize, node: NodeId) -> &[NodeId] {
        &self.node(contract, node).dependents
    }

    fn call(
        &self,
        contract: usize,
        node: NodeId,
        _: Option<usize>,
        item: bool,
    ) -> Option<CallKind> {
        self.callee(contract, node, item).map(|(callee, catch)| CallKind {
            waits: matches!(callee, Callee::Wait { .. } | Callee::Pause),
            catch,
        })
    }

    fn contract_name(&self, contract: usize) -> &str {
        self.contracts[contract].name
    }

    fn node_name(&self, contract: usize, node: NodeId) -> &str {
        &self.node(contract, node).name
    }

    fn label(&self, contract: usize, node: NodeId) -> &'static str {
        match self.kind(contract, node) {
            Kind::Input => "input",
            Kind::Pure => "compute",
            Kind::Guard => "guard",
            Kind::Branch => "branch",
            Kind::For => "for",
            Kind::Call => "call",
        }
    }

    fn call_label(
        &self,
        contract: usize,
        node: NodeId,
        _: Option<usize>,
        _: bool,
    ) -> (&'static str, Option<&str>) {
        (self.label(contract, node), None)
    }

    fn evaluate(&self, contract: usize, values: &[Val], job: Job) -> Result<Val, Failure> {
        let node = self.node(contract, job.node);
        match node.op {
            Op::Add(k) => Ok(int(sum(&node.deps, values) + k)),
            Op::Guard(true) => Ok(Val::Bool(true)),
            Op::Guard(false) => Err(failure(job, "the guard failed", Code::GuardFailed)),
            _ => Err(failure(job, "it fails", Code::NodeFailed)),
        }
    }

    fn choose(&self, contract: usize, values: &[Val], job: Job) -> Result<usize, Failure> {
        let on = self.node(contract, job.node).deps[0];
        values[on.index()]
            .as_i64()
            .and_then(|arm| usize::try_from(arm).ok())
            .filter(|&arm| arm < self.arms(contract, job.node))
            .ok_or_else(|| failure(job, "no arm fits", Code::NodeFailed))
    }

    fn arm(&self, contract: usize, arm: usize, values: &[Val], job: Job) -> Result<Val, Failure> {
        Ok(int(sum(self.deps(contract, job.node, Some(arm)), values)))
    }

    fn items<'v>(
        &self,
        contract: usize,
        values: &'v [Val],
        job: Job,
    ) -> Result<Cow<'v, [Val]>, Failure> {
        match &values[self.node(contract, job.node).deps[0].index()] {
            Val::Array(items) => Ok(Cow::Borrowed(items.as_slice())),
            _ => Err(failure(job, "not an array", Code::NodeFailed)),
        }
    }

    fn each(&self, _: usize, _: &[Val], item: &Val, job: Job) -> Result<Val, Failure> {
        match item.as_i64() {
            Some(n) => Ok(int(n * 10)),
            None => Err(failure(job, "not a number", Code::NodeFailed)),
        }
    }

    fn bind(&self, at: &At<'_, usize>) -> Result<(usize, Vec<Val>), Failure> {
        match self.callee(at.contract, at.job.node, at.item.is_some()) {
            Some((Callee::Compose(child), _)) => Ok((child, vec![int(self.given(at))])),
            _ => Err(failure(at.job, "not a composition", Code::NodeFailed)),
        }
    }

    fn start(
        &self,
        at: &At<'_, usize>,
        path: String,
        tx: &Sender<Done<Self::Answer>>,
        watch: impl FnOnce(),
    ) -> Result<(), NotStarted> {
        let (ms, fail) = match self.callee(at.contract, at.job.node, at.item.is_some()) {
            Some((Callee::Wait { ms, fail }, _)) => (ms, fail.then_some("it broke")),
            Some((Callee::Pause, _)) => (0, Some(PAUSE)),
            _ => {
                return Err(NotStarted::Machinery(failure(at.job, "not a wait", Code::NodeFailed)));
            }
        };
        watch();
        let path = match at.job.item {
            Some(i) => format!("{path}[{i}]"),
            None => path,
        };
        self.calls.started.lock().expect("log").push(path);
        let now = self.calls.flying.fetch_add(1, Ordering::SeqCst) + 1;
        self.calls.most.fetch_max(now, Ordering::SeqCst);
        let (calls, tx, job, value) =
            (Arc::clone(&self.calls), tx.clone(), at.job, self.given(at) * 10);
        std::thread::spawn(move || {
            let started = Instant::now();
            std::thread::sleep(Duration::from_millis(ms));
            calls.flying.fetch_sub(1, Ordering::SeqCst);
            let answer = fail.map_or(Ok(value), |message| Err(message.to_owned()));
            let _ = tx.send(Done { job, started, answer });
        });
        Ok(())
    }

    fn failed(answer: &Self::Answer) -> bool {
        answer.is_err()
    }

    fn answer(&self, at: &At<'_, usize>, answer: Self::Answer) -> Result<Val, Failure> {
        answer.map(int).map_err(|message| match message.as_str() {
            PAUSE => {
                let call = PendingCall {
                    call: format!("tool-{}", at.job.node.index()),
                    tool: "tool".to_owned(),
                    node: self.node(at.contract, at.job.node).name.clone(),
                    args: json!({}),
                    interrupted: false,
                };
                Failure::awaiting(at.job, vec![call], Span { file: FileId(0), start: 0, end: 0 })
            }
            _ => failure(at.job, &message, Code::ToolFailed),
        })
    }

    fn collect(
        &self,
        contract: usize,
        wanted: &[usize],
        values: &[Val],
        _: usize,
    ) -> Result<Fields, Failure> {
        let c = &self.contracts[contract];
        Ok(wanted
            .iter()
            .map(|&o| {
                let node = c.outputs[o];
                (c.nodes[node.index()].name.clone(), values[node.index()].clone())
            })
            .collect())
    }
}

/// Writes down what it is told, one line per hook.
#[derive(Default)]
struct Log(Mutex<Vec<String>>);

impl Log {
    fn push(&self, line: String) {
        self.0.lock().expect("log").push(line);
    }

    fn has(&self, line: &str) -> bool {
        self.0.lock().expect("log").iter().any(|l| l == line)
    }
}

impl Observer for Log {
    type Scope = ();
    type Call = ();

    fn run_started(&self, contract: &str) {
        self.push(format!("run {contract}"));
    }

    fn run_ended(&self, (): &(), error: Option<&RunError>) {
        self.push(format!("ended {:?}", error.map(|e| e.code().as_str())));
    }

    fn timed(&self, (): &()) -> bool {
        true
    }

    fn wants_skipped(&self) -> bool {
        true
    }

    fn exec_started(&self, (): &(), call: &Site<'_>) {
        self.push(format!("exec {}", (call.path)()));
    }

    fn exec_finished(&self, (): &(), call: &Site<'_>) {
        self.push(format!("exec done {}", (call.path)()));
    }

    fn exec_failed(&self, (): &(), code: &str) {
        self.push(format!("exec failed {code}"));
    }

    fn group_started(&self, (): &(), node: &Site<'_>, items: usize) {
        self.push(format!("group {} of {items}", (node.path)()));
    }

    fn group_finished(&self, (): &()) {
        self.push("group done".to_owned());
    }

    fn node_finished(&self, (): &(), node: &Site<'_>, _: Instant, error: Option<&str>) {
        let status = error.unwrap_or("ok");
        self.push(format!("{} {} {status}", node.label, (node.path)()));
    }

    fn skipped(&self, node: &Site<'_>) {
        self.push(format!("skipped {}", (node.path)()));
    }

    fn call_started(&self, (): &(), call: &Site<'_>) {
        self.push(format!("call {}", (call.path)()));
    }

    fn call_finished(&self, call: &Site<'_>, _: Instant, ok: bool) {
        self.push(format!("answer {} {ok}", (call.path)()));
    }

    fn answered(&self) {}

    fn waiting(&self) {}
}

fn bounds(limit: usize) -> Bounds {
    Bounds { limit, inline: false, pool: None, deadline: None, cancel: None }
}

/// Runs contract 0 of `fake` with `inputs`, every output asked for.
fn run(fake: Fake, inputs: Vec<Val>, bounds: Bounds, log: &Log) -> Result<Fields, RunError> {
    let outputs = (0..fake.contracts[0].outputs.len()).collect();
    let mut core = Core::new(fake, log, bounds);
    core.run(0, inputs, outputs, ())
}

fn out(fields: &Fields, name: &str) -> Value {
    fields[name].to_json()
}

/// The reported node failure's path and code.
fn failed_at(result: Result<Fields, RunError>) -> (String, Code) {
    match result {
        Err(RunError::Node { path, code, .. }) => (path, code),
        Err(other) => panic!("expected a node failure, got {other}"),
        Ok(outputs) => panic!("expected a failure, got {outputs:?}"),
    }
}

#[test]
fn a_shared_out_batch_keeps_its_order_on_any_pool() {
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a pool");
    let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
    for pool in [None, Some(&one), Some(&two)] {
        for len in [0, 1, 1000, 4096, 4097, 5000] {
            let items: Vec<usize> = (0..len).collect();
            let threads = Mutex::new(std::collections::HashSet::new());
            let done = shared_out(&items, pool, |&i| {
                crate::sync::lock(&threads).insert(std::thread::current().id());
                i * 2
            });
            assert_eq!(done, items.iter().map(|i| i * 2).collect::<Vec<_>>(), "{len} items");
            let most = pool
                .map_or_else(rayon::current_num_threads, rayon::ThreadPool::current_num_threads);
            assert!(threads.lock().expect("threads").len() <= most.max(1), "{len} items");
        }
    }
}

#[test]
fn a_fan_out_runs_in_one_parallel_batch() {
    // 100 nodes read the one input: ready together, above the batch size.
    let names: Vec<String> = (1..=100).map(|i| format!("f{i}")).collect();
    let mut nodes: Vec<(&str, Op, &[u32])> = vec![("x", Op::Input, &[])];
    nodes.extend(names.iter().zip(1..).map(|(name, i)| (name.as_str(), Op::Add(i), &[0][..])));
    let named = nodes;
    let outputs: Vec<u32> = (1..=100).collect();
    let fake = Fake::new(vec![contract("Wide", named, &outputs)]);
    let log = Log::default();
    let outputs = run(fake, vec![int(5)], bounds(usize::MAX), &log).expect("runs");
    assert_eq!(outputs.len(), 100);
    assert_eq!(out(&outputs, "f1"), json!(6));
    assert_eq!(out(&outputs, "f100"), json!(105));
    assert!(log.has("compute Wide > f77 ok"), "each node is observed");
}

#[test]
fn a_call_waiting_for_approval_pauses_the_run_after_the_rest() {
    // `refund` waits for approval; `note` does not depend on it and runs;
    // `told` reads `refund` and never runs; `safe` is `try refund`: a
    // pause is no failure for `try` to catch.
    let fake = Fake::new(vec![contract(
        "Returns",
        vec![
            ("x", Op::Input, &[]),
            ("refund", Op::Call(Callee::Pause, false), &[0]),
            ("note", Op::Call(Callee::Wait { ms: 20, fail: false }, false), &[0]),
            ("told", Op::Add(1), &[1]),
            ("safe", Op::Call(Callee::Pause, true), &[0]),
        ],
        &[3, 2, 4],
    )]);
    let log = Log::default();
    let calls = Arc::clone(&fake.calls);
    match run(fake, vec![int(1)], bounds(usize::MAX), &log) {
        Err(RunError::Paused { calls: waiting }) => {
            let nodes: Vec<&str> = waiting.iter().map(|c| c.node.as_str()).collect();
            assert_eq!(nodes, ["refund", "safe"]);
        }
        other => panic!("expected a pause, got {other:?}"),
    }
    assert!(calls.started().iter().any(|c| c.ends_with("note")), "{:?}", calls.started());
    assert!(log.has("answer Returns > note true"), "the independent call finished");
    assert!(!log.has("compute Returns > told"), "what reads the waiting call never ran");
}

#[test]
fn a_long_chain_runs_without_recursion() {
    let names: Vec<String> = (0..100_000).map(|i| format!("n{i}")).collect();
    let deps: Vec<[u32; 1]> = (0..100_000).map(|i| [i]).collect();
    let mut nodes: Vec<(&str, Op, &[u32])> = vec![(names[0].as_str(), Op::Input, &[])];
    nodes.extend((1..100_000).map(|i| (names[i].as_str(), Op::Add(1), &deps[i - 1][..])));
    let fake = Fake::new(vec![contract("Chain", nodes, &[99_999])]);
    let outputs = run(fake, vec![int(0)], bounds(usize::MAX), &Log::default()).expect("runs");
    assert_eq!(out(&outputs, "n99999"), json!(99_999));
}

#[test]
fn a_failed_guard_keeps_the_calls_it_gates_from_starting() {
    // `send` waits on the guard (a gate) and on `x`.
    let fake = Fake::new(vec![contract(
        "Gated",
        vec![
            ("x", Op::Input, &[]),
            ("ok", Op::Guard(false), &[0]),
            ("send", Op::Call(Callee::Wait { ms: 0, fail: false }, false), &[0, 1]),
        ],
        &[2],
    )]);
    let log = Log::default();
    let calls = Arc::clone(&fake.calls);
    let (path, code) = failed_at(run(fake, vec![int(1)], bounds(usize::MAX), &log));
    assert_eq!((path.as_str(), code), ("Gated > ok", Code::GuardFailed));
    assert!(calls.started().is_empty(), "the gated call never started");
    assert!(log.has(&format!("guard Gated > ok {}", Code::GuardFailed.as_str())));
}

#[test]
fn a_failed_guard_is_reported_before_an_earlier_node() {
    // `bad` is declared first and fails first; the guard fails too.
    let fake = Fake::new(vec![contract(
        "Both",
        vec![("x", Op::Input, &[]), ("bad", Op::Fail, &[0]), ("g", Op::Guard(false), &[0])],
        &[1],
    )]);
    let (path, code) = failed_at(run(fake, vec![int(1)], bounds(usize::MAX), &Log::default()));
    assert_eq!((path.as_str(), code), ("Both > g", Code::GuardFailed));
}

#[test]
fn of_two_failed_nodes_the_first_declared_is_reported() {
    let fake = Fake::new(vec![contract(
        "Two",
        vec![
            ("x", Op::Input, &[]),
            ("slow", Op::Call(Callee::Wait { ms: 30, fail: true }, false), &[0]),
            ("first", Op::Fail, &[0]),
            ("second", Op::Fail, &[0]),
        ],
        &[1, 2, 3],
    )]);
    let (path, code) = failed_at(run(fake, vec![int(1)], bounds(usize::MAX), &Log::default()));
    assert_eq!((path.as_str(), code), ("Two > first", Code::NodeFailed));
}

/// A branch on `x` (0 or 1): arm 0 reads `a`, arm 1 the call `w`.
fn branch() -> Fake {
    Fake::new(vec![contract(
        "Branchy",
        vec![
            ("x", Op::Input, &[]),
            ("a", Op::Add(100), &[0]),
            ("w", Op::Call(Callee::Wait { ms: 0, fail: false }, false), &[0]),
            ("pick", Op::Branch(vec![ids(&[1]), ids(&[2])]), &[0]),
        ],
        &[3],
    )])
}

#[test]
fn a_branch_runs_only_what_its_chosen_arm_reads() {
    let fake = branch();
    let log = Log::default();
    let calls = Arc::clone(&fake.calls);
    let outputs = run(fake, vec![int(0)], bounds(usize::MAX), &log).expect("runs");
    assert_eq!(out(&outputs, "pick"), json!(100));
    assert!(calls.started().is_empty(), "the unchosen arm's call never started");
    assert!(log.has("skipped Branchy > w"));

    let fake = branch();
    let calls = Arc::clone(&fake.calls);
    let outputs = run(fake, vec![int(1)], bounds(usize::MAX), &Log::default()).expect("runs");
    assert_eq!(out(&outputs, "pick"), json!(10));
    assert_eq!(calls.started(), ["Branchy > w"]);
}

fn items(values: &[i64]) -> Val {
    Val::array(values.iter().map(|&v| int(v)).collect())
}

#[test]
fn a_pure_for_runs_its_body_per_item() {
    let fake = Fake::new(vec![contract(
        "Loop",
        vec![("xs", Op::Input, &[]), ("ys", Op::For(None), &[0])],
        &[1],
    )]);
    let log = Log::default();
    let outputs = run(fake, vec![items(&[1, 2, 3])], bounds(usize::MAX), &log).expect("runs");
    assert_eq!(out(&outputs, "ys"), json!([10, 20, 30]));
    assert!(log.has("for Loop > ys[2] ok"), "each item is observed");
    assert!(log.has("for Loop > ys ok"));
}

#[test]
fn a_for_of_calls_keeps_the_item_order_within_the_limit() {
    let fake = Fake::new(vec![contract(
        "Calls",
        vec![
            ("xs", Op::Input, &[]),
            ("ys", Op::For(Some(Callee::Wait { ms: 20, fail: false })), &[0]),
        ],
        &[1],
    )]);
    let log = Log::default();
    let calls = Arc::clone(&fake.calls);
    let outputs = run(fake, vec![items(&[1, 2, 3, 4, 5, 6])], bounds(2), &log).expect("runs");
    assert_eq!(out(&outputs, "ys"), json!([10, 20, 30, 40, 50, 60]));
    assert_eq!(calls.started().len(), 6);
    assert_eq!(calls.most.load(Ordering::SeqCst), 2, "at most `limit` calls wait at once");
    assert!(log.has("group Calls > ys of 6") && log.has("group done"));
    assert!(log.has("answer Calls > ys[5] true"));
}

#[test]
fn an_inline_runner_waits_for_one_call_at_a_time() {
    let fake = Fake::new(vec![contract(
        "Inline",
        vec![
            ("x", Op::Input, &[]),
            ("a", Op::Call(Callee::Wait { ms: 10, fail: false }, false), &[0]),
            ("b", Op::Call(Callee::Wait { ms: 10, fail: false }, false), &[0]),
        ],
        &[1, 2],
    )]);
    let inline = Bounds { limit: 1, inline: true, pool: None, deadline: None, cancel: None };
    let calls = Arc::clone(&fake.calls);
    let outputs = run(fake, vec![int(2)], inline, &Log::default()).expect("runs");
    assert_eq!((out(&outputs, "a"), out(&outputs, "b")), (json!(20), json!(20)));
    assert_eq!(calls.most.load(Ordering::SeqCst), 1);
}

#[test]
fn try_makes_a_failed_call_its_value() {
    let fake = Fake::new(vec![contract(
        "Tries",
        vec![
            ("x", Op::Input, &[]),
            ("bad", Op::Call(Callee::Wait { ms: 0, fail: true }, true), &[0]),
            ("good", Op::Call(Callee::Wait { ms: 0, fail: false }, true), &[0]),
        ],
        &[1, 2],
    )]);
    let outputs = run(fake, vec![int(4)], bounds(usize::MAX), &Log::default()).expect("runs");
    // The fake's failure is the scheduler's own (no tool error behind it):
    // its kind is `eval`.
    let failed = json!({
        "ok": false, "error": "it broke", "code": Code::ToolFailed.as_str(), "kind": "eval"
    });
    assert_eq!(out(&outputs, "bad"), failed);
    assert_eq!(out(&outputs, "good"), json!({"ok": true, "value": 40}));
}

/// `Root` composes `Child` under `try`; `Child` starts a slow call, composes
/// `Grandchild` (which starts one too) and fails.
fn abandoned() -> Fake {
    let slow = Callee::Wait { ms: 3_000, fail: false };
    Fake::new(vec![
        contract(
            "Root",
            vec![("x", Op::Input, &[]), ("c", Op::Call(Callee::Compose(1), true), &[0])],
            &[1],
        ),
        contract(
            "Child",
            vec![
                ("y", Op::Input, &[]),
                ("slow", Op::Call(slow, false), &[0]),
                ("g", Op::Call(Callee::Compose(2), false), &[0]),
                ("bad", Op::Fail, &[0]),
            ],
            &[1, 2, 3],
        ),
        contract(
            "Grandchild",
            vec![("z", Op::Input, &[]), ("slow", Op::Call(slow, false), &[0])],
            &[1],
        ),
    ])
}

#[test]
fn try_abandons_a_failed_child_and_what_it_started() {
    let fake = abandoned();
    let log = Log::default();
    let started = Instant::now();
    let outputs = run(fake, vec![int(1)], bounds(usize::MAX), &log).expect("runs");
    assert!(started.elapsed() < Duration::from_secs(2), "no wait for the abandoned calls");
    let value = out(&outputs, "c");
    assert_eq!(value["ok"], json!(false));
    assert_eq!(value["code"], json!(Code::NodeFailed.as_str()));
    assert!(log.has("exec Root > c") && log.has("exec Root.c > g"));
    assert!(log.has(&format!("exec failed {}", Code::NodeFailed.as_str())));
    assert!(!log.has("exec done Root > c"), "the failed child gave no outputs");
}

#[test]
fn without_try_a_child_failure_fails_the_run_at_its_path() {
    let mut fake = abandoned();
    let Op::Call(_, catch) = &mut fake.contracts[0].nodes[1].op else { unreachable!() };
    *catch = false;
    let (path, code) = failed_at(run(fake, vec![int(1)], bounds(usize::MAX), &Log::default()));
    assert_eq!((path.as_str(), code), ("Root.c > bad", Code::NodeFailed));
}

/// A contract whose one call waits 3 s: a run that ends sooner was stopped
/// (had it waited, the call would succeed).
fn late() -> Fake {
    Fake::new(vec![contract(
        "Late",
        vec![
            ("x", Op::Input, &[]),
            ("w", Op::Call(Callee::Wait { ms: 3_000, fail: false }, false), &[0]),
        ],
        &[1],
    )])
}

#[test]
fn a_deadline_stops_a_run_waiting_on_a_call() {
    let fake = late();
    let deadline = Instant::now() + Duration::from_millis(50);
    let bounds = Bounds { deadline: Some(deadline), ..bounds(usize::MAX) };
    let result = run(fake, vec![int(1)], bounds, &Log::default());
    assert!(matches!(result, Err(RunError::Deadline)), "{result:?}");
}

#[test]
fn a_cancellation_stops_a_run_waiting_on_a_call() {
    let fake = late();
    let cancel = crate::runtime::Cancel::default();
    let bounds = Bounds { cancel: Some(cancel.clone()), ..bounds(usize::MAX) };
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        cancel.cancel();
    });
    let result = run(fake, vec![int(1)], bounds, &Log::default());
    stopper.join().expect("the stopper ends");
    assert!(matches!(result, Err(RunError::Deadline)), "{result:?}");
}
