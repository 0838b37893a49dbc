//! [`ToolError`]: why a tool call failed, worded for the model that made it.

/// Why a tool call failed: the run's one failure type. `Display` is the
/// exact text sent back to a model as the tool result.
pub type ToolError = crate::failure::NodeError;
