//! Run failures and how they are shown.

use serde_json::{Map, Value};

use crate::diagnostic::{Code, Diagnostic, Diagnostics};
use crate::failure::{NodeError, PendingCall};
use crate::runtime::inputs::InputProblem;
use crate::source::Span;

/// Why a run did not produce outputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The inputs do not fit the contract; every problem is listed.
    #[error("{} input problem(s) for contract `{contract}`", problems.len())]
    Inputs {
        /// The contract run.
        contract: String,
        /// Each problem, naming the input.
        problems: Vec<InputProblem>,
    },
    /// No contract of that name, or none chosen among several.
    #[error("{message}")]
    Contract {
        /// What is wrong, with the contracts there are.
        message: String,
    },
    /// A requested output does not exist.
    #[error("contract `{contract}` has no output `{output}`")]
    Output {
        /// The contract.
        contract: String,
        /// The name asked for.
        output: String,
        /// The closest output name.
        suggestion: Option<String>,
        /// The contract declaration.
        span: Span,
    },
    /// The run passed its [`RunOptions::deadline`](super::RunOptions::deadline)
    /// and was stopped.
    #[error("the run did not finish by its deadline and was stopped")]
    Deadline,
    /// Calls wait for a person's approval: the run did what it could and
    /// paused (`ignite run --journal` exits with code 4).
    #[error("{}", NodeError::AwaitingApproval(calls.clone()))]
    Paused {
        /// The waiting calls, in node order.
        calls: Vec<PendingCall>,
    },
    /// A node failed.
    #[error("{path}: {message}")]
    Node {
        /// `Parent.child > node`.
        path: String,
        /// What failed and with what value.
        message: String,
        /// The failing expression or node statement.
        span: Span,
        /// Which kind of failure.
        code: Code,
        /// The error behind it: for a tool or agent its own
        /// (`ignite::tools::timeout`, `ignite::llm::tool_loop`, ...), whose
        /// help says how to fix it; else the node's.
        cause: Box<NodeError>,
    },
}

impl RunError {
    /// The failure's code (a contract that is not there is a wrong input).
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            RunError::Inputs { .. } | RunError::Contract { .. } => Code::RunInput,
            RunError::Deadline => Code::RunDeadline,
            RunError::Output { .. } => Code::RunOutput,
            RunError::Paused { .. } => Code::RunAwaitingApproval,
            RunError::Node { code, .. } => *code,
        }
    }

    /// The code of the tool's or agent's own error behind a failed node,
    /// when there is one (`ignite::tools::timeout`).
    #[must_use]
    pub fn cause(&self) -> Option<Code> {
        match self {
            RunError::Node { code, cause, .. } if cause.code() != *code => Some(cause.code()),
            _ => None,
        }
    }

    /// What failed, in a word: a failed node's [`NodeError::kind`]
    /// (`timeout`, `guard`, ...), else `input`, `output` or `deadline`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            RunError::Inputs { .. } | RunError::Contract { .. } => "input",
            RunError::Output { .. } => "output",
            RunError::Deadline => "deadline",
            RunError::Paused { .. } => "awaiting_approval",
            RunError::Node { cause, .. } => cause.kind(),
        }
    }

    /// The error as JSON, the one rendering of a failed run that `serve`
    /// bodies, `--batch` lines and embedders show: `code`, `kind`,
    /// `message`, and for a failed node its `path`, the `cause`'s code and
    /// the `help`.
    #[must_use]
    pub fn to_json(&self) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("code".into(), self.code().as_str().into());
        body.insert("kind".into(), self.kind().into());
        body.insert("message".into(), self.to_string().into());
        if let RunError::Node { path, cause, .. } = self {
            body.insert("path".into(), path.clone().into());
            body.insert("cause".into(), self.cause().map(Code::as_str).into());
            body.insert("help".into(), cause.help().into());
        }
        if let RunError::Paused { calls } = self {
            body.insert("pending".into(), serde_json::to_value(calls).unwrap_or_default());
        }
        body
    }

    /// The error as diagnostics with source spans, when it has any.
    #[must_use]
    pub fn diagnostics(&self) -> Option<Diagnostics> {
        let mut out = Diagnostics::default();
        match self {
            RunError::Inputs { problems, .. } => {
                for p in problems {
                    out.push(
                        Diagnostic::error(Code::RunInput, p.span, p.message.clone())
                            .label(p.label)
                            .maybe_help(p.help.clone()),
                    );
                }
            }
            RunError::Contract { .. } | RunError::Deadline | RunError::Paused { .. } => {
                return None;
            }
            RunError::Output { output, suggestion, span, .. } => out.push(
                Diagnostic::error(Code::RunOutput, *span, self.to_string())
                    .label("in this contract")
                    .maybe_help(suggestion.as_ref().map(|s| format!("did you mean `{s}`?")))
                    .maybe_help(if suggestion.is_none() {
                        Some(format!("`{output}` is not among its outputs"))
                    } else {
                        None
                    }),
            ),
            RunError::Node { path, message, span, code, cause } => {
                let label = match self.cause() {
                    Some(cause) => format!("failed here ({cause})"),
                    None => "failed here".to_owned(),
                };
                out.push(
                    Diagnostic::error(*code, *span, format!("{path}: {message}"))
                        .label(label)
                        .maybe_help(cause.help()),
                );
            }
        }
        Some(out)
    }
}
