//! How a node fails in a run: [`Failure`] (the node or item, the message,
//! the code, the [`NodeError`] behind it), [`Cause`] (what a tool or
//! agent task sends back when it failed), the value a `try` makes of a call's result, and the
//! [`RunError`] a run's reported failure becomes.
//!
//! The core only moves failures around (to the nearest `try`, or into
//! the run's list, of which the first failed guard or else the first
//! declared node is reported); what a failure holds and how it reads is
//! here, in one place.

use super::job::Job;
use crate::diagnostic::Code;
use crate::eval::{Fields, Val};
use crate::failure::{NodeError, PendingCall};
use crate::ir::{Callee, Program};
use crate::runtime::RunError;
use crate::source::Span as SourceSpan;

/// Why a tool or agent task failed: the run's one failure type.
pub(super) type Cause = NodeError;

/// The failure of the call of `callee` at `job` (declared at `span`) that
/// failed with `cause`.
pub(super) fn call_failure(
    cause: Cause,
    program: &Program,
    callee: Option<Callee>,
    job: Job,
    span: SourceSpan,
) -> Failure {
    let message = cause.to_string();
    let (code, message) = match (&cause, callee) {
        // A person's answer, not a crash: its own code, which `try` catches.
        (NodeError::Denied { tool, reason }, _) => {
            (Code::RunDenied, format!("the call of tool `{tool}` was denied: {reason}"))
        }
        (NodeError::ApprovalRequired(_), _) => (Code::RunApprovalRequired, message),
        // A request past the run's budget fails the node as the run's own
        // failure, whatever it called.
        (NodeError::Budget { .. }, callee) => {
            (Code::RunBudget, call_code(program, callee, message).1)
        }
        (_, callee) => call_code(program, callee, message),
    };
    Failure { job, message, span, code, cause: Box::new(cause) }
}

/// A failed call's code and message, naming the tool or agent.
fn call_code(program: &Program, callee: Option<Callee>, message: String) -> (Code, String) {
    match callee {
        // Agent errors mostly name the agent already: no "agent `X`
        // failed: agent `X` exceeded ...".
        Some(Callee::Agent(agent)) => {
            let name = format!("agent `{}`", program[agent].name);
            let message =
                if message.contains(&name) { message } else { format!("{name} failed: {message}") };
            (Code::AgentFailed, message)
        }
        Some(Callee::Tool(tool)) => {
            let name = &program[tool].tool_name;
            (Code::ToolFailed, format!("tool `{name}` failed: {message}"))
        }
        _ => (Code::NodeFailed, message),
    }
}

/// A node (or item) that failed.
pub(super) struct Failure {
    pub(super) job: Job,
    message: String,
    span: SourceSpan,
    pub(super) code: Code,
    /// The tool's or agent's error behind it, or the node's own.
    cause: Box<NodeError>,
}

impl Failure {
    pub(super) fn new(job: Job, message: String, span: SourceSpan, code: Code) -> Self {
        let cause = Box::new(match code {
            Code::GuardFailed => NodeError::Guard(message.clone()),
            _ => NodeError::Eval(message.clone()),
        });
        Failure { job, message, span, code, cause }
    }

    /// A pause of the call at `job` for `calls` (the core's tests).
    #[cfg(test)]
    pub(super) fn awaiting(job: Job, calls: Vec<PendingCall>, span: SourceSpan) -> Self {
        let cause = NodeError::AwaitingApproval(calls);
        Failure {
            job,
            message: cause.to_string(),
            span,
            code: cause.code(),
            cause: Box::new(cause),
        }
    }

    /// The calls it waits for, when it is no failure but a pause for
    /// approvals ([`NodeError::AwaitingApproval`]).
    pub(super) fn waits_for(&self) -> Option<&[PendingCall]> {
        match &*self.cause {
            NodeError::AwaitingApproval(calls) => Some(calls),
            _ => None,
        }
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
        }
    }
}

/// The value of a call under `try`: `{ok: true, value}`, or `{ok: false,
/// error, code, kind}` for a failure (`kind` names what failed: `timeout`,
/// `invalid_arguments`, `guard`, ...).
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
            ("kind".to_owned(), Val::from(f.cause.kind())),
        ])),
    }
}
