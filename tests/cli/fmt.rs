//! `ctx fmt`: canonical form without a change of meaning, idempotent, atomic,
//! and `--check` writes nothing.

use std::path::{Path, PathBuf};

use crate::support::{ctx, project_root, Repo};

const MANIFEST: &str = "opencontext: \"1.0\"\nid: acme\ncollections:\n  notes: ./context/notes/**\nroles:\n  support:\n    include: [\"*\"]\n";

/// Front matter out of order, with comments, a date-only timestamp and YAML 1.1 words.
const MESSY_MD: &str = "---\n# Who to ask: the billing team.\nowner: billing\ntitle: Refunds  # shown in lists\nupdated: 2026-08-01\nid: notes.refunds\ntype: note\ntags: [refunds, no]\nextensions:\n  com.acme.flags:\n    escalate: on\n---\n\n# Refunds\n\ntitle: this is body text, not YAML\n---\n";

const MESSY_MD_FORMATTED: &str = "---\nid: notes.refunds\ntype: note\ntitle: Refunds  # shown in lists\n# Who to ask: the billing team.\nowner: billing\nupdated: 2026-08-01T00:00:00Z\ntags: [refunds, \"no\"]\nextensions:\n  com.acme.flags:\n    escalate: \"on\"\n---\n\n# Refunds\n\ntitle: this is body text, not YAML\n---\n";

fn messy_repo() -> Repo {
    Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/notes/refunds.md", MESSY_MD),
        (
            "context/notes/plan.yaml",
            "content:\n  steps: [a, b]\ntitle: Plan\nid: notes.plan\ntype: note\ncreated: 2026-07-01 09:30Z\n",
        ),
        (
            "context/notes/limits.json",
            "{\"type\": \"note\", \"id\": \"notes.limits\", \"content\": {\"max\": 3}}",
        ),
        (
            "context/notes/done.md",
            "---\nid: notes.done\ntype: note\ntitle: Already canonical\n---\nbody\n",
        ),
    ])
}

fn read(repo: &Repo, rel: &str) -> String {
    std::fs::read_to_string(repo.path().join(rel)).unwrap()
}

#[test]
fn check_lists_files_writes_nothing_and_exits_1() {
    let repo = messy_repo();
    let r = repo.ctx(&["fmt", "--check"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("would reformat context/notes/refunds.md (key order; `updated` 2026-08-01 → 2026-08-01T00:00:00Z; `tags[1]` quoted \"no\"; `extensions.com.acme.flags.escalate` quoted \"on\")"), "{}", r.stdout);
    assert!(
        r.stdout.contains("would reformat context/notes/plan.yaml"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("would reformat context/notes/limits.json"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("done.md"), "{}", r.stdout);
    assert!(
        r.stderr
            .contains("3 of 4 object files would be reformatted"),
        "{}",
        r.stderr
    );
    assert_eq!(
        read(&repo, "context/notes/refunds.md"),
        MESSY_MD,
        "--check wrote"
    );
}

#[test]
fn formats_in_place_keeping_comments_and_body_and_validates_after() {
    let repo = messy_repo();
    // The date-only timestamp is a schema error before formatting.
    let v = repo.ctx(&["validate"]);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("updated"), "{}", v.stdout);
    let r = repo.ctx(&["fmt"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("3 of 4 object files reformatted"),
        "{}",
        r.stderr
    );
    assert_eq!(read(&repo, "context/notes/refunds.md"), MESSY_MD_FORMATTED);
    assert_eq!(
        read(&repo, "context/notes/plan.yaml"),
        "id: notes.plan\ntype: note\ntitle: Plan\ncreated: 2026-07-01T09:30:00Z\ncontent:\n  steps: [a, b]\n"
    );
    assert_eq!(
        read(&repo, "context/notes/limits.json"),
        "{\n  \"id\": \"notes.limits\",\n  \"type\": \"note\",\n  \"content\": {\n    \"max\": 3\n  }\n}\n"
    );
    let v = repo.ctx(&["validate"]);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    // Idempotent: a second run has nothing to do and --check agrees.
    let again = repo.ctx(&["fmt"]);
    assert!(again.stdout.is_empty(), "{}", again.stdout);
    assert!(again.stderr.contains("0 of 4 object files reformatted"));
    assert_eq!(repo.ctx(&["fmt", "--check"]).code, 0);
}

#[test]
fn paths_limit_the_run_and_unknown_paths_fail() {
    let repo = messy_repo();
    std::fs::write(repo.path().join("README.md"), "title: T\nid: x\n").unwrap();
    let r = repo.ctx(&["fmt", "context/notes/plan.yaml", "README.md"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("reformatted context/notes/plan.yaml"));
    assert!(!r.stdout.contains("refunds.md"), "{}", r.stdout);
    assert!(
        r.stderr
            .contains("README.md holds no object file this repository loads"),
        "{}",
        r.stderr
    );
    assert_eq!(read(&repo, "context/notes/refunds.md"), MESSY_MD);
    assert_eq!(
        read(&repo, "README.md"),
        "title: T\nid: x\n",
        "a non-member is never touched"
    );
    assert_eq!(repo.ctx(&["fmt", "context/missing.md"]).code, 3);
    // A folder selects the members under it.
    let r = repo.ctx(&["fmt", "--check", "context/notes"]);
    assert!(r.stdout.contains("refunds.md"), "{}", r.stdout);
}

#[test]
fn unparsable_files_are_refused_with_position_and_hint() {
    let repo = messy_repo();
    let bad = "---\nid: notes.bad\ntype: note\ntitle: Refunds: the policy\n---\nbody\n";
    repo.write("context/notes/bad.md", bad);
    let r = repo.ctx(&["fmt"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("error: context/notes/bad.md:4:"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("must be quoted"), "{}", r.stderr);
    assert_eq!(read(&repo, "context/notes/bad.md"), bad);
    // The other files were still formatted.
    assert_eq!(read(&repo, "context/notes/refunds.md"), MESSY_MD_FORMATTED);
}

#[cfg(unix)]
#[test]
fn keeps_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let repo = messy_repo();
    let path = repo.path().join("context/notes/refunds.md");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(repo.ctx(&["fmt"]).code, 0);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), MESSY_MD_FORMATTED);
}

#[test]
fn what_ctx_add_writes_is_already_formatted() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/notes/a.md",
            "---\nid: notes.a\ntype: note\ntitle: A\n---\nbody\n",
        ),
    ]);
    let r = repo.ctx(&[
        "add",
        "notes.b",
        "--type",
        "note",
        "--title",
        "B",
        "--owner",
        "billing",
        "--source",
        "https://wiki/b",
        "--content",
        "Body.",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = repo.ctx(&["fmt", "--check"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Everything in a repository that `fmt` must leave meaning-equal: the findings
/// and the bundle digest for `role`.
fn meaning(dir: &Path, role: &str, at: &str) -> (String, String) {
    let v = ctx(dir, &["validate", "--format", "json"]);
    let b = ctx(dir, &["bundle", "--role", role, "--at", at]);
    assert_eq!(b.code, 0, "{}", b.stderr);
    let digest = b.json()["digest"].as_str().unwrap().to_string();
    (v.stdout, digest)
}

/// Run fmt twice: the second run changes nothing, and meaning is kept.
fn assert_idempotent(dir: &Path, role: &str, at: &str) -> usize {
    let before = meaning(dir, role, at);
    let first = ctx(dir, &["fmt"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let check = ctx(dir, &["fmt", "--check"]);
    assert_eq!(check.code, 0, "not idempotent:\n{}", check.stdout);
    let second = ctx(dir, &["fmt"]);
    assert!(second.stdout.is_empty(), "{}", second.stdout);
    assert_eq!(
        meaning(dir, role, at),
        before,
        "fmt changed what the repository means"
    );
    first.stdout.lines().count()
}

#[test]
fn idempotent_on_the_projects_own_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let root = project_root();
    std::fs::copy(
        root.join("opencontext.yaml"),
        tmp.path().join("opencontext.yaml"),
    )
    .unwrap();
    copy_tree(&root.join("context"), &tmp.path().join("context"));
    assert_idempotent(tmp.path(), "maintainer", "2026-12-01T00:00:00Z");
    // And the checked-in repository is already formatted.
    let r = ctx(&root, &["fmt", "--check"]);
    assert_eq!(r.code, 0, "run `ctx fmt` on context/:\n{}", r.stdout);
}

/// The benchmark generator, beside the project (`../shared`) or its worktree.
fn gen_corpus() -> Option<PathBuf> {
    let root = project_root();
    [
        root.join("../shared/bench/gen_corpus.py"),
        root.join("../../shared/bench/gen_corpus.py"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

#[test]
fn idempotent_on_a_generated_corpus() {
    let Some(script) = gen_corpus() else {
        eprintln!("note: ../shared/bench/gen_corpus.py is absent; skipping");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let status = std::process::Command::new("python3")
        .arg(&script)
        .args(["--objects", "1000", "--out"])
        .arg(&out)
        .output();
    match status {
        Ok(o) if o.status.success() => {}
        _ => {
            eprintln!("note: python3 could not run the corpus generator; skipping");
            return;
        }
    }
    let changed = assert_idempotent(&out, "support", "2026-11-01T00:00:00Z");
    assert!(changed > 0, "the corpus exercises reordering");
}
