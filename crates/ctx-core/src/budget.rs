//! Token budgets: keep the most relevant resolved objects that fit a language
//! model's context window, and report every object left out (spec §11: trimmed
//! objects are reported, never silently dropped).
//!
//! The budget runs after ranking and redaction and before compilation (the
//! resolver spends a [`Budget`] as it selects, so trimmed content is never copied
//! out of the repository), so the bundle, its digest and its `excluded` list all
//! describe what was actually kept. Tokens are *estimated*: there is no single tokenizer
//! (each model family has its own), so ctx uses one documented, deterministic
//! rule and names it in every report ([`TOKENIZER`]).

use serde_json::Value;

use crate::load::Repo;
use crate::object::ContextObject;
use crate::private::Opened;
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
        other => json_chars(other).div_ceil(4),
    }
}

/// Characters of `v` as compact JSON (as `serde_json` writes it), counted without
/// writing it: a budget costs every resolved object, most of which it trims.
fn json_chars(v: &Value) -> usize {
    let separators = |n: usize| n.saturating_sub(1);
    match v {
        Value::Null => 4,
        Value::Bool(b) => 4 + usize::from(!b),
        Value::Number(n) => {
            let mut chars = CharCount(0);
            serde_json::to_writer(&mut chars, n).expect("counting never fails");
            chars.0
        }
        Value::String(s) => string_chars(s),
        Value::Array(items) => {
            2 + separators(items.len()) + items.iter().map(json_chars).sum::<usize>()
        }
        Value::Object(map) => {
            2 + separators(map.len())
                + map
                    .iter()
                    .map(|(k, v)| string_chars(k) + 1 + json_chars(v))
                    .sum::<usize>()
        }
    }
}

/// Characters of a JSON string literal: its quotes, its characters, and what
/// escaping adds (`\"`, `\\` and the short control escapes one each, `\u00XX` five).
fn string_chars(s: &str) -> usize {
    let escapes: usize = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\x08' | b'\x0c' | b'\n' | b'\r' | b'\t' => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    2 + s.chars().count() + escapes
}

/// Counts the UTF-8 characters written to it (every byte that does not continue one).
struct CharCount(usize);

impl std::io::Write for CharCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.iter().filter(|&&b| (b as i8) >= -0x40).count();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Estimated tokens of one selected object: its (redacted) content, title and
/// summary, plus [`PER_OBJECT_OVERHEAD`].
pub fn object_tokens(repo: &Repo, s: &Selected) -> usize {
    tokens(
        &repo.objects[s.index],
        s.decrypted.as_deref(),
        s.content.as_ref(),
    )
}

/// [`object_tokens`] of object `o` with its decrypted fields and redacted content.
pub fn tokens(o: &ContextObject, decrypted: Option<&Opened>, content: Option<&Value>) -> usize {
    tokens_with(o, decrypted, content.map_or(0, value_tokens))
}

/// [`tokens`] with the content's [`value_tokens`] already estimated.
pub fn tokens_with(o: &ContextObject, decrypted: Option<&Opened>, content_tokens: usize) -> usize {
    let (title, summary) = match decrypted {
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
        + content_tokens
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

/// A token budget spent greedily in relevance order: an object that does not fit
/// is trimmed, and smaller, less relevant ones may still fit after it. Each trimmed
/// object becomes a `not-relevant` exclusion with the budget in its detail, exactly
/// like `--limit`. Deterministic: the same objects in the same order always give
/// the same decisions.
#[derive(Debug)]
pub struct Budget {
    max_tokens: usize,
    used: usize,
    kept: usize,
    trimmed: Vec<Trimmed>,
}

impl Budget {
    pub fn new(max_tokens: usize) -> Budget {
        Budget {
            max_tokens,
            used: 0,
            kept: 0,
            trimmed: Vec::new(),
        }
    }

    /// Offer the next object in relevance order, estimated at `cost` tokens: true
    /// when it fits (keep it); else it is recorded as trimmed and its exclusion
    /// pushed onto `excluded`.
    pub fn admit(&mut self, o: &ContextObject, cost: usize, excluded: &mut Vec<Exclusion>) -> bool {
        if self.used + cost <= self.max_tokens {
            self.used += cost;
            self.kept += 1;
            return true;
        }
        let (max_tokens, used) = (self.max_tokens, self.used);
        let rank = self.kept + self.trimmed.len() + 1;
        let detail = format!(
            "trimmed by max_tokens {max_tokens} (rank {rank}, about {cost} tokens; {used} already used)"
        );
        let detail = match o.version {
            Some(v) => format!("version {v}: {detail}"),
            None => detail,
        };
        excluded.push(Exclusion {
            id: o.id.clone(),
            reason: "not-relevant",
            detail: Some(detail),
            outranked_by: None,
        });
        self.trimmed.push(Trimmed {
            id: o.id.clone(),
            rank,
            tokens: cost,
        });
        false
    }

    /// What was kept and trimmed.
    pub fn report(self) -> Report {
        Report {
            max_tokens: self.max_tokens,
            used_tokens: self.used,
            kept: self.kept,
            trimmed: self.trimmed,
            tokenizer: TOKENIZER,
        }
    }
}

/// Keep the most relevant objects of a resolution whose estimated size fits
/// `max_tokens` (`r.included` is in relevance order), spending a [`Budget`].
pub fn fit(repo: &Repo, r: &mut Resolution, max_tokens: usize) -> Report {
    let mut budget = Budget::new(max_tokens);
    let mut kept = Vec::with_capacity(r.included.len());
    for s in std::mem::take(&mut r.included) {
        let cost = object_tokens(repo, &s);
        if budget.admit(&repo.objects[s.index], cost, &mut r.excluded) {
            kept.push(s);
        }
    }
    r.included = kept;
    r.excluded.sort_unstable();
    budget.report()
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
            withhold: Default::default(),
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
        // Structured content counts the characters of its compact JSON text,
        // escapes and non-ASCII included, without writing that text out.
        let controls: String = (0u8..0x20).map(char::from).collect();
        for v in [
            serde_json::json!({"name": "Zoë \"Ö\" 東京", "n": [1, 2.5, null, true]}),
            serde_json::json!([
                "tab\there",
                "line\nbreak",
                "\u{1F600}",
                "back\\slash",
                "\u{7f}"
            ]),
            serde_json::json!({"": [], "e": {}, "f": false, "big": 1e300, "neg": -0.5, "u": u64::MAX}),
            serde_json::json!({ controls.clone(): controls }),
            serde_json::json!([[[]], [{}], {"a": [null]}]),
        ] {
            assert_eq!(json_chars(&v), v.to_string().chars().count(), "{v}");
            assert_eq!(value_tokens(&v), v.to_string().chars().count().div_ceil(4));
        }
    }

    #[test]
    fn resolving_with_a_budget_equals_fitting_the_whole_resolution() {
        let (_dir, repo) = fixture();
        for max in [0, 50, 200, 100_000] {
            let mut whole = resolve(&repo, request("refund")).expect("resolves");
            let report = fit(&repo, &mut whole, max);
            let mut req = request("refund");
            req.max_tokens = Some(max);
            let spent = resolve(&repo, req).expect("resolves");
            assert_eq!(spent.budget.as_ref(), Some(&report), "max {max}");
            let ids =
                |r: &Resolution| -> Vec<usize> { r.included.iter().map(|s| s.index).collect() };
            assert_eq!(ids(&spent), ids(&whole), "max {max}");
            assert_eq!(spent.excluded, whole.excluded, "max {max}");
        }
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
