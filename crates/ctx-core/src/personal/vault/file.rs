//! One field file: authenticated against the vault's index, decrypted with its
//! category's identity, and parsed as the loader would.

use crate::error::{Error, Result};
use crate::fs::RelPath;
use crate::load::parse::{self, Defaults};
use crate::load::walk::{Member, MemberSource};
use crate::manifest::Manifest;
use crate::object::ContextObject;
use crate::personal::field::{FieldDoc, FieldError, FIELD_TYPE};
use crate::personal::integrity::{self, Index, MacKey, Unsealed, Verdict};
use crate::personal::EXTENSION;
use crate::private::Keyring;

/// How a field file is authenticated.
#[derive(Clone, Copy)]
pub(super) enum Auth<'a> {
    /// Its tag must hold and its generation be the one the index lists.
    Index(&'a MacKey, &'a Index),
    /// Read for an upgrade (no index yet): an untagged file is taken as it is, a
    /// tagged one must verify.
    Upgrade(&'a MacKey),
}

/// Decrypt one loaded field object with its category's identity, authenticated as
/// `auth` says. Returns the document and the generation its tag carries.
pub(super) fn open_field(
    o: &ContextObject,
    ring: &Keyring,
    category: &str,
    root: &str,
    auth: Auth<'_>,
) -> std::result::Result<(FieldDoc, Option<u64>), FieldError> {
    if o.meta.kind != FIELD_TYPE {
        return Err(FieldError::NotAField(o.meta.kind.clone()));
    }
    let Some(armor) = o.meta.sealed.as_deref() else {
        return Err(FieldError::NotEncrypted);
    };
    let rel = o.origin.file.as_str();
    let (plain, _) = crate::private::ops::decrypt(rel, armor, Some(ring))
        .map_err(|e| FieldError::Unopened(e.reason()))?;
    let plain: serde_json::Value = serde_json::from_str(&plain)
        .map_err(|_| FieldError::Unopened("the decrypted document is not JSON".into()))?;
    let generation = match auth {
        Auth::Upgrade(key) => {
            match integrity::open(key, "field", rel, &plain, &["extensions", EXTENSION]) {
                Ok(g) => Some(g),
                Err(Unsealed::Missing) => None,
                Err(Unsealed::Wrong) => return Err(FieldError::Forged),
            }
        }
        Auth::Index(key, index) => {
            let g = integrity::open(key, "field", rel, &plain, &["extensions", EXTENSION])
                .map_err(|u| match u {
                    Unsealed::Missing => FieldError::Untagged,
                    Unsealed::Wrong => FieldError::Forged,
                })?;
            match index.judge(index.files.get(rel).copied(), g) {
                Verdict::Current | Verdict::Ahead => Some(g),
                Verdict::Stale { found, listed } => {
                    return Err(FieldError::Stale { found, listed })
                }
                Verdict::Unlisted { found } => return Err(FieldError::Unlisted { found }),
            }
        }
    };
    drop(plain);
    let opened =
        crate::private::open_object(o, Some(ring)).map_err(|e| FieldError::Unopened(e.reason()))?;
    let doc = FieldDoc::from_opened(&opened.fields, opened.content.as_ref())?;
    if doc.id.category != category {
        return Err(FieldError::WrongFolder {
            id: doc.id.id,
            category: category.to_string(),
        });
    }
    if doc.id.rel_path(root) != rel {
        return Err(FieldError::Forged);
    }
    Ok((doc, generation))
}

/// Parse a sealed field file into an object, as the loader would.
pub(super) fn parse_object(m: &Manifest, rel: &RelPath, text: &str) -> Result<ContextObject> {
    let (name, base) = m.members.collection_of(rel).ok_or_else(|| {
        Error::Invalid(format!(
            "{} is not inside a collection of {}",
            rel.as_str(),
            m.file
        ))
    })?;
    let member = Member {
        rel: rel.clone(),
        abs: rel.to_path(&m.root),
        source: MemberSource::Collection {
            name: name.into(),
            base: base.as_str().into(),
        },
    };
    let parsed = parse::parse(&member, text.as_bytes(), &Defaults::for_member(m, &member));
    if let Some(d) = parsed
        .diags
        .iter()
        .find(|d| d.severity == crate::diag::Severity::Error)
    {
        return Err(Error::Invalid(format!("{}: {}", rel.as_str(), d.message)));
    }
    parsed
        .object
        .ok_or_else(|| Error::Invalid(format!("{}: not an object", rel.as_str())))
}
