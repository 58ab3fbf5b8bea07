//! Adding a public key to the manifest's `ctx.keys` block *textually*:
//! comments, order, quoting and blank lines of the rest of the manifest stay
//! byte-for-byte as the user wrote them. The edited text is parsed again and
//! must equal the old document plus exactly the new entry before it is
//! written (atomically, keeping the file's permissions).
use std::path::Path;

use serde_json::{Map, Value};

use super::{KeyError, EXTENSION};
use crate::error::{Error, Result};
use crate::signing::PublicKey;

/// The outcome of a declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declared {
    /// New manifest text containing the entry.
    Changed(String),
    /// The same key is already declared under this id; nothing to write.
    AlreadyDeclared,
}

/// Add `id: { ed25519: <key> }` under `extensions: ctx.keys:` in the
/// manifest text. Refuses an id already declared with a different key.
pub fn declare_text(text: &str, is_json: bool, id: &str, key: &PublicKey) -> Result<Declared> {
    let old = parse(text, is_json)?;
    if let Some(existing) = old
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .and_then(|k| k.get(id))
    {
        return match PublicKey::from_manifest_entry(existing) {
            Ok(k) if k == *key => Ok(Declared::AlreadyDeclared),
            _ => Err(KeyError::DeclaredDifferently { id: id.to_string() }.into()),
        };
    }
    let mut expected = old.clone();
    insert_entry(&mut expected, id, key)
        .map_err(|shape| KeyError::ManifestUnparsable(shape.to_string()))?;
    let new_text = if is_json {
        // JSON has no comments to keep; re-serialise in the original key order.
        let mut s = serde_json::to_string_pretty(&expected).expect("JSON value");
        s.push('\n');
        s
    } else {
        edit_yaml(text, id, &key.to_base64()).map_err(|why| KeyError::CannotDeclare {
            why: why.to_string(),
            id: id.to_string(),
            public: key.to_base64(),
        })?
    };
    let reparsed = parse(&new_text, is_json)
        .map_err(|e| KeyError::EditMismatch(format!("the edited manifest does not parse ({e})")))?;
    if reparsed != expected {
        return Err(KeyError::EditMismatch(
            "the edited manifest would change more than the new key".into(),
        )
        .into());
    }
    Ok(Declared::Changed(new_text))
}

fn parse(text: &str, is_json: bool) -> std::result::Result<Value, KeyError> {
    let why = if is_json {
        crate::json::parse(text).map_err(|e| format!("{}:{}: {}", e.line, e.column, e.message))
    } else {
        crate::yaml::parse(text).map_err(|e| e.to_string())
    };
    why.map_err(KeyError::ManifestUnparsable)
}

fn insert_entry(doc: &mut Value, id: &str, key: &PublicKey) -> std::result::Result<(), Shape> {
    let not_mapping = |what: &str| Shape::NotMapping(what.to_string());
    let root = doc
        .as_object_mut()
        .ok_or_else(|| not_mapping("the manifest"))?;
    let ext = root
        .entry("extensions")
        .or_insert_with(|| Value::Object(Map::new()));
    if ext.is_null() {
        *ext = Value::Object(Map::new());
    }
    let ext = ext
        .as_object_mut()
        .ok_or_else(|| not_mapping("`extensions`"))?;
    let keys = ext
        .entry(EXTENSION)
        .or_insert_with(|| Value::Object(Map::new()));
    if keys.is_null() {
        *keys = Value::Object(Map::new());
    }
    keys.as_object_mut()
        .ok_or_else(|| not_mapping(&format!("`extensions.{EXTENSION}`")))?
        .insert(id.to_string(), key.to_manifest_entry());
    Ok(())
}

/// Why the manifest's shape keeps ctx from editing it in place.
#[derive(Debug, thiserror::Error)]
enum Shape {
    #[error("{0} is not a mapping")]
    NotMapping(String),
    #[error("the manifest is a flow mapping, not a block mapping")]
    FlowManifest,
    #[error(
        "`{what}` is written in flow style (`{value}`); only block style can be edited in place"
    )]
    Flow { what: String, value: String },
}

/// One line of the manifest with its terminator kept separately.
struct Line<'a> {
    body: &'a str,
    indent: usize,
    /// Neither blank nor a comment.
    content: bool,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    text.split_inclusive('\n')
        .map(|raw| {
            let body = raw.trim_end_matches(['\n', '\r']);
            let trimmed = body.trim_start_matches(' ');
            Line {
                body,
                indent: body.len() - trimmed.len(),
                content: !trimmed.is_empty() && !trimmed.starts_with('#'),
            }
        })
        .collect()
}

/// If `body` (already de-indented) is the mapping key `key`, the text after
/// its colon with any trailing comment removed.
fn key_value<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    let quoted = [key.to_string(), format!("\"{key}\""), format!("'{key}'")];
    let rest = quoted.iter().find_map(|k| body.strip_prefix(k.as_str()))?;
    let rest = rest.trim_start_matches(' ').strip_prefix(':')?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let rest = rest.trim();
    if rest.starts_with('#') {
        return Some("");
    }
    Some(match rest.find(" #") {
        Some(i) => rest[..i].trim_end(),
        None => rest,
    })
}

/// A key's child block: its content lines' indentation and the index of
/// its last content line (the key line itself when empty).
struct Block {
    child_indent: Option<usize>,
    last: usize,
}

/// The child block of the key at `key_line` (with indentation `indent`).
fn block(ls: &[Line<'_>], key_line: usize, indent: usize) -> Block {
    let mut child_indent = None;
    let mut last = key_line;
    for (i, l) in ls.iter().enumerate().skip(key_line + 1) {
        if !l.content {
            continue;
        }
        if l.indent <= indent {
            break;
        }
        child_indent.get_or_insert(l.indent);
        last = i;
    }
    Block { child_indent, last }
}

/// Find a key among the direct children (at `indent`) of the lines in `range`.
fn find_key(
    ls: &[Line<'_>],
    range: std::ops::Range<usize>,
    indent: usize,
    key: &str,
) -> Option<(usize, String)> {
    range.into_iter().find_map(|i| {
        let l = &ls[i];
        if !l.content || l.indent != indent {
            return None;
        }
        key_value(&l.body[indent..], key).map(|v| (i, v.to_string()))
    })
}

/// The text edit: insert the entry lines after line `after` (or replace an
/// empty flow mapping `{}` on the key line itself).
fn edit_yaml(text: &str, id: &str, b64: &str) -> std::result::Result<String, Shape> {
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let ls = lines(text);
    let entry = |indent: usize, step: usize| {
        format!(
            "{}{id}:{nl}{}ed25519: \"{b64}\"{nl}",
            " ".repeat(indent),
            " ".repeat(indent + step)
        )
    };
    let flow_error = |what: &str, v: &str| Shape::Flow {
        what: what.to_string(),
        value: v.to_string(),
    };
    if text.trim_start().starts_with('{') {
        return Err(Shape::FlowManifest);
    }
    let Some((ext_line, ext_val)) = find_key(&ls, 0..ls.len(), 0, "extensions") else {
        // No extensions block: append one.
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(nl);
        }
        out.push_str(&format!("extensions:{nl}  {EXTENSION}:{nl}"));
        out.push_str(&entry(4, 2));
        return Ok(out);
    };
    let ext = block(&ls, ext_line, 0);
    match (ext_val.as_str(), ext.child_indent) {
        ("" | "{}" | "null" | "~", None) => {
            let mut add = format!("extensions:{nl}  {EXTENSION}:{nl}");
            add.push_str(&entry(4, 2));
            return Ok(replace_line(text, &ls, ext_line, &add));
        }
        ("", Some(_)) => {}
        (v, _) => return Err(flow_error("extensions", v)),
    }
    let ci = ext.child_indent.expect("checked");
    let Some((keys_line, keys_val)) = find_key(&ls, ext_line + 1..ext.last + 1, ci, EXTENSION)
    else {
        let add = format!("{}{EXTENSION}:{nl}{}", " ".repeat(ci), entry(ci * 2, ci));
        return Ok(insert_after(text, ext.last, &add, nl));
    };
    let keys = block(&ls, keys_line, ci);
    match (keys_val.as_str(), keys.child_indent) {
        ("" | "{}" | "null" | "~", None) => {
            let add = format!("{}{EXTENSION}:{nl}{}", " ".repeat(ci), entry(ci * 2, ci));
            Ok(replace_line(text, &ls, keys_line, &add))
        }
        ("", Some(ki)) => Ok(insert_after(text, keys.last, &entry(ki, ki - ci), nl)),
        (v, _) => Err(flow_error(&format!("extensions.{EXTENSION}"), v)),
    }
}

/// Byte offset where line `i` starts.
fn offset(text: &str, i: usize) -> usize {
    text.split_inclusive('\n').take(i).map(str::len).sum()
}

fn insert_after(text: &str, i: usize, add: &str, nl: &str) -> String {
    let at = offset(text, i + 1);
    let mut out = String::with_capacity(text.len() + add.len() + 2);
    out.push_str(&text[..at]);
    if !out.ends_with('\n') {
        out.push_str(nl);
    }
    out.push_str(add);
    out.push_str(&text[at..]);
    out
}

/// Replace line `i` (a key with an empty value) by `add`, keeping a
/// trailing comment of that line on its own line above.
fn replace_line(text: &str, ls: &[Line<'_>], i: usize, add: &str) -> String {
    let start = offset(text, i);
    let end = offset(text, i + 1);
    let mut out = String::with_capacity(text.len() + add.len());
    out.push_str(&text[..start]);
    if let Some(pos) = ls[i].body.find(" #") {
        out.push_str(&" ".repeat(ls[i].indent));
        out.push_str(ls[i].body[pos..].trim_start());
        out.push_str(if text.contains("\r\n") { "\r\n" } else { "\n" });
    }
    out.push_str(add);
    out.push_str(&text[end..]);
    out
}

/// Replace the manifest atomically if it still holds `old` (a concurrent
/// edit is never clobbered), keeping its permissions.
pub fn write_manifest(path: &Path, old: &str, new: &str) -> Result<()> {
    use crate::fs::{replace_if_unchanged, Mode, ReplaceError};
    replace_if_unchanged(path, old.as_bytes(), new.as_bytes(), Mode::Preserve).map_err(
        |e| match e {
            ReplaceError::Changed => KeyError::ManifestChanged {
                path: path.to_path_buf(),
            }
            .into(),
            ReplaceError::Io(e) => Error::io(path, &e),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PublicKey {
        crate::signing::SigningKeyPair::from_seed(&[7; 32]).public_key()
    }

    fn declare(text: &str) -> String {
        match declare_text(text, false, "release-bot", &key()).unwrap() {
            Declared::Changed(t) => t,
            Declared::AlreadyDeclared => panic!("already declared"),
        }
    }

    #[test]
    fn appends_a_block_and_keeps_the_rest_byte_for_byte() {
        let text = "# Acme\nopencontext: \"1.0\"   # spec\nid: acme\n\nroles:\n  support: {}\n";
        let out = declare(text);
        assert!(out.starts_with(text), "{out}");
        let b64 = key().to_base64();
        assert_eq!(
            &out[text.len()..],
            format!("extensions:\n  ctx.keys:\n    release-bot:\n      ed25519: \"{b64}\"\n")
        );
    }

    #[test]
    fn extends_existing_blocks_in_their_indentation() {
        let text = "id: acme\nextensions:\n    com.example.risk:\n        score: 1\n    ctx.keys:\n        old:\n            ed25519: \"xXDgaTfn3pJCMlunj5WZckv3eIH22wfx9AlNaW4K11I=\"\n    # trailing comment\nroles: {}\n";
        let out = declare(text);
        let b64 = key().to_base64();
        let added = format!("        release-bot:\n            ed25519: \"{b64}\"\n");
        let at = text.find("    # trailing").unwrap();
        assert_eq!(out, format!("{}{added}{}", &text[..at], &text[at..]));
    }

    #[test]
    fn adds_ctx_keys_to_an_extensions_block_without_it() {
        let text = "id: acme\nextensions:\n  com.example.risk:\n    score: 1\nroles: {}\n";
        let out = declare(text);
        assert!(out.starts_with("id: acme\nextensions:\n  com.example.risk:\n    score: 1\n  ctx.keys:\n    release-bot:\n"), "{out}");
        assert!(out.ends_with("roles: {}\n"));
    }

    #[test]
    fn empty_flow_and_crlf_are_handled_other_flow_is_refused() {
        let out = declare("id: acme\r\nextensions: {}  # none yet\r\n");
        assert!(
            out.contains("# none yet\r\nextensions:\r\n  ctx.keys:\r\n    release-bot:\r\n"),
            "{out:?}"
        );
        let err =
            declare_text("id: a\nextensions: {com.x: {a: 1}}\n", false, "k", &key()).unwrap_err();
        assert!(err.to_string().contains("flow style"), "{err}");
        // The hand-written entry is the hint, not part of the message.
        assert!(!err.to_string().contains("ed25519:"), "{err}");
        assert!(err.help().unwrap().contains("ed25519:"), "{err}");
    }

    #[test]
    fn same_key_is_a_no_op_and_a_different_key_is_refused() {
        let once = declare("id: acme\n");
        assert_eq!(
            declare_text(&once, false, "release-bot", &key()).unwrap(),
            Declared::AlreadyDeclared
        );
        let other = crate::signing::SigningKeyPair::from_seed(&[8; 32]).public_key();
        assert!(declare_text(&once, false, "release-bot", &other).is_err());
    }

    #[test]
    fn json_manifests_are_reserialised_in_order() {
        let text = "{\"opencontext\": \"1.0\", \"id\": \"acme\"}";
        let Declared::Changed(out) = declare_text(text, true, "k1", &key()).unwrap() else {
            panic!()
        };
        assert!(out.find("opencontext").unwrap() < out.find("extensions").unwrap());
        assert!(out.contains("\"ctx.keys\""));
    }
}
