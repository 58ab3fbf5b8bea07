//! Silent failures found by walking through issue 15's support-team setup from a
//! fresh machine (`ctx init --git --ci github`, a redacted customer field, an
//! age-encrypted HR collection), each now reported. (The hand-written canonical
//! authority has its own file, `promote.rs`.)

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
