//! Paths relative to the manifest folder, as ctx names files everywhere: in
//! findings, ids, bundles and the index. Built once, from an OS path or from
//! manifest text, and `/`-separated on every platform from then on.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::path::{Component, Path, PathBuf};

/// A normalised relative path: `/`-separated, no `.` or empty segments, no `..`
/// that climbs out, never absolute. The empty path is the manifest folder itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

/// A path that cannot be a [`RelPath`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelPathError {
    /// Absolute, or a `..` that leaves the folder it is relative to.
    #[error("`{0}` leaves the folder it is relative to")]
    Escapes(String),
    /// Not representable as UTF-8 text.
    #[error("`{0}` is not valid UTF-8")]
    NotUtf8(String),
}

impl RelPath {
    /// Parse a path as written in a manifest or on the command line (`./a/b`,
    /// `a//b/`, `a/../b`). `..` is resolved lexically and may not climb out.
    pub fn parse(text: &str) -> Result<RelPath, RelPathError> {
        if text.starts_with('/') || Path::new(text).has_root() {
            return Err(RelPathError::Escapes(text.to_string()));
        }
        let mut parts: Vec<&str> = Vec::new();
        for seg in text.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(RelPathError::Escapes(text.to_string()));
                    }
                }
                s => parts.push(s),
            }
        }
        Ok(RelPath(parts.join("/")))
    }

    /// A path the operating system produced, relative to some folder (for example
    /// a walk entry with the root stripped).
    pub fn from_path(rel: &Path) -> Result<RelPath, RelPathError> {
        let shown = || rel.to_string_lossy().into_owned();
        let mut parts: Vec<&str> = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(s) => {
                    parts.push(s.to_str().ok_or_else(|| RelPathError::NotUtf8(shown()))?)
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(RelPathError::Escapes(shown()));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(RelPathError::Escapes(shown()))
                }
            }
        }
        Ok(RelPath(parts.join("/")))
    }

    /// `abs` relative to `root` (both as the OS gives them), or None when it is not below it.
    pub fn strip(root: &Path, abs: &Path) -> Option<RelPath> {
        RelPath::from_path(abs.strip_prefix(root).ok()?).ok()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The manifest folder itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The segments, in order.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }

    /// The enclosing folder (the root's parent is the root).
    pub fn parent(&self) -> RelPath {
        match self.0.rsplit_once('/') {
            Some((p, _)) => RelPath(p.to_string()),
            None => RelPath::default(),
        }
    }

    /// Is this path `dir` or inside it?
    pub fn is_within(&self, dir: &RelPath) -> bool {
        dir.is_root()
            || self.0 == dir.0
            || (self.0.starts_with(&dir.0) && self.0.as_bytes().get(dir.0.len()) == Some(&b'/'))
    }

    /// Does any segment start with a dot (a hidden file or folder)?
    pub fn is_hidden(&self) -> bool {
        self.segments().any(|s| s.starts_with('.'))
    }

    /// The path on disk below `root`.
    pub fn to_path(&self, root: &Path) -> PathBuf {
        let mut p = root.to_path_buf();
        p.extend(self.segments());
        p
    }
}

impl Deref for RelPath {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for RelPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for RelPath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<RelPath> for String {
    fn from(p: RelPath) -> String {
        p.0
    }
}

impl From<&RelPath> for String {
    fn from(p: &RelPath) -> String {
        p.0.clone()
    }
}

impl From<RelPath> for serde_json::Value {
    fn from(p: RelPath) -> serde_json::Value {
        serde_json::Value::String(p.0)
    }
}

impl PartialEq<str> for RelPath {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for RelPath {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for RelPath {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl serde::Serialize for RelPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_manifest_paths() {
        assert_eq!(RelPath::parse("./context/a.md").unwrap(), "context/a.md");
        assert_eq!(
            RelPath::parse("context//x/../a.md").unwrap(),
            "context/a.md"
        );
        assert_eq!(RelPath::parse("./").unwrap(), "");
        assert!(RelPath::parse("../a.md").is_err());
        assert!(RelPath::parse("a/../../b").is_err());
        assert!(RelPath::parse("/etc/passwd").is_err());
    }

    #[test]
    fn from_os_paths_is_slash_separated() {
        let p = RelPath::from_path(&Path::new("context").join("policies").join("a.md")).unwrap();
        assert_eq!(p.as_str(), "context/policies/a.md");
        assert_eq!(
            RelPath::strip(Path::new("/r"), Path::new("/r/a/b.md")).unwrap(),
            "a/b.md"
        );
        assert!(RelPath::strip(Path::new("/r"), Path::new("/s/a.md")).is_none());
        assert!(RelPath::from_path(Path::new("/abs")).is_err());
    }

    #[test]
    fn containment_is_by_segment() {
        let dir = RelPath::parse("context/pol").unwrap();
        assert!(RelPath::parse("context/pol/a.md").unwrap().is_within(&dir));
        assert!(!RelPath::parse("context/policies/a.md")
            .unwrap()
            .is_within(&dir));
        assert!(RelPath::parse("x").unwrap().is_within(&RelPath::default()));
        assert!(RelPath::parse("a/.git/config").unwrap().is_hidden());
        assert_eq!(RelPath::parse("a/b/c").unwrap().parent(), "a/b");
    }
}
