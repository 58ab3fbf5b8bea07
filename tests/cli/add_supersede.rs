//! add and supersede: checks before disk, promotion, authorization, atomic writes, the lock.

use crate::support::ctx_in;
use crate::support::fixtures::{healthy, PRICING_V1, PRICING_V2, REFUNDS};

/// A fixed clock for the `updated` stamp that writes add.
const EPOCH: &str = "1785000000";

/// Every file under the repository, with its bytes (to prove nothing changed).
fn snapshot(root: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.ends_with(".ctx/cache") || p.ends_with(".ctx/tmp") {
                continue; // the parse cache and the (git-ignored) staging folder are not the user's files
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(root).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn add_writes_a_valid_object_and_dry_run_writes_nothing() {
    let repo = healthy();
    let before = snapshot(repo.path());
    let args = [
        "add",
        "policies.returns",
        "--type",
        "policy",
        "--title",
        "Returns: the rules",
        "--owner",
        "support",
        "--content",
        "Within 14 days.",
    ];
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let r = ctx_in(&repo)
        .args(&dry)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("would create context/policies/returns.md:\n---\nid: policies.returns\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.ends_with(
            "dry run: added policies.returns in context/policies/returns.md; nothing was written\n"
        ),
        "{}",
        r.stdout
    );
    assert_eq!(snapshot(repo.path()), before, "a dry run touches nothing");
    let r = ctx_in(&repo)
        .args(args)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "created context/policies/returns.md\nadded policies.returns in context/policies/returns.md\n");
    let text = std::fs::read_to_string(repo.path().join("context/policies/returns.md")).unwrap();
    assert_eq!(
        text,
        "---\nid: policies.returns\ntype: policy\ntitle: \"Returns: the rules\"\nowner: support\nupdated: 2026-07-25T17:20:00Z\n---\n\nWithin 14 days.\n"
    );
    assert_eq!(repo.ctx(&["validate", "--strict"]).code, 0);
    let got = repo
        .ctx(&["get", "policies.returns", "--format", "json"])
        .json();
    assert_eq!(got["title"], "Returns: the rules");
    // Adding it again is refused: durable context is superseded, never overwritten.
    let r = repo.ctx(&[
        "add",
        "policies.returns",
        "--type",
        "policy",
        "--content",
        "Within 7 days.",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("already exists") && r.stderr.contains("ctx supersede policies.returns"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("context/policies/returns.md")).unwrap(),
        text
    );
}

#[test]
fn add_checks_everything_before_touching_disk() {
    let repo = healthy();
    let before = snapshot(repo.path());
    // Promotion needs --promote.
    let r = repo.ctx(&[
        "add",
        "policies.new",
        "--type",
        "policy",
        "--owner",
        "support",
        "--authority",
        "canonical",
        "--content",
        "x",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "promotion to canonical or approved is an explicit governance act — pass --promote"
        ),
        "{}",
        r.stderr
    );
    // A secret in the content is refused by the loader's own checks.
    let r = repo.ctx(&[
        "add",
        "policies.keys",
        "--type",
        "policy",
        "--owner",
        "support",
        "--content",
        "key AKIAABCDEFGHIJKLMNOP",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("secret-detected"), "{}", r.stderr);
    // Paths no collection loads, or outside the repository.
    let r = repo.ctx(&["add", "misc.thing", "--type", "note", "--content", "x"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("pass --file"), "{}", r.stderr);
    let r = repo.ctx(&[
        "add",
        "misc.thing",
        "--type",
        "note",
        "--file",
        "elsewhere/thing.md",
        "--content",
        "x",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("no collection loads elsewhere/thing.md"),
        "{}",
        r.stderr
    );
    let r = repo.ctx(&[
        "add",
        "misc.thing",
        "--type",
        "note",
        "--file",
        "../thing.md",
        "--content",
        "x",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = repo.ctx(&["add", "Not An Id", "--type", "note"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        snapshot(repo.path()),
        before,
        "refused writes touch nothing"
    );
    // With --promote the same canonical object is written.
    let r = repo.ctx(&[
        "add",
        "policies.new",
        "--type",
        "policy",
        "--owner",
        "support",
        "--authority",
        "canonical",
        "--promote",
        "--content",
        "x",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn add_keeps_the_repository_valid() {
    let repo = healthy();
    let manifest = std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap();
    repo.write(
        "opencontext.yaml",
        &format!("{manifest}provenance:\n  required: true\n"),
    );
    for f in [
        "context/mission.md",
        "context/policies/refunds.md",
        "context/pricing/enterprise.md",
        "context/pricing/enterprise.v2.md",
        "context/notes/welcome.md",
    ] {
        let t = std::fs::read_to_string(repo.path().join(f)).unwrap();
        repo.write(f, &t.replacen("---\n", "---\ncanonical_source: true\n", 1));
    }
    assert_eq!(repo.ctx(&["validate"]).code, 0);
    // Provenance is required: an object with no source would make the repository invalid.
    let r = repo.ctx(&[
        "add",
        "notes.bare",
        "--type",
        "note",
        "--owner",
        "support",
        "--content",
        "x",
    ]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("missing-provenance"), "{}", r.stderr);
    assert!(
        r.stderr.contains("help: pass --source <uri>"),
        "{}",
        r.stderr
    );
    assert!(!repo.path().join("context/notes/bare.md").exists());
    let r = repo.ctx(&[
        "add",
        "notes.bare",
        "--type",
        "note",
        "--owner",
        "support",
        "--source",
        "https://example.com/ticket/1",
        "--file",
        "context/notes/bare.yaml",
        "--content",
        "x",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let yaml = std::fs::read_to_string(repo.path().join("context/notes/bare.yaml")).unwrap();
    assert!(
        yaml.contains("sources: [{\"uri\":\"https://example.com/ticket/1\"}]\n"),
        "{yaml}"
    );
    assert_eq!(repo.ctx(&["validate"]).code, 0);
}

#[test]
fn agents_need_an_explicit_write_grant() {
    let repo = healthy();
    // No grant for policies.* (reads never imply writes).
    let r = repo.ctx(&[
        "add",
        "policies.agent",
        "--type",
        "policy",
        "--owner",
        "support",
        "--agent",
        "support-agent",
        "--content",
        "x",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("agent `support-agent` has no write grant for `policies.agent`"),
        "{}",
        r.stderr
    );
    assert!(!repo.path().join("context/policies/agent.md").exists());
    // extensions.ctx.write grants notes.* to the agent.
    let r = repo.ctx(&[
        "add",
        "notes.observed",
        "--type",
        "note",
        "--owner",
        "support",
        "--agent",
        "support-agent",
        "--content",
        "Seen on a ticket.",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Superseding needs the object's permissions.write or a grant; deny overrides.
    let r = repo.ctx(&[
        "supersede",
        "policies.refunds",
        "--agent",
        "support-agent",
        "--content",
        "Within 10 days.",
    ]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no write grant"), "{}", r.stderr);
    repo.write(
        "context/policies/refunds.md",
        &REFUNDS.replace(
            "owner: support\n",
            "owner: support\npermissions:\n  write: [support-agent]\n",
        ),
    );
    let r = repo.ctx(&[
        "supersede",
        "policies.refunds",
        "--agent",
        "support-agent",
        "--content",
        "Within 10 days.",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // An unknown agent is a usage error.
    assert_eq!(
        repo.ctx(&[
            "add",
            "notes.x",
            "--type",
            "note",
            "--agent",
            "ghost",
            "--content",
            "x"
        ])
        .code,
        2
    );
}

#[test]
fn supersede_keeps_the_previous_version_on_disk() {
    let repo = healthy();
    let r = ctx_in(&repo)
        .args([
            "supersede",
            "pricing.enterprise",
            "--content",
            "Enterprise plans start at $3,000/month.",
        ])
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "created context/pricing/enterprise.v3.md\npricing.enterprise@3 supersedes pricing.enterprise@2 (the previous version stays on disk)\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("context/pricing/enterprise.md")).unwrap(),
        PRICING_V1
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("context/pricing/enterprise.v2.md")).unwrap(),
        PRICING_V2
    );
    let v3 = std::fs::read_to_string(repo.path().join("context/pricing/enterprise.v3.md")).unwrap();
    // Written in the canonical key order of `ctx fmt` (docs/objects.md).
    assert!(
        v3.starts_with("---\nid: pricing.enterprise\ntype: pricing\nversion: 3\n")
            && v3.contains("\nsupersedes: [\"pricing.enterprise@2\"]\n"),
        "{v3}"
    );
    assert!(
        v3.contains("authority: canonical\n")
            && v3.ends_with("\n---\n\nEnterprise plans start at $3,000/month.\n"),
        "{v3}"
    );
    assert_eq!(repo.ctx(&["validate", "--strict"]).code, 0);
    let h = repo.ctx(&["history", "pricing.enterprise"]);
    assert!(
        h.stdout.contains("v2  superseded") && h.stdout.contains("v3  current"),
        "{}",
        h.stdout
    );
    // Raising authority on supersede is a promotion.
    let r = repo.ctx(&[
        "supersede",
        "notes.welcome",
        "--authority",
        "approved",
        "--content",
        "Hi.",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("refusing to raise notes.welcome from `reference` to `approved`"),
        "{}",
        r.stderr
    );
    assert_eq!(
        repo.ctx(&["supersede", "nope.nothing", "--content", "x"])
            .code,
        3
    );
    assert_eq!(
        repo.ctx(&["supersede", "notes.welcome"]).code,
        2,
        "nothing to change"
    );
}

#[test]
fn superseding_an_unversioned_object_numbers_it() {
    let repo = healthy();
    let r = repo.ctx(&[
        "supersede",
        "policies.refunds",
        "--content",
        "Refunds within 60 days.",
        "--dry-run",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("would update context/policies/refunds.md:\n---\nid: policies.refunds\nversion: 1\ntype: policy\n"), "{}", r.stdout);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("context/policies/refunds.md")).unwrap(),
        REFUNDS
    );
    let r = repo.ctx(&[
        "supersede",
        "policies.refunds",
        "--content",
        "Refunds within 60 days.",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with(
            "updated context/policies/refunds.md\ncreated context/policies/refunds.v2.md\n"
        ),
        "{}",
        r.stdout
    );
    let old = std::fs::read_to_string(repo.path().join("context/policies/refunds.md")).unwrap();
    assert_eq!(
        old,
        REFUNDS.replacen(
            "id: policies.refunds\n",
            "id: policies.refunds\nversion: 1\n",
            1
        ),
        "one line added, content kept"
    );
    let v = repo.ctx(&["validate", "--strict"]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    let got = repo
        .ctx(&["get", "policies.refunds", "--format", "json"])
        .json();
    assert_eq!(got["version"], 2);
    assert_eq!(got["content"], "Refunds within 60 days.");
}

/// Two processes supersede the same object at once. Both wait for the repository
/// lock (held here), and each loads the repository only once it holds the lock, so
/// the second sees the first's version and neither update is lost.
#[test]
fn concurrent_writers_do_not_lose_an_update() {
    if !crate::support::tools::require_tool("git") {
        return;
    }
    let repo = healthy();
    crate::support::git::init_git(repo.path(), "fixture");
    let held = ctx_core::fs::RepoLock::acquire(repo.path()).unwrap();
    let spawn = |text: &str| {
        ctx_in(&repo)
            .args(["supersede", "pricing.enterprise", "--content", text])
            .spawn()
    };
    let a = spawn("Version from writer A.");
    let b = spawn("Version from writer B.");
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(
        !repo
            .path()
            .join("context/pricing/enterprise.v3.md")
            .exists(),
        "writers wait for the repository lock"
    );
    drop(held);
    a.wait().assert_ok();
    b.wait().assert_ok();
    let v3 = std::fs::read_to_string(repo.path().join("context/pricing/enterprise.v3.md")).unwrap();
    let v4 = std::fs::read_to_string(repo.path().join("context/pricing/enterprise.v4.md")).unwrap();
    assert!(
        v3.contains("supersedes: [\"pricing.enterprise@2\"]"),
        "{v3}"
    );
    assert!(
        v4.contains("supersedes: [\"pricing.enterprise@3\"]"),
        "the second writer saw the first: {v4}"
    );
    let bodies = [
        v3.contains("writer A") || v4.contains("writer A"),
        v3.contains("writer B") || v4.contains("writer B"),
    ];
    assert_eq!(bodies, [true, true], "both updates survive");
    let r = repo.ctx(&["validate", "--strict"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
}

/// With the published schemas embedded, a schema violation stops the write before disk.
#[test]
fn schema_violations_are_refused_before_disk() {
    if ctx_core::schema::Kind::Object.text().len() < 100 {
        eprintln!("note: this build embeds placeholder schemas; skipping");
        return;
    }
    let repo = healthy();
    let r = repo.ctx(&[
        "add",
        "policies.bad",
        "--type",
        "policy",
        "--owner",
        "support",
        "--authority",
        "gospel",
        "--content",
        "x",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("schema-invalid") && r.stderr.contains("gospel"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("nothing was written"), "{}", r.stderr);
    assert!(!repo.path().join("context/policies/bad.md").exists());
}
