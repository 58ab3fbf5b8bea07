//! Does a `.gitignore` exclude a path? The loader's walk skips ignored files, and a
//! `content_uri` may not reach them either: what a repository ignores (`.env`,
//! build output, local databases) is by definition not part of its shared context.

use std::path::Path;

use ignore::gitignore::GitignoreBuilder;
use ignore::Match;

/// Is `abs` ignored by a `.gitignore` in its own folder or any folder above it?
/// The deepest file that has an opinion decides, as in git (a `!pattern` there
/// re-includes what a shallower file ignored). Like the loader's walk, this reads
/// `.gitignore` files only: no global excludes, no `.git/info/exclude`.
pub fn is_gitignored(abs: &Path, is_dir: bool) -> bool {
    let mut dir = abs.parent();
    while let Some(d) = dir {
        let file = d.join(".gitignore");
        if file.is_file() {
            let mut b = GitignoreBuilder::new(d);
            // A malformed line is skipped by git too; the rest still applies.
            let _ = b.add(&file);
            if let Ok(gi) = b.build() {
                match gi.matched_path_or_any_parents(abs, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
        }
        dir = d.parent();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deepest_gitignore_decides() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("docs/keep")).unwrap();
        std::fs::write(r.join(".gitignore"), ".env\n*.secret\nbuild/\n").unwrap();
        std::fs::write(r.join("docs/keep/.gitignore"), "!*.secret\n").unwrap();
        assert!(is_gitignored(&r.join(".env"), false));
        assert!(is_gitignored(&r.join("docs/a.secret"), false));
        assert!(is_gitignored(&r.join("build/out/x.md"), false));
        assert!(!is_gitignored(&r.join("docs/keep/b.secret"), false));
        assert!(!is_gitignored(&r.join("docs/a.md"), false));
    }
}
