//! `ctx keys declare ID`: trust a key made without `--declare`, later.

use crate::support::ctx_in;
use crate::support::fixtures::healthy;

#[test]
fn a_key_made_without_declare_can_be_declared_later() {
    let repo = healthy();
    let made = ctx_in(&repo)
        .args(["keys", "generate", "--id", "bot"])
        .run();
    made.assert_ok();
    let public = made.stdout.trim().to_string();
    let r = ctx_in(&repo).args(["keys", "declare", "bot"]).run();
    r.assert_ok();
    assert_eq!(r.stdout.trim(), public);
    r.assert_stderr_contains("declared `bot`");
    let manifest = std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap();
    assert!(manifest.contains(&public), "{manifest}");
    assert_eq!(repo.ctx(&["validate", "--strict"]).code, 0);
    let again = ctx_in(&repo).args(["keys", "declare", "bot"]).run();
    again.assert_ok();
    again.assert_stderr_contains("already declared");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap(),
        manifest
    );
    ctx_in(&repo)
        .args(["keys", "declare", "nobody"])
        .run()
        .assert_code(3);
}
