//! Answers sized for a prompt. MCP hosts cut tool output at tens of thousands
//! of characters, so every value-carrying answer has a budget (default
//! [`DEFAULT_ANSWER_TOKENS`]) that covers the WHOLE answer — text blocks and
//! structured content, framing and notes included — not only object bodies;
//! what was left out is summarised in a bounded form (counts by reason, the
//! first [`LISTED`] ids); long listings are paginated with a cursor.

use rmcp::model::CallToolResult;
use serde_json::{json, Map, Value};

use ctx_core::budget;

/// The answer budget when a call names none, in estimated tokens.
pub const DEFAULT_ANSWER_TOKENS: usize = 8_000;
/// How many ids a summary of what was left out names.
pub const LISTED: usize = 10;
/// Tokens kept free for the notes an answer gains after it is fitted (an
/// approval given or refused, agent-written objects): they are bounded too.
pub const NOTES_RESERVE: usize = 160;
/// The estimate's short name in an answer (`context_status` states it in full).
pub const ESTIMATE: &str = "ctx-estimate-v1, ceil(characters / 4)";
/// Rows a page of `context_list` holds when the call names no limit.
pub const DEFAULT_PAGE: usize = 100;

/// Estimated tokens of a whole tool result as a host receives it.
pub fn tokens(r: &CallToolResult) -> usize {
    budget::estimate_tokens(&serde_json::to_string(r).unwrap_or_default())
}

/// What a bundle left out, bounded: the total, counts by reason and the first
/// [`LISTED`] exclusion records.
pub fn excluded(bundle: &Value) -> Value {
    let all = bundle["excluded"].as_array().cloned().unwrap_or_default();
    let mut by_reason: Map<String, Value> = Map::new();
    for e in &all {
        let r = e["reason"].as_str().unwrap_or("").to_string();
        let n = by_reason.get(&r).and_then(Value::as_u64).unwrap_or(0);
        by_reason.insert(r, json!(n + 1));
    }
    json!({
        "total": all.len(),
        "by_reason": by_reason,
        "first": all.into_iter().take(LISTED).collect::<Vec<_>>(),
    })
}

/// A token budget's report, bounded like [`excluded`]; `answer` is the whole
/// answer's budget the call asked for.
pub fn budget_report(b: &budget::Report, answer: usize) -> Value {
    json!({
        "max_tokens": answer,
        "object_tokens": b.max_tokens,
        "used_tokens": b.used_tokens,
        "kept": b.kept,
        "trimmed_count": b.trimmed.len(),
        // The first few by rank (the rest are in `excluded` counts): the next
        // most relevant objects a larger budget would bring.
        "trimmed": b.trimmed.iter().take(3)
            .map(|t| json!({"id": t.id, "rank": t.rank, "tokens": t.tokens}))
            .collect::<Vec<_>>(),
        "tokenizer": ESTIMATE,
    })
}

/// The ids of a list, at most [`LISTED`] of them, and how many more there are.
pub fn first_ids<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let all: Vec<&str> = ids.into_iter().collect();
    let mut s = all
        .iter()
        .take(LISTED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if all.len() > LISTED {
        s.push_str(&format!(" and {} more", all.len() - LISTED));
    }
    s
}

/// Where the page a cursor names starts (an opaque offset this server gave).
pub fn offset(cursor: Option<&str>, len: usize) -> Result<usize, String> {
    match cursor {
        None => Ok(0),
        Some(c) => c
            .strip_prefix('o')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n <= len)
            .ok_or_else(|| {
                format!(
                    "cursor {} is not one this server gave; start again without it",
                    crate::mcp::inert::quoted(c)
                )
            }),
    }
}

/// The cursor of the page that starts at `offset`, when there is one.
pub fn cursor_at(offset: usize, len: usize) -> Option<String> {
    (offset < len).then(|| format!("o{offset}"))
}

/// The longest prefix of `rows` whose answer (`build` of it) fits
/// [`DEFAULT_ANSWER_TOKENS`], at least one row; `build` gets the prefix length.
pub fn fitted(rows: &[Value], build: impl Fn(usize) -> CallToolResult) -> CallToolResult {
    let mut n = rows.len();
    loop {
        let result = build(n);
        let used = tokens(&result);
        if used <= DEFAULT_ANSWER_TOKENS || n <= 1 {
            return result;
        }
        n = (n * DEFAULT_ANSWER_TOKENS / used).clamp(1, n - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_offsets_this_server_gave() {
        assert_eq!(offset(None, 5), Ok(0));
        assert_eq!(offset(Some("o4"), 5), Ok(4));
        assert!(offset(Some("o6"), 5).is_err());
        assert!(offset(Some("x"), 5).is_err());
        assert_eq!(cursor_at(2, 5).as_deref(), Some("o2"));
        assert_eq!(cursor_at(5, 5), None);
    }

    #[test]
    fn summaries_name_at_most_the_first_ids() {
        let ids: Vec<String> = (0..25).map(|n| format!("i{n}")).collect();
        let s = first_ids(ids.iter().map(String::as_str));
        assert!(s.ends_with("and 15 more"), "{s}");
        let b = json!({"excluded": ids.iter().map(|i| json!({"id": i, "reason": "not-relevant"})).collect::<Vec<_>>()});
        let e = excluded(&b);
        assert_eq!(e["total"], 25);
        assert_eq!(e["by_reason"]["not-relevant"], 25);
        assert_eq!(e["first"].as_array().unwrap().len(), LISTED);
    }
}
