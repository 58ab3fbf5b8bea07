//! Rate limits (seed 004 §7): a token bucket per key, refilled continuously, so a
//! limit of 60/minute allows a burst of 60 and then one request a second.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One bucket.
#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets by key (`unlock`, `read:<token hash>`, `write:<token hash>`, …).
#[derive(Debug, Default)]
pub struct Limiter {
    buckets: HashMap<String, Bucket>,
}

impl Limiter {
    /// Take one request from `key`'s bucket of `per_minute`; false when empty.
    pub fn allow(&mut self, key: &str, per_minute: u32, now: Instant) -> bool {
        let cap = f64::from(per_minute.max(1));
        let b = self.buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: cap,
            at: now,
        });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * cap / 60.0).min(cap);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Seconds until `key` has a request again (for `Retry-After`).
    pub fn retry_after(&self, key: &str, per_minute: u32) -> u64 {
        let cap = f64::from(per_minute.max(1));
        self.buckets
            .get(key)
            .map_or(0, |b| {
                ((1.0 - b.tokens).max(0.0) * 60.0 / cap).ceil() as u64
            })
            .max(1)
    }

    /// Drop buckets idle long enough to be full again (bounded memory).
    pub fn sweep(&mut self, now: Instant) {
        self.buckets
            .retain(|_, b| now.saturating_duration_since(b.at) < Duration::from_secs(120));
    }

    /// Forget one key's buckets (a revoked token).
    pub fn forget(&mut self, suffix: &str) {
        self.buckets.retain(|k, _| !k.ends_with(suffix));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refill() {
        let mut l = Limiter::default();
        let t0 = Instant::now();
        for _ in 0..5 {
            assert!(l.allow("unlock", 5, t0));
        }
        assert!(!l.allow("unlock", 5, t0));
        assert!(l.retry_after("unlock", 5) >= 1);
        assert!(l.allow("unlock", 5, t0 + Duration::from_secs(12)));
        assert!(!l.allow("unlock", 5, t0 + Duration::from_secs(12)));
        assert!(l.allow("other", 5, t0), "keys are independent");
    }
}
