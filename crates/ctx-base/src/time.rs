//! Instants and durations as OpenContext writes them.

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, Utc};

pub type Instant = DateTime<Utc>;

/// Parse an RFC 3339 timestamp (`2026-08-01T00:00:00Z`, offsets allowed).
pub fn parse_timestamp(s: &str) -> Option<Instant> {
    DateTime::parse_from_rfc3339(s.trim())
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

/// Parse a `YYYY-MM-DD` calendar date.
pub fn parse_date(s: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").ok()
}

/// Parse the `--at` flag: an RFC 3339 instant, or a bare date meaning the
/// *end* of that day (UTC), so that everything that happened during it counts.
pub fn parse_at(s: &str) -> Option<Instant> {
    if let Some(t) = parse_timestamp(s) {
        return Some(t);
    }
    let date = parse_date(s)?;
    let end = NaiveTime::from_hms_nano_opt(23, 59, 59, 999_999_999)?;
    Some(date.and_time(end).and_utc())
}

/// The end of a calendar day, used where a `date` field is compared with an instant.
pub fn end_of_day(date: NaiveDate) -> Instant {
    let end = NaiveTime::from_hms_nano_opt(23, 59, 59, 999_999_999).expect("valid time");
    date.and_time(end).and_utc()
}

/// Parse a duration such as `30d`, `12h`, `90m`, `1y` (y = 365d, w = 7d).
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    if split == 0 {
        return None;
    }
    let n: i64 = s[..split].parse().ok()?;
    let unit = &s[split..];
    let ms_per: i64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        "y" => 365 * 86_400_000,
        _ => return None,
    };
    Duration::try_milliseconds(n.checked_mul(ms_per)?)
}

/// The one reading of the clock a command makes. Front ends read it once and pass
/// it to every operation that asks "when?", so a command judges everything at one
/// instant, and a test (or `--at`) takes the same path as the system clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    precise: Instant,
    now: Instant,
    stamp: Instant,
}

impl Clock {
    /// Read the system clock (whole seconds). `SOURCE_DATE_EPOCH`, when set, fixes
    /// the stamp written into generated documents (reproducible builds), not "now".
    pub fn system() -> Clock {
        use chrono::SubsecRound;
        let precise = Utc::now();
        let now = precise.trunc_subsecs(0);
        let stamp = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .and_then(|secs| DateTime::from_timestamp(secs, 0))
            .unwrap_or(now);
        Clock {
            precise,
            now,
            stamp,
        }
    }

    /// A clock stopped at `now` (tests, replays).
    pub fn fixed(now: Instant) -> Clock {
        Clock {
            precise: now,
            now,
            stamp: now,
        }
    }

    /// The current instant, whole seconds: what commands judge lifecycle at.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The current instant at full precision, for checks a truncated clock would
    /// loosen (an expiry with a fraction of a second).
    pub fn precise(&self) -> Instant {
        self.precise
    }

    /// The instant a command judges at: `at` (from `--at`) when given, else now.
    pub fn at(&self, at: Option<Instant>) -> Instant {
        at.unwrap_or(self.now)
    }

    /// The `generated_at` stamp of documents this command writes (RFC 3339).
    pub fn stamp(&self) -> String {
        format(&self.stamp)
    }
}

/// Canonical text form used in output: `2026-08-09T12:00:00Z` (sub-seconds only when present).
pub fn format(t: &Instant) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_date_means_end_of_day() {
        let t = parse_at("2026-08-09").unwrap();
        assert_eq!(format(&t), "2026-08-09T23:59:59.999999999Z");
        assert!(t > parse_timestamp("2026-08-09T23:59:59Z").unwrap());
    }

    #[test]
    fn timestamps_with_offsets_normalise_to_utc() {
        let t = parse_at("2026-08-09T14:00:00+02:00").unwrap();
        assert_eq!(format(&t), "2026-08-09T12:00:00Z");
        assert!(parse_at("yesterday").is_none());
        assert!(parse_at("2026-13-01").is_none());
    }

    #[test]
    fn a_fixed_clock_answers_at_and_stamps_alike() {
        let t = parse_at("2026-08-09T12:00:00Z").unwrap();
        let c = Clock::fixed(t);
        assert_eq!(c.now(), t);
        assert_eq!(c.at(None), t);
        let other = parse_at("2026-01-01").unwrap();
        assert_eq!(c.at(Some(other)), other);
        assert_eq!(c.stamp(), "2026-08-09T12:00:00Z");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d"), Some(Duration::days(30)));
        assert_eq!(parse_duration("1y"), Some(Duration::days(365)));
        assert_eq!(parse_duration("2w"), Some(Duration::days(14)));
        assert_eq!(parse_duration("15ms"), Some(Duration::milliseconds(15)));
        assert_eq!(parse_duration("d"), None);
        assert_eq!(parse_duration("3x"), None);
        assert_eq!(parse_duration("99999999999999999999d"), None);
    }
}
