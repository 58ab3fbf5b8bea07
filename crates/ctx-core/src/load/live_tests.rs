//! A live repository refreshes only what changed, and always equals a fresh load.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::load::cache::stamp::RACY_MARGIN_NS;

const MANIFEST: &str = "opencontext: \"1.0\"\nid: t\ncontext:\n  mission: ./mission.md\ncollections:\n  notes: ./notes/**\n";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn settle() {
    std::thread::sleep(Duration::from_nanos(RACY_MARGIN_NS as u64 + 50_000_000));
}

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
