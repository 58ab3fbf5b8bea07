//! Detection of credentials committed as context. Only well-known, high-confidence
//! token shapes are matched, so a finding is worth stopping a commit for.
//! A finding never repeats the secret: it shows only its first characters.

use std::sync::OnceLock;

use regex::{Regex, RegexSet};

use crate::diag::{Code, Diagnostic};

const PATTERNS: [(&str, &str); 10] = [
    ("AWS access key id", r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b"),
    (
        "GitHub fine-grained token",
        r"\bgithub_pat_[A-Za-z0-9_]{60,}\b",
    ),
    ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    ("Stripe secret key", r"\b[sr]k_live_[A-Za-z0-9]{20,}\b"),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    (
        "private key block",
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----",
    ),
    ("OpenAI API key", r"\bsk-(?:proj-)?[A-Za-z0-9_-]{40,}\b"),
    ("Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{40,}\b"),
    ("age secret key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
];

fn compiled() -> &'static (RegexSet, Vec<Regex>) {
    static RE: OnceLock<(RegexSet, Vec<Regex>)> = OnceLock::new();
    RE.get_or_init(|| {
        let set = RegexSet::new(PATTERNS.iter().map(|(_, p)| *p)).expect("valid patterns");
        let each = PATTERNS
            .iter()
            .map(|(_, p)| Regex::new(p).expect("valid pattern"))
            .collect();
        (set, each)
    })
}

/// Scan a file's text; one finding per match.
pub fn scan(text: &str, file: &str, id: &str) -> Vec<Diagnostic> {
    let (set, each) = compiled();
    let hits = set.matches(text);
    if !hits.matched_any() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for i in hits.iter() {
        for m in each[i].find_iter(text) {
            let line = text[..m.start()].bytes().filter(|b| *b == b'\n').count() as u32 + 1;
            let shown: String = m.as_str().chars().take(6).collect();
            let mut d = Diagnostic::error(
                Code::SecretDetected,
                format!("a {} appears to be committed as context", PATTERNS[i].0),
            )
            .file(file)
            .line(line)
            .expected("no credentials in context (reference a secret manager instead)")
            .actual(format!(
                "{shown}… ({} characters, redacted)",
                m.as_str().len()
            ))
            .fix("remove the secret, rotate it, and reference it from a secret manager");
            if !id.is_empty() {
                d = d.id(id);
            }
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tokens_without_echoing_them() {
        let secret = "AKIAABCDEFGHIJKLMNOP";
        let text = format!("---\nid: a\n---\nkey: {secret}\n");
        let d = scan(&text, "a.md", "a");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].line, Some(4));
        let json = serde_json::to_string(&d[0]).unwrap();
        assert!(!json.contains(secret));
    }

    #[test]
    fn ordinary_text_is_clean() {
        assert!(scan(
            "Refunds within 30 days. Contact ops@example.com",
            "a.md",
            "a"
        )
        .is_empty());
    }
}
