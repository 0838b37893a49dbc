//! How a node fails in a run: [`Failure`] (the node or item, the message,
//! the code), [`Cause`] (what a tool or agent task sends back when it
//! failed), the value a `try` makes of a call's result, and the
//! [`RunError`] a run's reported failure becomes.
//!
//! The core only moves failures around (to the nearest `try`, or into
//! the run's list, of which the first failed guard or else the first
//! declared node is reported); what a failure holds and how it reads is
//! here, in one place.

use super::nodes::Job;
use crate::diagnostic::Code;
use crate::eval::{Fields, Val};
use crate::ir::{Callee, Program};
use crate::runtime::RunError;
use crate::source::Span as SourceSpan;

/// Why a tool or agent failed, with its own code and help.
pub(super) struct Cause {
    message: String,
    code: Option<String>,
    help: Option<String>,
}

impl Cause {
    pub(super) fn of<E: miette::Diagnostic + ?Sized>(error: &E) -> Self {
        Cause {
            message: error.to_string(),
            code: error.code().map(|c| c.to_string()),
            help: error.help().map(|h| h.to_string()),
        }
    }

    /// Its code, as a span's `error.type`.
    pub(super) fn error_type(&self) -> &str {
        self.code.as_deref().unwrap_or("failed")
    }

    /// The failure of the call of `callee` at `job` (declared at `span`).
    pub(super) fn into_failure(
        self,
        program: &Program,
        callee: Option<Callee>,
        job: Job,
        span: SourceSpan,
    ) -> Failure {
        let Cause { message, code: cause, help } = self;
        let (code, message) = match callee {
            // Agent errors mostly name the agent already: no "agent `X`
            // failed: agent `X` exceeded ...".
            Some(Callee::Agent(agent)) => {
                let name = format!("agent `{}`", program[agent].name);
                let message = if message.contains(&name) {
                    message
                } else {
                    format!("{name} failed: {message}")
                };
                (Code::AgentFailed, message)
            }
            Some(Callee::Tool(tool)) => {
                let name = &program[tool].tool_name;
                (Code::ToolFailed, format!("tool `{name}` failed: {message}"))
            }
            _ => (Code::NodeFailed, message),
        };
        Failure { job, message, span, code, cause, help }
    }
}

/// A node (or item) that failed.
pub(super) struct Failure {
    pub(super) job: Job,
    message: String,
    span: SourceSpan,
    pub(super) code: Code,
    /// The code of the tool or agent error behind it.
    cause: Option<String>,
    help: Option<String>,
}

impl Failure {
    pub(super) fn new(job: Job, message: String, span: SourceSpan, code: Code) -> Self {
        Failure { job, message, span, code, cause: None, help: None }
    }

    pub(super) fn at(mut self, job: Job) -> Self {
        self.job = job;
        self
    }

    /// The run's error, at the node's `path`.
    pub(super) fn into_error(self, path: String) -> RunError {
        RunError::Node {
            path,
            message: self.message,
            span: self.span,
            code: self.code,
            cause: self.cause,
            help: self.help,
        }
    }
}

/// The value of a call under `try`: `{ok: true, value}`, or `{ok: false,
/// error, code}` for a failure.
pub(super) fn try_value(result: Result<Val, Failure>) -> Val {
    match result {
        Ok(value) => Val::object(Fields::from([
            ("ok".to_owned(), Val::Bool(true)),
            ("value".to_owned(), value),
        ])),
        Err(f) => Val::object(Fields::from([
            ("ok".to_owned(), Val::Bool(false)),
            ("error".to_owned(), Val::string(f.message)),
            ("code".to_owned(), Val::from(f.code.as_str())),
        ])),
    }
}
