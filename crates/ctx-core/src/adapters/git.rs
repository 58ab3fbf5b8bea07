//! `git://<rev>/<path>`: a file as committed at a revision of the repository the
//! manifest lives in, read from the local object database (works offline).
//! `git://<host>/<repo>/<path>` needs an operator mapping under `adapters.git.repos`
//! to a local checkout: a URL found in a context file is never cloned or fetched.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::manifest::Manifest;
use crate::model::Trust;

use super::process::{self, Failure};
use super::{AdapterError, AdapterOptions, Loaded};

/// Where a `git://` URI points.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    /// The folder `git -C` runs in (the manifest folder, or a mapped checkout).
    dir: PathBuf,
    rev: String,
    /// Path relative to `dir`, `/`-separated, no `.`/`..` segments.
    path: String,
    /// Reached through `adapters.git.repos`: an external checkout.
    mapped: bool,
}

/// A revision that cannot be read as an option, a range or a path: no leading `-`,
/// no `..`, only `[A-Za-z0-9._/^~-]`.
pub fn valid_rev(rev: &str) -> bool {
    !rev.is_empty()
        && !rev.starts_with('-')
        && !rev.contains("..")
        && rev
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/^~-".contains(c))
}

/// A path confined to its folder: relative, non-empty, no `..`, no backslash or NUL.
pub fn valid_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains('\0')
        && path.split('/').all(|seg| !seg.is_empty() && seg != "..")
}

fn clean_path(path: &str) -> String {
    path.split('/')
        .filter(|s| *s != "." && !s.is_empty())
        .collect::<Vec<_>>()
        .join("/")
}

/// `adapters.git.repos`: remote prefix → local checkout (relative to the manifest folder).
fn mappings(m: &Manifest) -> Vec<(String, String)> {
    super::config(m, "git")
        .and_then(|c| c.get("repos"))
        .and_then(Value::as_object)
        .map(|repos| {
            repos
                .iter()
                .filter_map(|(k, v)| {
                    Some((k.trim_end_matches('/').to_string(), v.as_str()?.to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn parse(uri: &str, m: &Manifest) -> Result<Target, AdapterError> {
    let rest = uri
        .strip_prefix("git://")
        .ok_or_else(|| AdapterError::unavailable(uri, "not a git:// URI"))?;
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    // The remote form, when a mapping claims the longest prefix.
    let mut best: Option<(String, String)> = None;
    for (prefix, local) in mappings(m) {
        let claims = rest
            .strip_prefix(prefix.as_str())
            .is_some_and(|after| after.starts_with('/'));
        if claims && best.as_ref().is_none_or(|(p, _)| p.len() < prefix.len()) {
            best = Some((prefix, local));
        }
    }
    if let Some((prefix, local)) = best {
        let path = &rest[prefix.len() + 1..];
        let rev = match query {
            None => "HEAD".to_string(),
            Some(q) => q
                .strip_prefix("rev=")
                .filter(|r| !r.contains('&'))
                .map(str::to_string)
                .ok_or_else(|| {
                    AdapterError::unavailable(
                        uri,
                        "the only query a git:// URI takes is `?rev=<revision>`",
                    )
                })?,
        };
        let dir = m.root.join(&local).canonicalize().map_err(|e| {
            AdapterError::unavailable(
                uri,
                format!("the checkout `{local}` mapped for `{prefix}` in adapters.git.repos cannot be opened: {e}"),
            )
        })?;
        return checked(uri, dir, rev, path, true);
    }
    if query.is_some() {
        return Err(AdapterError::unavailable(
            uri,
            "a revision-form git:// URI takes no query (write git://<rev>/<path>)",
        ));
    }
    let (rev, path) = rest.split_once('/').ok_or_else(|| {
        AdapterError::unavailable(
            uri,
            "expected git://<revision>/<path>, e.g. git://HEAD/context/mission.md",
        )
    })?;
    if valid_rev(rev) && looks_like_host(rev) && !rev_exists(&m.root, rev) {
        let repo = rest.rsplit_once('/').map(|(r, _)| r).unwrap_or(rest);
        return Err(AdapterError::unavailable(
            uri,
            format!(
                "no local checkout is configured for `{repo}`; ctx never clones a URL found in context. \
                 Map it under adapters.git.repos in the manifest, e.g. `{repo}: ../checkout`"
            ),
        ));
    }
    checked(uri, m.root.clone(), rev.to_string(), path, false)
}

fn checked(
    uri: &str,
    dir: PathBuf,
    rev: String,
    path: &str,
    mapped: bool,
) -> Result<Target, AdapterError> {
    if !valid_rev(&rev) {
        return Err(AdapterError::unavailable(
            uri,
            format!("`{rev}` is not an acceptable revision (letters, digits and . _ / ^ ~ -; no leading `-`, no `..`)"),
        ));
    }
    if !valid_path(path) {
        return Err(AdapterError::PathTraversal(uri.to_string()));
    }
    Ok(Target {
        dir,
        rev,
        path: clean_path(path),
        mapped,
    })
}

/// `github.com`, `git.example.org:8080`: a dotted first segment that is no local revision.
fn looks_like_host(seg: &str) -> bool {
    seg.contains('.') && seg.chars().any(|c| c.is_ascii_alphabetic())
}

/// A `git` command in `dir` that acts on that checkout alone and cannot reach the
/// network, run hooks or read system config ([`crate::git::Scope::Isolated`]).
fn git(dir: &Path) -> Command {
    crate::git::command(dir, crate::git::Scope::Isolated)
}

fn rev_exists(dir: &Path, rev: &str) -> bool {
    if !valid_rev(rev) {
        return false;
    }
    let mut cmd = git(dir);
    cmd.args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{rev}^{{commit}}"));
    process::run(cmd, std::time::Duration::from_secs(5), 4096).is_ok_and(|o| o.success)
}

pub fn load(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    let t = parse(uri, m)?;
    // A committed version of another object's file is that object's content.
    if !t.mapped {
        if let Ok(rel) = crate::fs::RelPath::parse(&t.path) {
            if super::lane::loaded_as_object(m, &rel) {
                return Err(AdapterError::OutOfLane {
                    uri: uri.to_string(),
                    reason: format!(
                        "`{rel}` is loaded as an object, with its own permissions; \
                         reference that object instead of reading its file"
                    ),
                });
            }
        }
    }
    let timeout = super::timeout(m, "git", opts);
    // `<rev>:./<path>` is relative to the folder git runs in, so a manifest in a
    // subfolder of the repository addresses its own files.
    let mut cmd = git(&t.dir);
    cmd.args(["cat-file", "blob", "--end-of-options"])
        .arg(format!("{}:./{}", t.rev, t.path));
    let out = match process::run(cmd, timeout, opts.max_bytes) {
        Ok(o) => o,
        Err(Failure::Spawn(e)) => {
            return Err(AdapterError::unavailable(
                uri,
                format!("cannot run git: {e}"),
            ))
        }
        Err(Failure::TimedOut(d)) => {
            return Err(AdapterError::unavailable(
                uri,
                format!("git did not answer within {} ms", d.as_millis()),
            ))
        }
        Err(Failure::TooLarge(n)) => {
            return Err(AdapterError::unavailable(
                uri,
                format!("larger than {n} bytes"),
            ))
        }
    };
    if !out.success {
        let why = out.stderr.lines().next().unwrap_or("git failed").trim();
        return Err(AdapterError::unavailable(
            uri,
            format!("git cannot read `{}` at `{}`: {why}", t.path, t.rev),
        ));
    }
    let default = if t.mapped {
        Trust::Verified
    } else {
        Trust::Trusted
    };
    super::file::text(
        uri,
        out.stdout,
        super::file::content_type_for(&t.path),
        super::adapter_trust(m, "git", default),
    )
}

#[cfg(test)]
#[path = "git_tests.rs"]
mod tests;
