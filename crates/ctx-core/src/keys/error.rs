//! What can go wrong with signing keys: each case names the file or manifest
//! entry, what was expected, and (as a separate hint, not message text) the fix.

use std::path::PathBuf;

use super::EXTENSION;
use crate::error::Exit;

/// A signing-key failure. The hint is [`miette::Diagnostic::help`].
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum KeyError {
    #[error("key id `{id}`: expected 1-64 characters of a-z, 0-9, '.', '_', '-' starting with a letter or digit (e.g. release-bot)")]
    BadId { id: String },

    #[error("cannot find your configuration folder: neither XDG_CONFIG_HOME nor HOME is set to an absolute path")]
    #[diagnostic(help("set XDG_CONFIG_HOME to a private folder outside any repository"))]
    NoConfigFolder,

    #[error("{}: refusing to use this private key location: {why}", path.display())]
    #[diagnostic(help(
        "keep keys outside repositories; unset XDG_CONFIG_HOME or point it at a private folder such as ~/.config"
    ))]
    UnsafeLocation { path: PathBuf, why: String },

    /// No private key file for `id` (signing with it, or `ctx keys declare`): not found.
    #[error("{}: no private key `{id}` in this user's key folder", path.display())]
    #[diagnostic(help(
        "create one with `ctx keys generate --id {id} --declare`, or name one `ctx keys list` shows"
    ))]
    Missing { path: PathBuf, id: String },

    #[error("{}: a key named `{id}` already exists; keys are never overwritten", path.display())]
    #[diagnostic(help("choose another --id, or move the old key away first"))]
    Exists { path: PathBuf, id: String },

    /// A private key file that cannot be read, parsed or written.
    #[error("{}: {why}", path.display())]
    Unusable { path: PathBuf, why: String },

    /// Key generation failed (the system's random source).
    #[error("cannot generate a key: {0}")]
    Generate(String),

    #[error("key `{id}` is declared but malformed, so a verifier could not check its signatures: {detail}")]
    #[diagnostic(help(
        "re-declare it with the public key `ctx keys list` shows, or `ctx keys generate --id <new> --declare`"
    ))]
    Malformed { id: String, detail: String },

    #[error("no signing key: none of the keys declared in {manifest} (extensions.{EXTENSION}) has a private key in {}", folder.display())]
    #[diagnostic(help("run `ctx keys generate --id <name> --declare`"))]
    NoSigningKey { manifest: String, folder: PathBuf },

    #[error("several declared keys are available ({}); choose one with --key", ids.join(", "))]
    Ambiguous { ids: Vec<String> },

    /// `notes` lists other declared keys that are malformed.
    #[error("key `{id}` is not declared in {manifest} under extensions.{EXTENSION}, so a verifier would not trust its signatures{}", notes_suffix(notes))]
    #[diagnostic(help("run `ctx keys generate --id {id} --declare` for a new key"))]
    NotDeclared {
        id: String,
        manifest: String,
        notes: Vec<String>,
    },

    #[error("{}: the private key `{id}` does not match the public key declared in {manifest} (expected {expected}, found {found})", path.display())]
    #[diagnostic(help("declare this key's public half, or use the matching private key"))]
    Mismatch {
        path: PathBuf,
        id: String,
        manifest: String,
        expected: String,
        found: String,
    },

    #[error("the manifest does not parse: {0}")]
    ManifestUnparsable(String),

    #[error("extensions.{EXTENSION}.{id} is already declared with a different key")]
    #[diagnostic(help(
        "choose another --id, or remove the old entry first if the key was rotated"
    ))]
    DeclaredDifferently { id: String },

    /// The manifest's shape keeps ctx from inserting the entry textually.
    #[error("cannot add the key to the manifest automatically: {why}")]
    #[diagnostic(help(
        "add it by hand under `extensions:`:\n    {EXTENSION}:\n      {id}:\n        ed25519: \"{public}\""
    ))]
    CannotDeclare {
        why: String,
        id: String,
        public: String,
    },

    /// The textual edit would not round-trip (a bug in ctx, never the user's).
    #[error("internal error: {0}; nothing was written")]
    EditMismatch(String),

    #[error("{}: the manifest changed while ctx was editing it; nothing was written", path.display())]
    #[diagnostic(help("run the command again"))]
    ManifestChanged { path: PathBuf },
}

fn notes_suffix(notes: &[String]) -> String {
    if notes.is_empty() {
        String::new()
    } else {
        format!(" (also: {})", notes.join("; "))
    }
}

impl KeyError {
    /// The exit status this failure maps to.
    pub fn exit(&self) -> Exit {
        match self {
            KeyError::BadId { .. } | KeyError::Ambiguous { .. } => Exit::Usage,
            KeyError::Missing { .. } => Exit::NotFound,
            _ => Exit::Invalid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::Diagnostic;

    #[test]
    fn hints_are_separate_from_messages() {
        let e = KeyError::Missing {
            path: "/k/a.pem".into(),
            id: "a".into(),
        };
        assert!(!e.to_string().contains("help"));
        let help = e.help().expect("a hint").to_string();
        assert!(
            help.contains("ctx keys generate --id a --declare"),
            "{help}"
        );
        assert_eq!(e.exit(), Exit::NotFound);
    }

    #[test]
    fn usage_and_not_found_cases_map_to_their_exit_codes() {
        assert_eq!(KeyError::BadId { id: "X".into() }.exit(), Exit::Usage);
        assert_eq!(KeyError::Ambiguous { ids: vec![] }.exit(), Exit::Usage);
        let none = KeyError::Missing {
            path: "/k".into(),
            id: "a".into(),
        };
        assert_eq!(none.exit(), Exit::NotFound);
        assert!(none.help().is_some());
    }
}
