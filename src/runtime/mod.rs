//! Running contracts: a checked [`Program`] plus inputs to outputs.
//!
//! Input: an [`Engine`] (the program, the tools, the LLM client) and a
//! contract's inputs as JSON. Output: the contract's outputs as a JSON
//! object, or a [`RunError`] that names the node path and points at its
//! source.
//!
//! Only the nodes that the requested outputs (and the guards) need are run.
//! Pure nodes are evaluated by the scheduler's thread as soon as they are
//! ready, wide batches of them in parallel on a rayon pool; nodes that wait
//! (tools, agents) run as tasks on a tokio runtime and hold no CPU worker
//! while they wait; a `compose` node starts a child execution inside the
//! same scheduler, so waiting in children overlaps too. The module
//! `runtime/schedule/` has the details.

pub mod batch;
mod error;
pub mod inputs;
mod mcp_check;
mod schedule;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};

use crate::effects::{Effects, Outcome, Work};
use crate::eval::Fields;
use crate::failure::NodeError;
use crate::ir::{AgentId, ContractId, Program, ToolId};
use crate::llm::Llm;
use crate::tools::Toolbox;
use crate::trace::Trace;
use crate::usage::UsageTotals;
use crate::value::Val;

pub use error::RunError;
pub use inputs::InputsFrom;

/// What to run and how.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Output names to compute; all when empty.
    pub outputs: Vec<String>,
    /// How many nodes may run at once; overrides the contract's runner.
    pub jobs: Option<usize>,
    /// Record a per-node timeline.
    pub trace: bool,
    /// The run span's parent and attributes, when spans are exported.
    pub span: crate::telemetry::RunSpan,
    /// Where the inputs came from: how a missing one's help says to give it.
    pub inputs_from: InputsFrom,
    /// Stop the run at this time if it has not finished: no new node
    /// starts and the tool and agent calls in flight are cancelled (their
    /// child processes killed), giving [`RunError::Deadline`].
    pub deadline: Option<std::time::Instant>,
    /// Stop the run when this is cancelled (an MCP client's
    /// `notifications/cancelled`), as at its deadline: within
    /// [`Cancel::NOTICED_WITHIN`], no new node starts and the calls in
    /// flight are cancelled, giving [`RunError::Deadline`].
    pub cancel: Option<Cancel>,
    /// A budget the run's model requests spend on besides its contract's
    /// own `budget` (`--budget`; one meter shared by every row of a batch).
    pub budget: Option<Arc<crate::budget::Meter>>,
}

/// Stops a run from another thread or task (see [`RunOptions::cancel`]).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// How long a run waiting on its calls may take to notice.
    pub const NOTICED_WITHIN: std::time::Duration = std::time::Duration::from_millis(20);

    /// Stops the runs that hold this (or a clone).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once [`Cancel::cancel`] was called.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A finished run.
#[derive(Debug)]
pub struct RunOutput {
    /// The outputs, in declaration order.
    pub outputs: Map<String, Value>,
    /// The timeline (empty unless asked for).
    pub trace: Arc<Trace>,
    /// What the run's model calls spent, per provider and model (also
    /// [`Trace::usage`] of a run that failed).
    pub usage: UsageTotals,
}

/// A rayon pool and its thread count.
type SizedPool = (usize, Arc<rayon::ThreadPool>);

/// A program ready to run, with the tools and the LLM client its nodes use.
/// Cheap to share between threads; one engine can run many times.
pub struct Engine {
    program: Arc<Program>,
    toolbox: Toolbox,
    llm: Llm,
    effects: Effects,
    /// Shared with [`Engine::sibling`]s.
    io: Arc<OnceLock<Option<tokio::runtime::Runtime>>>,
    /// The runtime for waiting nodes is driven by the runs themselves (see
    /// [`Engine::with_calls_on_run_thread`]).
    calls_on_run_thread: bool,
    /// The rayon pools of `runner thread_pool(n)` runs by thread count,
    /// built on first use and shared with [`Engine::sibling`]s: a run
    /// starts no threads of its own.
    pools: Arc<Mutex<Vec<SizedPool>>>,
}

impl Engine {
    /// An engine for `program` with no native tools and LLM settings from
    /// the environment.
    #[must_use]
    pub fn new(program: Program) -> Self {
        Self {
            program: Arc::new(program),
            toolbox: Toolbox::new(),
            llm: Llm::from_env(),
            effects: Effects::live(),
            io: Arc::new(OnceLock::new()),
            calls_on_run_thread: false,
            pools: Arc::default(),
        }
    }

    /// An engine for the same program, tools, model settings and I/O
    /// runtime whose runs go through `effects` (each test run gets one
    /// with its mocks).
    #[must_use]
    pub fn sibling(&self, effects: Effects) -> Self {
        Self {
            program: Arc::clone(&self.program),
            toolbox: self.toolbox.clone(),
            llm: self.llm.clone(),
            effects,
            io: Arc::clone(&self.io),
            calls_on_run_thread: self.calls_on_run_thread,
            pools: Arc::clone(&self.pools),
        }
    }

    /// Uses `toolbox` (with its native tools) for tool nodes and agents.
    #[must_use]
    pub fn with_toolbox(mut self, toolbox: Toolbox) -> Self {
        self.toolbox = toolbox;
        self
    }

    /// Uses `llm` for agent nodes (environment, backoff).
    #[must_use]
    pub fn with_llm(mut self, llm: Llm) -> Self {
        self.llm = llm;
        self
    }

    /// Sends every tool call and model request of runs through `effects`
    /// (recording, replay, journal, cache).
    #[must_use]
    pub fn with_effects(mut self, effects: Effects) -> Self {
        self.effects = effects;
        self
    }

    /// Runs the tool and agent calls of a run on the run's own thread
    /// while it waits for them, one event loop, instead of on two I/O
    /// threads of their own: for a process that makes one run at a time
    /// and ends with it (`ignite run`). A burst of calls then costs no
    /// hand-offs between threads; but a call progresses only while a run
    /// (or [`Engine::call_agent`]) waits, so an engine that keeps
    /// connections open between runs, or awaits [`Engine::call_tool`] on
    /// another runtime, keeps the default. Call before the first run.
    #[must_use]
    pub fn with_calls_on_run_thread(mut self) -> Self {
        self.calls_on_run_thread = true;
        self
    }

    /// The program.
    #[must_use]
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The effect stores runs go through.
    #[must_use]
    pub fn effects(&self) -> &Effects {
        &self.effects
    }

    /// The contract called `name`; when `name` is `None`, the only contract
    /// the root file declares, else the program's only top-level contract
    /// (one that no other contract composes).
    ///
    /// # Errors
    /// No such contract, or several top-level ones and none named.
    pub fn contract(&self, name: Option<&str>) -> Result<ContractId, RunError> {
        let names: Vec<&str> = self.program.contracts.iter().map(|c| c.name.as_str()).collect();
        let message = match name {
            Some(name) => match self.program.contract_named(name) {
                Some(id) => return Ok(id),
                None => match crate::suggest::closest(name, names.iter().copied()) {
                    Some(close) => format!("no contract `{name}`; did you mean `{close}`?"),
                    None => {
                        format!("no contract `{name}`; the contracts are `{}`", names.join("`, `"))
                    }
                },
            },
            None => {
                // The root file is the first one loaded.
                let root_file = crate::source::FileId(0);
                let mut in_root = self
                    .program
                    .contracts
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.span.file == root_file);
                if let (Some((i, _)), None) = (in_root.next(), in_root.next()) {
                    return Ok(ContractId::from_index(i));
                }
                let roots = self.roots();
                match roots.as_slice() {
                    [root] => return Ok(*root),
                    [] => "the program declares no contract".to_owned(),
                    _ => {
                        let roots: Vec<&str> =
                            roots.iter().map(|&c| self.program[c].name.as_str()).collect();
                        format!(
                            "the program has several top-level contracts (`{}`): choose one with `--contract NAME`",
                            roots.join("`, `")
                        )
                    }
                }
            }
        };
        Err(RunError::Contract { message })
    }

    /// Contracts that no other contract composes, in declaration order.
    #[must_use]
    pub fn roots(&self) -> Vec<ContractId> {
        let mut composed = vec![false; self.program.contracts.len()];
        for contract in &self.program.contracts {
            for node in &contract.nodes {
                for call in node.kind.calls() {
                    if let crate::ir::Callee::Contract(child) = call.callee {
                        composed[child.index()] = true;
                    }
                }
            }
        }
        (0..composed.len()).filter(|&i| !composed[i]).map(ContractId::from_index).collect()
    }

    /// Runs `contract` with `inputs`.
    ///
    /// # Errors
    /// Wrong inputs (all listed), an unknown requested output, or the first
    /// failing node.
    pub fn run(
        &self,
        contract: ContractId,
        inputs: &Map<String, Value>,
        options: &RunOptions,
    ) -> Result<RunOutput, RunError> {
        let trace = Arc::new(Trace::new(options.trace));
        let outputs = self.run_traced(contract, inputs, options, &trace)?;
        Ok(RunOutput { outputs, usage: trace.usage(), trace })
    }

    /// Like [`Engine::run`], recording into `trace` (whatever
    /// `options.trace` says), which the caller keeps when the run fails.
    ///
    /// # Errors
    /// As [`Engine::run`].
    pub fn run_traced(
        &self,
        contract: ContractId,
        inputs: &Map<String, Value>,
        options: &RunOptions,
        trace: &Arc<Trace>,
    ) -> Result<Map<String, Value>, RunError> {
        let inputs = inputs.iter().map(|(name, value)| (name.clone(), Val::from(value))).collect();
        self.run_values(contract, inputs, options, trace)
    }

    /// Like [`Engine::run_traced`], the inputs already values (as
    /// `ignite run` reads an inputs file): their strings (a document's
    /// base64) become the run's values as they are, with no JSON copy
    /// between.
    ///
    /// # Errors
    /// As [`Engine::run`].
    pub(crate) fn run_values(
        &self,
        contract: ContractId,
        inputs: Fields,
        options: &RunOptions,
        trace: &Arc<Trace>,
    ) -> Result<Map<String, Value>, RunError> {
        schedule::run(self, contract, inputs, options, trace)
    }

    /// Does the live work of one effect from its description: what a
    /// durable journal's worker runs for a step (the same code a run's live
    /// effects call). The program must be the one that described it.
    ///
    /// # Errors
    /// A failure worth another attempt (a transport failure, a tool
    /// failure its `retries` allow again), or work this program cannot do.
    pub async fn perform(&self, work: &Work) -> Result<Outcome, String> {
        let program = self.program();
        match work {
            Work::Tool { tool, args, idempotency_key } => {
                let tool = *tool as usize;
                if tool >= program.tools.len() {
                    return Err(format!(
                        "no tool with id {tool} in this program: the workers serve different programs"
                    ));
                }
                let tool = ToolId::from_index(tool);
                let work =
                    crate::effects::tool_work(&self.toolbox, program, tool, args.clone(), true);
                let result = match idempotency_key {
                    // An approved call: its requests carry the approval's key.
                    Some(key) => crate::tools::http::IDEMPOTENCY_KEY.scope(key.clone(), work).await,
                    None => work.await,
                };
                result.map_err(|e| e.to_string())
            }
            Work::Model { agent, link, url, body } => {
                let agent = AgentId::from_index(*agent as usize);
                self.llm.perform(program, agent, *link as usize, url, body).await
            }
        }
    }

    /// Calls `tool` on its own with `args`, as a tool node does: the
    /// arguments validated (every problem listed, defaults filled in),
    /// through the effect stores (cache, recording, journal; the effect's
    /// node is the tool's declared name), the result checked against its
    /// `result` type. Unguarded: the caller decides which tools may be
    /// called (`ignite mcp` lists only what its grant covers). Dropping
    /// the future cancels the call and kills its child process.
    ///
    /// # Errors
    /// The tool's failure, or why a store refused the call.
    pub async fn call_tool(&self, tool: ToolId, args: Value) -> Result<Value, NodeError> {
        let scope =
            crate::effects::Scope::new(self.effects.clone(), self.program[tool].name.clone());
        let key = scope.next_key();
        scope.call_tool(&key, None, &self.toolbox, &self.program, tool, args).await
    }

    /// Runs `agent` on its own with `inputs` (an eval's judge), as an agent
    /// node does, through the effect stores (the effect's node is the
    /// agent's name); blocks until it answers. Also what its model calls
    /// spent.
    ///
    /// # Errors
    /// The agent's failure, or no I/O runtime could be started.
    pub fn call_agent(
        &self,
        agent: AgentId,
        inputs: &Map<String, Value>,
    ) -> (Result<Value, NodeError>, UsageTotals) {
        let trace = Trace::new(false);
        let scope =
            crate::effects::Scope::new(self.effects.clone(), self.program[agent].name.clone());
        let Some(io) = self.io() else {
            let error = NodeError::Failed("could not start the runtime for agents".to_owned());
            return (Err(error), UsageTotals::default());
        };
        let answer = io.block_on(self.llm.run_agent(
            &self.program,
            agent,
            inputs,
            &self.toolbox,
            &trace,
            &scope,
        ));
        (answer, trace.usage())
    }

    /// The pool for the pure nodes of a `runner thread_pool(n)` run: `n`
    /// threads at most, and no more than the cores (pure nodes are CPU
    /// work; the limit on waiting nodes stays `n`). `None` when the
    /// threads cannot be started: the nodes then run on rayon's global pool.
    fn pool(&self, n: usize) -> Option<Arc<rayon::ThreadPool>> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let threads = n.clamp(1, cores);
        let mut pools = crate::sync::lock(&self.pools);
        if let Some((_, pool)) = pools.iter().find(|(size, _)| *size == threads) {
            return Some(Arc::clone(pool));
        }
        let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(threads).build().ok()?);
        pools.push((threads, Arc::clone(&pool)));
        Some(pool)
    }

    /// When the runs drive the calls: lets the calls a run stopped (its
    /// deadline, a failure) end now, their child processes killed, rather
    /// than when the runtime next runs. The stopped tasks were queued before
    /// the empty one this waits for.
    fn settle_calls(&self) {
        if let Some(io) =
            self.io.get().and_then(Option::as_ref).filter(|_| self.calls_on_run_thread)
        {
            let _ = io.block_on(io.spawn(async {}));
        }
    }

    /// The tokio runtime for waiting nodes, started on first use: with
    /// two threads of its own, or none when the runs drive it.
    fn io(&self) -> Option<&tokio::runtime::Runtime> {
        self.io
            .get_or_init(|| {
                let mut builder = if self.calls_on_run_thread {
                    tokio::runtime::Builder::new_current_thread()
                } else {
                    let mut builder = tokio::runtime::Builder::new_multi_thread();
                    builder.worker_threads(2);
                    builder
                };
                // Its workers' and its blocking calls' threads.
                builder.thread_name("ignite-io").enable_all().build().ok()
            })
            .as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;
    use std::sync::Arc;

    use serde_json::{Map, Value};

    use super::{Engine, RunOptions};
    use crate::effects::Effects;

    #[test]
    fn thread_pool_runs_share_one_pool() {
        // 64 ready pure nodes: a batch wide enough to run on the pool.
        let mut text = String::from(
            "contract Wide {\n  runner thread_pool(pool_size: 2)\n  input x: integer\n",
        );
        for i in 0..64 {
            let _ = writeln!(text, "  compute n{i} = x * {i}\n  output n{i}");
        }
        text.push_str("}\n");
        let program = crate::compile_source("wide.ign", &text).program.expect("compiles");
        let engine = Engine::new(program);
        let sibling = engine.sibling(Effects::live());
        let contract = engine.contract(None).expect("one contract");
        let inputs: Map<String, Value> = [("x".to_owned(), Value::from(2))].into_iter().collect();
        for runner in [&engine, &sibling, &engine] {
            let out = runner.run(contract, &inputs, &RunOptions::default()).expect("runs");
            assert_eq!(out.outputs["n63"], Value::from(126));
        }
        let pools = engine.pools.lock().expect("pools");
        assert_eq!(pools.len(), 1, "one pool for every run");
        let (_, pool) = &pools[0];
        assert_eq!(Arc::strong_count(pool), 1, "no run holds it after it ended");
    }
}
