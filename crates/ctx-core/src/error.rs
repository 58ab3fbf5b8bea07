//! Fatal errors: conditions that stop a command before it can report findings.
//! Findings about the repository itself are [`crate::diag::Diagnostic`]s instead.

use std::path::PathBuf;

use crate::diag::Diagnostic;

/// The process exit status a command maps to (see docs: 0 ok, 1 invalid, 2 usage, 3 not found).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Invalid = 1,
    Usage = 2,
    NotFound = 3,
    /// A Context Layer request was denied (`ctx request evaluate`).
    Denied = 4,
    /// Part of a Context Layer request needs a person's approval (`ctx approve`).
    NeedsApproval = 5,
    /// An action ran but its completion receipt is not durable yet (`ctx receipts retry`).
    Indeterminate = 6,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no opencontext.yaml, opencontext.yml or opencontext.json found in {searched} or any parent folder")]
    ManifestNotFound { searched: PathBuf },

    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },

    #[error("{0}")]
    Usage(String),

    #[error("{0}")]
    NotFound(String),

    /// The reader of our output went away; not an error for the user.
    #[error("broken pipe")]
    BrokenPipe,

    /// The repository is invalid in a way that prevents the command (e.g. an unreadable manifest).
    #[error("{0}")]
    Invalid(String),

    /// A write refused because of findings in what it would write (or in the
    /// repository it would leave); nothing was written. The findings are rendered
    /// like `validate`'s, above the message. `exit` is the cause's status (a
    /// refusal because something is not found still exits 3).
    #[error("{message}")]
    Refused {
        message: String,
        findings: Vec<Diagnostic>,
        help: Option<String>,
        exit: Exit,
    },

    /// The manifest cannot be loaded at all (unreadable, not UTF-8, unparsable, not a
    /// mapping, an unsupported version). Carried as a finding with its position, so
    /// `validate` and `doctor` can still emit a diagnostic document.
    #[error("{}", manifest_message(path, diag))]
    Manifest {
        path: PathBuf,
        diag: Box<Diagnostic>,
    },

    /// A signing-key failure (its hint and exit status come with it).
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),

    /// A receipt that cannot be read, signed or stored.
    #[error(transparent)]
    Receipt(#[from] crate::receipt::ReceiptError),

    /// An age identity that cannot be found or read.
    #[error(transparent)]
    Identity(#[from] crate::private::IdentityError),

    /// The repository's redaction key cannot be located, read or created.
    #[error(transparent)]
    RedactionKey(#[from] crate::view::output::KeyFileError),

    /// A refused or failed write; nothing was written.
    #[error(transparent)]
    Write(#[from] crate::write::WriteError),

    /// The audit configuration is invalid or the log is damaged.
    #[error(transparent)]
    Audit(#[from] crate::audit::AuditError),

    /// A vault field's file or document that cannot be used (its hint comes with it).
    #[error(transparent)]
    Field(#[from] crate::personal::field::FieldError),

    /// Invalid input whose remediation is known: the hint is a field, rendered
    /// under the message (never baked into it as `help:` text).
    #[error("{message}")]
    InvalidHint { message: String, help: String },
}

fn manifest_message(path: &std::path::Path, d: &Diagnostic) -> String {
    match (d.line, d.column) {
        (Some(l), Some(c)) => format!("{}:{l}:{c}: {}", path.display(), d.message),
        (Some(l), None) => format!("{}:{l}: {}", path.display(), d.message),
        _ => format!("{}: {}", path.display(), d.message),
    }
}

impl Error {
    pub fn exit(&self) -> Exit {
        match self {
            Error::ManifestNotFound { .. } | Error::NotFound(_) => Exit::NotFound,
            Error::Usage(_) => Exit::Usage,
            Error::Io { .. } | Error::Invalid(_) | Error::Manifest { .. } => Exit::Invalid,
            Error::Refused { exit, .. } => *exit,
            Error::BrokenPipe => Exit::Ok,
            Error::Key(e) => e.exit(),
            Error::Receipt(e) => e.exit(),
            // A named identity that does not exist is a bad argument, like no
            // identity at all; one that cannot be read is invalid.
            Error::Identity(crate::private::IdentityError::Missing { .. }) => Exit::Usage,
            Error::Identity(_) => Exit::Invalid,
            Error::RedactionKey(_) => Exit::Invalid,
            Error::Write(e) => e.exit(),
            Error::Audit(_) | Error::Field(_) => Exit::Invalid,
            Error::InvalidHint { .. } => Exit::Invalid,
        }
    }

    /// A remediation hint shown under the error for people.
    pub fn help(&self) -> Option<String> {
        match self {
            Error::ManifestNotFound { .. } => Some(
                "run `ctx init` to create a repository here, or pass `-C <folder>` to point at one"
                    .into(),
            ),
            Error::Manifest { diag, .. } => diag.remediation.clone(),
            Error::Refused { help, .. } => help.clone(),
            Error::Key(e) => hint(e),
            Error::Receipt(e) => hint(e),
            Error::Identity(e) => hint(e),
            Error::RedactionKey(e) => hint(e),
            Error::Write(e) => hint(e),
            Error::Audit(e) => hint(e),
            Error::Field(e) => hint(e),
            Error::InvalidHint { help, .. } => Some(help.clone()),
            _ => None,
        }
    }

    pub fn io(path: impl Into<PathBuf>, err: &std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            message: err.to_string(),
        }
    }
}

/// The hint of a domain error, as text.
fn hint(e: &dyn miette::Diagnostic) -> Option<String> {
    e.help().map(|h| h.to_string())
}

/// A domain error as one line, its hint in parentheses: for carriers with no
/// hint slot, such as a protocol's single message string.
pub fn one_line(e: &dyn miette::Diagnostic) -> String {
    match e.help() {
        Some(h) => format!("{e} ({h})"),
        None => e.to_string(),
    }
}

/// Errors render with miette like findings: the message, then the hint.
impl miette::Diagnostic for Error {
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Error::help(self).map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::KeyError;
    use crate::private::IdentityError;
    use crate::write::WriteError;

    /// `Error::exit` is the one mapping from a failure to a process status:
    /// 1 invalid, 2 usage, 3 not found (and a closed pipe is success).
    #[test]
    fn every_kind_maps_to_its_exit_code() {
        let cases: Vec<(Error, Exit)> = vec![
            (Error::Usage("u".into()), Exit::Usage),
            (Error::NotFound("n".into()), Exit::NotFound),
            (Error::Invalid("i".into()), Exit::Invalid),
            (
                Error::ManifestNotFound {
                    searched: "/x".into(),
                },
                Exit::NotFound,
            ),
            (Error::BrokenPipe, Exit::Ok),
            (KeyError::BadId { id: "X".into() }.into(), Exit::Usage),
            (
                KeyError::Missing {
                    path: "/k".into(),
                    id: "a".into(),
                }
                .into(),
                Exit::NotFound,
            ),
            (KeyError::NoConfigFolder.into(), Exit::Invalid),
            (
                IdentityError::Missing {
                    path: "/i".into(),
                    origin: "--identity",
                }
                .into(),
                Exit::Usage,
            ),
            (
                IdentityError::Empty { path: "/i".into() }.into(),
                Exit::Invalid,
            ),
            (WriteError::Reserved("id".into()).into(), Exit::Usage),
            (WriteError::Exists("a.md".into()).into(), Exit::Invalid),
        ];
        for (e, want) in cases {
            assert_eq!(e.exit(), want, "{e}");
        }
    }

    /// Hints travel as a field: never inside the message, always through
    /// `help()` (and so through miette's rendering).
    #[test]
    fn domain_hints_are_fields_not_message_text() {
        let e: Error = KeyError::Exists {
            path: "/k/a.pem".into(),
            id: "a".into(),
        }
        .into();
        assert!(!e.to_string().contains("help"), "{e}");
        assert_eq!(
            e.help().as_deref(),
            Some("choose another --id, or move the old key away first")
        );
        let shown = miette::Diagnostic::help(&e).map(|h| h.to_string());
        assert_eq!(shown, e.help());
        assert!(Error::Invalid("x".into()).help().is_none());
    }

    #[test]
    fn the_human_rendering_shows_the_message_then_the_hint_unwrapped() {
        let long = "x".repeat(300);
        let e: Error = KeyError::Missing {
            path: format!("/{long}/a.pem").into(),
            id: "a".into(),
        }
        .into();
        let text = crate::diag::render::error(
            &e,
            crate::diag::render::HumanStyle {
                color: false,
                width: 80,
            },
        );
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(lines[0].contains(&format!("/{long}/a.pem")), "{text}");
        assert!(
            lines[1].trim_start().starts_with("help: create one with"),
            "{text}"
        );
    }
}
