//! The sealed log's unit tests.

use super::*;

#[test]
fn sealed_entries_chain_and_open_only_with_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(FILE);
    let id = age::x25519::Identity::generate();
    let r = id.to_public().to_string();
    let mut log = SealedLog::open(&file, &r, "me").unwrap();
    log.append(
        &Entry::new(Action::Grant, "tax-agent").scope(&["identity.*".into()]),
        "2026-03-15T10:32:00Z",
    )
    .unwrap();
    log.append(
        &Entry::new(Action::Read, "tax-agent").fields(["identity.full_name"]),
        "2026-03-15T10:32:05Z",
    )
    .unwrap();
    drop(log);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("tax-agent") && !text.contains("identity"),
        "{text}"
    );
    let report = Log::new(file.clone()).verify().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.entries, 2);
    let ring = Keyring::from_keys(vec![crate::private::identity::Key::x25519(id)]);
    let got = tail(&file, 1, &ring, None).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["objects"], json!(["identity.full_name"]));
    assert!(crate::schema::check(crate::schema::Kind::AuditEvent, &{
        let mut e = got[0].clone();
        e.as_object_mut().unwrap().remove("seq");
        e
    })
    .is_empty());
    assert!(line(&got[0]).contains("READ"));
    let other = Keyring::from_keys(vec![crate::private::identity::Key::x25519(
        age::x25519::Identity::generate(),
    )]);
    assert!(tail(&file, 5, &other, None).unwrap()[0]["error"].is_string());
    assert_eq!(unseal("%", &other).unwrap_err().to_string(), "not base64");
    assert_eq!(EntryError::NotSealed.to_string(), "not a sealed entry");
}

/// What a writer of the folder can do to the log without the vault's key: seal
/// events to the public key and recompute the keyless chain. Each is reported.
#[test]
fn forged_cut_and_rewritten_entries_are_reported() {
    use crate::personal::integrity::Seen;
    use crate::personal::ledger::Ledger;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(FILE);
    let id = age::x25519::Identity::generate();
    let r = id.to_public().to_string();
    let ring = Keyring::from_keys(vec![crate::private::identity::Key::x25519(id)]);
    let key = || MacKey::new(zeroize::Zeroizing::new([3; 32]));
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Ledger::create(
        dir.path(),
        key(),
        "v",
        &Seen::Off,
    )));
    let mut log = SealedLog::open(&file, &r, "me").unwrap();
    log.attach(Some(shared.clone()));
    for n in 0..3 {
        log.append(
            &Entry::new(Action::Read, "helper").fields([format!("identity.f{n}")]),
            "2026-03-15T10:00:00Z",
        )
        .unwrap();
    }
    let head = ledger::lock(&shared).index().audit.clone().unwrap();
    assert_eq!(head.seq, 3);
    // Locked: a refused unlock is written untagged, as it must be.
    log.attach(None);
    log.append(
        &Entry::new(Action::Unlock, "user")
            .denied()
            .detail("wrong password"),
        "2026-03-15T10:01:00Z",
    )
    .unwrap();
    assert!(check(&file, &ring, &key(), Some(&head)).is_empty());
    // A forged read (anyone can seal to the public key and extend the chain).
    log.append(
        &Entry::new(Action::Read, "user").fields(["identity.fake"]),
        "2026-03-15T10:02:00Z",
    )
    .unwrap();
    drop(log);
    let ps = check(&file, &ring, &key(), Some(&head));
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert!(
        ps[0].error.contains("entry 5 was not written by the vault"),
        "{ps:?}"
    );
    let shown = tail(&file, 10, &ring, Some(&key())).unwrap();
    let auth: Vec<bool> = shown
        .iter()
        .map(|e| e["extensions"][crate::personal::EXTENSION]["authenticated"] == true)
        .collect();
    assert_eq!(auth, [true, true, true, false, false]);
    assert!(line(&shown[4]).ends_with("[not authenticated]"));
    // Another key's tags fail; so does the right key over a moved line.
    let other = MacKey::new(zeroize::Zeroizing::new([4; 32]));
    assert!(check(&file, &ring, &other, None)
        .iter()
        .any(|p| p.error.contains("entry 1 fails authentication")));
    // Cut below the pinned entry (and the keyless head rewritten to match).
    let text = std::fs::read_to_string(&file).unwrap();
    let two: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, &two).unwrap();
    let ps = check(&file, &ring, &key(), Some(&head));
    assert!(ps[0].error.contains("entries were cut off"), "{ps:?}");
    // Rewritten at the pinned entry: its hash differs.
    let forged = AuditHead {
        seq: 2,
        hash: "sha256:00".into(),
    };
    let ps = check(&file, &ring, &key(), Some(&forged));
    assert!(ps[0].error.contains("was rewritten"), "{ps:?}");
    assert!(ps[0].fix.contains("investigation"));
}
