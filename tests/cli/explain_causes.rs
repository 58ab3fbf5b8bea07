//! `ctx resolve --explain`: every denial names its cause — the exclude pattern (and
//! the role declaring it), or the classification against the consumer's ceiling and
//! where that ceiling comes from. Out-of-scope objects are counted, and listed (ids
//! only) with `--show-out-of-scope`.

use crate::support::Repo;

const MANIFEST: &str = r#"opencontext: "1.0"
id: acme
name: ACME
collections:
  policies: ./context/policies/**
  hr: ./context/hr/**
roles:
  everyone:
    include: [policies.refunds]
  support:
    inherits: [everyone]
    include: [policies.*]
    exclude: [policies.internal.*]
  seniors:
    inherits: [support]
  leads:
    include: ["*"]
    max_classification: confidential
  juniors:
    inherits: [leads]
agents:
  helpdesk:
    roles: [support]
"#;

fn repo() -> Repo {
    let obj = |id: &str, extra: &str| {
        format!("---\nid: {id}\ntype: policy\nowner: support\n{extra}---\n\nThe text of {id}.\n")
    };
    Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", &obj("policies.refunds", "")),
        (
            "context/policies/internal/discounts.md",
            &obj("policies.internal.discounts", ""),
        ),
        (
            "context/policies/plan.md",
            &obj("policies.plan", "classification: confidential\n"),
        ),
        (
            "context/policies/vault.md",
            &obj("policies.vault", "classification: restricted\n"),
        ),
        ("context/hr/salaries.md", &obj("hr.salaries", "")),
        ("context/hr/reviews.md", &obj("hr.reviews", "")),
    ])
}

#[test]
fn exclusions_name_the_pattern_and_the_role_declaring_it() {
    let repo = repo();
    let r = repo.ctx(&["resolve", "--agent", "helpdesk", "--explain"]);
    r.assert_ok();
    assert!(
        r.stdout.contains(
            "  - policies.internal.discounts  scope-exclusion\n      excluded by `policies.internal.*` (roles.support.exclude)\n"
        ),
        "{}",
        r.stdout
    );
    // The cause travels with the record in the data form too.
    let doc = repo
        .ctx(&[
            "resolve",
            "--agent",
            "helpdesk",
            "--explain",
            "--format",
            "json",
        ])
        .json();
    let e = doc["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "policies.internal.discounts")
        .unwrap();
    assert_eq!(e["reason"], "scope-exclusion");
    assert_eq!(e["cause"]["pattern"], "policies.internal.*");
    assert_eq!(e["cause"]["declared_by"][0], "support");
    // The bundle itself is unchanged: records there carry only ids and reasons.
    let bundle = repo.ctx(&["resolve", "--agent", "helpdesk"]).json();
    let e = bundle["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "policies.internal.discounts")
        .unwrap();
    assert!(e.get("cause").is_none(), "{e:#}");
}

#[test]
fn classification_denials_show_level_ceiling_and_its_source() {
    let repo = repo();
    // The default ceiling, reached through inheritance.
    let r = repo.ctx(&["resolve", "--role", "seniors", "--explain"]);
    r.assert_ok();
    assert!(
        r.stdout.contains("classification ceiling internal, set by the default `internal` (role `seniors` sets no max_classification, nor does any role it inherits: support, everyone)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("  - policies.plan  classification-denied\n      classification `confidential` is above the ceiling `internal`, set by the default"),
        "{}",
        r.stdout
    );
    // A declared ceiling, inherited.
    let r = repo.ctx(&["resolve", "--role", "juniors", "--explain"]);
    r.assert_ok();
    assert!(
        r.stdout.contains("  - policies.vault  classification-denied\n      classification `restricted` is above the ceiling `confidential`, set by roles.leads.max_classification (inherited: juniors → leads)\n"),
        "{}",
        r.stdout
    );
    let doc = repo
        .ctx(&[
            "resolve",
            "--role",
            "juniors",
            "--explain",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(
        doc["ceiling_source"],
        "roles.leads.max_classification (inherited: juniors → leads)"
    );
    let e = doc["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "policies.vault")
        .unwrap();
    assert_eq!(e["cause"]["classification"], "restricted");
    assert_eq!(e["cause"]["ceiling"]["level"], "confidential");
}

#[test]
fn out_of_scope_objects_are_counted_and_listed_only_when_asked() {
    let repo = repo();
    let r = repo.ctx(&["resolve", "--role", "support", "--explain"]);
    r.assert_ok();
    assert!(
        r.stdout
            .contains("Out of scope: 2 of 6 objects (not listed"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("hr.salaries"), "{}", r.stdout);
    let r = repo.ctx(&[
        "resolve",
        "--role",
        "support",
        "--explain",
        "--show-out-of-scope",
    ]);
    r.assert_ok();
    assert!(
        r.stdout.contains("Out of scope: 2 of 6 objects (the consumer's roles or --include do not cover them):\n  - hr.reviews\n  - hr.salaries\n"),
        "{}",
        r.stdout
    );
    // Ids only: nothing of their content.
    assert!(!r.stdout.contains("The text of hr."), "{}", r.stdout);
    let doc = repo
        .ctx(&[
            "resolve",
            "--role",
            "support",
            "--explain",
            "--show-out-of-scope",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(
        doc["out_of_scope"],
        serde_json::json!(["hr.reviews", "hr.salaries"])
    );
    // --show-out-of-scope is part of an explanation.
    assert_eq!(
        repo.ctx(&["resolve", "--role", "support", "--show-out-of-scope"])
            .code,
        2
    );
}
