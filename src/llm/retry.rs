//! When and how long to wait before retrying a provider request.
//!
//! Retryable: connection errors, timeouts, 408, 409, 429 and 5xx. The wait
//! is exponential (`base * 2^attempt`) with jitter (half to full), or the
//! server's `retry-after` seconds when given; both are capped.

use std::time::Duration;

pub use crate::backoff::Backoff;

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
