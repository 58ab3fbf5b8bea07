//! Lints for mistakes that leave a repository valid while changing what a consumer
//! sees: each is a finding with a code, a file and line and, where a close name
//! exists, a did-you-mean; `validate` and `doctor` report it and `--strict` fails.

use serde_json::Value;

use crate::support::git::{git, have_git};
use crate::support::{Repo, Run};

fn findings(r: &Run) -> Vec<Value> {
    r.json()["findings"].as_array().cloned().unwrap_or_default()
}

/// The one finding with `code` whose message contains `needle`.
#[track_caller]
fn finding(r: &Run, code: &str, needle: &str) -> Value {
    let all = findings(r);
    let hits: Vec<&Value> = all
        .iter()
        .filter(|f| f["code"] == code && f["message"].as_str().unwrap().contains(needle))
        .collect();
    assert_eq!(hits.len(), 1, "{code} / {needle}:\n{}", r.describe());
    hits[0].clone()
}

#[track_caller]
fn none(r: &Run, code: &str) {
    assert!(
        !findings(r).iter().any(|f| f["code"] == code),
        "unexpected {code}:\n{}",
        r.describe()
    );
}

fn validate(repo: &Repo) -> Run {
    repo.ctx(&["validate", "--format", "json"])
}

const POLICY: &str = "---\ntype: policy\nowner: support\n---\nText.\n";

#[test]
fn an_exclude_that_matches_no_object_is_an_error_naming_the_pattern_it_meant() {
    let manifest =
        "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\n\
roles:\n  support:\n    include: [policies.*]\n    exclude: [policy.internal.*]\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", manifest),
        ("context/policies/refunds.md", POLICY),
        ("context/policies/internal/discounts.md", POLICY),
    ]);
    let r = validate(&repo);
    r.assert_code(1);
    let f = finding(&r, "empty-scope", "`policy.internal.*`");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["file"], "opencontext.yaml");
    assert_eq!(f["line"], 8, "{f:#}");
    assert_eq!(f["field"], "roles.support.exclude[0]");
    assert!(
        f["remediation"]
            .as_str()
            .unwrap()
            .starts_with("did you mean `policies.internal.*`?"),
        "{f:#}"
    );
    // In every mode: the default pre-commit hook (`validate --staged`, no --strict)
    // blocks the commit, and doctor reports it.
    if have_git() {
        git(repo.path(), &["init", "-q", "-b", "main"]);
        git(repo.path(), &["add", "-A"]);
        repo.ctx(&["validate", "--staged"]).assert_code(1);
    }
    let d = repo.ctx(&["doctor", "--format", "json"]);
    finding(&d, "empty-scope", "`policy.internal.*`");
}

#[test]
fn an_exclude_with_no_near_match_is_an_error_unless_reserved_for_ids_to_come() {
    let manifest = |ext: &str| {
        format!(
            "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\n\
roles:\n  support:\n    include: [policies.*]\n    exclude: [hr.*]\n{ext}"
        )
    };
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest("")),
        ("context/policies/refunds.md", POLICY),
    ]);
    let r = validate(&repo);
    r.assert_code(1);
    let f = finding(&r, "empty-scope", "`hr.*`");
    assert!(
        f["remediation"]
            .as_str()
            .unwrap()
            .contains("roles.support.extensions.ctx.scope.reserved_exclude"),
        "{f:#}"
    );
    // Reserved deliberately: quiet, and strict passes.
    repo.write(
        "opencontext.yaml",
        &manifest("    extensions:\n      ctx.scope:\n        reserved_exclude: [hr.*]\n"),
    );
    let r = validate(&repo);
    r.assert_ok();
    none(&r, "empty-scope");
    repo.ctx(&["validate", "--strict"]).assert_ok();
    // A reservation of a pattern the role does not exclude hides nothing: an error.
    repo.write(
        "opencontext.yaml",
        &manifest("    extensions:\n      ctx.scope:\n        reserved_exclude: [hr.**]\n"),
    );
    let r = validate(&repo);
    r.assert_code(1);
    let f = finding(&r, "manifest-invalid", "reserved_exclude[0]");
    assert_eq!(f["actual"], "hr.**", "{f:#}");
    finding(&r, "empty-scope", "`hr.*`");
}

#[test]
fn an_include_that_matches_no_object_is_a_warning() {
    let manifest =
        "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\n\
roles:\n  support:\n    include: [policies.*, policy.internal.*]\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", manifest),
        ("context/policies/refunds.md", POLICY),
        ("context/policies/internal/discounts.md", POLICY),
    ]);
    let r = validate(&repo);
    r.assert_ok();
    let f = finding(&r, "empty-scope", "`policy.internal.*`");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["field"], "roles.support.include[1]");
    repo.ctx(&["validate", "--strict"]).assert_code(1);
}

const CUSTOMERS: &str = "opencontext: \"1.0\"\nid: acme\ncollections:\n  customers: ./context/customers/**\n\
roles:\n  support:\n    include: [customers.*]\n    redact:\n      - path: contacts[*].emial\n        mode: mask\n";

const ACME: &str = "id: customers.acme\ntype: customer\nowner: support\ncontent:\n  name: Acme\n  contacts:\n    - name: Ada\n      email: ada@acme.test\n";

#[test]
fn a_redaction_path_that_names_no_field_suggests_the_field() {
    let repo = Repo::new(&[
        ("opencontext.yaml", CUSTOMERS),
        ("context/customers/acme.yaml", ACME),
    ]);
    let r = validate(&repo);
    let f = finding(&r, "manifest-invalid", "`contacts[*].emial`");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["line"], 9, "{f:#}");
    assert_eq!(f["field"], "roles.support.redact[0].path");
    assert!(
        f["remediation"]
            .as_str()
            .unwrap()
            .contains("did you mean `contacts[*].email`?"),
        "{f:#}"
    );
    repo.ctx(&["validate", "--strict"]).assert_code(1);
    // The correct path is quiet.
    repo.write("opencontext.yaml", &CUSTOMERS.replace("emial", "email"));
    let r = validate(&repo);
    assert!(
        findings(&r).iter().all(|f| f["code"] != "manifest-invalid"),
        "{}",
        r.describe()
    );
}

#[test]
fn redaction_rules_on_prose_can_never_apply() {
    let prose =
        "---\ntype: customer\nowner: support\nredact:\n  - path: email\n---\nAda, ada@acme.test\n";
    let repo = Repo::new(&[
        (
            "opencontext.yaml",
            CUSTOMERS.replace("emial", "email").as_str(),
        ),
        ("context/customers/acme.yaml", ACME),
        ("context/customers/globex.md", prose),
    ]);
    let r = validate(&repo);
    let f = finding(&r, "schema-invalid", "prose");
    assert_eq!(f["file"], "context/customers/globex.md");
    assert_eq!(f["line"], 2, "{f:#}");
    assert_eq!(f["field"], "redact");
    repo.ctx(&["validate", "--strict"]).assert_code(1);
}

const SUPPORT_POLICIES: &str =
    "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\n\
roles:\n  support:\n    include: [policies.*]\n    exclude: [policies.internal.*]\n";

#[test]
fn a_declared_id_that_escapes_its_folders_exclude_is_an_error() {
    let escaping = "---\nid: policies.discounts\ntype: policy\nowner: sales\n---\nUp to 30% off.\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", SUPPORT_POLICIES),
        ("context/policies/refunds.md", POLICY),
        ("context/policies/internal/discounts.md", escaping),
    ]);
    let r = validate(&repo);
    r.assert_code(1);
    let f = finding(&r, "invalid-permission", "`policies.discounts`");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["file"], "context/policies/internal/discounts.md");
    assert_eq!(f["line"], 2);
    assert_eq!(f["expected"], "policies.internal.discounts");
    assert!(
        f["message"].as_str().unwrap().contains("`support`"),
        "{f:#}"
    );
}

#[test]
fn a_declared_id_that_differs_from_its_path_is_a_warning() {
    let renamed = "---\nid: policies.refund-policy\ntype: policy\nowner: support\n---\nText.\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", SUPPORT_POLICIES),
        ("context/policies/refunds.md", renamed),
        ("context/policies/internal/discounts.md", POLICY),
    ]);
    let r = validate(&repo);
    r.assert_ok();
    let f = finding(&r, "schema-invalid", "`policies.refund-policy`");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["expected"], "policies.refunds");
    repo.ctx(&["validate", "--strict"]).assert_code(1);
}

#[test]
fn files_no_entry_loads_are_reported_and_collections_can_exclude_them() {
    let manifest = "opencontext: \"1.0\"\nid: acme\ncontext:\n  mission: ./context/mission.md\n\
collections:\n  customers: ./context/customers/*.yaml\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", manifest),
        (
            "context/mission.md",
            "---\ntype: document\nowner: founders\n---\n# Mission\n",
        ),
        (
            "context/notes.md",
            "---\ntype: document\nowner: founders\n---\n# Notes\n",
        ),
        (
            "context/customers/globex.yaml",
            "type: customer\nowner: support\n",
        ),
        ("context/customers/acme.md", POLICY),
        ("context/customers/README.md", "# About this folder\n"),
    ]);
    let r = validate(&repo);
    r.assert_ok();
    let f = finding(&r, "orphaned", "`context/customers/acme.md`");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["file"], "context/customers/acme.md");
    assert!(f["message"]
        .as_str()
        .unwrap()
        .contains("collection `customers`"));
    finding(&r, "orphaned", "`context/notes.md`");
    finding(&r, "orphaned", "`context/customers/README.md`");
    repo.ctx(&["validate", "--strict"]).assert_code(1);

    // A README beside objects, kept out by the collection's exclude glob (a ctx
    // extension, so the manifest stays valid OpenContext).
    let globbed = "opencontext: \"1.0\"\nid: acme\ncontext:\n  mission: ./context/mission.md\n  notes: ./context/notes.md\n\
collections:\n  customers: ./context/customers/**\nextensions:\n  ctx.collections:\n    customers:\n      exclude: [README.md]\n";
    repo.write("opencontext.yaml", globbed);
    let r = repo.ctx(&["validate", "--strict", "--format", "json"]);
    r.assert_ok();
    none(&r, "orphaned");
    none(&r, "unknown-extension");
    let listed = repo.ctx(&["list", "--format", "json"]);
    listed.assert_ok();
    assert!(
        !listed.stdout.contains("\"customers\""),
        "{}",
        listed.describe()
    );
    assert!(
        listed.stdout.contains("customers.acme"),
        "{}",
        listed.describe()
    );

    // A misspelt setting is named.
    repo.write("opencontext.yaml", &globbed.replace("exclude:", "exlude:"));
    let r = validate(&repo);
    let f = finding(&r, "manifest-invalid", "unknown key `exlude`");
    assert!(f["remediation"]
        .as_str()
        .unwrap()
        .starts_with("did you mean `exclude`?"));
}

#[test]
fn an_unknown_field_close_to_a_known_one_comes_before_its_consequences() {
    let manifest =
        "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\n";
    let typo = "---\ntype: policy\nownr: support\n---\nText.\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", manifest),
        ("context/policies/refunds.md", typo),
    ]);
    let r = validate(&repo);
    r.assert_code(1);
    let all = findings(&r);
    let unknown = all
        .iter()
        .position(|f| {
            f["code"] == "schema-invalid" && f["message"].as_str().unwrap().contains("`ownr`")
        })
        .unwrap_or_else(|| panic!("{}", r.describe()));
    let missing = all
        .iter()
        .position(|f| f["code"] == "missing-owner")
        .unwrap_or_else(|| panic!("{}", r.describe()));
    assert!(unknown < missing, "{}", r.describe());
    let f = &all[unknown];
    assert_eq!(f["line"], 3);
    assert!(
        f["remediation"]
            .as_str()
            .unwrap()
            .starts_with("did you mean `owner`?"),
        "{f:#}"
    );
    // People see it too.
    repo.ctx(&["validate"])
        .assert_code(1)
        .assert_stdout_contains("did you mean `owner`?");
}

#[test]
fn a_collection_rooted_at_the_repository_does_not_report_every_markdown_file() {
    let manifest = "opencontext: \"1.0\"\nid: acme\ncollections:\n  notes: ./note-*.yaml\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", manifest),
        ("note-welcome.yaml", "type: note\nowner: support\n"),
        ("README.md", "# Project\n"),
        ("docs/guide.md", "# Guide\n"),
    ]);
    let r = validate(&repo);
    r.assert_ok();
    none(&r, "orphaned");
}
