//! `ctx diff --rev A..B --access`: what a change lets each role and agent see, on
//! real git histories — role, pattern, redaction, ceiling and object changes.

use crate::support::git::{commit_all, have_git, init_git};
use crate::support::Repo;

const MANIFEST: &str = r#"opencontext: "1.0"
id: support-team
name: Support team
collections:
  policies: ./context/policies/**
  customers: ./context/customers/**
roles:
  support:
    include: [policies.*, customers.*]
    exclude: [policies.internal.*]
  leads:
    include: ["*"]
    max_classification: confidential
agents:
  helpdesk:
    roles: [support]
"#;

const REFUNDS: &str =
    "---\nid: policies.refunds\ntype: policy\nowner: support\n---\n\nRefunds within 30 days.\n";
const DISCOUNTS: &str = "---\nid: policies.internal.discounts\ntype: policy\nowner: sales\n---\n\nUp to 40% for renewals.\n";
const ACME: &str = "id: customers.acme\ntype: customer\nowner: support\ncontent:\n  name: Acme\n  contact:\n    email: ops@acme.test\n    phone: \"+1 555 0100\"\n";
const SECRET_PLAN: &str = "---\nid: policies.plan\ntype: plan\nowner: leads\nclassification: confidential\n---\n\nThe confidential plan.\n";

/// A repository with one commit of the base state.
fn history() -> Option<Repo> {
    if !have_git() {
        return None;
    }
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", REFUNDS),
        ("context/policies/internal/discounts.md", DISCOUNTS),
        ("context/policies/plan.md", SECRET_PLAN),
        ("context/customers/acme.yaml", ACME),
    ]);
    init_git(repo.path(), "Base");
    Some(repo)
}

fn access(repo: &Repo, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["diff", "--rev", "HEAD~1..HEAD", "--access"];
    args.extend_from_slice(extra);
    repo.ctx(&args)
}

fn consumer<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no consumer {name} in {doc:#}"))
}

#[test]
fn pattern_change_reveals_an_excluded_object_to_the_role_and_its_agent() {
    let Some(repo) = history() else { return };
    repo.write(
        "opencontext.yaml",
        &MANIFEST.replace("    exclude: [policies.internal.*]\n", ""),
    );
    commit_all(repo.path(), "Drop the internal exclusion");
    let r = access(&repo, &[]);
    r.assert_ok();
    insta::assert_snapshot!("access_diff_pattern_change", r.transcript());
    let doc = access(&repo, &["--format", "json"]).json();
    for name in ["support", "helpdesk"] {
        let c = consumer(&doc, name);
        assert_eq!(c["changed"], true);
        assert_eq!(c["visible"][0]["id"], "policies.internal.discounts");
        assert_eq!(c["visible"][0]["before"]["reason"], "scope-exclusion");
        assert_eq!(c["visible"][0]["before"]["pattern"], "policies.internal.*");
        assert_eq!(c["visible"][0]["before"]["declared_by"][0], "support");
        assert_eq!(c["visible"][0]["after"]["matched"], "policies.*");
        assert_eq!(c["policy"]["exclude"]["removed"][0], "policies.internal.*");
    }
    assert_eq!(consumer(&doc, "leads")["changed"], false);
    // --exit-code: differences exit 1.
    assert_eq!(access(&repo, &["--exit-code"]).code, 1);
    // A revision against the work tree: an uncommitted classification change.
    repo.write(
        "context/policies/refunds.md",
        &REFUNDS.replace(
            "owner: support\n",
            "owner: support\nclassification: confidential\n",
        ),
    );
    let r = repo.ctx(&["diff", "--rev", "HEAD", "--access", "--role", "support"]);
    r.assert_ok();
    assert!(r.stdout.contains(".. work tree"), "{}", r.stdout);
    assert!(
        r.stdout.contains("- policies.refunds  hidden  (was: in scope via `policies.*`; now: classification-denied"),
        "{}",
        r.stdout
    );
}

#[test]
fn role_changes_new_roles_and_agents_that_change_roles() {
    let Some(repo) = history() else { return };
    let changed = MANIFEST
        .replace(
            "agents:\n  helpdesk:\n    roles: [support]\n",
            "  billing:\n    include: [customers.*]\nagents:\n  helpdesk:\n    roles: [support, leads]\n",
        );
    repo.write("opencontext.yaml", &changed);
    commit_all(repo.path(), "Billing role; helpdesk also leads");
    let doc = access(&repo, &["--format", "json"]).json();
    let billing = consumer(&doc, "billing");
    assert_eq!(billing["before"]["state"], "absent");
    assert_eq!(billing["after"]["state"], "active");
    assert_eq!(billing["visible"][0]["id"], "customers.acme");
    assert_eq!(billing["visible"][0]["before"]["reason"], "unserved");
    let helpdesk = consumer(&doc, "helpdesk");
    assert_eq!(helpdesk["policy"]["roles"]["added"][0], "leads");
    let seen: Vec<&str> = helpdesk["visible"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    // leads' include covers the internal policies, but support's exclude still applies
    // to the agent (exclusions are the union over its roles); the confidential plan
    // stays above the lowest ceiling of the two roles (internal).
    assert_eq!(seen, Vec::<&str>::new(), "{helpdesk:#}");
    assert_eq!(helpdesk["policy"]["include"]["added"][0], "*");
    // A role removed in the later commit loses everything it saw.
    let back = repo.ctx(&[
        "diff",
        "--rev",
        "HEAD..HEAD~1",
        "--access",
        "--format",
        "json",
    ]);
    let billing = consumer(&back.json(), "billing").clone();
    assert_eq!(billing["after"]["state"], "absent");
    assert_eq!(billing["invisible"][0]["after"]["reason"], "unserved");
}

#[test]
fn redaction_changes_name_field_paths_and_never_values() {
    let Some(repo) = history() else { return };
    repo.write(
        "opencontext.yaml",
        &MANIFEST.replace(
            "    exclude: [policies.internal.*]\n",
            "    exclude: [policies.internal.*]\n    redact:\n      - path: contact.email\n        mode: mask\n      - path: contact.fax\n",
        ),
    );
    commit_all(repo.path(), "Mask customer emails for support");
    let r = access(&repo, &[]);
    r.assert_ok();
    assert!(
        r.stdout
            .contains("~ customers.acme  `contact.email` newly redacted (mask)"),
        "{}",
        r.describe()
    );
    assert!(
        r.stdout.contains("redact + contact.email (mask)"),
        "{}",
        r.stdout
    );
    // A rule that matches no field of the object is a policy change, not a redacted field.
    assert!(!r.stdout.contains("`contact.fax` newly"), "{}", r.stdout);
    for out in [
        r.stdout.clone(),
        access(&repo, &["--format", "json"]).stdout,
        access(&repo, &["--format", "github"]).stdout,
    ] {
        assert!(!out.contains("ops@acme.test"), "a value leaked:\n{out}");
        assert!(!out.contains("555 0100"), "a value leaked:\n{out}");
    }
    // Reverting it unredacts the field.
    let back = repo.ctx(&[
        "diff",
        "--rev",
        "HEAD..HEAD~1",
        "--access",
        "--role",
        "support",
    ]);
    back.assert_ok();
    assert!(
        back.stdout
            .contains("`contact.email` no longer redacted (was mask)"),
        "{}",
        back.stdout
    );
    assert!(
        !back.stdout.contains("agent helpdesk"),
        "--role filters: {}",
        back.stdout
    );
}

#[test]
fn ceiling_changes_show_the_level_its_source_and_what_it_hides() {
    let Some(repo) = history() else { return };
    repo.write(
        "opencontext.yaml",
        &MANIFEST.replace("    max_classification: confidential\n", ""),
    );
    commit_all(repo.path(), "Leads back to the default ceiling");
    let doc = access(&repo, &["--format", "json"]).json();
    let leads = consumer(&doc, "leads");
    assert_eq!(leads["ceiling_changed"], true);
    assert_eq!(leads["before"]["ceiling"]["level"], "confidential");
    assert_eq!(
        leads["before"]["ceiling"]["source"],
        "roles.leads.max_classification"
    );
    assert_eq!(leads["after"]["ceiling"]["level"], "internal");
    assert!(
        leads["after"]["ceiling"]["source"]
            .as_str()
            .unwrap()
            .starts_with("the default"),
        "{leads:#}"
    );
    let hidden = &leads["invisible"][0];
    assert_eq!(hidden["id"], "policies.plan");
    assert_eq!(hidden["after"]["reason"], "classification-denied");
    assert_eq!(hidden["after"]["classification"], "confidential");
    assert_eq!(hidden["after"]["ceiling"]["level"], "internal");
    let text = access(&repo, &[]).stdout;
    assert!(text.contains("ceiling: confidential → internal"), "{text}");
}

#[test]
fn object_classification_change_hides_it_from_roles_below_the_new_level() {
    let Some(repo) = history() else { return };
    repo.write(
        "context/policies/refunds.md",
        &REFUNDS.replace(
            "owner: support\n",
            "owner: support\nclassification: restricted\n",
        ),
    );
    commit_all(repo.path(), "Refunds become restricted");
    let doc = access(&repo, &["--format", "json"]).json();
    for name in ["support", "helpdesk", "leads"] {
        let c = consumer(&doc, name);
        assert_eq!(c["invisible"][0]["id"], "policies.refunds", "{name}: {c:#}");
        assert_eq!(c["invisible"][0]["before"]["reason"], "visible");
        assert_eq!(
            c["invisible"][0]["after"]["reason"],
            "classification-denied"
        );
        assert_eq!(c["invisible"][0]["after"]["classification"], "restricted");
    }
    // The pull-request comment: a table, then a section per consumer.
    let gh = access(&repo, &["--format", "github"]);
    gh.assert_ok();
    insta::assert_snapshot!("access_diff_github", gh.transcript());
}

#[test]
fn nothing_changed_and_usage_errors() {
    let Some(repo) = history() else { return };
    repo.write(
        "context/policies/refunds.md",
        &REFUNDS.replace("30 days", "45 days"),
    );
    commit_all(repo.path(), "Content only");
    let r = access(&repo, &["--exit-code"]);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(
        r.stdout
            .contains("No access changes for any role or agent."),
        "{}",
        r.stdout
    );
    // --format github belongs to --access; --access needs --rev; unknown consumers are named.
    assert_eq!(
        repo.ctx(&["diff", "--rev", "HEAD~1..HEAD", "--format", "github"])
            .code,
        2
    );
    assert_eq!(repo.ctx(&["diff", "--access"]).code, 2);
    let r = access(&repo, &["--role", "ghost"]);
    assert_eq!(r.code, 2, "{}", r.describe());
    assert!(r.stderr.contains("ghost"), "{}", r.stderr);
}

#[test]
fn a_broken_policy_at_the_later_revision_refuses_every_consumer() {
    let Some(repo) = history() else { return };
    repo.write(
        "opencontext.yaml",
        &MANIFEST.replace(
            "    max_classification: confidential\n",
            "    max_classification: Secret\n",
        ),
    );
    commit_all(repo.path(), "Typo in a ceiling");
    let doc = access(&repo, &["--format", "json"]).json();
    let support = consumer(&doc, "support");
    assert_eq!(support["after"]["state"], "refused");
    assert!(support["invisible"]
        .as_array()
        .unwrap()
        .iter()
        .all(|v| v["after"]["reason"] == "unserved"));
}
