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
use super::validate::{Validators, fill_declared, fill_from_schema, validate_declared};
use super::{
    DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, NativeTool, ToolError, ToolView, builtin, exec, http, mcp,
    returns,
};
use crate::backoff::Backoff;
use crate::ir::{self, Implementation};

/// The waits between attempts of a tool with `retries`.
const TOOL_BACKOFF: Backoff =
    Backoff { base: Duration::from_millis(200), max: Duration::from_secs(10) };

/// Tool calls of one model turn that run at once when neither a runner nor
/// `--jobs` bounds them: a model may ask for hundreds of calls in one
/// reply, and each may start a child process or open a connection, so an
/// unbounded turn could exhaust file descriptors or overrun a rate limit.
pub const DEFAULT_TURN_CALLS: usize = 64;

/// Runs tools: holds the registered natives, the validator cache and one HTTP client.
#[derive(Clone, Default)]
pub struct Toolbox {
    natives: Arc<IndexMap<String, Arc<dyn NativeTool>>>,
    fs_root: Option<PathBuf>,
    /// The size limit; [`DEFAULT_MAX_BYTES`] when not set.
    max_bytes: Option<usize>,
    /// How many tool calls of one model turn run at once;
    /// [`DEFAULT_TURN_CALLS`] when not set.
    turn_calls: Option<usize>,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    validators: Validators,
    http: OnceLock<Result<reqwest::Client, String>>,
    mcp: mcp::Clients,
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

    /// Limits what one call may bring in (`exec` stdout, `http` bodies, `fs.read`
    /// files) to `bytes`; [`DEFAULT_MAX_BYTES`] otherwise.
    #[must_use]
    pub fn with_max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = Some(bytes);
        self
    }

    /// The size limit of one call's result.
    #[must_use]
    pub fn max_bytes(&self) -> usize {
        self.max_bytes.unwrap_or(DEFAULT_MAX_BYTES)
    }

    /// Lets at most `calls` (at least 1) tool calls of one model turn run at once;
    /// the runtime sets it from `--jobs` and the contract's runner.
    #[must_use]
    pub fn with_turn_calls(mut self, calls: usize) -> Self {
        self.turn_calls = Some(calls.max(1));
        self
    }

    /// How many tool calls of one model turn run at once: the runner's or
    /// `--jobs`' bound, else [`DEFAULT_TURN_CALLS`].
    #[must_use]
    pub fn turn_calls(&self) -> usize {
        self.turn_calls.unwrap_or(DEFAULT_TURN_CALLS)
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

    /// What a model sees of `tool`: its name, description and parameters schema. A
    /// `native` tool that declares no params takes the registered native's schema, and
    /// its description when it declares none. Agents are sent this view, `ignite schema`
    /// prints it and calls are validated against its parameters.
    #[must_use]
    pub fn view(&self, tool: &ir::Tool) -> ToolView {
        let mut view = ToolView::declared(tool);
        if let Some(native) = self.declared_native(tool) {
            if tool.params.is_empty() {
                view.parameters = native.parameters();
            }
            if tool.description.is_empty() {
                native.description().clone_into(&mut view.description);
            }
        }
        view
    }

    /// The view of a registered native (see [`Toolbox::view`]).
    #[must_use]
    pub fn native_view(native: &dyn NativeTool) -> ToolView {
        ToolView {
            name: native.name().to_owned(),
            description: native.description().to_owned(),
            parameters: native.parameters(),
        }
    }

    fn declared_native(&self, tool: &ir::Tool) -> Option<&Arc<dyn NativeTool>> {
        match &tool.implementation {
            Implementation::Native { name } => self.natives.get(name),
            _ => None,
        }
    }

    /// Validates `args` against the tool's params (defaults filled in; a registered
    /// native's own schema when it declares none), runs it, and checks what it
    /// returns against its `result` type when it declares one.
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
        self.call_with(program, tool, args, true).await
    }

    /// [`Toolbox::call`], trying the tool once when `retry` is false (a
    /// durable journal retries it instead).
    ///
    /// # Errors
    /// As [`Toolbox::call`].
    pub async fn call_with(
        &self,
        program: &ir::Program,
        tool: ir::ToolId,
        args: Value,
        retry: bool,
    ) -> Result<Value, ToolError> {
        let tool = program.tools.get(tool.index()).ok_or_else(|| {
            ToolError::Failed(format!("no tool with id {} in this program", tool.index()))
        })?;
        let mut args = no_args_as_empty(args);
        let args = match self.declared_native(tool).filter(|_| tool.params.is_empty()) {
            // A registered native's own schema.
            Some(native) => {
                let parameters = Self::native_view(native.as_ref()).parameters;
                self.shared.validators.validate(&tool.tool_name, &parameters, &args)?;
                fill_from_schema(&parameters, object(args))
            }
            None => {
                ir::fill_fields(&tool.params, &mut args);
                validate_declared(tool, &args)?;
                fill_declared(&tool.params, object(args))
            }
        };
        let mut value = self.run(program, tool, args, retry).await?;
        admit_result(tool, &mut value)?;
        Ok(value)
    }

    /// Calls a native tool by name, validating against its own schema.
    ///
    /// # Errors
    /// [`ToolError::NotRegistered`] when no native has that name; else as [`Toolbox::call`].
    pub async fn call_native(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        let native =
            self.natives.get(name).ok_or_else(|| ToolError::NotRegistered(name.to_owned()))?;
        let parameters = Self::native_view(native.as_ref()).parameters;
        let args = no_args_as_empty(args);
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

    /// True when this call of `tool` with `args` needs a person's approval:
    /// the tool `requires_approval` and its `when` condition holds for the
    /// arguments (defaults filled in). Arguments that do not fit need none:
    /// the call fails before it starts.
    ///
    /// # Errors
    /// The condition failed to evaluate (a missing field of a param).
    pub(crate) fn needs_approval(tool: &ir::Tool, args: &Value) -> Result<bool, ToolError> {
        let Some(approval) = &tool.approval else { return Ok(false) };
        let Some(when) = &approval.when else { return Ok(true) };
        let mut args = no_args_as_empty(args.clone());
        ir::fill_fields(&tool.params, &mut args);
        if validate_declared(tool, &args).is_err() {
            return Ok(false);
        }
        match returns::run(when, fill_declared(&tool.params, object(args)))? {
            Value::Bool(holds) => Ok(holds),
            other => Err(ToolError::Failed(format!(
                "the approval condition of tool `{}` gave {}, not a boolean",
                tool.name,
                crate::eval::describe(&other)
            ))),
        }
    }

    /// Runs the tool, retrying (when `retry`) an `exec` or `http` tool up
    /// to its `retries` after a failure worth retrying, with [`TOOL_BACKOFF`].
    async fn run(
        &self,
        program: &ir::Program,
        tool: &ir::Tool,
        args: Map<String, Value>,
        retry: bool,
    ) -> Result<Value, ToolError> {
        let http = matches!(tool.implementation, Implementation::Http { .. });
        let retries = if retry { tool.retries } else { 0 };
        let mut attempt = 0;
        loop {
            match self.run_once(program, tool, args.clone()).await {
                Err(error) if attempt < retries && error.retryable(http) => {
                    tokio::time::sleep(TOOL_BACKOFF.delay(attempt, None)).await;
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn run_once(
        &self,
        program: &ir::Program,
        tool: &ir::Tool,
        args: Map<String, Value>,
    ) -> Result<Value, ToolError> {
        let limit = tool.timeout.unwrap_or(DEFAULT_TIMEOUT);
        // The futures of the kinds that wait are boxed: their state machines
        // take tens of KB, which every call's future (a `returns` tool's
        // too) would otherwise carry and copy whenever a call is spawned.
        match &tool.implementation {
            Implementation::Returns(expr) => returns::run(expr, args),
            Implementation::Exec { program: command, args: argv } => {
                let key_vars: Vec<&str> =
                    program.providers.iter().filter_map(|p| p.api_key_env.as_deref()).collect();
                let spec = exec::Spec {
                    program: command,
                    args: argv,
                    dir: &tool.dir,
                    timeout: limit,
                    key_vars: &key_vars,
                    max_bytes: self.max_bytes(),
                };
                Box::pin(exec::run(&spec, &args)).await
            }
            Implementation::Http { method, url, headers } => {
                let spec = http::Spec {
                    method: *method,
                    url,
                    headers,
                    timeout: limit,
                    max_bytes: self.max_bytes(),
                };
                Box::pin(http::run(self.http_client()?, &spec, args)).await
            }
            Implementation::Builtin { builtin, config } => {
                let context = builtin::Context { tool, config, toolbox: self, timeout: limit };
                Box::pin(builtin::run(*builtin, &context, args)).await
            }
            Implementation::Native { name } => {
                let native =
                    self.natives.get(name).ok_or_else(|| ToolError::NotRegistered(name.clone()))?;
                Box::pin(run_native(Arc::clone(native), Value::Object(args), tool.timeout)).await
            }
            Implementation::Mcp(tool_mcp) => {
                let limit = tool.timeout.unwrap_or(tool_mcp.server.timeout);
                Box::pin(self.shared.mcp.call(tool_mcp, args, limit, self.max_bytes())).await
            }
        }
    }

    /// Fails when an MCP tool's server no longer lists it as `ignite.lock`
    /// does (connecting to the server if needed): a run checks every MCP
    /// tool it can reach before it starts.
    ///
    /// # Errors
    /// The tool is missing or changed, or the server cannot be reached.
    pub async fn check_mcp(&self, tool: &ir::McpTool) -> Result<(), ToolError> {
        self.shared.mcp.check(tool, self.max_bytes()).await
    }

    /// The tools `server` lists now, as `ignite.lock` records them.
    ///
    /// # Errors
    /// The server cannot be reached or does not list its tools.
    pub async fn list_mcp(
        &self,
        server: &Arc<ir::McpServer>,
    ) -> Result<std::collections::BTreeMap<String, ir::LockedTool>, ToolError> {
        self.shared.mcp.list(server, self.max_bytes()).await
    }

    /// The shared HTTP client, built on first use.
    pub(crate) fn http_client(&self) -> Result<&reqwest::Client, ToolError> {
        self.shared
            .http
            .get_or_init(|| {
                crate::http_client::builder()
                    .user_agent(concat!("ignite/", env!("CARGO_PKG_VERSION")))
                    .redirect(http::redirect_policy(http::Follow::Any))
                    .build()
                    .map_err(|e| format!("cannot start the http client: {e}"))
            })
            .as_ref()
            .map_err(|e| ToolError::Failed(e.clone()))
    }
}

/// Admits `value` as a result of `tool` ([`ir::Type::admit`] against its
/// `result` type, when it declares one): the check of a live result here,
/// and of one a store answered at the effects seam, so both fail alike.
///
/// # Errors
/// [`ToolError::BadResult`] with every problem.
pub(crate) fn admit_result(tool: &ir::Tool, value: &mut Value) -> Result<(), ToolError> {
    match &tool.result {
        Some(ty) => ty
            .admit(value, "result")
            .map_err(|problems| ToolError::BadResult { ty: ty.to_string(), problems }),
        None => Ok(()),
    }
}

/// `null` (a model sending no arguments at all) means `{}`.
fn no_args_as_empty(args: Value) -> Value {
    if args.is_null() { Value::Object(Map::new()) } else { args }
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;
    use crate::tools::registry::tests::Stock;
    use crate::tools::test_support::{program, tool, tool_with};
    use crate::tools::{Registry, schema_for};

    fn assert_send_sync<T: Send + Sync + Clone>(_: &T) {}
    fn assert_send<T: Send>(_: T) {}

    #[test]
    fn toolbox_and_call_future_are_thread_safe() {
        let toolbox = Toolbox::new();
        assert_send_sync(&toolbox);
        let p = program(vec![tool("T", "t")]);
        assert_send(toolbox.call(&p, ir::ToolId(0), json!({})));
    }

    fn builtin(b: ir::Builtin, params: &[(&str, &str)]) -> ir::Tool {
        let imp = Implementation::Builtin { builtin: b, config: Map::new() };
        tool_with("B", params, imp, Path::new("."))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn math_eval_builtin() {
        let p = program(vec![builtin(ir::Builtin::MathEval, &[("expression", "string")])]);
        let toolbox = Toolbox::new();
        let call = |e: &str| toolbox.call(&p, ir::ToolId(0), json!({"expression": e}));
        assert_eq!(call("29.99 * (1 - 0.15)").await, Ok(json!(25.4915)));
        assert_eq!(
            call("1 / (2 - 2)").await.unwrap_err().to_string(),
            "division by zero at position 3"
        );
        let err = toolbox.call(&p, ir::ToolId(0), Value::Null).await.unwrap_err();
        assert_eq!(
            err,
            ToolError::InvalidArguments(vec![
                "`expression`: missing required field (string)".into()
            ])
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn http_get_builtin() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/a.json"))
            .respond_with(ResponseTemplate::new(200).set_body_string("{\"ok\": true}"))
            .mount(&server)
            .await;
        let p = program(vec![builtin(ir::Builtin::HttpGet, &[("url", "string")])]);
        let toolbox = Toolbox::new();
        let url = format!("{}/a.json", server.uri());
        assert_eq!(
            toolbox.call(&p, ir::ToolId(0), json!({"url": url})).await,
            Ok(json!({"ok": true}))
        );
        let err = toolbox.call(&p, ir::ToolId(0), json!({"url": "file:///etc/passwd"})).await;
        assert!(err.unwrap_err().to_string().starts_with("`url` must start with http"));
    }

    fn native_tool(name: &str) -> ir::Tool {
        let mut t = tool("StockLevel", "");
        t.implementation = Implementation::Native { name: name.into() };
        t
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn declared_native_uses_registered_schema() {
        let p = program(vec![native_tool("stock_level")]);
        let mut toolbox = Toolbox::new();
        toolbox.register_native(Stock);
        assert_eq!(
            toolbox.call(&p, ir::ToolId(0), json!({"sku": "A"})).await,
            Ok(json!({"sku": "A", "units": 12}))
        );
        let err = toolbox.call(&p, ir::ToolId(0), json!({"sku": 1})).await.unwrap_err();
        assert_eq!(err.to_string(), "`sku`: expected string, got integer 1");
        let registry = Registry::from_program(&p, &toolbox);
        assert_eq!(registry.all().len(), 1);
        assert_eq!(registry.all()[0].description, "Units in stock for a SKU");
        assert_eq!(registry.all()[0].signature, "sku: string");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unregistered_native_names_the_fix() {
        let p = program(vec![native_tool("stock_level")]);
        let err = Toolbox::new().call(&p, ir::ToolId(0), json!({})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "native tool `stock_level` is not registered; call `Toolbox::register_native` with it \
             before running"
        );
    }

    struct Flaky;

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct FlakyArgs {
        mode: String,
        #[schemars(default = "three")]
        times: u32,
    }

    fn three() -> u32 {
        3
    }

    impl NativeTool for Flaky {
        fn name(&self) -> &str {
            "flaky"
        }
        fn description(&self) -> &str {
            "Fails on request"
        }
        fn parameters(&self) -> Value {
            schema_for::<FlakyArgs>()
        }
        fn call(&self, args: Value) -> Result<Value, String> {
            match args["mode"].as_str() {
                Some("panic") => panic!("boom"),
                Some("fail") => Err("upstream said no".to_owned()),
                _ => Ok(args),
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn native_by_name_with_schema_defaults_errors_and_panics() {
        let mut toolbox = Toolbox::new();
        toolbox.register_native(Flaky);
        let clone = toolbox.clone();
        assert!(clone.native("flaky").is_some());
        assert_eq!(
            clone.call_native("flaky", json!({"mode": "ok"})).await,
            Ok(json!({"mode": "ok", "times": 3}))
        );
        assert_eq!(
            clone.call_native("flaky", json!({"mode": "fail"})).await,
            Err(ToolError::Failed("upstream said no".into()))
        );
        assert_eq!(
            clone.call_native("flaky", json!({"mode": "panic"})).await,
            Err(ToolError::Failed("the native tool panicked".into()))
        );
        assert_eq!(
            clone.call_native("flaky", json!({"mode": "x", "extra": 1})).await,
            Err(ToolError::InvalidArguments(vec!["`extra`: unknown property".into()]))
        );
        assert_eq!(
            clone.call_native("missing", json!({})).await,
            Err(ToolError::NotRegistered("missing".into()))
        );
        let p = program(vec![]);
        let registry = Registry::from_program(&p, &clone);
        let flaky = registry.find("flaky").unwrap();
        assert_eq!(
            toolbox.call_registered(&p, flaky, json!({"mode": "ok", "times": 1})).await,
            Ok(json!({"mode": "ok", "times": 1}))
        );
    }
}
