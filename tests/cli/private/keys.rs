//! Recipients and identities: rekey, wrong keys, damaged files, identity sources,
//! and configuration mistakes.

use super::{fixture, id_arg, keygen, manifest, read, run, PASSPORT};

#[test]
fn rekey_adds_and_removes_people_in_one_command() {
    let (repo, keys, alice) = fixture();
    let bob = keygen(keys.path(), "bob");
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let file = "private/vault/passport.md";
    let denied = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &id_arg(&bob)],
        &[],
    );
    assert_eq!(denied.code, 1);
    assert!(
        denied
            .stderr
            .contains("private/vault/passport.md: wrong key"),
        "{}",
        denied.stderr
    );

    // Add bob: one manifest edit, one command.
    repo.write("opencontext.yaml", &manifest(&[&alice.public, &bob.public]));
    let st = run(repo.path(), &["private", "status"], &[]);
    assert!(
        st.stdout.contains("STALE") && st.stdout.contains("(+1 −0)"),
        "{}",
        st.stdout
    );
    let v = run(repo.path(), &["validate"], &[]);
    assert!(v.stdout.contains("outdated recipient list"), "{}", v.stdout);
    let rk = run(
        repo.path(),
        &["private", "rekey", "-i", &id_arg(&alice)],
        &[],
    );
    assert_eq!(rk.code, 0, "{}{}", rk.stdout, rk.stderr);
    assert!(
        rk.stdout
            .contains("rekeyed    private/vault/passport.md  2 recipient(s) (+1 −0)"),
        "{}",
        rk.stdout
    );
    let d = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &id_arg(&bob)],
        &[],
    );
    assert_eq!(d.stdout, PASSPORT, "{}", d.stderr);

    // Remove alice: bob rekeys, alice can no longer read the current file.
    repo.write("opencontext.yaml", &manifest(&[&bob.public]));
    let rk = run(repo.path(), &["private", "rekey", "-i", &id_arg(&bob)], &[]);
    assert_eq!(rk.code, 0, "{}{}", rk.stdout, rk.stderr);
    assert!(
        rk.stdout.contains(&format!("removed {}", alice.public)),
        "{}",
        rk.stdout
    );
    assert!(rk.stdout.contains("git history"), "{}", rk.stdout);
    let gone = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &id_arg(&alice)],
        &[],
    );
    assert_eq!(gone.code, 1);
    assert!(gone.stderr.contains("wrong key"), "{}", gone.stderr);
    assert!(!read(&repo, file).contains(&alice.public));
    assert_eq!(run(repo.path(), &["validate", "--strict"], &[]).code, 0);

    // Rekey without an identity is a usage error, not a silent no-op.
    let none = run(repo.path(), &["private", "rekey"], &[]);
    assert_eq!(none.code, 2, "{}", none.stderr);
}

#[test]
fn wrong_key_truncated_and_tampered_name_the_file() {
    let (repo, keys, alice) = fixture();
    let mallory = keygen(keys.path(), "mallory");
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let file = "private/vault/passport.md";
    let sealed = read(&repo, file);

    let wrong = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &id_arg(&mallory)],
        &[],
    );
    assert_eq!(wrong.code, 1);
    assert!(
        wrong
            .stderr
            .contains("private/vault/passport.md: wrong key: none of the 1 key(s)"),
        "{}",
        wrong.stderr
    );

    // Tampered: one base64 character changed inside the payload.
    let lines: Vec<&str> = sealed.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.starts_with("-----END AGE"))
        .unwrap();
    let mut tampered: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let target = &mut tampered[end - 2]; // a full 64-character line
    let c = target.remove(5);
    target.insert(5, if c == 'A' { 'B' } else { 'A' });
    repo.write(file, &(tampered.join("\n") + "\n"));
    let t = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &id_arg(&alice)],
        &[],
    );
    assert_eq!(t.code, 1);
    assert!(
        t.stderr
            .contains("private/vault/passport.md: the ciphertext"),
        "{}",
        t.stderr
    );
    assert!(
        t.stderr.contains("tampered") || t.stderr.contains("malformed"),
        "{}",
        t.stderr
    );
    let r = run(
        repo.path(),
        &["resolve", "--role", "owner", "--identity", &id_arg(&alice)],
        &[],
    )
    .json();
    let w = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == "vault.passport")
        .expect("warned");
    assert_eq!(w["severity"], "error");
    assert!(
        w["message"]
            .as_str()
            .unwrap()
            .contains("private/vault/passport.md"),
        "{w}"
    );

    // Truncated: the payload's last lines are gone (END marker kept).
    let mut cut: Vec<&str> = lines[..end - 2].to_vec();
    cut.push(lines[end]);
    repo.write(file, &(cut.join("\n") + "\n"));
    let t = run(
        repo.path(),
        &["private", "decrypt", file, "-i", &id_arg(&alice)],
        &[],
    );
    assert_eq!(t.code, 1);
    assert!(
        t.stderr
            .contains("private/vault/passport.md: the ciphertext"),
        "{}",
        t.stderr
    );

    // Truncated mid-file (no END marker): the loader reports it, naming the file.
    repo.write(file, &(lines[..end - 1].join("\n") + "\n"));
    let v = run(repo.path(), &["validate"], &[]);
    assert_eq!(v.code, 1);
    assert!(
        v.stdout.contains("private/vault/passport.md")
            && v.stdout.contains("BEGIN AGE ENCRYPTED FILE"),
        "{}",
        v.stdout
    );

    // A hand-edited clear header is caught after decryption.
    repo.write(
        file,
        &sealed.replace("classification: confidential", "classification: public"),
    );
    let r = run(
        repo.path(),
        &["resolve", "--role", "owner", "--identity", &id_arg(&alice)],
        &[],
    )
    .json();
    let ex = r["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "vault.passport")
        .expect("excluded");
    assert!(
        ex["detail"]
            .as_str()
            .unwrap()
            .contains("does not match the encrypted copy (field classification)"),
        "{ex}"
    );
}

#[test]
fn identity_from_environment_and_default_file() {
    let (repo, keys, alice) = fixture();
    assert_eq!(run(repo.path(), &["private", "encrypt"], &[]).code, 0);
    let file = "private/vault/passport.md";
    let alice_path = id_arg(&alice);
    let env = run(
        repo.path(),
        &["private", "decrypt", file],
        &[("CTX_AGE_IDENTITY", &alice_path)],
    );
    assert_eq!(env.stdout, PASSPORT, "{}", env.stderr);
    let config = keys.path().join("config");
    std::fs::create_dir_all(config.join("ctx/age")).unwrap();
    std::fs::copy(&alice.path, config.join("ctx/age/identity.txt")).unwrap();
    let cfg = config.display().to_string();
    let def = run(
        repo.path(),
        &["resolve", "--role", "owner", "--explain"],
        &[("XDG_CONFIG_HOME", &cfg)],
    );
    assert!(
        def.stdout.contains("ctx/age/identity.txt (default)"),
        "{}",
        def.stdout
    );
    assert!(def.stdout.contains("decrypted with"), "{}", def.stdout);
    let missing = run(
        repo.path(),
        &["private", "decrypt", file],
        &[("CTX_AGE_IDENTITY", "/nonexistent/key.txt")],
    );
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("/nonexistent/key.txt")
            && missing.stderr.contains("CTX_AGE_IDENTITY"),
        "{}",
        missing.stderr
    );
}

#[test]
fn manifest_mistakes_are_reported_with_their_field() {
    let (repo, _keys, _alice) = fixture();
    repo.write(
        "opencontext.yaml",
        &manifest(&["age1notakey"]).replace(
            "    collections:\n      vault:",
            "    collections:\n      nosuch:\n        recipients: []\n      vault:",
        ),
    );
    let v = run(repo.path(), &["validate"], &[]);
    assert_eq!(v.code, 1);
    assert!(
        v.stdout
            .contains("extensions.ctx.private.collections.vault.recipients[0]"),
        "{}",
        v.stdout
    );
    assert!(
        v.stdout
            .contains("`nosuch` is not a collection declared under `collections:`"),
        "{}",
        v.stdout
    );
    let e = run(repo.path(), &["private", "encrypt"], &[]);
    assert_eq!(e.code, 1);
    assert!(
        !read(&repo, "private/vault/passport.md").contains("BEGIN AGE"),
        "nothing encrypted to a broken list"
    );
}
