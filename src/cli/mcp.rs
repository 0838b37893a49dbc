//! `ignite mcp PATH`: the program's tools and top-level contracts as an
//! MCP server (see [`crate::mcp`]) on standard input and output until the
//! client closes the session, or with `--http ADDR` on Streamable HTTP at
//! `http://ADDR/mcp` until SIGTERM or Ctrl-C. Standard output carries
//! JSON-RPC only; diagnostics and notes go to stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::GlobalArgs;
use super::run::{DEFAULT_CACHE_DIR, parse_size};
use crate::effects::{Cache, Effects};
use crate::mcp::Catalog;
use crate::mcp::http::{HttpLimits, PATH};
use crate::mcp::server::{Server, serve_stdio};

/// Serve the tools and top-level contracts to MCP clients (stdio, or HTTP with `--http`).
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct McpArgs {
    /// `ignite mcp lock PATH`: record the declared servers' tools.
    #[command(subcommand)]
    pub action: Option<McpAction>,
    /// The `.ign` file whose tools and contracts to serve.
    #[arg(value_name = "PATH", required = true)]
    pub file: Option<PathBuf>,
    /// The capabilities granted to the client (comma-separated): a tool is
    /// listed when they cover the ones it requires, a contract when they
    /// cover every tool it can reach. Without it, only what needs none.
    #[arg(long, value_name = "a,b")]
    pub capabilities: Option<String>,
    /// Seconds one call may take; then it is stopped and answered with an error.
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// The most one tool call or provider reply may bring in, as for `ignite run`.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "8M")]
    pub max_bytes: usize,
    /// Where the results of tools and agents declared `cache` are kept.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_CACHE_DIR)]
    pub cache_dir: PathBuf,
    /// Neither read nor write the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Serve Streamable HTTP at `http://ADDR/mcp` (e.g. `127.0.0.1:8090`;
    /// port 0 picks a free one) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// The largest request: an HTTP body, or a line on stdio; bytes or a
    /// number with `K`, `M` or `G`.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1M")]
    pub max_body: usize,
    /// With `--http`: a `Host` (`name` or `name:port`) to accept beside the
    /// loopback ones; others are refused (DNS rebinding).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_hosts: Vec<String>,
    /// With `--http`: a browser `Origin` (`https://app.example:443`, `:*`
    /// for any port) to accept beside the loopback ones; a request with
    /// any other `Origin` is refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
}

/// What `ignite mcp` does besides serving.
#[derive(Debug, clap::Subcommand)]
pub enum McpAction {
    /// Connect to every MCP server the program declares and write their
    /// tools to `ignite.lock` beside PATH (`check` types `mcp` tools from it).
    Lock(super::mcp_lock::LockArgs),
}

impl McpArgs {
    /// Serves until the client closes standard input (or, with `--http`,
    /// until SIGTERM or Ctrl-C): exit 0. Exit 1 when the program has
    /// errors or two served names clash, 2 when the session fails or the
    /// address cannot be bound.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let file = match (self.action, &self.file) {
            (Some(McpAction::Lock(lock)), _) => return lock.run(global),
            (None, Some(file)) => file,
            (None, None) => return super::usage("`ignite mcp` needs PATH"),
        };
        let program = match super::compile(file, global) {
            Ok(program) => program,
            Err(code) => return code,
        };
        let mut effects = Effects::live();
        if !self.no_cache {
            effects = effects.with(Arc::new(Cache::new(self.cache_dir.clone())));
        }
        let engine = super::live_engine(program, self.max_bytes).with_effects(effects);
        let grant = super::split_capabilities(self.capabilities.as_deref()).unwrap_or_default();
        let catalog = match Catalog::new(&engine, &grant) {
            Ok(catalog) => catalog,
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(1);
            }
        };
        let names: Vec<&str> = catalog.entries().iter().map(|e| e.name.as_str()).collect();
        eprintln!(
            "ignite mcp: serving {} tool(s) on {}: {}",
            names.len(),
            if self.http.is_some() { "Streamable HTTP" } else { "stdio" },
            if names.is_empty() { "none".to_owned() } else { format!("`{}`", names.join("`, `")) }
        );
        // The engine owns a runtime of its own, which may not be dropped in
        // async code: `engine` outlives `runtime` and every task in it.
        let engine = Arc::new(engine);
        let server = Server::new(Arc::clone(&engine), catalog, Duration::from_secs(self.timeout));
        let Some(runtime) = super::serve::runtime() else { return ExitCode::from(2) };
        let served = match &self.http {
            Some(address) => {
                let limits = HttpLimits {
                    max_body: self.max_body,
                    hosts: self.allow_hosts.clone(),
                    origins: self.allow_origins.clone(),
                };
                runtime.block_on(serve_http(address, &server, &limits))
            }
            None => {
                super::signals::stop_on_signals(String::new());
                runtime.block_on(serve_stdio(server, self.max_body))
            }
        };
        drop(runtime);
        drop(engine);
        match served {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::from(2)
            }
        }
    }
}

/// Serves `server` on Streamable HTTP at `address` until SIGTERM or
/// Ctrl-C, printing the endpoint's URL on stderr.
async fn serve_http(address: &str, server: &Server, limits: &HttpLimits) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on `{address}`: {e}"))?;
    match listener.local_addr() {
        Ok(bound) => eprintln!("listening on http://{bound}{PATH}"),
        Err(e) => eprintln!("listening (address unknown: {e})"),
    }
    // Answers go out as event streams written in pieces: without
    // TCP_NODELAY each round trip waits for a delayed ACK (~40 ms).
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        let _ = stream.set_nodelay(true);
    });
    let (router, end_streams) = crate::mcp::http::router(server, limits);
    let stop = async move {
        super::serve::stop_signal().await;
        // The calls in flight are answered first.
        end_streams.await;
    };
    axum::serve(listener, router)
        .with_graceful_shutdown(stop)
        .await
        .map_err(|e| format!("the server failed: {e}"))
}
