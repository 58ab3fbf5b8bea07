//! Crash safety (issue 33): no single kill or full disk may wedge a repository.
//!
//! Every writing command runs once with `CTX_FAILPOINT_TRACE` to list the
//! write points it reaches (`crates/ctx-core/src/fs/failpoint.rs`), then once
//! per point with `CTX_FAILPOINT=<point>@<n>`, which kills it there (SIGKILL);
//! each append point also gets a short write (half a record, then the kill)
//! and a full disk (half a record, then ENOSPC). After each run:
//!
//! - `ctx validate` (and `--strict`), `ctx private status` exit as they did
//!   before the command or as they do after it ran cleanly — the old state or
//!   the new one, nothing in between (a version without its sign-off fails
//!   `--strict`, so a half-done supersede shows here);
//! - `ctx audit verify` finds no damage in any log;
//! - the next write succeeds, and afterwards no log has anything pending,
//!   nothing the killed run staged is left (no `.ctx-tmp-*`, `.ctx-*.tmp`,
//!   `.txn`), and the logs verify in full.
//!
//! Failpoints exist only in builds with debug assertions (what `cargo test`
//! builds); in a release test build these tests say so and return.

use std::path::{Path, PathBuf};

use crate::exchange::{at, ClRepo};
use crate::private::keygen;
use crate::support::{ctx_in, Run};

/// Points where a write of a record happens (a short write can tear it).
const APPENDS: &[&str] = &["audit.append", "receipts.append", "receipts.anchor"];

/// One prepared repository (at a fixed path: the receipt anchor binds it),
/// restored from its snapshot before each run.
struct World {
    repo: ClRepo,
    snapshot: tempfile::TempDir,
    keys: tempfile::TempDir,
    identity: String,
    /// A folder outside the repository, for output written there.
    outside: tempfile::TempDir,
    proposal: String,
}

/// What a scenario's repository holds besides the common fixture.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extra {
    None,
    /// A plaintext file in the private collection (for `private encrypt`).
    PlaintextDraft,
    /// A canonical object typed by hand, without a sign-off (for `promote`).
    HandCanonical,
}

impl World {
    fn new(extra: Extra) -> World {
        let repo = ClRepo::init();
        let keys = tempfile::tempdir().unwrap();
        let alice = keygen(keys.path(), "alice");
        let manifest = repo.file("opencontext.yaml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        let text = text
            .replacen(
                "\ncollections:\n",
                "\ncollections:\n  vault: ./private/vault/**\n",
                1,
            )
            .replacen(
                "\nextensions:\n",
                &format!(
                    "\nextensions:\n  ctx.private:\n    collections:\n      vault:\n        recipients: [\"{}\"]\n",
                    alice.public
                ),
                1,
            );
        let text = format!(
            "{text}\naudit:\n  context_reads: true\n  context_writes: true\n  decisions: true\n"
        );
        std::fs::write(&manifest, text).unwrap();
        let write = |rel: &str, body: &str| {
            let p = repo.file(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        };
        write(
            "private/vault/note.md",
            "---\nid: vault.note\ntype: note\nowner: me\ncanonical_source: true\n---\n\nThe safe is behind the painting.\n",
        );
        let identity = alice.path.display().to_string();
        assert_ok(&repo.run(&["private", "encrypt"]));
        if extra == Extra::PlaintextDraft {
            write(
                "private/vault/draft.md",
                "---\nid: vault.draft\ntype: note\nowner: me\ncanonical_source: true\n---\n\nNot encrypted yet.\n",
            );
        }
        if extra == Extra::HandCanonical {
            write(
                "context/policies/hand.md",
                "---\nid: policies.hand\ntype: policy\nauthority: canonical\nowner: support\ncanonical_source: true\n---\n\nTyped by hand.\n",
            );
        }
        assert_ok(&repo.run(&["keys", "generate", "--id", "release", "--declare"]));
        // A proposal, approved, for `proposals commit`; a second bundle to open.
        let env = repo.bundle("m", &["--action", "memory.propose"]);
        assert_ok(&repo.open(&env, "support-agent", 3));
        let handle = repo.envelope(&env)["bundle"]["context"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["value"]["id"] == "policies.refunds")
            .unwrap()["provenance_handles"][0]
            .as_str()
            .unwrap()
            .to_string();
        write(
            "cand.json",
            &format!(
                r#"{{"operation":"add_or_contradict","proposed_claims":[{{"predicate":"policies.refunds","object":{{"value":"Refunds within 14 days.","datatype":"text"}},"confidence":0.6}}],"provenance_handles":["{handle}"],"rationale":"ticket 42"}}"#
            ),
        );
        let envp = repo.file(&env).display().to_string();
        let p = repo.run(&[
            "propose",
            "cand.json",
            "--bundle",
            &envp,
            "--as",
            "support-agent",
            "--at",
            &at(4),
        ]);
        assert_ok(&p);
        let proposal = p.json()["id"].as_str().unwrap().to_string();
        assert_ok(&repo.run(&["proposals", "approve", &proposal, "--at", &at(5)]));
        repo.bundle("b", &[]);
        let snapshot = tempfile::tempdir().unwrap();
        copy_tree(repo.path(), snapshot.path());
        World {
            repo,
            snapshot,
            keys,
            identity,
            outside: tempfile::tempdir().unwrap(),
            proposal,
        }
    }

    fn restore(&self) {
        for e in std::fs::read_dir(self.repo.path()).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                std::fs::remove_dir_all(&p).unwrap();
            } else {
                std::fs::remove_file(&p).unwrap();
            }
        }
        copy_tree(self.snapshot.path(), self.repo.path());
        for e in std::fs::read_dir(self.outside.path()).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
    }

    fn run(&self, args: &[String], env: &[(&str, String)]) -> Run {
        let editor = self.keys.path().join("editor.sh");
        std::fs::write(&editor, "printf '\\nEdited.\\n' >> \"$1\"\n").unwrap();
        ctx_in(self.repo.path())
            .args(args)
            .env("XDG_CONFIG_HOME", self.repo.xdg.path())
            .env("CTX_NO_CACHE", "1")
            .env("EDITOR", format!("sh {}", editor.display()))
            .env("VISUAL", "")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .run()
    }

    fn ctx(&self, args: &[&str]) -> Run {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        self.run(&args, &[])
    }

    /// What the read-only checks answer now.
    fn checks(&self) -> Vec<i32> {
        let id = self.identity.clone();
        [
            vec!["validate"],
            vec!["validate", "--strict"],
            vec!["private", "status", "-i", &id],
        ]
        .iter()
        .map(|a| self.ctx(a).code)
        .collect()
    }
}

fn assert_ok(r: &Run) {
    assert_eq!(r.code, 0, "{}", r.describe());
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Files a run may leave behind that nothing else would remove.
fn strays(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let in_staging = p.parent().is_some_and(|d| d.ends_with(".ctx/tmp"));
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else if name.starts_with(".ctx-tmp-")
                || (name.starts_with(".ctx-") && name.ends_with(".tmp"))
                || (in_staging && name != ".gitignore" && name != "write.lock")
            {
                out.push(p);
            }
        }
    }
    out
}

/// The write points a clean run of `args` reaches, each as `name@n`.
fn points(w: &World, args: &[String]) -> Vec<String> {
    w.restore();
    let trace = w.keys.path().join("trace");
    let _ = std::fs::remove_file(&trace);
    w.run(
        args,
        &[("CTX_FAILPOINT_TRACE", trace.display().to_string())],
    );
    let mut seen = std::collections::BTreeMap::<String, u32>::new();
    std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .lines()
        .map(|name| {
            let n = seen.entry(name.to_string()).or_default();
            *n += 1;
            format!("{name}@{n}")
        })
        .collect()
}

/// Kill `args` at every write point (and tear every append), checking the
/// repository after each; `then` checks what the scenario must hold once the
/// next write has run.
fn crash_at_every_point(label: &str, extra: Extra, args: &[&str], then: &dyn Fn(&World, &str)) {
    if !cfg!(debug_assertions) {
        eprintln!("crash tests need failpoints, which only debug builds have: skipped");
        return;
    }
    let w = World::new(extra);
    let outside = args.iter().any(|a| a.contains("{outside}"));
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            a.replace("{identity}", &w.identity)
                .replace("{outside}", &w.outside.path().display().to_string())
                .replace("{proposal}", &w.proposal)
        })
        .collect();
    w.restore();
    let before = w.checks();
    let points = points(&w, &args);
    let after = w.checks();
    assert!(!points.is_empty(), "{label}: no write point reached");
    // The list docs/crash-safety.md gives per scenario (`-- --nocapture` shows it).
    eprintln!("note: {label}: {}", points.join(" "));
    let mut runs: Vec<String> = points.clone();
    for p in &points {
        if APPENDS.iter().any(|a| p.starts_with(&format!("{a}@"))) {
            runs.push(format!("{p}:short"));
            runs.push(format!("{p}:enospc"));
        }
    }
    for spec in &runs {
        w.restore();
        let r = w.run(&args, &[("CTX_FAILPOINT", spec.clone())]);
        let what = format!("{label} at {spec}");
        if !spec.ends_with(":enospc") {
            assert_eq!(r.code, -1, "{what}: not killed\n{}", r.describe());
        }
        for (i, code) in w.checks().into_iter().enumerate() {
            assert!(
                code == before[i] || code == after[i],
                "{what}: check {i} exits {code}, before {}, after {}",
                before[i],
                after[i]
            );
        }
        let v = w.ctx(&["audit", "verify", "--format", "json"]);
        assert_eq!(v.code, 0, "{what}: a log is damaged\n{}", v.describe());
        // The next write completes or rolls back whatever was left.
        let next = w.ctx(&[
            "add",
            "procedures.after",
            "--type",
            "procedure",
            "--content",
            "After the crash.",
            "--owner",
            "support",
            "--canonical-source",
        ]);
        assert_ok(&next);
        assert_ok(&w.ctx(&["receipts", "list"]));
        assert_ok(&w.ctx(&["receipts", "retry"]));
        let v = w.ctx(&["audit", "verify", "--format", "json"]);
        assert_eq!(v.code, 0, "{what}: after the next write\n{}", v.describe());
        for log in v.json()["logs"].as_array().unwrap() {
            assert_eq!(
                log["pending"],
                serde_json::json!([]),
                "{what}: still pending after the next write: {log}"
            );
        }
        assert_ok(&w.ctx(&["receipts", "verify"]));
        let mut left = strays(w.repo.path());
        left.extend(strays(w.outside.path()));
        if outside {
            // A sibling staged beside an outside target goes with the next write there.
            assert_ok(&w.run(&args, &[]));
            left = strays(w.outside.path());
            left.extend(strays(w.repo.path()));
        }
        assert!(left.is_empty(), "{what}: left behind {left:?}");
        then(&w, &what);
    }
}

fn nothing(_: &World, _: &str) {}

#[test]
fn add_survives_a_kill_at_every_write_point() {
    crash_at_every_point(
        "add",
        Extra::None,
        &[
            "add",
            "procedures.crash",
            "--type",
            "procedure",
            "--content",
            "Crash.",
            "--canonical-source",
        ],
        &nothing,
    );
}

/// The new version and its sign-off land together: a version without one
/// fails `validate --strict`, which the checks compare.
#[test]
fn supersede_of_a_signed_off_object_survives_a_kill() {
    crash_at_every_point(
        "supersede",
        Extra::None,
        &[
            "supersede",
            "policies.refunds",
            "--content",
            "Refunds within 14 days.",
        ],
        &|w, what| {
            // Superseding again after recovery still passes the sign-off on.
            assert_ok(&w.ctx(&["supersede", "policies.refunds", "--content", "Again."]));
            let v = w.ctx(&["validate", "--strict"]);
            assert_eq!(v.code, 0, "{what}: {}", v.describe());
        },
    );
}

#[test]
fn promote_survives_a_kill() {
    crash_at_every_point(
        "promote",
        Extra::HandCanonical,
        &["promote", "--all"],
        &nothing,
    );
}

#[test]
fn private_encrypt_and_rekey_survive_a_kill() {
    crash_at_every_point(
        "private encrypt",
        Extra::PlaintextDraft,
        &["private", "encrypt"],
        &nothing,
    );
    crash_at_every_point(
        "private rekey",
        Extra::None,
        &["private", "rekey", "--force", "-i", "{identity}"],
        &nothing,
    );
}

#[test]
fn private_edit_survives_a_kill() {
    crash_at_every_point(
        "private edit",
        Extra::None,
        &[
            "private",
            "edit",
            "private/vault/note.md",
            "-i",
            "{identity}",
        ],
        &nothing,
    );
}

#[test]
fn a_signed_bundle_written_to_a_file_survives_a_kill() {
    crash_at_every_point(
        "bundle --sign -o",
        Extra::None,
        &[
            "bundle",
            "--agent",
            "support-agent",
            "--sign",
            "-o",
            "signed.json",
        ],
        &|w, what| {
            // Evidence only for a product that exists, and a product only with it.
            let product = w.repo.file("signed.json").exists() as usize;
            let receipts = std::fs::read_dir(w.repo.file(".ctx/receipts")).map_or(0, |d| d.count());
            let bundles = |root: &Path| {
                std::fs::read_to_string(root.join(".ctx/audit.jsonl"))
                    .unwrap()
                    .matches("\"event\":\"context.bundle\"")
                    .count()
            };
            let events = bundles(w.repo.path()) - bundles(w.snapshot.path());
            assert_eq!((receipts, events), (product, product), "{what}");
        },
    );
    crash_at_every_point(
        "bundle --sign -o outside",
        Extra::None,
        &[
            "bundle",
            "--agent",
            "support-agent",
            "--sign",
            "-o",
            "{outside}/signed.json",
        ],
        &nothing,
    );
}

#[test]
fn proposals_commit_survives_a_kill() {
    crash_at_every_point(
        "proposals commit",
        Extra::None,
        &[
            "proposals",
            "commit",
            "{proposal}",
            "--at",
            "2030-01-01T12:00:06Z",
        ],
        &|w, what| {
            // Committed once, or not at all and committed now: never twice.
            let again = w.ctx(&[
                "proposals",
                "commit",
                &w.proposal,
                "--at",
                "2030-01-01T12:00:07Z",
            ]);
            let show = w.ctx(&[
                "proposals",
                "show",
                &w.proposal,
                "--at",
                "2030-01-01T12:00:08Z",
            ]);
            assert_eq!(
                show.json()["status"],
                "committed",
                "{what}: {}",
                again.describe()
            );
            assert!(
                w.repo.file("context/policies/refunds.v2.md").exists(),
                "{what}"
            );
            assert!(
                !w.repo.file("context/policies/refunds.v3.md").exists(),
                "{what}: committed twice"
            );
            let v = w.ctx(&["validate", "--strict"]);
            assert_eq!(v.code, 0, "{what}: {}", v.describe());
        },
    );
}

#[test]
fn exchange_issue_and_open_survive_a_kill() {
    crash_at_every_point(
        "exchange issue",
        Extra::None,
        &[
            "exchange",
            "issue",
            "b.dec.json",
            "--at",
            "2030-01-01T12:00:02Z",
            "-o",
            "again.env.json",
        ],
        &nothing,
    );
    crash_at_every_point(
        "exchange open",
        Extra::None,
        &[
            "exchange",
            "open",
            "b.env.json",
            "--as",
            "support-agent",
            "--at",
            "2030-01-01T12:00:03Z",
        ],
        &|w, what| {
            // A consumption that was never acknowledged is rolled back, so the
            // consumer can open the bundle it never received; once it was,
            // opening again is a replay.
            let again = w.ctx(&[
                "exchange",
                "open",
                "b.env.json",
                "--as",
                "support-agent",
                "--at",
                "2030-01-01T12:00:04Z",
            ]);
            assert!(
                again.code == 0 || again.stderr.contains("BUNDLE_REPLAY"),
                "{what}: {}",
                again.describe()
            );
        },
    );
}

#[test]
fn an_audited_read_survives_a_kill_and_a_full_disk() {
    crash_at_every_point(
        "get",
        Extra::None,
        &["get", "mission", "--agent", "support-agent"],
        &nothing,
    );
}
