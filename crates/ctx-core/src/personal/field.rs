//! One field: its id (`category.field_name`, nested names allowed), the file that
//! holds it, and the plaintext document that file encrypts.
//!
//! ```json
//! { "id": "identity.full_name", "type": "field", "classification": "internal",
//!   "owner": "user", "version": 2, "updated": "2026-03-15T10:00:00Z",
//!   "content": "Cool Cucumber",
//!   "extensions": { "ctx.personal": { "written_by": "user", "user_only_write": false,
//!                                     "history": [ { "version": 1, "content": "…", … } ] } } }
//! ```
//!
//! The governance part (id, type, classification = tier, owner, version, updated) is
//! the clear header of the encrypted file; value, provenance and history are only
//! inside the ciphertext.

use serde_json::{json, Map, Value};
use zeroize::Zeroizing;

use super::config::valid_segment;
use super::{Tier, EXTENSION};

/// The object type of fields; category descriptors are `category`.
pub const FIELD_TYPE: &str = "field";
pub const CATEGORY_TYPE: &str = "category";
/// The file in each category folder that describes the category (never a field:
/// field segments cannot start with `_`).
pub const CATEGORY_FILE: &str = "_category.json";
/// The longest field value ctx accepts (as compact JSON).
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// Why a field id, a value or a field's document (or file) is refused. The
/// messages quote ids only through [`inert`], never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum FieldError {
    #[error("a field id is at most 256 characters")]
    IdTooLong,
    #[error("a field id is `category.field_name` (e.g. `identity.full_name`), not `{}`", inert(.0))]
    IdWithoutCategory(String),
    #[error("`{}` is not a field id: dot-separated segments of lowercase letters, digits, `_` and `-`, each starting with a letter or digit", inert(.0))]
    IdSegments(String),
    #[error("`value` is missing or null")]
    ValueMissing,
    #[error("`value` must be a string, an object or an array")]
    #[diagnostic(help("write numbers and booleans as strings"))]
    ValueKind,
    #[error("`value` is {bytes} bytes; a field holds at most {MAX_VALUE_BYTES}")]
    ValueTooLarge { bytes: usize },
    #[error("the field has no id")]
    NoId,
    #[error("the field has no valid classification")]
    NoClassification,
    #[error("the field has no version")]
    NoVersion,
    #[error("the field has no `updated` time")]
    NoUpdated,
    #[error("the field has no value")]
    NoValue,
    #[error("`user_only_write` must be true or false")]
    UserOnlyWrite,
    /// A file in a category folder holds another type of object.
    #[error("type `{0}` is not a field")]
    NotAField(String),
    #[error("the field is not encrypted")]
    #[diagnostic(help("run `ctx private encrypt`"))]
    NotEncrypted,
    /// The file does not decrypt or parse (why, without the file name).
    #[error("{0}")]
    Unopened(String),
    #[error("field {id} lies in the folder of category `{category}`")]
    WrongFolder { id: String, category: String },
    /// No authentication tag: sealed without the vault's key.
    #[error("the file carries no authentication tag: the vault did not write it (it was sealed with the public key alone, e.g. by `ctx private encrypt`, or predates authentication)")]
    #[diagnostic(help("if the value is yours, write the field again (PUT /context/fields/ID) or delete it (DELETE /context/fields/ID)"))]
    Untagged,
    /// A tag this vault's key did not make over this file at this path.
    #[error("its authentication tag does not match: the file was changed, planted, or copied from another field's file")]
    #[diagnostic(help(
        "write the field again or delete it, or restore the vault's folder from a backup you trust"
    ))]
    Forged,
    /// An authentic but older copy.
    #[error("an older copy (generation {found}; the vault's index lists generation {listed}): an earlier version of the file was put back")]
    #[diagnostic(help("write the field again or delete it; its current value is lost unless a backup or an export has it"))]
    Stale { found: u64, listed: u64 },
    /// Authentic, but no longer listed: a deleted or replaced field put back.
    #[error("an authentic file (generation {found}) that the vault's index no longer lists: a deleted or moved field was put back")]
    #[diagnostic(help("delete it (DELETE /context/fields/ID) or write the field again"))]
    Unlisted { found: u64 },
}

/// A parsed field id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldId {
    pub id: String,
    pub category: String,
    /// Everything after the category: `current.city` in `addresses.current.city`.
    pub name: String,
}

impl FieldId {
    pub fn parse(id: &str) -> Result<FieldId, FieldError> {
        if id.len() > 256 {
            return Err(FieldError::IdTooLong);
        }
        let Some((category, name)) = id.split_once('.') else {
            return Err(FieldError::IdWithoutCategory(id.to_string()));
        };
        if !valid_segment(category) || !name.split('.').all(valid_segment) {
            return Err(FieldError::IdSegments(id.to_string()));
        }
        Ok(FieldId {
            id: id.to_string(),
            category: category.to_string(),
            name: name.to_string(),
        })
    }

    /// The file, relative to the manifest folder: `ROOT/addresses/current/city.json`.
    pub fn rel_path(&self, root: &str) -> String {
        format!(
            "{root}/{}/{}.json",
            self.category,
            self.name.replace('.', "/")
        )
    }
}

/// Untrusted text shown as data: escaped, quoted, cut to a readable length.
pub fn inert(s: &str) -> String {
    let cut: String = s.chars().take(120).collect();
    let mut q = format!("{cut:?}");
    if cut.len() < s.len() {
        q.push('…');
    }
    q.trim_matches('"').to_string()
}

/// A field value as ctx stores it: compact JSON of a string, object or array
/// (OpenContext content), wiped from memory when dropped.
pub type ValueText = Zeroizing<String>;

/// Check a value and return its compact JSON text.
pub fn value_text(v: &Value) -> Result<ValueText, FieldError> {
    match v {
        Value::String(_) | Value::Object(_) | Value::Array(_) => {}
        Value::Null => return Err(FieldError::ValueMissing),
        _ => return Err(FieldError::ValueKind),
    }
    let text = Zeroizing::new(serde_json::to_string(v).expect("JSON value"));
    if text.len() > MAX_VALUE_BYTES {
        return Err(FieldError::ValueTooLarge { bytes: text.len() });
    }
    Ok(text)
}

/// One earlier version, kept inside the field's ciphertext.
#[derive(Debug, Clone)]
pub struct Previous {
    pub version: u64,
    pub value: ValueText,
    pub written_by: String,
    pub updated_at: String,
    pub tier: Tier,
}

/// Everything a field's plaintext holds.
#[derive(Debug, Clone)]
pub struct FieldDoc {
    pub id: FieldId,
    pub tier: Tier,
    pub owner: String,
    pub version: u64,
    pub updated_at: String,
    pub value: ValueText,
    pub written_by: String,
    pub user_only_write: bool,
    /// Newest first.
    pub history: Vec<Previous>,
}

/// The field a vault file would hold (`personal/addresses/current/city.json` →
/// `addresses.current.city`), when the path is one.
pub fn field_of(root: &str, rel: &str) -> Option<String> {
    let inner = rel
        .strip_prefix(root)?
        .strip_prefix('/')?
        .strip_suffix(".json")?;
    let id = inner.replace('/', ".");
    FieldId::parse(&id).ok().map(|f| f.id)
}

impl FieldDoc {
    /// The plaintext a vault file holds: the document with its `generation` and
    /// the tag over it as the file `rel` ([`crate::personal::integrity`]).
    pub fn render_sealed(
        &self,
        key: &crate::personal::integrity::MacKey,
        rel: &str,
        generation: u64,
    ) -> Zeroizing<String> {
        let mut doc: Value = serde_json::from_str(&self.render()).expect("rendered JSON");
        crate::personal::integrity::seal(
            key,
            "field",
            rel,
            &mut doc,
            &["extensions", EXTENSION],
            generation,
        );
        let mut text = serde_json::to_string_pretty(&doc).expect("JSON value");
        text.push('\n');
        Zeroizing::new(text)
    }

    /// The plaintext document (JSON), wiped on drop.
    pub fn render(&self) -> Zeroizing<String> {
        let mut ext = Map::new();
        ext.insert("written_by".into(), json!(self.written_by));
        ext.insert("user_only_write".into(), json!(self.user_only_write));
        if !self.history.is_empty() {
            let h: Vec<Value> = self
                .history
                .iter()
                .map(|p| {
                    json!({
                        "version": p.version,
                        "content": serde_json::from_str::<Value>(&p.value).unwrap_or(Value::Null),
                        "written_by": p.written_by,
                        "updated": p.updated_at,
                        "classification": p.tier.classification().as_str(),
                    })
                })
                .collect();
            ext.insert("history".into(), Value::Array(h));
        }
        let mut doc = Map::new();
        doc.insert("id".into(), json!(self.id.id));
        doc.insert("type".into(), json!(FIELD_TYPE));
        doc.insert(
            "classification".into(),
            json!(self.tier.classification().as_str()),
        );
        doc.insert("owner".into(), json!(self.owner));
        doc.insert("version".into(), json!(self.version));
        doc.insert("updated".into(), json!(self.updated_at));
        doc.insert(
            "content".into(),
            serde_json::from_str::<Value>(&self.value).unwrap_or(Value::Null),
        );
        let mut exts = Map::new();
        exts.insert(EXTENSION.into(), Value::Object(ext));
        doc.insert("extensions".into(), Value::Object(exts));
        let mut text = serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON value");
        text.push('\n');
        Zeroizing::new(text)
    }

    /// Read a decrypted field from its fields (`Opened::fields`) and content.
    pub fn from_opened(
        fields: &Map<String, Value>,
        content: Option<&Value>,
    ) -> Result<FieldDoc, FieldError> {
        let id = fields
            .get("id")
            .and_then(Value::as_str)
            .ok_or(FieldError::NoId)?;
        let id = FieldId::parse(id)?;
        let tier = fields
            .get("classification")
            .and_then(Value::as_str)
            .and_then(crate::model::Classification::parse)
            .map(Tier::of)
            .ok_or(FieldError::NoClassification)?;
        let version = fields
            .get("version")
            .and_then(Value::as_u64)
            .filter(|v| *v >= 1)
            .ok_or(FieldError::NoVersion)?;
        let updated_at = fields
            .get("updated")
            .and_then(Value::as_str)
            .ok_or(FieldError::NoUpdated)?
            .to_string();
        let value = value_text(content.ok_or(FieldError::NoValue)?)?;
        let ext = fields
            .get("extensions")
            .and_then(|e| e.get(EXTENSION))
            .cloned()
            .unwrap_or(Value::Null);
        let written_by = ext
            .get("written_by")
            .and_then(Value::as_str)
            .unwrap_or("user")
            .to_string();
        let user_only_write = match ext.get("user_only_write") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(FieldError::UserOnlyWrite),
        };
        let mut history = Vec::new();
        for h in ext
            .get("history")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(content) = h.get("content") else {
                continue;
            };
            history.push(Previous {
                version: h.get("version").and_then(Value::as_u64).unwrap_or(0),
                value: Zeroizing::new(serde_json::to_string(content).expect("JSON value")),
                written_by: h
                    .get("written_by")
                    .and_then(Value::as_str)
                    .unwrap_or("user")
                    .to_string(),
                updated_at: h
                    .get("updated")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                tier: h
                    .get("classification")
                    .and_then(Value::as_str)
                    .and_then(crate::model::Classification::parse)
                    .map(Tier::of)
                    .unwrap_or(tier),
            });
        }
        Ok(FieldDoc {
            id,
            tier,
            owner: fields
                .get("owner")
                .and_then(Value::as_str)
                .unwrap_or("user")
                .to_string(),
            version,
            updated_at,
            value,
            written_by,
            user_only_write,
            history,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_paths() {
        let f = FieldId::parse("addresses.current.city").unwrap();
        assert_eq!(
            (f.category.as_str(), f.name.as_str()),
            ("addresses", "current.city")
        );
        assert_eq!(
            f.rel_path("personal"),
            "personal/addresses/current/city.json"
        );
        for bad in [
            "identity",
            "Identity.x",
            "identity._x",
            "identity..x",
            "a.b/c",
            "../x.y",
            "x.y\u{202e}",
        ] {
            assert!(FieldId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_are_content_shaped() {
        assert!(value_text(&json!("x")).is_ok());
        assert!(value_text(&json!({"a": 1})).is_ok());
        assert!(value_text(&json!(5)).is_err());
        assert!(value_text(&Value::Null).is_err());
        assert!(value_text(&json!("x".repeat(MAX_VALUE_BYTES + 1))).is_err());
    }

    #[test]
    fn document_round_trips() {
        let doc = FieldDoc {
            id: FieldId::parse("identity.full_name").unwrap(),
            tier: Tier::Standard,
            owner: "user".into(),
            version: 2,
            updated_at: "2026-03-15T10:00:00Z".into(),
            value: Zeroizing::new("\"Cool Cucumber\"".into()),
            written_by: "tax-agent".into(),
            user_only_write: false,
            history: vec![Previous {
                version: 1,
                value: Zeroizing::new("\"C. Cucumber\"".into()),
                written_by: "user".into(),
                updated_at: "2026-03-01T00:00:00Z".into(),
                tier: Tier::Standard,
            }],
        };
        let text = doc.render();
        let v: Map<String, Value> = serde_json::from_str(&text).unwrap();
        let back = FieldDoc::from_opened(&v, v.get("content")).unwrap();
        assert_eq!(back.render().as_str(), text.as_str());
        assert_eq!(back.history[0].written_by, "user");
    }

    #[test]
    fn errors_read_as_before_and_keep_hints_apart() {
        let e = value_text(&json!(true)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`value` must be a string, an object or an array"
        );
        let help = miette::Diagnostic::help(&e).map(|h| h.to_string());
        assert_eq!(
            help.as_deref(),
            Some("write numbers and booleans as strings")
        );
        assert_eq!(
            crate::error::one_line(&e),
            "`value` must be a string, an object or an array (write numbers and booleans as strings)"
        );
        assert_eq!(
            FieldId::parse("x\u{202e}").unwrap_err().to_string(),
            "a field id is `category.field_name` (e.g. `identity.full_name`), not `x\\u{202e}`"
        );
        assert!(miette::Diagnostic::help(&FieldError::NoId).is_none());
    }
}
