//! Renderings of an [`AccessDiff`]: text for people, JSON for machines, and
//! GitHub-flavoured Markdown for a pull-request comment. Each names ids, files,
//! field paths, patterns, roles and levels only.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{
    AccessDiff, Basis, ConsumerDiff, FieldRedaction, ListChange, Standing, Status, Visibility,
};
use crate::model::RedactionMode;

fn label(c: &ConsumerDiff) -> String {
    format!("{} {}", c.kind.as_str(), c.name)
}

fn standing_text(s: &Standing) -> String {
    match s {
        Standing::Absent => "not defined".into(),
        Standing::Refused(why) => format!("refused ({why})"),
        Standing::Active(p) => format!("defined (roles: {})", p.roles.join(", ")),
    }
}

fn rule(r: &(String, RedactionMode)) -> String {
    format!("{} ({})", r.0, r.1)
}

fn redaction_text(f: &FieldRedaction) -> String {
    let what = match (f.before, f.after) {
        (None, Some(m)) => format!("newly redacted ({m})"),
        (Some(m), None) => format!("no longer redacted (was {m})"),
        (Some(x), Some(y)) => format!("redaction mode {x} → {y}"),
        (None, None) => "unchanged".into(),
    };
    let basis = match f.basis {
        Basis::Content => "",
        Basis::Rules => " [rule in force; content not readable here]",
    };
    format!("`{}` {what}{basis}", f.path)
}

/// Lines describing the policy change (patterns, rules, roles, ceiling).
fn policy_lines(c: &ConsumerDiff) -> Vec<String> {
    let mut out = Vec::new();
    if c.standing_changed() {
        out.push(format!(
            "consumer: {} → {}",
            standing_text(&c.before),
            standing_text(&c.after)
        ));
    }
    if let Some((b, a)) = c.ceiling_change() {
        out.push(format!(
            "ceiling: {} → {}  (was {}; now {})",
            b.level,
            a.level,
            b.source(),
            a.source()
        ));
    }
    let list = |out: &mut Vec<String>, what: &str, l: &ListChange<String>| {
        for x in &l.added {
            out.push(format!("{what} + {x}"));
        }
        for x in &l.removed {
            out.push(format!("{what} - {x}"));
        }
    };
    list(&mut out, "roles", &c.policy.roles);
    list(&mut out, "include", &c.policy.include);
    list(&mut out, "exclude", &c.policy.exclude);
    for r in &c.policy.rules.added {
        out.push(format!("redact + {}", rule(r)));
    }
    for r in &c.policy.rules.removed {
        out.push(format!("redact - {}", rule(r)));
    }
    out
}

/// One object that became visible or hidden: `key  visible  (was: …; now: …)`.
fn visibility_line(v: &Visibility, visible: bool) -> String {
    let word = if visible { "visible" } else { "hidden" };
    let mut line = format!(
        "{}  {word}  (was: {}; now: {})",
        v.key,
        status_text(&v.before),
        status_text(&v.after)
    );
    if visible && !v.redacted.is_empty() {
        let _ = write!(line, "; redacted: {}", v.redacted.join(", "));
    }
    line
}

fn status_text(s: &Status) -> String {
    match s {
        Status::Judged(w) if w.is_visible() => w.detail(),
        other => format!("{}: {}", other.reason(), other.detail()),
    }
}

/// The report for people. `label` names the two states (`A (abc123) .. B (def456)`).
pub fn text(d: &AccessDiff, label_text: &str) -> String {
    let mut out = format!("Access changes: {label_text}\n");
    let changed: Vec<&ConsumerDiff> = d.changed().collect();
    for c in &changed {
        let _ = writeln!(out, "\n{}", label(c));
        for l in policy_lines(c) {
            let _ = writeln!(out, "  {l}");
        }
        for v in &c.visible {
            let _ = writeln!(out, "  + {}", visibility_line(v, true));
        }
        for v in &c.invisible {
            let _ = writeln!(out, "  - {}", visibility_line(v, false));
        }
        for f in &c.redaction {
            let _ = writeln!(out, "  ~ {}  {}", f.key, redaction_text(f));
        }
        for w in &c.withheld {
            let _ = writeln!(
                out,
                "  ~ {}  content {}",
                w.key,
                match &w.after {
                    Some(why) => format!("now withheld ({why})"),
                    None => "no longer withheld".into(),
                }
            );
        }
    }
    let unchanged: Vec<String> = d
        .consumers
        .iter()
        .filter(|c| c.is_empty())
        .map(label)
        .collect();
    if !unchanged.is_empty() {
        let _ = writeln!(out, "\nUnchanged: {}", unchanged.join(", "));
    }
    let _ = writeln!(out, "\n{}", summary(d));
    out
}

fn summary(d: &AccessDiff) -> String {
    let changed: Vec<&ConsumerDiff> = d.changed().collect();
    if changed.is_empty() {
        return "No access changes for any role or agent.".into();
    }
    let sum = |f: &dyn Fn(&ConsumerDiff) -> usize| changed.iter().map(|c| f(c)).sum::<usize>();
    format!(
        "{} of {} consumer(s) changed: {} newly visible, {} hidden, {} redaction change(s), {} ceiling change(s)",
        changed.len(),
        d.consumers.len(),
        sum(&|c| c.visible.len()),
        sum(&|c| c.invisible.len()),
        sum(&|c| c.redaction.len() + c.withheld.len()),
        sum(&|c| usize::from(c.ceiling_change().is_some())),
    )
}

fn status_json(s: &Status) -> Value {
    match s {
        Status::Judged(w) => w.json(),
        other => json!({"reason": other.reason(), "detail": other.detail()}),
    }
}

fn standing_json(s: &Standing) -> Value {
    match s {
        Standing::Absent => json!({"state": "absent"}),
        Standing::Refused(why) => json!({"state": "refused", "detail": why}),
        Standing::Active(p) => json!({
            "state": "active",
            "roles": p.roles,
            "ceiling": p.ceiling.json(),
            "include": p.include,
            "exclude": p.exclude,
            "redact": p.rules.iter().map(|(path, mode)| json!({"path": path, "mode": mode.as_str()})).collect::<Vec<_>>(),
        }),
    }
}

fn list_json<T>(l: &ListChange<T>, f: impl Fn(&T) -> Value) -> Value {
    json!({
        "added": l.added.iter().map(&f).collect::<Vec<_>>(),
        "removed": l.removed.iter().map(&f).collect::<Vec<_>>(),
    })
}

/// The report for machines. `from`/`to` describe the two states.
pub fn json(d: &AccessDiff, from: Value, to: Value) -> Value {
    let vis = |v: &Visibility| {
        json!({
            "id": v.key,
            "file": v.file,
            "before": status_json(&v.before),
            "after": status_json(&v.after),
            "redacted": v.redacted,
        })
    };
    let consumers: Vec<Value> = d
        .consumers
        .iter()
        .map(|c| {
            json!({
                "kind": c.kind.as_str(),
                "name": c.name,
                "changed": !c.is_empty(),
                "before": standing_json(&c.before),
                "after": standing_json(&c.after),
                "ceiling_changed": c.ceiling_change().is_some(),
                "policy": {
                    "roles": list_json(&c.policy.roles, |s| json!(s)),
                    "include": list_json(&c.policy.include, |s| json!(s)),
                    "exclude": list_json(&c.policy.exclude, |s| json!(s)),
                    "redact": list_json(&c.policy.rules, |(p, m)| json!({"path": p, "mode": m.as_str()})),
                },
                "visible": c.visible.iter().map(vis).collect::<Vec<_>>(),
                "invisible": c.invisible.iter().map(vis).collect::<Vec<_>>(),
                "redaction": c.redaction.iter().map(|f| json!({
                    "id": f.key,
                    "file": f.file,
                    "path": f.path,
                    "before": f.before.map(RedactionMode::as_str),
                    "after": f.after.map(RedactionMode::as_str),
                    "basis": f.basis.as_str(),
                })).collect::<Vec<_>>(),
                "withheld": c.withheld.iter().map(|w| json!({
                    "id": w.key,
                    "file": w.file,
                    "before": w.before,
                    "after": w.after,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "from": from,
        "to": to,
        "changed": !d.is_empty(),
        "consumers": consumers,
    })
}

/// Markdown table cells must not break the table.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A pull-request comment (GitHub-flavoured Markdown): a summary table, then one
/// collapsible section per consumer that changed.
pub fn github(d: &AccessDiff, label_text: &str) -> String {
    let mut out = format!("## Access changes: {}\n\n", cell(label_text));
    let changed: Vec<&ConsumerDiff> = d.changed().collect();
    if changed.is_empty() {
        out.push_str("No access changes for any role or agent.\n");
        return out;
    }
    out.push_str(
        "| consumer | newly visible | hidden | redaction | ceiling |\n|---|---:|---:|---:|---|\n",
    );
    for c in &changed {
        let ceiling = match c.ceiling_change() {
            Some((b, a)) => format!("{} → {}", b.level, a.level),
            None => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {} `{}` | {} | {} | {} | {} |",
            c.kind.as_str(),
            cell(&c.name),
            c.visible.len(),
            c.invisible.len(),
            c.redaction.len() + c.withheld.len(),
            ceiling
        );
    }
    for c in &changed {
        let _ = write!(
            out,
            "\n<details><summary>{} <code>{}</code></summary>\n\n",
            c.kind.as_str(),
            cell(&c.name)
        );
        for l in policy_lines(c) {
            let _ = writeln!(out, "- {}", cell(&l));
        }
        for v in &c.visible {
            let _ = writeln!(
                out,
                "- 🔓 `{}",
                cell(&visibility_line(v, true)).replacen("  ", "`  ", 1)
            );
        }
        for v in &c.invisible {
            let _ = writeln!(
                out,
                "- 🔒 `{}",
                cell(&visibility_line(v, false)).replacen("  ", "`  ", 1)
            );
        }
        for f in &c.redaction {
            let _ = writeln!(out, "- ✂️ `{}` {}", cell(&f.key), cell(&redaction_text(f)));
        }
        for w in &c.withheld {
            let _ = writeln!(
                out,
                "- ⛔ `{}` content {}",
                cell(&w.key),
                if w.after.is_some() {
                    "now withheld"
                } else {
                    "no longer withheld"
                }
            );
        }
        out.push_str("\n</details>\n");
    }
    let _ = writeln!(out, "\n{}", summary(d));
    out
}
