//! Every role and agent of the official example projects resolves without error.

use crate::support::{ctx, reference};

#[test]
fn every_role_and_agent_of_the_examples_resolves() {
    let Some(reference) = reference() else {
        eprintln!(
            "note: ../shared/reference/opencontext is absent; example resolution not checked"
        );
        return;
    };
    let mut checked = 0;
    for entry in std::fs::read_dir(reference.join("examples")).unwrap() {
        let original = entry.unwrap().path();
        if !original.join("opencontext.yaml").is_file() {
            continue;
        }
        // The reference folder is shared and read-only by intent: an example whose
        // manifest enables auditing would append to its log, so run on a copy.
        let copy = tempfile::tempdir().unwrap();
        let dir = copy.path().join(original.file_name().unwrap());
        copy_tree(&original, &dir);
        let manifest = dir.join("opencontext.yaml");
        let (m, _) = ctx_core::manifest::Manifest::load(&manifest).unwrap();
        let at = "2026-08-09T12:00:00Z";
        for role in m.roles.keys() {
            let r = ctx(
                &dir,
                &["resolve", "--role", role, "--task", "refund", "--at", at],
            );
            assert_eq!(r.code, 0, "{} role {role}: {}", dir.display(), r.stderr);
            assert!(r.json()["digest"].as_str().unwrap().starts_with("sha256:"));
            checked += 1;
        }
        for agent in m.agents.keys() {
            let r = ctx(
                &dir,
                &["resolve", "--agent", agent, "--explain", "--at", at],
            );
            assert_eq!(r.code, 0, "{} agent {agent}: {}", dir.display(), r.stderr);
            checked += 1;
        }
        let v = ctx(&dir, &["validate"]);
        assert_eq!(v.code, 0, "{}: {}", dir.display(), v.stdout);
    }
    assert!(checked >= 10, "only {checked} consumers checked");
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
