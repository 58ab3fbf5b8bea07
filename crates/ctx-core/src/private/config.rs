//! `extensions.ctx.private` in the manifest: which collections are private, and the
//! recipients each one is encrypted to. Living under a namespaced extension keeps the
//! manifest a valid OpenContext document.
//!
//! ```yaml
//! extensions:
//!   ctx.private:
//!     groups:                         # optional named recipient sets, e.g. one per role
//!       finance: ["age1…"]
//!     collections:
//!       vault:                        # must be declared under `collections:`
//!         recipients: ["age1…", "ssh-ed25519 AAAA… alice@laptop"]
//!         recipients_file: ./keys/vault.txt
//!         groups: [finance]
//!         clear: [title]              # optional: more fields kept in clear
//! ```

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::diag::{Code, Diagnostic};
use crate::manifest::Manifest;
use crate::schema::PathItem;

use super::{RecipientError, EXTENSION};

/// A public key that files are encrypted to.
#[derive(Clone, Debug)]
pub enum Recipient {
    X25519(age::x25519::Recipient),
    Ssh(age::ssh::Recipient),
}

impl Recipient {
    /// Parse one recipient: `age1…`, or an SSH public key line
    /// (`ssh-ed25519 AAAA… [comment]`, `ssh-rsa AAAA… [comment]`). Returns the comment too.
    pub fn parse(text: &str) -> Result<(Recipient, Option<String>), RecipientError> {
        let text = text.trim();
        if let Some(rest) = text.strip_prefix("age1") {
            if rest.starts_with("pq1") || text.len() > 62 {
                return Err(RecipientError::Unsupported);
            }
            return text
                .parse::<age::x25519::Recipient>()
                .map(|r| (Recipient::X25519(r), None))
                .map_err(|e| RecipientError::BadAge(e.to_string()));
        }
        if text.starts_with("ssh-") {
            let mut parts = text.split_whitespace();
            let (kind, key) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let comment: Vec<&str> = parts.collect();
            let r = format!("{kind} {key}")
                .parse::<age::ssh::Recipient>()
                .map_err(|e| RecipientError::BadSsh(format!("{e:?}")))?;
            let comment = (!comment.is_empty()).then(|| comment.join(" "));
            return Ok((Recipient::Ssh(r), comment));
        }
        Err(RecipientError::Unknown)
    }

    /// The normalized key text (SSH comments dropped): what files record.
    pub fn key(&self) -> String {
        match self {
            Recipient::X25519(r) => r.to_string(),
            Recipient::Ssh(r) => r.to_string(),
        }
    }

    pub fn as_dyn(&self) -> &dyn age::Recipient {
        match self {
            Recipient::X25519(r) => r,
            Recipient::Ssh(r) => r,
        }
    }
}

/// A short, recognisable form of a normalized key: age keys in full, SSH keys by
/// their OpenSSH SHA256 fingerprint (what `ssh-keygen -l` prints).
pub fn short(key: &str) -> String {
    use base64::Engine as _;
    let mut parts = key.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some(kind), Some(b64)) if kind.starts_with("ssh-") => {
            match base64::engine::general_purpose::STANDARD.decode(b64) {
                Ok(blob) => format!(
                    "{kind} SHA256:{}",
                    base64::engine::general_purpose::STANDARD_NO_PAD.encode(Sha256::digest(&blob))
                ),
                Err(_) => key.to_string(),
            }
        }
        _ => key.to_string(),
    }
}

/// One recipient as declared, with where it was declared (for `ctx private status`).
#[derive(Clone, Debug)]
pub struct RecipientEntry {
    pub recipient: Recipient,
    /// Normalized key text.
    pub key: String,
    pub comment: Option<String>,
    /// `recipients[0]`, `keys/vault.txt:3`, `group finance`, …
    pub source: String,
}

/// The keys of one private collection.
#[derive(Clone, Debug, Default)]
pub struct CollectionKeys {
    pub name: String,
    /// Sorted by key, duplicates removed.
    pub recipients: Vec<RecipientEntry>,
    /// Fields kept in clear in addition to [`super::format::CLEAR_FIELDS`].
    pub clear: Vec<String>,
}

impl CollectionKeys {
    /// The sorted normalized keys: what a current file records in its marker.
    pub fn keys(&self) -> Vec<String> {
        self.recipients.iter().map(|r| r.key.clone()).collect()
    }
}

/// The whole `ctx.private` configuration.
#[derive(Clone, Debug, Default)]
pub struct PrivateConfig {
    pub collections: BTreeMap<String, CollectionKeys>,
}

/// Fields a collection may add to the clear header with `clear:` (never content).
pub const CLEARABLE: [&str; 17] = [
    "layer",
    "title",
    "summary",
    "content_type",
    "durability",
    "tags",
    "applies_to",
    "language",
    "references",
    "depends_on",
    "conflicts_with",
    "sources",
    "canonical_source",
    "confidence",
    "review",
    "approval",
    "redact",
];

struct Ctx<'a> {
    m: &'a Manifest,
    diags: Vec<Diagnostic>,
}

impl Ctx<'_> {
    fn problem(&mut self, path: &[&str], message: String, actual: Option<Value>, fix: &str) {
        let mut items = vec![
            PathItem::Key("extensions".into()),
            PathItem::Key(EXTENSION.into()),
        ];
        let mut field = format!("extensions.{EXTENSION}");
        for p in path {
            match p.strip_prefix('#').and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => {
                    items.push(PathItem::Index(n));
                    field.push_str(&format!("[{n}]"));
                }
                None => {
                    items.push(PathItem::Key((*p).into()));
                    field.push('.');
                    field.push_str(p);
                }
            }
        }
        let mut d = Diagnostic::error(Code::ManifestInvalid, message)
            .file(self.m.file.clone())
            .field(field)
            .fix(fix);
        if let Some(a) = actual {
            d = d.actual(a);
        }
        if let Some((l, c)) = self.m.locate(&items) {
            d = d.at(l, c);
        }
        self.diags.push(d);
    }

    /// Recipients from a `recipients:` list and a `recipients_file:`.
    fn recipients(&mut self, spec: &Value, path: &[&str], out: &mut Vec<RecipientEntry>) {
        if let Some(list) = spec.get("recipients") {
            let mut p = path.to_vec();
            p.push("recipients");
            match list.as_array() {
                Some(items) => {
                    for (n, item) in items.iter().enumerate() {
                        let idx = format!("#{n}");
                        let mut at = p.clone();
                        at.push(&idx);
                        match item.as_str().map(Recipient::parse) {
                            Some(Ok((recipient, comment))) => out.push(RecipientEntry {
                                key: recipient.key(),
                                recipient,
                                comment,
                                source: format!("recipients[{n}]"),
                            }),
                            Some(Err(e)) => self.problem(&at, format!("recipient {n}: {e}"), Some(item.clone()), "write an age public key (`age-keygen -y identity.txt` prints it) or an SSH public key line"),
                            None => self.problem(&at, "a recipient must be a string".into(), Some(item.clone()), "write the public key as a quoted string"),
                        }
                    }
                }
                None => self.problem(
                    &p,
                    "`recipients` must be a list of public keys".into(),
                    Some(list.clone()),
                    "write `recipients: [\"age1…\"]`",
                ),
            }
        }
        let files: Vec<&Value> = match spec.get("recipients_file") {
            None => Vec::new(),
            Some(Value::Array(a)) => a.iter().collect(),
            Some(v) => vec![v],
        };
        for f in files {
            let mut p = path.to_vec();
            p.push("recipients_file");
            let Some(rel) = f.as_str() else {
                self.problem(
                    &p,
                    "`recipients_file` must be a path".into(),
                    Some(f.clone()),
                    "write a path relative to the manifest, e.g. ./keys/vault.txt",
                );
                continue;
            };
            match read_recipients_file(self.m, rel) {
                Ok(lines) => {
                    for (line_no, text) in lines {
                        match Recipient::parse(&text) {
                            Ok((recipient, comment)) => out.push(RecipientEntry {
                                key: recipient.key(),
                                recipient,
                                comment,
                                source: format!("{}:{line_no}", rel.trim_start_matches("./")),
                            }),
                            Err(e) => self.problem(&p, format!("{rel} line {line_no}: {e}"), Some(Value::from(text)), "fix or remove that line (one public key per line; `#` starts a comment)"),
                        }
                    }
                }
                Err(e) => self.problem(
                    &p,
                    e.to_string(),
                    Some(f.clone()),
                    "create the file inside the repository, or correct the path",
                ),
            }
        }
    }
}

/// Non-empty, non-comment lines of a recipients file inside the repository, numbered.
fn read_recipients_file(m: &Manifest, rel: &str) -> Result<Vec<(usize, String)>, RecipientError> {
    let clean = rel.trim_start_matches("./");
    let path = std::path::Path::new(clean);
    if path.is_absolute()
        || path
            .components()
            .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(RecipientError::FileOutside(rel.to_string()));
    }
    let abs = m.root.join(clean);
    if !crate::fs::confine::resolves_inside(&m.root, &abs) {
        return Err(RecipientError::FileMissing(rel.to_string()));
    }
    let text = crate::fs::read_regular(&abs, 1 << 20)
        .map_err(|e| RecipientError::FileUnreadable {
            rel: rel.to_string(),
            why: e.to_string(),
        })
        .and_then(|b| {
            String::from_utf8(b).map_err(|_| RecipientError::FileNotText(rel.to_string()))
        })?;
    Ok(text
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.trim().to_string()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect())
}

impl PrivateConfig {
    /// Read `extensions.ctx.private`; problems come back as `manifest-invalid` findings.
    pub fn from_manifest(m: &Manifest) -> (PrivateConfig, Vec<Diagnostic>) {
        let mut cfg = PrivateConfig::default();
        let mut cx = Ctx {
            m,
            diags: Vec::new(),
        };
        let Some(ext) = m.extension(EXTENSION) else {
            return (cfg, cx.diags);
        };
        let Some(ext) = ext.as_object() else {
            cx.problem(
                &[],
                "`ctx.private` must be a mapping".into(),
                Some(ext.clone()),
                "write `ctx.private: { collections: { <name>: { recipients: [...] } } }`",
            );
            return (cfg, cx.diags);
        };
        for key in ext.keys() {
            if key != "collections" && key != "groups" {
                cx.problem(
                    &[key],
                    format!("unknown key `{key}` in ctx.private"),
                    Some(Value::from(key.as_str())),
                    "use `collections` and `groups`",
                );
            }
        }
        let mut groups: BTreeMap<String, Vec<RecipientEntry>> = BTreeMap::new();
        if let Some(g) = ext.get("groups") {
            match g.as_object() {
                Some(map) => {
                    for (name, spec) in map {
                        let mut list = Vec::new();
                        let spec = match spec {
                            Value::Array(_) => serde_json::json!({ "recipients": spec }),
                            other => other.clone(),
                        };
                        cx.recipients(&spec, &["groups", name], &mut list);
                        groups.insert(name.clone(), list);
                    }
                }
                None => cx.problem(
                    &["groups"],
                    "`groups` must map a group name to its recipients".into(),
                    Some(g.clone()),
                    "write `groups: { finance: [\"age1…\"] }`",
                ),
            }
        }
        let Some(cols) = ext.get("collections").and_then(Value::as_object) else {
            if let Some(v) = ext.get("collections") {
                cx.problem(
                    &["collections"],
                    "`collections` must map collection names to their recipients".into(),
                    Some(v.clone()),
                    "write `collections: { vault: { recipients: [...] } }`",
                );
            }
            return (cfg, cx.diags);
        };
        for (name, spec) in cols {
            let at = ["collections", name.as_str()];
            if !m.collections.iter().any(|c| &c.name == name) {
                cx.problem(&at, format!("`{name}` is not a collection declared under `collections:`"), Some(Value::from(name.as_str())), "declare the collection (e.g. `collections: { vault: ./private/vault/** }`) or correct the name");
                continue;
            }
            if !spec.is_object() {
                cx.problem(
                    &at,
                    format!("private collection `{name}` must be a mapping"),
                    Some(spec.clone()),
                    "write `{ recipients: [\"age1…\"] }`",
                );
                continue;
            }
            for key in spec.as_object().into_iter().flat_map(|o| o.keys()) {
                if !["recipients", "recipients_file", "groups", "clear"].contains(&key.as_str()) {
                    cx.problem(
                        &[at[0], at[1], key],
                        format!("unknown key `{key}` for private collection `{name}`"),
                        Some(Value::from(key.as_str())),
                        "use recipients, recipients_file, groups or clear",
                    );
                }
            }
            let mut list = Vec::new();
            cx.recipients(spec, &at, &mut list);
            for g in spec
                .get("groups")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match g.as_str().and_then(|g| groups.get(g).map(|l| (g, l))) {
                    Some((gname, members)) => list.extend(members.iter().cloned().map(|mut r| {
                        r.source = format!("group {gname} ({})", r.source);
                        r
                    })),
                    None => cx.problem(
                        &[at[0], at[1], "groups"],
                        format!("group {g} is not defined under ctx.private.groups"),
                        Some(g.clone()),
                        "define the group, or correct its name",
                    ),
                }
            }
            let mut clear = Vec::new();
            for f in spec
                .get("clear")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match f.as_str() {
                    Some(s) if CLEARABLE.contains(&s) => clear.push(s.to_string()),
                    _ => cx.problem(
                        &[at[0], at[1], "clear"],
                        format!("`{f}` cannot be kept in clear"),
                        Some(f.clone()),
                        &format!("choose from: {}", CLEARABLE.join(", ")),
                    ),
                }
            }
            list.sort_by(|a, b| a.key.cmp(&b.key));
            list.dedup_by(|a, b| a.key == b.key);
            if list.is_empty() {
                cx.problem(&at, format!("private collection `{name}` has no recipients: nobody could decrypt it"), None, "add `recipients: [\"age1…\"]` (your public key: `age-keygen -y ~/.config/ctx/age/identity.txt`)");
            }
            cfg.collections.insert(
                name.clone(),
                CollectionKeys {
                    name: name.clone(),
                    recipients: list,
                    clear,
                },
            );
        }
        (cfg, cx.diags)
    }

    /// The keys of a private collection, if `name` is one.
    pub fn collection(&self, name: &str) -> Option<&CollectionKeys> {
        self.collections.get(name)
    }

    pub fn is_empty(&self) -> bool {
        self.collections.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: &str = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p";
    const SSH: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHsKLqeplhpW+uObz5dvMgjz1OxfM/XXUB+VHtZ6isGN alice@rust";

    #[test]
    fn parses_age_and_ssh_recipients() {
        let (r, c) = Recipient::parse(ALICE).unwrap();
        assert_eq!(r.key(), ALICE);
        assert_eq!(c, None);
        let (r, c) = Recipient::parse(SSH).unwrap();
        assert!(r.key().starts_with("ssh-ed25519 AAAA"));
        assert!(!r.key().contains("alice@rust"));
        assert_eq!(c.as_deref(), Some("alice@rust"));
        assert!(short(&r.key()).starts_with("ssh-ed25519 SHA256:"));
        assert_eq!(short(ALICE), ALICE);
    }

    #[test]
    fn rejects_bad_recipients() {
        assert!(Recipient::parse("age1notakey").is_err());
        assert!(Recipient::parse("AGE-SECRET-KEY-1XYZ").is_err());
        assert!(Recipient::parse("ssh-ed25519 AAAAnope").is_err());
        assert!(Recipient::parse("age1pq1abc")
            .unwrap_err()
            .to_string()
            .contains("post-quantum"));
    }
}
