//! Rotating and revoking the bundle key as docs/exchange.md says: a new key
//! issues, the old one keeps its bundles opening while it is listed, and a
//! bundle whose key was removed no longer opens.

use super::exchange::ClRepo;

#[test]
fn the_bundle_key_rotates_and_a_removed_key_no_longer_opens_its_bundles() {
    let r = ClRepo::init();
    let old_a = r.bundle("a", &[]);
    let old_b = r.bundle("b", &[]);
    // Rotate: a second bundle key, the issuer switched to it, the old one still listed.
    let k = r.run(&["keys", "generate", "--id", "t-bundle-2"]);
    assert_eq!(k.code, 0, "{}", k.stderr);
    let entry = r.run(&["exchange", "keys", "t-bundle-2", "--purpose", "bundle"]);
    assert_eq!(entry.code, 0, "{}", entry.stderr);
    let line = entry
        .stdout
        .lines()
        .find(|l| l.contains("t-bundle-2"))
        .expect("the keys entry")
        .trim()
        .to_string();
    let manifest = std::fs::read_to_string(r.file("opencontext.yaml")).unwrap();
    let manifest = manifest
        .replacen("    keys:\n", &format!("    keys:\n      {line}\n"), 1)
        .replacen("issuer_key: t-bundle\n", "issuer_key: t-bundle-2\n", 1);
    std::fs::write(r.file("opencontext.yaml"), &manifest).unwrap();
    let new = r.bundle("n", &[]);
    assert!(r
        .envelope(&new)
        .to_string()
        .contains("urn:cl:key:t-bundle-2"));
    assert_eq!(
        r.open(&new, "support-agent", 3).code,
        0,
        "the new key issues"
    );
    assert_eq!(
        r.open(&old_a, "support-agent", 3).code,
        0,
        "the old one still opens"
    );
    // Revoke: remove the old entry; what it signed no longer opens.
    let without: String = manifest
        .lines()
        .filter(|l| !l.trim_start().starts_with("t-bundle:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(r.file("opencontext.yaml"), without).unwrap();
    let refused = r.open(&old_b, "support-agent", 3);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("UNTRUSTED_BUNDLE_AUTHORITY"),
        "{}",
        refused.stderr
    );
}
