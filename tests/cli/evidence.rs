//! Evidence stays consistent with what was produced: no receipt or audit
//! event for a bundle that was never written, no append to a damaged log,
//! the manifest's audit flags honoured for reads, writes and decisions, and
//! `verify` naming a declared but malformed key.

use serde_json::Value;

use crate::ops_support::{OPS_MANIFEST, WELCOME};
use crate::signing::Signer;
use crate::support::{ctx_env, Repo};

const FIXED: [(&str, &str); 1] = [("SOURCE_DATE_EPOCH", "1785000000")];

fn events(root: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(root.join(".ctx/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn names(root: &std::path::Path) -> Vec<String> {
    events(root)
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_bundle_that_cannot_be_written_leaves_no_receipt_and_no_event() {
    let s = Signer::new("audit:\n  context_reads: true\n");
    s.key("release-bot");
    let r = s.run(&[
        "bundle",
        "--agent",
        "support-agent",
        "--sign",
        "-o",
        "missing/folder/b.json",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(r.stderr.contains("missing/folder/b.json"), "{}", r.stderr);
    assert!(
        s.receipts().is_empty(),
        "a receipt for a bundle never written"
    );
    assert!(
        events(s.path()).is_empty(),
        "an event for a bundle never written"
    );
    assert!(!s.path().join("missing").exists());
    // The same into an existing folder: bundle, receipt and event together,
    // and the receipt signs the bytes on disk.
    std::fs::create_dir_all(s.path().join("out")).unwrap();
    let r = s.run(&[
        "bundle",
        "--agent",
        "support-agent",
        "--sign",
        "-o",
        "out/b.json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.receipts().len(), 1);
    assert_eq!(names(s.path()), ["context.bundle"]);
    let v = s.run(&["verify", "out/b.json"]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(
        v.stdout.contains("byte-for-byte the signed rendering"),
        "{}",
        v.stdout
    );
    // A receipt file in a missing folder: refused before anything is recorded.
    let r = s.run(&[
        "resolve",
        "--agent",
        "support-agent",
        "--sign",
        "--receipt",
        "nowhere/r.json",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert_eq!(names(s.path()), ["context.bundle"], "nothing new recorded");
}

#[test]
fn a_same_length_edit_in_the_middle_stops_the_next_append() {
    let s = Signer::new("audit:\n  context_reads: true\n");
    for _ in 0..3 {
        assert_eq!(s.run(&["resolve", "--agent", "support-agent"]).code, 0);
    }
    let log = s.path().join(".ctx/audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let edited = lines[1].replacen("support-agent", "support-agenT", 1);
    assert_eq!(edited.len(), lines[1].len());
    let damaged = format!("{}\n{edited}\n{}\n", lines[0], lines[2]);
    std::fs::write(&log, &damaged).unwrap();
    let r = s.run(&["resolve", "--agent", "support-agent"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "nothing emitted without its record");
    assert!(r.stderr.contains("refusing to append"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        damaged,
        "not extended"
    );
}

const DECISION: &str = "---\nid: notes.refund-limit\ntype: decision\nlayer: L5\nauthority: approved\nowner: support\ncanonical_source: true\ntitle: Refund limit\ndecision: Keep the limit.\nupdated: 2026-08-01T00:00:00Z\n---\n\nBecause.\n";

fn audited(flags: &str) -> Repo {
    Repo::new(&[
        (
            "opencontext.yaml",
            &format!("{OPS_MANIFEST}audit:\n{flags}"),
        ),
        ("context/mission.md", crate::ops_support::MISSION),
        ("context/notes/welcome.md", WELCOME),
        ("context/notes/refund-limit.md", DECISION),
    ])
}

#[test]
fn writes_and_decisions_are_audited_as_the_manifest_says() {
    let repo = audited("  context_writes: true\n  decisions: true\n");
    let add = |extra: &[&str]| {
        let mut args = vec!["add", "notes.new", "--type", "note", "--content", "Hello."];
        args.extend_from_slice(extra);
        ctx_env(repo.path(), &args, &FIXED)
    };
    assert_eq!(add(&["--dry-run"]).code, 0);
    assert!(names(repo.path()).is_empty(), "a dry run writes nothing");
    let r = add(&["--agent", "support-agent"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let e = events(repo.path());
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["event"], "context.write");
    assert_eq!(e[0]["objects"], serde_json::json!(["notes.new"]));
    assert_eq!(e[0]["actor"]["type"], "agent");
    assert_eq!(e[0]["actor"]["id"], "support-agent");
    // A refused write records nothing.
    assert_eq!(add(&[]).code, 1);
    assert_eq!(events(repo.path()).len(), 1);
    // Superseding a decision: a supersede event and a decision record.
    let r = ctx_env(
        repo.path(),
        &[
            "supersede",
            "notes.refund-limit",
            "--content",
            "Because, still.",
        ],
        &FIXED,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        names(repo.path()),
        ["context.write", "context.supersede", "decision.record"]
    );
    let v = ctx_env(repo.path(), &["audit", "verify"], &[]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    // Reads are not asked for here: none recorded.
    assert_eq!(ctx_env(repo.path(), &["get", "notes.new"], &[]).code, 0);
    assert_eq!(events(repo.path()).len(), 3);
}

#[test]
fn reads_of_get_list_search_and_export_are_audited() {
    let repo = audited("  context_reads: true\n");
    let run = |args: &[&str]| {
        let r = ctx_env(repo.path(), args, &FIXED);
        assert!(r.code == 0, "{args:?}: {}{}", r.stdout, r.stderr);
    };
    run(&["get", "notes.welcome", "--role", "support"]);
    run(&["list", "--agent", "support-agent"]);
    run(&["search", "welcome", "--role", "support"]);
    run(&["export", "--target", "agents-md", "--role", "support"]);
    run(&[
        "export",
        "--target",
        "agents-md",
        "--role",
        "support",
        "--check",
    ]);
    let e = events(repo.path());
    let n: Vec<&str> = e.iter().map(|x| x["event"].as_str().unwrap()).collect();
    assert_eq!(
        n,
        [
            "context.read",
            "context.read",
            "context.search",
            "context.bundle"
        ],
        "--check discloses nothing new"
    );
    assert_eq!(e[0]["objects"], serde_json::json!(["notes.welcome"]));
    assert_eq!(e[0]["actor"]["type"], "role");
    assert_eq!(e[1]["actor"]["id"], "support-agent");
    assert!(e[1]["objects"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("notes.welcome")));
    assert_eq!(e[2]["objects"], serde_json::json!(["notes.welcome"]));
    assert!(e[3]["bundle"]["digest"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    // Writes are not asked for here: none recorded.
    let r = ctx_env(
        repo.path(),
        &["add", "notes.other", "--type", "note", "--content", "x"],
        &FIXED,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(events(repo.path()).len(), 4);
    // A present but invalid flag fails closed instead of recording nothing.
    let bad = audited("  context_reads: yes please\n");
    let r = ctx_env(bad.path(), &["get", "notes.welcome"], &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(r.stderr.contains("audit.context_reads"), "{}", r.stderr);
}

#[test]
fn private_rekey_and_edit_are_audited_writes() {
    let (repo, _keys, alice) = crate::private::fixture();
    let m = std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap();
    repo.write(
        "opencontext.yaml",
        &format!("{m}audit:\n  context_writes: true\n"),
    );
    let id = alice.path.display().to_string();
    let run = |args: &[&str], env: &[(&str, &str)]| crate::private::run(repo.path(), args, env);
    assert_eq!(run(&["private", "encrypt"], &[]).code, 0);
    assert_eq!(names(repo.path()), ["context.write"]);
    assert_eq!(
        events(repo.path())[0]["objects"],
        serde_json::json!(["vault.passport"])
    );
    let r = run(&["private", "rekey", "--force", "-i", &id], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(names(repo.path()).len(), 2);
    // An edit that changes nothing writes nothing and records nothing.
    let r = run(
        &["private", "edit", "private/vault/passport.md", "-i", &id],
        &[("EDITOR", "true"), ("VISUAL", "")],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(names(repo.path()).len(), 2);
    let r = run(
        &["private", "edit", "private/vault/passport.md", "-i", &id],
        &[("EDITOR", "sed -i s/2031/2032/"), ("VISUAL", "")],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(names(repo.path()).len(), 3);
    let text = std::fs::read_to_string(repo.path().join(".ctx/audit.jsonl")).unwrap();
    assert!(
        !text.contains("2032-05") && !text.contains("X1234567"),
        "{text}"
    );
}

#[test]
fn verify_names_a_declared_but_malformed_key() {
    let s = Signer::new("");
    let public = s.key("release-bot");
    s.signed_bundle("support");
    let broken = &public[..public.len() - 8];
    let m = s.manifest().replace(&public, &format!("{broken}AAAA"));
    std::fs::write(s.path().join("opencontext.yaml"), m).unwrap();
    let v = s.run(&["verify", ".ctx/bundles/support.json"]);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains("`release-bot`")
            && v.stdout.contains("extensions.ctx.keys.release-bot.ed25519")
            && v.stdout.contains("expected")
            && v.stdout.contains("found"),
        "{}",
        v.stdout
    );
    assert!(!v.stdout.contains("none declared"), "{}", v.stdout);
    let j = s.run(&["verify", "--format", "json", ".ctx/bundles/support.json"]);
    let doc = j.json();
    assert_eq!(doc["malformed_keys"][0]["id"], "release-bot");
    assert_eq!(
        doc["malformed_keys"][0]["field"],
        "extensions.ctx.keys.release-bot.ed25519"
    );
    // Signing with it names it the same way.
    let r = s.run(&["bundle", "--agent", "support-agent", "--sign"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("`release-bot` is declared but malformed"),
        "{}",
        r.stderr
    );
}
