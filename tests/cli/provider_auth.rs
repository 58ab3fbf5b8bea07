//! AtMem delegated request authentication v1 through the real binary: the
//! spec owner's vectors (`ctx provider conformance`), the request keyring
//! (`ctx provider auth`), and `ctx provider serve` driven over raw HTTP on an
//! ephemeral loopback port: accept, replay, restart, rotation.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::serve_support::Running;
use crate::signing::Signer;
use crate::support::{ctx, ctx_in, project_root, write};
use ctx_core::provider::request_auth::{random_nonce, sign_request, REJECTION_BODY};

const VIP: &str = "---\nid: policies.vip\ntype: policy\nlayer: L3\nauthority: approved\nowner: support-lead\nclassification: confidential\n---\n\nVIP refunds are handled by the founders.\n";

const BINDING: &str = r#"{"run_id":"run-1","turn_id":"turn-1","session_id":"session-1","agent_id":"support-agent","user_id":"user-opaque-1","workspace_id":"acme"}"#;

/// The vectors file beside the project; None (skip) when absent, unless
/// CTX_REQUIRE_INTEROP=1, which makes its absence a failure.
fn vectors() -> Option<PathBuf> {
    let p = project_root()
        .join("../shared/reference/atmem-delegated-provider-v1/delegated-request-auth-v1.json");
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var("CTX_REQUIRE_INTEROP").as_deref() != Ok("1"),
        "CTX_REQUIRE_INTEROP=1 but {} is missing",
        p.display()
    );
    eprintln!("note: {} absent; skipped", p.display());
    None
}

#[test]
fn every_published_request_auth_vector_passes_through_the_cli() {
    let Some(file) = vectors() else { return };
    let dir = tempfile::tempdir().unwrap();
    let r = ctx(
        dir.path(),
        &[
            "provider",
            "conformance",
            file.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let out = r.json();
    assert_eq!(
        (out["passed"].as_u64(), out["failed"].as_u64()),
        (Some(20), Some(0))
    );
    let ids: Vec<(&str, &str)> = out["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["group"].as_str().unwrap(), v["id"].as_str().unwrap()))
        .collect();
    let mut want = vec![("positive", "positive")];
    for n in [
        "unsigned",
        "duplicate",
        "body",
        "method",
        "target",
        "authority",
        "provider",
        "instance",
        "key",
        "nonce",
        "expiry",
        "signature",
        "expired",
        "future",
    ] {
        want.push(("negative", n));
    }
    for s in [
        "exact-replay",
        "restart-replay",
        "concurrent-replay",
        "rotation",
        "revocation",
    ] {
        want.push(("stateful", s));
    }
    assert_eq!(ids, want);

    // The runner can fail: a published signature that is not ours fails the
    // positive vector and the command.
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    doc["signature"] = json!("00".repeat(32));
    write(dir.path(), "tampered.json", doc.to_string().as_bytes());
    let bad = ctx(dir.path(), &["provider", "conformance", "tampered.json"]);
    assert_eq!(bad.code, 1, "{}", bad.stdout);
    assert!(bad.stdout.starts_with("FAIL  positive"), "{}", bad.stdout);
    assert!(
        bad.stdout.contains("19 passed, 1 failed (20 vectors)"),
        "{}",
        bad.stdout
    );
}

fn auth(s: &Signer, args: &[&str]) -> Value {
    let mut a = vec!["provider", "auth"];
    a.extend_from_slice(args);
    a.extend(["--auth", "auth", "--format", "json"]);
    let r = s.run_in(s.config.path(), &a);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    r.json()
}

/// A request key as a host holds it: its id and the secret read from its file.
struct Key {
    id: String,
    secret: [u8; 32],
}

fn key(issued: &Value) -> Key {
    let text = std::fs::read_to_string(issued["request_secret_file"].as_str().unwrap()).unwrap();
    let bytes = ctx_core::signing::decode_base64_strict(text.trim_end()).unwrap();
    Key {
        id: issued["request_key_id"].as_str().unwrap().to_string(),
        secret: bytes.try_into().unwrap(),
    }
}

#[test]
fn auth_init_rotate_and_revoke_keep_at_most_two_private_keys() {
    let s = Signer::new("");
    let first = auth(&s, &["init"]);
    let folder = s.config.path().join("auth");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&folder), 0o700);
        for f in ["keyring.json", "nonces.json"] {
            assert_eq!(mode(&folder.join(f)), 0o600, "{f}");
        }
        assert_eq!(
            mode(Path::new(first["request_secret_file"].as_str().unwrap())),
            0o600
        );
    }
    let secret = std::fs::read_to_string(first["request_secret_file"].as_str().unwrap()).unwrap();
    assert_eq!(secret.len(), 45, "44 base64 characters and a newline");
    let again = s.run_in(
        s.config.path(),
        &["provider", "auth", "init", "--auth", "auth"],
    );
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("not empty"), "{}", again.stderr);

    let second = auth(&s, &["rotate", "--overlap", "60"]);
    assert_eq!(second["previous_key_id"], first["request_key_id"]);
    let third = auth(&s, &["rotate"]);
    assert_eq!(third["dropped_key_ids"], json!([first["request_key_id"]]));
    assert!(!Path::new(first["request_secret_file"].as_str().unwrap()).exists());
    let ring: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("keyring.json")).unwrap())
            .unwrap();
    assert_eq!(ring["keys"].as_array().unwrap().len(), 2);

    let active = third["request_key_id"].as_str().unwrap();
    let r = s.run_in(
        s.config.path(),
        &["provider", "auth", "revoke", active, "--auth", "auth"],
    );
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("active key"), "{}", r.stderr);
    let prev = second["request_key_id"].as_str().unwrap();
    let r = s.run_in(
        s.config.path(),
        &["provider", "auth", "revoke", prev, "--auth", "auth"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    for out in [first, second, third] {
        assert!(!out.to_string().contains(secret.trim_end()));
    }
    let bad = s.run_in(
        s.config.path(),
        &[
            "provider",
            "auth",
            "rotate",
            "--auth",
            "auth",
            "--overlap",
            "301",
        ],
    );
    assert_eq!(bad.code, 1, "{}", bad.stderr);
}

/// One raw HTTP/1.1 exchange (headers exactly as given; the connection closes).
fn send(
    addr: &str,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut head = format!("{method} {target} HTTP/1.1\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A signed request: (method, target, headers, body).
struct Signed {
    method: &'static str,
    target: &'static str,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Signed {
    fn new(
        addr: &str,
        key: &Key,
        method: &'static str,
        target: &'static str,
        body: Vec<u8>,
    ) -> Signed {
        let now = chrono::Utc::now().timestamp();
        let h = sign_request(
            &key.secret,
            method,
            addr,
            target,
            "ctx",
            "local",
            &key.id,
            now,
            now + 30,
            &random_nonce().unwrap(),
            &body,
        )
        .unwrap();
        let mut headers = vec![("Host".to_string(), addr.to_string())];
        if method == "POST" {
            headers.push(("Content-Type".into(), "application/json".into()));
            headers.push(("Content-Length".into(), body.len().to_string()));
        }
        headers.extend(h.headers.into_iter().map(|(n, v)| (n.to_string(), v)));
        Signed {
            method,
            target,
            headers,
            body,
        }
    }

    fn health(addr: &str, key: &Key) -> Signed {
        Signed::new(addr, key, "GET", "/health", Vec::new())
    }

    fn send(&self, addr: &str) -> (u16, String) {
        send(addr, self.method, self.target, &self.headers, &self.body)
    }
}

fn context_body(query: &str) -> Vec<u8> {
    let deadline = chrono::Utc::now() + chrono::TimeDelta::seconds(60);
    json!({
        "contract_id": "atmem.delegated-context-request.v1",
        "binding": serde_json::from_str::<Value>(BINDING).unwrap(),
        "query": query,
        "query_sha256": ctx_core::canonical::sha256_hex(query.as_bytes()),
        "max_context_bytes": 262144,
        "deadline": deadline.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
    })
    .to_string()
    .into_bytes()
}

fn serve(s: &Signer) -> Running {
    let spawned = ctx_in(s.path())
        .args(["provider", "serve", "--listen", "127.0.0.1:0", "--auth"])
        .arg(s.config.path().join("auth"))
        .args(["--agent", "support-agent", "--key", "release-bot"])
        .env("XDG_CONFIG_HOME", s.config.path())
        .env("HOME", s.config.path())
        .spawn();
    let (running, banner) = Running::start(spawned, 1);
    assert!(banner[0].contains("agent support-agent"), "{banner:?}");
    running
}

#[test]
fn provider_serve_accepts_once_refuses_replays_across_restarts_and_follows_rotation() {
    let s = Signer::new("");
    // A confidential object the agent may read: `ctx resolve` gives it, but it
    // needs the user's approval, which no delegated host can ask for.
    let manifest = s.manifest().replace(
        "    exclude: [policies.internal.*]\n",
        "    exclude: [policies.internal.*]\n    max_classification: confidential\n",
    );
    write(s.path(), "opencontext.yaml", manifest.as_bytes());
    write(s.path(), "context/policies/vip.md", VIP.as_bytes());
    let resolved = s.run(&[
        "resolve",
        "--agent",
        "support-agent",
        "--format",
        "markdown",
    ]);
    assert!(
        resolved.stdout.contains("VIP refunds"),
        "{}{}",
        resolved.stdout,
        resolved.stderr
    );
    s.key("release-bot");
    let key1 = key(&auth(&s, &["init"]));
    let mut server = serve(&s);
    let addr = server.url.strip_prefix("http://").unwrap().to_string();

    // Unsigned: the profile's rejection and nothing else.
    let (code, body) = send(
        &addr,
        "GET",
        "/health",
        &[("Host".into(), addr.clone())],
        b"",
    );
    assert_eq!((code, body.as_str()), (401, REJECTION_BODY));

    let health = Signed::health(&addr, &key1);
    let (code, body) = health.send(&addr);
    assert_eq!(code, 200, "{body}");
    let h: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (
            &h["transport_profile"],
            &h["provider_id"],
            &h["instance_id"]
        ),
        (
            &json!("atmem-hmac-sha256-v1"),
            &json!("ctx"),
            &json!("local")
        )
    );

    // A signed delegated-context request: 200 and an envelope the host accepts.
    let request = Signed::new(
        &addr,
        &key1,
        "POST",
        "/v1/delegated-context",
        context_body("refunds"),
    );
    let (code, envelope) = request.send(&addr);
    assert_eq!(code, 200, "{envelope}");
    crate::signing::provider::files(&s);
    write(s.path(), "host/envelope.json", envelope.as_bytes());
    let v = s.run(&[
        "provider",
        "verify",
        "host/envelope.json",
        "--trust",
        "host/trust.json",
        "--binding",
        "host/binding.json",
        "--no-state",
        "--context-out",
        "-",
    ]);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    assert!(v.stdout.contains("Make refunds boring."), "{}", v.stdout);
    assert!(!v.stdout.contains("VIP refunds"), "{}", v.stdout);
    let env: Value = serde_json::from_str(&envelope).unwrap();
    assert_eq!(
        env["binding"],
        serde_json::from_str::<Value>(BINDING).unwrap()
    );
    assert_eq!(env["receipt"]["contract_id"], "ctx.receipt.v1");

    // Authenticated but not a valid request, or past its deadline.
    let bad = Signed::new(
        &addr,
        &key1,
        "POST",
        "/v1/delegated-context",
        br#"{"query":"synthetic"}"#.to_vec(),
    );
    assert_eq!(
        bad.send(&addr),
        (422, r#"{"error":"provider_request_rejected"}"#.to_string())
    );
    let mut late: Value = serde_json::from_slice(&context_body("refunds")).unwrap();
    late["deadline"] = json!("2020-01-01T00:00:00Z");
    let late = Signed::new(
        &addr,
        &key1,
        "POST",
        "/v1/delegated-context",
        late.to_string().into_bytes(),
    );
    assert_eq!(late.send(&addr).0, 504);

    // The same bytes again: a replay.
    assert_eq!(request.send(&addr), (401, REJECTION_BODY.to_string()));
    // A duplicated signature header is refused before the MAC.
    let mut dup = Signed::health(&addr, &key1);
    let sig = dup.headers.last().unwrap().clone();
    dup.headers.push(sig);
    assert_eq!(dup.send(&addr).0, 401);

    // Restart: the ledger is on disk, so the replay is still refused.
    let log = server.stderr();
    let mut server = serve(&s);
    let addr2 = server.url.strip_prefix("http://").unwrap().to_string();
    let replay = send(
        &addr2,
        request.method,
        request.target,
        &request.headers,
        &request.body,
    );
    assert_eq!(replay.0, 401);

    // Rotation: old and new keys both work during the overlap; a third key
    // drops the first at once.
    let issued2 = auth(&s, &["rotate", "--overlap", "300"]);
    let key2 = key(&issued2);
    assert_eq!(Signed::health(&addr2, &key1).send(&addr2).0, 200);
    assert_eq!(Signed::health(&addr2, &key2).send(&addr2).0, 200);
    let key3 = key(&auth(&s, &["rotate", "--overlap", "300"]));
    assert_eq!(
        Signed::health(&addr2, &key1).send(&addr2).0,
        401,
        "at most two keys"
    );
    assert_eq!(Signed::health(&addr2, &key2).send(&addr2).0, 200);
    assert_eq!(Signed::health(&addr2, &key3).send(&addr2).0, 200);
    let log2 = server.stderr();

    // The log names each check; it never holds the secret, the query or context.
    assert!(
        log.contains("rejected (headers: no authentication headers"),
        "{log}"
    );
    assert!(log.contains("200 inject of 2 object(s)"), "{log}");
    assert!(log.contains("1 withheld for approval"), "{log}");
    assert!(
        log.contains("rejected (replay: nonce already used"),
        "{log}"
    );
    assert!(
        log.contains("x-atmem-signature appears more than once"),
        "{log}"
    );
    assert!(
        log2.contains("rejected (replay: nonce already used"),
        "{log2}"
    );
    assert!(log2.contains("is not in the keyring"), "{log2}");
    let secret = std::fs::read_to_string(issued2["request_secret_file"].as_str().unwrap()).unwrap();
    for l in [&log, &log2] {
        assert!(!l.contains("refunds") && !l.contains("boring"), "{l}");
        assert!(!l.contains(secret.trim_end()), "{l}");
    }
}

#[test]
fn provider_serve_refuses_a_non_loopback_address_and_an_unset_folder() {
    let s = Signer::new("");
    s.key("release-bot");
    let r = s.run(&[
        "provider",
        "serve",
        "--listen",
        "0.0.0.0:0",
        "--agent",
        "support-agent",
        "--key",
        "release-bot",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("loopback"), "{}", r.stderr);
    let r = s.run(&[
        "provider",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--auth",
        "nowhere",
        "--agent",
        "support-agent",
        "--key",
        "release-bot",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("ctx provider auth init"), "{}", r.stderr);
}

/// `ctx provider serve` stands behind the same door as `ctx serve`: under a 256
/// descriptor limit, 306 idle sockets do not lock its host out.
#[test]
fn provider_serve_is_not_locked_out_by_idle_sockets() {
    let s = Signer::new("");
    s.key("release-bot");
    auth(&s, &["init"]);
    let spawned = ctx_in(s.path())
        .via(&["sh", "-c", "ulimit -n 256 && exec \"$0\" \"$@\""])
        .args(["provider", "serve", "--listen", "127.0.0.1:0", "--auth"])
        .arg(s.config.path().join("auth"))
        .args(["--agent", "support-agent", "--key", "release-bot"])
        .env("XDG_CONFIG_HOME", s.config.path())
        .env("HOME", s.config.path())
        .spawn();
    let (server, _) = Running::start(spawned, 1);
    let addr = server.url.strip_prefix("http://").unwrap().to_string();
    let idle: Vec<TcpStream> = (0..306)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // An unsigned request is answered at once (the profile's 401), not left hanging.
    let mut t = TcpStream::connect(&addr).unwrap();
    t.set_read_timeout(Some(std::time::Duration::from_secs(15)))
        .unwrap();
    t.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    let _ = t.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.starts_with("HTTP/1.1 401"),
        "no answer beside idle sockets: {text:?}"
    );
    drop(idle);
}
