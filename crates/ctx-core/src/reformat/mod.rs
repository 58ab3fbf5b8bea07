//! `ctx fmt`: rewrite object files into one canonical form without changing what
//! they mean. Canonical key order (see [`order`]), RFC 3339 timestamps (see
//! [`value::canonical_timestamp`]) and quotes around words YAML 1.1 readers take
//! as booleans. Comments and the Markdown body are kept byte for byte.
//!
//! Every rewrite is checked: the output is parsed again and must equal the
//! original document with only the intended value changes ([`value::normalize`]);
//! a file that fails the check is refused, never written.

pub mod order;
pub mod value;
mod yaml_text;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::frontmatter;
use crate::load::walk::{self, Member};
use crate::manifest::Manifest;
use crate::object::Format;

/// One kind of rewrite, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Top-level keys moved into canonical order.
    KeyOrder,
    /// An instant re-spelled as RFC 3339.
    Timestamp {
        field: String,
        from: String,
        to: String,
    },
    /// A YAML 1.1 boolean word put in quotes.
    Quoted { field: String, word: String },
    /// JSON re-indented (two spaces, one key per line, final newline).
    Layout,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::KeyOrder => f.write_str("key order"),
            Change::Timestamp { field, from, to } => write!(f, "`{field}` {from} → {to}"),
            Change::Quoted { field, word } => write!(f, "`{field}` quoted \"{word}\""),
            Change::Layout => f.write_str("layout"),
        }
    }
}

/// Why a file was not formatted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    /// 1-based position in the file, when known.
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub fix: Option<String>,
}

/// What formatting one text gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Unchanged,
    Changed {
        text: String,
        changes: Vec<Change>,
    },
    /// Left alone on purpose (e.g. an encrypted member), with the reason.
    Skipped(String),
}

fn parse_error(message: String, line: u32, column: u32, offset: u32) -> Refusal {
    let fix = if message.contains("mapping values are not allowed") {
        "a value containing `: ` must be quoted, e.g. title: \"Refunds: the policy\""
    } else if message.contains("tab") {
        "indent with spaces; YAML does not accept tabs as indentation"
    } else {
        "fix the syntax at the position shown; `ctx fmt` only rewrites files that parse"
    };
    Refusal {
        message: format!("cannot parse: {message}"),
        line: Some(line + offset),
        column: Some(column),
        fix: Some(fix.into()),
    }
}

/// Is this document a member of a private collection, stored encrypted?
fn sealed(doc: &Value) -> bool {
    doc.as_object()
        .is_some_and(crate::private::format::is_marked)
}

/// Format the YAML of one mapping document; `offset` is its first line in the file.
fn format_yaml(src: &str, offset: u32) -> std::result::Result<Outcome, Refusal> {
    let original =
        crate::yaml::parse(src).map_err(|e| parse_error(e.message, e.line, e.column, offset))?;
    if !original.is_object() {
        return Ok(Outcome::Skipped("not a mapping of fields".into()));
    }
    if sealed(&original) {
        return Ok(Outcome::Skipped(
            "encrypted member of a private collection (`ctx private edit` rewrites it)".into(),
        ));
    }
    if already_canonical(&original) {
        return Ok(Outcome::Unchanged);
    }
    let (text, changes) = yaml_text::format(src).map_err(|m| Refusal {
        message: format!("cannot parse: {m}"),
        line: None,
        column: None,
        fix: None,
    })?;
    if text == src {
        return Ok(Outcome::Unchanged);
    }
    let reparsed = crate::yaml::parse(&text).ok();
    if reparsed.as_ref() != Some(&value::normalize(&original)) {
        return Err(meaning_changed());
    }
    Ok(Outcome::Changed { text, changes })
}

/// Can the YAML text need no rewrite? True when the parsed document already has
/// canonical key order, canonical timestamps and no YAML 1.1 boolean word among
/// its strings: then none of the three rewrites applies, and the (much slower)
/// positional scan is skipped. A quoted `"no"` makes this false; the scan then
/// finds nothing to do.
fn already_canonical(doc: &Value) -> bool {
    fn has_bool_word(v: &Value) -> bool {
        match v {
            Value::String(s) => value::yaml11_bool_word(s),
            Value::Array(a) => a.iter().any(has_bool_word),
            Value::Object(m) => m.values().any(has_bool_word),
            _ => false,
        }
    }
    let Some(map) = doc.as_object() else {
        return false;
    };
    let keys: Vec<&String> = map.keys().collect();
    order::sorted_indices(&keys)
        .iter()
        .enumerate()
        .all(|(n, &i)| n == i)
        && value::normalize(doc) == *doc
        && !has_bool_word(doc)
}

fn meaning_changed() -> Refusal {
    Refusal {
        message: "formatting would change what the file means; left unchanged".into(),
        line: None,
        column: None,
        fix: Some("please report this file to the ctx maintainers; fix its layout by hand".into()),
    }
}

fn format_json(src: &str) -> std::result::Result<Outcome, Refusal> {
    let original =
        crate::json::parse(src).map_err(|e| parse_error(e.message, e.line, e.column, 0))?;
    let Some(map) = original.as_object() else {
        return Ok(Outcome::Skipped("not an object".into()));
    };
    if sealed(&original) {
        return Ok(Outcome::Skipped(
            "encrypted member of a private collection (`ctx private edit` rewrites it)".into(),
        ));
    }
    let normalized = value::normalize(&original);
    let out = order::canonical(normalized.as_object().expect("normalize keeps an object"));
    let mut text = serde_json::to_string_pretty(&out).expect("JSON values serialize");
    text.push('\n');
    if text == src {
        return Ok(Outcome::Unchanged);
    }
    let mut changes = Vec::new();
    if !map.keys().eq(out.keys()) {
        changes.push(Change::KeyOrder);
    }
    for (k, v) in &out {
        diff_instants(k, &original[k.as_str()], v, &mut changes);
    }
    if changes.is_empty() {
        changes.push(Change::Layout);
    }
    if crate::json::parse(&text).ok().as_ref() != Some(&normalized) {
        return Err(meaning_changed());
    }
    Ok(Outcome::Changed { text, changes })
}

/// Record the timestamp rewrites between `before` and `after` below `field`.
fn diff_instants(field: &str, before: &Value, after: &Value, out: &mut Vec<Change>) {
    match (before, after) {
        (Value::String(a), Value::String(b)) if a != b => out.push(Change::Timestamp {
            field: field.to_string(),
            from: a.clone(),
            to: b.clone(),
        }),
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff_instants(&format!("{field}[{i}]"), x, y, out);
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            for (k, x) in a {
                if let Some(y) = b.get(k) {
                    diff_instants(&format!("{field}.{k}"), x, y, out);
                }
            }
        }
        _ => {}
    }
}

fn format_markdown(src: &str) -> std::result::Result<Outcome, Refusal> {
    let split = frontmatter::split(src).map_err(|e| Refusal {
        message: e.message,
        line: Some(e.line),
        column: None,
        fix: Some("add the closing `---` line after the front matter".into()),
    })?;
    let Some(yaml) = split.yaml else {
        return Ok(Outcome::Unchanged);
    };
    let start = yaml.as_ptr() as usize - src.as_ptr() as usize;
    let end = start + yaml.len();
    match format_yaml(yaml, split.yaml_line - 1)? {
        Outcome::Changed { text, changes } => {
            let out = format!("{}{}{}", &src[..start], text, &src[end..]);
            // The body is never touched: prove it rather than trust the splice.
            let after = frontmatter::split(&out).map_err(|_| meaning_changed())?;
            if after.body != split.body {
                return Err(meaning_changed());
            }
            Ok(Outcome::Changed { text: out, changes })
        }
        other => Ok(other),
    }
}

/// Format the text of one object file. Pure: no I/O.
pub fn format_text(format: Format, src: &str) -> std::result::Result<Outcome, Refusal> {
    match format {
        Format::Markdown => format_markdown(src),
        Format::Yaml => format_yaml(src, 0),
        Format::Json => format_json(src),
    }
}

/// `ctx fmt` options.
#[derive(Debug, Clone, Default)]
pub struct FmtOptions {
    /// Limit to object files at or under these paths (absolute or relative to the
    /// manifest folder). Empty: every object file the manifest loads.
    pub paths: Vec<PathBuf>,
    /// Report what would change; write nothing.
    pub check: bool,
}

/// The result for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileResult {
    Unchanged,
    /// Rewritten (or, with `check`, would be).
    Reformatted(Vec<Change>),
    Skipped(String),
    Refused(Refusal),
}

#[derive(Debug, Clone)]
pub struct FileReport {
    /// Path relative to the manifest folder.
    pub file: String,
    pub result: FileResult,
}

/// What `ctx fmt` did, file by file, in path order.
#[derive(Debug, Clone, Default)]
pub struct FmtReport {
    pub files: Vec<FileReport>,
    /// Paths given that hold no object file of this repository.
    pub unmatched: Vec<PathBuf>,
}

impl FmtReport {
    pub fn reformatted(&self) -> usize {
        self.files
            .iter()
            .filter(|f| matches!(f.result, FileResult::Reformatted(_)))
            .count()
    }

    pub fn refused(&self) -> usize {
        self.files
            .iter()
            .filter(|f| matches!(f.result, FileResult::Refused(_)))
            .count()
    }
}

/// The requested paths as canonical absolute paths inside the repository.
fn requested(m: &Manifest, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    paths
        .iter()
        .map(|p| {
            let abs = if p.is_absolute() {
                p.clone()
            } else {
                m.root.join(p)
            };
            let real = abs
                .canonicalize()
                .map_err(|_| Error::NotFound(format!("{}: no such file or folder", p.display())))?;
            if !real.starts_with(&m.root) {
                return Err(Error::Usage(format!(
                    "{} is outside the repository at {}",
                    p.display(),
                    m.root.display()
                )));
            }
            Ok(real)
        })
        .collect()
}

/// The bytes a file had when read, and the text to replace them with.
type Rewrite = Option<(Vec<u8>, String)>;

fn format_member(m: &Member, keep_text: bool) -> (FileResult, Rewrite) {
    let meta = match std::fs::symlink_metadata(&m.abs) {
        Ok(meta) => meta,
        Err(e) => return (FileResult::Skipped(format!("cannot read: {e}")), None),
    };
    if meta.file_type().is_symlink() {
        return (
            FileResult::Skipped("a symbolic link: its target is formatted on its own".into()),
            None,
        );
    }
    if meta.len() > crate::load::DEFAULT_MAX_FILE_SIZE {
        return (
            FileResult::Skipped("over the 8 MiB object size limit".into()),
            None,
        );
    }
    let bytes = match std::fs::read(&m.abs) {
        Ok(b) => b,
        Err(e) => return (FileResult::Skipped(format!("cannot read: {e}")), None),
    };
    let Ok(src) = std::str::from_utf8(&bytes) else {
        return (
            FileResult::Refused(Refusal {
                message: "file is not valid UTF-8".into(),
                line: None,
                column: None,
                fix: Some("re-save the file as UTF-8".into()),
            }),
            None,
        );
    };
    let Some(format) = Format::from_path(&m.rel) else {
        return (FileResult::Unchanged, None);
    };
    match format_text(format, src) {
        Ok(Outcome::Unchanged) => (FileResult::Unchanged, None),
        Ok(Outcome::Skipped(why)) => (FileResult::Skipped(why), None),
        Ok(Outcome::Changed { text, changes }) => (
            FileResult::Reformatted(changes),
            keep_text.then_some((bytes, text)),
        ),
        Err(r) => (FileResult::Refused(r), None),
    }
}

/// Replace `path` with `text` atomically, keeping the file's permissions, unless
/// it changed since it was read (then nothing is written).
fn replace(path: &Path, read: &[u8], text: &str) -> std::io::Result<bool> {
    use crate::fs::{Mode, ReplaceError};
    match crate::fs::replace_if_unchanged(path, read, text.as_bytes(), Mode::Preserve) {
        Ok(()) => Ok(true),
        Err(ReplaceError::Changed) => Ok(false),
        Err(ReplaceError::Io(e)) => Err(e),
    }
}

/// Format every object file the manifest loads (or those under `opts.paths`).
/// Files are read and checked in parallel; writes happen under the repository's
/// write lock, one atomic replace per file.
pub fn run(m: &Manifest, opts: &FmtOptions) -> Result<FmtReport> {
    let wanted = requested(m, &opts.paths)?;
    let (members, _) = walk::members(m);
    let mut seen = vec![false; wanted.len()];
    let members: Vec<Member> = members
        .into_iter()
        .filter(|mem| {
            if wanted.is_empty() {
                return true;
            }
            let real = mem.abs.canonicalize().unwrap_or_else(|_| mem.abs.clone());
            let mut any = false;
            for (i, w) in wanted.iter().enumerate() {
                if real.starts_with(w) || mem.abs.starts_with(w) {
                    seen[i] = true;
                    any = true;
                }
            }
            any
        })
        .collect();
    let results: Vec<(FileResult, Rewrite)> = members
        .par_iter()
        .map(|m| format_member(m, !opts.check))
        .collect();
    let mut report = FmtReport {
        unmatched: opts
            .paths
            .iter()
            .zip(&seen)
            .filter(|(_, s)| !**s)
            .map(|(p, _)| p.clone())
            .collect(),
        ..FmtReport::default()
    };
    let _lock = if !opts.check && results.iter().any(|r| r.1.is_some()) {
        Some(crate::fs::RepoLock::acquire(&m.root).map_err(|e| Error::io(&m.root, &e))?)
    } else {
        None
    };
    // Each replace ends in an fsync; doing them in parallel overlaps that wait.
    let results: Vec<FileResult> = members
        .par_iter()
        .zip(results)
        .map(|(mem, (result, rewrite))| match rewrite {
            Some((read, text)) if !opts.check => match replace(&mem.abs, &read, &text) {
                Ok(true) => result,
                Ok(false) => FileResult::Skipped(
                    "changed on disk while formatting; run `ctx fmt` again".into(),
                ),
                Err(e) => FileResult::Refused(Refusal {
                    message: format!("cannot write the formatted file: {e}"),
                    line: None,
                    column: None,
                    fix: Some("check the file's and its folder's permissions".into()),
                }),
            },
            _ => result,
        })
        .collect();
    for (mem, result) in members.iter().zip(results) {
        report.files.push(FileReport {
            file: mem.rel.as_str().to_string(),
            result,
        });
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(format: Format, src: &str) -> String {
        match format_text(format, src).unwrap() {
            Outcome::Changed { text, .. } => text,
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[test]
    fn markdown_body_is_kept_byte_for_byte() {
        let src =
            "---\ntitle: T\nid: a\nupdated: 2026-08-01\n---\n\n# Body\n\ntitle: not yaml\n---\n";
        let out = changed(Format::Markdown, src);
        assert_eq!(
            out,
            "---\nid: a\ntitle: T\nupdated: 2026-08-01T00:00:00Z\n---\n\n# Body\n\ntitle: not yaml\n---\n"
        );
        assert_eq!(
            format_text(Format::Markdown, &out).unwrap(),
            Outcome::Unchanged
        );
    }

    #[test]
    fn json_objects() {
        let src = "{\"title\": \"T\", \"id\": \"a\", \"updated\": \"2026-08-01\", \"content\": {\"b\": 1, \"a\": [1.5, null]}}";
        let out = changed(Format::Json, src);
        assert_eq!(
            out,
            "{\n  \"id\": \"a\",\n  \"title\": \"T\",\n  \"updated\": \"2026-08-01T00:00:00Z\",\n  \"content\": {\n    \"b\": 1,\n    \"a\": [\n      1.5,\n      null\n    ]\n  }\n}\n"
        );
        assert_eq!(format_text(Format::Json, &out).unwrap(), Outcome::Unchanged);
    }

    #[test]
    fn unparsable_files_are_refused_with_a_hint() {
        let r = format_text(
            Format::Markdown,
            "---\nid: a\ntitle: Refunds: the policy\n---\n",
        )
        .unwrap_err();
        assert_eq!(r.line, Some(3));
        assert!(r.fix.unwrap().contains("must be quoted"));
    }

    #[test]
    fn bom_and_dot_fence_are_kept() {
        let src = "\u{feff}---\ntitle: T\nid: a\n...\nbody\n";
        assert_eq!(
            changed(Format::Markdown, src),
            "\u{feff}---\nid: a\ntitle: T\n...\nbody\n"
        );
        assert_eq!(
            format_text(Format::Markdown, "no front matter\n").unwrap(),
            Outcome::Unchanged
        );
    }

    #[test]
    fn encrypted_members_are_skipped() {
        let src = "---\nid: a\ntitle: T\nextensions:\n  ctx.private:\n    encrypted: true\n    recipients: [x]\n---\nbody\n";
        assert!(matches!(
            format_text(Format::Markdown, src).unwrap(),
            Outcome::Skipped(_)
        ));
    }
}
