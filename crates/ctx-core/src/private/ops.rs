//! Sealing plaintext into the encrypted format and opening it again, for whole
//! files (the `ctx private` commands) and for loaded objects (resolution).

use serde_json::{Map, Value};
use zeroize::Zeroizing;

use crate::diag::Severity;
use crate::model::Redaction;
use crate::object::{ContextObject, Format};

use super::config::CollectionKeys;
use super::crypt::{self, CryptError};
use super::format::{self, CLEAR_FIELDS};
use super::identity::Keyring;
use super::SealError;

/// Why a private file or object could not be opened; the message names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError {
    pub file: String,
    pub cause: Cause,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    Crypt(CryptError),
    /// Decrypted, but the plaintext or its metadata is not acceptable.
    Invalid(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.cause {
            Cause::Crypt(e) => write!(f, "{}: {e}", self.file),
            Cause::Invalid(m) => write!(f, "{}: {m}", self.file),
        }
    }
}

impl std::error::Error for OpenError {}

impl OpenError {
    /// A missing or non-matching identity is a warning (the object is simply not
    /// available here); a damaged, tampered or inconsistent file is an error.
    pub fn severity(&self) -> Severity {
        match &self.cause {
            Cause::Crypt(CryptError::NoIdentity(_) | CryptError::WrongKey { .. }) => {
                Severity::Warning
            }
            _ => Severity::Error,
        }
    }

    /// What went wrong, without the file name.
    pub fn reason(&self) -> String {
        match &self.cause {
            Cause::Crypt(e) => e.to_string(),
            Cause::Invalid(m) => m.clone(),
        }
    }

    pub fn fix(&self) -> &'static str {
        match &self.cause {
            Cause::Crypt(e) => e.fix(),
            Cause::Invalid(_) => "open it with `ctx private edit FILE` and save it again, or restore it from version control",
        }
    }
}

/// Decrypt an armored block with whatever identity the run has.
pub fn decrypt(
    file: &str,
    armor: &str,
    keyring: Option<&Keyring>,
) -> Result<(Zeroizing<String>, String), OpenError> {
    let fail = |cause| OpenError {
        file: file.to_string(),
        cause,
    };
    let Some(ring) = keyring else {
        return Err(fail(Cause::Crypt(CryptError::NoIdentity(
            "none given: use --identity FILE, CTX_AGE_IDENTITY, or ~/.config/ctx/age/identity.txt"
                .into(),
        ))));
    };
    let keys = ring.keys().map_err(|e| {
        // The cause is one line: the identity's problem, then its own hint.
        let why = match miette::Diagnostic::help(&e) {
            Some(help) => format!("{e}; {help}"),
            None => e.to_string(),
        };
        fail(Cause::Crypt(CryptError::NoIdentity(why)))
    })?;
    let (bytes, used) = crypt::decrypt(armor, keys).map_err(|e| fail(Cause::Crypt(e)))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        fail(Cause::Invalid(
            "the decrypted plaintext is not UTF-8 text".into(),
        ))
    })?;
    Ok((Zeroizing::new(text.to_string()), ring.key_label(used)))
}

/// A whole encrypted file opened in memory (`ctx private decrypt`).
#[derive(Debug)]
pub struct OpenedFile {
    /// The original file, byte for byte.
    pub plaintext: Zeroizing<String>,
    /// The public label of the key that opened it.
    pub key: String,
    /// Clear fields that disagree with the encrypted copy.
    pub mismatched: Vec<String>,
}

/// Decrypt the file `shown` (its `text`): it must be marked encrypted,
/// and an identity is required (none is a usage error, exit 2).
pub fn open_file(
    shown: &str,
    format: Format,
    text: &str,
    keyring: Option<&Keyring>,
) -> crate::error::Result<OpenedFile> {
    use crate::error::Error;
    let sealed = format::parse_sealed(format, text)
        .map_err(|e| Error::Invalid(format!("{shown}: {e}")))?
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{shown} is not encrypted (no `extensions.ctx.private.encrypted: true`)"
            ))
        })?;
    if keyring.is_none() {
        super::scope::require_identity(None, &format!("{shown} is encrypted"))?;
    }
    let (plaintext, key) = decrypt(shown, &sealed.armor, keyring)
        .map_err(|e| Error::Invalid(format!("{e}\n  fix: {}", e.fix())))?;
    let mismatched = format::parse_plain(format, &plaintext)
        .map(|doc| mismatched(&sealed.header, &doc.fields))
        .unwrap_or_default();
    Ok(OpenedFile {
        plaintext,
        key,
        mismatched,
    })
}

/// Clear fields that disagree between the header and the encrypted copy. Fields
/// added to or dropped from a collection's `clear:` list later are tolerated.
pub fn mismatched(header: &Map<String, Value>, payload: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = header
        .iter()
        .filter(|(k, _)| k.as_str() != "extensions")
        .filter(|(k, v)| payload.get(k.as_str()) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    for k in CLEAR_FIELDS {
        if payload.contains_key(k) && !header.contains_key(k) {
            out.push(k.to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A decrypted object, in memory only.
#[derive(Debug, Clone)]
pub struct Opened {
    /// Every field except content: the loader's effective document overlaid with
    /// the decrypted fields.
    pub fields: Map<String, Value>,
    pub content: Option<Value>,
    /// The public label of the key that opened it, and its identity file.
    pub key: String,
}

impl Opened {
    /// The object's own `redact` rules (which may themselves be encrypted).
    pub fn redactions(&self) -> Vec<Redaction> {
        match self.fields.get("redact") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|r| serde_json::from_value(r.clone()).ok())
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Decrypt a loaded, already authorized object. Nothing is written anywhere.
pub fn open_object(o: &ContextObject, keyring: Option<&Keyring>) -> Result<Opened, OpenError> {
    let file = o.origin.file.as_str();
    let invalid = |m: String| OpenError {
        file: file.to_string(),
        cause: Cause::Invalid(m),
    };
    let Some(armor) = o.meta.sealed.as_deref() else {
        return Err(invalid("the object is not encrypted".into()));
    };
    let (plain, key) = decrypt(file, armor, keyring)?;
    let doc = format::parse_plain(o.origin.format, &plain)
        .map_err(|e| invalid(format!("the decrypted document cannot be parsed ({e})")))?;
    if format::is_marked(&doc.fields) {
        return Err(invalid(
            "the decrypted document is itself marked encrypted".into(),
        ));
    }
    let mut fields: Map<String, Value> = serde_json::from_str(o.document()).unwrap_or_default();
    format::strip_marker(&mut fields);
    let header: Map<String, Value> = fields
        .iter()
        .filter(|(k, _)| !o.supplied(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let bad = mismatched(&header, &doc.fields);
    if !bad.is_empty() {
        return Err(invalid(format!(
            "the clear metadata does not match the encrypted copy (field{} {}): the file was edited outside ctx or tampered with",
            if bad.len() == 1 { "" } else { "s" },
            bad.join(", ")
        )));
    }
    let mut payload = doc.fields;
    let mut content = payload.remove("content");
    if content.is_none() {
        if let Some(body) = doc.body.as_deref() {
            let body = body.trim_matches(['\n', '\r']);
            if !body.trim().is_empty() {
                content = Some(Value::String(body.to_string()));
            }
        }
    }
    for (k, v) in payload {
        fields.insert(k, v);
    }
    Ok(Opened {
        fields,
        content,
        key,
    })
}

/// The encrypted text for a file, and whether the existing ciphertext was kept.
#[derive(Debug)]
pub struct Sealing {
    pub text: String,
    pub reused: bool,
}

/// Check that `plaintext` is a document ctx may encrypt.
pub fn check_plaintext(format: Format, plaintext: &str) -> Result<format::Doc, SealError> {
    let doc = format::parse_plain(format, plaintext)?;
    if format::is_marked(&doc.fields) {
        return Err(SealError::AlreadyEncrypted);
    }
    if doc
        .fields
        .get("extensions")
        .and_then(|e| e.get(super::EXTENSION))
        .is_some()
    {
        return Err(SealError::ReservedMarker);
    }
    if doc.body.as_deref().is_some_and(format::is_armor) {
        return Err(SealError::UnmarkedArmor);
    }
    Ok(doc)
}

/// Encrypt `plaintext` for `keys`. When `existing` already encrypts the same
/// plaintext to the same recipients (checked by decrypting it), its ciphertext is
/// kept, so saving unchanged content leaves the file byte-identical.
pub fn seal(
    format: Format,
    plaintext: &str,
    keys: &CollectionKeys,
    existing: Option<&str>,
    keyring: Option<&Keyring>,
    force: bool,
) -> Result<Sealing, SealError> {
    let doc = check_plaintext(format, plaintext)?;
    let recipients = keys.keys();
    if recipients.is_empty() {
        return Err(SealError::NoRecipients(keys.name.clone()));
    }
    let header = format::clear_header(&doc.fields, &keys.clear);
    let reusable = (!force)
        .then_some(existing)
        .flatten()
        .and_then(|text| format::parse_sealed(format, text).ok().flatten())
        .filter(|s| s.recipients == recipients)
        .filter(|s| {
            keyring.is_some_and(|ring| {
                decrypt("", &s.armor, Some(ring)).is_ok_and(|(old, _)| old.as_str() == plaintext)
            })
        });
    let (armor, reused) = match reusable {
        Some(s) => (s.armor, true),
        None => {
            let list: Vec<_> = keys
                .recipients
                .iter()
                .map(|r| r.recipient.clone())
                .collect();
            (crypt::encrypt(plaintext.as_bytes(), &list)?, false)
        }
    };
    Ok(Sealing {
        text: format::render(format, &header, &recipients, &armor),
        reused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::private::config::{Recipient, RecipientEntry};
    use crate::private::identity::Key;

    fn setup() -> (Keyring, CollectionKeys) {
        let id = age::x25519::Identity::generate();
        let r = Recipient::X25519(id.to_public());
        let keys = CollectionKeys {
            name: "vault".into(),
            recipients: vec![RecipientEntry {
                key: r.key(),
                recipient: r,
                comment: None,
                source: "recipients[0]".into(),
            }],
            clear: Vec::new(),
        };
        (Keyring::from_keys(vec![Key::x25519(id)]), keys)
    }

    const PLAIN: &str = "---\nid: vault.passport\ntype: fact\nclassification: restricted\ntitle: Passport\n---\n\nNumber X1234567, expires 2031.\n";

    #[test]
    fn seal_hides_everything_but_governance() {
        let (ring, keys) = setup();
        let s = seal(Format::Markdown, PLAIN, &keys, None, Some(&ring), false).unwrap();
        assert!(!s.reused);
        assert!(s.text.contains("classification: restricted"));
        assert!(
            !s.text.contains("Passport") && !s.text.contains("X1234567"),
            "{}",
            s.text
        );
        let sealed = format::parse_sealed(Format::Markdown, &s.text)
            .unwrap()
            .unwrap();
        let (plain, key) = decrypt("f.md", &sealed.armor, Some(&ring)).unwrap();
        assert_eq!(plain.as_str(), PLAIN);
        assert!(key.starts_with("age1"));
    }

    #[test]
    fn unchanged_plaintext_keeps_bytes_and_changes_do_not() {
        let (ring, keys) = setup();
        let first = seal(Format::Markdown, PLAIN, &keys, None, Some(&ring), false)
            .unwrap()
            .text;
        let again = seal(
            Format::Markdown,
            PLAIN,
            &keys,
            Some(&first),
            Some(&ring),
            false,
        )
        .unwrap();
        assert!(again.reused);
        assert_eq!(again.text, first);
        // Without an identity the old ciphertext cannot be checked, so it is redone.
        let blind = seal(Format::Markdown, PLAIN, &keys, Some(&first), None, false).unwrap();
        assert!(!blind.reused);
        let edited = PLAIN.replace("2031", "2032");
        let changed = seal(
            Format::Markdown,
            &edited,
            &keys,
            Some(&first),
            Some(&ring),
            false,
        )
        .unwrap();
        assert!(!changed.reused && changed.text != first);
        let forced = seal(
            Format::Markdown,
            PLAIN,
            &keys,
            Some(&first),
            Some(&ring),
            true,
        )
        .unwrap();
        assert!(!forced.reused);
    }

    #[test]
    fn refuses_what_it_must_not_encrypt() {
        let (ring, keys) = setup();
        let sealed = seal(Format::Markdown, PLAIN, &keys, None, Some(&ring), false)
            .unwrap()
            .text;
        assert!(seal(Format::Markdown, &sealed, &keys, None, None, false)
            .unwrap_err()
            .to_string()
            .contains("already encrypted"));
        let body_only = "---\nid: a\n---\n-----BEGIN AGE ENCRYPTED FILE-----\nAAAA\n-----END AGE ENCRYPTED FILE-----\n";
        assert!(seal(Format::Markdown, body_only, &keys, None, None, false)
            .unwrap_err()
            .to_string()
            .contains("without the encryption marker"));
    }

    #[test]
    fn mismatch_detects_edited_header() {
        let h = serde_json::json!({"id": "a", "classification": "public"});
        let p = serde_json::json!({"id": "a", "classification": "restricted", "title": "t"});
        assert_eq!(
            mismatched(h.as_object().unwrap(), p.as_object().unwrap()),
            vec!["classification"]
        );
        let h = serde_json::json!({"id": "a"});
        assert_eq!(
            mismatched(h.as_object().unwrap(), p.as_object().unwrap()),
            vec!["classification"]
        );
        let h = serde_json::json!({"id": "a", "classification": "restricted"});
        assert!(mismatched(h.as_object().unwrap(), p.as_object().unwrap()).is_empty());
    }
}
