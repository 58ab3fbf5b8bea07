//! Where a repository's parse cache lives: in the git directory of the work tree
//! that holds it (git keeps it out of commits and `git clean`), else in
//! `.ctx/cache/` beside the manifest, a folder that ignores itself.

use std::io;
use std::path::{Path, PathBuf};

use crate::manifest::Manifest;

/// The git directory of the work tree holding `dir`, and that work tree's top
/// folder, found on disk (no git process): `.git` as a folder, or as a file naming
/// the directory (linked work trees, submodules).
fn git_dir(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut at = Some(dir);
    while let Some(d) = at {
        let dot = d.join(".git");
        match std::fs::symlink_metadata(&dot) {
            Ok(m) if m.is_dir() => return Some((dot, d.to_path_buf())),
            Ok(m) if m.is_file() => {
                let text = crate::fs::read_regular(&dot, 64 * 1024).ok()?;
                let text = String::from_utf8(text).ok()?;
                let target = text.strip_prefix("gitdir:")?.trim();
                let p = Path::new(target);
                let p = if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    d.join(p)
                };
                return p.is_dir().then(|| (p, d.to_path_buf()));
            }
            _ => at = d.parent(),
        }
    }
    None
}

/// The cache file of the repository `m` describes. One git directory may serve
/// several repositories (manifests in subfolders): each gets its own file, named
/// after the manifest's path inside the work tree.
pub fn location(m: &Manifest) -> Option<PathBuf> {
    file_named(m, "parse-cache")
}

/// The file called `kind` that the cache folder keeps for the repository `m` (the
/// parse cache, the walk's memo), named after the manifest's path in the work tree.
pub(crate) fn file_named(m: &Manifest, kind: &str) -> Option<PathBuf> {
    let root = m.root.canonicalize().unwrap_or_else(|_| m.root.clone());
    let (dir, name_of) = match git_dir(&root) {
        Some((git, top)) => {
            let inside = crate::fs::RelPath::strip(&top, &root)
                .map(String::from)
                .unwrap_or_else(|| root.to_string_lossy().into_owned());
            (git.join("ctx"), inside)
        }
        None => (root.join(".ctx").join("cache"), String::new()),
    };
    let digest = crate::canonical::sha256_hex(format!("{name_of}\0{}", m.file).as_bytes());
    Some(dir.join(format!("{kind}-{}", &digest[..16])))
}

/// Create the cache folder; `.ctx/cache/` gets a `.gitignore` that ignores the
/// folder itself and a `CACHEDIR.TAG` that backup tools honour.
pub fn prepare(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    if dir.ends_with(Path::new(".ctx").join("cache")) {
        use crate::fs::{write_atomic, Existing, Mode};
        write_atomic(
            &dir.join(".gitignore"),
            b"# ctx's parse cache: safe to delete, never committed.\n*\n",
            Mode::RepositoryDefault,
            Existing::Replace,
        )?;
        write_atomic(
            &dir.join("CACHEDIR.TAG"),
            b"Signature: 8a477f597d28d172789f06886806bc55\n# ctx's parse cache (see https://bford.info/cachedir/).\n",
            Mode::RepositoryDefault,
            Existing::Replace,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_directories_are_found_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::create_dir_all(top.join("sub/deeper")).unwrap();
        assert_eq!(
            git_dir(&top.join("sub/deeper")),
            Some((top.join(".git"), top.clone()))
        );
        // A linked work tree names its git directory in a `.git` file.
        let linked = top.join("linked");
        std::fs::create_dir_all(top.join(".git/worktrees/linked")).unwrap();
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(linked.join(".git"), "gitdir: ../.git/worktrees/linked\n").unwrap();
        assert_eq!(
            git_dir(&linked),
            Some((linked.join("../.git/worktrees/linked"), linked.clone()))
        );
    }
}
