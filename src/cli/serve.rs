//! `ignite serve PATH`: every top-level contract of PATH as an HTTP
//! service (see [`crate::serve`]) until SIGTERM or Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::GlobalArgs;
use super::run::parse_size;
use crate::serve::{Limits, Service};

/// Ends the MCP endpoint at shutdown: its answers in flight sent, its open
/// streams ended.
type EndStreams = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// Stack of the threads runs go on: evaluating deep expressions recurses.
const RUN_STACK: usize = 64 << 20;

/// Serve every top-level contract over HTTP.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The `.ign` file whose contracts to serve.
    #[arg(value_name = "PATH")]
    pub file: PathBuf,
    /// The port to listen on; 0 picks a free one (the address is printed on stderr).
    #[arg(long, value_name = "N", default_value_t = 8080)]
    pub port: u16,
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub host: String,
    /// The largest request body: bytes, or a number with `K`, `M` or `G`.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1M")]
    pub max_body: usize,
    /// How many runs may go at once; further requests wait for a turn.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_runs: u32,
    /// Seconds a request may wait for its turn and run before it is answered 504.
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// The most one tool call or provider reply may bring in, as for `ignite run`.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "8M")]
    pub max_bytes: usize,
    /// Serve the contracts as Restate services (a deployment to register
    /// with a Restate server) instead of plain HTTP; needs the `restate`
    /// cargo feature. The Restate server sets body size, concurrency and
    /// timeouts.
    #[arg(long, conflicts_with_all = ["max_body", "max_runs", "timeout", "mcp"])]
    pub restate: bool,
    /// Also serve the tools and contracts over MCP (Streamable HTTP) at
    /// `/mcp`, as `ignite mcp --http` does, within the same limits: each
    /// call takes a `--max-runs` turn, and shutdown waits for calls in flight.
    #[arg(long)]
    pub mcp: bool,
    /// With `--mcp`: the capabilities granted to MCP clients (comma-separated),
    /// as `ignite mcp --capabilities`.
    #[arg(long, value_name = "a,b", requires = "mcp")]
    pub capabilities: Option<String>,
}

impl ServeArgs {
    /// Serves until SIGTERM or Ctrl-C, then drains: exit 0. Exit 1 when
    /// the program has errors, 2 when the address cannot be bound.
    #[must_use]
    pub fn run(self, global: &GlobalArgs) -> ExitCode {
        let program = match super::compile(&self.file, global) {
            Ok(program) => program,
            Err(code) => return code,
        };
        let engine = super::live_engine(program, self.max_bytes);
        if self.restate {
            return self.serve_restate(engine);
        }
        let limits = Limits {
            max_body: self.max_body,
            max_runs: self.max_runs as usize,
            timeout: Duration::from_secs(self.timeout),
        };
        let service = Arc::new(Service::new(engine, limits));
        let (mounted, end_streams) = match self.mcp_routes(&service) {
            Ok(routes) => routes,
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(1);
            }
        };
        let Some(runtime) = runtime() else { return ExitCode::from(2) };
        // The engine owns a runtime of its own, which may not be dropped in
        // async code: `service` outlives `runtime` and every task in it.
        let serving = Arc::clone(&service);
        runtime.block_on(async move {
            let Some(listener) = self.bind().await else { return ExitCode::from(2) };
            match crate::serve::serve(listener, serving, mounted, stop_signal(), end_streams).await
            {
                Ok(()) => {
                    eprintln!("stopped: every run in flight finished");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: the server failed: {e}");
                    ExitCode::from(2)
                }
            }
        })
    }
}

impl ServeArgs {
    /// The routes of `--mcp` (none without it), whose calls take turns of
    /// `service`, and what ends their open streams at shutdown.
    fn mcp_routes(&self, service: &Arc<Service>) -> Result<(axum::Router, EndStreams), String> {
        if !self.mcp {
            return Ok((axum::Router::new(), Box::pin(async {})));
        }
        let engine = Arc::clone(service.engine());
        let grant = super::split_capabilities(self.capabilities.as_deref()).unwrap_or_default();
        let catalog = crate::mcp::Catalog::new(&engine, &grant)?;
        let server =
            crate::mcp::server::Server::new(engine, catalog, Duration::from_secs(self.timeout))
                .with_turns(Arc::clone(service));
        let limits = crate::mcp::http::HttpLimits { max_body: self.max_body, ..Default::default() };
        let (routes, end_streams) = crate::mcp::http::router(&server, &limits);
        Ok((routes, Box::pin(end_streams)))
    }

    /// `--restate`: the contracts as a Restate deployment until SIGTERM or
    /// Ctrl-C (runs in flight are left to Restate, which retries them on a
    /// worker). Exit 2 when the address cannot be bound.
    #[cfg(feature = "restate")]
    fn serve_restate(self, engine: crate::runtime::Engine) -> ExitCode {
        let engine = Arc::new(engine);
        let endpoint = match crate::restate::endpoint(&engine) {
            Ok(endpoint) => endpoint,
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(1);
            }
        };
        let Some(runtime) = runtime() else { return ExitCode::from(2) };
        // As for plain serving: `engine` outlives `runtime`.
        runtime.block_on(async move {
            let Some(listener) = self.bind().await else { return ExitCode::from(2) };
            crate::restate::serve(listener, endpoint, stop_signal()).await;
            eprintln!("stopped");
            ExitCode::SUCCESS
        })
    }

    #[cfg(not(feature = "restate"))]
    fn serve_restate(self, _engine: crate::runtime::Engine) -> ExitCode {
        eprintln!(
            "error: this ignite was built without Restate support; build it with `cargo build --release --features restate`"
        );
        ExitCode::from(2)
    }

    /// Listens on `--host` and `--port`, printing the address on stderr;
    /// `None` (after saying why) when that fails.
    async fn bind(&self) -> Option<tokio::net::TcpListener> {
        // MCP answers are event streams written in pieces: Nagle's
        // algorithm would hold each one back for a delayed ACK too.
        let bound = if self.restate || self.mcp {
            listen_nodelay(&self.host, self.port).await
        } else {
            tokio::net::TcpListener::bind((self.host.as_str(), self.port)).await
        };
        let listener = match bound {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("error: cannot listen on {}:{}: {e}", self.host, self.port);
                return None;
            }
        };
        match listener.local_addr() {
            Ok(bound) => {
                eprintln!("listening on http://{bound}");
                if self.mcp {
                    eprintln!("MCP (Streamable HTTP) at http://{bound}{}", crate::mcp::http::PATH);
                }
            }
            Err(e) => eprintln!("listening (address unknown: {e})"),
        }
        Some(listener)
    }
}

/// Listens on `host:port` with Nagle's algorithm off, which accepted
/// connections inherit (on Linux): Restate's HTTP/2 exchanges small frames
/// both ways, and a frame held back for a delayed ACK costs up to 40 ms
/// per journaled step.
async fn listen_nodelay(host: &str, port: u16) -> std::io::Result<tokio::net::TcpListener> {
    let address = tokio::net::lookup_host((host, port)).await?.next().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::AddrNotAvailable, "the host has no address")
    })?;
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(address)?;
    socket.listen(1024)
}

/// The server's runtime; `None` (after saying why) when it cannot start.
pub(super) fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(RUN_STACK)
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(e) => {
            eprintln!("error: cannot start the server's runtime: {e}");
            None
        }
    }
}

/// Resolves on SIGTERM or Ctrl-C (SIGINT).
pub(super) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    eprintln!("shutting down: new requests get 503, waiting for the runs in flight");
}
