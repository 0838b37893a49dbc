//! Checked `eval` blocks: which contract runs over which dataset, how many
//! samples of each row, how each answer is scored and what the scores must
//! reach. Produced by `lower`, run by `evals`.

use std::path::PathBuf;

use super::{AgentId, ContractId, Expr};
use crate::source::{FileId, Span};

/// An `eval "name" { ... }` block.
#[derive(Debug, Clone, PartialEq)]
pub struct Eval {
    /// The name as written.
    pub name: String,
    /// The file that declares it.
    pub file: FileId,
    /// The contract `run` names: each row's `inputs` are its inputs.
    pub contract: ContractId,
    /// `dataset "rows.jsonl"`, resolved against the file's folder.
    pub dataset: PathBuf,
    /// `repeat N`: samples of each row (1 when absent).
    pub repeat: u32,
    /// `score` statements in source order.
    pub scores: Vec<Score>,
    /// `require` conditions; `Var(i)` is the mean of score `i`.
    pub requires: Vec<Require>,
    /// The whole block.
    pub span: Span,
}

/// One `require` condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Require {
    /// The condition over the scores' means.
    pub condition: Expr,
    /// How it is written, for reports.
    pub text: String,
}

/// One `score name = ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// The score's name.
    pub name: String,
    /// How it is computed.
    pub value: ScoreValue,
    /// What its values are, as far as `check` knows.
    pub kind: ScoreKind,
    /// The statement.
    pub span: Span,
}

/// How a score is computed. In its expressions `Var(i)` is output `i` of
/// the contract for `i` below the number of outputs; the next two are the
/// row's `inputs` and `expected`.
#[derive(Debug, Clone, PartialEq)]
pub enum ScoreValue {
    /// A pure expression over the outputs, `inputs` and `expected`.
    Expr(Expr),
    /// A judge: an agent or contract called with these arguments (by
    /// param name, in param order).
    Judge {
        /// What is called.
        judge: Judge,
        /// Its arguments.
        args: Vec<(String, Expr)>,
    },
}

/// The agent or contract a judge score calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judge {
    /// An agent: its answer is the score (or its `score` field).
    Agent(AgentId),
    /// A contract: its `score` output is the score.
    Contract(ContractId),
}

/// What a score's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreKind {
    /// Booleans: a rate, with a Wilson interval.
    Rate,
    /// Numbers: a mean, with a bootstrap interval.
    Number,
    /// Not known before the run (`any`): decided by the values.
    Unknown,
}
