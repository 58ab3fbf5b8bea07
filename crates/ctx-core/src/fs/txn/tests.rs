use super::*;

fn repo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("opencontext.yaml"), "x").unwrap();
    std::fs::create_dir_all(root.join("context")).unwrap();
    (dir, root)
}

fn staged_names(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join(tmp::DIR))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".gitignore")
        .collect();
    v.sort();
    v
}

#[test]
fn a_transaction_writes_every_file_and_leaves_nothing() {
    let (_d, root) = repo();
    let old = root.join("context/old.md");
    std::fs::write(&old, "v1").unwrap();
    let mut t = Txn::new(&root);
    t.replace(&old, b"v1", b"v1 annotated", Mode::Preserve)
        .unwrap();
    t.create(&root.join("context/new.md"), b"v2", Mode::Preserve)
        .unwrap();
    t.commit(()).unwrap();
    assert_eq!(std::fs::read(&old).unwrap(), b"v1 annotated");
    assert_eq!(std::fs::read(root.join("context/new.md")).unwrap(), b"v2");
    assert!(staged_names(&root).is_empty());
}

#[test]
fn a_failed_precondition_writes_nothing() {
    let (_d, root) = repo();
    let taken = root.join("context/taken.md");
    std::fs::write(&taken, "someone's").unwrap();
    let mut t = Txn::new(&root);
    t.create(&root.join("context/a.md"), b"a", Mode::Preserve)
        .unwrap();
    t.create(&taken, b"mine", Mode::Preserve).unwrap();
    assert!(matches!(t.commit(()), Err(TxnError::Exists(_))));
    assert!(!root.join("context/a.md").exists());
    assert_eq!(std::fs::read(&taken).unwrap(), b"someone's");
    assert!(staged_names(&root).is_empty());
}

/// One file of a killed transaction: target, old bytes (None: a new file),
/// new bytes, renamed before the kill.
type Killed<'a> = (&'a str, Option<&'a [u8]>, &'a [u8], bool);

/// A journal as a process killed after the commit point would leave it: the
/// staged files of the targets not yet renamed, under a dead pid's names.
fn killed_after_journal(root: &Path, files: &[Killed<'_>]) -> PathBuf {
    let staging = root.join(tmp::DIR);
    tmp::prepare(&staging).unwrap();
    let dead = 4_194_305u32; // above Linux's pid_max: no such process
    let mut entries = Vec::new();
    for (i, (rel, old, new, renamed)) in files.iter().enumerate() {
        let name = format!("{dead}-{i:04}.tmp");
        if *renamed {
            std::fs::write(root.join(rel), new).unwrap();
        } else {
            std::fs::write(staging.join(&name), new).unwrap();
        }
        entries.push(json!({
            "target": rel,
            "staged": name,
            "kind": if old.is_some() { "replace" } else { "create" },
            "old": old.map(canonical::digest),
            "new": canonical::digest(new),
        }));
    }
    let journal = staging.join(format!("{dead}-feed.txn"));
    let doc = json!({"format": FORMAT, "files": entries, "audit": null});
    std::fs::write(&journal, serde_json::to_vec(&doc).unwrap()).unwrap();
    journal
}

#[test]
fn a_killed_transaction_is_rolled_forward_by_the_next_lock_holder() {
    let (_d, root) = repo();
    std::fs::write(root.join("context/a.md"), "v1").unwrap();
    let journal = killed_after_journal(
        &root,
        &[
            ("context/a.md", Some(b"v1"), b"v1 annotated", true),
            ("context/b.md", None, b"v2", false),
            (".ctx/signoffs/b.json", None, b"{}", false),
        ],
    );
    std::fs::create_dir_all(root.join(".ctx/signoffs")).unwrap();
    assert_eq!(pending(&root).len(), 1);
    let lock = super::super::RepoLock::acquire(&root).unwrap();
    drop(lock);
    assert_eq!(std::fs::read(root.join("context/b.md")).unwrap(), b"v2");
    assert_eq!(
        std::fs::read(root.join(".ctx/signoffs/b.json")).unwrap(),
        b"{}"
    );
    assert!(!journal.exists());
    assert!(pending(&root).is_empty());
    assert_eq!(staged_names(&root), vec!["write.lock".to_string()]);
}

#[test]
fn a_target_edited_after_the_kill_keeps_the_journal_for_a_person() {
    let (_d, root) = repo();
    killed_after_journal(&root, &[("context/b.md", None, b"v2", false)]);
    std::fs::write(root.join("context/b.md"), "typed by hand").unwrap();
    let done = recover(&root);
    assert!(
        matches!(&done[..], [Recovered::Conflict { why, .. }] if why.contains("already exists"))
    );
    assert_eq!(
        std::fs::read(root.join("context/b.md")).unwrap(),
        b"typed by hand"
    );
    let left = pending(&root);
    assert!(left[0].conflict && left[0].targets == ["context/b.md"]);
    // The sweep keeps the staged file the conflict names.
    tmp::sweep(&root);
    assert_eq!(staged_names(&root).len(), 2);
}

#[test]
fn recovery_ignores_the_journals_of_live_processes() {
    let (_d, root) = repo();
    let staging = root.join(tmp::DIR);
    tmp::prepare(&staging).unwrap();
    let live = staging.join(tmp::fresh_name(false, "txn"));
    std::fs::write(&live, b"{}").unwrap();
    assert!(recover(&root).is_empty());
    assert!(live.exists());
}
