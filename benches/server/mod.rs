//! A local HTTP server for the benches that time waiting nodes.

use std::time::Duration;

/// Starts a server on 127.0.0.1 that answers every request with
/// `{"ok": true}` after `delay`.
pub(crate) fn slow_server(
    runtime: &tokio::runtime::Runtime,
    delay: Duration,
) -> wiremock::MockServer {
    runtime.block_on(async {
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(
                wiremock::ResponseTemplate::new(200)
                    .set_body_json(serde_json::json!({"ok": true}))
                    .set_delay(delay),
            )
            .mount(&server)
            .await;
        server
    })
}
