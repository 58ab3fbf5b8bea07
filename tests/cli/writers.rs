//! Writers that must serialise (issue 33): one write lock per repository,
//! whatever the writer's environment; plans made under it; single-use records
//! that never collide.

use crate::exchange::{at, ClRepo};
use crate::support::fixtures::healthy;
use crate::support::{ctx_in, Run};

/// A writer that cannot run `git` (a minimal PATH) takes the same lock as
/// one that can: it waits for the holder, then plans from what the holder
/// wrote. The readiness signal is its `lock.wait` failpoint in a trace.
#[test]
fn a_writer_without_git_waits_for_the_same_lock() {
    if !cfg!(debug_assertions) || !crate::support::tools::require_tool("git") {
        return;
    }
    let repo = healthy();
    crate::support::git::init_git(repo.path(), "fixture");
    let held = ctx_core::fs::RepoLock::acquire(repo.path()).unwrap();
    let traces = tempfile::tempdir().unwrap();
    let trace = traces.path().join("lock.trace");
    let child = ctx_in(&repo)
        .args([
            "add",
            "notes.held",
            "--type",
            "note",
            "--content",
            "From the writer without git.",
            "--agent",
            "support-agent",
        ])
        .env("PATH", "")
        .env("CTX_FAILPOINT_TRACE", &trace)
        .spawn();
    while !std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .contains("lock.wait")
    {
        std::thread::yield_now();
    }
    // While it waits, the holder writes the very object it is about to add.
    repo.write(
        "context/notes/held.md",
        "---\nid: notes.held\ntype: note\nowner: support\nupdated: 2026-08-01T00:00:00Z\n---\n\nFrom the holder.\n",
    );
    drop(held);
    let r = child.wait();
    assert_eq!(r.code, 1, "{}", r.describe());
    assert!(
        r.stderr
            .contains("durable context is superseded, never overwritten"),
        "it planned after the holder's write: {}",
        r.stderr
    );
    let kept = std::fs::read_to_string(repo.path().join("context/notes/held.md")).unwrap();
    assert!(kept.contains("From the holder."));
}

/// Approve `n` proposals that each contradict `policies.refunds`; their ids.
fn approved_proposals(r: &ClRepo, n: usize) -> Vec<String> {
    let env = r.bundle("m", &["--action", "memory.propose"]);
    assert_ok(&r.open(&env, "support-agent", 3));
    let handle = r.envelope(&env)["bundle"]["context"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["value"]["id"] == "policies.refunds")
        .unwrap()["provenance_handles"][0]
        .as_str()
        .unwrap()
        .to_string();
    let envp = r.file(&env).display().to_string();
    (0..n)
        .map(|i| {
            let cand = r.file(&format!("cand{i}.json"));
            std::fs::write(
                &cand,
                format!(
                    r#"{{"operation":"add_or_contradict","proposed_claims":[{{"predicate":"policies.refunds","object":{{"value":"Refunds within {} days.","datatype":"text"}},"confidence":0.6}}],"provenance_handles":["{handle}"],"rationale":"ticket {i}"}}"#,
                    10 + i
                ),
            )
            .unwrap();
            let cand = cand.display().to_string();
            let p = r.run(&[
                "propose", &cand, "--bundle", &envp, "--as", "support-agent", "--at", &at(4),
            ]);
            assert_ok(&p);
            let id = p.json()["id"].as_str().unwrap().to_string();
            assert_ok(&r.run(&["proposals", "approve", &id, "--at", &at(5)]));
            id
        })
        .collect()
}

fn assert_ok(r: &Run) {
    assert_eq!(r.code, 0, "{}", r.describe());
}

/// Sixteen commits at once: each plans under the lock from what the ones
/// before it wrote, so every one lands as the next version.
#[test]
fn parallel_commits_of_approved_proposals_all_land() {
    let r = ClRepo::init();
    let ids = approved_proposals(&r, 16);
    let xdg = r.xdg.path().to_path_buf();
    let children: Vec<_> = ids
        .iter()
        .map(|id| {
            ctx_in(r.path())
                .args(["proposals", "commit", id, "--at", &at(6)])
                .env("XDG_CONFIG_HOME", &xdg)
                .spawn()
        })
        .collect();
    for c in children {
        assert_ok(&c.wait());
    }
    for v in 2..=17 {
        let f = r.file(&format!("context/policies/refunds.v{v}.md"));
        assert!(f.exists(), "version {v} was written");
    }
    assert!(!r.file("context/policies/refunds.v18.md").exists());
    assert_ok(&r.run(&["validate", "--strict"]));
    for id in &ids {
        let show = r.run(&["proposals", "show", id, "--at", &at(7)]).json();
        assert_eq!(show["status"], "committed", "{id}");
    }
}

/// One decision issued 32 times in the same millisecond: 32 single-use
/// bundles, each of which its recipient can open once.
#[test]
fn concurrent_issues_of_one_decision_never_share_a_bundle() {
    let r = ClRepo::init();
    r.request("c.req.json", &[]);
    assert_ok(&r.evaluate("c.req.json", "c.dec.json", 1));
    let dec = r.file("c.dec.json").display().to_string();
    let xdg = r.xdg.path().to_path_buf();
    let children: Vec<_> = (0..32)
        .map(|i| {
            let out = r.file(&format!("c{i}.env.json")).display().to_string();
            ctx_in(r.path())
                .args(["exchange", "issue", &dec, "--at", &at(2), "-o", &out])
                .env("XDG_CONFIG_HOME", &xdg)
                .spawn()
        })
        .collect();
    for c in children {
        assert_ok(&c.wait());
    }
    let mut ids: Vec<String> = (0..32)
        .map(|i| {
            r.envelope(&format!("c{i}.env.json"))["bundle"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 32, "every issuance is its own bundle");
    for i in 0..32 {
        assert_ok(&r.open(&format!("c{i}.env.json"), "support-agent", 3));
    }
}

/// An older ctx staged beside its target as `.ctx-XXXXXX.tmp`, without a pid:
/// one killed mid-write left such a file, which the next writer of that folder
/// removes (nobody holds it open); a file of the user's with a similar name stays.
#[test]
fn the_next_writer_removes_what_an_older_ctx_left_beside_a_target() {
    let repo = healthy();
    let stray = repo.path().join("context/notes/.ctx-Ab3dE9.tmp");
    let mine = repo.path().join("context/notes/.ctx-mine.tmp");
    std::fs::write(&stray, "half a note").unwrap();
    std::fs::write(&mine, "the user's").unwrap();
    let r = ctx_in(&repo)
        .args([
            "add",
            "notes.after",
            "--type",
            "note",
            "--content",
            "After.",
            "--owner",
            "support",
        ])
        .run();
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(
        repo.path().join("context/notes/after.md").is_file(),
        "{}",
        r.describe()
    );
    if cfg!(target_os = "linux") {
        assert!(!stray.exists(), "the older ctx's stray is still there");
    }
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "the user's");
}
