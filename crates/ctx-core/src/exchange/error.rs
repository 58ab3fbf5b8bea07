//! Protocol errors: a stable machine code from the Context Layer local-core
//! profile (or ctx's own, in the same UPPER_SNAKE form) and a safe message.
//!
//! Messages name fields, expected and actual shapes and a fix, but never carry
//! payload bytes, secrets or policy internals: they may be shown to a consumer.

use std::fmt;

/// A rejected operation. Nothing was acted on when one of these is returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClError {
    /// Stable code, e.g. `BUNDLE_REPLAY`.
    pub code: &'static str,
    pub message: String,
}

impl ClError {
    pub fn new(code: &'static str, message: impl Into<String>) -> ClError {
        ClError {
            code,
            message: message.into(),
        }
    }

    /// How the CLI maps the error to an exit status.
    pub fn kind(&self) -> ErrorKind {
        match self.code {
            "USAGE" => ErrorKind::Usage,
            "NOT_FOUND" | "REQUEST_NOT_FOUND" | "DECISION_NOT_FOUND" | "PROPOSAL_NOT_FOUND"
            | "RECEIPT_NOT_FOUND" | "BUNDLE_NOT_FOUND" | "REQUESTER_UNKNOWN" => ErrorKind::NotFound,
            _ => ErrorKind::Rejected,
        }
    }

    /// The 0.2-draft `error` object a JSON front end prints for this error.
    pub fn document(&self, at: crate::time::Instant) -> serde_json::Value {
        use serde_json::json;
        let mut m = serde_json::Map::new();
        m.insert("spec_version".into(), json!("context-layer/0.2-draft"));
        m.insert("type".into(), json!("error"));
        m.insert("created_at".into(), json!(super::canon::iso_ms(&at)));
        m.insert("issuer".into(), json!({"id": "urn:cl:gateway:ctx"}));
        m.insert("code".into(), json!(self.code));
        m.insert("message".into(), json!(self.message));
        m.insert("retryable".into(), json!(self.retryable()));
        super::canon::finalize(m, "urn:cl:error:")
    }

    /// Whether trying again later can succeed without changing the input.
    pub fn retryable(&self) -> bool {
        matches!(
            self.code,
            "RECEIPT_PREFLIGHT_FAILED"
                | "RECEIPT_STORE_UNAVAILABLE"
                | "RECEIPT_LOCK_TIMEOUT"
                | "REVOCATION_CHECK_FAILED"
                | "RATE_LIMITED"
                | "INDETERMINATE_OUTCOME"
        )
    }
}

/// Coarse classes of failure, for exit statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Usage,
    NotFound,
    Rejected,
}

impl fmt::Display for ClError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ClError {}

/// Shorthand used throughout the exchange modules.
pub type ClResult<T> = Result<T, ClError>;

/// `Err(ClError)` in one call.
pub fn fail<T>(code: &'static str, message: impl Into<String>) -> ClResult<T> {
    Err(ClError::new(code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_document_names_code_message_and_retry() {
        let at = crate::time::parse_timestamp("2026-08-09T12:00:00Z").unwrap();
        let e = ClError::new("RECEIPT_LOCK_TIMEOUT", "busy");
        let d = e.document(at);
        assert_eq!(d["type"], "error");
        assert_eq!(d["code"], "RECEIPT_LOCK_TIMEOUT");
        assert_eq!(d["message"], "busy");
        assert_eq!(d["retryable"], true);
        assert!(d["id"].as_str().unwrap().starts_with("urn:cl:error:"));
        assert_eq!(d, e.document(at), "deterministic");
        assert_eq!(ClError::new("USAGE", "x").document(at)["retryable"], false);
    }
}
