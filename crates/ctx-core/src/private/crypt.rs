//! age encryption (always ASCII-armored) and decryption in memory, with errors
//! precise enough to tell a wrong key from a damaged or tampered file.

use std::io::{Read, Write};

use age::armor::{ArmoredReadError, ArmoredReader, ArmoredWriter, Format as ArmorFormat};
use age::{DecryptError, Decryptor, Encryptor};
use zeroize::Zeroizing;

use super::config::Recipient;
use super::identity::Key;
use super::SealError;

/// Why a ciphertext could not be opened. Messages never include plaintext.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CryptError {
    /// No identity was available at all.
    NoIdentity(String),
    /// None of the identity's keys is a recipient of the file.
    WrongKey { tried: usize },
    /// The ciphertext ends early.
    Truncated(String),
    /// Authentication failed: the ciphertext or its header was changed.
    Tampered(String),
    /// Not a well-formed armored age file.
    Malformed(String),
    /// Anything else (I/O, unsupported header features).
    Other(String),
}

impl std::fmt::Display for CryptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CryptError::NoIdentity(why) => write!(f, "no age identity to decrypt with ({why})"),
            CryptError::WrongKey { tried } => write!(
                f,
                "wrong key: none of the {tried} key(s) in the identity is a recipient of this file"
            ),
            CryptError::Truncated(d) => write!(f, "the ciphertext is truncated ({d})"),
            CryptError::Tampered(d) => write!(
                f,
                "the ciphertext failed authentication: it was truncated, damaged or tampered with ({d})"
            ),
            CryptError::Malformed(d) => write!(f, "the ciphertext is malformed ({d})"),
            CryptError::Other(d) => write!(f, "cannot decrypt: {d}"),
        }
    }
}

impl std::error::Error for CryptError {}

impl CryptError {
    /// The remediation for people.
    pub fn fix(&self) -> &'static str {
        match self {
            CryptError::NoIdentity(_) => "pass --identity FILE, set CTX_AGE_IDENTITY, or put your key in ~/.config/ctx/age/identity.txt",
            CryptError::WrongKey { .. } => "use an identity whose public key is among the collection's recipients, or ask a recipient to run `ctx private rekey` after adding you",
            CryptError::Truncated(_) | CryptError::Tampered(_) | CryptError::Malformed(_) => "restore the file from version control (`git checkout -- FILE`) and re-apply the change with `ctx private edit`",
            CryptError::Other(_) => "check the identity and the file",
        }
    }
}

/// Classify an I/O error raised while reading armor or the payload stream.
fn from_io(e: &std::io::Error) -> CryptError {
    if let Some(inner) = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<ArmoredReadError>())
    {
        return CryptError::Malformed(format!("armor: {inner}"));
    }
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => CryptError::Truncated(e.to_string()),
        std::io::ErrorKind::InvalidData => {
            let msg = e.to_string();
            if msg.contains("armor") || msg.contains("Base64") || msg.contains("base64") {
                CryptError::Malformed(msg)
            } else {
                CryptError::Tampered(msg)
            }
        }
        _ => CryptError::Other(e.to_string()),
    }
}

fn from_decrypt(e: DecryptError) -> CryptError {
    match e {
        DecryptError::Io(io) => from_io(&io),
        DecryptError::InvalidMac => CryptError::Tampered("header MAC mismatch".into()),
        DecryptError::DecryptionFailed => {
            CryptError::Tampered("payload authentication failed".into())
        }
        DecryptError::InvalidHeader => CryptError::Malformed("invalid age header".into()),
        DecryptError::UnknownFormat => CryptError::Malformed("not an age v1 file".into()),
        DecryptError::NoMatchingKeys => CryptError::WrongKey { tried: 0 },
        other => CryptError::Other(other.to_string()),
    }
}

/// Encrypt `plaintext` to `recipients`, ASCII-armored (a fresh file key every time).
pub fn encrypt(plaintext: &[u8], recipients: &[Recipient]) -> Result<String, SealError> {
    let failed = |e: &dyn std::fmt::Display| SealError::Encrypt(e.to_string());
    let encryptor = Encryptor::with_recipients(recipients.iter().map(Recipient::as_dyn))
        .map_err(|e| failed(&e))?;
    let mut out = Vec::with_capacity(plaintext.len() * 4 / 3 + 512);
    let armored =
        ArmoredWriter::wrap_output(&mut out, ArmorFormat::AsciiArmor).map_err(|e| failed(&e))?;
    let mut w = encryptor.wrap_output(armored).map_err(|e| failed(&e))?;
    w.write_all(plaintext).map_err(|e| failed(&e))?;
    w.finish()
        .and_then(|armored| armored.finish())
        .map_err(|e| failed(&e))?;
    let mut text = String::from_utf8(out).map_err(|e| failed(&e))?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Decrypt an armored block with the first key that is a recipient. Returns the
/// plaintext (wiped on drop) and the index of the key that opened it.
pub fn decrypt(armor: &str, keys: &[Key]) -> Result<(Zeroizing<Vec<u8>>, usize), CryptError> {
    if keys.is_empty() {
        return Err(CryptError::NoIdentity("the identity holds no keys".into()));
    }
    for (i, key) in keys.iter().enumerate() {
        // The header is parsed once per key: a Decryptor is consumed by each attempt,
        // and trying keys one by one tells `--explain` which one worked.
        let d = Decryptor::new(ArmoredReader::new(armor.as_bytes())).map_err(from_decrypt)?;
        match d.decrypt(std::iter::once(key.identity() as &dyn age::Identity)) {
            Ok(mut reader) => {
                let mut buf = Zeroizing::new(Vec::with_capacity(armor.len()));
                reader.read_to_end(&mut buf).map_err(|e| from_io(&e))?;
                return Ok((buf, i));
            }
            Err(DecryptError::NoMatchingKeys) => continue,
            Err(e) => return Err(from_decrypt(e)),
        }
    }
    Err(CryptError::WrongKey { tried: keys.len() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::private::identity::Key;

    fn pair() -> (Key, Recipient) {
        let id = age::x25519::Identity::generate();
        let r = Recipient::X25519(id.to_public());
        (Key::x25519(id), r)
    }

    #[test]
    fn round_trip_and_randomized() {
        let (k, r) = pair();
        let a = encrypt(b"hello", std::slice::from_ref(&r)).unwrap();
        let b = encrypt(b"hello", &[r]).unwrap();
        assert!(a.starts_with(super::super::format::BEGIN) && a.ends_with("-----\n"));
        assert_ne!(a, b, "age encryption is randomized");
        let (plain, used) = decrypt(&a, std::slice::from_ref(&k)).unwrap();
        assert_eq!((&plain[..], used), (&b"hello"[..], 0));
    }

    #[test]
    fn second_key_is_reported() {
        let (k1, _) = pair();
        let (k2, r2) = pair();
        let a = encrypt(b"x", &[r2]).unwrap();
        assert_eq!(decrypt(&a, &[k1, k2]).unwrap().1, 1);
    }

    #[test]
    fn wrong_truncated_tampered_are_distinct() {
        let (k, r) = pair();
        let (other, _) = pair();
        let a = encrypt(&[7u8; 2000], &[r]).unwrap();
        assert_eq!(
            decrypt(&a, std::slice::from_ref(&other)).unwrap_err(),
            CryptError::WrongKey { tried: 1 }
        );

        let lines: Vec<&str> = a.lines().collect();
        let truncated = format!(
            "{}\n{}\n",
            lines[..lines.len() - 3].join("\n"),
            lines[lines.len() - 1]
        );
        // Within one STREAM chunk, a cut is indistinguishable from tampering.
        let e = decrypt(&truncated, std::slice::from_ref(&k)).unwrap_err();
        assert!(matches!(e, CryptError::Tampered(_)), "{e:?}");
        assert!(e.to_string().contains("truncated"), "{e}");
        // Cut inside the header: the reader runs out of input.
        let head = format!("{}\n{}\n{}\n", lines[0], lines[1], lines[lines.len() - 1]);
        let e = decrypt(&head, std::slice::from_ref(&k)).unwrap_err();
        assert!(
            matches!(e, CryptError::Truncated(_) | CryptError::Malformed(_)),
            "{e:?}"
        );

        // Flip one base64 character in the payload (second to last data line).
        let mut t: Vec<String> = a.lines().map(str::to_string).collect();
        let n = t.len() - 3;
        let c = t[n].remove(10);
        t[n].insert(10, if c == 'A' { 'B' } else { 'A' });
        let tampered = t.join("\n") + "\n";
        let e = decrypt(&tampered, std::slice::from_ref(&k)).unwrap_err();
        assert!(matches!(e, CryptError::Tampered(_)), "{e:?}");
    }
}
