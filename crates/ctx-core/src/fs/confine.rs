//! Path confinement: no file reference leaves the manifest folder, whether by an
//! absolute path, by `..`, or through a symbolic link. Checked on the text first
//! (cheap, and it names the mistake) and then on the real path.

use std::path::{Component, Path, PathBuf};

use super::RelPath;

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
pub enum Escape {
    /// It leaves the folder: absolute elsewhere, `..` past the top, or a link out.
    #[error("it resolves outside the repository folder")]
    Outside,
    /// It cannot be resolved (missing, unreadable folder, a loop of links).
    #[error("{0}")]
    Unavailable(std::io::Error),
}

/// Does `path` (relative) stay inside the folder it is relative to, judged on its
/// text alone? `a/../b` does; `../b` and `/b` do not.
pub fn lexically_inside(path: &Path) -> bool {
    let mut depth: i64 = 0;
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => return false,
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
        }
    }
    true
}

/// Is `abs`, after resolving every link, inside `root`? `root` must be canonical.
pub fn resolves_inside(root: &Path, abs: &Path) -> bool {
    abs.canonicalize().is_ok_and(|real| real.starts_with(root))
}

/// Resolve `path` (relative to `root`, or absolute below it) to its real path inside
/// `root`, refusing rather than clamping anything that leaves it. `root` must be canonical.
pub fn resolve_inside(root: &Path, path: &str) -> Result<PathBuf, Escape> {
    let p = Path::new(path);
    let candidate = if p.is_absolute() {
        if !p.starts_with(root) {
            return Err(Escape::Outside);
        }
        p.to_path_buf()
    } else {
        if !lexically_inside(p) {
            return Err(Escape::Outside);
        }
        root.join(p)
    };
    let real = candidate.canonicalize().map_err(Escape::Unavailable)?;
    if !real.starts_with(root) {
        return Err(Escape::Outside);
    }
    Ok(real)
}

/// A path ctx may create on a consumer's behalf: relative, plain segments only,
/// nothing hidden (so never under `.git/`, never a dotfile).
pub fn is_plain(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty()
        && p.components().all(|c| match c {
            Component::Normal(s) => !s.to_string_lossy().starts_with('.'),
            _ => false,
        })
}

/// Is `rel` the git folder or inside it (`.git/…` at any depth)? git's own files
/// are never context: they hold the config, hooks and every past version.
pub fn in_git_dir(rel: &RelPath) -> bool {
    rel.segments().any(|s| s.eq_ignore_ascii_case(".git"))
}

/// Where a path a person typed (relative to `cwd`, possibly not existing yet)
/// lands inside `root`: links in its existing part are resolved, so a link cannot
/// smuggle a write out. None when it is outside `root`.
pub fn rel_in_root(root: &Path, cwd: &Path, path: &Path) -> Option<RelPath> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    // The longest existing prefix is resolved; the rest is taken as written.
    let mut existing = abs.clone();
    let mut tail = Vec::new();
    while !existing.exists() {
        let name = existing.file_name()?.to_os_string();
        tail.push(name);
        if !existing.pop() {
            return None;
        }
    }
    let mut real = existing.canonicalize().ok()?;
    for n in tail.iter().rev() {
        if n == ".." {
            real.pop();
        } else if n != "." {
            real.push(n);
        }
    }
    RelPath::strip(root, &real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_checks() {
        assert!(lexically_inside(Path::new("context/a/../b.md")));
        assert!(!lexically_inside(Path::new("../outside/**")));
        assert!(!lexically_inside(Path::new("/etc/passwd")));
        assert!(is_plain("context/policies/a.md"));
        for bad in ["../a.md", "/etc/a.md", "context/.hidden/a.md", "./a.md", ""] {
            assert!(!is_plain(bad), "{bad}");
        }
        assert!(in_git_dir(&RelPath::parse("sub/.git/config").unwrap()));
        assert!(!in_git_dir(&RelPath::parse("sub/git/config").unwrap()));
    }

    #[cfg(unix)]
    #[test]
    fn links_cannot_leave_the_root() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        let root = tempfile::tempdir().unwrap();
        let root_path = root.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root_path.join("link")).unwrap();
        std::fs::write(root_path.join("inside"), "y").unwrap();
        assert!(matches!(
            resolve_inside(&root_path, "link"),
            Err(Escape::Outside)
        ));
        assert!(resolve_inside(&root_path, "inside").is_ok());
        assert!(matches!(
            resolve_inside(&root_path, "missing"),
            Err(Escape::Unavailable(_))
        ));
        assert_eq!(
            rel_in_root(&root_path, &root_path, Path::new("new/dir/a.md")).unwrap(),
            "new/dir/a.md"
        );
        assert!(rel_in_root(&root_path, &root_path, Path::new("link")).is_none());
    }
}
