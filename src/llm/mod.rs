//! PLACEHOLDER: replaced by the llm branch at merge.
#![allow(missing_docs, clippy::unused_async)]
use serde_json::{Map, Value};

use crate::ir::{AgentId, Program};
use crate::tools::Toolbox;
use crate::trace::Trace;

#[derive(Clone, Default)]
pub struct Llm;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LlmError(String);

impl Llm {
    #[must_use]
    pub fn from_env() -> Self {
        Self
    }

    #[must_use]
    pub fn record_to(self, _path: std::path::PathBuf) -> Self {
        self
    }

    pub fn replay_from(self, _path: &std::path::Path) -> Result<Self, LlmError> {
        Ok(self)
    }

    pub fn finish(&self) -> Result<(), LlmError> {
        Ok(())
    }

    pub async fn run_agent(
        &self,
        _program: &Program,
        _agent: AgentId,
        inputs: &Map<String, Value>,
        _toolbox: &Toolbox,
        _trace: &Trace,
        _path: &str,
    ) -> Result<String, LlmError> {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        Ok(Value::Object(inputs.clone()).to_string())
    }
}
