//! When and how long to wait before retrying a provider request.
//!
//! Retryable: connection errors, timeouts, 408, 409, 429 and 5xx. The wait
//! is exponential (`base * 2^attempt`) with jitter (half to full), or the
//! server's `retry-after` seconds when given; both are capped.

use std::time::Duration;

/// Backoff settings shared by every provider of an [`Llm`](super::Llm).
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

/// True for HTTP statuses worth retrying.
#[must_use]
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..600).contains(&status)
}

/// Parses a `retry-after` header given in (possibly fractional) seconds.
#[must_use]
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}
