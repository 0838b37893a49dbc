//! `ignite serve PATH`: every top-level contract of PATH as an HTTP
//! service (see [`crate::serve`]) until SIGTERM or Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::GlobalArgs;
use super::run::parse_size;
use crate::serve::{Limits, Service};

/// Stack of the threads runs go on: evaluating deep expressions recurses.
const RUN_STACK: usize = 64 << 20;

/// Arguments of `ignite serve`.
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
        let limits = Limits {
            max_body: self.max_body,
            max_runs: self.max_runs as usize,
            timeout: Duration::from_secs(self.timeout),
        };
        let service = Arc::new(Service::new(engine, limits));
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_stack_size(RUN_STACK)
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("error: cannot start the server's runtime: {e}");
                return ExitCode::from(2);
            }
        };
        // The engine owns a runtime of its own, which may not be dropped in
        // async code: `service` outlives `runtime` and every task in it.
        let serving = Arc::clone(&service);
        runtime.block_on(async move {
            let address = (self.host.as_str(), self.port);
            let listener = match tokio::net::TcpListener::bind(address).await {
                Ok(listener) => listener,
                Err(e) => {
                    eprintln!("error: cannot listen on {}:{}: {e}", self.host, self.port);
                    return ExitCode::from(2);
                }
            };
            match listener.local_addr() {
                Ok(bound) => eprintln!("listening on http://{bound}"),
                Err(e) => eprintln!("listening (address unknown: {e})"),
            }
            match crate::serve::serve(listener, serving, stop_signal()).await {
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

/// Resolves on SIGTERM or Ctrl-C (SIGINT).
async fn stop_signal() {
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
