//! Detection of credentials committed as context (spec §8.8: secrets are never
//! stored in OpenContext). Two kinds of evidence:
//!
//! - **token shapes**: well-known, high-confidence formats (cloud keys, JWTs,
//!   private key blocks) found anywhere in the text;
//! - **credential assignments**: a key named like a credential (`password:`,
//!   `DB_PASSWD=`, `db.password:`, `"client_secret": …`) given a literal value.
//!   Only values that look like a real secret count: placeholders (`<password>`,
//!   `${VAR}`, `changeme`, `***`), references to a secret manager
//!   (`vault://…`, `env:X`), booleans, and prose (a value with spaces) do not.
//!
//! Clean files (nearly all) cost two scans that regex runs with literal
//! prefilters: the token shapes as one `RegexSet`, and a cheap "credential word
//! followed by `:` or `=`" pattern. Only the lines that pattern finds are parsed
//! as assignments. (One set holding both patterns loses the prefilter and is
//! some 40 times slower.) A finding never repeats the secret: it shows only its
//! first characters.

use std::sync::OnceLock;

use regex::{Regex, RegexSet};

use crate::diag::{Code, Diagnostic};

const TOKENS: [(&str, &str); 11] = [
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
    // A signed JSON Web Token: base64url header and payload that both open with
    // `{"` (`eyJ`), and a signature. Unsigned tokens (`alg: none`) carry no secret.
    (
        "JSON Web Token",
        r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,}",
    ),
];

/// Where an assignment may be: a credential word right before `:` or `=`. Every
/// key [`ASSIGNMENT`] accepts ends with one of these words.
const CANDIDATE: &str = r#"(?i)(?:pass(?:word|wd|phrase)|pwd|secret|key|token)["']?[ \t]*[:=]"#;

/// A key named like a credential, at the start of a line (YAML, `.env`, INI,
/// properties, a list item, a quoted JSON key) or after `{` / `,` (inline JSON),
/// assigned with `:` or `=`. Group 1 is the key, group 2 the rest of the line.
/// The key may be dotted or prefixed (`db.password`, `DB_PASSWORD`, `clientSecret`).
const ASSIGNMENT: &str = r#"(?im)(?:^[ \t]*(?:[-*>][ \t]+)?(?:export[ \t]+)?|[{,][ \t]*)["']?([a-z0-9_.-]*(?:password|passwd|passphrase|pwd|secret|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|bearer[_-]?token|token))["']?[ \t]*[:=][ \t]*([^\r\n]*)"#;

struct Compiled {
    /// Every token shape.
    set: RegexSet,
    tokens: Vec<Regex>,
    candidate: Regex,
    assignment: Regex,
}

fn compiled() -> &'static Compiled {
    static RE: OnceLock<Compiled> = OnceLock::new();
    RE.get_or_init(|| Compiled {
        set: RegexSet::new(TOKENS.iter().map(|(_, p)| *p)).expect("valid patterns"),
        tokens: TOKENS
            .iter()
            .map(|(_, p)| Regex::new(p).expect("valid pattern"))
            .collect(),
        candidate: Regex::new(CANDIDATE).expect("valid pattern"),
        assignment: Regex::new(ASSIGNMENT).expect("valid pattern"),
    })
}

fn line_of(text: &str, offset: usize) -> u32 {
    text[..offset].bytes().filter(|b| *b == b'\n').count() as u32 + 1
}

fn finding(what: &str, file: &str, id: &str, line: u32, matched: &str) -> Diagnostic {
    let shown: String = matched.chars().take(6).collect();
    let mut d = Diagnostic::error(
        Code::SecretDetected,
        format!("{what} appears to be committed as context"),
    )
    .file(file)
    .line(line)
    .expected("no credentials in context (reference a secret manager instead)")
    .actual(format!(
        "{shown}… ({} characters, redacted)",
        matched.chars().count()
    ))
    .fix("remove the secret, rotate it, and reference it from a secret manager");
    if !id.is_empty() {
        d = d.id(id);
    }
    d
}

/// Scan a file's text; one finding per match.
pub fn scan(text: &str, file: &str, id: &str) -> Vec<Diagnostic> {
    let c = compiled();
    let mut out = Vec::new();
    // Lines that already hold a token shape: an assignment of that token is the same finding.
    let mut token_lines = Vec::new();
    let hits = c.set.matches(text);
    for i in hits.iter() {
        for m in c.tokens[i].find_iter(text) {
            let line = line_of(text, m.start());
            token_lines.push(line);
            out.push(finding(
                &format!("a {}", TOKENS[i].0),
                file,
                id,
                line,
                m.as_str(),
            ));
        }
    }
    let mut last_line = usize::MAX;
    for m in c.candidate.find_iter(text) {
        let start = text[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        if start == last_line {
            continue;
        }
        last_line = start;
        let end = text[m.end()..]
            .find('\n')
            .map_or(text.len(), |i| m.end() + i);
        let number = line_of(text, start);
        if token_lines.contains(&number) {
            continue;
        }
        for caps in c.assignment.captures_iter(&text[start..end]) {
            let (Some(key), Some(rest)) = (caps.get(1), caps.get(2)) else {
                continue;
            };
            let Some(value) = literal_value(rest.as_str()) else {
                continue;
            };
            if credential_key(key.as_str()) && looks_secret(value) {
                out.push(finding(
                    &format!("a value for the credential key `{}`", key.as_str()),
                    file,
                    id,
                    number,
                    value,
                ));
            }
        }
    }
    out
}

/// Is the key's last word a credential name? `db.password`, `DB_PASSWD`,
/// `clientSecret` and `api-key` are; `password_policy`, `tokens`, `max_tokens`
/// and `secretary` are not (the regex anchors the name at the key's end).
fn credential_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    // `pwd` and `token` alone are common words in other senses (a shell's working
    // folder; a unit of text); require them whole or after a separator.
    for weak in ["pwd", "token"] {
        if let Some(head) = lower.strip_suffix(weak) {
            return head.is_empty()
                || head.ends_with(['_', '-', '.'])
                || key[..head.len()]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_ascii_lowercase())
                    && key[head.len()..].starts_with(|c: char| c.is_ascii_uppercase());
        }
    }
    true
}

/// The literal value of an assignment's right-hand side: unquoted, without a
/// trailing comma or comment. None for anything that is not one bare token
/// (an empty value, a nested mapping, a block scalar, prose with spaces).
fn literal_value(rest: &str) -> Option<&str> {
    let rest = rest.trim();
    let (value, quoted) = match rest.chars().next()? {
        q @ ('"' | '\'') => {
            let inner = &rest[1..];
            let end = inner.find(q)?;
            (&inner[..end], true)
        }
        _ => {
            let v = rest.split(" #").next().unwrap_or(rest).trim_end();
            (v.trim_end_matches([',', ';']), false)
        }
    };
    if value.is_empty() || value.contains(char::is_whitespace) {
        return None;
    }
    if !quoted && value.starts_with(['{', '[', '|', '>', '&', '*', '!']) {
        return None; // a structure, block scalar, anchor, alias or tag
    }
    Some(value)
}

/// Words that stand in for a value rather than being one.
const PLACEHOLDERS: [&str; 24] = [
    "changeme",
    "change-me",
    "change_me",
    "changeit",
    "example",
    "password",
    "passwd",
    "secret",
    "redacted",
    "placeholder",
    "dummy",
    "sample",
    "fixme",
    "todo",
    "tbd",
    "none",
    "null",
    "nil",
    "true",
    "false",
    "yes",
    "no",
    "required",
    "optional",
];

/// Does a literal value look like a real credential rather than a stand-in?
fn looks_secret(v: &str) -> bool {
    if v.chars().count() < 6 {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    let env_var = |rest: &str| {
        rest.starts_with('{') || rest.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
    };
    let templated = (v.starts_with('<') && v.ends_with('>'))
        || (v.starts_with('%') && v.ends_with('%'))
        || v.strip_prefix('$').is_some_and(env_var)
        || v.contains("${")
        || v.contains("{{")
        || v.contains("://") // a reference: vault://…, op://…, https://…
        || v.starts_with(['/', '~', '.']) // a path
        || ["env:", "vault:", "arn:", "process.env", "os.environ"]
            .iter()
            .any(|p| lower.starts_with(p));
    if templated {
        return false;
    }
    let first = v.chars().next().unwrap_or(' ');
    if v.chars().all(|c| c == first) || v.chars().all(|c| "*xX.•-_#".contains(c)) {
        return false; // `******`, `xxxxxx`, `......`
    }
    let word = lower.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let stand_in = [
        "your", "my", "some", "example", "insert", "enter", "replace",
    ]
    .iter()
    .any(|p| {
        word.strip_prefix(p)
            .is_some_and(|rest| rest.starts_with(['-', '_']))
    });
    if PLACEHOLDERS.contains(&word) || stand_in {
        return false;
    }
    // Real credentials mix character classes, or are long random strings; a single
    // word of one class (`internal`, `rotation`) is prose or a label.
    let classes = [
        v.chars().any(|c| c.is_ascii_lowercase()),
        v.chars().any(|c| c.is_ascii_uppercase()),
        v.chars().any(|c| c.is_ascii_digit()),
        v.chars().any(|c| !c.is_ascii_alphanumeric()),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    classes >= 2 || v.len() >= 20
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> usize {
        scan(text, "a.md", "a").len()
    }

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

    #[test]
    fn finds_jwts() {
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let d = scan(
            &format!("Use this header:\n\n    Bearer {jwt}\n"),
            "a.md",
            "a",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("JSON Web Token"));
        assert_eq!(d[0].line, Some(3));
        assert!(!serde_json::to_string(&d[0]).unwrap().contains(jwt));
        // Not a JWT: an unsigned token, and base64 that does not open with `{"`.
        assert_eq!(found("eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0."), 0);
        assert_eq!(
            found("aGVsbG8gd29ybGQ.aGVsbG8gd29ybGQ.aGVsbG8gd29ybGQgYWdhaW4"),
            0
        );
    }

    #[test]
    fn finds_credential_assignments() {
        for text in [
            "password: hunter2x",
            "passwd=Tr0ub4dor&3",
            "secret: 'k9#mQ2!vX'",
            "DB_PASSWORD=s3cr3t-Value",
            "export API_KEY=a8f5f167f44f4964e6c998dee827110c",
            "  - client_secret: Zm9vYmFyYmF6cXV4",
            "{\"user\": \"ops\", \"password\": \"p4ssW0rd!\"}",
            "db.password: hunter2x",
            "clientSecret: 8dk2jf93Kd",
            "auth_token = 9f8e7d6c5b4a39281706",
        ] {
            let d = scan(text, "a.yaml", "a");
            assert_eq!(d.len(), 1, "{text}: {d:?}");
            assert!(d[0].message.contains("credential key"), "{text}");
        }
        // Nested YAML: the key is `password` under `db`.
        let d = scan(
            "db:\n  host: db.internal\n  password: hunter2x\n",
            "a.yaml",
            "a",
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].line, Some(3));
        assert!(!serde_json::to_string(&d[0]).unwrap().contains("hunter2x"));
    }

    #[test]
    fn placeholders_references_and_prose_are_not_secrets() {
        for text in [
            "password: <password>",
            "password: ${DB_PASSWORD}",
            "password: $DB_PASSWORD",
            "password: \"{{ vault_db_password }}\"",
            "password: changeme",
            "password: '********'",
            "password: xxxxxxxx",
            "password: your-password-here",
            "password: vault://kv/prod/db#password",
            "password: env:DB_PASSWORD",
            "password:",
            "password: null",
            "password: ~",
            "secret: true",
            "secret:\n  name: db",
            "password: |\n  multi",
            "Reset your password: open Settings, then Security.",
            "password: must be at least 12 characters long",
            "The secret: patience.",
            "password_policy: Strong-8",
            "max_tokens: 4096",
            "tokens: 12000",
            "secretary: Jane-Doe1",
            "pwd: /home/ops",
            "classification: secret",
            "secret: internal",
            "password: hunter",
        ] {
            assert_eq!(
                found(text),
                0,
                "false positive on {text:?}: {:?}",
                scan(text, "a", "a")
            );
        }
    }

    #[test]
    fn a_token_in_an_assignment_is_one_finding() {
        let text = "api_key: AKIAABCDEFGHIJKLMNOP\n";
        let d = scan(text, "a.yaml", "a");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("AWS"));
    }
}
