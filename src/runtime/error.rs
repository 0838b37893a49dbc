//! Run failures and how they are shown.

use crate::diagnostic::{Code, Diagnostic, Diagnostics};
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
        /// For a tool or agent, the code of its own error
        /// (`ignite::tools::timeout`, `ignite::llm::tool_loop`, ...).
        cause: Option<String>,
        /// How to fix it, when the tool or agent error knows.
        help: Option<String>,
    },
}

impl RunError {
    /// The failure's diagnostic code; `None` for a contract that is not there.
    #[must_use]
    pub fn code(&self) -> Option<Code> {
        match self {
            RunError::Inputs { .. } => Some(Code::RunInput),
            RunError::Contract { .. } | RunError::Deadline => None,
            RunError::Output { .. } => Some(Code::RunOutput),
            RunError::Node { code, .. } => Some(*code),
        }
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
            RunError::Contract { .. } | RunError::Deadline => return None,
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
            RunError::Node { path, message, span, code, cause, help } => {
                let label = match cause {
                    Some(cause) => format!("failed here ({cause})"),
                    None => "failed here".to_owned(),
                };
                out.push(
                    Diagnostic::error(*code, *span, format!("{path}: {message}"))
                        .label(label)
                        .maybe_help(help.clone()),
                );
            }
        }
        Some(out)
    }
}
