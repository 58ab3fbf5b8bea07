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
) -> Result<Option<Vec<u8>>, String> {
    if m.extension(crate::private::EXTENSION).is_none() {
        return Ok(None);
    }
    let (cfg, diags) = PrivateConfig::from_manifest(m);
    if let Some(d) = diags.iter().find(|d| d.severity == Severity::Error) {
        return Err(format!(
            "the manifest's `extensions.{}` has errors, so ctx cannot tell whether {rel} must be encrypted or for whom: {} (run `ctx validate`)",
            crate::private::EXTENSION,
            d.message
        ));
    }
    let Some(MemberSource::Collection { name, .. }) = super::member_source(m, rel) else {
        return Ok(None);
    };
    let Some(keys) = cfg.collection(&name) else {
        return Ok(None);
    };
    let text = std::str::from_utf8(plaintext).map_err(|_| format!("{rel}: not UTF-8 text"))?;
    let sealed = ops::seal(format, text, keys, None, None, false)
        .map_err(|e| format!("cannot encrypt {rel} for private collection `{name}`: {e}"))?;
    Ok(Some(sealed.text.into_bytes()))
}
