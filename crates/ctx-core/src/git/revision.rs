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
