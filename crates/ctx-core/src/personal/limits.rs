//! Rate limits (seed 004 §7): a token bucket per key, refilled continuously, so a
//! limit of 60/minute allows a burst of 60 and then one request a second; and the
//! bounded record of failed unauthenticated attempts ([`Failures`]).

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// Failed token requests (wrong consumer credentials) a minute from one address:
/// past it, the address's token requests without a bearer are refused before any
/// check, and are not audited one by one.
pub const FAILED_PER_PEER: u32 = 10;
/// The same, from every address together.
pub const FAILED_OVERALL: u32 = 60;
/// How long one summarised audit entry of repeated failures covers.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Consumer names and addresses a summary names; the rest are counted.
const NAMED: usize = 8;

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

fn refill(b: &mut Bucket, cap: f64, now: Instant) {
    let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
    b.tokens = (b.tokens + elapsed * cap / 60.0).min(cap);
    b.at = now;
}

impl Limiter {
    /// Take one request from `key`'s bucket of `per_minute`; false when empty.
    pub fn allow(&mut self, key: &str, per_minute: u32, now: Instant) -> bool {
        let cap = f64::from(per_minute.max(1));
        let b = self.buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: cap,
            at: now,
        });
        refill(b, cap, now);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether `key` has a request left, without taking one (an unknown key has,
    /// and gets no bucket: looking costs no memory).
    pub fn peek(&mut self, key: &str, per_minute: u32, now: Instant) -> bool {
        let cap = f64::from(per_minute.max(1));
        match self.buckets.get_mut(key) {
            None => true,
            Some(b) => {
                refill(b, cap, now);
                b.tokens >= 1.0
            }
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

/// Repeated failures in bounded form: the first failure of a window is recorded in
/// full; the rest (and the attempts the limit turned away) are counted and become
/// one summary entry when the window ends — or earlier, when the caller flushes
/// (the vault locks, the server stops). However many attempts come, the audit log
/// grows by at most two entries a window.
#[derive(Debug, Default)]
pub struct Failures {
    open: Option<Window>,
}

#[derive(Debug)]
struct Window {
    started: Instant,
    /// Failures after the first (which was recorded in full).
    failed: u64,
    /// Attempts refused by the limit before any check.
    refused: u64,
    consumers: BTreeSet<String>,
    more_consumers: u64,
    peers: BTreeSet<String>,
    more_peers: u64,
}

/// What a window that ended adds to the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub failed: u64,
    pub refused: u64,
    pub seconds: u64,
    pub consumers: Vec<String>,
    pub more_consumers: u64,
    pub peers: Vec<String>,
    pub more_peers: u64,
}

impl Summary {
    /// The audit entry's reason: counts and claimed names, never a secret.
    pub fn text(&self) -> String {
        let list = |names: &[String], more: u64| {
            let mut s = names.join(", ");
            if more > 0 {
                s.push_str(&format!(" and {more} more"));
            }
            s
        };
        let mut t = format!(
            "{} more token requests with wrong consumer credentials in {} s",
            self.failed + self.refused,
            self.seconds
        );
        if self.refused > 0 {
            t.push_str(&format!(
                " ({} refused unchecked: more than {FAILED_PER_PEER} failures a minute from one address or {FAILED_OVERALL} from all)",
                self.refused
            ));
        }
        if !self.consumers.is_empty() {
            t.push_str(&format!(
                "; consumers named: {}",
                list(&self.consumers, self.more_consumers)
            ));
        }
        if !self.peers.is_empty() {
            t.push_str(&format!("; from {}", list(&self.peers, self.more_peers)));
        }
        t
    }
}

fn named(set: &mut BTreeSet<String>, more: &mut u64, name: &str) {
    if set.contains(name) {
        return;
    }
    if set.len() < NAMED {
        set.insert(name.to_string());
    } else {
        *more += 1;
    }
}

impl Failures {
    /// Note one failure (`refused`: turned away by the limit). Returns the summary
    /// of a window that had ended (to record first), and whether this failure is
    /// the first of its window (to record in full).
    pub fn note(
        &mut self,
        consumer: &str,
        peer: &str,
        refused: bool,
        now: Instant,
    ) -> (Option<Summary>, bool) {
        let ended = self.due(now);
        match &mut self.open {
            None => {
                self.open = Some(Window {
                    started: now,
                    failed: 0,
                    refused: 0,
                    consumers: BTreeSet::new(),
                    more_consumers: 0,
                    peers: BTreeSet::new(),
                    more_peers: 0,
                });
                if refused {
                    // Only possible when a window's first failure is a refusal
                    // (the limit outlives the window): count it all the same.
                    let w = self.open.as_mut().expect("just opened");
                    w.refused += 1;
                    named(&mut w.consumers, &mut w.more_consumers, consumer);
                    named(&mut w.peers, &mut w.more_peers, peer);
                    return (ended, false);
                }
                (ended, true)
            }
            Some(w) => {
                if refused {
                    w.refused += 1;
                } else {
                    w.failed += 1;
                }
                named(&mut w.consumers, &mut w.more_consumers, consumer);
                named(&mut w.peers, &mut w.more_peers, peer);
                (ended, false)
            }
        }
    }

    /// The summary of the window, if it has ended.
    pub fn due(&mut self, now: Instant) -> Option<Summary> {
        let ended = self
            .open
            .as_ref()
            .is_some_and(|w| now.saturating_duration_since(w.started) >= FAILURE_WINDOW);
        if ended {
            self.flush(now)
        } else {
            None
        }
    }

    /// Close the window now; its summary when anything was counted.
    pub fn flush(&mut self, now: Instant) -> Option<Summary> {
        let w = self.open.take()?;
        (w.failed + w.refused > 0).then(|| Summary {
            failed: w.failed,
            refused: w.refused,
            seconds: now.saturating_duration_since(w.started).as_secs(),
            consumers: w.consumers.into_iter().collect(),
            more_consumers: w.more_consumers,
            peers: w.peers.into_iter().collect(),
            more_peers: w.more_peers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_takes_nothing_and_keeps_no_bucket_for_a_new_key() {
        let mut l = Limiter::default();
        let t0 = Instant::now();
        assert!(l.peek("f:a", 2, t0));
        assert!(l.buckets.is_empty());
        assert!(l.allow("f:a", 2, t0));
        assert!(l.peek("f:a", 2, t0), "one left");
        assert!(l.allow("f:a", 2, t0));
        assert!(!l.peek("f:a", 2, t0));
        assert!(l.peek("f:a", 2, t0 + Duration::from_secs(30)));
    }

    #[test]
    fn two_thousand_failures_make_two_entries_a_window() {
        let mut f = Failures::default();
        let t0 = Instant::now();
        let mut full = 0;
        let mut summaries = Vec::new();
        for i in 0..2000u64 {
            let at = t0 + Duration::from_millis(i * 10);
            let (ended, first) = f.note(&format!("made-up-{i}"), "127.0.0.1", i >= 10, at);
            full += usize::from(first);
            summaries.extend(ended);
        }
        // 2,000 attempts over 20 s: one window, still open.
        assert_eq!(full, 1);
        assert!(summaries.is_empty());
        assert_eq!(f.due(t0 + Duration::from_secs(59)), None);
        let s = f
            .due(t0 + Duration::from_secs(60))
            .expect("the window ended");
        assert_eq!((s.failed, s.refused, s.seconds), (9, 1990, 60));
        assert_eq!(s.consumers.len(), NAMED);
        assert_eq!(s.more_consumers, 1999 - NAMED as u64);
        assert_eq!(s.peers, ["127.0.0.1"]);
        let text = s.text();
        assert!(text.starts_with("1999 more token requests"), "{text}");
        assert!(text.contains("and 1991 more"), "{text}");
        // The next failure opens a new window, recorded in full.
        let (ended, first) = f.note("x", "127.0.0.1", false, t0 + Duration::from_secs(61));
        assert!(ended.is_none() && first);
        // A lone failure leaves nothing to summarise.
        assert_eq!(f.flush(t0 + Duration::from_secs(62)), None);
    }

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
