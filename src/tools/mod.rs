//! PLACEHOLDER: replaced by the tools branch at merge.
#![allow(missing_docs, clippy::unused_async)]
use serde_json::Value;

use crate::ir::{Implementation, Program, ToolId};

#[derive(Clone, Default)]
pub struct Toolbox;

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{}", .0.join("; "))]
    InvalidArguments(Vec<String>),
    #[error("{0}")]
    Failed(String),
}

impl Toolbox {
    #[must_use]
    pub fn new() -> Self {
        Self
    }

    pub async fn call(
        &self,
        program: &Program,
        tool: ToolId,
        args: Value,
    ) -> Result<Value, ToolError> {
        let tool = &program[tool];
        match &tool.implementation {
            Implementation::Returns(expr) => {
                let scope: Vec<Value> = tool
                    .params
                    .iter()
                    .map(|p| args.get(&p.name).cloned().unwrap_or(Value::Null))
                    .collect();
                crate::eval::eval(expr, scope.as_slice()).map_err(|e| ToolError::Failed(e.message))
            }
            Implementation::Exec { program, .. } if program == "sleep" => {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                Ok(Value::Null)
            }
            _ => Err(ToolError::Failed("placeholder".into())),
        }
    }
}
