//! `ctx private export-identity` prints category subkeys only when asked by name,
//! with a warning (seed 004 §3 keeps subkeys inside the vault; docs/personal.md,
//! "Departures from the seed").

use crate::serve_support::Vault;
use crate::support::ctx_in;

#[test]
fn export_identity_prints_no_key_unless_asked_by_name_and_warns() {
    let v = Vault::create();
    let bare = ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "private",
            "export-identity",
            "--password-file",
            "pw.txt",
        ])
        .run();
    bare.assert_code(2)
        .assert_stderr_contains("--category NAME")
        .assert_stderr_contains("--all-categories");
    assert!(!bare.stdout.contains("AGE-SECRET-KEY"), "{}", bare.stdout);
    assert!(!bare.stderr.contains("AGE-SECRET-KEY"), "{}", bare.stderr);
    let one = ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "private",
            "export-identity",
            "--password-file",
            "pw.txt",
            "--category",
            "medical",
        ])
        .run();
    one.assert_ok()
        .assert_stderr_contains("warning: printing the secret keys of 1 category");
    assert_eq!(one.stdout.matches("AGE-SECRET-KEY-1").count(), 1);
    assert!(!one.stderr.contains("AGE-SECRET-KEY"), "{}", one.stderr);
    let every = ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "private",
            "export-identity",
            "--password-file",
            "pw.txt",
            "--all-categories",
        ])
        .run();
    every.assert_ok().assert_stderr_contains("10 categories");
    assert_eq!(every.stdout.matches("AGE-SECRET-KEY-1").count(), 10);
}
