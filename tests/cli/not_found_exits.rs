//! Exit 3 means "not found" wherever the missing thing is met: a declared key whose
//! private half is gone, a receipt named by `--supersedes`, a receipt a bundle lacks;
//! also when the failure stops a `--sign` that then writes nothing.

use crate::signing::Signer;

#[test]
fn a_declared_key_without_its_private_half_is_not_found() {
    let s = Signer::new("");
    s.key("gone");
    std::fs::remove_file(s.config.path().join("ctx/keys/gone.pem")).unwrap();
    let r = s.run(&[
        "bundle",
        "--agent",
        "support-agent",
        "--sign",
        "--key",
        "gone",
    ]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stdout.is_empty() && r.stderr.contains("no private key `gone`"),
        "{}",
        r.stderr
    );
    assert!(s.receipts().is_empty(), "nothing was recorded");
}

#[test]
fn a_refusal_keeps_its_cause_status() {
    let s = Signer::new("");
    s.key("bot");
    // Not declared at all: invalid, not missing.
    let r = s.run(&[
        "bundle",
        "--agent",
        "support-agent",
        "--sign",
        "--key",
        "other",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("not declared"), "{}", r.stderr);
}

#[test]
fn declaring_a_key_never_generated_is_not_found() {
    let s = Signer::new("");
    let r = s.run(&["keys", "declare", "never-made"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("no private key `never-made`")
            && r.stderr
                .contains("ctx keys generate --id never-made --declare"),
        "{}",
        r.stderr
    );
}

#[test]
fn verifying_a_file_that_is_not_there_is_not_found() {
    let s = Signer::new("");
    let r = s.run(&["verify", "nowhere.json"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("nowhere.json: no such file"),
        "{}",
        r.stderr
    );
}

/// `ctx provider sign` names two files: either missing is not found (3); one that is
/// there but not JSON is invalid (1).
#[test]
fn provider_sign_with_a_named_file_missing_is_not_found_and_with_a_bad_one_invalid() {
    let s = Signer::new("");
    s.key("release-bot");
    crate::signing::provider::files(&s);
    s.signed_bundle("support");
    let sign = |extra: &[&str]| {
        let mut args = vec![
            "provider",
            "sign",
            "--binding",
            "host/binding.json",
            "--key",
            "release-bot",
        ];
        args.extend_from_slice(extra);
        s.run(&args)
    };
    let r = sign(&["--bundle", "missing.json"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("missing.json: no such file"),
        "{}",
        r.stderr
    );
    let r = sign(&[
        "--bundle",
        ".ctx/bundles/support.json",
        "--receipt",
        "gone.json",
    ]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("gone.json: no such file"), "{}", r.stderr);
    crate::support::write(s.path(), "junk.json", b"not json");
    let r = sign(&["--bundle", "junk.json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}
