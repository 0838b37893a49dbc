//! PLACEHOLDER for the `tools` module written in another worktree.
//!
//! Only the signatures the `llm` module codes against, with trivial bodies
//! (`returns` tools are evaluated so the agent loop tests are meaningful).
//! The lead drops this file at merge in favour of the real module.

use serde_json::{Map, Value, json};

use crate::eval;
use crate::ir::{self, Implementation};

/// The shape of a tool schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaFormat {
    /// `{name, description, parameters}`.
    Intermediate,
    /// `{name, description, input_schema}`.
    Anthropic,
    /// `{type: "function", function: {name, description, parameters}}`.
    OpenAi,
}

/// The JSON schema of `tool` in `format`.
#[must_use]
pub fn tool_schema(tool: &ir::Tool, format: SchemaFormat) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in &tool.params {
        let mut prop = Map::new();
        if let Some(t) = p.ty.json_type() {
            prop.insert("type".into(), json!(t));
        }
        properties.insert(p.name.clone(), Value::Object(prop));
        if p.required() {
            required.push(json!(p.name));
        }
    }
    let params = json!({"type": "object", "properties": properties, "required": required});
    match format {
        SchemaFormat::Intermediate => {
            json!({"name": tool.tool_name, "description": tool.description, "parameters": params})
        }
        SchemaFormat::Anthropic => {
            json!({"name": tool.tool_name, "description": tool.description, "input_schema": params})
        }
        SchemaFormat::OpenAi => json!({"type": "function", "function": {
            "name": tool.tool_name, "description": tool.description, "parameters": params}}),
    }
}

/// A tool needs a capability the agent lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` requires capabilities {required:?} but agent `{agent}` only has {held:?}")]
pub struct CapabilityError {
    /// The tool.
    pub tool: String,
    /// The agent.
    pub agent: String,
    /// What the tool requires.
    pub required: Vec<String>,
    /// What the agent holds.
    pub held: Vec<String>,
}

/// Checks that `held` covers the capabilities `tool` requires.
///
/// # Errors
/// When a capability is missing.
pub fn check_capabilities(
    tool: &ir::Tool,
    agent: &str,
    held: &[String],
) -> Result<(), CapabilityError> {
    if tool.capabilities.iter().all(|c| held.contains(c)) {
        return Ok(());
    }
    Err(CapabilityError {
        tool: tool.tool_name.clone(),
        agent: agent.to_owned(),
        required: tool.capabilities.clone(),
        held: held.to_vec(),
    })
}

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not match the schema.
    #[error("invalid arguments: {}", .0.join("; "))]
    InvalidArguments(Vec<String>),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
}

/// Runs tools.
#[derive(Debug, Clone, Default)]
pub struct Toolbox;

impl Toolbox {
    /// A toolbox with no native tools.
    #[must_use]
    pub fn new() -> Self {
        Self
    }

    /// Calls `tool` with `args`.
    ///
    /// # Errors
    /// When the arguments are invalid or the tool fails.
    #[allow(clippy::unused_async)]
    pub async fn call(
        &self,
        program: &ir::Program,
        tool: ir::ToolId,
        args: Value,
    ) -> Result<Value, ToolError> {
        let tool = &program[tool];
        let Value::Object(args) = args else {
            return Err(ToolError::InvalidArguments(vec!["arguments must be an object".into()]));
        };
        let mut values = Vec::new();
        let mut problems = Vec::new();
        for p in &tool.params {
            match args.get(&p.name) {
                Some(v) if p.ty.accepts(v) => values.push(v.clone()),
                Some(_) => problems.push(format!("`{}` must be {}", p.name, p.ty)),
                None if p.required() => problems.push(format!("`{}` is required", p.name)),
                None => values.push(p.default.clone().unwrap_or(Value::Null)),
            }
        }
        if !problems.is_empty() {
            return Err(ToolError::InvalidArguments(problems));
        }
        match &tool.implementation {
            Implementation::Returns(expr) => {
                eval::eval(expr, values.as_slice()).map_err(|e| ToolError::Failed(e.message))
            }
            _ => Err(ToolError::Failed("not available in the placeholder".into())),
        }
    }
}
