//! The whole file of an encrypted member is checked, not just the parts ctx
//! reads: anything in clear that is neither a listed governance field, the
//! encryption marker, nor the one armored block would be plaintext at rest
//! that nobody reviews. So an encrypted file may hold only:
//!
//! - header fields from [`CLEAR_FIELDS`], or from [`CLEARABLE`] when the
//!   collection lists them under `clear:` ([`unlisted_clear_fields`]);
//! - `extensions` with the single member `ctx.private`, whose members are
//!   `encrypted`, `recipients` (normalized public keys) and, for YAML and
//!   JSON, `age`;
//! - exactly one armored age block: the whole Markdown body (blank lines
//!   around it aside), or the whole `age` string;
//! - no YAML comments (`# ...`), which survive parsing unseen.
//!
//! Messages name fields and lines, never values: the point is that the
//! values may be secret.

use serde_json::{Map, Value};

use crate::object::Format;

use super::config::{Recipient, CLEARABLE};
use super::format::{BEGIN, CLEAR_FIELDS, DEFAULT_CLEAR, END};
use super::{ArmorError, HeaderError, EXTENSION};

/// Members the marker `extensions.ctx.private` may have.
const MARKER_MEMBERS: [&str; 3] = ["encrypted", "recipients", "age"];

/// Check the clear part of a file marked encrypted (`fields` as authored,
/// marker included; `yaml` the YAML text holding them, starting at line
/// `yaml_line` of the file). The first problem is returned.
pub fn check_header(
    fields: &Map<String, Value>,
    yaml: Option<(&str, usize)>,
) -> Result<(), HeaderError> {
    for k in fields.keys() {
        let allowed = k == "extensions"
            || CLEAR_FIELDS.contains(&k.as_str())
            || CLEARABLE.contains(&k.as_str());
        if !allowed {
            return Err(HeaderError::ClearField(k.clone()));
        }
    }
    if let Some(ext) = fields.get("extensions") {
        let Some(ext) = ext.as_object() else {
            return Err(HeaderError::ExtensionsNotMarker);
        };
        if let Some(k) = ext.keys().find(|k| *k != EXTENSION) {
            return Err(HeaderError::ClearExtension(k.clone()));
        }
        if let Some(marker) = ext.get(EXTENSION).and_then(Value::as_object) {
            if let Some(k) = marker
                .keys()
                .find(|k| !MARKER_MEMBERS.contains(&k.as_str()))
            {
                return Err(HeaderError::MarkerMember(k.clone()));
            }
            check_recipients(marker.get("recipients"))?;
        }
    }
    if let Some((text, first)) = yaml {
        if let Some(n) = comment_lines(text).first() {
            return Err(HeaderError::Comment(n + first - 1));
        }
    }
    Ok(())
}

/// The marker's recipients are normalized public keys, nothing else.
fn check_recipients(list: Option<&Value>) -> Result<(), HeaderError> {
    let Some(list) = list else {
        return Ok(());
    };
    let items = list
        .as_array()
        .ok_or(HeaderError::Recipients { item: None })?;
    for (n, item) in items.iter().enumerate() {
        let ok = item
            .as_str()
            .and_then(|s| Recipient::parse(s).ok().map(|(r, _)| r.key() == s))
            .unwrap_or(false);
        if !ok {
            return Err(HeaderError::Recipients { item: Some(n) });
        }
    }
    Ok(())
}

/// Is `s` exactly one armored age block, give or take blank lines around
/// it? The block must be canonical age armor, as age itself reads it:
/// base64 lines of 64 columns, then at most one shorter padded line, then
/// the end marker. Text inside or between blocks is refused. (Whether the
/// ciphertext is authentic only decryption can tell: `private status --check`.)
pub fn check_armor(s: &str) -> Result<(), ArmorError> {
    use base64::Engine as _;
    let lines: Vec<&str> = s
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return Err(ArmorError::Empty);
    };
    let block = &lines[first..=last];
    if block.len() < 3 || block[0].trim() != BEGIN || block[block.len() - 1].trim() != END {
        return Err(ArmorError::NotOneBlock);
    }
    let data = &block[1..block.len() - 1];
    for (n, l) in data.iter().enumerate() {
        let is_last = n + 1 == data.len();
        let shape = l.len() == 64 || (is_last && !l.is_empty() && l.len() < 64 && l.len() % 4 == 0);
        let decodes = shape
            && (l.len() == 64 && !l.contains('=') || is_last)
            && base64::engine::general_purpose::STANDARD.decode(l).is_ok();
        if !decodes {
            return Err(ArmorError::NotBase64 { line: n + 2 });
        }
    }
    Ok(())
}

/// Header fields that only a collection's `clear:` list may keep in clear,
/// and that `clear` does not list.
pub fn unlisted_clear_fields(header: &Map<String, Value>, clear: &[String]) -> Vec<String> {
    header
        .keys()
        .filter(|k| {
            k.as_str() != "extensions"
                && !CLEAR_FIELDS.contains(&k.as_str())
                && !DEFAULT_CLEAR.contains(&k.as_str())
        })
        .filter(|k| !clear.iter().any(|c| c == *k))
        .cloned()
        .collect()
}

/// 1-based line numbers (within `yaml`) that carry a comment. A `#` starts
/// a comment at the start of a line or after whitespace, outside quoted
/// scalars and block scalars (`|`, `>`), as YAML defines it.
pub fn comment_lines(yaml: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut quote: Option<char> = None;
    let mut block: Option<usize> = None;
    for (n, raw) in yaml.lines().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let indent = line.len() - line.trim_start().len();
        if let Some(b) = block {
            if line.trim().is_empty() || indent > b {
                continue;
            }
            block = None;
        }
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut prev: Option<char> = None;
        let mut escaped = false;
        let mut skip = false;
        let mut content_end = line.len();
        for (k, &(i, c)) in chars.iter().enumerate() {
            if skip {
                skip = false;
                prev = Some(c);
                continue;
            }
            match quote {
                Some('"') => {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        quote = None;
                    }
                }
                Some(_) => {
                    // `''` is an escaped quote inside a single-quoted scalar.
                    if c == '\'' {
                        if chars.get(k + 1).map(|x| x.1) == Some('\'') {
                            skip = true;
                        } else {
                            quote = None;
                        }
                    }
                }
                None => {
                    if c == '#' && prev.is_none_or(char::is_whitespace) {
                        out.push(n + 1);
                        content_end = i;
                        break;
                    }
                    let opens = matches!(c, '"' | '\'')
                        && line[..i]
                            .trim_end()
                            .chars()
                            .last()
                            .is_none_or(|p| matches!(p, ':' | '-' | '[' | '{' | ','));
                    if opens {
                        quote = Some(c);
                    }
                }
            }
            prev = Some(c);
        }
        if quote.is_none() && opens_block_scalar(line[..content_end].trim_end()) {
            block = Some(indent);
        }
    }
    out
}

/// Does a line end with a block scalar indicator (`key: |`, `- >-`, `|2`)?
fn opens_block_scalar(line: &str) -> bool {
    let t = line.trim_end_matches(|c: char| c == '+' || c == '-' || c.is_ascii_digit());
    (t.ends_with('|') || t.ends_with('>')) && {
        let before = t[..t.len() - 1].trim_end();
        before.is_empty() || before.ends_with(':') || before.ends_with('-')
    }
}

/// Which YAML text holds the fields of a file (for the comment check):
/// Markdown front matter, or the whole YAML file. JSON has no comments.
pub fn header_yaml(format: Format, text: &str) -> Option<(&str, usize)> {
    match format {
        Format::Markdown => crate::frontmatter::split(text)
            .ok()
            .and_then(|s| s.yaml.map(|y| (y, s.yaml_line as usize))),
        Format::Yaml => Some((text, 1)),
        Format::Json => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ARMOR: &str = "-----BEGIN AGE ENCRYPTED FILE-----\nYWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBwZ0RrZUpPa0U0SHkzVWVY\nYWdlLWVuY3J5cHRpb24ub3JnL3YxCg==\n-----END AGE ENCRYPTED FILE-----\n";

    #[test]
    fn armor_must_be_the_whole_text() {
        assert!(check_armor(ARMOR).is_ok());
        assert!(check_armor(&format!("\n\n{ARMOR}\n")).is_ok());
        assert!(check_armor(&ARMOR.replace('\n', "\r\n")).is_ok());
        for bad in [
            format!("{ARMOR}Passport X1\n"),
            format!("note\n{ARMOR}"),
            format!("{ARMOR}X1\n{ARMOR}"),
            ARMOR.replace("YWdl", "X1 YWdl"),
            ARMOR.replace("-----END", "X1X1\n-----END"),
            String::new(),
        ] {
            let e = check_armor(&bad).unwrap_err().to_string();
            assert!(!e.contains("X1"), "{e}");
        }
    }

    #[test]
    fn only_governance_and_the_marker_stay_in_clear() {
        let ok = json!({"id": "a", "classification": "restricted", "title": "t",
            "extensions": {"ctx.private": {"encrypted": true, "recipients": []}}});
        assert!(check_header(ok.as_object().unwrap(), None).is_ok());
        for (doc, field) in [
            (json!({"id": "a", "number": "X1"}), "`number`"),
            (
                json!({"extensions": {"acme.x": "X1", "ctx.private": {"encrypted": true}}}),
                "`extensions.acme.x`",
            ),
            (
                json!({"extensions": {"ctx.private": {"encrypted": true, "note": "X1"}}}),
                "ctx.private.note",
            ),
            (
                json!({"extensions": {"ctx.private": {"encrypted": true, "recipients": ["X1"]}}}),
                "recipients",
            ),
        ] {
            let e = check_header(doc.as_object().unwrap(), None)
                .unwrap_err()
                .to_string();
            assert!(e.contains(field) && !e.contains("X1"), "{e}");
        }
        let h = json!({"id": "a", "title": "t", "tags": ["x"], "owner": "me"});
        assert_eq!(
            unlisted_clear_fields(h.as_object().unwrap(), &["title".into()]),
            vec!["tags".to_string()]
        );
    }

    #[test]
    fn comments_are_found_outside_quotes_and_block_scalars() {
        let yaml = "id: a # X1\nowner: \"team #1\"\nname: O'Brien # c\nurl: a#b\n# whole line\nage: |\n  # not a comment\n  AAAA\nx: 'it''s # no'\ny: [a, b] # yes\n";
        assert_eq!(comment_lines(yaml), vec![1, 3, 5, 10]);
        assert!(comment_lines("id: a\nlist:\n  - \"multi\n    line # inside\"\n").is_empty());
    }
}
