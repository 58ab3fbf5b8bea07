//! The parse cache: invisible (every command prints the same with it, without it,
//! and after it is deleted or damaged), safe (an edit that keeps size and mtime
//! is seen), robust (a damaged cache is rebuilt), private (no plaintext of a
//! private collection reaches it) and optional (`--no-cache`, `CTX_NO_CACHE=1`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::private::{fixture, id_arg};
use crate::support::fixtures::healthy;
use crate::support::git::{git, have_git, init_git};
use crate::support::{ctx_in, Repo, Run};

const AT: &str = "2026-09-01T00:00:00Z";

/// Every command that loads the repository, with arguments that make it print something.
const COMMANDS: &[&[&str]] = &[
    &["validate", "--format", "json"],
    &["validate"],
    &["doctor", "--at", AT, "--format", "json"],
    &[
        "resolve", "--role", "support", "--task", "refund", "--at", AT,
    ],
    &[
        "resolve",
        "--role",
        "support",
        "--task",
        "refund",
        "--at",
        AT,
        "--explain",
    ],
    &["bundle", "--role", "leads", "--at", AT],
    &[
        "get",
        "pricing.enterprise",
        "--role",
        "support",
        "--at",
        AT,
        "--format",
        "json",
    ],
    &[
        "list",
        "--role",
        "leads",
        "--at",
        AT,
        "--include-historical",
        "--format",
        "json",
    ],
    &["search", "refund", "--role", "support", "--format", "json"],
    &[
        "export",
        "--target",
        "agents-md",
        "--role",
        "support",
        "--at",
        AT,
        "-o",
        "-",
    ],
    &["graph", "--format", "json"],
    &[
        "diff",
        "pricing.enterprise@1",
        "pricing.enterprise@2",
        "--format",
        "json",
    ],
    &["stale", "--at", AT, "--format", "json"],
    &["conflicts", "--format", "json"],
    &["history", "pricing.enterprise"],
];

/// Let the files just written age past the racy margin, so the next run may trust them.
fn settle() {
    std::thread::sleep(Duration::from_millis(250));
}

/// The parse cache files of a repository (outside git: `.ctx/cache/parse-cache-*`).
fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for folder in [dir.join(".ctx/cache"), dir.join(".git/ctx")] {
        if let Ok(entries) = std::fs::read_dir(&folder) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("parse-cache-") && !name.ends_with(".lock") {
                    out.push(e.path());
                }
            }
        }
    }
    out.sort();
    out
}

/// Exit code and output, with the wall-clock `generated_at` blanked (it is the
/// only thing allowed to differ between two runs).
fn outcome(r: &Run) -> (i32, String, String) {
    let blank = |text: &str| {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find("\"generated_at\": \"") {
            let value = at + "\"generated_at\": \"".len();
            out.push_str(&rest[..value]);
            rest = &rest[value..];
            rest = &rest[rest.find('"').unwrap_or(0)..];
        }
        out.push_str(rest);
        out
    };
    (r.code, blank(&r.stdout), blank(&r.stderr))
}

fn run(repo: &Repo, args: &[&str], cache: bool) -> (i32, String, String) {
    let mut c = ctx_in(repo).args(args);
    if !cache {
        c = c.arg("--no-cache");
    }
    outcome(&c.run())
}

#[test]
fn every_command_prints_the_same_with_and_without_the_cache() {
    let repo = healthy();
    // A finding, so reports are not empty.
    repo.write(
        "context/notes/todo.md",
        "---\nid: notes.todo\ntype: note\nowner: support\nreferences: [notes.missing]\n---\n\nRefund the invoice.\n",
    );
    settle();
    for args in COMMANDS {
        let fresh = run(&repo, args, false);
        let cold = run(&repo, args, true);
        let warm = run(&repo, args, true);
        assert_eq!(cold, fresh, "{args:?}: the first cached run");
        assert_eq!(warm, fresh, "{args:?}: a run from the cache");
        assert!(!fresh.1.is_empty(), "{args:?} printed nothing: {}", fresh.2);
    }
    let files = cache_files(repo.path());
    assert_eq!(files.len(), 1, "one cache for every command: {files:?}");
    // A warm run with nothing changed writes nothing.
    let before = std::fs::read(&files[0]).unwrap();
    let modified = std::fs::metadata(&files[0]).unwrap().modified().unwrap();
    run(&repo, &["validate"], true);
    assert_eq!(std::fs::read(&files[0]).unwrap(), before);
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().modified().unwrap(),
        modified
    );
    // Deleting the cache changes nothing but time.
    std::fs::remove_dir_all(repo.path().join(".ctx/cache")).unwrap();
    for args in COMMANDS {
        assert_eq!(
            run(&repo, args, true),
            run(&repo, args, false),
            "{args:?} after deletion"
        );
    }
}

#[test]
fn an_edit_in_the_same_second_with_the_same_size_and_mtime_is_seen() {
    let repo = healthy();
    let get = [
        "get",
        "policies.refunds",
        "--role",
        "support",
        "--format",
        "json",
    ];
    settle();
    let first = ctx_in(&repo).args(get).run();
    first.assert_ok();
    assert!(first.stdout.contains("Refunds within 30 days."));
    let path = repo.path().join("context/policies/refunds.md");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // Same length, same mtime, written right after the cache was.
    repo.write(
        "context/policies/refunds.md",
        &text.replace("30 days", "90 days"),
    );
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap().len(), text.len());
    let second = ctx_in(&repo).args(get).run();
    second.assert_ok();
    assert!(
        second.stdout.contains("Refunds within 90 days."),
        "{}",
        second.stdout
    );
    // And again, now that the cache holds the edit.
    let third = ctx_in(&repo).args(get).run();
    assert_eq!(third.stdout, second.stdout);
}

#[test]
fn a_damaged_cache_is_ignored_and_rebuilt() {
    let repo = healthy();
    settle();
    // Resolving reads every part of the cache (content included).
    let args = ["resolve", "--role", "leads", "--at", AT];
    let fresh = run(&repo, &args, false);
    run(&repo, &args, true);
    let file = cache_files(repo.path()).pop().expect("a cache was written");
    let good = std::fs::read(&file).unwrap();
    let n = good.len();
    for at in [n - 10, n / 2, 60] {
        let mut flipped = good.clone();
        flipped[at] ^= 0xff;
        for bad in [flipped, good[..at].to_vec()] {
            std::fs::write(&file, &bad).unwrap();
            assert_eq!(
                run(&repo, &args, true),
                fresh,
                "a damaged cache is never trusted"
            );
            let rebuilt = std::fs::read(&file).unwrap();
            assert!(rebuilt != bad, "rewritten after damage at {at}");
            assert_eq!(run(&repo, &args, true), fresh);
            assert!(
                std::fs::read(&file).unwrap() == rebuilt,
                "and then used as is"
            );
            assert_eq!(
                run(&repo, &["validate", "--format", "json"], true),
                run(&repo, &["validate", "--format", "json"], false)
            );
        }
    }
    std::fs::write(&file, b"not a cache").unwrap();
    assert_eq!(run(&repo, &args, true), fresh);
}

#[test]
fn no_cache_flag_and_environment_bypass_it() {
    let repo = healthy();
    settle();
    ctx_in(&repo)
        .args(["validate", "--no-cache"])
        .run()
        .assert_ok();
    ctx_in(&repo)
        .args(["resolve", "--role", "support"])
        .env("CTX_NO_CACHE", "1")
        .run()
        .assert_ok();
    assert!(!repo.path().join(".ctx").exists(), "nothing written");
    ctx_in(&repo).args(["validate"]).run().assert_ok();
    let file = cache_files(repo.path())
        .pop()
        .expect("written without the flag");
    // A cache that would be wrong if read: bypassing it never reads (nor repairs) it.
    std::fs::write(&file, b"junk").unwrap();
    ctx_in(&repo)
        .args(["validate", "--no-cache"])
        .run()
        .assert_ok();
    ctx_in(&repo)
        .args(["list"])
        .env("CTX_NO_CACHE", "1")
        .run()
        .assert_ok();
    assert_eq!(std::fs::read(&file).unwrap(), b"junk");
    // `.ctx/cache/` keeps itself out of git.
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".ctx/cache/.gitignore")).unwrap(),
        "# ctx's parse cache: safe to delete, never committed.\n*\n"
    );
}

#[test]
fn in_a_git_work_tree_the_cache_lives_in_the_git_directory() {
    if !have_git() {
        return;
    }
    let repo = healthy();
    init_git(repo.path(), "Initial context");
    settle();
    for args in [
        &["validate"][..],
        &["resolve", "--role", "support"],
        &["validate", "--staged"],
    ] {
        ctx_in(&repo).args(args).run().assert_ok();
    }
    assert!(!repo.path().join(".ctx").exists());
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
    assert_eq!(
        cache_files(repo.path()).len(),
        1,
        "the hook and every command share it"
    );
    // The staged state and the work tree still differ where they should.
    repo.write(
        "context/notes/welcome.md",
        "---\nid: notes.welcome\ntype: note\nowner: support\nreferences: [nowhere]\n---\nHi.\n",
    );
    let work = ctx_in(&repo).args(["validate", "--format", "json"]).run();
    assert_eq!(work.code, 1, "{}", work.stdout);
    let staged = ctx_in(&repo)
        .args(["validate", "--staged", "--format", "json"])
        .run();
    assert_eq!(staged.code, 0, "{}{}", staged.stdout, staged.stderr);
    git(repo.path(), &["add", "-A"]);
    let staged = ctx_in(&repo)
        .args(["validate", "--staged", "--format", "json"])
        .run();
    assert_eq!(staged.code, 1);
    assert_eq!(staged.stdout, work.stdout);
}

/// Everything ctx keeps on disk for a repository, as bytes.
fn cache_bytes(dir: &Path) -> Vec<u8> {
    cache_files(dir)
        .iter()
        .flat_map(|f| std::fs::read(f).unwrap())
        .collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn no_plaintext_of_a_private_collection_is_ever_cached() {
    let (repo, _keys, alice) = fixture();
    let canary = "X1234567"; // the passport number in the plaintext file
    settle();
    // Plaintext by mistake: reported, parsed, never cached.
    let v = ctx_in(&repo).args(["validate"]).run();
    assert_eq!(v.code, 1, "{}", v.stdout);
    ctx_in(&repo).args(["validate"]).run();
    assert!(!cache_bytes(repo.path()).is_empty());
    assert!(!contains(&cache_bytes(repo.path()), canary));
    // Encrypted: the sealed file is cached, and resolving with the key decrypts in
    // memory only.
    ctx_in(&repo).args(["private", "encrypt"]).run().assert_ok();
    settle();
    for _ in 0..2 {
        let r = ctx_in(&repo)
            .args(["resolve", "--role", "owner", "--identity", &id_arg(&alice)])
            .run();
        r.assert_ok();
        assert!(
            r.stdout.contains(canary),
            "decrypted for the owner: {}",
            r.stdout
        );
    }
    let bytes = cache_bytes(repo.path());
    assert!(
        contains(&bytes, "BEGIN AGE ENCRYPTED FILE"),
        "the sealed file is cached"
    );
    for secret in [canary, "Passport details", "travel"] {
        assert!(!contains(&bytes, secret), "{secret} reached the cache");
    }
}

#[test]
fn a_collection_made_private_purges_its_cached_plaintext() {
    let (repo, _keys, alice) = fixture();
    let canary = "X1234567";
    let private = std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap();
    let public = private[..private.find("extensions:").unwrap()].to_string();
    repo.write("opencontext.yaml", &public);
    settle();
    ctx_in(&repo)
        .args(["list", "--role", "owner"])
        .run()
        .assert_ok();
    assert!(
        contains(&cache_bytes(repo.path()), canary),
        "ordinary content is cached"
    );
    repo.write("opencontext.yaml", &private);
    ctx_in(&repo)
        .args(["list", "--role", "owner"])
        .run()
        .assert_ok();
    assert!(
        !contains(&cache_bytes(repo.path()), canary),
        "purged once the collection is private"
    );
    let _ = alice;
}

/// The walk's memo (`walk-memo-*` beside the parse cache) lists a repository's files
/// without listing its folders; a file added or ignored since is still seen.
#[test]
fn files_added_or_ignored_after_a_remembered_walk_are_seen() {
    let repo = healthy();
    settle();
    let list = ["list", "--format", "json"];
    let before = run(&repo, &list, true);
    let memo = repo.path().join(".ctx/cache");
    let remembered = std::fs::read_dir(&memo)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("walk-memo-"));
    assert!(remembered, "the walk was remembered");
    assert_eq!(run(&repo, &list, true), before, "from the memo");
    // Added in a new folder, in the same instant as the run that follows.
    repo.write(
        "context/notes/2026/handover.md",
        "---\nid: notes.2026.handover\ntype: note\nowner: support\n---\n\nHand over.\n",
    );
    let added = run(&repo, &list, true);
    assert!(added.1.contains("notes.2026.handover"), "{}", added.1);
    assert_eq!(added, run(&repo, &list, false));
    settle();
    run(&repo, &list, true);
    // An ignore file above the collections.
    repo.write("context/.gitignore", "notes/2026/\n");
    let ignored = run(&repo, &list, true);
    assert!(!ignored.1.contains("notes.2026.handover"), "{}", ignored.1);
    assert_eq!(ignored, run(&repo, &list, false));
}
