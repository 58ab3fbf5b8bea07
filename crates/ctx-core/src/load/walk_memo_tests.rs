//! A remembered walk is invisible (it lists what a fresh walk lists), safe (a
//! folder or ignore file that changed, or a racy one, means walking again) and
//! robust (a damaged memo is ignored and rewritten).

use std::path::PathBuf;

use crate::load::walk::{members, members_remembered, Member};
use crate::manifest::Manifest;
use crate::testutil::{settle, write_file as write};

const MANIFEST: &str = "opencontext: \"1.0\"\nid: t\ncollections:\n  notes: ./context/notes/**\n  people: ./context/people/**\n";

struct Fixture {
    dir: tempfile::TempDir,
    memo: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in [
            ("repo/opencontext.yaml", MANIFEST),
            ("repo/context/notes/a.md", "---\ntitle: A\n---\nA\n"),
            ("repo/context/notes/deep/b.md", "---\ntitle: B\n---\nB\n"),
            ("repo/context/people/acme.yaml", "title: ACME\n"),
            ("repo/context/people/beta.yaml", "title: Beta\n"),
            ("repo/context/stray.md", "---\ntitle: Stray\n---\n"),
        ] {
            write(dir.path(), rel, text);
        }
        settle();
        let memo = dir.path().join("memo");
        Fixture { dir, memo }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn manifest(&self) -> Manifest {
        Manifest::discover(Some(&self.root()), &self.root())
            .unwrap()
            .0
    }

    /// Walk through the memo: the members, and whether the memo was used.
    fn walk(&self) -> (Vec<Member>, bool) {
        let m = self.manifest();
        let now = crate::load::cache::stamp::now_ns();
        let (out, diags, used) = members_remembered(&m, Some((&self.memo, now)));
        // Whatever the memo did, a fresh walk lists the same.
        let fresh = members(&m);
        assert_eq!((&out, &diags), (&fresh.0, &fresh.1));
        (out, used)
    }

    /// Once the last writes have settled, a walk is remembered and the next uses it.
    fn remembers(&self) {
        settle();
        self.walk();
        assert!(self.walk().1, "remembered once settled");
    }

    fn rels(members: &[Member]) -> Vec<&str> {
        members.iter().map(|m| m.rel.as_str()).collect()
    }
}

#[test]
fn a_remembered_walk_lists_what_a_fresh_one_does() {
    let f = Fixture::new();
    let (first, used) = f.walk();
    assert!(!used, "nothing remembered yet");
    assert!(f.memo.is_file(), "the walk was remembered");
    let (again, used) = f.walk();
    assert!(used, "the memo is used while nothing changed");
    assert_eq!(again, first);
    assert_eq!(
        Fixture::rels(&again),
        [
            "context/notes/a.md",
            "context/notes/deep/b.md",
            "context/people/acme.yaml",
            "context/people/beta.yaml"
        ]
    );
}

#[test]
fn added_and_removed_files_are_seen() {
    let f = Fixture::new();
    f.walk();
    write(&f.root(), "context/notes/deep/c.md", "---\ntitle: C\n---\n");
    let (now, used) = f.walk();
    assert!(!used, "a listed folder changed");
    assert!(Fixture::rels(&now).contains(&"context/notes/deep/c.md"));
    f.remembers();
    std::fs::remove_file(f.root().join("context/notes/a.md")).unwrap();
    let (now, used) = f.walk();
    assert!(!used);
    assert!(!Fixture::rels(&now).contains(&"context/notes/a.md"));
}

#[test]
fn ignore_files_above_and_inside_a_collection_are_watched() {
    let f = Fixture::new();
    f.walk();
    assert!(f.walk().1);
    // Above the collection's folder: not listed by the walk, watched all the same.
    write(&f.root(), "context/.gitignore", "people/acme.yaml\n");
    let (now, used) = f.walk();
    assert!(!used, "a new ignore file above a collection");
    assert!(!Fixture::rels(&now).contains(&"context/people/acme.yaml"));
    f.remembers();
    // An existing ignore file inside a collection, edited in place.
    write(&f.root(), "context/notes/.gitignore", "# nothing\n");
    settle();
    assert!(!f.walk().1);
    assert!(f.walk().1);
    write(&f.root(), "context/notes/.gitignore", "deep/\n");
    let (now, used) = f.walk();
    assert!(!used, "an edited ignore file");
    assert!(!Fixture::rels(&now).contains(&"context/notes/deep/b.md"));
    f.remembers();
    // A repository boundary above the collections.
    std::fs::create_dir(f.root().join(".git")).unwrap();
    assert!(!f.walk().1, "a new .git above a collection");
}

#[test]
fn racy_folders_and_changed_manifests_are_walked_again() {
    let f = Fixture::new();
    // Written just now: the walk is not remembered.
    write(&f.root(), "context/notes/new.md", "---\ntitle: New\n---\n");
    f.walk();
    assert!(!f.memo.exists(), "a racy walk is not remembered");
    f.remembers();
    let manifest = f.root().join("opencontext.yaml");
    let text = MANIFEST.replace("./context/people/**", "./context/people/*.yaml");
    std::fs::write(&manifest, text).unwrap();
    assert!(!f.walk().1, "the manifest changed");
}

#[test]
fn a_damaged_memo_is_ignored_and_rewritten() {
    let f = Fixture::new();
    f.walk();
    let mut bytes = std::fs::read(&f.memo).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x55;
    std::fs::write(&f.memo, &bytes).unwrap();
    assert!(!f.walk().1, "a memo that fails its checksum");
    assert!(f.walk().1, "rewritten by the walk that ignored it");
    std::fs::write(&f.memo, &bytes[..bytes.len() / 2]).unwrap();
    assert!(!f.walk().1, "a truncated memo");
}

#[cfg(unix)]
#[test]
fn a_walk_that_meets_a_link_is_not_remembered() {
    let f = Fixture::new();
    std::os::unix::fs::symlink(
        f.root().join("context/people/acme.yaml"),
        f.root().join("context/notes/link.yaml"),
    )
    .unwrap();
    settle();
    f.walk();
    assert!(!f.memo.exists());
}
