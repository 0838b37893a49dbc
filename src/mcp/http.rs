//! The MCP server over Streamable HTTP: one endpoint, `/mcp`, served by
//! `ignite mcp PATH --http ADDR` and mounted beside the HTTP API by
//! `ignite serve PATH --mcp`.
//!
//! `rmcp`'s Streamable HTTP service speaks the protocol (sessions for the
//! `initialize` era, stateless requests for `2026-07-28`) and guards the
//! endpoint against DNS rebinding: a request whose `Host` is not one of
//! [`HttpLimits::hosts`] (loopback names unless more are allowed), or
//! whose `Origin` is present and not one of [`HttpLimits::origins`]
//! (loopback origins on any port unless more are allowed), is answered
//! 403; a body larger than [`HttpLimits::max_body`] is refused.

use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::server::Server;

/// The path of the endpoint.
pub(crate) const PATH: &str = "/mcp";

/// The `Host` values accepted without `--allow-host`.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The `Origin` values accepted without `--allow-origin`: pages served
/// from this machine, on any port.
const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// What the endpoint accepts.
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpLimits {
    /// The largest request body, in bytes.
    pub(crate) max_body: usize,
    /// `Host` names (or `host:port`) accepted beside the loopback ones.
    pub(crate) hosts: Vec<String>,
    /// `Origin`s (`scheme://host[:port|:*]`) accepted beside the loopback ones.
    pub(crate) origins: Vec<String>,
}

/// The `/mcp` route serving `server`, and the handle that ends its open
/// streams (call it when the server stops, or a client's open stream
/// would hold the graceful shutdown).
pub(crate) fn router(server: &Server, limits: &HttpLimits) -> (Router, impl FnOnce() + use<>) {
    let hosts = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).chain(limits.hosts.iter().cloned());
    let origins =
        LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).chain(limits.origins.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(limits.max_body);
    let stop = config.cancellation_token.clone();
    let server = server.clone();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    (Router::new().route_service(PATH, service), move || stop.cancel())
}
