//! `ctx init`: a new repository is strictly valid and scoped per role.

use crate::support::ctx;

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
