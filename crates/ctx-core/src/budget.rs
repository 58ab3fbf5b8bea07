//! Token budgets: keep the most relevant resolved objects that fit a language
//! model's context window, and report every object left out (spec §11: trimmed
//! objects are reported, never silently dropped).
//!
//! The budget runs on a [`Resolution`] after ranking and redaction and before
//! compilation, so the bundle, its digest and its `excluded` list all describe
//! what was actually kept. Tokens are *estimated*: there is no single tokenizer
//! (each model family has its own), so ctx uses one documented, deterministic
//! rule and names it in every report ([`TOKENIZER`]).

use serde_json::Value;

use crate::load::Repo;
use crate::resolve::{Exclusion, Resolution, Selected};

/// The estimate's name, stated wherever a budget is reported.
pub const TOKENIZER: &str = "ctx-estimate-v1 (ceil(UTF-8 characters / 4); about right for English prose on GPT/Claude-class BPE tokenizers, an overestimate for code identifiers, an underestimate for CJK text)";

/// Tokens one object costs besides its content: the id, title and fact line a
/// rendering carries (a fixed, conservative allowance).
pub const PER_OBJECT_OVERHEAD: usize = 24;

/// Estimated tokens of `text` under [`TOKENIZER`].
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Estimated tokens of one JSON value as a prompt would carry it: strings as
/// their text, anything else as compact JSON.
pub fn value_tokens(v: &Value) -> usize {
    match v {
        Value::String(s) => estimate_tokens(s),
        Value::Null => 0,
        other => estimate_tokens(&other.to_string()),
    }
}

/// Estimated tokens of one selected object: its (redacted) content, title and
/// summary, plus [`PER_OBJECT_OVERHEAD`].
pub fn object_tokens(repo: &Repo, s: &Selected) -> usize {
    let o = &repo.objects[s.index];
    let (title, summary) = match &s.decrypted {
        Some(d) => (
            d.fields.get("title").and_then(Value::as_str),
            d.fields.get("summary").and_then(Value::as_str),
        ),
        None => (o.meta.title.as_deref(), o.meta.summary.as_deref()),
    };
    PER_OBJECT_OVERHEAD
        + estimate_tokens(&o.id)
        + title.map_or(0, estimate_tokens)
        + summary.map_or(0, estimate_tokens)
        + s.content.as_ref().map_or(0, value_tokens)
}

/// One object the budget left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trimmed {
    pub id: String,
    /// 1-based position in relevance order among the resolved objects.
    pub rank: usize,
    pub tokens: usize,
}

/// What [`fit`] kept and trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub max_tokens: usize,
    /// Estimated tokens of the kept objects.
    pub used_tokens: usize,
    pub kept: usize,
    pub trimmed: Vec<Trimmed>,
    pub tokenizer: &'static str,
}

/// Keep the most relevant objects whose estimated size fits `max_tokens`.
///
/// `r.included` is in relevance order (the resolver ranks before it selects),
/// so objects are taken greedily in that order: one that does not fit is
/// trimmed and smaller, less relevant ones may still fit after it. Each trimmed
/// object moves to `r.excluded` as `not-relevant`, with the budget in its
/// detail, exactly like `--limit`. Pure and deterministic: the same resolution
/// and budget always keep the same objects.
pub fn fit(repo: &Repo, r: &mut Resolution, max_tokens: usize) -> Report {
    let mut used = 0usize;
    let mut kept = Vec::with_capacity(r.included.len());
    let mut trimmed = Vec::new();
    for (pos, s) in std::mem::take(&mut r.included).into_iter().enumerate() {
        let cost = object_tokens(repo, &s);
        if used + cost <= max_tokens {
            used += cost;
            kept.push(s);
            continue;
        }
        let o = &repo.objects[s.index];
        let rank = pos + 1;
        let detail = format!(
            "trimmed by max_tokens {max_tokens} (rank {rank}, about {cost} tokens; {used} already used)"
        );
        let detail = match o.version {
            Some(v) => format!("version {v}: {detail}"),
            None => detail,
        };
        r.excluded.push(Exclusion {
            id: o.id.clone(),
            reason: "not-relevant",
            detail: Some(detail),
            outranked_by: None,
        });
        trimmed.push(Trimmed {
            id: o.id.clone(),
            rank,
            tokens: cost,
        });
    }
    r.included = kept;
    r.excluded.sort();
    Report {
        max_tokens,
        used_tokens: used,
        kept: r.included.len(),
        trimmed,
        tokenizer: TOKENIZER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{load, LoadOptions, DEFAULT_MAX_FILE_SIZE};
    use crate::manifest::Manifest;
    use crate::resolve::{resolve, Consumer, ConsumerKind, Request};

    /// A repository on disk (kept alive by the returned folder), loaded.
    fn repo_from(files: &[(&str, &str)]) -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().expect("tempdir");
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        let (m, diags) = Manifest::load(&dir.path().join("opencontext.yaml")).expect("manifest");
        let repo = load(
            m,
            diags,
            &LoadOptions {
                max_file_size: DEFAULT_MAX_FILE_SIZE,
                ..LoadOptions::default()
            },
        );
        (dir, repo)
    }

    fn request(task: &str) -> Request {
        Request {
            consumer: Consumer {
                kind: ConsumerKind::Role,
                id: "reader".into(),
                roles: vec!["reader".into()],
            },
            task: Some(task.into()),
            at: crate::time::parse_at("2026-01-01").expect("date"),
            include_historical: false,
            limit: None,
            min_relevance: None,
            include: Vec::new(),
            max_tokens: None,
            adapters: Default::default(),
            identities: None,
        }
    }

    fn fixture() -> (tempfile::TempDir, Repo) {
        let big = "refund ".repeat(400); // ~700 tokens
        repo_from(&[
            (
                "opencontext.yaml",
                "opencontext: \"1.0\"\nid: t\ncollections:\n  notes: ./notes/**\nroles:\n  reader:\n    include: [\"*\"]\n",
            ),
            ("notes/a.md", "---\ntitle: Refund refund refund\n---\nrefund policy in short\n"),
            ("notes/b.md", &format!("---\ntitle: Refund detail\n---\n{big}\n")),
            ("notes/c.md", "---\ntitle: Refund footnote\n---\nsmall refund note\n"),
        ])
    }

    #[test]
    fn estimates_are_a_quarter_of_the_characters_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("ééééé"), 2, "characters, not bytes");
        assert_eq!(value_tokens(&serde_json::json!({"a": 1})), 2);
    }

    #[test]
    fn keeps_the_most_relevant_objects_that_fit_and_reports_the_rest() {
        let (_dir, repo) = fixture();
        let mut r = resolve(&repo, request("refund")).expect("resolves");
        let order: Vec<String> = r
            .included
            .iter()
            .map(|s| repo.objects[s.index].id.clone())
            .collect();
        assert_eq!(order.len(), 3);
        let report = fit(&repo, &mut r, 200);
        assert!(report.used_tokens <= 200);
        assert_eq!(report.kept, 2);
        assert_eq!(report.trimmed.len(), 1);
        assert_eq!(report.trimmed[0].id, "notes.b");
        assert!(report.trimmed[0].tokens > 200);
        let kept: Vec<&str> = r
            .included
            .iter()
            .map(|s| repo.objects[s.index].id.as_str())
            .collect();
        assert!(!kept.contains(&"notes.b"));
        // Relevance order of what is kept is preserved.
        let expected: Vec<&str> = order
            .iter()
            .map(String::as_str)
            .filter(|id| *id != "notes.b")
            .collect();
        assert_eq!(kept, expected);
        let e = r
            .excluded
            .iter()
            .find(|e| e.id == "notes.b")
            .expect("reported");
        assert_eq!(e.reason, "not-relevant");
        assert!(e.detail.as_deref().unwrap_or("").contains("max_tokens 200"));
        assert!(report.tokenizer.starts_with("ctx-estimate-v1"));
    }

    #[test]
    fn a_budget_that_fits_everything_changes_nothing() {
        let (_dir, repo) = fixture();
        let mut r = resolve(&repo, request("refund")).expect("resolves");
        let before = r.included.len();
        let report = fit(&repo, &mut r, 1_000_000);
        assert_eq!(report.kept, before);
        assert!(report.trimmed.is_empty());
        assert!(r.excluded.iter().all(|e| e.reason != "not-relevant"));
    }

    #[test]
    fn a_zero_budget_trims_everything_and_is_deterministic() {
        let (_dir, repo) = fixture();
        let mut r1 = resolve(&repo, request("refund")).expect("resolves");
        let mut r2 = resolve(&repo, request("refund")).expect("resolves");
        let a = fit(&repo, &mut r1, 0);
        let b = fit(&repo, &mut r2, 0);
        assert_eq!(a, b);
        assert_eq!(a.kept, 0);
        assert_eq!(a.trimmed.len(), 3);
        assert_eq!(r1.excluded, r2.excluded);
    }
}
