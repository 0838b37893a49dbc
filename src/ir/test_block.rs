//! Checked `test` blocks: which contract runs on what, which tools are
//! mocked, what the result must be. Produced by `lower`, run by
//! [`crate::testing`].

use std::path::PathBuf;

use super::{AgentId, BinaryOp, ContractId, Expr, ToolId};
use crate::source::{FileId, Span};

/// Test `name` as part of a file name (its snapshot's): every character
/// other than ASCII letters, digits, `-` and `_` becomes `_`, so names are
/// portable. Two tests of one file whose names give the same text, ignoring
/// case, are an error (`ignite::lower::snapshot_clash`).
#[must_use]
pub fn slug(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect()
}

/// A `test "name" { ... }` block.
#[derive(Debug, Clone, PartialEq)]
pub struct Test {
    /// The name as written.
    pub name: String,
    /// The file that declares it (its snapshots live beside it).
    pub file: FileId,
    /// The contract `run` runs.
    pub contract: ContractId,
    /// The run's inputs by name, in input order; expressions without
    /// variables.
    pub inputs: Vec<(String, Expr)>,
    /// `mock` statements of tools in source order: the first that fits a
    /// call answers it.
    pub mocks: Vec<Mock>,
    /// `mock` statements of agents in source order, likewise: a mocked agent
    /// node takes the mock's value and asks no model.
    pub agent_mocks: Vec<AgentMock>,
    /// `replay "file"`: the cassette, resolved against the file's folder.
    pub replay: Option<PathBuf>,
    /// `expect` conditions over the outputs (`Var(i)` is output `i`).
    pub expects: Vec<Expr>,
    /// `expect_error "text"`: the run must fail with a message containing it.
    pub expect_error: Option<String>,
    /// `expect_calls` statements: how often tools must have been called
    /// (checked whether the run succeeded or failed).
    pub expect_calls: Vec<ExpectCalls>,
    /// `approve Tool` / `deny Tool "reason"`: the decision for every call
    /// of the tool that needs approval (an undecided one fails the test).
    pub decisions: Vec<Decision>,
    /// `snapshot` / `snapshot calls`.
    pub snapshot: Snapshot,
    /// The whole block.
    pub span: Span,
}

/// `approve Tool` or `deny Tool "reason"` in a test.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The tool whose calls are decided.
    pub tool: ToolId,
    /// `deny`'s reason; `None` approves.
    pub denial: Option<String>,
    /// The statement.
    pub span: Span,
}

/// What a test compares with its stored snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshot {
    /// No `snapshot` statement.
    None,
    /// `snapshot`: the outputs.
    Outputs,
    /// `snapshot calls`: the outputs and every effect call.
    Calls,
}

/// `mock Tool(args) returns EXPR` or `mock Tool fails "message"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Mock {
    /// The mocked tool.
    pub tool: ToolId,
    /// Only calls whose arguments include these (by param name);
    /// every call when `None`. Expressions without variables.
    pub args: Option<Vec<(String, Expr)>>,
    /// What a matching call gives.
    pub answer: MockAnswer,
    /// The statement.
    pub span: Span,
}

/// `mock Agent(args) returns EXPR` / `fails "msg"`: what an agent node
/// gives in a test instead of asking a model.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentMock {
    /// The mocked agent.
    pub agent: AgentId,
    /// Only calls whose inputs include these (by input name); every call
    /// when `None`. Expressions without variables.
    pub args: Option<Vec<(String, Expr)>>,
    /// What a matching call gives: a value of the agent's `result` type
    /// (checked as a model's answer is), or a failure.
    pub answer: MockAnswer,
    /// The statement.
    pub span: Span,
}

/// `expect_calls Tool(args) == N`: the number of calls of a tool (with
/// these arguments) compared with `N`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectCalls {
    /// The counted tool.
    pub tool: ToolId,
    /// Only calls whose arguments include these (by param name), as in
    /// [`Mock::args`]; every call when `None`.
    pub args: Option<Vec<(String, Expr)>>,
    /// A comparison: `==`, `!=`, `<`, `<=`, `>`, `>=`.
    pub op: BinaryOp,
    /// The count compared with.
    pub count: u64,
    /// The statement (its text names it in a failure).
    pub span: Span,
}

/// What a mocked call gives.
#[derive(Debug, Clone, PartialEq)]
pub enum MockAnswer {
    /// This value (an expression without variables).
    Returns(Expr),
    /// A tool error with this message.
    Fails(String),
}
