//! Documents (seed 004 §2: "uploaded files with metadata — each with type,
//! issue_date, expiry_date"). A document is a field of the `documents` category
//! whose value is an object: its metadata, and optionally the file itself as
//! base64, all inside the field's ciphertext (docs/personal.md, "Documents").

use base64::Engine as _;
use serde_json::Value;

/// Why a document's value is refused (never quoting the value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum DocumentError {
    #[error("a document (`documents.NAME`) is an object with at least `type`")]
    #[diagnostic(help(
        "send {{\"value\": {{\"type\": \"passport\", \"issue_date\": \"2021-03-01\", \"expiry_date\": \"2031-03-01\"}}}}"
    ))]
    NotAnObject,
    #[error("a document's `type` must be a non-empty string")]
    Type,
    #[error("a document's `{0}` must be a date YYYY-MM-DD")]
    Date(&'static str),
    #[error("a document's `file` must be an object with `media_type` and `base64` strings")]
    File,
    #[error("a document's `file.base64` is not valid base64")]
    Base64,
}

/// Is `id`'s value a document (the top level of the `documents` category)?
pub fn is_document(category: &str, name: &str) -> bool {
    category == "documents" && !name.contains('.')
}

/// Check a document's value: metadata fields typed, dates real, the file decodable.
pub fn check(value: &Value) -> Result<(), DocumentError> {
    let o = value.as_object().ok_or(DocumentError::NotAnObject)?;
    match o.get("type") {
        Some(Value::String(t)) if !t.trim().is_empty() => {}
        _ => return Err(DocumentError::Type),
    }
    for key in ["issue_date", "expiry_date"] {
        if let Some(v) = o.get(key) {
            let ok = v.as_str().is_some_and(|d| {
                chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok() && d.len() == 10
            });
            if !ok {
                return Err(DocumentError::Date(key));
            }
        }
    }
    if let Some(f) = o.get("file") {
        let (Some(_), Some(b64)) = (
            f.get("media_type").and_then(Value::as_str),
            f.get("base64").and_then(Value::as_str),
        ) else {
            return Err(DocumentError::File);
        };
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| DocumentError::Base64)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_are_typed_objects_with_real_dates_and_decodable_files() {
        assert!(check(
            &json!({"type": "passport", "issue_date": "2021-03-01", "expiry_date": "2031-03-01"})
        )
        .is_ok());
        assert!(check(&json!({"type": "lease", "file": {"name": "lease.pdf", "media_type": "application/pdf", "base64": "JVBERi0="}})).is_ok());
        assert_eq!(check(&json!("a passport")), Err(DocumentError::NotAnObject));
        assert_eq!(
            check(&json!({"expiry_date": "2031-01-01"})),
            Err(DocumentError::Type)
        );
        assert_eq!(
            check(&json!({"type": "x", "expiry_date": "2031-02-30"})),
            Err(DocumentError::Date("expiry_date"))
        );
        assert_eq!(
            check(&json!({"type": "x", "issue_date": "1.1.2020"})),
            Err(DocumentError::Date("issue_date"))
        );
        assert_eq!(
            check(&json!({"type": "x", "file": {"base64": "AA=="}})),
            Err(DocumentError::File)
        );
        assert_eq!(
            check(&json!({"type": "x", "file": {"media_type": "a/b", "base64": "*"}})),
            Err(DocumentError::Base64)
        );
        assert!(
            is_document("documents", "passport") && !is_document("documents", "passport.number")
        );
        assert!(!is_document("identity", "passport"));
    }
}
