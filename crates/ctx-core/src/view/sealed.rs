//! Private objects as a consumer sees them: decrypted in memory — only after the
//! view has authorized the object — and redacted exactly like inline content.
//! What `get` prints of a private object, like `resolve` includes it.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::private::Keyring;

use super::{Document, Source, View, Withheld};

/// What became of a private object's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opening {
    /// Not a private object: nothing to decrypt.
    Clear,
    /// Decrypted with this key (its public label).
    Opened(String),
    /// Not decrypted here (no identity, or none of them opens it): why, without values.
    Unavailable(String),
}

impl View<'_> {
    /// Object `i`'s document with a private object's fields and content decrypted by
    /// `keyring` and redacted for this consumer. Authorization comes first: a denied
    /// object is never decrypted. Without a usable identity the clear document is
    /// returned with [`Opening::Unavailable`]; a damaged or tampered file is an error.
    pub fn document_opened(
        &self,
        i: usize,
        keyring: Option<&Keyring>,
    ) -> Result<(Document, Opening)> {
        let withheld = |w: Withheld| {
            let o = &self.repo.objects[i];
            Error::Invalid(format!("`{}` is withheld: {}", o.key(), w.detail))
        };
        let mut doc = self.document(i).map_err(withheld)?;
        let o = &self.repo.objects[i];
        if o.meta.sealed.is_none() {
            return Ok((doc, Opening::Clear));
        }
        let opened = match crate::private::open_object(o, keyring) {
            Ok(opened) => opened,
            Err(e) if e.severity() == crate::diag::Severity::Warning => {
                return Ok((doc, Opening::Unavailable(e.reason())));
            }
            Err(e) => return Err(Error::Invalid(format!("{e}\n  fix: {}", e.fix()))),
        };
        let shown = self
            .source_content(
                opened.fields.get("redact"),
                Source::Inline(opened.content.as_ref()),
            )
            .map_err(withheld)?;
        let mut fields: Map<String, Value> = opened.fields;
        super::super::private::format::strip_marker(&mut fields);
        match shown.content {
            Some(c) => {
                fields.insert("content".into(), c.into_owned());
            }
            None => {
                fields.remove("content");
            }
        }
        if !shown.redacted.is_empty() {
            fields.insert("redacted".into(), Value::from(shown.redacted));
        }
        doc.fields = fields;
        Ok((doc, Opening::Opened(opened.key)))
    }
}
