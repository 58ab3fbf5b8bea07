//! The MAC input (eleven ASCII lines, each followed by LF) and HMAC-SHA256
//! over it. Nothing is normalised: every component is used exactly as it was
//! received, and a component that is empty or holds anything but printable
//! ASCII without spaces cannot be signed at all.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::PROFILE;
use crate::canonical::sha256_hex;

type HmacSha256 = Hmac<Sha256>;

/// The request components the MAC covers, besides the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacFields<'a> {
    pub method: &'a str,
    /// The `Host` header exactly as sent (with the port; IPv6 in brackets).
    pub host: &'a str,
    /// The request target exactly as sent (path and query).
    pub target: &'a str,
    pub provider_id: &'a str,
    pub instance_id: &'a str,
    pub key_id: &'a str,
    /// Unix seconds, in the decimal text that was sent.
    pub issued: &'a str,
    pub expires: &'a str,
    pub nonce: &'a str,
}

/// Printable ASCII other than space (0x21..=0x7e), at least one character.
pub(super) fn is_signable(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// The exact bytes the MAC is computed over. `Err` names the first component
/// that cannot be signed.
pub fn mac_input(f: &MacFields<'_>, body: &[u8]) -> Result<Vec<u8>, &'static str> {
    let digest = sha256_hex(body);
    let lines: [(&'static str, &str); 11] = [
        ("profile", PROFILE),
        ("method", f.method),
        ("host", f.host),
        ("target", f.target),
        ("provider", f.provider_id),
        ("instance", f.instance_id),
        ("key id", f.key_id),
        ("issued", f.issued),
        ("expires", f.expires),
        ("nonce", f.nonce),
        ("body digest", &digest),
    ];
    let mut out = Vec::with_capacity(lines.iter().map(|(_, l)| l.len() + 1).sum());
    for (name, line) in lines {
        if !is_signable(line) {
            return Err(name);
        }
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    Ok(out)
}

/// HMAC-SHA256 of `input` under `secret`, as 64 lowercase hex characters.
pub fn sign_hex(secret: &[u8; 32], input: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(input);
    hex::encode(mac.finalize().into_bytes())
}

/// Does `signature_hex` (64 lowercase hex characters) authenticate `input`?
/// The comparison takes the same time wherever the first differing byte is.
pub fn verify_hex(secret: &[u8; 32], input: &[u8], signature_hex: &str) -> bool {
    let Ok(given) = hex::decode(signature_hex) else {
        return false;
    };
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(input);
    mac.verify_slice(&given).is_ok()
}

/// What a caller (a host, or a test) sends: the eight authentication headers
/// for one request, signed with `secret`. `nonce` is 64 lowercase hex.
#[derive(Debug, Clone)]
pub struct SignedHeaders {
    pub headers: Vec<(&'static str, String)>,
}

/// Sign a request the way the profile asks a host to.
#[allow(clippy::too_many_arguments)]
pub fn sign_request(
    secret: &[u8; 32],
    method: &str,
    host: &str,
    target: &str,
    provider_id: &str,
    instance_id: &str,
    key_id: &str,
    issued: i64,
    expires: i64,
    nonce: &str,
    body: &[u8],
) -> Result<SignedHeaders, &'static str> {
    let (issued, expires) = (issued.to_string(), expires.to_string());
    let f = MacFields {
        method,
        host,
        target,
        provider_id,
        instance_id,
        key_id,
        issued: &issued,
        expires: &expires,
        nonce,
    };
    let signature = sign_hex(secret, &mac_input(&f, body)?);
    Ok(SignedHeaders {
        headers: vec![
            ("X-AtMem-Profile", PROFILE.to_string()),
            ("X-AtMem-Provider", provider_id.to_string()),
            ("X-AtMem-Instance", instance_id.to_string()),
            ("X-AtMem-Key-Id", key_id.to_string()),
            ("X-AtMem-Issued", issued),
            ("X-AtMem-Expires", expires),
            ("X-AtMem-Nonce", nonce.to_string()),
            ("X-AtMem-Signature", signature),
        ],
    })
}

/// 32 bytes from the OS CSPRNG as 64 lowercase hex characters: a fresh nonce.
pub fn random_nonce() -> std::io::Result<String> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(hex::encode(b))
}
