//! How `ctx approvals list` shows the questions: inert text, every string that
//! came from a requester quoted.

use serde_json::Value;

/// `ctx approvals list`'s output: the server's JSON as it came, or each question as text.
pub fn list(answer: &Value, json: bool) -> String {
    let list = answer["approvals"].as_array().cloned().unwrap_or_default();
    if json {
        format!("{}\n", serde_json::to_string_pretty(answer).expect("JSON"))
    } else if list.is_empty() {
        "no approvals waiting\n".to_string()
    } else {
        list.iter().map(describe).collect::<Vec<_>>().join("\n")
    }
}

/// One question as inert text, each field with its seed 004 tier (public, standard,
/// sensitive, critical) — the names a vault's owner set, not the classification
/// they map onto. Every untrusted string (consumer, purpose, proposed value) is quoted.
pub fn describe(ap: &Value) -> String {
    let s = |v: &Value| v.as_str().unwrap_or("?").to_string();
    let fields = ap["fields"].as_array().cloned().unwrap_or_default();
    let mut t = format!(
        "{} (until {})\n{} asks to {} {} field{}:\n",
        s(&ap["id"]),
        s(&ap["expires_at"]),
        shown_consumer(ap["consumer"].as_str().unwrap_or("?")),
        s(&ap["action"]),
        fields.len(),
        if fields.len() == 1 { "" } else { "s" }
    );
    for f in &fields {
        t.push_str(&format!("  - {} [{}]", s(&f["id"]), s(&f["sensitivity"])));
        // Already quoted by the server: shown as it came.
        if let Some(v) = f["proposed_value"].as_str() {
            t.push_str(&format!(" new value: {v}"));
        }
        t.push('\n');
    }
    match ap["purpose"].as_str() {
        Some(p) => t.push_str(&format!(
            "  purpose (stated by the requester, not verified): {}\n",
            ctx_core::approvals::quoted(p)
        )),
        None => t.push_str("  purpose: none stated\n"),
    }
    let critical: Vec<String> = ap["critical"]
        .as_array()
        .into_iter()
        .flatten()
        .map(s)
        .collect();
    if !critical.is_empty() {
        t.push_str(&format!(
            "  critical: approve with --confirm '{}' (or --password-file)\n",
            critical.join(",")
        ));
    }
    t
}

/// `consumer tax-prep-agent` as `consumer "tax-prep-agent"` (the name is data).
fn shown_consumer(c: &str) -> String {
    match c.strip_prefix("consumer ") {
        Some(name) => format!("consumer {}", ctx_core::approvals::quoted(name)),
        None => ctx_core::approvals::quoted(c),
    }
}
