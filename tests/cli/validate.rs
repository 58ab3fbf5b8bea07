//! Core: discovery, validate, schema, init, version, exit codes.

use crate::support::{ctx, Repo, MANIFEST, MISSION};

#[test]
fn validate_clean_repository_exits_zero() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
    ]);
    let r = repo.ctx(&["validate"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("✓ valid"), "{}", r.stdout);
}

#[test]
fn missing_manifest_exits_three_with_help() {
    let dir = tempfile::tempdir().unwrap();
    let r = ctx(dir.path(), &["validate"]);
    assert_eq!(r.code, 3);
    assert!(r.stderr.contains("no opencontext.yaml"), "{}", r.stderr);
    assert!(r.stderr.contains("ctx init"), "{}", r.stderr);
}

#[test]
fn init_creates_a_strictly_valid_repository_with_two_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let r = ctx(
        dir.path(),
        &[
            "init", "demo", "--yes", "--id", "demo-co", "--name", "Demo Co",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let repo = dir.path().join("demo");
    let v = ctx(&repo, &["validate", "--strict"]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    // Two roles with different scopes: support cannot see internal policies, leads can.
    let support = ctx(&repo, &["list", "--role", "support", "--format", "json"]).json();
    let leads = ctx(&repo, &["list", "--role", "leads", "--format", "json"]).json();
    let ids = |v: &serde_json::Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(!ids(&support).contains(&"policies.internal.escalation".to_string()));
    assert!(ids(&leads).contains(&"policies.internal.escalation".to_string()));
    // Existing files are kept unless --force.
    std::fs::write(repo.join("context/mission.md"), "mine").unwrap();
    let again = ctx(dir.path(), &["init", "demo", "--yes"]);
    assert!(again.stdout.contains("kept"), "{}", again.stdout);
    assert_eq!(
        std::fs::read_to_string(repo.join("context/mission.md")).unwrap(),
        "mine"
    );
}

#[test]
fn version_names_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let r = ctx(dir.path(), &["version"]);
    assert_eq!(r.code, 0);
    assert!(
        r.stdout.contains("OpenContext specification 1.0"),
        "{}",
        r.stdout
    );
}

#[test]
fn schema_lists_and_prints_embedded_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let list = ctx(dir.path(), &["schema"]);
    for kind in [
        "manifest",
        "object",
        "role",
        "provenance",
        "decision",
        "diagnostic",
        "bundle",
        "audit-event",
    ] {
        assert!(list.stdout.contains(kind), "{}", list.stdout);
    }
    let one = ctx(dir.path(), &["schema", "object"]);
    assert_eq!(one.code, 0);
    assert!(one.json().is_object());
    assert_eq!(ctx(dir.path(), &["schema", "nope"]).code, 3);
}

#[test]
fn findings_in_every_format_name_file_line_and_fix() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
        (
            "context/policies/a.md",
            "---\nid: policies.a\ntype: policy\nowner: x\nreferences: [policies.zzz]\n---\nA\n",
        ),
    ]);
    let human = repo.ctx(&["validate"]);
    assert_eq!(human.code, 1);
    for needle in [
        "broken-reference",
        "context/policies/a.md",
        "policies.zzz",
        "fix:",
    ] {
        assert!(
            human.stdout.contains(needle),
            "{needle} missing:\n{}",
            human.stdout
        );
    }
    let json = repo.ctx(&["validate", "--format", "json"]).json();
    assert_eq!(json["ok"], false);
    let f = &json["findings"][0];
    assert_eq!(f["code"], "broken-reference");
    assert_eq!(f["file"], "context/policies/a.md");
    assert!(f["line"].as_u64().is_some() && f["remediation"].is_string());
    let sarif = repo.ctx(&["validate", "--format", "sarif"]).json();
    assert_eq!(sarif["runs"][0]["results"][0]["ruleId"], "broken-reference");
    let gh = repo.ctx(&["validate", "--format", "github"]);
    assert!(
        gh.stdout
            .starts_with("::error title=broken-reference,file=context/policies/a.md,line="),
        "{}",
        gh.stdout
    );
}

#[test]
fn discovery_walks_up_and_dash_c_accepts_a_manifest_path() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
    ]);
    std::fs::create_dir_all(repo.path().join("deep/er")).unwrap();
    assert_eq!(ctx(&repo.path().join("deep/er"), &["validate"]).code, 0);
    let elsewhere = tempfile::tempdir().unwrap();
    let manifest = repo.path().join("opencontext.yaml");
    assert_eq!(
        ctx(
            elsewhere.path(),
            &["-C", manifest.to_str().unwrap(), "validate"]
        )
        .code,
        0
    );
    // Two manifest files side by side: a warning names the ignored one.
    repo.write(
        "opencontext.json",
        "{\"opencontext\": \"1.0\", \"id\": \"other\"}",
    );
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert!(
        r.stdout.contains("opencontext.json is ignored"),
        "{}",
        r.stdout
    );
}

#[test]
fn role_graph_errors_are_reported() {
    let manifest = "opencontext: \"1.0\"\nid: acme\nroles:\n  a:\n    include: [x]\n    inherits: [b]\n  b:\n    include: [y]\n    inherits: [a]\n  c:\n    include: [\"pol*\"]\n    inherits: [ghost]\nagents:\n  bot:\n    roles: [nobody]\nauthority:\n  precedence: [canonical, approved]\n";
    let repo = Repo::new(&[("opencontext.yaml", manifest)]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert_eq!(r.code, 1);
    let codes: Vec<String> = r.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect();
    for c in [
        "role-cycle",
        "unknown-role",
        "invalid-permission",
        "manifest-invalid",
    ] {
        assert!(codes.contains(&c.to_string()), "{c} missing from {codes:?}");
    }
}
