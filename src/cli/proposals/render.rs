//! The people view of `ctx proposals list` and `commit`.

use ctx_core::proposals::{Committed, Entry};

/// One line per proposal, then a count.
pub fn list(all: &[Entry]) -> String {
    let mut t = String::new();
    for r in all {
        t.push_str(&format!(
            "{:<20} {}  {} by {} via {}\n",
            r.status,
            r.id,
            r.targets.join(", "),
            r.submitted_by,
            r.door
        ));
    }
    t.push_str(&format!("{} proposal(s)\n", all.len()));
    t
}

/// Each file written (or, in a dry run, that would be, with its bytes), then the objects.
pub fn committed(done: &Committed) -> String {
    let mut t = String::new();
    for w in &done.writes {
        let verb = match (done.dry_run, w.replaces.is_some()) {
            (true, true) => "would update",
            (true, false) => "would create",
            (false, true) => "updated",
            (false, false) => "created",
        };
        t.push_str(&format!("{verb} {}\n", w.rel));
        if done.dry_run {
            t.push_str(&String::from_utf8_lossy(&w.bytes));
            t.push('\n');
        }
    }
    let what = if done.dry_run {
        "dry run: would commit"
    } else {
        "committed"
    };
    t.push_str(&format!("{what} {}\n", done.objects.join(", ")));
    t
}
