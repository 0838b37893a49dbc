//! [`ModelClient`]: the provider-agnostic request → reply interface the
//! tool-use loop talks to. The HTTP providers and the script fake implement
//! it; an embedding program may add its own.

use std::future::Future;
use std::pin::Pin;

use super::error::LlmError;
use super::message::{ModelReply, ModelRequest};
use crate::effects::Scope;
use crate::trace::Trace;

/// A boxed, sendable future (the trait must be object-safe for fallback chains).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who is asking: for messages, traces and replay hints.
#[derive(Debug, Clone, Copy)]
pub struct CallContext<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// The node path; model calls are traced as `{path} > model`.
    pub path: &'a str,
    /// The run's trace.
    pub trace: &'a Trace,
    /// The node's effects: every request goes through it.
    pub scope: &'a Scope,
}

/// A model behind some wire protocol.
pub trait ModelClient: Send + Sync {
    /// The provider label for messages: a kind (`anthropic`), a declaration name or `script`.
    fn provider(&self) -> &str;

    /// Sends one request (with the client's own retries) and returns the reply.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cx: CallContext<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, LlmError>>;
}
