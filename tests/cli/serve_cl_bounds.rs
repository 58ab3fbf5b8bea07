//! The bounds of the Context Layer binding of `ctx serve` (seed 000 §9.1, §10.4,
//! §11.1, §11.2): calls are rate-limited per caller with the profile's `error`
//! object; a server-side failure tells the caller its kind, not its detail (a key
//! file's path goes to the server's stderr only); `ctxcl_` tokens expire and the
//! server writes a fresh set; a web page of another origin cannot submit.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::exchange::ClRepo;
use crate::serve_context_layer::{support_request, ClServer, MEDIA};

#[test]
fn calls_are_rate_limited_per_caller() {
    let repo = ClRepo::init();
    let s = ClServer::start(repo.path(), repo.xdg.path());
    let support = s.token("support-agent");
    // A burst of 120 cheap calls: the default budget is 60 a minute.
    let mut codes = Vec::new();
    let mut limited = None;
    for _ in 0..120 {
        let r = s.get("/context/v1/requests/urn:cl:request:00", &support);
        codes.push(r.status);
        if r.status == 429 && limited.is_none() {
            limited = Some(r);
        }
    }
    let served = codes.iter().filter(|&&c| c == 404).count();
    assert!((60..=62).contains(&served), "{served} served: {codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 429).count(), 120 - served);
    let r = limited.expect("a 429");
    r.error(429, "RATE_LIMITED");
    assert_eq!(r.body["retryable"], true);
    let wait: u64 = r
        .header("retry-after")
        .and_then(|w| w.parse().ok())
        .expect("Retry-After");
    assert!(wait >= 1);
    // A submission is refused before its body is looked at.
    let req = support_request(&repo, "a.json", &[]);
    s.post("/context/v1/requests", &support, &req, &[])
        .error(429, "RATE_LIMITED");
    // Per caller: another requester and the operator are not held up.
    s.get(
        "/context/v1/requests/urn:cl:request:00",
        &s.token("role:leads"),
    )
    .error(404, "REQUEST_NOT_FOUND");
    s.get("/context/v1/requests/urn:cl:request:00", &s.operator)
        .error(404, "REQUEST_NOT_FOUND");
    let caps = s.call("GET", "/.well-known/context-layer", &[], None);
    assert_eq!(caps.body["rate_limit"]["calls_per_minute_per_caller"], 60);
}

#[test]
fn a_missing_key_is_told_without_its_path() {
    let repo = ClRepo::init();
    let mut s = ClServer::start(repo.path(), repo.xdg.path());
    let support = s.token("support-agent");
    let key = repo.xdg.path().join("ctx/keys/t-bundle.pem");
    std::fs::remove_file(&key).expect("the bundle key file");
    let req = support_request(&repo, "a.json", &[]);
    let r = s.post("/context/v1/requests", &support, &req, &[]);
    r.error(503, "KEY_UNAVAILABLE");
    let home = repo.xdg.path().display().to_string();
    for secret in [home.as_str(), "t-bundle", ".pem", "keys/"] {
        assert!(
            !r.text.contains(secret),
            "the caller saw {secret:?}: {}",
            r.text
        );
    }
    // The operator's log has the detail, under the error's id.
    let id = r.body["id"].as_str().unwrap().to_string();
    let log = s.stderr();
    let line = log
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("no line for {id} in {log}"));
    assert!(
        line.contains("KEY_UNAVAILABLE") && line.contains("t-bundle"),
        "{line}"
    );
}

fn tokens_in(file: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap_or_default()).unwrap_or(Value::Null)
}

#[test]
fn tokens_expire_and_the_server_writes_a_fresh_set() {
    let repo = ClRepo::init();
    let s = ClServer::start_with(repo.path(), repo.xdg.path(), &["--cl-token-ttl", "2s"]);
    let old = s.token("support-agent");
    let first = tokens_in(&s.credentials);
    assert!(first["expires_at"].is_string(), "{first}");
    s.get("/context/v1/requests/urn:cl:request:00", &old)
        .error(404, "REQUEST_NOT_FOUND");
    let caps = s.call("GET", "/.well-known/context-layer", &[], None);
    assert_eq!(caps.body["authentication"]["token_lifetime_seconds"], 2);
    // The renewal is the signal: the file gets a new set when the lifetime ends.
    let deadline = Instant::now() + Duration::from_secs(30);
    let renewed = loop {
        let now = tokens_in(&s.credentials);
        if now["operator"].is_string() && now["operator"] != first["operator"] {
            break now;
        }
        assert!(
            Instant::now() < deadline,
            "no renewal in {}",
            s.credentials.display()
        );
        std::thread::yield_now();
    };
    let e = s.get("/context/v1/requests/urn:cl:request:00", &old);
    e.error(401, "UNAUTHENTICATED");
    assert!(
        e.body["message"].as_str().unwrap().contains("expired"),
        "{}",
        e.text
    );
    let fresh = renewed["requesters"]["urn:ctx:agent:support-agent"]
        .as_str()
        .unwrap();
    s.get("/context/v1/requests/urn:cl:request:00", fresh)
        .error(404, "REQUEST_NOT_FOUND");
}

#[test]
fn a_page_of_another_origin_cannot_submit() {
    let repo = ClRepo::init();
    let s = ClServer::start(repo.path(), repo.xdg.path());
    let support = s.token("support-agent");
    let auth = format!("Bearer {support}");
    let req = support_request(&repo, "a.json", &[]).to_string();
    let send = |origin: &str| {
        s.call(
            "POST",
            "/context/v1/requests",
            &[
                ("Authorization", &auth),
                ("Content-Type", MEDIA),
                ("Origin", origin),
            ],
            Some(req.as_bytes()),
        )
    };
    let stored = || {
        std::fs::read_dir(repo.path().join(".ctx/exchange/decisions"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let before = stored();
    send("https://evil.example").error(403, "FORBIDDEN");
    assert_eq!(stored(), before, "nothing was stored");
    send(&s.url).expect(201);
    assert_eq!(stored(), before + 1);
}
