//! Content as a consumer sees it: redaction applied to content from every source.
//!
//! Inline structured content is redacted in place. Text read from a source
//! (`content_uri`, whatever the adapter) is parsed by its media type — declared
//! `content_type`, else what the adapter reports, else the file extension, else a
//! JSON sniff — and redacted exactly like inline content: JSON and YAML documents
//! and Markdown front matter. Prose (a Markdown body, plain text) has no paths, so a
//! rule matches nothing in it. Content that claims a structure but cannot be parsed
//! while rules apply to it is withheld, never served raw.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::resolve::authorize::Denial;
use crate::resolve::redact::{self, RedactError, Rule};

use super::{SourceText, View};

/// Content after redaction, and the rule paths that applied.
#[derive(Debug, Clone, Default)]
pub struct Shown<'a> {
    pub content: Option<Cow<'a, Value>>,
    pub redacted: Vec<String>,
}

impl Shown<'_> {
    pub fn into_owned(self) -> Shown<'static> {
        Shown {
            content: self.content.map(|c| Cow::Owned(c.into_owned())),
            redacted: self.redacted,
        }
    }
}

/// Why an object (or its content) is not shown. Only the reason and a detail that
/// names fields and rules, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// A bundle exclusion reason (closed set of the bundle schema).
    pub reason: &'static str,
    pub detail: String,
    /// The warning code a bundle reports it under.
    pub code: &'static str,
}

impl Withheld {
    pub fn denied(d: Denial) -> Withheld {
        Withheld {
            reason: d.reason(),
            detail: d.detail().unwrap_or_default(),
            code: match d {
                Denial::InvalidGovernance(_) => "invalid-governance",
                _ => d.reason(),
            },
        }
    }

    /// Withheld because its redaction cannot be guaranteed.
    pub fn policy(why: impl std::fmt::Display) -> Withheld {
        Withheld {
            reason: "permission-denied",
            detail: format!("withheld: {why}"),
            code: "redaction-unavailable",
        }
    }
}

/// How a text is structured, by media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Json,
    Yaml,
    Markdown,
    Prose,
}

fn shape_of_type(media: &str) -> Option<Shape> {
    let t = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    Some(match t.as_str() {
        "application/json" | "text/json" => Shape::Json,
        t if t.ends_with("+json") => Shape::Json,
        "application/yaml" | "application/x-yaml" | "text/yaml" | "text/x-yaml" => Shape::Yaml,
        t if t.ends_with("+yaml") => Shape::Yaml,
        "text/markdown" | "text/x-markdown" => Shape::Markdown,
        "" => return None,
        _ => Shape::Prose,
    })
}

fn shape_of_path(uri: &str) -> Option<Shape> {
    // A database URI names the database file, not the cell's format.
    if crate::adapters::scheme(uri) == Some("sqlite") {
        return None;
    }
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "json" => Shape::Json,
        "yaml" | "yml" => Shape::Yaml,
        "md" | "markdown" => Shape::Markdown,
        "txt" | "text" => Shape::Prose,
        _ => return None,
    })
}

fn shape(declared: Option<&str>, reported: Option<&str>, uri: Option<&str>, text: &str) -> Shape {
    declared
        .and_then(shape_of_type)
        .or_else(|| reported.and_then(shape_of_type))
        .or_else(|| uri.and_then(shape_of_path))
        .unwrap_or_else(|| {
            // No type at all: text that opens like JSON is treated as JSON, the rest as
            // Markdown (front matter, when present, is structure rules can address).
            match text.trim_start().as_bytes().first() {
                Some(b'{' | b'[') => Shape::Json,
                _ => Shape::Markdown,
            }
        })
}

fn apply(view: &View<'_>, v: &mut Value, rules: &[&Rule]) -> Result<Vec<String>, Withheld> {
    redact::redact(v, rules, view.key().ok()).map_err(|e| no_key(view, e))
}

fn no_key(view: &View<'_>, e: RedactError) -> Withheld {
    match view.key() {
        // The withheld record is one line: the reason, then how to fix it.
        Err(why) => Withheld::policy(match miette::Diagnostic::help(why) {
            Some(help) => format!("{e}: {why} ({help})"),
            None => format!("{e}: {why}"),
        }),
        Ok(_) => Withheld::policy(e),
    }
}

/// Inline content (the Markdown body, or a structured `content` field).
pub(super) fn inline<'a>(
    view: &View<'_>,
    content: Option<&'a Value>,
    rules: &[&Rule],
) -> Result<Shown<'a>, Withheld> {
    let Some(c) = content else {
        return Ok(Shown::default());
    };
    // A rule that reaches nothing changes nothing, so when none reaches the
    // content as stored (the common case) it is served as it is, never copied.
    if rules.is_empty() || c.is_string() || !rules.iter().any(|r| r.reaches(c)) {
        return Ok(Shown {
            content: Some(Cow::Borrowed(c)),
            redacted: Vec::new(),
        });
    }
    let mut copy = c.clone();
    let redacted = apply(view, &mut copy, rules)?;
    Ok(Shown {
        content: Some(if redacted.is_empty() {
            Cow::Borrowed(c)
        } else {
            Cow::Owned(copy)
        }),
        redacted,
    })
}

/// The parser's position only: its message could quote the content.
fn unparseable(what: &str, line: u32, column: u32) -> Withheld {
    Withheld::policy(format!(
        "redaction rules apply and its {what} content cannot be parsed to apply them \
         (syntax error at line {line}, column {column})"
    ))
}

/// Text read from a source, redacted by its media type.
pub(super) fn loaded(
    view: &View<'_>,
    src: &SourceText<'_>,
    rules: &[&Rule],
) -> Result<Shown<'static>, Withheld> {
    let text = src.text;
    let unchanged = |redacted| Shown {
        content: Some(Cow::Owned(Value::String(text.to_string()))),
        redacted,
    };
    if rules.is_empty() {
        return Ok(unchanged(Vec::new()));
    }
    let (rendered, applied) =
        match shape(src.declared_type, src.reported_type, Some(src.uri), text) {
            Shape::Json => {
                let mut v =
                    crate::json::parse(text).map_err(|e| unparseable("JSON", e.line, e.column))?;
                let applied = apply(view, &mut v, rules)?;
                if applied.is_empty() {
                    return Ok(unchanged(applied));
                }
                (crate::bundle::render::json(&v), applied)
            }
            Shape::Yaml => {
                let mut v =
                    crate::yaml::parse(text).map_err(|e| unparseable("YAML", e.line, e.column))?;
                let applied = apply(view, &mut v, rules)?;
                if applied.is_empty() {
                    return Ok(unchanged(applied));
                }
                (crate::bundle::render::yaml(&v), applied)
            }
            Shape::Markdown => {
                let split = crate::frontmatter::split(text)
                    .map_err(|e| unparseable("Markdown", e.line, 1))?;
                let Some(fm) = split.yaml else {
                    return Ok(unchanged(Vec::new()));
                };
                let mut map =
                    match crate::yaml::parse(fm) {
                        Ok(Value::Object(m)) => m,
                        Ok(Value::Null) => Map::new(),
                        Ok(_) => return Err(Withheld::policy(
                            "redaction rules apply and its Markdown front matter is not a mapping",
                        )),
                        Err(e) => return Err(unparseable("Markdown", e.line + 1, e.column)),
                    };
                let applied = redact::redact_map(&mut map, rules, view.key().ok())
                    .map_err(|e| no_key(view, e))?;
                if applied.is_empty() {
                    return Ok(unchanged(applied));
                }
                let mut out = format!("---\n{}---\n", crate::write::emit::yaml_map(&map));
                out.push_str(split.body);
                (out, applied)
            }
            Shape::Prose => return Ok(unchanged(Vec::new())),
        };
    Ok(Shown {
        content: Some(Cow::Owned(Value::String(rendered))),
        redacted: applied,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_by_declared_type_then_reported_then_extension() {
        assert_eq!(
            shape(
                Some("application/json"),
                Some("text/plain"),
                Some("a.md"),
                ""
            ),
            Shape::Json
        );
        assert_eq!(
            shape(
                None,
                Some("application/yaml; charset=utf-8"),
                Some("a.md"),
                ""
            ),
            Shape::Yaml
        );
        assert_eq!(
            shape(None, None, Some("file://data/c.json?x=1"), ""),
            Shape::Json
        );
        assert_eq!(shape(None, None, Some("notes.txt"), ""), Shape::Prose);
        assert_eq!(
            shape(None, None, Some("sqlite://d.db?table=t"), " {\"a\": 1}"),
            Shape::Json
        );
        assert_eq!(
            shape(None, None, None, "---\nssn: 1\n---\n"),
            Shape::Markdown
        );
        assert_eq!(
            shape(None, Some("application/vnd.api+json"), None, ""),
            Shape::Json
        );
    }
}
