//! The on-disk format of an encrypted member (documented in docs/private.md).
//!
//! A clear header holds the governance fields needed to authorize and validate
//! without keys, plus the marker `extensions.ctx.private: {encrypted: true,
//! recipients: [...]}`. The ciphertext is one ASCII-armored age block whose
//! plaintext is the original file, byte for byte: the Markdown body for `.md`,
//! or `extensions.ctx.private.age` for `.yaml`/`.json`. There is no timestamp
//! and no MAC outside age itself, so unchanged plaintext keeps identical bytes.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::frontmatter;
use crate::object::Format;

use super::{strict, ParseError, SealError, EXTENSION};

pub const BEGIN: &str = "-----BEGIN AGE ENCRYPTED FILE-----";
pub const END: &str = "-----END AGE ENCRYPTED FILE-----";

/// Fields that always stay in clear when present: what authorization (permissions,
/// classification), lifecycle (dates, status), supersession and validation need.
pub const CLEAR_FIELDS: [&str; 16] = [
    "id",
    "type",
    "version",
    "classification",
    "owner",
    "authority",
    "trust",
    "status",
    "permissions",
    "created",
    "updated",
    "valid_from",
    "expires",
    "ttl",
    "supersedes",
    "superseded_by",
];

/// Fields kept in clear by default when present, because validation and `doctor` need
/// them in CI, where no key is available: provenance (`canonical_source`, `sources`,
/// for `provenance_required` and `require_digest`) and the review and approval
/// governance. Unlike [`CLEAR_FIELDS`], a file sealed before they were kept in clear
/// (with them only in the ciphertext) stays consistent.
pub const DEFAULT_CLEAR: [&str; 4] = ["canonical_source", "sources", "review", "approval"];

/// Is `s` (give or take surrounding whitespace) exactly one armored age block?
pub fn is_armor(s: &str) -> bool {
    let t = s.trim();
    t.starts_with(BEGIN) && t.ends_with(END) && t.len() > BEGIN.len() + END.len()
}

/// The armor as age expects it: trimmed, LF line endings, one final newline.
fn normalize_armor(s: &str) -> String {
    let mut a = s.trim().replace("\r\n", "\n");
    a.push('\n');
    a
}

fn marker(fields: &Map<String, Value>) -> Option<&Map<String, Value>> {
    fields.get("extensions")?.get(EXTENSION)?.as_object()
}

/// Does this document carry the "encrypted" marker?
pub fn is_marked(fields: &Map<String, Value>) -> bool {
    marker(fields).and_then(|m| m.get("encrypted")) == Some(&Value::Bool(true))
}

/// The recipients an encrypted file records (informational: age headers do not
/// reveal X25519 recipients, so this is what `status` and `rekey` compare).
pub fn marker_recipients(fields: &Map<String, Value>) -> Vec<String> {
    marker(fields)
        .and_then(|m| m.get("recipients"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Load time: if `fields` carry the marker, check the file whole (see
/// [`super::strict`]: only governance fields, the marker and one armored
/// block may be in clear; `text` is the whole file, for the comment check),
/// take the ciphertext out of the document (the Markdown body, or
/// `extensions.ctx.private.age`) and return it.
pub fn take_sealed(
    format: Format,
    fields: &mut Map<String, Value>,
    body: Option<&str>,
    text: &str,
) -> Result<Option<String>, SealError> {
    if !is_marked(fields) {
        return Ok(None);
    }
    if fields.contains_key("content") {
        return Err(SealError::ClearContent);
    }
    strict::check_header(fields, strict::header_yaml(format, text))?;
    let inline = fields
        .get_mut("extensions")
        .and_then(|e| e.get_mut(EXTENSION))
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("age"));
    let armor = match (format, inline, body) {
        (Format::Markdown, None, Some(b)) => {
            strict::check_armor(b).map_err(SealError::Body)?;
            b.to_string()
        }
        (Format::Markdown, None, None) => return Err(SealError::NoBody),
        (Format::Markdown, Some(_), _) => return Err(SealError::InlineInMarkdown),
        (_, Some(Value::String(a)), _) => {
            strict::check_armor(&a).map_err(SealError::Inline)?;
            a
        }
        (_, _, _) => return Err(SealError::NoInline),
    };
    Ok(Some(normalize_armor(&armor)))
}

/// A copy of `text` with every armored block blanked (newlines kept), so the
/// secret scanner does not read patterns into random base64.
pub fn mask_armor(text: &str) -> Cow<'_, str> {
    let Some(start) = text.find(BEGIN) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut from = start;
    loop {
        out.push_str(&rest[..from]);
        let after = &rest[from..];
        let end = after
            .find(END)
            .map(|e| e + END.len())
            .unwrap_or(after.len());
        out.extend(
            after[..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        rest = &after[end..];
        match rest.find(BEGIN) {
            Some(s) => from = s,
            None => {
                out.push_str(rest);
                return Cow::Owned(out);
            }
        }
    }
}

/// A file split into the fields its author wrote and (Markdown) its body.
#[derive(Debug, Clone)]
pub struct Doc {
    pub fields: Map<String, Value>,
    pub body: Option<String>,
}

/// Parse a file's text as written (no defaults applied). Errors carry the line.
pub fn parse_doc(format: Format, text: &str) -> Result<Doc, ParseError> {
    let at = |line: u32, message: String| ParseError { line, message };
    let (structured, line, body) = match format {
        Format::Markdown => {
            let s = frontmatter::split(text).map_err(|e| at(e.line, e.message))?;
            (s.yaml, s.yaml_line, Some(s.body.to_string()))
        }
        _ => (Some(text), 1, None),
    };
    let value = match (format, structured) {
        (_, None) => Value::Object(Map::new()),
        (Format::Json, Some(d)) => {
            crate::json::parse(d).map_err(|e| at(e.line + line - 1, e.message))?
        }
        (_, Some(d)) => crate::yaml::parse(d).map_err(|e| at(e.line + line - 1, e.message))?,
    };
    let fields = match value {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => return Err(at(line, "expected a mapping of fields".into())),
    };
    Ok(Doc { fields, body })
}

/// [`parse_doc`] for plaintext: errors keep their line and what was wrong,
/// never the text (quoted spans of parser messages are elided), so a
/// message about a private document can be printed or logged safely.
pub fn parse_plain(format: Format, text: &str) -> Result<Doc, ParseError> {
    parse_doc(format, text).map_err(|e| ParseError {
        line: e.line,
        message: content_free(&e.message),
    })
}

/// A message with every `` `quoted` `` or `"quoted"` span replaced by `…`:
/// parser and schema messages quote the offending text, which in a
/// private document is plaintext.
pub fn content_free(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find(['`', '"']) {
        let q = &rest[i..i + 1];
        out.push_str(&rest[..i]);
        match rest[i + 1..].find(q) {
            Some(j) => {
                out.push_str(q);
                out.push('…');
                out.push_str(q);
                rest = &rest[i + 1 + j + 1..];
            }
            None => {
                // An unbalanced quote: drop what follows it.
                out.push_str(q);
                out.push('…');
                return out;
            }
        }
    }
    out.push_str(rest);
    out
}

/// An encrypted file, as read back for no-churn comparison and rekeying.
#[derive(Debug, Clone)]
pub struct Sealed {
    /// The clear header as written, marker removed.
    pub header: Map<String, Value>,
    pub recipients: Vec<String>,
    pub armor: String,
}

/// Read an encrypted file; `Ok(None)` when the file is not marked encrypted.
pub fn parse_sealed(format: Format, text: &str) -> Result<Option<Sealed>, SealError> {
    let mut doc = parse_plain(format, text)?;
    let recipients = marker_recipients(&doc.fields);
    let Some(armor) = take_sealed(format, &mut doc.fields, doc.body.as_deref(), text)? else {
        return Ok(None);
    };
    strip_marker(&mut doc.fields);
    Ok(Some(Sealed {
        header: doc.fields,
        recipients,
        armor,
    }))
}

/// Remove the marker (and an `extensions` left empty by that) from a field map.
pub fn strip_marker(fields: &mut Map<String, Value>) {
    if let Some(Value::Object(ext)) = fields.get_mut("extensions") {
        ext.remove(EXTENSION);
        if ext.is_empty() {
            fields.remove("extensions");
        }
    }
}

/// The clear part of a plaintext document: its clear fields as authored, in order.
pub fn clear_header(plain: &Map<String, Value>, extra: &[String]) -> Map<String, Value> {
    plain
        .iter()
        .filter(|(k, _)| {
            CLEAR_FIELDS.contains(&k.as_str())
                || DEFAULT_CLEAR.contains(&k.as_str())
                || extra.iter().any(|e| e == *k)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The text of an encrypted file: `header` plus the marker, and the armor.
pub fn render(
    format: Format,
    header: &Map<String, Value>,
    recipients: &[String],
    armor: &str,
) -> String {
    let mut doc = header.clone();
    let mut mark = Map::new();
    mark.insert("encrypted".into(), Value::Bool(true));
    mark.insert(
        "recipients".into(),
        Value::Array(recipients.iter().cloned().map(Value::String).collect()),
    );
    if format != Format::Markdown {
        mark.insert("age".into(), Value::String(normalize_armor(armor)));
    }
    let mut ext = Map::new();
    ext.insert(EXTENSION.into(), Value::Object(mark));
    doc.insert("extensions".into(), Value::Object(ext));
    match format {
        Format::Json => {
            let mut s =
                serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON values serialize");
            s.push('\n');
            s
        }
        Format::Yaml => yaml_text(&doc),
        Format::Markdown => format!("---\n{}---\n{}", yaml_text(&doc), normalize_armor(armor)),
    }
}

/// Block YAML for a header, checked by parsing it back; JSON (valid YAML) otherwise.
fn yaml_text(map: &Map<String, Value>) -> String {
    let mut out = String::new();
    emit_map(&mut out, map, 0);
    let expect = Value::Object(map.clone());
    if crate::yaml::parse(&out).ok().as_ref() == Some(&expect) {
        out
    } else {
        let mut s = serde_json::to_string_pretty(&expect).expect("JSON values serialize");
        s.push('\n');
        s
    }
}

/// A scalar as plain YAML when it reads back as the same string, else JSON-quoted.
fn scalar(s: &str) -> String {
    // YAML 1.1 readers take these for booleans or null: quote them for other tools.
    const AMBIGUOUS: [&str; 11] = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "",
    ];
    let plain = !AMBIGUOUS.contains(&s.to_ascii_lowercase().as_str())
        && !s.contains(['\n', '\r', '\t', '"', '\''])
        && s.trim() == s
        && crate::yaml::parse(&format!("k: {s}\n")).ok() == Some(serde_json::json!({ "k": s }));
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("string")
    }
}

fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    {
        k.to_string()
    } else {
        serde_json::to_string(k).expect("string")
    }
}

fn emit_value(out: &mut String, v: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            emit_map(out, m, indent + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            for item in a {
                match item {
                    Value::String(s) => out.push_str(&format!("{pad}  - {}\n", scalar(s))),
                    Value::Object(_) | Value::Array(_) => {
                        out.push_str(&format!("{pad}  - {item}\n"))
                    }
                    other => out.push_str(&format!("{pad}  - {other}\n")),
                }
            }
        }
        Value::Object(_) => out.push_str(" {}\n"),
        Value::Array(_) => out.push_str(" []\n"),
        Value::String(s)
            if s.contains('\n')
                && s.ends_with('\n')
                && !s.contains(['\r', '\t'])
                && !s.starts_with([' ', '\n'])
                && s.lines().all(|l| l.trim_end() == l)
                && !s.ends_with("\n\n") =>
        {
            out.push_str(" |\n");
            for line in s.lines() {
                if !line.is_empty() {
                    out.push_str(&format!("{pad}  {line}"));
                }
                out.push('\n');
            }
        }
        Value::String(s) => out.push_str(&format!(" {}\n", scalar(s))),
        other => out.push_str(&format!(" {other}\n")),
    }
}

fn emit_map(out: &mut String, m: &Map<String, Value>, indent: usize) {
    let pad = " ".repeat(indent);
    for (k, v) in m {
        out.push_str(&format!("{pad}{}:", key(k)));
        emit_value(out, v, indent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ARMOR: &str = "-----BEGIN AGE ENCRYPTED FILE-----\nYWdlLWVuY3J5cHRpb24ub3JnL3YxCg==\n-----END AGE ENCRYPTED FILE-----\n";

    fn header() -> Map<String, Value> {
        json!({
            "id": "vault.passport",
            "type": "fact",
            "classification": "restricted",
            "version": 2,
            "updated": "2026-01-01T00:00:00Z",
            "owner": "no",
            "permissions": {"read": ["owner", "assistant"]},
            "supersedes": ["vault.passport@1"]
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn render_and_read_back_every_format() {
        let recipients =
            vec!["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p".to_string()];
        for format in [Format::Markdown, Format::Yaml, Format::Json] {
            let text = render(format, &header(), &recipients, ARMOR);
            let sealed = parse_sealed(format, &text).unwrap().expect("marked");
            assert_eq!(sealed.header, header(), "{text}");
            assert_eq!(sealed.recipients, recipients);
            assert_eq!(sealed.armor, ARMOR);
            // Rendering is a pure function of its inputs: no churn.
            assert_eq!(
                render(format, &sealed.header, &sealed.recipients, &sealed.armor),
                text
            );
        }
    }

    #[test]
    fn markdown_layout_is_readable() {
        let text = render(
            Format::Markdown,
            &header(),
            &["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p".into()],
            ARMOR,
        );
        assert!(
            text.starts_with("---\nid: vault.passport\ntype: fact\n"),
            "{text}"
        );
        assert!(text.contains("owner: \"no\"\n"), "{text}");
        assert!(
            text.contains("  ctx.private:\n    encrypted: true\n"),
            "{text}"
        );
        assert!(text.ends_with(&format!("---\n{ARMOR}")), "{text}");
    }

    #[test]
    fn clear_header_keeps_governance_only() {
        let plain = json!({"id": "a", "title": "Secret title", "tags": ["x"], "classification": "restricted", "content": "body"});
        let h = clear_header(plain.as_object().unwrap(), &[]);
        assert_eq!(
            Value::Object(h),
            json!({"id": "a", "classification": "restricted"})
        );
        let h = clear_header(plain.as_object().unwrap(), &["title".into()]);
        assert!(h.contains_key("title") && !h.contains_key("content"));
    }

    #[test]
    fn provenance_and_review_stay_in_clear_by_default() {
        let plain = json!({"id": "a", "title": "T", "canonical_source": true, "sources": [{"uri": "https://x.test"}], "review": {"interval": "90d"}, "approval": {"required": true}, "references": ["b"]});
        let h = clear_header(plain.as_object().unwrap(), &[]);
        let kept: Vec<&str> = h.keys().map(String::as_str).collect();
        assert_eq!(
            kept,
            ["id", "canonical_source", "sources", "review", "approval"]
        );
    }

    #[test]
    fn take_sealed_errors() {
        let mut f = json!({"extensions": {"ctx.private": {"encrypted": true}}})
            .as_object()
            .unwrap()
            .clone();
        assert!(
            take_sealed(Format::Markdown, &mut f, Some("plain text"), "")
                .unwrap_err()
                .to_string()
                .contains("BEGIN AGE")
        );
        assert!(take_sealed(Format::Yaml, &mut f, None, "")
            .unwrap_err()
            .to_string()
            .contains(".age"));
        let mut f = json!({"id": "x"}).as_object().unwrap().clone();
        assert_eq!(
            take_sealed(Format::Markdown, &mut f, Some(ARMOR), "").unwrap(),
            None
        );
    }

    #[test]
    fn plaintext_errors_keep_the_line_not_the_text() {
        assert_eq!(
            content_free("line 5: duplicate key `X7`, then \"X8\" and `open"),
            "line 5: duplicate key `…`, then \"…\" and `…"
        );
        let e = parse_plain(Format::Markdown, "---\nX7: a\nX7: b\n---\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("line 3:") && !e.contains("X7"), "{e}");
    }

    #[test]
    fn crlf_armor_is_normalized() {
        let mut f = json!({"extensions": {"ctx.private": {"encrypted": true}}})
            .as_object()
            .unwrap()
            .clone();
        let crlf = ARMOR.replace('\n', "\r\n");
        assert_eq!(
            take_sealed(Format::Markdown, &mut f, Some(&crlf), "")
                .unwrap()
                .unwrap(),
            ARMOR
        );
    }

    #[test]
    fn masking_keeps_lines() {
        let text = format!("a: 1\n{ARMOR}tail AKIA\n");
        let masked = mask_armor(&text);
        assert_eq!(masked.lines().count(), text.lines().count());
        assert!(!masked.contains("YWdl") && masked.contains("tail AKIA"));
    }
}
