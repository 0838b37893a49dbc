//! [`NodeError`]: why a tool call, a model exchange or a node failed, the
//! one failure type of a run.
//!
//! Tools and providers return it, the effect stores keep it (a failed
//! tool call's [`crate::effects::Outcome::Failed`] is [`NodeError::to_stored`]),
//! and every surface renders it the same way: its stable [`Code`] (a row of
//! the one [`crate::diagnostic`] table), its `kind` (the variant's
//! snake-case name, what a `try` value's `kind` field says), its message
//! and its help.
//!
//! `Display` is the message. For a tool's errors it is the exact text sent
//! back to a model as the tool result, so it names properties and values
//! precisely and never leaks Rust types. Agent errors name the agent,
//! provider or environment variable involved and never contain an API key.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnostic::Code;

/// A call of a tool that `requires_approval`, waiting for a decision:
/// bound to the tool, the node path and a hash of the canonical JSON of
/// its arguments (its [`PendingCall::call`] ID).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call's ID: `TOOL-HASH`, what `ignite approve` names.
    pub call: String,
    /// The tool, as models call it.
    pub tool: String,
    /// The node path: `Root.child > node`, `[item]` for an item of a `for`.
    pub node: String,
    /// The arguments (defaults not filled in).
    pub args: Value,
    /// True when an approved run of this call was cut off (the process
    /// died) and it may have reached its program or server: it is asked
    /// again rather than resent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl std::fmt::Display for PendingCall {
    /// `refund(order_id: "A7", amount: 250.0) at Returns > refund`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}(", self.tool)?;
        if let Value::Object(args) = &self.args {
            for (i, (name, value)) in args.iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                write!(f, "{sep}{name}: {value}")?;
            }
        }
        write!(f, ") at {}", self.node)
    }
}

/// Why a tool call, an agent, a model exchange or a node failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum NodeError {
    /// A tool's arguments do not match its schema: one message per problem,
    /// each naming the property, e.g. "`sku`: missing required property".
    #[error("{}", .0.join("; "))]
    InvalidArguments(Vec<String>),
    /// A tool's implementation ran and failed: a non-zero exit with its
    /// stderr tail, an expression error, a file outside the sandbox, ...
    #[error("{0}")]
    Failed(String),
    /// An `http` tool could not reach its server (connection refused or
    /// reset, DNS): worth a retry.
    #[error("{0}")]
    Unreachable(String),
    /// A tool returned a value that does not fit its declared `result`
    /// type: one message per problem, each naming the field, e.g.
    /// "`result.price`: expected float, got string \"x\"".
    #[error("result does not fit `{ty}`: {}", .problems.join("; "))]
    BadResult {
        /// The declared result type.
        ty: String,
        /// Every problem.
        problems: Vec<String>,
    },
    /// An `http` tool got a non-2xx answer.
    #[error("http status {status}: {body}")]
    HttpStatus {
        /// The status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// A tool ran longer than its time limit (the child process is killed).
    #[error("timed out after {}", humanize(*.0))]
    Timeout(Duration),
    /// An MCP server's live tool no longer matches `ignite.lock` (missing,
    /// or its description, schemas or annotations changed): nothing was called.
    #[error("{0}")]
    McpDrift(String),
    /// A `native` tool whose implementation was never registered on the toolbox.
    #[error(
        "native tool `{0}` is not registered; call `Toolbox::register_native` with it before running"
    )]
    NotRegistered(String),
    /// An agent's setting is missing or wrong; nothing was sent.
    #[error("{message}")]
    Config {
        /// What is wrong, naming the variable or setting (never its value).
        message: String,
    },
    /// A provider failed after its retries.
    #[error("provider `{provider}` failed after {attempts} attempt(s): {}{message}",
        status.map(|s| format!("status {s}: ")).unwrap_or_default())]
    Provider {
        /// The provider (kind or declaration name).
        provider: String,
        /// The HTTP status of the last attempt; `None` for connection errors and timeouts.
        status: Option<u16>,
        /// The server's message or the transport error.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// A provider answered 2xx with a body that is not its reply format.
    #[error("provider `{provider}` sent a malformed reply: {message}")]
    Malformed {
        /// The provider.
        provider: String,
        /// What is wrong with the body.
        message: String,
    },
    /// The model kept calling tools.
    #[error("agent `{agent}` exceeded max_tool_iterations ({limit})")]
    ToolLoop {
        /// The agent.
        agent: String,
        /// Its `max_tool_iterations`.
        limit: u32,
    },
    /// The model called a tool whose capabilities the agent lacks; no tool
    /// of that turn ran.
    #[error("{0}")]
    Capability(CapabilityError),
    /// The reply was cut off by the token limit; its tool calls were not run.
    #[error(
        "reply of model `{model}` (provider `{provider}`) to agent `{agent}` was cut off by the token limit"
    )]
    Truncated {
        /// The agent.
        agent: String,
        /// The provider.
        provider: String,
        /// The model.
        model: String,
    },
    /// The model stopped for a reason that gives no answer (a refusal, a
    /// safety filter, an unknown reason); its tool calls were not run.
    #[error(
        "model `{model}` (provider `{provider}`) of agent `{agent}` stopped with reason `{reason}`{}",
        partial_text(text)
    )]
    Stopped {
        /// The agent.
        agent: String,
        /// The provider.
        provider: String,
        /// The model.
        model: String,
        /// The reason as the provider named it.
        reason: String,
        /// Any text the model produced before stopping (not an answer).
        text: String,
    },
    /// The model ended its turn with neither text nor a tool call.
    #[error(
        "model `{model}` (provider `{provider}`) of agent `{agent}` answered with no text and no tool call"
    )]
    Empty {
        /// The agent.
        agent: String,
        /// The provider.
        provider: String,
        /// The model.
        model: String,
    },
    /// An agent's structured answer (`result T`) still did not fit after
    /// the repair attempts.
    #[error(
        "agent `{agent}` answered {} with JSON that does not fit `{ty}`: {}; last reply: {excerpt}",
        times(*.attempts),
        .problems.join("; ")
    )]
    BadAnswer {
        /// The agent.
        agent: String,
        /// The result type's name.
        ty: String,
        /// Answers given.
        attempts: u32,
        /// What is wrong with the last one, each naming the field.
        problems: Vec<String>,
        /// The start of the last reply.
        excerpt: String,
    },
    /// A scripted provider's file is missing, invalid or ran out of replies.
    #[error("script `{}`: {message}", path.display())]
    Script {
        /// The script file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An agent's prompt template failed to evaluate.
    #[error("prompt of agent `{agent}`: {message}")]
    Prompt {
        /// The agent.
        agent: String,
        /// The evaluation error.
        message: String,
    },
    /// A replayed run asked for a tool call or a model exchange that is not
    /// in the recording.
    #[error("{}", replay_message(agent.as_deref(), provider.as_deref(), hint))]
    Replay {
        /// The agent, for a model exchange.
        agent: Option<String>,
        /// The provider, for a model exchange.
        provider: Option<String>,
        /// What differs from the closest recorded request.
        hint: String,
    },
    /// A store (a recording, a journal file, the cache) could not read or
    /// keep an outcome.
    #[error("{message}")]
    Store {
        /// What went wrong, naming the file.
        message: String,
    },
    /// A durable journal's step failed for good: the last transient
    /// failure once its retries were used up.
    #[error("{message}")]
    Journal {
        /// The last failure.
        message: String,
        /// How many times the work was done.
        attempts: u32,
    },
    /// A model request was not sent: it would pass a run's budget.
    #[error("{message}")]
    Budget {
        /// Which budget, whose, and what was spent.
        message: String,
    },
    /// An expression of a node failed to evaluate (a division by zero, a
    /// missing field, no `match` arm).
    #[error("{0}")]
    Eval(String),
    /// A guard's condition was false.
    #[error("{0}")]
    Guard(String),
    /// A person denied the call (`ignite deny`, the inline prompt, a
    /// test's `deny`): an agent gets `Error: denied: REASON` as the tool
    /// result; a node fails with `ignite::run::denied`.
    #[error("denied: {reason}")]
    Denied {
        /// The tool, as models call it.
        tool: String,
        /// Why, as the person gave it.
        reason: String,
    },
    /// A call needs approval and nobody can be asked (no `--journal`, no
    /// terminal): it did not start.
    #[error("tool `{}` at `{}` needs approval and nobody can be asked here", .0.tool, .0.node)]
    ApprovalRequired(Box<PendingCall>),
    /// Calls wait for a person's decision: the run pauses (with
    /// `--journal`) and they did not start.
    #[error("{}", awaiting(.0))]
    AwaitingApproval(Vec<PendingCall>),
    /// A failure kept by an earlier version of ignite, as
    /// `{message, code, help}`: replayed as it was recorded.
    #[error("{message}")]
    Kept {
        /// What went wrong.
        message: String,
        /// Its code as recorded.
        code: Option<String>,
        /// How to fix it.
        help: Option<String>,
    },
}

impl NodeError {
    /// The stable code: `ignite::tools::timeout`, `ignite::llm::tool_loop`, ...
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            NodeError::InvalidArguments(_) => Code::ToolInvalidArguments,
            NodeError::Failed(_) => Code::ToolFailedRun,
            NodeError::Unreachable(_) => Code::ToolUnreachable,
            NodeError::BadResult { .. } => Code::ToolBadResult,
            NodeError::HttpStatus { .. } => Code::ToolHttpStatus,
            NodeError::Timeout(_) => Code::ToolTimeout,
            NodeError::NotRegistered(_) => Code::ToolNotRegistered,
            NodeError::McpDrift(_) => Code::McpDrift,
            NodeError::Config { .. } => Code::LlmConfig,
            NodeError::Provider { .. } => Code::LlmProvider,
            NodeError::Malformed { .. } => Code::LlmMalformed,
            NodeError::ToolLoop { .. } => Code::LlmToolLoop,
            NodeError::Capability(_) => Code::LlmCapability,
            NodeError::Truncated { .. } => Code::LlmTruncated,
            NodeError::Stopped { .. } => Code::LlmStopped,
            NodeError::Empty { .. } => Code::LlmEmpty,
            NodeError::BadAnswer { .. } => Code::LlmBadResult,
            NodeError::Script { .. } => Code::LlmScript,
            NodeError::Prompt { .. } => Code::LlmPrompt,
            NodeError::Replay { .. } => Code::EffectReplay,
            NodeError::Store { .. } => Code::EffectStore,
            NodeError::Journal { .. } => Code::EffectJournal,
            NodeError::Budget { .. } => Code::RunBudget,
            NodeError::Eval(_) => Code::NodeFailed,
            NodeError::Guard(_) => Code::GuardFailed,
            NodeError::Denied { .. } => Code::RunDenied,
            NodeError::ApprovalRequired(_) => Code::RunApprovalRequired,
            NodeError::AwaitingApproval(_) => Code::RunAwaitingApproval,
            NodeError::Kept { code, .. } => {
                code.as_deref().and_then(Code::parse).unwrap_or(Code::ToolFailedRun)
            }
        }
    }

    /// The variant's snake-case name, as serialized: `timeout`,
    /// `invalid_arguments`, `tool_loop`, ...
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            NodeError::InvalidArguments(_) => "invalid_arguments",
            NodeError::Failed(_) => "failed",
            NodeError::Unreachable(_) => "unreachable",
            NodeError::BadResult { .. } => "bad_result",
            NodeError::HttpStatus { .. } => "http_status",
            NodeError::Timeout(_) => "timeout",
            NodeError::NotRegistered(_) => "not_registered",
            NodeError::McpDrift(_) => "mcp_drift",
            NodeError::Config { .. } => "config",
            NodeError::Provider { .. } => "provider",
            NodeError::Malformed { .. } => "malformed",
            NodeError::ToolLoop { .. } => "tool_loop",
            NodeError::Capability(_) => "capability",
            NodeError::Truncated { .. } => "truncated",
            NodeError::Stopped { .. } => "stopped",
            NodeError::Empty { .. } => "empty",
            NodeError::BadAnswer { .. } => "bad_answer",
            NodeError::Script { .. } => "script",
            NodeError::Prompt { .. } => "prompt",
            NodeError::Replay { .. } => "replay",
            NodeError::Store { .. } => "store",
            NodeError::Journal { .. } => "journal",
            NodeError::Budget { .. } => "budget",
            NodeError::Eval(_) => "eval",
            NodeError::Guard(_) => "guard",
            NodeError::Denied { .. } => "denied",
            NodeError::ApprovalRequired(_) => "approval_required",
            NodeError::AwaitingApproval(_) => "awaiting_approval",
            NodeError::Kept { .. } => "kept",
        }
    }

    /// How to fix it, when that is known.
    #[must_use]
    pub fn help(&self) -> Option<String> {
        let text = match self {
            NodeError::Timeout(_) => {
                "raise the tool's `timeout` if the work is expected to take longer"
            }
            NodeError::ToolLoop { .. } => {
                "raise `max_tool_iterations` or make the prompt ask for an answer"
            }
            NodeError::Capability(_) => "add the capability to the agent",
            NodeError::Truncated { .. } => "raise the agent's `max_tokens`",
            NodeError::Stopped { .. } => {
                "the provider gave no usable answer; rephrase the prompt or try another model"
            }
            NodeError::Empty { .. } => {
                "an empty answer is never reported as a result; check the prompt and the model"
            }
            NodeError::BadAnswer { .. } => {
                "raise `result_retries`, or describe the fields better in the type and the prompt"
            }
            NodeError::Replay { .. } => "record the run again with `--record`",
            NodeError::Budget { .. } => {
                "raise the contract's `budget` or `--budget`, or see the worst case with `ignite plan`"
            }
            NodeError::Journal { attempts, .. } => {
                return Some(format!("the call failed {attempts} time(s)"));
            }
            NodeError::ApprovalRequired(_) => {
                "run with `--journal` to pause for the decision (`ignite approve`), or on a terminal to be asked"
            }
            NodeError::AwaitingApproval(calls) => {
                return calls
                    .first()
                    .map(|c| format!("decide with `ignite approve RUN_ID {}`", c.call));
            }
            NodeError::Kept { help, .. } => return help.clone(),
            _ => return None,
        };
        Some(text.to_owned())
    }

    /// True when a tool call may succeed if tried again: for `exec` tools
    /// (`http` false) any failure of the run (a non-zero exit, a timeout);
    /// for `http` tools a connection error, a timeout, 408, 429 or 5xx.
    /// Wrong arguments never.
    #[must_use]
    pub fn retryable(&self, http: bool) -> bool {
        match self {
            NodeError::Timeout(_) | NodeError::Unreachable(_) => true,
            NodeError::HttpStatus { status, .. } => {
                matches!(status, 408 | 429) || (500..600).contains(status)
            }
            NodeError::Failed(_) => !http,
            _ => false,
        }
    }

    /// True when a fallback provider may be tried after this error.
    #[must_use]
    pub fn allows_fallback(&self) -> bool {
        matches!(self, NodeError::Provider { .. } | NodeError::Malformed { .. })
    }

    /// The failure of a call that panicked, with the panic's message: a
    /// bug, in ignite or in an embedder's tool or store.
    #[must_use]
    pub(crate) fn panicked(payload: &(dyn std::any::Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        NodeError::Failed(format!(
            "the call stopped abnormally ({message}); this is a bug: please report it"
        ))
    }

    /// A [`NodeError::Config`] saying `message`.
    pub(crate) fn config(message: impl Into<String>) -> Self {
        NodeError::Config { message: message.into() }
    }

    /// The error as JSON, the one rendering every surface shows: `code`,
    /// `kind`, `message` and `help` (null when there is none).
    #[must_use]
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "code": self.code().as_str(),
            "kind": self.kind(),
            "message": self.to_string(),
            "help": self.help(),
        })
    }

    /// The error as stores keep it: [`NodeError::to_json`] with the
    /// variant's fields under `detail`, so that an earlier version reads
    /// its message, code and help.
    #[must_use]
    pub fn to_stored(&self) -> Value {
        let mut stored = self.to_json();
        if let (Some(object), Ok(Value::Object(tagged))) =
            (stored.as_object_mut(), serde_json::to_value(self))
        {
            object.extend(tagged);
        }
        stored
    }

    /// A failure a store kept: one [`NodeError::to_stored`] wrote, or an
    /// earlier version's `{message, code, help}` (or any other value, as
    /// the message) as [`NodeError::Kept`].
    #[must_use]
    pub fn from_stored(value: Value) -> Self {
        if let Ok(error) = serde_json::from_value::<NodeError>(value.clone()) {
            return error;
        }
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        match (&value, text("message")) {
            (Value::Object(_), Some(message)) => {
                NodeError::Kept { message, code: text("code"), help: text("help") }
            }
            (Value::String(message), _) => {
                NodeError::Kept { message: message.clone(), code: None, help: None }
            }
            (other, _) => NodeError::Kept { message: other.to_string(), code: None, help: None },
        }
    }
}

/// An agent tried to call a tool without holding every capability it requires.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error(
    "tool `{tool}` requires {}, which agent `{agent}` does not hold (it holds {})",
    plural("capability", "capabilities", missing),
    held_list(held)
)]
pub struct CapabilityError {
    /// The tool's `tool_name`.
    pub tool: String,
    /// The calling agent.
    pub agent: String,
    /// Required capabilities the agent lacks, in the tool's order.
    pub missing: Vec<String>,
    /// What the agent holds.
    pub held: Vec<String>,
}

fn ticked(names: &[String]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

fn plural(one: &str, many: &str, names: &[String]) -> String {
    format!("{} {}", if names.len() == 1 { one } else { many }, ticked(names))
}

fn held_list(held: &[String]) -> String {
    if held.is_empty() { "none".to_owned() } else { ticked(held) }
}

fn replay_message(agent: Option<&str>, provider: Option<&str>, hint: &str) -> String {
    match (agent, provider) {
        (Some(agent), Some(provider)) => format!(
            "no recorded exchange matches the request of agent `{agent}` to provider `{provider}`: {hint}"
        ),
        _ => format!("no recorded call matches: {hint}"),
    }
}

fn awaiting(calls: &[PendingCall]) -> String {
    let list: Vec<String> = calls.iter().map(|c| format!("`{}` ({c})", c.call)).collect();
    format!("waiting for approval: {}", list.join(", "))
}

fn humanize(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// `; partial text: "..."` (clipped), or nothing when `text` is empty.
fn partial_text(text: &str) -> String {
    if text.trim().is_empty() {
        return String::new();
    }
    let clipped: String = text.chars().take(200).collect();
    let more = if text.chars().count() > 200 { "..." } else { "" };
    format!("; partial text: {clipped:?}{more}")
}

/// "once", "twice", "3 times".
fn times(n: u32) -> String {
    match n {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_errors_read_back_as_they_were() {
        let errors = [
            NodeError::Timeout(Duration::from_millis(200)),
            NodeError::InvalidArguments(vec!["`sku`: missing required property".into()]),
            NodeError::HttpStatus { status: 503, body: "busy".into() },
            NodeError::Journal { message: "exit 1".into(), attempts: 3 },
        ];
        for error in errors {
            let stored = error.to_stored();
            assert_eq!(stored["code"], error.code().as_str());
            assert_eq!(stored["message"], error.to_string());
            assert_eq!(NodeError::from_stored(stored), error);
        }
    }

    #[test]
    fn earlier_failures_keep_their_message_code_and_help() {
        let old = serde_json::json!({
            "message": "`./save.sh` exited with status 1 (no stderr)",
            "code": "ignite::tools::timeout",
            "help": "raise it",
        });
        let error = NodeError::from_stored(old);
        assert_eq!(error.code(), Code::ToolTimeout);
        assert_eq!(error.kind(), "kept");
        assert_eq!(error.help().as_deref(), Some("raise it"));
        assert_eq!(error.to_string(), "`./save.sh` exited with status 1 (no stderr)");
        assert_eq!(NodeError::from_stored(Value::from("boom")).to_string(), "boom");
    }

    #[test]
    fn kinds_are_the_serialized_tags() {
        let error = NodeError::ToolLoop { agent: "a".into(), limit: 3 };
        assert_eq!(serde_json::to_value(&error).unwrap()["kind"], error.kind());
        assert_eq!(error.code().as_str(), "ignite::llm::tool_loop");
    }
}
