use std::path::Path;

use super::*;

const VECTORS: &str =
    "../../../shared/reference/atmem-delegated-provider-v1/delegated-request-auth-v1.json";

const SECRET: [u8; 32] = [7u8; 32];

fn setup() -> (tempfile::TempDir, Authenticator) {
    let dir = tempfile::tempdir().unwrap();
    keyring::install(dir.path(), "p", "i", "k1", &SECRET).unwrap();
    let auth = Authenticator::open(dir.path()).unwrap();
    (dir, auth)
}

fn request(secret: &[u8; 32], key: &str, issued: i64, nonce: &str, body: &[u8]) -> HttpRequest {
    let signed = sign_request(
        secret,
        "POST",
        "127.0.0.1:9",
        CONTEXT_PATH,
        "p",
        "i",
        key,
        issued,
        issued + 30,
        nonce,
        body,
    )
    .unwrap();
    let mut headers = vec![
        ("host".to_string(), b"127.0.0.1:9".to_vec()),
        (
            "content-type".to_string(),
            b"application/json; charset=utf-8".to_vec(),
        ),
        (
            "content-length".to_string(),
            body.len().to_string().into_bytes(),
        ),
    ];
    headers.extend(
        signed
            .headers
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.into_bytes())),
    );
    HttpRequest {
        method: "POST".into(),
        target: CONTEXT_PATH.into(),
        headers,
        body: body.to_vec(),
    }
}

fn at(t: i64) -> impl Fn() -> i64 {
    move || t
}

#[test]
fn mac_input_is_eleven_exact_lines_with_a_final_lf() {
    let f = MacFields {
        method: "GET",
        host: "[::1]:8788",
        target: "/health",
        provider_id: "p",
        instance_id: "i",
        key_id: "k",
        issued: "1",
        expires: "2",
        nonce: "n",
    };
    let text = String::from_utf8(mac_input(&f, b"").unwrap()).unwrap();
    assert_eq!(
        text,
        "atmem-hmac-sha256-v1\nGET\n[::1]:8788\n/health\np\ni\nk\n1\n2\nn\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
    );
    for bad in ["", "a b", "caf\u{e9}", "a\tb"] {
        assert!(
            mac_input(&MacFields { target: bad, ..f }, b"").is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn the_published_known_answer_vector_signs_alike() {
    // Independent of the shared folder: the published values, restated.
    let secret: [u8; 32] = std::array::from_fn(|i| i as u8);
    let s = sign_request(
        &secret,
        "POST",
        "127.0.0.1:8788",
        CONTEXT_PATH,
        "fixture-provider",
        "fixture-instance",
        "fixture-request-key",
        1_800_000_000,
        1_800_000_030,
        &"01".repeat(32),
        br#"{"query":"synthetic"}"#,
    )
    .unwrap();
    assert_eq!(
        s.headers[7].1,
        "e2adb20f53abd3d8b6f8433a7574bad687ab39421bff358c63b97b749e08f28a"
    );
}

#[test]
fn a_signed_request_is_accepted_once_and_its_replay_refused() {
    let (_d, auth) = setup();
    let req = request(&SECRET, "k1", 100, &"ab".repeat(32), b"{}");
    let ok = auth.verify(&req, &at(100)).unwrap();
    assert_eq!((ok.route, ok.key_id.as_str()), (Route::Context, "k1"));
    let again = auth.verify(&req, &at(101)).unwrap_err();
    assert_eq!(again.stage, Stage::Replay);
}

#[test]
fn the_check_order_is_the_profiles() {
    let (_d, auth) = setup();
    let n = "cd".repeat(32);
    let stage = |req: &HttpRequest, now: i64| auth.verify(req, &at(now)).unwrap_err().stage;
    // A wrong key and an expired window: the key (step 2) is reported first.
    let req = request(&SECRET, "nope", 100, &n, b"{}");
    assert_eq!(stage(&req, 500), Stage::Identity);
    // A bad MAC and an expired window: time (step 3) first.
    let req = request(&[1u8; 32], "k1", 100, &n, b"{}");
    assert_eq!(stage(&req, 500), Stage::Time);
    assert_eq!(stage(&req, 100), Stage::Mac);
    // Framing before everything.
    let mut req = request(&[1u8; 32], "nope", 100, &n, b"{}");
    req.headers
        .push(("Transfer-Encoding".into(), b"chunked".to_vec()));
    assert_eq!(stage(&req, 500), Stage::Framing);
    assert_eq!(auth.ledger().stored().unwrap(), 0);
}

#[test]
fn framing_rules() {
    let (_d, auth) = setup();
    let n = "ef".repeat(32);
    let base = request(&SECRET, "k1", 100, &n, b"{}");
    let refused = |f: &dyn Fn(&mut HttpRequest)| {
        let mut r = base.clone();
        f(&mut r);
        auth.verify(&r, &at(100)).unwrap_err()
    };
    let e = refused(&|r| r.headers.retain(|(h, _)| h != "content-length"));
    assert_eq!(e.stage, Stage::Framing);
    let e = refused(&|r| r.headers.push(("Content-Length".into(), b"2".to_vec())));
    assert_eq!(e.stage, Stage::Framing);
    let e = refused(&|r| r.headers.push(("HOST".into(), b"127.0.0.1:9".to_vec())));
    assert_eq!(e.stage, Stage::Framing);
    let e = refused(&|r| {
        for (h, v) in r.headers.iter_mut() {
            if h == "content-type" {
                *v = b"text/plain".to_vec();
            }
        }
    });
    assert!(e.detail.contains("application/json"), "{e}");
    let e = refused(&|r| {
        r.body = vec![b' '; MAX_BODY_BYTES + 1];
        for (h, v) in r.headers.iter_mut() {
            if h == "content-length" {
                *v = r.body.len().to_string().into_bytes();
            }
        }
    });
    assert!(e.detail.contains("150000"), "{e}");
    let e = refused(&|r| {
        for (h, v) in r.headers.iter_mut() {
            if h == "X-AtMem-Issued" {
                *v = b"0100".to_vec();
            }
        }
    });
    assert_eq!(e.stage, Stage::Headers);
    let e = refused(&|r| r.headers.retain(|(h, _)| h != "X-AtMem-Nonce"));
    assert_eq!(
        (e.stage, e.detail.as_str()),
        (Stage::Headers, "x-atmem-nonce is missing")
    );

    // Health: GET, empty body, no Content-Type needed.
    let signed = sign_request(
        &SECRET,
        "GET",
        "localhost:9",
        HEALTH_PATH,
        "p",
        "i",
        "k1",
        100,
        110,
        &n,
        b"",
    )
    .unwrap();
    let mut health = HttpRequest {
        method: "GET".into(),
        target: HEALTH_PATH.into(),
        headers: vec![("Host".into(), b"localhost:9".to_vec())],
        body: Vec::new(),
    };
    health.headers.extend(
        signed
            .headers
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.into_bytes())),
    );
    let mut with_body = health.clone();
    with_body.body = b"x".to_vec();
    assert_eq!(
        auth.verify(&with_body, &at(100)).unwrap_err().stage,
        Stage::Framing
    );
    assert_eq!(auth.verify(&health, &at(100)).unwrap().route, Route::Health);
}

#[test]
fn rotation_keeps_at_most_two_keys_and_never_clears_the_ledger() {
    let (d, auth) = setup();
    let n = |i: u8| format!("{i:02x}").repeat(32);
    let secret_of = |ring: &Keyring| *read_secret(d.path(), ring.active()).unwrap();
    auth.verify(&request(&SECRET, "k1", 100, &n(1), b"{}"), &at(100))
        .unwrap();

    let b = rotate(d.path(), 60, 100).unwrap();
    assert_eq!(b.previous, Some(("k1".to_string(), 160)));
    let sb = secret_of(&Keyring::load(d.path()).unwrap());
    auth.verify(&request(&SECRET, "k1", 101, &n(2), b"{}"), &at(101))
        .unwrap();
    auth.verify(&request(&sb, &b.key_id, 101, &n(3), b"{}"), &at(101))
        .unwrap();
    // The replay history survives the rotation.
    let replay = auth.verify(&request(&SECRET, "k1", 100, &n(1), b"{}"), &at(102));
    assert_eq!(replay.unwrap_err().stage, Stage::Replay);

    // A third key drops the first at once, even inside its overlap.
    let c = rotate(d.path(), 30, 102).unwrap();
    assert_eq!(c.dropped, vec!["k1".to_string()]);
    let ring = Keyring::load(d.path()).unwrap();
    assert_eq!(ring.keys.len(), 2);
    let sc = secret_of(&ring);
    let first = auth.verify(&request(&SECRET, "k1", 103, &n(4), b"{}"), &at(103));
    assert_eq!(first.unwrap_err().stage, Stage::Identity);
    assert!(
        !d.path().join("k1.key").exists(),
        "a dropped key's secret is removed"
    );
    auth.verify(&request(&sb, &b.key_id, 103, &n(5), b"{}"), &at(103))
        .unwrap();
    auth.verify(&request(&sc, &c.key_id, 103, &n(6), b"{}"), &at(103))
        .unwrap();
    // After its overlap the previous key is refused, fresh nonce or not.
    let late = auth.verify(&request(&sb, &b.key_id, 132, &n(7), b"{}"), &at(132));
    assert!(late.unwrap_err().detail.contains("expired"));

    assert!(revoke(d.path(), &c.key_id)
        .unwrap_err()
        .message
        .contains("active"));
    revoke(d.path(), &b.key_id).unwrap();
    assert_eq!(Keyring::load(d.path()).unwrap().keys.len(), 1);
    assert!(rotate(d.path(), 301, 200).is_err());
}

#[test]
fn the_ledger_survives_restart_and_fails_closed() {
    let (d, auth) = setup();
    let req = request(&SECRET, "k1", 100, &"aa".repeat(32), b"{}");
    auth.verify(&req, &at(100)).unwrap();
    let restarted = Authenticator::open(d.path()).unwrap();
    assert_eq!(
        restarted.verify(&req, &at(100)).unwrap_err().stage,
        Stage::Replay
    );

    // Clock rollback below the high-water mark.
    let back = request(&SECRET, "k1", 95, &"bb".repeat(32), b"{}");
    let e = restarted.verify(&back, &at(99)).unwrap_err();
    assert_eq!(e.stage, Stage::Storage, "{e}");

    // Expired nonces are pruned; capacity is enforced.
    let small = Authenticator::open(d.path())
        .unwrap()
        .with_ledger_capacity(1);
    let late = request(&SECRET, "k1", 200, &"cc".repeat(32), b"{}");
    small.verify(&late, &at(200)).unwrap();
    assert_eq!(
        small.ledger().stored().unwrap(),
        1,
        "the nonce of t=100 was pruned"
    );
    let full = request(&SECRET, "k1", 200, &"dd".repeat(32), b"{}");
    assert!(small
        .verify(&full, &at(200))
        .unwrap_err()
        .detail
        .contains("full"));

    // A damaged or missing ledger rejects and is never recreated.
    let ledger = d.path().join(LEDGER_FILE);
    std::fs::write(&ledger, b"{").unwrap();
    let e = auth.verify(
        &request(&SECRET, "k1", 300, &"ee".repeat(32), b"{}"),
        &at(300),
    );
    assert_eq!(e.unwrap_err().stage, Stage::Storage);
    std::fs::remove_file(&ledger).unwrap();
    assert!(Authenticator::open(d.path()).is_err());
    assert!(!ledger.exists());
}

#[test]
fn setup_files_must_be_private_and_the_fixture_secret_is_refused() {
    let (d, _auth) = setup();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let key = d.path().join("k1.key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Authenticator::open(d.path()).unwrap_err();
        assert!(e.message.contains("0644"), "{e}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let f = tempfile::tempdir().unwrap();
    let fixture: [u8; 32] = std::array::from_fn(|i| i as u8);
    keyring::install(f.path(), "p", "i", "k", &fixture).unwrap();
    assert!(Authenticator::open(f.path())
        .unwrap_err()
        .message
        .contains("fixture"));
    // init refuses a folder already set up.
    assert!(init(d.path(), "p", "i")
        .unwrap_err()
        .message
        .contains("not empty"));
    let fresh = tempfile::tempdir().unwrap().path().join("auth");
    let issued = init(&fresh, "ctx", "local").unwrap();
    assert!(issued.secret_file.is_absolute() && issued.secret_file.is_file());
    assert_eq!(Authenticator::open(&fresh).unwrap().provider_id(), "ctx");
}

#[test]
fn every_published_vector_passes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(VECTORS);
    let Ok(bytes) = std::fs::read(&path) else {
        assert!(
            std::env::var("CTX_REQUIRE_INTEROP").as_deref() != Ok("1"),
            "{} is missing",
            path.display()
        );
        eprintln!("note: {} absent; skipped", path.display());
        return;
    };
    let report = conformance::run(&bytes).unwrap();
    for o in &report.outcomes {
        assert!(o.passed, "{}: {}", o.id, o.observed);
    }
    use conformance::Group;
    assert_eq!(
        (
            report.count(Group::Positive),
            report.count(Group::Negative),
            report.count(Group::Stateful)
        ),
        (1, 14, 5)
    );
}
