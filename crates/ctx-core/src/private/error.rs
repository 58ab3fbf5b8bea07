//! What can go wrong with private collections, by stage: the stored form of
//! an encrypted file (armor, clear header, marker), parsing a document,
//! sealing plaintext, reading identities and recipients. None of these
//! messages ever quotes plaintext: they name fields, lines and files.

use std::path::PathBuf;

use super::format::{BEGIN, END};
use super::identity::ENV_PASSPHRASE;
use super::EXTENSION;

/// Why a text is not exactly one canonical armored age block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArmorError {
    #[error("not one armored age block: it is empty")]
    Empty,
    #[error("not one armored age block: it must start with `{BEGIN}` and end with `{END}`, with nothing before or after")]
    NotOneBlock,
    /// `line` counts from the block's first line (the begin marker is line 1).
    #[error("not one armored age block: line {line} of the block is not canonical base64 armor (64 columns, one shorter last line); text inside or between blocks would be plaintext at rest")]
    NotBase64 { line: usize },
}

/// Why the clear part of an encrypted file is refused: it would store in
/// clear something that must be encrypted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("field `{0}` is stored in clear in an encrypted file; only governance fields (and a collection's `clear:` list) may stay in clear")]
    ClearField(String),
    #[error("`extensions` of an encrypted file must hold only the encryption marker")]
    ExtensionsNotMarker,
    #[error("`extensions.{0}` is stored in clear in an encrypted file; only `extensions.{EXTENSION}` may stay in clear")]
    ClearExtension(String),
    #[error("`extensions.{EXTENSION}.{0}` is not part of the encryption marker (encrypted, recipients, age)")]
    MarkerMember(String),
    /// `item` is the first entry that is not a normalized public key.
    #[error("`extensions.{EXTENSION}.recipients` must list the normalized public keys the file is encrypted to{}", item.map(|n| format!(" (item {n} is not one)")).unwrap_or_default())]
    Recipients { item: Option<usize> },
    #[error("line {0}: a YAML comment in the clear header of an encrypted file; comments are stored in clear, so remove it (keep notes inside the encrypted content)")]
    Comment(usize),
}

/// A document that does not parse. `message` never quotes the document's
/// text when it comes from [`super::format::parse_plain`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    pub line: u32,
    pub message: String,
}

/// Why a file cannot be read as, or turned into, an encrypted file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("an encrypted file must not also have a clear `content` field")]
    ClearContent,
    #[error("marked encrypted, but the body is {0} (`{BEGIN}` … `{END}`)")]
    Body(ArmorError),
    #[error("marked encrypted, but the body is not one `{BEGIN}` block: there is no body")]
    NoBody,
    #[error("a Markdown file keeps its ciphertext in the body, not in `age`")]
    InlineInMarkdown,
    #[error("`extensions.{EXTENSION}.age` is {0}")]
    Inline(ArmorError),
    #[error("marked encrypted, but `extensions.{EXTENSION}.age` is not an armored age block")]
    NoInline,
    #[error("it is already encrypted")]
    AlreadyEncrypted,
    #[error("`extensions.{EXTENSION}` is reserved for the encryption marker")]
    ReservedMarker,
    #[error("its body is an age block without the encryption marker; restore the original file or add the marker")]
    UnmarkedArmor,
    #[error("private collection `{0}` has no recipients")]
    NoRecipients(String),
    /// age refused to encrypt (an unusable recipient, an I/O failure in memory).
    #[error("cannot encrypt: {0}")]
    Encrypt(String),
}

/// Why an age identity file cannot be used. Key material is never quoted:
/// a bad line is named by number only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum IdentityError {
    #[error("identity file {} (from {origin}) does not exist", path.display())]
    Missing { path: PathBuf, origin: &'static str },
    #[error("cannot read identity file {}: {why}", path.display())]
    Unreadable { path: PathBuf, why: String },
    #[error("identity file {} is not a valid age file: {why}", path.display())]
    NotAgeFile { path: PathBuf, why: String },
    #[error("identity file {} is encrypted to recipients, not with a passphrase", path.display())]
    NotPassphrase { path: PathBuf },
    #[error("{} is passphrase-protected and there is no terminal to ask for the passphrase", path.display())]
    #[diagnostic(help("set {ENV_PASSPHRASE} for non-interactive use"))]
    NoTerminal { path: PathBuf },
    #[error("wrong passphrase for {} {}", if *ssh { "SSH key" } else { "identity file" }, path.display())]
    WrongPassphrase { path: PathBuf, ssh: bool },
    #[error("cannot decrypt identity file {}: {why}", path.display())]
    Decrypt { path: PathBuf, why: String },
    /// An SSH key age cannot use.
    #[error("identity file {}: {why}", path.display())]
    Unsupported { path: PathBuf, why: String },
    #[error("identity file {} is not text, an age identity file or an SSH key", path.display())]
    NotText { path: PathBuf },
    #[error("identity file {} line {line}: plugin identities are not supported by ctx", path.display())]
    Plugin { path: PathBuf, line: usize },
    #[error("identity file {} line {line}: not an age identity (expected AGE-SECRET-KEY-1…)", path.display())]
    BadLine { path: PathBuf, line: usize },
    #[error("identity file {} holds no keys", path.display())]
    Empty { path: PathBuf },
}

/// Why a recipient (a public key, or a recipients file) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecipientError {
    #[error("post-quantum and plugin recipients are not supported by ctx; use an X25519 (`age1…`) or SSH key")]
    Unsupported,
    #[error("not a valid age public key ({0})")]
    BadAge(String),
    #[error("not a usable SSH public key ({0})")]
    BadSsh(String),
    #[error(
        "expected an age public key (`age1…`) or an SSH public key (`ssh-ed25519 …`, `ssh-rsa …`)"
    )]
    Unknown,
    #[error("`{0}` must be a path inside the repository")]
    FileOutside(String),
    #[error("`{0}` does not exist inside the repository")]
    FileMissing(String),
    #[error("cannot read `{rel}`: {why}")]
    FileUnreadable { rel: String, why: String },
    #[error("`{0}` is not UTF-8 text")]
    FileNotText(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::Diagnostic;

    #[test]
    fn messages_keep_their_wording_and_hints_are_separate() {
        let e = SealError::Inline(ArmorError::NotBase64 { line: 3 });
        assert!(e.to_string().starts_with(
            "`extensions.ctx.private.age` is not one armored age block: line 3 of the block"
        ));
        let h = HeaderError::Recipients { item: Some(2) };
        assert!(h.to_string().ends_with("(item 2 is not one)"), "{h}");
        let t = IdentityError::NoTerminal {
            path: "/k.age".into(),
        };
        assert!(!t.to_string().contains(ENV_PASSPHRASE));
        assert!(t.help().unwrap().to_string().contains(ENV_PASSPHRASE));
        let w = IdentityError::WrongPassphrase {
            path: "/k".into(),
            ssh: true,
        };
        assert_eq!(w.to_string(), "wrong passphrase for SSH key /k");
    }
}
