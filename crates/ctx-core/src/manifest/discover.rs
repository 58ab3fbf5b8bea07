//! Finding the manifest: upward from the working directory, or where `-C` points.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Manifest file names, in order of preference.
pub const NAMES: [&str; 3] = ["opencontext.yaml", "opencontext.yml", "opencontext.json"];

/// Where the manifest was found, and any other manifest files beside it.
#[derive(Debug, Clone)]
pub struct Located {
    pub path: PathBuf,
    /// Other manifest names present in the same folder (ignored, but warned about).
    pub shadowed: Vec<PathBuf>,
}

/// Locate the manifest. `dir` is the `-C` value: a folder (searched upward from)
/// or a manifest file. Without it the search starts at `cwd`.
pub fn locate(dir: Option<&Path>, cwd: &Path) -> Result<Located> {
    let start = match dir {
        Some(d) => {
            let d = if d.is_absolute() {
                d.to_path_buf()
            } else {
                cwd.join(d)
            };
            if d.is_file() {
                return Ok(Located {
                    path: d,
                    shadowed: Vec::new(),
                });
            }
            if !d.exists() {
                return Err(Error::NotFound(format!(
                    "{}: no such file or folder",
                    d.display()
                )));
            }
            d
        }
        None => cwd.to_path_buf(),
    };
    let mut here = Some(start.as_path());
    while let Some(folder) = here {
        let found: Vec<PathBuf> = NAMES
            .iter()
            .map(|n| folder.join(n))
            .filter(|p| p.is_file())
            .collect();
        if let Some((first, rest)) = found.split_first() {
            return Ok(Located {
                path: first.clone(),
                shadowed: rest.to_vec(),
            });
        }
        here = folder.parent();
    }
    Err(Error::ManifestNotFound { searched: start })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_upward_and_prefers_yaml() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(root.join("opencontext.json"), "{}").unwrap();
        std::fs::write(root.join("opencontext.yaml"), "").unwrap();
        let deep = root.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        let found = locate(None, &deep).unwrap();
        assert_eq!(found.path, root.join("opencontext.yaml"));
        assert_eq!(found.shadowed, vec![root.join("opencontext.json")]);
    }

    #[test]
    fn explicit_file_and_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("custom.yaml");
        std::fs::write(&f, "").unwrap();
        assert_eq!(locate(Some(&f), tmp.path()).unwrap().path, f);
        let empty = tempfile::tempdir().unwrap();
        let err = locate(Some(empty.path()), tmp.path()).unwrap_err();
        assert!(matches!(
            err,
            Error::ManifestNotFound { .. } | Error::NotFound(_)
        ));
    }
}
