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
//! 403; a body larger than [`HttpLimits::max_body`] is refused. At
//! shutdown the requests in flight are answered before the open streams
//! are ended.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::Response;
use futures_util::StreamExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use tokio::sync::watch;

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

/// The `/mcp` route serving `server`, and what ends it at shutdown: a
/// future that waits for the requests in flight (every `POST` and
/// `DELETE` whose answer is not sent yet), then ends the open streams (a
/// client's `GET` stream would hold the graceful shutdown forever).
pub(crate) fn router(
    server: &Server,
    limits: &HttpLimits,
) -> (Router, impl Future<Output = ()> + Send + 'static) {
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
    let (in_flight, mut watch) = watch::channel(0_usize);
    let in_flight = Arc::new(in_flight);
    let counted = middleware::from_fn(move |request: Request, next: Next| {
        let in_flight = Arc::clone(&in_flight);
        async move { counted(&in_flight, request, next).await }
    });
    let end = async move {
        // An error: every sender is gone, so nothing is in flight.
        let _ = watch.wait_for(|&n| n == 0).await;
        stop.cancel();
    };
    (Router::new().route_service(PATH, service).layer(counted), end)
}

/// Runs `request`, counted in `in_flight` until its answer's last byte
/// went out (or the client went away); `GET` streams are not counted.
async fn counted(in_flight: &Arc<watch::Sender<usize>>, request: Request, next: Next) -> Response {
    if request.method() == Method::GET {
        return next.run(request).await;
    }
    let held = InFlight::new(Arc::clone(in_flight));
    let (parts, body) = next.run(request).await.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &held;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// One request in flight, counted until dropped.
struct InFlight(Arc<watch::Sender<usize>>);

impl InFlight {
    fn new(count: Arc<watch::Sender<usize>>) -> Self {
        count.send_modify(|n| *n += 1);
        Self(count)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}
