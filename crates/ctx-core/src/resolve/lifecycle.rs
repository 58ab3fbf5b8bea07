//! Stage 3 — freshness: the lifecycle state of an object at an instant.
//! Computed, never stored.

use chrono::Duration;

use crate::model::Lifecycle;
use crate::object::{ContextObject, Expires};
use crate::time::Instant;

/// Lifecycle at `at` (supersession is applied by a later stage).
/// `default_ttl` is the manifest's `freshness.default_ttl`.
pub fn state(o: &ContextObject, at: Instant, default_ttl: Option<Duration>) -> Lifecycle {
    if let Some(from) = o.meta.valid_from {
        if at < from {
            return Lifecycle::Future;
        }
    }
    if let Expires::At(until) = o.meta.expires {
        if at >= until {
            return Lifecycle::Expired;
        }
    }
    if let (Some(updated), Some(ttl)) = (o.meta.updated, o.meta.ttl.or(default_ttl)) {
        if let Some(fresh_until) = updated.checked_add_signed(ttl) {
            if at > fresh_until {
                return Lifecycle::Stale;
            }
        }
    }
    Lifecycle::Current
}
