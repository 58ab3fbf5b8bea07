//! Consumer output refuses a broken repository: `resolve`, `bundle` and `export` do
//! not hand out objects that error-level findings concern (a detected secret, an id
//! that slips past an exclude) unless given `--allow-findings`, and then say so.

use crate::support::Repo;

const MANIFEST: &str = "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\n\
roles:\n  support:\n    include: [policies.*]\n    exclude: [policies.internal.*]\nagents:\n  helpdesk:\n    roles: [support]\n";

const REFUNDS: &str = "---\ntype: policy\nowner: support\n---\nRefunds within 30 days.\n";

/// A Stripe live key, spelt so that this source file does not look like one.
fn leaked() -> String {
    format!(
        "---\ntype: policy\nowner: support\n---\nCharge with {}_live_{}.\n",
        "sk", "4eC39HqLyjWDarjtT1zdp7dc"
    )
}

fn repo_with_secret() -> Repo {
    Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", REFUNDS),
        ("context/policies/billing.md", &leaked()),
    ])
}

#[test]
fn export_refuses_a_detected_secret_and_writes_nothing() {
    let repo = repo_with_secret();
    let r = repo.ctx(&["export", "--target", "agents-md", "--agent", "helpdesk"]);
    r.assert_code(1)
        .assert_stderr_contains("refusing to hand out this context")
        .assert_stderr_contains("context/policies/billing.md:5: secret-detected")
        .assert_stderr_contains("--allow-findings");
    assert!(!repo.path().join("AGENTS.md").exists());
    assert!(
        !r.stderr.contains("4eC39HqLyjWDarjtT1zdp7dc"),
        "{}",
        r.describe()
    );

    let r = repo.ctx(&[
        "export",
        "--target",
        "agents-md",
        "--agent",
        "helpdesk",
        "--allow-findings",
    ]);
    r.assert_ok()
        .assert_stderr_contains("despite 1 error-level finding(s)");
    assert!(repo.path().join("AGENTS.md").exists());
}

#[test]
fn resolve_and_bundle_refuse_unless_allowed() {
    let repo = repo_with_secret();
    for cmd in ["resolve", "bundle"] {
        let r = repo.ctx(&[cmd, "--role", "support"]);
        r.assert_code(1).assert_stderr_contains("secret-detected");
        assert!(r.stdout.is_empty(), "{}", r.describe());
        let r = repo.ctx(&[cmd, "--role", "support", "--allow-findings"]);
        r.assert_ok();
        assert!(r.json()["objects"].as_array().unwrap().len() == 2);
    }
}

#[test]
fn findings_about_objects_the_consumer_never_gets_do_not_block() {
    let hidden = leaked().replace(
        "type: policy",
        "type: policy\nid: policies.internal.billing",
    );
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", REFUNDS),
        ("context/policies/internal/billing.md", &hidden),
    ]);
    // validate still fails on the secret ...
    repo.ctx(&["validate"]).assert_code(1);
    // ... but support is never handed that object, so its context is served.
    let r = repo.ctx(&["resolve", "--role", "support"]);
    r.assert_ok();
    assert_eq!(r.json()["objects"].as_array().unwrap().len(), 1);
}

#[test]
fn an_id_that_escapes_its_folders_exclude_is_not_served() {
    let escaping = "---\nid: policies.discounts\ntype: policy\nowner: sales\n---\nUp to 30% off.\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", REFUNDS),
        ("context/policies/internal/discounts.md", escaping),
    ]);
    let r = repo.ctx(&["resolve", "--role", "support"]);
    r.assert_code(1)
        .assert_stderr_contains("invalid-permission policies.discounts");
    assert!(!r.stdout.contains("30% off"), "{}", r.describe());
}
