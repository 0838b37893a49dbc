//! [`Toolbox`]: everything needed to run tools, and the dispatch of one call.
//!
//! Input: a program, a tool id (or a registered native) and the arguments a caller sent.
//! Output: the tool's JSON result or a [`ToolError`]. Every call is validated first (see
//! `validate.rs`), then defaults are filled, then the implementation runs. A toolbox
//! is cheap to clone and shared across threads: natives, the validator cache and the
//! HTTP client live behind `Arc`s.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::registry::{RegisteredTool, ToolSource};
use super::validate::{Validators, fill_declared, fill_from_schema};
use super::{
    DEFAULT_TIMEOUT, NativeTool, ToolError, builtin, exec, http, parameters_schema, returns,
};
use crate::ir::{self, Implementation};

/// Runs tools: holds the registered natives, the validator cache and one HTTP client.
#[derive(Clone, Default)]
pub struct Toolbox {
    natives: Arc<IndexMap<String, Arc<dyn NativeTool>>>,
    fs_root: Option<PathBuf>,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    validators: Validators,
    http: OnceLock<Result<reqwest::Client, String>>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("natives", &self.natives.keys().collect::<Vec<_>>())
            .field("fs_root", &self.fs_root)
            .finish_non_exhaustive()
    }
}

impl Toolbox {
    /// An empty toolbox: builtins only, no natives.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Confines `fs.read` / `fs.write` to `root` instead of their configured `root`.
    #[must_use]
    pub fn with_fs_root(mut self, root: PathBuf) -> Self {
        self.fs_root = Some(root);
        self
    }

    /// Registers a native tool under [`NativeTool::name`], replacing one of the same name.
    pub fn register_native<T: NativeTool>(&mut self, tool: T) {
        Arc::make_mut(&mut self.natives).insert(tool.name().to_owned(), Arc::new(tool));
    }

    /// The native tool registered as `name`.
    #[must_use]
    pub fn native(&self, name: &str) -> Option<&dyn NativeTool> {
        self.natives.get(name).map(AsRef::as_ref)
    }

    /// Every registered native, in registration order.
    pub fn natives(&self) -> impl Iterator<Item = &dyn NativeTool> {
        self.natives.values().map(AsRef::as_ref)
    }

    /// The `fs.*` root override, if any.
    #[must_use]
    pub fn fs_root(&self) -> Option<&Path> {
        self.fs_root.as_deref()
    }

    /// The parameters schema a call of `tool` is validated against: the `.ign` params,
    /// or the registered native's schema for a `native` tool that declares none.
    #[must_use]
    pub fn effective_parameters(&self, tool: &ir::Tool) -> Value {
        match (&tool.implementation, self.declared_native(tool)) {
            (Implementation::Native { .. }, Some(native)) if tool.params.is_empty() => {
                native.parameters()
            }
            _ => parameters_schema(tool),
        }
    }

    fn declared_native(&self, tool: &ir::Tool) -> Option<&Arc<dyn NativeTool>> {
        match &tool.implementation {
            Implementation::Native { name } => self.natives.get(name),
            _ => None,
        }
    }

    /// Validates `args` against the tool's schema (defaults filled in), then runs it.
    /// Unguarded: capabilities are the agent loop's business.
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] listing every problem with `args`, else whatever
    /// the implementation reports.
    pub async fn call(
        &self,
        program: &ir::Program,
        tool: ir::ToolId,
        args: Value,
    ) -> Result<Value, ToolError> {
        let tool = &program[tool];
        let parameters = self.effective_parameters(tool);
        self.shared.validators.validate(&tool.tool_name, &parameters, &args)?;
        let args = object(args);
        let args = if tool.params.is_empty() {
            fill_from_schema(&parameters, args)
        } else {
            fill_declared(&tool.params, args)
        };
        self.run(tool, args).await
    }

    /// Calls a native tool by name, validating against its own schema.
    ///
    /// # Errors
    /// [`ToolError::NotRegistered`] when no native has that name; else as [`Toolbox::call`].
    pub async fn call_native(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        let native =
            self.natives.get(name).ok_or_else(|| ToolError::NotRegistered(name.to_owned()))?;
        let parameters = native.parameters();
        self.shared.validators.validate(name, &parameters, &args)?;
        let args = fill_from_schema(&parameters, object(args));
        run_native(Arc::clone(native), Value::Object(args), None).await
    }

    /// Calls a tool of a [`Registry`](super::Registry) built from `program` and this toolbox.
    ///
    /// # Errors
    /// As [`Toolbox::call`].
    pub async fn call_registered(
        &self,
        program: &ir::Program,
        tool: &RegisteredTool,
        args: Value,
    ) -> Result<Value, ToolError> {
        match &tool.source {
            ToolSource::Declared(id) => self.call(program, *id, args).await,
            ToolSource::Native => self.call_native(&tool.name, args).await,
        }
    }

    async fn run(&self, tool: &ir::Tool, args: Map<String, Value>) -> Result<Value, ToolError> {
        let limit = tool.timeout.unwrap_or(DEFAULT_TIMEOUT);
        match &tool.implementation {
            Implementation::Returns(expr) => returns::run(expr, args),
            Implementation::Exec { program, args: argv } => {
                exec::run(
                    &exec::Spec { program, args: argv, dir: &tool.dir, timeout: limit },
                    &args,
                )
                .await
            }
            Implementation::Http { method, url, headers } => {
                let spec = http::Spec { method: *method, url, headers, timeout: limit };
                http::run(self.http_client()?, &spec, args).await
            }
            Implementation::Builtin { builtin, config } => {
                let context = builtin::Context { tool, config, toolbox: self, timeout: limit };
                builtin::run(*builtin, &context, args).await
            }
            Implementation::Native { name } => {
                let native =
                    self.natives.get(name).ok_or_else(|| ToolError::NotRegistered(name.clone()))?;
                run_native(Arc::clone(native), Value::Object(args), tool.timeout).await
            }
        }
    }

    /// The shared HTTP client, built on first use.
    pub(crate) fn http_client(&self) -> Result<&reqwest::Client, ToolError> {
        self.shared
            .http
            .get_or_init(|| {
                reqwest::Client::builder()
                    .user_agent(concat!("ignite/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| format!("cannot start the http client: {e}"))
            })
            .as_ref()
            .map_err(|e| ToolError::Failed(e.clone()))
    }
}

/// The arguments as an object; validation already rejected anything else.
fn object(args: Value) -> Map<String, Value> {
    match args {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

async fn run_native(
    native: Arc<dyn NativeTool>,
    args: Value,
    limit: Option<Duration>,
) -> Result<Value, ToolError> {
    let task = tokio::task::spawn_blocking(move || native.call(args));
    let joined = match limit {
        Some(limit) => {
            tokio::time::timeout(limit, task).await.map_err(|_| ToolError::Timeout(limit))?
        }
        None => task.await,
    };
    match joined {
        Ok(result) => result.map_err(ToolError::Failed),
        Err(e) if e.is_panic() => Err(ToolError::Failed("the native tool panicked".to_owned())),
        Err(_) => Err(ToolError::Failed("the native tool was cancelled".to_owned())),
    }
}
