//! The checked program: what [`lower`](crate::lower) produces and the
//! runtime, the tool registry and the agents consume.
//!
//! Every name is resolved to an id, every type is a [`Type`], every
//! default is a value, and every contract is an acyclic graph whose
//! topological order is precomputed. Nothing here can be wrong in a way
//! `check` would report: later stages rely on it. This is the only module
//! that imports petgraph.

mod builtin;
mod eval_block;
mod expr;
mod graph;
mod ids;
mod json;
mod mcp;
mod provider_kind;
mod test_block;
mod types;

use std::fmt;
use std::ops::Index;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

pub use builtin::{BUILTINS, Builtin, BuiltinParam, BuiltinSpec, ConfigKey, ParamKind};
pub use eval_block::{Eval, Judge, Require, Score, ScoreKind, ScoreValue};
pub use expr::{BinaryOp, Expr, ExprKind, Function, Part, UnaryOp, pattern};
pub use graph::{Deps, Graph};
pub use ids::{AgentId, ContractId, NodeId, ProviderId, ToolId};
pub use json::{Json, describe, value_kind};
pub use mcp::{
    LOCK_FILE, Lock, LockedServer, LockedTool, McpServer, McpTool, McpTransport, schema_type,
};
pub use provider_kind::ProviderKind;
pub use test_block::{AgentMock, Decision, ExpectCalls, Mock, MockAnswer, Snapshot, Test, slug};
pub use types::{Enum, Record, Type, TypeKind, Types, field_problems, fill_fields};

use crate::source::{Sources, Span};

/// A whole checked program: the root file and everything it `use`s.
#[derive(Debug, Clone)]
pub struct Program {
    /// Every file, for diagnostics and relative paths.
    pub sources: Sources,
    /// Tools in declaration order.
    pub tools: Vec<Tool>,
    /// Agents in declaration order.
    pub agents: Vec<Agent>,
    /// `provider` declarations in declaration order.
    pub providers: Vec<Provider>,
    /// Contracts in declaration order.
    pub contracts: Vec<Contract>,
    /// `test` blocks in load order.
    pub tests: Vec<Test>,
    /// `eval` blocks in load order.
    pub evals: Vec<Eval>,
}

impl Program {
    /// Every tool a run of `root` can call, with the contract and node
    /// that reach it: tool nodes, their agents' tools and those of the
    /// contracts they compose (each contract visited once), in the order
    /// found.
    #[must_use]
    pub fn reachable_tools(&self, root: ContractId) -> Vec<(ContractId, &Node, ToolId)> {
        let mut seen = vec![false; self.contracts.len()];
        let mut stack = vec![root];
        let mut found = Vec::new();
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut seen[id.index()], true) {
                continue;
            }
            for node in &self[id].nodes {
                for call in node.kind.calls() {
                    match call.callee {
                        Callee::Tool(tool) => found.push((id, node, tool)),
                        Callee::Agent(agent) => {
                            found.extend(self[agent].tools.iter().map(|&tool| (id, node, tool)));
                        }
                        Callee::Contract(child) => stack.push(child),
                    }
                }
            }
        }
        found
    }

    /// The contract declared as `name`.
    #[must_use]
    pub fn contract_named(&self, name: &str) -> Option<ContractId> {
        self.contracts.iter().position(|c| c.name == name).map(ContractId::from_index)
    }

    /// The tool declared as `name` or whose `tool_name` is `name`.
    #[must_use]
    pub fn tool_named(&self, name: &str) -> Option<ToolId> {
        self.tools
            .iter()
            .position(|t| t.name == name || t.tool_name == name)
            .map(ToolId::from_index)
    }
}

macro_rules! index {
    ($id:ty, $field:ident, $out:ty) => {
        impl Index<$id> for Program {
            type Output = $out;
            fn index(&self, id: $id) -> &$out {
                &self.$field[id.index()]
            }
        }
    };
}
index!(ToolId, tools, Tool);
index!(AgentId, agents, Agent);
index!(ProviderId, providers, Provider);
index!(ContractId, contracts, Contract);

/// A typed parameter: a tool `param`, an agent or contract `input`.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// The default; a param with a default (or a nullable type) is optional.
    pub default: Option<Value>,
    /// What it is for.
    pub description: Option<String>,
    /// The declaring statement.
    pub span: Span,
}

impl Param {
    /// True when a caller must pass it: no default and not nullable.
    #[must_use]
    pub fn required(&self) -> bool {
        self.default.is_none() && !self.ty.nullable
    }
}

/// A tool: a function an agent may call, or a contract may run unguarded.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Declared name: `DatabaseLookup`.
    pub name: String,
    /// Name seen by models: `database_lookup`.
    pub tool_name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its parameters in declaration order.
    pub params: Vec<Param>,
    /// Capabilities a calling agent must hold.
    pub capabilities: Vec<String>,
    /// `requires_approval`: a call waits for a person's decision.
    pub approval: Option<Approval>,
    /// How it runs.
    pub implementation: Implementation,
    /// `result Type`: what it returns, validated at run time; `None` is `any`.
    pub result: Option<Type>,
    /// Time limit for `exec` and `http` tools.
    pub timeout: Option<Duration>,
    /// Retries after a failed first attempt (`exec` and `http` tools).
    pub retries: u32,
    /// `cache` / `cache 7d`: keep successful results, for ever (`Some(None)`)
    /// or for a duration.
    pub cache: Option<Option<Duration>>,
    /// The folder of the declaring file: `exec` runs there, relative paths resolve from it.
    pub dir: PathBuf,
    /// The declaration.
    pub span: Span,
}

/// `requires_approval [when COND]` of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// `when COND` over the params (`Var(i)` is param `i`); `None`: every
    /// call needs approval.
    pub when: Option<Expr>,
    /// The statement.
    pub span: Span,
}

/// How a tool is implemented.
#[derive(Debug, Clone, PartialEq)]
pub enum Implementation {
    /// `returns expr` over the params (`Var(i)` is param `i`).
    Returns(Expr),
    /// `exec "program" "arg" ...`: no shell; arguments as JSON on stdin.
    Exec {
        /// The program, relative to [`Tool::dir`] when it has a `/`.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// `http get|post "url"`.
    Http {
        /// The method.
        method: HttpMethod,
        /// The URL; may interpolate params.
        url: Expr,
        /// `header "Name" = expr` lines; values may call `env`.
        headers: Vec<(String, Expr)>,
    },
    /// `builtin "name" {config}`.
    Builtin {
        /// Which builtin.
        builtin: Builtin,
        /// Its settings (a constant object).
        config: Map<String, Value>,
    },
    /// `native "name"`: registered from Rust by the embedding program.
    Native {
        /// The registration name (the `tool_name` when not written).
        name: String,
    },
    /// `mcp Server "tool"`: a tool of an MCP server, as locked.
    Mcp(McpTool),
}

/// The method of an `http` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// Arguments as a query string.
    Get,
    /// Arguments as a JSON body.
    Post,
}

/// The text of a setting that may come from the environment (`model`,
/// `base_url`): written in the file, or `env("VAR")` / `env("VAR",
/// "default")`, read when a run resolves its providers.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum SettingText {
    /// The text as written.
    Literal(String),
    /// The value of an environment variable, or `default` when it is unset.
    Env {
        /// The variable's name.
        var: String,
        /// The text used when the variable is unset.
        default: Option<String>,
    },
}

impl SettingText {
    /// The text: the literal, or the variable's value (`get` reads the
    /// environment) or its default.
    ///
    /// # Errors
    /// The variable's name, when it is unset and has no default.
    pub fn resolve(&self, get: impl FnOnce(&str) -> Option<String>) -> Result<String, &str> {
        match self {
            Self::Literal(text) => Ok(text.clone()),
            Self::Env { var, default } => get(var).or_else(|| default.clone()).ok_or(var.as_str()),
        }
    }
}

/// The text itself, or `env("VAR")`.
impl fmt::Display for SettingText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Literal(text) => f.write_str(text),
            Self::Env { .. } => write!(f, "{self:?}"),
        }
    }
}

/// Written as in `.ign`: `"text"` or `env("VAR")`.
impl fmt::Debug for SettingText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Literal(text) => write!(f, "{text:?}"),
            Self::Env { var, default: None } => write!(f, "env({var:?})"),
            Self::Env { var, default: Some(default) } => write!(f, "env({var:?}, {default:?})"),
        }
    }
}

/// An agent: an LLM executor with tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    /// Declared name.
    pub name: String,
    /// Providers to try in order (the first, then its fallbacks).
    pub providers: Vec<ProviderChoice>,
    /// Models to try in order; the i-th goes with the i-th provider when
    /// both chains are given, the last repeats otherwise.
    pub models: Vec<SettingText>,
    /// The system prompt, a template over the inputs.
    pub system_prompt: Option<Expr>,
    /// Tools it may be offered, in the order listed.
    pub tools: Vec<ToolId>,
    /// Capabilities it holds.
    pub capabilities: Vec<String>,
    /// Tool turns allowed before a tool-loop error.
    pub max_tool_iterations: u32,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Reply token limit.
    pub max_tokens: Option<u32>,
    /// Inputs (`Var(i)` in the prompts is input `i`).
    pub inputs: Vec<Param>,
    /// The user message, a template over the inputs.
    pub prompt: Expr,
    /// `result Type`: a structured answer; `None` for the final text.
    pub result: Option<Type>,
    /// Repair attempts after an answer that does not fit `result`.
    pub result_retries: u32,
    /// `cache` / `cache 7d`: keep successful answers, for ever (`Some(None)`)
    /// or for a duration.
    pub cache: Option<Option<Duration>>,
    /// The declaration.
    pub span: Span,
}

/// One provider of an agent's chain.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderChoice {
    /// A built-in kind with settings from the environment.
    Kind(ProviderKind),
    /// A `provider` declaration.
    Declared(ProviderId),
    /// `script "file.json"`: scripted replies, offline; the path is already
    /// resolved against the folder of the declaring file.
    Script(PathBuf),
}

/// A `provider Name { ... }` declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    /// Declared name.
    pub name: String,
    /// Wire protocol.
    pub kind: ProviderKind,
    /// Base URL; the kind's environment default when absent.
    pub base_url: Option<SettingText>,
    /// Environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Request time limit.
    pub timeout: Option<Duration>,
    /// Retries after the first attempt.
    pub retries: Option<u32>,
    /// `rate_limit`: the most request starts per period, spaced evenly.
    pub rate_limit: Option<Rate>,
    /// `token_limit`: the most tokens per period.
    pub token_limit: Option<Rate>,
    /// `price`: what tokens cost.
    pub price: Option<Price>,
    /// The declaration.
    pub span: Span,
}

/// Retries after the first attempt when the provider declares none (a
/// kind from the environment, or a declaration without `retries`).
pub const DEFAULT_RETRIES: u32 = 2;

/// `N per UNIT`: at most `count` in every `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    /// How many (at least 1).
    pub count: u32,
    /// A second, a minute or an hour.
    pub period: Duration,
}

/// `price input X output Y`: USD per million tokens (finite, not negative).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// USD per million input tokens.
    pub input: f64,
    /// USD per million output tokens.
    pub output: f64,
}

impl Price {
    /// The cost in USD of `input` and `output` tokens.
    #[must_use]
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input + output as f64 * self.output) / 1_000_000.0
    }
}

/// A contract: a DAG of nodes with outputs.
#[derive(Debug, Clone)]
pub struct Contract {
    /// Declared name.
    pub name: String,
    /// How many nodes may run at once.
    pub runner: Runner,
    /// `budget`: what one run of the contract may spend.
    pub budget: Budget,
    /// The `budget` statement, when there is one.
    pub budget_span: Option<Span>,
    /// Nodes in declaration order ([`NodeId`] indexes this).
    pub nodes: Vec<Node>,
    /// Outputs in declaration order.
    pub outputs: Vec<Output>,
    /// Dependencies between nodes (gates included).
    pub graph: Graph,
    /// Effect nodes that no guard needs: each waits for every guard
    /// (an edge from each guard in `graph`).
    pub gated: Vec<NodeId>,
    /// The static type of each node, by [`NodeId`] index (`any` where
    /// nothing is known). Apart from the nodes, so a node stays 80 bytes.
    pub types: Types,
    /// The declaration.
    pub span: Span,
    /// The name in the declaration (where whole-contract errors point).
    pub name_span: Span,
}

impl Contract {
    /// The inputs, in declaration order.
    pub fn inputs(&self) -> impl Iterator<Item = (NodeId, &Param)> {
        self.nodes.iter().enumerate().filter_map(|(i, n)| match &n.kind {
            NodeKind::Input(param) => Some((NodeId::from_index(i), &**param)),
            _ => None,
        })
    }

    /// The node named `name`.
    #[must_use]
    pub fn node_named(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| &*n.name == name).map(NodeId::from_index)
    }
}

impl Index<NodeId> for Contract {
    type Output = Node;
    fn index(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }
}

/// `budget usd X, model_calls N, tokens T`, or `--budget`: the most a run
/// may spend on model calls; each limit is optional.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    /// USD, by the providers' `price` (unpriced calls cost nothing here).
    pub usd: Option<f64>,
    /// Model requests sent (every attempt, retries and fallbacks included).
    pub model_calls: Option<u64>,
    /// Input and output tokens of the replies.
    pub tokens: Option<u64>,
}

impl Budget {
    /// True when it sets no limit.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.usd.is_none() && self.model_calls.is_none() && self.tokens.is_none()
    }

    /// Each limit the tighter of `self`'s and `other`'s.
    #[must_use]
    pub fn tighten(self, other: Budget) -> Budget {
        fn tighter<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        Budget {
            usd: tighter(self.usd, other.usd),
            model_calls: tighter(self.model_calls, other.model_calls),
            tokens: tighter(self.tokens, other.tokens),
        }
    }
}

impl std::fmt::Display for Budget {
    /// As written in a contract: `usd 0.5, model_calls 40, tokens 200000`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(usd) = self.usd {
            parts.push(format!("usd {usd}"));
        }
        if let Some(calls) = self.model_calls {
            parts.push(format!("model_calls {calls}"));
        }
        if let Some(tokens) = self.tokens {
            parts.push(format!("tokens {tokens}"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// The largest `pool_size` / `--jobs`.
pub const MAX_POOL_SIZE: i64 = 65_535;

// A contract can hold a million nodes (asserted where the layout is
// known: 64-bit).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Node>() == 80);

/// How a contract's nodes are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// No runner declared: as parallel as the graph allows.
    Default,
    /// `runner inline`: one node at a time.
    Inline,
    /// `runner thread_pool(pool_size: N)`: at most N nodes at once.
    Pool(usize),
}

/// A node of a contract. Its static type is in [`Contract::types`].
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Its name.
    pub name: Box<str>,
    /// What it does.
    pub kind: NodeKind,
    /// The statement.
    pub span: Span,
}

/// What a node does. In expressions, `Var(i)` is the value of node `i`.
/// The rarer, larger kinds are boxed, so a node takes the room of a
/// `compute` (a contract can hold a million of them).
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A value supplied by the caller.
    Input(Box<Param>),
    /// A pure expression.
    Compute(Expr),
    /// `compute x = Tool(...)`, `compute x = Agent(...)` (the tool-use
    /// loop), `compose x = Contract(...)` (an isolated child execution);
    /// maybe under `try`.
    Call(Call),
    /// `guard x = cond else "message"`.
    Guard {
        /// Must be `true`.
        condition: Expr,
        /// Why the run fails when it is not.
        message: Option<Box<Expr>>,
    },
    /// `if c then A(..) else B(..)` or `match x { ... }` as the whole
    /// expression: only the chosen arm, and what only it reads, runs.
    Branch(Box<Branch>),
    /// `for item in items if cond: body`: the body once per item.
    For(Box<Collection>),
}

/// A call of a tool, agent or contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// What is called.
    pub callee: Callee,
    /// Arguments by param (or input) name, in param order.
    pub args: Vec<(String, Expr)>,
    /// Under `try`: a failure is the value `{ok: false, error, code}` and
    /// a success `{ok: true, value}`.
    pub catch: bool,
}

/// What a [`Call`] calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callee {
    /// A tool, run unguarded.
    Tool(ToolId),
    /// An agent's tool-use loop.
    Agent(AgentId),
    /// A contract, as a child execution.
    Contract(ContractId),
}

impl Callee {
    /// `tool`, `agent` or `compose`, for traces and graphs.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Callee::Tool(_) => "tool",
            Callee::Agent(_) => "agent",
            Callee::Contract(_) => "compose",
        }
    }
}

/// What an arm of a branch, or the body of a `for`, computes.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A pure expression.
    Pure(Expr),
    /// A call.
    Call(Call),
}

impl Body {
    /// Calls `f` for every variable the body reads, in source order.
    pub fn visit_vars(&self, f: &mut (impl FnMut(u32) + ?Sized)) {
        match self {
            Body::Pure(e) => e.visit_vars(f),
            Body::Call(call) => call.args.iter().for_each(|(_, e)| e.visit_vars(f)),
        }
    }
}

/// A node that runs one of its arms.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// `if` or `match`.
    pub kind: BranchKind,
    /// The condition of `if`, the scrutinee of `match`.
    pub on: Expr,
    /// The arms in source order; the first whose pattern fits runs. An
    /// `if` has `true` then `false`.
    pub arms: Vec<Arm>,
    /// What must be done before the arm is chosen: the nodes `on` reads,
    /// and the guards when the branch is gated.
    pub deps: Vec<NodeId>,
}

/// `if` or `match`, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchKind {
    /// `if c then a else b`.
    If,
    /// `match x { ... }`.
    Match,
}

/// One arm of a [`Branch`].
#[derive(Debug, Clone, PartialEq)]
pub struct Arm {
    /// When it runs.
    pub pattern: Pattern,
    /// What it computes.
    pub body: Body,
    /// The nodes the body reads: run only when this arm is chosen.
    pub deps: Vec<NodeId>,
    /// The arm in the source.
    pub span: Span,
}

/// A `match` pattern.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// `_`: anything.
    Wildcard,
    /// Equal to this value (numbers by value).
    Literal(Value),
}

/// `for item in items if cond: body`.
#[derive(Debug, Clone, PartialEq)]
pub struct Collection {
    /// The variable of the item inside `filter` and `body` (one past the
    /// contract's nodes).
    pub var: u32,
    /// The array.
    pub items: Expr,
    /// Only items for which it is `true`.
    pub filter: Option<Expr>,
    /// Once per item.
    pub body: Body,
}

impl NodeKind {
    /// The kind's keyword-like name, for traces and graphs.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            NodeKind::Input(_) => "input",
            NodeKind::Compute(_) => "compute",
            NodeKind::Call(call) => call.callee.label(),
            NodeKind::Guard { .. } => "guard",
            NodeKind::Branch(_) => "branch",
            NodeKind::For(_) => "for",
        }
    }

    /// Every call the node may make (a branch: each arm's).
    pub fn calls(&self) -> Box<dyn Iterator<Item = &Call> + '_> {
        fn of_body(body: &Body) -> Option<&Call> {
            match body {
                Body::Call(call) => Some(call),
                Body::Pure(_) => None,
            }
        }
        match self {
            NodeKind::Call(call) => Box::new(std::iter::once(call)),
            NodeKind::Branch(branch) => {
                Box::new(branch.arms.iter().filter_map(|a| of_body(&a.body)))
            }
            NodeKind::For(each) => Box::new(of_body(&each.body).into_iter()),
            NodeKind::Input(_) | NodeKind::Compute(_) | NodeKind::Guard { .. } => {
                Box::new(std::iter::empty())
            }
        }
    }

    /// Calls `f` for every variable the node's expressions read, in source
    /// order (without a boxed iterator: this runs once per node of a
    /// contract that may have a million).
    pub fn visit_vars(&self, f: &mut (impl FnMut(u32) + ?Sized)) {
        match self {
            NodeKind::Input(_) => {}
            NodeKind::Compute(e) => e.visit_vars(f),
            NodeKind::Call(call) => call.args.iter().for_each(|(_, e)| e.visit_vars(f)),
            NodeKind::Guard { condition, message } => {
                condition.visit_vars(f);
                if let Some(message) = message {
                    message.visit_vars(f);
                }
            }
            NodeKind::Branch(branch) => {
                branch.on.visit_vars(f);
                branch.arms.iter().for_each(|arm| arm.body.visit_vars(f));
            }
            NodeKind::For(each) => {
                each.items.visit_vars(f);
                if let Some(filter) = &each.filter {
                    filter.visit_vars(f);
                }
                each.body.visit_vars(f);
            }
        }
    }
}

/// `output node.field as name`.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The public name: the alias, else the last path segment.
    pub name: String,
    /// The node it reads.
    pub node: NodeId,
    /// Fields to descend into (for `pricing.gross_total`).
    pub fields: Vec<String>,
    /// The statement.
    pub span: Span,
}
