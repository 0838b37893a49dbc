//! [`LlmError`]: why an agent run failed.
//!
//! Messages name the agent, provider or environment variable involved and
//! never contain an API key: keys are only read into
//! [`Secret`](super::settings) values and redacted from server messages.

use std::path::PathBuf;

use crate::tools::CapabilityError;

/// Why an agent could not produce its answer.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LlmError {
    /// A setting is missing or wrong; nothing was sent.
    #[error("{message}")]
    #[diagnostic(code(ignite::llm::config))]
    Config {
        /// What is wrong, naming the variable or setting (never its value).
        message: String,
    },
    /// A provider failed after its retries.
    #[error("provider `{provider}` failed after {attempts} attempt(s): {}{message}",
        status.map(|s| format!("status {s}: ")).unwrap_or_default())]
    #[diagnostic(code(ignite::llm::provider))]
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
    #[diagnostic(code(ignite::llm::malformed))]
    Malformed {
        /// The provider.
        provider: String,
        /// What is wrong with the body.
        message: String,
    },
    /// The model kept calling tools.
    #[error("agent `{agent}` exceeded max_tool_iterations ({limit})")]
    #[diagnostic(
        code(ignite::llm::tool_loop),
        help("raise `max_tool_iterations` or make the prompt ask for an answer")
    )]
    ToolLoop {
        /// The agent.
        agent: String,
        /// Its `max_tool_iterations`.
        limit: u32,
    },
    /// The model called a tool whose capabilities the agent lacks; no tool of that turn ran.
    #[error("{0}")]
    #[diagnostic(code(ignite::llm::capability), help("add the capability to the agent"))]
    Capability(CapabilityError),
    /// The reply was cut off by the token limit; its tool calls were not run.
    #[error(
        "reply of model `{model}` (provider `{provider}`) to agent `{agent}` was cut off by the token limit"
    )]
    #[diagnostic(code(ignite::llm::truncated), help("raise the agent's `max_tokens`"))]
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
    #[diagnostic(
        code(ignite::llm::stopped),
        help("the provider gave no usable answer; rephrase the prompt or try another model")
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
    #[diagnostic(
        code(ignite::llm::empty),
        help("an empty answer is never reported as a result; check the prompt and the model")
    )]
    Empty {
        /// The agent.
        agent: String,
        /// The provider.
        provider: String,
        /// The model.
        model: String,
    },
    /// A structured answer (`result T`) still did not fit after the repair attempts.
    #[error(
        "agent `{agent}` answered {} with JSON that does not fit `{ty}`: {}; last reply: {excerpt}",
        times(*.attempts),
        .problems.join("; ")
    )]
    #[diagnostic(
        code(ignite::llm::bad_result),
        help("raise `result_retries`, or describe the fields better in the type and the prompt")
    )]
    BadResult {
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
    /// A replayed run sent a request that is not in the recording.
    #[error(
        "no recorded exchange matches the request of agent `{agent}` to provider `{provider}`: {hint}"
    )]
    #[diagnostic(code(ignite::llm::replay), help("record the run again with `--record`"))]
    Replay {
        /// The agent.
        agent: String,
        /// The provider.
        provider: String,
        /// What differs from the closest recorded request.
        hint: String,
    },
    /// A script file is missing, invalid or ran out of replies.
    #[error("script `{}`: {message}", path.display())]
    #[diagnostic(code(ignite::llm::script))]
    Script {
        /// The script file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A prompt template failed to evaluate.
    #[error("prompt of agent `{agent}`: {message}")]
    #[diagnostic(code(ignite::llm::prompt))]
    Prompt {
        /// The agent.
        agent: String,
        /// The evaluation error.
        message: String,
    },
    /// A recording could not be read or written.
    #[error("{message}")]
    #[diagnostic(code(ignite::llm::recording))]
    Recording {
        /// What went wrong, naming the file.
        message: String,
    },
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

impl LlmError {
    /// True when a fallback provider may be tried after this error.
    #[must_use]
    pub fn allows_fallback(&self) -> bool {
        matches!(self, LlmError::Provider { .. } | LlmError::Malformed { .. })
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        LlmError::Config { message: message.into() }
    }
}

/// "once", "twice", "3 times".
fn times(n: u32) -> String {
    match n {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    }
}
