//! Why a write is refused. Every refusal leaves the repository as it was.

use std::path::PathBuf;

use crate::error::{Error, Exit};
use crate::private::SealError;

use super::WRITE_EXTENSION;

/// A refused or failed write.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum WriteError {
    /// The consumer's roles do not resolve (an unknown or cyclic role).
    #[error("{0}")]
    Scope(String),

    #[error("{who} is denied `{id}` by its permissions.deny")]
    Denied { who: String, id: String },

    #[error("{who} may not read `{id}`, so it may not write it either")]
    Unreadable { who: String, id: String },

    #[error("{who} has no write grant for `{id}`: writes are never implicit")]
    #[diagnostic(help(
        "grant it with `permissions.write: [{consumer}]` on the existing object, or under `extensions.{WRITE_EXTENSION}` in the manifest"
    ))]
    NoGrant {
        who: String,
        id: String,
        consumer: String,
    },

    #[error("{0}: not a plain path inside the repository")]
    NotPlain(String),

    #[error("{0} changed while ctx was writing; nothing of it was replaced")]
    #[diagnostic(help("run the command again"))]
    Changed(String),

    #[error("{0} already exists; ctx never replaces an existing file")]
    #[diagnostic(help("choose another --file"))]
    Exists(String),

    #[error("{}: {why}", path.display())]
    Io { path: PathBuf, why: String },

    /// `--set` is not `KEY=VALUE`.
    #[error("`{0}`: expected KEY=VALUE, e.g. status=draft")]
    NotAssignment(String),

    #[error("`{0}`: a field name is lowercase letters, digits and `_`")]
    BadFieldName(String),

    #[error("`{0}` is set by ctx itself (use the id argument, --type or --content)")]
    Reserved(String),

    /// The private configuration has errors, so the recipients are unknown.
    #[error("the manifest's `extensions.{}` has errors, so ctx cannot tell whether {rel} must be encrypted or for whom: {why}", crate::private::EXTENSION)]
    #[diagnostic(help("run `ctx validate`"))]
    PrivateConfig { rel: String, why: String },

    #[error("{0}: not UTF-8 text")]
    NotText(String),

    #[error("cannot encrypt {rel} for private collection `{collection}`: {source}")]
    Seal {
        rel: String,
        collection: String,
        source: SealError,
    },

    /// A sign-off record, or the file it vouches for, cannot be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Signoff(#[from] SignoffError),
}

/// Why a sign-off cannot be checked: the record or the object's file is unreadable,
/// or the record is not one (which counts as no sign-off).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum SignoffError {
    #[error("{rel}: {why}")]
    Unreadable { rel: String, why: String },

    #[error("{rel}: not a sign-off record ({why})")]
    #[diagnostic(help("restore it from git, or delete it and run `ctx promote {id}` again"))]
    NotARecord {
        rel: String,
        id: String,
        why: String,
    },

    #[error("{rel}: records `{recorded}`, not `{id}`")]
    #[diagnostic(help("a record must sit in the file named after its id: restore it from git"))]
    WrongId {
        rel: String,
        recorded: String,
        id: String,
    },
}

impl WriteError {
    pub fn exit(&self) -> Exit {
        match self {
            WriteError::NotAssignment(_)
            | WriteError::BadFieldName(_)
            | WriteError::Reserved(_) => Exit::Usage,
            _ => Exit::Invalid,
        }
    }

    /// This refusal as the command's error: the message says nothing was
    /// written; the hint survives.
    pub fn refused(self) -> Error {
        Error::Refused {
            message: format!("refusing to write: {self} (nothing was written)"),
            findings: Vec::new(),
            help: miette::Diagnostic::help(&self).map(|h| h.to_string()),
            exit: self.exit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_grant_says_how_to_grant_it_as_a_hint() {
        let e = WriteError::NoGrant {
            who: "agent `a`".into(),
            id: "x".into(),
            consumer: "a".into(),
        };
        assert!(e.to_string().ends_with("writes are never implicit"));
        let refused = e.refused();
        assert_eq!(refused.exit(), Exit::Invalid);
        assert!(refused
            .to_string()
            .starts_with("refusing to write: agent `a`"));
        assert!(refused.help().unwrap().contains("permissions.write: [a]"));
    }

    #[test]
    fn bad_assignments_are_usage_errors() {
        assert_eq!(WriteError::Reserved("id".into()).exit(), Exit::Usage);
        assert_eq!(WriteError::Exists("a.md".into()).exit(), Exit::Invalid);
    }
}
