//! Writes into a private collection are encrypted before they leave memory: the
//! planned plaintext is sealed for the collection's recipients and only the sealed
//! text is ever written (no plaintext on disk, not even a temporary file).

use crate::diag::Severity;
use crate::load::walk::MemberSource;
use crate::manifest::Manifest;
use crate::object::Format;
use crate::private::{ops, PrivateConfig};

/// The bytes to write at `rel`: `plaintext` sealed when `rel` belongs to a private
/// collection (Some), or None for a clear collection. A private configuration with
/// errors refuses rather than guess the recipients.
pub fn seal_if_private(
    m: &Manifest,
    rel: &str,
    format: Format,
    plaintext: &[u8],
) -> Result<Option<Vec<u8>>, super::WriteError> {
    use super::WriteError;
    if m.extension(crate::private::EXTENSION).is_none() {
        return Ok(None);
    }
    let (cfg, diags) = PrivateConfig::from_manifest(m);
    if let Some(d) = diags.iter().find(|d| d.severity == Severity::Error) {
        return Err(WriteError::PrivateConfig {
            rel: rel.to_string(),
            why: d.message.clone(),
        });
    }
    let Some(MemberSource::Collection { name, .. }) = super::member_source(m, rel) else {
        return Ok(None);
    };
    let Some(keys) = cfg.collection(&name) else {
        return Ok(None);
    };
    let text = std::str::from_utf8(plaintext).map_err(|_| WriteError::NotText(rel.to_string()))?;
    let sealed =
        ops::seal(format, text, keys, None, None, false).map_err(|source| WriteError::Seal {
            rel: rel.to_string(),
            collection: name.to_string(),
            source,
        })?;
    Ok(Some(sealed.text.into_bytes()))
}
