//! The audit log for people and scripts: one line per event (`ctx audit show`),
//! and the verification report (`ctx audit verify`).

use serde_json::{json, Value};

use super::{Entry, Report};

/// The last `limit` entries (all without a limit): one aligned line per event, or
/// with `jsonl` the stored events unchanged, one per line.
pub fn entries(entries: &[Entry], limit: Option<usize>, jsonl: bool) -> String {
    let skip = limit.map_or(0, |n| entries.len().saturating_sub(n));
    let mut s = String::new();
    for e in &entries[skip..] {
        if jsonl {
            s.push_str(&serde_json::to_string(&e.event).expect("a JSON value serializes"));
            s.push('\n');
        } else {
            s.push_str(&line(e));
        }
    }
    s
}

/// `seq  at  event  actor-type:actor-id  outcome  [bundle digest]`.
fn line(e: &Entry) -> String {
    let ev = &e.event;
    if let Some(what) = super::recovery(ev) {
        return format!("{:>5}  {}\n", e.seq, super::verify::describe_recovery(what));
    }
    let get = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("-").to_string();
    format!(
        "{:>5}  {}  {:<17} {}:{}  {:<8} {}\n",
        e.seq,
        get(ev, "at"),
        get(ev, "event"),
        get(&ev["actor"], "type"),
        get(&ev["actor"], "id"),
        get(ev, "outcome"),
        ev.get("bundle")
            .map(|b| format!("{} {}", get(b, "bundle_id"), get(b, "digest")))
            .unwrap_or_default()
    )
}

impl Report {
    /// No problems: the chain and the head are intact.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// The JSON document; `log` and `head` are the paths to name.
    pub fn json(&self, log: &str, head: &str) -> Value {
        json!({
            "ok": self.ok(),
            "log": log,
            "head": head,
            "entries": self.entries,
            "problems": self.problems,
            "notes": self.notes,
            "pending": self.pending,
        })
    }

    /// [`Report::text`] for a log of `kind` ([`super::repository::Checked`]).
    pub fn text_for(&self, kind: &str, log: &str) -> String {
        if kind == "audit" || kind == "vault-audit" {
            return self.text(log);
        }
        let mut s = String::new();
        for x in &self.problems {
            s.push_str(&format!("error: {x}\n"));
        }
        for x in &self.notes {
            s.push_str(&format!("note: {x}\n"));
        }
        for x in &self.pending {
            s.push_str(&format!("interrupted: {x}\n"));
        }
        let what = match kind {
            "receipts" => "chain and anchor intact",
            _ => "nothing waiting",
        };
        let count = match kind {
            "writes" => format!("{} interrupted write(s)", self.entries),
            _ => format!("{} entries", self.entries),
        };
        if self.ok() && (kind != "writes" || self.pending.is_empty()) {
            s.push_str(&format!("✓ {log}: {count}, {what}\n"));
        } else if self.ok() {
            s.push_str(&format!("! {log}: {count}, completed by the next write\n"));
        } else {
            s.push_str(&format!(
                "✗ {log}: {count}, {} problem(s)\n",
                self.problems.len()
            ));
        }
        s
    }

    /// Problems, notes, then a verdict line naming `log`.
    pub fn text(&self, log: &str) -> String {
        let mut s = String::new();
        for x in &self.problems {
            s.push_str(&format!("error: {x}\n"));
        }
        for x in &self.notes {
            s.push_str(&format!("note: {x}\n"));
        }
        for x in &self.pending {
            s.push_str(&format!("interrupted: {x}\n"));
        }
        if self.ok() {
            s.push_str(&format!(
                "✓ {log}: {} entries, chain and head intact\n",
                self.entries
            ));
        } else {
            s.push_str(&format!(
                "✗ {log}: {} entries, {} problem(s)\n",
                self.entries,
                self.problems.len()
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, event: Value) -> Entry {
        Entry {
            seq,
            hash: String::new(),
            event,
        }
    }

    #[test]
    fn lines_and_limits() {
        let all = [
            entry(
                1,
                json!({"at": "t1", "event": "resolve", "actor": {"type": "role", "id": "support"}, "outcome": "ok"}),
            ),
            entry(
                2,
                json!({"event": "bundle", "bundle": {"bundle_id": "b", "digest": "d"}}),
            ),
        ];
        let text = entries(&all, Some(1), false);
        assert_eq!(text, "    2  -  bundle            -:-  -        b d\n");
        assert_eq!(entries(&all, None, false).lines().count(), 2);
        assert!(entries(&all, None, false)
            .starts_with("    1  t1  resolve           role:support  ok       \n"));
        assert_eq!(entries(&all, Some(5), true).lines().count(), 2);
        assert!(entries(&all, None, true).starts_with("{\"at\":\"t1\""));
    }

    #[test]
    fn the_report_says_ok_or_counts_problems() {
        let mut r = Report {
            entries: 3,
            notes: vec!["appended after the head".into()],
            ..Report::default()
        };
        assert_eq!(
            r.text("log.jsonl"),
            "note: appended after the head\n✓ log.jsonl: 3 entries, chain and head intact\n"
        );
        r.problems.push("broken link at 2".into());
        assert!(!r.ok());
        assert!(r.text("l").ends_with("✗ l: 3 entries, 1 problem(s)\n"));
        assert_eq!(r.json("l", "h")["ok"], false);
    }
}
