//! Provider limits: the `rate_limit` and `token_limit` of a `provider`
//! declaration, enforced by one [`Limiter`] per declaration for every agent
//! of the process (every node of a run, every row of a batch, every request
//! of `ignite serve`). Built on the `governor` crate's GCRA limiters.
//!
//! - `rate_limit N per P` lets one request start every `P / N`, with no
//!   burst: requests are spaced evenly, so no window of length `P` holds
//!   more than `N` starts.
//! - `token_limit N per P` is a bucket of `N` tokens refilled at `N` per
//!   `P`. A request first takes its estimated input tokens (the request
//!   body's bytes / 4), waiting until the bucket holds them; when the reply
//!   reports what the call really used (input and output), the difference
//!   is settled by the next request of that provider (it takes more, or
//!   less). A request larger than the bucket waits for a full bucket and
//!   leaves the rest to the next one. Over a long run the provider sees at
//!   most `N` tokens per `P`; one `P` may see a bucket more (it starts
//!   full) and what requests in flight use beyond their estimates.
//!
//! Every attempt counts: retries and the links of a fallback chain each
//! wait for their provider's limiter. Only requests that go to the network
//! wait; an answer from a recording, a journal or the cache does not.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::ir::{Provider, Rate};

/// The limiters of the declarations seen so far, one per declaration.
#[derive(Debug, Default)]
pub(crate) struct Limiters {
    by_declaration: Mutex<HashMap<Key, Arc<Limiter>>>,
}

/// What names a declaration across the programs of a process: its name,
/// where it sends requests and its limits.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Key {
    name: String,
    kind: &'static str,
    base_url: Option<crate::ir::SettingText>,
    rate_limit: Option<Rate>,
    token_limit: Option<Rate>,
}

impl Limiters {
    /// The limiter of `provider`, made on first use; `None` when it sets no limit.
    pub(crate) fn of(&self, provider: &Provider) -> Option<Arc<Limiter>> {
        if provider.rate_limit.is_none() && provider.token_limit.is_none() {
            return None;
        }
        let key = Key {
            name: provider.name.clone(),
            kind: provider.kind.name(),
            base_url: provider.base_url.clone(),
            rate_limit: provider.rate_limit,
            token_limit: provider.token_limit,
        };
        let mut map = crate::sync::lock(&self.by_declaration);
        let limiter = map.entry(key).or_insert_with(|| {
            Arc::new(Limiter {
                requests: provider.rate_limit.map(|rate| RateLimiter::direct(quota(rate, 1))),
                tokens: provider.token_limit.map(Tokens::new),
            })
        });
        Some(Arc::clone(limiter))
    }
}

/// A quota of `rate.count` per `rate.period`, one cell every `period /
/// count`, at most `burst` at once.
fn quota(rate: Rate, burst: u32) -> Quota {
    let each = (rate.period / rate.count).max(Duration::from_nanos(1));
    let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(each)
        .unwrap_or_else(|| unreachable!("the period is not zero"))
        .allow_burst(burst)
}

/// The limits of one provider declaration.
#[derive(Debug)]
pub(crate) struct Limiter {
    requests: Option<DefaultDirectRateLimiter>,
    tokens: Option<Tokens>,
}

/// The token bucket and what the last replies left to settle.
#[derive(Debug)]
struct Tokens {
    bucket: DefaultDirectRateLimiter,
    capacity: u32,
    /// Tokens still owed (positive) or paid ahead (negative) by the
    /// estimates so far.
    balance: AtomicI64,
}

impl Tokens {
    fn new(rate: Rate) -> Self {
        Self {
            bucket: RateLimiter::direct(quota(rate, rate.count)),
            capacity: rate.count,
            balance: AtomicI64::new(0),
        }
    }

    /// Waits until the bucket holds `estimate` tokens plus what is owed.
    async fn take(&self, estimate: u64) {
        let owed = self.balance.swap(0, Ordering::AcqRel);
        let (now, carried) = split(estimate, owed, self.capacity);
        if carried != 0 {
            self.balance.fetch_add(carried, Ordering::AcqRel);
        }
        if let Some(n) = NonZeroU32::new(now) {
            // `n` is at most the capacity, so the bucket can always hold it.
            let _ = self.bucket.until_n_ready(n).await;
        }
    }
}

/// What a request with `estimate` tokens takes from a bucket of `capacity`
/// when `owed` tokens are owed (negative: paid ahead), and what is carried
/// to the next request.
fn split(estimate: u64, owed: i64, capacity: u32) -> (u32, i64) {
    let wanted = i64::try_from(estimate).unwrap_or(i64::MAX).saturating_add(owed);
    let now = wanted.clamp(0, i64::from(capacity));
    (u32::try_from(now).unwrap_or(capacity), wanted - now)
}

impl Limiter {
    /// Waits until a request estimated at `estimate` input tokens may
    /// start; how long it waited.
    pub(crate) async fn acquire(&self, estimate: u64) -> Duration {
        let started = Instant::now();
        if let Some(tokens) = &self.tokens {
            tokens.take(estimate).await;
        }
        if let Some(requests) = &self.requests {
            requests.until_ready().await;
        }
        started.elapsed()
    }

    /// Settles a request that took `estimate` tokens and used `used`.
    pub(crate) fn settle(&self, estimate: u64, used: u64) {
        if let Some(tokens) = &self.tokens {
            let difference = i128::from(used) - i128::from(estimate);
            let difference = i64::try_from(difference).unwrap_or(if difference > 0 {
                i64::MAX
            } else {
                i64::MIN
            });
            tokens.balance.fetch_add(difference, Ordering::AcqRel);
        }
    }

    /// True when the provider has a `token_limit` (estimates are needed).
    pub(crate) fn counts_tokens(&self) -> bool {
        self.tokens.is_some()
    }
}

/// The input tokens a request body of `bytes` bytes is estimated at: a
/// token per four bytes.
pub(crate) fn estimate_tokens(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(count: u32, seconds: u64) -> Option<Rate> {
        Some(Rate { count, period: Duration::from_secs(seconds) })
    }

    fn provider(name: &str, rate_limit: Option<Rate>, token_limit: Option<Rate>) -> Provider {
        Provider {
            name: name.into(),
            kind: crate::ir::ProviderKind::first(),
            base_url: None,
            api_key_env: None,
            timeout: None,
            retries: None,
            rate_limit,
            token_limit,
            price: None,
            span: crate::source::Span::new(crate::source::FileId(0), 0, 0),
        }
    }

    #[test]
    fn one_limiter_per_declaration() {
        let limiters = Limiters::default();
        assert!(limiters.of(&provider("Free", None, None)).is_none());
        let a = limiters.of(&provider("A", rate(10, 60), None)).expect("limited");
        let again = limiters.of(&provider("A", rate(10, 60), None)).expect("limited");
        assert!(Arc::ptr_eq(&a, &again));
        let other = limiters.of(&provider("A", rate(20, 60), None)).expect("limited");
        assert!(!Arc::ptr_eq(&a, &other));
    }

    #[test]
    fn estimates_are_settled_by_the_next_request() {
        // Owed tokens are taken with the estimate; paid-ahead ones lower it.
        assert_eq!(split(10, 0, 1000), (10, 0));
        assert_eq!(split(10, 390, 1000), (400, 0));
        assert_eq!(split(10, -500, 1000), (0, -490));
        // More than the bucket holds: a full bucket now, the rest next time.
        assert_eq!(split(100, 2000, 1000), (1000, 1100));
    }

    #[tokio::test]
    async fn replies_settle_their_estimates() {
        let limiter =
            Limiters::default().of(&provider("T", None, rate(1000, 3600))).expect("limited");
        assert!(limiter.counts_tokens());
        let tokens = limiter.tokens.as_ref().expect("tokens");
        limiter.acquire(10).await;
        limiter.settle(10, 400);
        assert_eq!(tokens.balance.load(Ordering::Acquire), 390);
        limiter.acquire(10).await;
        assert_eq!(tokens.balance.load(Ordering::Acquire), 0);
        limiter.settle(1500, 0);
        assert_eq!(tokens.balance.load(Ordering::Acquire), -1500);
    }
}
