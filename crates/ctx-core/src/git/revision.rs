//! A repository state at a git revision, loaded like the work tree: the commit's
//! files under the manifest folder are checked out (through a throwaway index) into
//! a private temporary folder that lives as long as the [`Revision`]. Private
//! collections are committed encrypted, so no plaintext is written by the checkout.

use std::path::Path;

use crate::error::{Error, Result};
use crate::load::{self, LoadOptions, Repo};
use crate::manifest::Manifest;

use super::Git;

/// One revision's repository, and the checkout it was loaded from.
pub struct Revision {
    pub repo: Repo,
    /// The full commit id the revision named.
    pub commit: String,
    _checkout: tempfile::TempDir,
}

impl Revision {
    /// The commit id abbreviated to eight characters, for labels.
    pub fn short(&self) -> &str {
        &self.commit[..self.commit.len().min(8)]
    }
}

/// Load the repository at `rev`; `manifest_file` is the manifest's name relative to
/// its folder (the same folder as in the work tree).
pub fn load_at(git: &Git, rev: &str, manifest_file: &str, opts: &LoadOptions) -> Result<Revision> {
    let commit = git
        .resolve_rev(rev)
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Error::NotFound(format!("`{rev}` is not a commit in this repository")))?;
    let tmp = tempfile::Builder::new()
        .prefix("ctx-rev-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), &e))?;
    let dest = tmp.path().join("tree");
    let root = git
        .materialize_rev(&commit, &dest, &tmp.path().join("index"))
        .map_err(|e| Error::Invalid(e.to_string()))?;
    if !root.join(manifest_file).is_file() {
        return Err(Error::NotFound(format!(
            "{manifest_file} does not exist at {rev}"
        )));
    }
    let repo = load_dir(&root, opts)?;
    Ok(Revision {
        repo,
        commit,
        _checkout: tmp,
    })
}

fn load_dir(root: &Path, opts: &LoadOptions) -> Result<Repo> {
    let (manifest, diags) = Manifest::discover(Some(root), root)?;
    Ok(load::load(manifest, diags, opts))
}

/// Split `A..B` into its sides; an empty side is HEAD, a missing `..` means the
/// work tree (None). Symmetric ranges (`A...B`) are refused.
pub fn split_range(rev: &str) -> Result<(String, Option<String>)> {
    match rev.split_once("..") {
        Some((_, b)) if b.starts_with('.') => Err(Error::Usage(format!(
            "--rev `{rev}`: symmetric ranges (A...B) are not supported; use A..B"
        ))),
        Some((a, b)) => {
            let side = |s: &str| {
                if s.is_empty() {
                    "HEAD".to_string()
                } else {
                    s.to_string()
                }
            };
            Ok((side(a), Some(side(b))))
        }
        None if rev.is_empty() => Err(Error::Usage("--rev needs a revision".into())),
        None => Ok((rev.to_string(), None)),
    }
}

/// The two sides of `A..B`, loaded; `after` is None when B is the work tree.
pub struct Range {
    /// The revisions as named (an empty side already read as HEAD).
    pub from: String,
    pub to: Option<String>,
    pub before: Revision,
    pub after: Option<Revision>,
}

impl Range {
    /// `A (commit) .. B (commit)`, the heading of a report.
    pub fn label(&self) -> String {
        format!(
            "{} ({}) .. {} ({})",
            self.from,
            self.before.short(),
            self.to.as_deref().unwrap_or("work tree"),
            self.after.as_ref().map_or("work tree", Revision::short)
        )
    }
}

/// Load both sides of `rev` (see [`split_range`]).
pub fn load_range(git: &Git, rev: &str, manifest_file: &str, opts: &LoadOptions) -> Result<Range> {
    let (from, to) = split_range(rev)?;
    let before = load_at(git, &from, manifest_file, opts)?;
    let after = match &to {
        Some(t) => Some(load_at(git, t, manifest_file, opts)?),
        None => None,
    };
    Ok(Range {
        from,
        to,
        before,
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(split_range("a..b").unwrap(), ("a".into(), Some("b".into())));
        assert_eq!(
            split_range("a..").unwrap(),
            ("a".into(), Some("HEAD".into()))
        );
        assert_eq!(
            split_range("..b").unwrap(),
            ("HEAD".into(), Some("b".into()))
        );
        assert_eq!(split_range("v1").unwrap(), ("v1".into(), None));
        assert!(matches!(split_range("a...b"), Err(Error::Usage(_))));
        assert!(matches!(split_range(""), Err(Error::Usage(_))));
    }
}
