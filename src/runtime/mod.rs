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
//! same scheduler, so waiting in children overlaps too. See
//! [`scheduler`] for the details.

pub mod batch;
mod error;
pub mod inputs;
mod scheduler;

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::effects::Effects;
use crate::ir::{ContractId, Program};
use crate::llm::Llm;
use crate::tools::Toolbox;
use crate::trace::Trace;
use crate::usage::UsageTotals;

pub use error::RunError;

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

/// A program ready to run, with the tools and the LLM client its nodes use.
/// Cheap to share between threads; one engine can run many times.
pub struct Engine {
    program: Arc<Program>,
    toolbox: Toolbox,
    llm: Llm,
    effects: Effects,
    /// Shared with [`Engine::sibling`]s.
    io: Arc<OnceLock<Option<tokio::runtime::Runtime>>>,
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
                None => match crate::lower::suggest::closest(name, names.iter().copied()) {
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
        scheduler::run(self, contract, inputs, options, trace)
    }

    /// The tokio runtime for waiting nodes, started on first use.
    fn io(&self) -> Option<&tokio::runtime::Runtime> {
        self.io
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("ignite-io")
                    .enable_all()
                    .build()
                    .ok()
            })
            .as_ref()
    }
}
