//! How long to wait before retrying: exponential backoff with jitter,
//! shared by provider requests (`llm`) and `exec`/`http` tools with
//! `retries N` (`tools`).

use std::time::Duration;

/// Backoff settings: the providers of an [`Llm`](crate::llm::Llm) share one;
/// tools with `retries` use [`crate::tools`]' own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first wait before jitter.
    pub base: Duration,
    /// The longest wait, `retry-after` included.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { base: Duration::from_millis(500), max: Duration::from_secs(30) }
    }
}

impl Backoff {
    /// The wait before retry number `attempt + 1` (`attempt` counts from 0).
    #[must_use]
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max);
        }
        let full = self.base.saturating_mul(1u32 << attempt.min(16)).min(self.max);
        let half = full / 2;
        half + full.saturating_sub(half).mul_f64(fastrand::f64())
    }
}
