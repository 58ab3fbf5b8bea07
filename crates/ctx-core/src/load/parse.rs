//! One file's bytes → one context object plus its own findings. Pure: no I/O,
//! so it can run in parallel and (later) be cached per file digest.

use serde_json::{Map, Value};

use crate::diag::{Code, Diagnostic};
use crate::frontmatter;
use crate::json;
use crate::object::{ContextObject, Faults, Format, Meta, Origin};
use crate::schema::{self, Kind, PathItem};
use crate::yaml;

use super::secrets;
use super::walk::{Member, MemberSource};

/// The loader-supplied defaults for one member: its collection's spec, then the manifest's `defaults`.
pub struct Defaults<'a> {
    pub collection: Option<&'a Map<String, Value>>,
    pub manifest: &'a Map<String, Value>,
}

impl<'a> Defaults<'a> {
    /// The defaults that apply to `member`: its collection's spec, then the manifest's.
    pub fn for_member(manifest: &'a crate::manifest::Manifest, member: &Member) -> Defaults<'a> {
        let collection = match &member.source {
            MemberSource::Collection { name, .. } => manifest
                .collections
                .iter()
                .find(|c| c.name.as_str() == &**name)
                .map(|c| &c.defaults),
            MemberSource::Entry { .. } => None,
        };
        Defaults {
            collection,
            manifest: &manifest.defaults,
        }
    }
}

/// What parsing one file produced.
#[derive(Debug, Default)]
pub struct Parsed {
    pub object: Option<ContextObject>,
    pub diags: Vec<Diagnostic>,
}

fn err(code: Code, file: &str, line: u32, message: impl Into<String>) -> Diagnostic {
    Diagnostic::error(code, message).file(file).line(line)
}

/// Derive an id from a path inside a collection: `policies/support/refund.md` in
/// `policies` → `policies.support.refund`; `index.md` / `readme.md` name their folder.
pub fn derive_id(collection: &str, base: &str, rel: &str) -> String {
    let inner = rel
        .strip_prefix(base)
        .unwrap_or(rel)
        .trim_start_matches('/');
    let stem = match inner.rsplit_once('.') {
        Some((s, _)) => s,
        None => inner,
    };
    let mut parts: Vec<String> = vec![collection.to_string()];
    for seg in stem.split('/') {
        let clean: String = seg
            .chars()
            .map(|c| c.to_ascii_lowercase())
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        for s in clean.split('.').filter(|s| !s.is_empty()) {
            parts.push(s.to_string());
        }
    }
    if parts.len() > 1 && matches!(parts.last().map(String::as_str), Some("index" | "readme")) {
        parts.pop();
    }
    parts.join(".")
}

/// Parse a member file's bytes into an object.
pub fn parse(member: &Member, bytes: &[u8], defaults: &Defaults<'_>) -> Parsed {
    let file = member.rel.as_str();
    let mut out = Parsed::default();
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let at = e.valid_up_to();
            let line = bytes[..at].iter().filter(|b| **b == b'\n').count() as u32 + 1;
            out.diags.push(
                err(
                    Code::SchemaInvalid,
                    file,
                    line,
                    format!("file is not valid UTF-8 (invalid byte at offset {at})"),
                )
                .expected("UTF-8 text")
                .actual(format!("byte 0x{:02x}", bytes[at]))
                .fix("re-save the file as UTF-8"),
            );
            return out;
        }
    };
    let Some(format) = Format::from_path(file) else {
        return out;
    };
    // The structured part of the file, and the line it starts on.
    let (doc, start_line, body): (Option<&str>, u32, Option<&str>) = match format {
        Format::Markdown => match frontmatter::split(text) {
            Ok(s) => (s.yaml, s.yaml_line, Some(s.body)),
            Err(e) => {
                out.diags.push(
                    err(Code::SchemaInvalid, file, e.line, e.message)
                        .expected("front matter closed by a `---` line")
                        .fix("add the closing `---` line after the front matter"),
                );
                return out;
            }
        },
        _ => (Some(text), 1, None),
    };
    let parsed = match (format, doc) {
        (_, None) => Ok(Value::Object(Map::new())),
        (Format::Json, Some(d)) => json::parse(d).map_err(|e| (e.message, e.line, e.column)),
        (_, Some(d)) => yaml::parse(d).map_err(|e| (e.message, e.line, e.column)),
    };
    let value = match parsed {
        Ok(v) => v,
        Err((message, line, column)) => {
            let hint = (format != Format::Json)
                .then(|| doc.and_then(|d| crate::lint::hints::yaml_error(d, line)))
                .flatten();
            let d = match hint {
                Some(h) => {
                    let d = Diagnostic::error(
                        Code::SchemaInvalid,
                        format!("cannot parse {}: {}", describe(format), h.message),
                    )
                    .file(file)
                    .at(h.line + start_line - 1, h.column)
                    .actual(message)
                    .fix(h.fix);
                    match h.field {
                        Some(f) => d.field(f),
                        None => d,
                    }
                }
                None => Diagnostic::error(
                    Code::SchemaInvalid,
                    format!("cannot parse {}: {message}", describe(format)),
                )
                .file(file)
                .at(line + start_line - 1, column)
                .fix("fix the syntax at the position shown"),
            };
            out.diags.push(d);
            return out;
        }
    };
    let mut fields = match value {
        Value::Object(map) => map,
        Value::Null if format == Format::Markdown => Map::new(),
        other => {
            out.diags.push(
                err(
                    Code::SchemaInvalid,
                    file,
                    start_line,
                    format!("{} must be a mapping of fields", describe(format)),
                )
                .expected("a mapping (key: value pairs)")
                .actual(type_name(&other))
                .fix("write the object as `key: value` fields"),
            );
            return out;
        }
    };
    let mut supplied = crate::object::Supplied::default();
    // An age-encrypted member: metadata from the clear header, no content (see crate::private).
    let sealed = match crate::private::format::take_sealed(format, &mut fields, body, text) {
        Ok(s) => s,
        Err(message) => {
            out.diags.push(
                err(Code::SchemaInvalid, file, start_line, message.to_string())
                    .field("extensions.ctx.private")
                    .fix("restore the file from version control, or re-create it with `ctx private edit`"),
            );
            return out;
        }
    };
    if let Some(body) = body.filter(|_| sealed.is_none()) {
        let body = body.trim_matches(['\n', '\r']);
        if !body.trim().is_empty() {
            if fields.contains_key("content") {
                out.diags.push(
                    err(
                        Code::SchemaInvalid,
                        file,
                        start_line,
                        "both a `content` field and a Markdown body are present",
                    )
                    .field("content")
                    .fix("keep the content in one place: the body, or the `content` field"),
                );
            } else {
                fields.insert("content".into(), Value::String(body.to_string()));
            }
        }
    }
    let no_front_matter = format == Format::Markdown && doc.is_none();
    if no_front_matter {
        if let Some(line) = crate::lint::hints::missing_opening_fence(text) {
            out.diags.push(
                Diagnostic::warning(
                    Code::SchemaInvalid,
                    format!("front matter has no opening `---`: the `---` on line {line} closes a block that was never opened, so its fields are read as body text and the object takes every default"),
                )
                .file(file)
                .line(1)
                .expected("a `---` line before the first field")
                .fix("add a line `---` at the very top of the file"),
            );
        }
    }
    let (collection, default_id) = match &member.source {
        MemberSource::Entry { key } => (key.clone(), key.clone()),
        MemberSource::Collection { name, base } => (name.to_string(), derive_id(name, base, file)),
    };
    // A collection member's path id, kept when the declared id may differ from it.
    let mut path_id = match member.source {
        MemberSource::Collection { .. } => Some(None),
        MemberSource::Entry { .. } => None,
    };
    if !fields.contains_key("id") {
        fields.insert("id".into(), Value::String(default_id));
        supplied.insert("id");
    } else if let Some(p) = path_id.as_mut() {
        *p = Some(default_id);
    }
    for &key in crate::object::DEFAULTABLE {
        if fields.contains_key(key) {
            continue;
        }
        let v = defaults
            .collection
            .and_then(|c| c.get(key))
            .or_else(|| defaults.manifest.get(key));
        if let Some(v) = v {
            fields.insert(key.into(), v.clone());
            supplied.insert(key);
        }
    }
    if !fields.contains_key("type") && no_front_matter {
        fields.insert("type".into(), Value::String("document".into()));
        supplied.insert("type");
    }
    let doc_value = Value::Object(fields);
    let kind = if doc_value.get("type").and_then(Value::as_str) == Some("decision") {
        Kind::Decision
    } else {
        Kind::Object
    };
    let violations = schema::check(kind, &doc_value);
    let Value::Object(mut fields) = doc_value else {
        unreachable!("built as an object")
    };
    let id = fields
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // Governance fields the schema rejects: the object is withheld until they are fixed.
    let mut schema_faults = Faults::default();
    for v in &violations {
        match (Faults::field_of(&v.field), v.path.as_slice()) {
            (Some(f), _) => schema_faults.mark(f),
            (None, [PathItem::Key(_)]) if v.message.starts_with("unknown field") => {
                schema_faults.mark("unknown-field")
            }
            _ => {}
        }
    }
    for v in violations {
        let hint = unknown_field_hint(&v).or_else(|| date_only_hint(&v));
        let mut d = Diagnostic::error(Code::SchemaInvalid, v.message)
            .file(file)
            .id(id.clone());
        let locate_path: Vec<PathItem> = if supplied
            .iter()
            .any(|s| v.path.first() == Some(&PathItem::Key(s.into())))
        {
            Vec::new()
        } else {
            v.path.clone()
        };
        if let Some(doc) = doc {
            if let Some((l, c)) =
                crate::manifest::locate_in(doc, format == Format::Json, &locate_path)
            {
                d = d.at(l + start_line - 1, c);
            }
        } else {
            d = d.line(1);
        }
        if !v.field.is_empty() {
            d = d.field(v.field.clone());
        }
        if let Some(e) = v.expected {
            d = d.expected(e);
        }
        if let Some(a) = v.actual {
            d = d.actual(a);
        }
        d = d.fix(match hint {
            Some(h) => h,
            None => remediation(&v.field),
        });
        out.diags.push(d);
    }
    let scanned = match sealed {
        Some(_) => crate::private::format::mask_armor(text),
        None => std::borrow::Cow::Borrowed(text),
    };
    out.diags.extend(secrets::scan(&scanned, file, &id));
    // Hidden characters, in the text as written (a sealed member's armor is ASCII).
    let layout = crate::lint::invisible::Layout {
        text,
        json: format == Format::Json,
        doc,
        doc_line: start_line,
        body,
        fields: &fields,
        supplied: &supplied,
    };
    out.diags
        .extend(crate::lint::invisible::findings(&layout, file, &id));
    let mut meta = Meta::from_fields(&fields);
    // Faults the schema did not already report get a finding of their own.
    for field in meta.faults.fields().filter(|f| !schema_faults.contains(f)) {
        let top = field.split('.').next().unwrap_or(field);
        let mut d = Diagnostic::error(
            Code::SchemaInvalid,
            format!(
                "`{field}` is present but invalid, so the object is withheld from every consumer"
            ),
        )
        .file(file)
        .id(id.clone())
        .field(field)
        .expected(Faults::expected(field))
        .fix(remediation(field));
        if let Some(v) = fields.get(top) {
            d = d.actual(short(v));
        }
        let path = [PathItem::Key(top.to_string())];
        match doc {
            Some(text) if !supplied.contains(top) => {
                if let Some((l, c)) =
                    crate::manifest::locate_in(text, format == Format::Json, &path)
                {
                    d = d.at(l + start_line - 1, c);
                }
            }
            _ => d = d.line(start_line),
        }
        out.diags.push(d);
    }
    meta.faults = meta.faults.union(schema_faults);
    if let Some(sealed) = sealed {
        meta.rare_mut().sealed = Some(sealed.into_boxed_str());
    }
    // Provenance is judged on what the author declared, never on loader defaults.
    meta.declares_sources &= !supplied.contains("sources");
    meta.declares_canonical_source &= !supplied.contains("canonical_source");
    // Authority is never laundered by a default (validate/authority.rs).
    if supplied.contains("authority") {
        out.diags.extend(crate::validate::authority::refuse_default(
            &mut meta,
            &mut fields,
            file,
            &id,
        ));
    }
    out.diags
        .extend(crate::validate::authority::disagreement(&meta, file, &id));
    let version = fields.get("version").and_then(Value::as_u64);
    let content = fields.remove("content");
    let doc = serde_json::to_string(&fields)
        .expect("JSON values serialize")
        .into_boxed_str();
    let path_id = match path_id {
        None => crate::object::PathId::Unknown,
        Some(Some(derived)) if derived != id => crate::object::PathId::Differs(derived.into()),
        Some(_) => crate::object::PathId::Same,
    };
    out.object = Some(ContextObject {
        id,
        version,
        doc,
        content,
        supplied,
        origin: Origin {
            file: member.rel.to_string(),
            format,
            collection: Some(collection),
            line: start_line,
            path_id,
        },
        meta,
    });
    out
}

/// `did you mean `owner`?` for an unknown top-level field close to a schema field.
fn unknown_field_hint(v: &schema::Violation) -> Option<String> {
    if !v.message.starts_with("unknown field") {
        return None;
    }
    let [PathItem::Key(name)] = v.path.as_slice() else {
        return None;
    };
    let known = crate::lint::suggest::schema_fields(Kind::Object);
    let hint = crate::lint::suggest::closest(name, known.iter().map(String::as_str))?;
    Some(format!(
        "did you mean `{hint}`? `{name}` is not an object field, so whatever it was meant to set is not set (custom data belongs under `extensions`)"
    ))
}

/// A date alone where an instant belongs: name the instant it will become.
fn date_only_hint(v: &schema::Violation) -> Option<String> {
    let text = v.actual.as_ref()?.as_str()?;
    let fixed = crate::reformat::value::canonical_timestamp(text)?;
    crate::time::parse_date(text)?;
    Some(format!(
        "a date alone is not an instant: write `{fixed}` (the start of that day, UTC), or run `ctx validate --fix`"
    ))
}

fn remediation(field: &str) -> String {
    let top = field.split(['.', '[']).next().unwrap_or("");
    match top {
        "" => "add the missing field".into(),
        "id" => "use a dotted lowercase id such as `policies.refunds`".into(),
        "updated" | "created" | "valid_from" | "expires" => {
            "write an RFC 3339 timestamp such as 2026-08-01T00:00:00Z".into()
        }
        "ttl" => "write a duration such as 30d, 12h or 1y".into(),
        "redact" => format!(
            "write each rule as {{path, mode}} with a path of {}",
            crate::resolve::redact::PATH_SYNTAX
        ),
        "permissions" => {
            "write `permissions` as lists of role or agent names: read, write, deny".into()
        }
        _ => format!(
            "correct `{field}` (see `ctx schema object`); custom data belongs under `extensions`"
        ),
    }
}

/// A value as a finding shows it: short, never a whole structure.
fn short(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > 120 => {
            Value::String(format!("{}…", s.chars().take(120).collect::<String>()))
        }
        Value::Object(_) => Value::String("(a mapping)".into()),
        Value::Array(a) if a.len() > 8 => Value::String(format!("(a list of {})", a.len())),
        other => other.clone(),
    }
}

fn describe(f: Format) -> &'static str {
    match f {
        Format::Markdown => "front matter",
        Format::Yaml => "YAML document",
        Format::Json => "JSON document",
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty document",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids() {
        assert_eq!(
            derive_id(
                "policies",
                "context/policies",
                "context/policies/refunds.md"
            ),
            "policies.refunds"
        );
        assert_eq!(
            derive_id(
                "policies",
                "context/policies",
                "context/policies/support/Refund Now.md"
            ),
            "policies.support.refund-now"
        );
        assert_eq!(
            derive_id("docs", "docs", "docs/guide/index.md"),
            "docs.guide"
        );
        assert_eq!(derive_id("docs", "docs", "docs/README.md"), "docs");
        assert_eq!(
            derive_id(
                "pricing",
                "context/pricing",
                "context/pricing/enterprise.v2.md"
            ),
            "pricing.enterprise.v2"
        );
    }
}
