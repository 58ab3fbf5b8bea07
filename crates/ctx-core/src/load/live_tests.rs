//! A live repository refreshes only what changed, and always equals a fresh load.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::testutil::{settle, write_file as write};

const MANIFEST: &str = "opencontext: \"1.0\"\nid: t\ncontext:\n  mission: ./mission.md\ncollections:\n  notes: ./notes/**\n";

fn note(id: &str, body: &str) -> String {
    format!("---\nid: notes.{id}\ntype: note\nowner: me\n---\n{body}\n")
}

fn setup(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "opencontext.yaml", MANIFEST);
    write(
        dir.path(),
        "mission.md",
        "---\nid: mission\ntype: mission\nowner: me\n---\nBe kind.\n",
    );
    for i in 0..n {
        write(
            dir.path(),
            &format!("notes/n{i}.md"),
            &note(&format!("n{i}"), "text"),
        );
    }
    settle();
    dir
}

/// What a fresh, cache-less load of the folder gives.
fn fresh(dir: &Path) -> String {
    let (m, diags) = Manifest::discover(Some(dir), dir).unwrap();
    let r = crate::load::load(m, diags, &LoadOptions::default());
    format!("{:#?}\n{:#?}\n{}", r.objects, r.diags, r.files)
}

fn seen(r: &Repo) -> String {
    format!("{:#?}\n{:#?}\n{}", r.objects, r.diags, r.files)
}

/// Load options with the parse cache (and the walk's memo) on.
fn cached() -> LoadOptions {
    LoadOptions {
        cache: true,
        ..LoadOptions::default()
    }
}

fn open(dir: &Path) -> LiveRepo {
    LiveRepo::open(Some(dir), dir, LoadOptions::default()).unwrap()
}

#[test]
fn an_unchanged_repository_is_not_read_again() {
    let dir = setup(20);
    let mut live = open(dir.path());
    let before = live.repo();
    for _ in 0..3 {
        let r = live.refresh().unwrap();
        assert_eq!(
            r,
            Refresh {
                unchanged: true,
                ..Refresh::default()
            }
        );
        assert!(
            Arc::ptr_eq(&before, &live.repo()),
            "the same repository, not a rebuilt one"
        );
    }
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
}

#[test]
fn only_changed_added_and_removed_files_are_touched() {
    let dir = setup(20);
    let mut live = open(dir.path());
    let held = live.repo(); // a request still in flight keeps its snapshot
    write(dir.path(), "notes/n3.md", &note("n3", "changed text"));
    write(dir.path(), "notes/extra.md", &note("extra", "new"));
    std::fs::remove_file(dir.path().join("notes/n7.md")).unwrap();
    let r = live.refresh().unwrap();
    assert_eq!(
        (r.unchanged, r.reloaded, r.reparsed, r.removed),
        (false, false, 2, 1)
    );
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
    assert_eq!(held.objects.len(), 21, "the old snapshot is untouched");
    settle();
    assert!(
        live.refresh().unwrap().reparsed > 0,
        "racy files are read once more"
    );
    assert!(live.refresh().unwrap().unchanged);
    // An edit that keeps size and mtime: ctime still tells.
    let p = dir.path().join("notes/n5.md");
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    write(dir.path(), "notes/n5.md", &note("n5", "TEXT"));
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let r = live.refresh().unwrap();
    assert_eq!(r.reparsed, 1);
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
    settle();
    live.refresh().unwrap();
    assert!(live.refresh().unwrap().unchanged);
}

#[test]
fn a_file_written_right_after_a_read_is_read_again() {
    let dir = setup(3);
    let mut live = open(dir.path());
    // Written now: too close to its read to be trusted on its stamp alone.
    write(dir.path(), "notes/n1.md", &note("n1", "v2"));
    assert_eq!(live.refresh().unwrap().reparsed, 1);
    assert_eq!(
        live.refresh().unwrap().reparsed,
        1,
        "still racy: read again"
    );
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
}

#[test]
fn a_manifest_change_reloads_everything_and_findings_follow() {
    let dir = setup(3);
    let mut live = open(dir.path());
    write(
        dir.path(),
        "opencontext.yaml",
        &MANIFEST.replace("id: t\n", "id: t\ndefaults:\n  layer: L2\n"),
    );
    let r = live.refresh().unwrap();
    assert!(r.reloaded);
    assert!(live
        .repo()
        .objects
        .iter()
        .all(|o| o.meta.layer.as_deref() == Some("L2")));
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
    // A broken file's findings appear, and go when it is fixed.
    settle();
    write(dir.path(), "notes/n0.md", "---\nid: [oops\n---\n");
    live.refresh().unwrap();
    assert!(!live.repo().diags.is_empty());
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
    write(dir.path(), "notes/n0.md", &note("n0", "ok"));
    live.refresh().unwrap();
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
}

/// The ids `role` may see, through the one authorized view.
fn visible_to(repo: &Repo, role: &str) -> crate::error::Result<Vec<String>> {
    use crate::view::{View, Who};
    let who = Who {
        agent: None,
        roles: vec![role.to_string()],
    };
    let at = crate::time::parse_timestamp("2026-09-01T00:00:00Z").unwrap();
    let view = View::open(repo, &who, at)?;
    let mut ids: Vec<String> = view
        .visible(false)
        .into_iter()
        .map(|(i, _)| repo.objects[i].id.clone())
        .collect();
    ids.sort();
    Ok(ids)
}

const ROLES: &str = "roles:\n  support:\n    include: [mission, notes.*]\n";

#[test]
fn renames_of_files_and_folders_are_seen() {
    let dir = setup(5);
    let mut live = open(dir.path());
    std::fs::rename(
        dir.path().join("notes/n1.md"),
        dir.path().join("notes/renamed.md"),
    )
    .unwrap();
    // A rename onto a file that existed: same path, another inode.
    std::fs::rename(
        dir.path().join("notes/n2.md"),
        dir.path().join("notes/n3.md"),
    )
    .unwrap();
    let r = live.refresh().unwrap();
    assert_eq!((r.reloaded, r.reparsed, r.removed), (false, 2, 2));
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
    // A folder renamed: every file in it is new.
    std::fs::create_dir_all(dir.path().join("notes/sub")).unwrap();
    std::fs::rename(
        dir.path().join("notes/n4.md"),
        dir.path().join("notes/sub/n4.md"),
    )
    .unwrap();
    settle();
    live.refresh().unwrap();
    std::fs::rename(dir.path().join("notes/sub"), dir.path().join("notes/moved")).unwrap();
    let r = live.refresh().unwrap();
    assert_eq!((r.reparsed, r.removed), (1, 1));
    let repo = live.repo();
    assert!(repo
        .objects
        .iter()
        .any(|o| o.origin.file == "notes/moved/n4.md"));
    assert_eq!(seen(&repo), fresh(dir.path()));
}

#[test]
fn ignore_files_and_special_files_change_membership_and_findings() {
    let dir = setup(4);
    let mut live = open(dir.path());
    write(dir.path(), ".gitignore", "notes/n1.md\n");
    let r = live.refresh().unwrap();
    assert_eq!(r.removed, 1);
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
    // A member replaced by a FIFO is reported, never waited on.
    std::fs::remove_file(dir.path().join("notes/n2.md")).unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(dir.path().join("notes/n2.md"))
        .status()
        .is_ok_and(|s| s.success());
    if fifo {
        live.refresh().unwrap();
        let repo = live.repo();
        assert!(repo
            .diags
            .iter()
            .any(|d| d.file.as_deref() == Some("notes/n2.md")));
        assert_eq!(seen(&repo), fresh(dir.path()));
    }
}

#[test]
fn a_role_change_takes_effect_on_the_next_snapshot() {
    let dir = setup(2);
    write(
        dir.path(),
        "opencontext.yaml",
        &format!("{MANIFEST}{ROLES}"),
    );
    settle();
    let mut live = open(dir.path());
    let before = live.snapshot().unwrap();
    assert_eq!(
        visible_to(&before, "support").unwrap(),
        ["mission", "notes.n0", "notes.n1"]
    );
    // Narrowed right away (same second, racy): the next snapshot has the new policy.
    write(
        dir.path(),
        "opencontext.yaml",
        &format!("{MANIFEST}{}", ROLES.replace("mission, notes.*", "mission")),
    );
    let after = live.snapshot().unwrap();
    assert!(!Arc::ptr_eq(&before, &after));
    assert_eq!(visible_to(&after, "support").unwrap(), ["mission"]);
    assert_eq!(seen(&after), fresh(dir.path()));
    // A request still holding the old snapshot keeps what it started with.
    assert_eq!(visible_to(&before, "support").unwrap().len(), 3);
    // The role removed: refused, not served from before.
    write(dir.path(), "opencontext.yaml", MANIFEST);
    let gone = live.snapshot().unwrap();
    assert!(visible_to(&gone, "support").is_err());
}

#[test]
fn a_broken_manifest_is_an_error_and_never_falls_back_to_the_old_policy() {
    let dir = setup(2);
    write(
        dir.path(),
        "opencontext.yaml",
        &format!("{MANIFEST}{ROLES}"),
    );
    settle();
    let mut live = open(dir.path());
    assert!(live.snapshot().is_ok());
    write(dir.path(), "opencontext.yaml", "opencontext: [\n");
    assert!(live.snapshot().is_err());
    assert!(live.snapshot().is_err(), "still broken");
    assert!(
        live.repo().objects.is_empty(),
        "nothing of the old state is left to serve"
    );
    // A role set the gate refuses (a cycle) loads, but no view opens on it.
    write(
        dir.path(),
        "opencontext.yaml",
        &format!("{MANIFEST}roles:\n  a:\n    inherits: [b]\n  b:\n    inherits: [a]\n"),
    );
    if let Ok(repo) = live.snapshot() {
        assert!(visible_to(&repo, "a").is_err());
    }
    // Fixed: served again, from scratch.
    write(
        dir.path(),
        "opencontext.yaml",
        &format!("{MANIFEST}{ROLES}"),
    );
    let r = live.refresh().unwrap();
    assert!(r.reloaded);
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
    std::fs::remove_file(dir.path().join("opencontext.yaml")).unwrap();
    assert!(live.snapshot().is_err(), "a vanished manifest is an error");
}

#[test]
fn with_the_parse_cache_a_second_front_end_starts_warm() {
    let dir = setup(6);
    let opts = cached();
    let first = LiveRepo::open(Some(dir.path()), dir.path(), opts.clone()).unwrap();
    assert_eq!(seen(&first.repo()), fresh(dir.path()));
    let (m, diags) = Manifest::discover(Some(dir.path()), dir.path()).unwrap();
    let (repo, usage) = crate::load::load_counted(m, diags, &opts);
    assert_eq!(usage.parsed, 0, "every result came from the cache");
    assert_eq!(seen(&repo), fresh(dir.path()));
    let mut second = LiveRepo::open(Some(dir.path()), dir.path(), opts).unwrap();
    assert_eq!(seen(&second.repo()), fresh(dir.path()));
    assert!(second.refresh().unwrap().unchanged);
}

/// With the cache on, refreshes list members through the walk's memo; a file added
/// in a new folder, or one removed, is still seen at the next refresh.
#[test]
fn refreshes_through_the_walk_memo_see_new_folders() {
    let dir = setup(4);
    let opts = cached();
    let mut live = LiveRepo::open(Some(dir.path()), dir.path(), opts).unwrap();
    assert!(live.refresh().unwrap().unchanged);
    let memo = crate::load::walk_memo::location(&live.repo().manifest).unwrap();
    assert!(memo.is_file(), "the settled walk was remembered");
    assert!(live.refresh().unwrap().unchanged, "through the memo");
    write(dir.path(), "notes/2026/n9.md", &note("2026.n9", "new"));
    assert!(!live.refresh().unwrap().unchanged);
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
    settle();
    live.refresh().unwrap();
    std::fs::remove_file(dir.path().join("notes/n1.md")).unwrap();
    assert!(!live.refresh().unwrap().unchanged);
    assert_eq!(seen(&live.repo()), fresh(dir.path()));
}
