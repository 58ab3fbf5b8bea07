//! A parse cache for `validate --staged` (the pre-commit hook). Parsing is a pure
//! function of a file's bytes, its path, the collection that loads it, the defaults
//! and the ctx build; git has already hashed every staged file's bytes (its blob
//! id), so a commit that touches three files parses three files.
//!
//! One line per entry, `<key>\t<meta JSON>\t<doc JSON>`, in the git directory.
//! New entries are appended; the file is rewritten when most lines are dead. A
//! header line names the ctx build (executable size and time) and the embedded
//! schemas: anything else means the whole cache is ignored. Entries keep what
//! validation needs — metadata, the document without content, and the file's
//! findings — never the content.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use rayon::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::diag::{Code, Diagnostic, Severity};
use crate::load::parse::Parsed;
use crate::load::walk::{Member, MemberSource};
use crate::object::{ContextObject, Format, Origin};

use super::entry::{CachedMeta, Entry};

const FORMAT: &str = "ctx-parse-cache-v2";

/// Keys the loader may record as supplied (the `&'static str`s a cached object needs back).
const SUPPLIABLE: [&str; 12] = [
    "id",
    "type",
    "layer",
    "authority",
    "classification",
    "durability",
    "trust",
    "owner",
    "ttl",
    "sources",
    "canonical_source",
    "content",
];

/// What the cache file must have been written by.
fn salt() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| {
            let t = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            format!("{}:{t}", m.len())
        })
        .unwrap_or_default();
    let mut h = Sha256::new();
    for k in crate::schema::Kind::ALL {
        h.update(k.text().as_bytes());
    }
    format!(
        "{FORMAT} {} {exe} {}",
        env!("CARGO_PKG_VERSION"),
        hex::encode(&h.finalize()[..8])
    )
}

/// The cache key of one member with blob id `oid` under `defaults` (already serialised).
pub fn key(oid: &str, m: &Member, defaults: &str) -> String {
    let mut h = Sha256::new();
    for part in [oid, m.rel.as_str(), defaults] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    match &m.source {
        MemberSource::Entry { key } => h.update(format!("entry\0{key}")),
        MemberSource::Collection { name, base } => h.update(format!("collection\0{name}\0{base}")),
    }
    hex::encode(&h.finalize()[..16])
}

/// The loaded cache and what to add to it.
pub struct Cache {
    path: PathBuf,
    /// The file as read; `lines` maps a key to the byte range of its entry.
    text: String,
    lines: HashMap<String, (usize, usize)>,
    total_lines: usize,
    salt: String,
    fresh: Vec<(String, String)>,
}

impl Cache {
    /// Read the cache at `path` (missing, unreadable or foreign files give an empty cache).
    pub fn open(path: PathBuf) -> Cache {
        let salt = salt();
        let mut c = Cache {
            path,
            text: String::new(),
            lines: HashMap::new(),
            total_lines: 0,
            salt,
            fresh: Vec::new(),
        };
        let Ok(text) = std::fs::read_to_string(&c.path) else {
            return c;
        };
        let Some((header, _)) = text.split_once('\n') else {
            return c;
        };
        if header != c.salt {
            return c;
        }
        let mut at = header.len() + 1;
        let mut lines = HashMap::new();
        let mut total = 0;
        for line in text[at..].split('\n') {
            let start = at;
            at += line.len() + 1;
            if line.is_empty() {
                continue;
            }
            total += 1;
            if let Some(tab) = line.find('\t') {
                lines.insert(
                    line[..tab].to_string(),
                    (start + tab + 1, start + line.len()),
                );
            }
        }
        c.text = text;
        c.lines = lines;
        c.total_lines = total;
        c
    }

    fn line(&self, key: &str) -> Option<&str> {
        self.lines.get(key).map(|&(a, b)| &self.text[a..b])
    }

    /// Rebuild cached results for `wanted` keys, in parallel; misses are None.
    pub fn get_many(&self, wanted: &[(String, &Member)]) -> Vec<Option<Parsed>> {
        wanted
            .par_iter()
            .map(|(k, m)| self.line(k).and_then(|l| decode(l, m)))
            .collect()
    }

    /// Remember a fresh result.
    pub fn put(&mut self, key: String, p: &Parsed) {
        if let Some(line) = encode(p) {
            self.fresh.push((key, line));
        }
    }

    /// Persist: append fresh entries, or rewrite when most lines would be dead.
    pub fn save(self, live: &[String]) -> std::io::Result<()> {
        if self.fresh.is_empty() {
            return Ok(());
        }
        let compact =
            self.lines.is_empty() || self.total_lines + self.fresh.len() > 2 * live.len() + 64;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        // One writer at a time, so concurrent hooks never interleave lines.
        let _lock = crate::fs::lock_file(
            &self.path.with_extension("lock"),
            crate::fs::Mode::RepositoryDefault,
        )?;
        if compact {
            let fresh: HashMap<&str, &str> = self
                .fresh
                .iter()
                .map(|(k, l)| (k.as_str(), l.as_str()))
                .collect();
            let mut out = String::with_capacity(self.text.len() + fresh.len() * 800);
            out.push_str(&self.salt);
            out.push('\n');
            for k in live {
                if let Some(l) = fresh.get(k.as_str()).copied().or_else(|| self.line(k)) {
                    out.push_str(k);
                    out.push('\t');
                    out.push_str(l);
                    out.push('\n');
                }
            }
            return crate::fs::write_atomic(
                &self.path,
                out.as_bytes(),
                crate::fs::Mode::Preserve,
                crate::fs::Existing::Replace,
            );
        }
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.path)?;
        let mut out = String::new();
        for (k, l) in &self.fresh {
            out.push_str(k);
            out.push('\t');
            out.push_str(l);
            out.push('\n');
        }
        f.write_all(out.as_bytes())
    }
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Markdown => "md",
        Format::Yaml => "yaml",
        Format::Json => "json",
    }
}

fn encode(p: &Parsed) -> Option<String> {
    let diags = p
        .diags
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    let (entry, doc) = match &p.object {
        None => (
            Entry {
                id: None,
                version: None,
                supplied: Vec::new(),
                format: String::new(),
                collection: None,
                line: 0,
                meta: None,
                diags,
            },
            "-".to_string(),
        ),
        Some(o) => (
            Entry {
                id: Some(o.id.clone()),
                version: o.version,
                supplied: o.supplied.iter().map(|s| s.to_string()).collect(),
                format: format_name(o.origin.format).into(),
                collection: o.origin.collection.clone(),
                line: o.origin.line,
                meta: Some(CachedMeta::of(&o.meta)),
                diags,
            },
            o.doc.to_string(),
        ),
    };
    // Tabs and newlines never occur in compact JSON outside strings, where they are escaped.
    Some(format!("{}\t{doc}", serde_json::to_string(&entry).ok()?))
}

fn diag_from(v: &Value) -> Option<Diagnostic> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let mut d = Diagnostic::new(
        Code::parse(v.get("code")?.as_str()?)?,
        Severity::parse(v.get("severity")?.as_str()?)?,
        s("message")?,
    );
    d.id = s("id");
    d.ids = v
        .get("ids")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    d.file = s("file");
    d.line = v.get("line").and_then(Value::as_u64).map(|n| n as u32);
    d.column = v.get("column").and_then(Value::as_u64).map(|n| n as u32);
    d.field = s("field");
    d.expected = v.get("expected").cloned();
    d.actual = v.get("actual").cloned();
    d.remediation = s("remediation");
    Some(d)
}

fn decode(line: &str, m: &Member) -> Option<Parsed> {
    let (entry, doc) = line.split_once('\t')?;
    let e: Entry = serde_json::from_str(entry).ok()?;
    let diags = e.diags.iter().map(diag_from).collect::<Option<Vec<_>>>()?;
    if doc == "-" {
        return Some(Parsed {
            object: None,
            diags,
        });
    }
    let supplied = e
        .supplied
        .iter()
        .map(|name| SUPPLIABLE.iter().copied().find(|s| s == name))
        .collect::<Option<Vec<&'static str>>>()?;
    let format = match e.format.as_str() {
        "md" => Format::Markdown,
        "yaml" => Format::Yaml,
        "json" => Format::Json,
        _ => return None,
    };
    Some(Parsed {
        object: Some(ContextObject {
            id: e.id?,
            version: e.version,
            doc: doc.into(),
            content: None,
            supplied,
            origin: Origin {
                file: m.rel.to_string(),
                format,
                collection: e.collection,
                line: e.line,
            },
            meta: e.meta?.meta()?,
        }),
        diags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse::{self, Defaults};
    use serde_json::Map;

    /// A cached object must be indistinguishable, for validation, from a fresh parse.
    #[test]
    fn decoded_entries_match_fresh_parses() {
        let defaults: Map<String, Value> =
            serde_json::from_str(r#"{"owner": "team", "type": "policy"}"#).unwrap();
        let manifest_defaults = Map::new();
        let cases: [(&str, &str); 6] = [
            ("context/p/a.md", "---\nid: p.a\nversion: 2\nsupersedes: [p.a@1]\nsources:\n  - uri: https://x.example/a\n---\n\nBody with AKIAABCDEFGHIJKLMNOP\n"),
            ("context/p/b.md", "No front matter at all.\n"),
            ("context/p/c.yaml", "id: p.c\ntype: note\nconfidence: 0.7\nexpires: 2026-12-31T23:59:59.123Z\nvalid_from: 2026-01-01T00:00:00+02:00\nupdated: 2026-02-03T04:05:06Z\nttl: 2w\nstatus: draft\ncanonical_source: true\npermissions:\n  read: [a]\n  deny: [b]\nconflicts_with: [p.a]\n"),
            ("context/p/d.json", "{\"id\": \"p.d\", \"type\": \"x\", \"expires\": null, \"ttl\": \"30d\"}"),
            ("context/p/e.md", "---\nid: p.e\n  bad: [indent\n---\nx\n"),
            ("context/p/f.md", "---\nid: p.f\nauthority: canonical\ntrust: untrusted\n---\nx\n"),
        ];
        for (rel, text) in cases {
            let m = Member {
                rel: crate::fs::RelPath::parse(rel).unwrap(),
                abs: PathBuf::from("/nonexistent").join(rel),
                source: MemberSource::Collection {
                    name: "p".into(),
                    base: "context/p".into(),
                },
            };
            let fresh = parse::parse(
                &m,
                text.as_bytes(),
                &Defaults {
                    collection: Some(&defaults),
                    manifest: &manifest_defaults,
                },
            );
            let line = encode(&fresh).expect("encodes");
            assert!(!line.contains('\n'), "{rel}: one line");
            let back = decode(&line, &m).expect("decodes");
            assert_eq!(
                format!("{:?}", back.diags),
                format!("{:?}", fresh.diags),
                "{rel}"
            );
            let strip = |o: &Option<ContextObject>| {
                o.clone().map(|mut o| {
                    o.content = None;
                    format!("{o:?}")
                })
            };
            assert_eq!(strip(&back.object), strip(&fresh.object), "{rel}");
        }
    }

    #[test]
    fn keys_depend_on_everything_parsing_depends_on() {
        let m = |rel: &str, name: &str| Member {
            rel: crate::fs::RelPath::parse(rel).unwrap(),
            abs: PathBuf::new(),
            source: MemberSource::Collection {
                name: name.into(),
                base: "c".into(),
            },
        };
        let k = key("abc", &m("c/a.md", "x"), "{}");
        assert_ne!(k, key("abd", &m("c/a.md", "x"), "{}"));
        assert_ne!(k, key("abc", &m("c/b.md", "x"), "{}"));
        assert_ne!(k, key("abc", &m("c/a.md", "y"), "{}"));
        assert_ne!(k, key("abc", &m("c/a.md", "x"), "{\"owner\":\"t\"}"));
        assert_eq!(k, key("abc", &m("c/a.md", "x"), "{}"));
    }
}
