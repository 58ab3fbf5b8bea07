//! One file's hidden characters as findings: one per line that holds any, at the
//! first one's column, naming the field, the code points and the fix.
//!
//! The file's text is scanned as written, so positions are exact. A structured
//! document can also carry them as escapes (`"\u200b"` in JSON, `"\U000E0041"` in
//! YAML): those are found at their backslash, and counted only when the parsed
//! values really hold such a character (a `\u200b` in a plain YAML scalar is
//! just text).

use serde_json::{Map, Value};

use super::{find, kind_of, notation, Kind};
use crate::diag::{Code, Diagnostic, Severity};
use crate::object::Supplied;
use crate::yaml::PathSeg;

/// The code of a hidden-character finding. OpenContext's diagnostic codes are
/// normative and closed (seed 003 §15), and `validate` must emit reports the
/// published diagnostic schema accepts: the text is not acceptable context, so
/// `schema-invalid`, told apart by its message, `field` and `actual` (`U+E0049 …`).
/// Its error level is what the output gate blocks.
pub const CODE: Code = Code::SchemaInvalid;

/// A finding per line, up to this many per file; the rest are summed up in one more.
const MAX_LINES: usize = 20;
/// Code points an `actual` lists before it only counts.
const LISTED: usize = 8;

/// Where the parts of one parsed file are.
pub struct Layout<'a> {
    /// The whole file as read.
    pub text: &'a str,
    /// Is `doc` JSON (else YAML)?
    pub json: bool,
    /// The structured part (front matter, or the whole YAML or JSON document), a slice of `text`.
    pub doc: Option<&'a str>,
    /// The line `doc` starts on.
    pub doc_line: u32,
    /// The Markdown body, a slice of `text`: the object's content.
    pub body: Option<&'a str>,
    /// The fields parsed from `doc` (and the body's content).
    pub fields: &'a Map<String, Value>,
    /// Fields the loader supplied, which `doc` does not hold.
    pub supplied: &'a Supplied,
}

#[derive(Debug, Clone, Copy)]
struct Located {
    at: usize,
    ch: char,
    kind: Kind,
    escaped: bool,
}

/// The findings for the hidden characters of one file (none for nearly every file,
/// at the cost of an ASCII check or a `memchr` pass).
pub fn findings(l: &Layout<'_>, file: &str, id: &str) -> Vec<Diagnostic> {
    // A byte-order mark opening the file is no character of its text.
    let bom = if l.text.starts_with('\u{FEFF}') { 3 } else { 0 };
    let mut hits: Vec<Located> = find(&l.text[bom..])
        .into_iter()
        .map(|h| Located {
            at: bom + h.at,
            ch: h.ch,
            kind: h.kind,
            escaped: false,
        })
        .collect();
    if let Some(doc) = l
        .doc
        .filter(|d| memchr::memchr(b'\\', d.as_bytes()).is_some())
    {
        hits.extend(escaped(l, doc));
    }
    if hits.is_empty() {
        return Vec::new();
    }
    hits.sort_by_key(|h| h.at);
    let mut keys: Option<Vec<(u32, String)>> = None;
    let mut out = Vec::new();
    let bytes = l.text.as_bytes();
    let (mut line, mut counted) = (1u32, 0usize);
    let mut i = 0;
    while i < hits.len() {
        let at = hits[i].at;
        line += memchr::memchr_iter(b'\n', &bytes[counted..at]).count() as u32;
        counted = at;
        let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |n| n + 1);
        let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n);
        let mut j = i;
        while j < hits.len() && hits[j].at < end {
            j += 1;
        }
        if out.len() == MAX_LINES {
            out.push(rest(&hits[i..], file, id, line));
            break;
        }
        let column = l.text[start..at].chars().count() as u32 + 1;
        let field = field_at(l, at, line, &mut keys);
        out.push(finding(
            &hits[i..j],
            field.as_deref(),
            file,
            id,
            line,
            column,
        ));
        i = j;
    }
    out
}

fn severity(hits: &[Located]) -> Severity {
    hits.iter()
        .map(|h| h.kind.severity())
        .max()
        .unwrap_or(Severity::Warning)
}

fn finding(
    hits: &[Located],
    field: Option<&str>,
    file: &str,
    id: &str,
    line: u32,
    column: u32,
) -> Diagnostic {
    let mut kinds: Vec<Kind> = hits.iter().map(|h| h.kind).collect();
    kinds.sort();
    kinds.dedup();
    let described: Vec<&str> = kinds.iter().map(|k| k.describe()).collect();
    let place = match field {
        Some(f) => format!("`{f}`"),
        None => "this line".into(),
    };
    let n = hits.len();
    let how = if hits.iter().any(|h| h.escaped) {
        ", written as escapes"
    } else {
        ""
    };
    let mut listed: Vec<String> = hits.iter().take(LISTED).map(|h| notation(h.ch)).collect();
    if n > LISTED {
        listed.push("…".into());
    }
    let sev = severity(hits);
    let mut d = Diagnostic::new(
        CODE,
        sev,
        format!(
            "{place} holds {n} invisible character{}{how}: {}",
            if n == 1 { "" } else { "s" },
            described.join(" and ")
        ),
    )
    .file(file)
    .at(line, column)
    .expected("text without invisible characters: what a reviewer reads is what an agent gets")
    .actual(format!(
        "{} ({n} character{})",
        listed.join(" "),
        if n == 1 { "" } else { "s" }
    ))
    .fix(fix(sev));
    if let Some(f) = field {
        d = d.field(f);
    }
    if !id.is_empty() {
        d = d.id(id);
    }
    d
}

/// One finding for the lines past [`MAX_LINES`].
fn rest(hits: &[Located], file: &str, id: &str, line: u32) -> Diagnostic {
    let sev = severity(hits);
    let mut d = Diagnostic::new(
        CODE,
        sev,
        format!(
            "{} more invisible characters from this line on (only the first {MAX_LINES} lines are listed)",
            hits.len()
        ),
    )
    .file(file)
    .line(line)
    .expected("text without invisible characters")
    .fix(fix(sev));
    if !id.is_empty() {
        d = d.id(id);
    }
    d
}

fn fix(sev: Severity) -> &'static str {
    match sev {
        Severity::Error => {
            "delete them (most editors do not show them; `perl -CSD -pi -e \
             's/[\\x{E0000}-\\x{E007F}\\x{202A}-\\x{202E}\\x{2066}-\\x{2069}]//g' FILE` removes tag \
             characters and bidirectional controls) and find out who added them: hidden text in \
             context is a prompt-injection attempt"
        }
        _ => {
            "delete them unless they are meant to be there (text pasted from web pages and word \
             processors often carries them; e.g. `perl -CSD -pi -e \
             's/[\\x{AD}\\x{200B}-\\x{200F}\\x{2060}-\\x{2064}]//g' FILE`)"
        }
    }
}

/// The field the character at `at` (on `line`) belongs to: the content for a
/// Markdown body, else the top-level key written last before that line.
fn field_at(
    l: &Layout<'_>,
    at: usize,
    line: u32,
    keys: &mut Option<Vec<(u32, String)>>,
) -> Option<String> {
    if l.body
        .is_some_and(|b| offset_in(l.text, b).is_some_and(|o| at >= o))
    {
        return Some("content".into());
    }
    let doc = l.doc?;
    let keys = keys.get_or_insert_with(|| key_lines(l, doc));
    keys.iter()
        .rev()
        .find(|(k, _)| *k <= line)
        .map(|(_, name)| name.clone())
}

/// The lines of the top-level keys `doc` holds, in order (error path only: each
/// costs a parse of the document).
fn key_lines(l: &Layout<'_>, doc: &str) -> Vec<(u32, String)> {
    // The YAML locator reads JSON too, but not JSON's surrogate pairs (`\udb40\udc41`,
    // the very escapes of a tag character): JSON keys are found by a scan of their own.
    let json = if l.json { json_keys(doc) } else { Vec::new() };
    let mut keys: Vec<(u32, String)> = l
        .fields
        .keys()
        // Supplied fields are not written; a body's content is not a key.
        .filter(|k| !(l.supplied.contains(k) || l.body.is_some() && *k == "content"))
        .filter_map(|k| {
            let line = match l.json {
                true => json.iter().find(|(_, name)| name == k)?.0,
                false => crate::yaml::locate(doc, &[PathSeg::Key(k)])?.0,
            };
            Some((line + l.doc_line - 1, k.clone()))
        })
        .collect();
    keys.sort();
    keys
}

/// The top-level keys of a JSON object text and the lines they are on.
fn json_keys(doc: &str) -> Vec<(u32, String)> {
    let b = doc.as_bytes();
    let (mut depth, mut line, mut i) = (0usize, 1u32, 0usize);
    let mut out = Vec::new();
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                let after = doc.get(i + 1..).unwrap_or("").trim_start();
                if depth == 1 && after.starts_with(':') {
                    if let Ok(k) = serde_json::from_str::<String>(&doc[start..=i.min(b.len() - 1)])
                    {
                        out.push((line, k));
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Byte offset of `inner` in `outer`, when it is a slice of it.
fn offset_in(outer: &str, inner: &str) -> Option<usize> {
    let o = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (o + inner.len() <= outer.len()).then_some(o)
}

/// Hidden characters `doc` writes as escapes, at their offsets in the file: only
/// those the parsed values hold (so that a backslash in a plain scalar, or an
/// escaped emoji joiner, is not one).
fn escaped(l: &Layout<'_>, doc: &str) -> Vec<Located> {
    let Some(base) = offset_in(l.text, doc) else {
        return Vec::new();
    };
    let written = escapes(doc);
    if written.is_empty() {
        return Vec::new();
    }
    let mut present = Vec::new();
    for (k, v) in l.fields {
        held(k, &mut present);
        walk(v, &mut present);
    }
    written
        .into_iter()
        .filter(|(_, c)| present.contains(c))
        .filter_map(|(at, ch)| {
            Some(Located {
                at: base + at,
                ch,
                kind: kind_of(ch)
                    .or_else(|| super::is_variation_selector(ch).then_some(Kind::VariationRun))?,
                escaped: true,
            })
        })
        .collect()
}

fn held(s: &str, present: &mut Vec<char>) {
    for h in find(s) {
        if !present.contains(&h.ch) {
            present.push(h.ch);
        }
    }
}

fn walk(v: &Value, present: &mut Vec<char>) {
    match v {
        Value::String(s) => held(s, present),
        Value::Array(a) => a.iter().for_each(|x| walk(x, present)),
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            held(k, present);
            walk(x, present);
        }),
        _ => {}
    }
}

/// `\uXXXX` (with JSON's surrogate pairs), `\UXXXXXXXX` and `\xXX` escapes of a
/// hidden character in `doc`, with their offsets. An escaped backslash escapes nothing.
fn escapes(doc: &str) -> Vec<(usize, char)> {
    let b = doc.as_bytes();
    let hex = |from: usize, n: usize| -> Option<u32> {
        let s = doc.get(from..from + n)?;
        s.bytes()
            .all(|c| c.is_ascii_hexdigit())
            .then(|| u32::from_str_radix(s, 16).ok())
            .flatten()
    };
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(n) = memchr::memchr(b'\\', &b[i..]) {
        let at = i + n;
        let (code, len) = match b.get(at + 1) {
            Some(b'u') => match hex(at + 2, 4) {
                Some(hi @ 0xD800..=0xDBFF) if doc.get(at + 6..at + 8) == Some("\\u") => {
                    match hex(at + 8, 4) {
                        Some(lo @ 0xDC00..=0xDFFF) => {
                            (Some(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)), 12)
                        }
                        _ => (None, 6),
                    }
                }
                c => (c, 6),
            },
            Some(b'U') => (hex(at + 2, 8), 10),
            Some(b'x') => (hex(at + 2, 2), 4),
            _ => (None, 2),
        };
        if let Some(c) = code.and_then(char::from_u32) {
            if kind_of(c).is_some() || super::is_variation_selector(c) {
                out.push((at, c));
            }
        }
        i = (at + if code.is_some() { len } else { 2 }).min(b.len());
    }
    out
}
