//! [`LlmError`]: why an agent run failed.
//!
//! Messages name the agent, provider or environment variable involved and
//! never contain an API key: keys are only read into
//! [`Secret`](super::settings) values and redacted from server messages.

/// Why an agent could not produce its answer: the run's one failure type.
pub type LlmError = crate::failure::NodeError;
