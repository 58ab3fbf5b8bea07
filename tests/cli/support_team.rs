//! Silent failures found by walking through issue 15's support-team setup from a
//! fresh machine (`ctx init --git --ci github`, a redacted customer field, an
//! age-encrypted HR collection), each now reported.

use serde_json::Value;

use crate::support::Repo;

/// `ctx init --ci github` gates CI on `ctx doctor --strict`, which fails only at
/// `health.fail_on` (default `error`): the lints for silent mistakes are warnings, so
/// a typo'd exclude pattern passed CI green. The new repository fails on warnings.
#[test]
fn the_ci_gate_of_a_new_repository_fails_on_a_pattern_that_matches_nothing() {
    let repo = Repo::new(&[]);
    repo.ctx(&["init", "--yes"]).assert_ok();
    repo.ctx(&["doctor", "--strict"]).assert_ok();
    let manifest = std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap();
    assert!(manifest.contains("fail_on: warning"), "{manifest}");
    repo.write(
        "opencontext.yaml",
        &manifest.replace(
            "exclude: [policies.internal.*]",
            "exclude: [policy.internal.*]",
        ),
    );
    repo.ctx(&["doctor", "--strict", "--format", "github"])
        .assert_code(1)
        .assert_stdout_contains("title=empty-scope");
}

const MANIFEST: &str = "opencontext: \"1.0\"\nid: acme\ncollections:\n  customers:\n    source: ./context/customers/**\n    type: customer\n    owner: am\n\
roles:\n  support:\n    include: [customers.*]\n    redact:\n      - path: contact.phone\n        mode: mask\n";

const ACME: &str = "id: customers.acme\ntitle: Acme\ncanonical_source: true\ncontent:\n  contact:\n    phone: \"+1 555 0100\"\n";

/// A role's rule redacts `contact.phone` in every structured customer; a customer
/// written as Markdown keeps its phone number in prose the rule cannot reach, and
/// was served unredacted without a word.
#[test]
fn a_prose_object_beside_the_structured_ones_a_role_rule_redacts_is_named() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/customers/acme.yaml", ACME),
        (
            "context/customers/initech.md",
            "---\ntitle: Initech\ncanonical_source: true\n---\nCall Bill on +1 555 0199.\n",
        ),
    ]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    r.assert_ok();
    let findings: Vec<Value> = r.json()["findings"].as_array().cloned().unwrap();
    let hits: Vec<&Value> = findings
        .iter()
        .filter(|f| f["id"] == "customers.initech")
        .collect();
    assert_eq!(hits.len(), 1, "{}", r.describe());
    let f = hits[0];
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["file"], "context/customers/initech.md");
    assert_eq!(f["field"], "content");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("role `support`'s rule `contact.phone`"),
        "{msg}"
    );
    assert!(msg.contains("served as written"), "{msg}");
    repo.ctx(&["validate", "--strict"]).assert_code(1);

    // Structured like its sibling, it is redacted and the finding is gone.
    std::fs::remove_file(repo.path().join("context/customers/initech.md")).unwrap();
    repo.write(
        "context/customers/initech.yaml",
        "title: Initech\ncanonical_source: true\ncontent:\n  contact:\n    phone: \"+1 555 0199\"\n",
    );
    repo.ctx(&["validate", "--strict"]).assert_ok();
}

/// Prose in a collection no rule has structured objects in is not second-guessed.
#[test]
fn prose_without_structured_siblings_is_not_reported() {
    let manifest = MANIFEST
        .replace("roles:", "  notes: ./context/notes/**\nroles:")
        .replace("include: [customers.*]", "include: [customers.*, notes.*]");
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest),
        ("context/customers/acme.yaml", ACME),
        (
            "context/notes/call.md",
            "---\ntype: note\nowner: am\ncanonical_source: true\n---\nCalled Acme.\n",
        ),
    ]);
    repo.ctx(&["validate", "--strict"]).assert_ok();
}
