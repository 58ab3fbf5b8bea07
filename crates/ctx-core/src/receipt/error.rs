//! What can go wrong reading, signing and storing receipts.

use std::path::PathBuf;

use crate::error::Exit;

/// A receipt failure. The receipt store is append-only, so every refusal
/// leaves it as it was.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReceiptError {
    /// A receipt file or the store folder cannot be read or written.
    #[error("{}: {why}", path.display())]
    File { path: PathBuf, why: String },

    /// A file the user named (a receipt, a bundle) does not exist.
    #[error("{}: no such file", path.display())]
    NoFile { path: PathBuf },

    /// The receipt (or the request it records) has no canonical form, or
    /// signing failed.
    #[error("cannot sign the receipt: {0}")]
    Sign(String),

    #[error("supersedes {target}: no such receipt in {}", dir.display())]
    #[diagnostic(help("name the id of a receipt in the store (see `ctx receipts list`)"))]
    NoSuchTarget { target: String, dir: PathBuf },

    #[error("supersedes {target}: it was already corrected by {by}")]
    #[diagnostic(help("correct {by} instead"))]
    AlreadyCorrected { target: String, by: String },

    /// Two receipts correct the same one: the store forked.
    #[error("receipt {target} is superseded twice (by {first} and {second})")]
    Forked {
        target: String,
        first: String,
        second: String,
    },

    #[error("no receipt for bundle {bundle} in {}", dir.display())]
    #[diagnostic(help("produce the bundle with `ctx bundle --sign`, or pass --receipt FILE"))]
    NoneForBundle { bundle: String, dir: PathBuf },
}

impl ReceiptError {
    pub(crate) fn file(path: &std::path::Path, why: impl std::fmt::Display) -> Self {
        ReceiptError::File {
            path: path.to_path_buf(),
            why: why.to_string(),
        }
    }

    /// The exit status this failure maps to: a receipt that is named or needed
    /// but not in the store is not found (3, like an unknown object or key);
    /// everything else is an invalid store or input.
    pub fn exit(&self) -> Exit {
        match self {
            ReceiptError::NoFile { .. }
            | ReceiptError::NoSuchTarget { .. }
            | ReceiptError::NoneForBundle { .. } => Exit::NotFound,
            _ => Exit::Invalid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::Diagnostic;

    #[test]
    fn a_missing_receipt_says_how_to_make_one() {
        let e = ReceiptError::NoneForBundle {
            bundle: "b".into(),
            dir: "/r".into(),
        };
        assert_eq!(e.exit(), Exit::NotFound);
        assert_eq!(e.to_string(), "no receipt for bundle b in /r");
        assert!(e.help().unwrap().to_string().contains("ctx bundle --sign"));
    }

    #[test]
    fn a_fork_is_invalid_and_names_both_corrections() {
        let e = ReceiptError::Forked {
            target: "t".into(),
            first: "a".into(),
            second: "b".into(),
        };
        assert_eq!(e.exit(), Exit::Invalid);
        assert!(e.to_string().contains("(by a and b)"));
    }
}
