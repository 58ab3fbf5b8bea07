//! Sign-offs of canonical and approved authority: `ctx add` refuses them without
//! `--promote`, so a hand edit must not reach the same place silently. The
//! `unapproved` lint flags an active canonical/approved object with no sign-off
//! in `.ctx/signoffs/` (or one changed since) in a repository that keeps sign-offs,
//! `ctx promote` records one after the fact, and `add --promote` / `supersede`
//! record theirs as they write.

use serde_json::Value;

use crate::support::{Repo, Run};

const MANIFEST: &str =
    "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\n\
roles:\n  support:\n    include: [policies.*]\n";

const HAND_CANONICAL: &str =
    "---\ntype: policy\ntitle: Refunds\nowner: support\ncanonical_source: true\n\
authority: canonical\n---\nWithin 30 days.\n";

const REFERENCE: &str =
    "---\ntype: policy\ntitle: Shipping\nowner: support\ncanonical_source: true\n---\nTwo days.\n";

/// A repository that keeps sign-offs (it has a `.ctx/signoffs/` folder), with one
/// canonical object written by hand.
fn repo() -> Repo {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", HAND_CANONICAL),
        ("context/policies/shipping.md", REFERENCE),
    ]);
    std::fs::create_dir_all(repo.path().join(".ctx/signoffs")).unwrap();
    repo
}

fn unapproved(r: &Run) -> Vec<Value> {
    r.json()["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f["code"] == "unapproved")
        .collect()
}

fn validate(repo: &Repo) -> Run {
    repo.ctx(&["validate", "--format", "json"])
}

#[track_caller]
fn strict_clean(repo: &Repo) {
    repo.ctx(&["validate", "--strict"]).assert_ok();
}

fn ledger(repo: &Repo, id: &str) -> Value {
    let text = std::fs::read_to_string(repo.path().join(format!(".ctx/signoffs/{id}.json")))
        .expect("a sign-off record");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_hand_written_canonical_authority_is_a_warning_at_its_line_that_fails_strict() {
    let repo = repo();
    let r = validate(&repo);
    r.assert_ok();
    let found = unapproved(&r);
    assert_eq!(found.len(), 1, "{}", r.describe());
    let f = &found[0];
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["id"], "policies.refunds");
    assert_eq!(f["file"], "context/policies/refunds.md");
    assert_eq!(f["line"], 6, "the line of `authority:`: {f:#}");
    assert_eq!(f["field"], "authority");
    let msg = f["message"].as_str().unwrap();
    assert!(msg.contains("no sign-off is on record"), "{msg}");
    assert!(msg.contains("--promote"), "{msg}");
    let fix = f["remediation"].as_str().unwrap();
    assert!(fix.contains("ctx promote policies.refunds"), "{fix}");
    repo.ctx(&["validate", "--strict"])
        .assert_code(1)
        .assert_stdout_contains("unapproved");
    let d = repo.ctx(&["doctor", "--format", "json"]);
    assert!(
        d.stdout.contains("ctx promote policies.refunds"),
        "doctor reports it too:\n{}",
        d.describe()
    );
}

#[test]
fn ctx_promote_records_the_sign_off_and_the_repository_is_clean() {
    let repo = repo();
    let dry = repo.ctx(&["promote", "policies.refunds", "--by", "alice", "--dry-run"]);
    dry.assert_ok()
        .assert_stdout_contains("would sign off policies.refunds");
    assert!(
        !repo
            .path()
            .join(".ctx/signoffs/policies.refunds.json")
            .exists(),
        "a dry run writes nothing"
    );

    let r = repo.ctx(&["promote", "policies.refunds", "--by", "alice"]);
    r.assert_ok()
        .assert_stdout_contains("signed off policies.refunds")
        .assert_stdout_contains(".ctx/signoffs/policies.refunds.json");
    let l = ledger(&repo, "policies.refunds");
    assert_eq!(l["id"], "policies.refunds");
    let s = &l["signoffs"][0];
    assert_eq!(s["authority"], "canonical");
    assert_eq!(s["by"], "human:alice");
    assert_eq!(s["via"], "promote");
    assert!(s["digest"].as_str().unwrap().starts_with("sha256:"));
    assert!(unapproved(&validate(&repo)).is_empty());
    strict_clean(&repo);

    // Promoting again changes nothing.
    let before = std::fs::read(repo.path().join(".ctx/signoffs/policies.refunds.json")).unwrap();
    repo.ctx(&["promote", "policies.refunds", "--by", "bob"])
        .assert_ok()
        .assert_stdout_contains("already signed off (by human:alice");
    let after = std::fs::read(repo.path().join(".ctx/signoffs/policies.refunds.json")).unwrap();
    assert_eq!(before, after);
}

#[test]
fn add_with_promote_records_its_sign_off() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/shipping.md", REFERENCE),
    ]);
    repo.ctx(&[
        "add",
        "policies.vip",
        "--type",
        "policy",
        "--owner",
        "support",
        "--canonical-source",
        "--authority",
        "approved",
        "--content",
        "VIPs get 60 days.",
        "--promote",
    ])
    .assert_ok()
    .assert_stdout_contains("approved signed off by");
    let s = &ledger(&repo, "policies.vip")["signoffs"][0];
    assert_eq!(s["authority"], "approved");
    assert_eq!(s["via"], "add");
    strict_clean(&repo);
}

/// Decided: a sign-off covers the file byte for byte, so any edit after it — a
/// typo fix included — is reported until an owner signs off the new content.
#[test]
fn an_edit_after_the_sign_off_is_reported_until_signed_off_again() {
    let repo = repo();
    repo.ctx(&["promote", "policies.refunds", "--by", "alice"])
        .assert_ok();
    repo.write(
        "context/policies/refunds.md",
        &HAND_CANONICAL.replace("30 days", "90 days"),
    );
    let r = validate(&repo);
    let found = unapproved(&r);
    assert_eq!(found.len(), 1, "{}", r.describe());
    let msg = found[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("changed since its `canonical` sign-off by human:alice"),
        "{msg}"
    );
    assert!(found[0]["remediation"]
        .as_str()
        .unwrap()
        .contains("ctx promote policies.refunds"));
    repo.ctx(&["validate", "--strict"]).assert_code(1);
    repo.ctx(&["promote", "policies.refunds", "--by", "bob"])
        .assert_ok();
    strict_clean(&repo);
}

#[test]
fn a_sign_off_for_another_authority_or_an_unreadable_record_is_no_sign_off() {
    let repo = repo();
    repo.write(
        ".ctx/signoffs/policies.refunds.json",
        r#"{"id":"policies.refunds","signoffs":[{"authority":"approved","digest":"sha256:00","by":"human:eve","at":"2026-01-01T00:00:00Z","via":"promote"}]}"#,
    );
    let found = unapproved(&validate(&repo));
    assert_eq!(found.len(), 1);
    assert!(found[0]["message"]
        .as_str()
        .unwrap()
        .contains("was signed off as `approved`"));

    repo.write(".ctx/signoffs/policies.refunds.json", "{not json");
    let found = unapproved(&validate(&repo));
    assert_eq!(found.len(), 1);
    assert!(found[0]["message"]
        .as_str()
        .unwrap()
        .contains("cannot be checked"));
    // The fix is the record's own hint, not a generic one.
    assert!(
        found[0]
            .to_string()
            .contains("delete it and run `ctx promote policies.refunds` again"),
        "{}",
        found[0]
    );

    // A record ctx cannot read is never overwritten by a new sign-off.
    repo.ctx(&["promote", "policies.refunds", "--by", "alice"])
        .assert_code(1)
        .assert_stderr_contains("not a sign-off record")
        .assert_stderr_contains("help: restore it from git");
}

#[test]
fn promote_signs_off_what_is_declared_and_never_edits_the_object() {
    let repo = repo();
    repo.ctx(&["promote", "policies.refunds", "--authority", "approved"])
        .assert_code(1)
        .assert_stderr_contains("declares authority `canonical`, not `approved`")
        .assert_stderr_contains("ctx supersede policies.refunds --authority approved --promote");
    repo.ctx(&["promote", "policies.shipping"])
        .assert_code(1)
        .assert_stderr_contains("only `canonical` and `approved` need a sign-off");
    repo.ctx(&["promote", "policies.nope"]).assert_code(3);
    assert!(!repo
        .path()
        .join(".ctx/signoffs/policies.refunds.json")
        .exists());
    let text = std::fs::read_to_string(repo.path().join("context/policies/refunds.md")).unwrap();
    assert_eq!(text, HAND_CANONICAL);
}

#[test]
fn supersede_carries_a_sign_off_that_still_holds_and_no_other() {
    let repo = repo();
    repo.ctx(&["promote", "policies.refunds", "--by", "alice"])
        .assert_ok();
    repo.ctx(&[
        "supersede",
        "policies.refunds",
        "--content",
        "Within 60 days.",
    ])
    .assert_ok()
    .assert_stdout_contains("canonical signed off by");
    strict_clean(&repo);

    // A hand edit of the signed-off version passes nothing on to its successor.
    let v2 = "context/policies/refunds.v2.md";
    let text = std::fs::read_to_string(repo.path().join(v2)).unwrap();
    repo.write(v2, &text.replace("60 days", "120 days"));
    repo.ctx(&[
        "supersede",
        "policies.refunds",
        "--content",
        "Within 45 days.",
    ])
    .assert_ok();
    let found = unapproved(&validate(&repo));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["file"], "context/policies/refunds.v3.md");
    // ...unless the writer signs off with --promote.
    repo.ctx(&["promote", "policies.refunds@3"]).assert_ok();
    strict_clean(&repo);
}

#[test]
fn an_authority_from_a_collection_default_is_flagged_at_the_object() {
    let manifest = "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies:\n    source: ./context/policies/**\n    authority: canonical\n\
roles:\n  support:\n    include: [policies.*]\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", manifest),
        ("context/policies/shipping.md", REFERENCE),
    ]);
    std::fs::create_dir_all(repo.path().join(".ctx/signoffs")).unwrap();
    let found = unapproved(&validate(&repo));
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0]["line"], 2,
        "the object's first line: {:#}",
        found[0]
    );
    assert!(found[0]["message"]
        .as_str()
        .unwrap()
        .contains("a default of its collection or the manifest gives it"));
    repo.ctx(&["promote", "policies.shipping"]).assert_ok();
    strict_clean(&repo);
}

#[test]
fn a_new_repository_passes_strict_with_its_starter_objects_signed_off() {
    let repo = Repo::new(&[]);
    repo.ctx(&["init", "--yes"])
        .assert_ok()
        .assert_stdout_contains(".ctx/signoffs/");
    strict_clean(&repo);
}

/// A repository that predates sign-offs is not flooded with warnings on upgrade:
/// `ctx promote --all` signs off what it holds, and from then on it keeps them.
#[test]
fn a_repository_that_predates_sign_offs_starts_keeping_them_with_promote_all() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", HAND_CANONICAL),
        ("context/policies/shipping.md", REFERENCE),
    ]);
    assert!(unapproved(&validate(&repo)).is_empty());
    strict_clean(&repo);
    repo.ctx(&["promote", "--all", "--by", "alice", "--dry-run"])
        .assert_ok()
        .assert_stdout_contains("would sign off policies.refunds as canonical");
    assert!(!repo.path().join(".ctx/signoffs").exists());
    repo.ctx(&["promote", "--all", "--by", "alice"])
        .assert_ok()
        .assert_stdout_contains("1 sign-off(s) recorded");
    strict_clean(&repo);
    // From now on a hand-written canonical authority is reported.
    repo.write(
        "context/policies/shipping.md",
        &REFERENCE.replace("owner: support\n", "owner: support\nauthority: approved\n"),
    );
    let found = unapproved(&validate(&repo));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["id"], "policies.shipping");
    // --all never re-signs an object edited since its sign-off.
    repo.write(
        "context/policies/refunds.md",
        &HAND_CANONICAL.replace("30 days", "31 days"),
    );
    repo.ctx(&["promote", "--all"]).assert_ok();
    let found = unapproved(&validate(&repo));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0]["message"]
        .as_str()
        .unwrap()
        .contains("changed since"));
}
