//! [`ToolError`]: why a tool call failed, worded for the model that made it.

use std::time::Duration;

/// Why a tool call failed. `Display` is the exact text sent back to a model as the
/// tool result, so it names properties and values precisely and never leaks Rust types.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum ToolError {
    /// The arguments do not match the tool's schema: one message per problem, each
    /// naming the property, e.g. "`sku`: missing required field (string)".
    #[error("{}", .0.join("; "))]
    #[diagnostic(code(ignite::tools::invalid_arguments))]
    InvalidArguments(Vec<String>),
    /// The implementation ran and failed: a non-zero exit with its stderr tail, an
    /// expression error, a file outside the sandbox, ...
    #[error("{0}")]
    #[diagnostic(code(ignite::tools::failed))]
    Failed(String),
    /// An `http` tool could not reach its server (connection refused or
    /// reset, DNS): worth a retry.
    #[error("{0}")]
    #[diagnostic(code(ignite::tools::unreachable))]
    Unreachable(String),
    /// The tool returned a value that does not fit its declared `result` type: one
    /// message per problem, each naming the field, e.g. "`result.price`: expected
    /// float, got string \"x\"".
    #[error("result does not fit `{ty}`: {}", .problems.join("; "))]
    #[diagnostic(code(ignite::tools::bad_result))]
    BadResult {
        /// The declared result type.
        ty: String,
        /// Every problem.
        problems: Vec<String>,
    },
    /// An `http` tool got a non-2xx answer.
    #[error("http status {status}: {body}")]
    #[diagnostic(code(ignite::tools::http_status))]
    HttpStatus {
        /// The status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// The tool ran longer than its time limit (the child process is killed).
    #[error("timed out after {}", humanize(*.0))]
    #[diagnostic(
        code(ignite::tools::timeout),
        help("raise the tool's `timeout` if the work is expected to take longer")
    )]
    Timeout(Duration),
    /// A `native` tool whose implementation was never registered on the toolbox.
    #[error(
        "native tool `{0}` is not registered; call `Toolbox::register_native` with it before running"
    )]
    #[diagnostic(code(ignite::tools::not_registered))]
    NotRegistered(String),
}

impl ToolError {
    /// True when another attempt may succeed: for `exec` tools any failure
    /// of the run (a non-zero exit, a timeout); for `http` tools a
    /// connection error, a timeout, 408, 429 or 5xx. Wrong arguments never.
    #[must_use]
    pub fn retryable(&self, http: bool) -> bool {
        match self {
            ToolError::Timeout(_) | ToolError::Unreachable(_) => true,
            ToolError::HttpStatus { status, .. } => {
                matches!(status, 408 | 429) || (500..600).contains(status)
            }
            ToolError::Failed(_) => !http,
            ToolError::InvalidArguments(_)
            | ToolError::NotRegistered(_)
            | ToolError::BadResult { .. } => false,
        }
    }
}

fn humanize(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
