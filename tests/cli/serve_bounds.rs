//! The bounds of `ctx serve`'s door, against a running server with raw sockets
//! and a real HTTP client: idle sockets under a 256-descriptor limit do not lock
//! the user out; a connection that never finishes its headers, a kept-alive one
//! that goes quiet, and a body that never arrives are all cut at their bound; a
//! body is not read for a caller without a valid bearer; failed token requests
//! are limited per address and audited in bounded form; the session token has a
//! rate limit; a web page of another origin cannot unlock.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::serve_support::{Running, Vault, CONSUMER_SECRET, PASSWORD};

/// How long a test waits for something the server must do before failing.
const GUARD: Duration = Duration::from_secs(20);

fn connect(s: &Running) -> TcpStream {
    let addr: SocketAddr = s.addr().parse().expect("address");
    let t = TcpStream::connect_timeout(&addr, GUARD).expect("connect");
    t.set_read_timeout(Some(GUARD)).unwrap();
    t
}

/// Read until the server closes the connection; fails the test if it is still
/// open after [`GUARD`].
fn until_closed(t: &mut TcpStream) -> (String, Duration) {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match t.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "the server kept the connection open for {:?} ({e}); read so far: {}",
                start.elapsed(),
                String::from_utf8_lossy(&got)
            ),
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), start.elapsed())
}

/// Read one response (head and `content-length` body) from a kept-alive connection.
fn one_response(t: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = t.read(&mut buf).expect("a response");
        assert!(n > 0, "closed before a response");
        got.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&got[..head_end]).to_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().expect("length"))
        .unwrap_or(0);
    while got.len() < head_end + len {
        let n = t.read(&mut buf).expect("the body");
        assert!(n > 0, "closed inside the body");
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

fn status_of(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {response:?}"))
}

fn body_of(response: &str) -> Value {
    let (_, body) = response.split_once("\r\n\r\n").expect("head and body");
    serde_json::from_str(body).unwrap_or(Value::Null)
}

fn audit_lines(v: &Vault) -> usize {
    std::fs::read_to_string(v.dir().join(".ctx/personal/audit.jsonl"))
        .expect("audit log")
        .lines()
        .count()
}

#[cfg(target_os = "linux")]
#[test]
fn idle_sockets_under_a_256_descriptor_limit_do_not_lock_the_user_out() {
    let v = Vault::create();
    // Long timeouts: only the connection cap and its eviction keep the door open.
    let s = v.serve_via(
        &["sh", "-c", "ulimit -n 256 && exec \"$0\" \"$@\""],
        &["--header-timeout", "60s", "--keep-alive-timeout", "60s"],
    );
    let idle: Vec<TcpStream> = (0..306).map(|_| connect(&s)).collect();
    // The user's own requests still get through, and a real unlock too.
    s.get("/context/status", None).expect(200);
    let user = s.unlock(&v);
    s.get("/context/fields", Some(&user)).expect(200);
    // The server keeps at most 256 - 64 = 192 connections: the longest-waiting
    // idle ones were closed to make room.
    let deadline = Instant::now() + GUARD;
    let closed = loop {
        let closed = idle
            .iter()
            .filter(|t| {
                let mut t: &TcpStream = t;
                t.set_nonblocking(true).unwrap();
                let mut b = [0u8; 1];
                match t.read(&mut b) {
                    Ok(0) => true,
                    Err(e) => e.kind() == ErrorKind::ConnectionReset,
                    Ok(_) => false,
                }
            })
            .count();
        if closed >= 306 - 192 || Instant::now() > deadline {
            break closed;
        }
        std::thread::yield_now();
    };
    assert!(
        closed >= 306 - 192,
        "only {closed} idle sockets were closed"
    );
}

#[test]
fn connections_that_send_nothing_are_closed_at_their_bound() {
    let v = Vault::create();
    let s = v.serve(&["--header-timeout", "200ms", "--keep-alive-timeout", "300ms"]);
    let host = s.addr();

    // Headers that never end: closed after the header timeout, unanswered.
    let mut slow = connect(&s);
    slow.write_all(format!("GET /context/status HTTP/1.1\r\nHost: {host}\r\n").as_bytes())
        .unwrap();
    let (said, took) = until_closed(&mut slow);
    assert_eq!(
        said, "",
        "a request without its end of headers is not answered"
    );
    assert!(took >= Duration::from_millis(150), "closed after {took:?}");

    // Nothing at all: the same.
    let (said, _) = until_closed(&mut connect(&s));
    assert_eq!(said, "");

    // A kept-alive connection: answered, then closed once quiet for the keep-alive timeout.
    let mut kept = connect(&s);
    for _ in 0..2 {
        kept.write_all(format!("GET /context/status HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
            .unwrap();
        assert_eq!(status_of(&one_response(&mut kept)), 200);
    }
    let (said, took) = until_closed(&mut kept);
    assert_eq!(said, "");
    assert!(took >= Duration::from_millis(250), "closed after {took:?}");

    // And the door is still open.
    s.get("/context/status", None).expect(200);
}

#[test]
fn a_body_is_read_only_for_a_known_bearer_and_only_for_so_long() {
    let v = Vault::create();
    let s = v.serve(&["--body-timeout", "300ms"]);
    let host = s.addr();
    let user = s.unlock(&v);

    // 16 MB announced, none sent: no bearer, or an unknown one, is refused at
    // once, and the connection closed rather than left reading.
    for auth in ["", "Authorization: Bearer ctx_0123456789abcdef\r\n"] {
        let mut t = connect(&s);
        t.write_all(
            format!(
                "POST /context/import HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\nContent-Length: 16000000\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
        // 401, not a 408 after the body timeout: the body was not waited for.
        let (r, _) = until_closed(&mut t);
        assert_eq!(status_of(&r), 401, "{r}");
        assert_eq!(body_of(&r)["constraint"], "unauthenticated", "{r}");
        assert!(r.to_lowercase().contains("connection: close"), "{r}");
    }

    // The user's session: the body is waited for, up to the body timeout (408).
    let mut t = connect(&s);
    t.write_all(
        format!(
            "PUT /context/fields/preferences.bounds HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {user}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"value\": "
        )
        .as_bytes(),
    )
    .unwrap();
    let (r, took) = until_closed(&mut t);
    assert_eq!(status_of(&r), 408, "{r}");
    assert_eq!(body_of(&r)["constraint"], "request_timeout", "{r}");
    assert!(took >= Duration::from_millis(250), "408 after {took:?}");
    // Nothing was written.
    s.get("/context/fields/preferences.bounds", Some(&user))
        .refused(404, "not_found");
}

#[test]
fn failed_token_requests_are_limited_per_address_and_audited_in_bounded_form() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    s.send(
        "POST",
        "/context/consumers/register",
        Some(&user),
        json!({"name": "real", "secret": CONSUMER_SECRET}),
    )
    .expect(201);
    let before = audit_lines(&v);
    let mut codes = Vec::new();
    for i in 0..200 {
        let r = s.send(
            "POST",
            "/context/tokens/service",
            None,
            json!({"consumer": format!("made-up-{i}"), "secret": "guess", "scope": "*"}),
        );
        if r.status == 429 {
            assert_eq!(r.body["constraint"], "rate_limited", "{}", r.text);
            assert!(r.retry_after.is_some(), "429 without Retry-After");
        }
        codes.push(r.status);
    }
    let checked = codes.iter().filter(|&&c| c == 401).count();
    assert!(codes[..10].iter().all(|&c| c == 401), "{codes:?}");
    assert!(checked <= 12, "{checked} attempts were checked: {codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 429).count(), 200 - checked);
    // Keyed by the address, not by the name: a real consumer from the same
    // address waits too.
    s.send(
        "POST",
        "/context/tokens/service",
        None,
        json!({"consumer": "real", "secret": CONSUMER_SECRET, "scope": "*"}),
    )
    .refused(429, "rate_limited");
    // One entry in full, however many attempts.
    assert_eq!(audit_lines(&v) - before, 1);
    // Locking closes the window: one summary with the count.
    s.raw("POST", "/context/lock", Some(&user), None, None)
        .expect(200);
    assert_eq!(audit_lines(&v) - before, 3, "the summary and the lock");
    let user = s.unlock(&v);
    let audit = s.get("/context/audit?limit=10", Some(&user));
    let lines: Vec<&str> = audit.body["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let summary = lines
        .iter()
        .find(|l| l.contains("(unauthenticated)"))
        .unwrap_or_else(|| panic!("no summary in {lines:#?}"));
    assert!(
        summary.contains("200 more token requests with wrong consumer credentials"),
        "{summary}"
    );
    assert!(
        summary.contains("made-up-1") && summary.contains("more"),
        "{summary}"
    );
    assert!(summary.contains("from 127.0.0.1"), "{summary}");
    assert!(!summary.contains("guess") && !summary.contains(CONSUMER_SECRET));
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("wrong consumer credentials") && l.contains("made-up-0"))
            .count(),
        1
    );
}

#[test]
fn the_session_token_has_a_rate_limit_and_can_always_lock() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    let mut ok = 0;
    let limited = loop {
        let r = s.get("/context/fields", Some(&user));
        if r.status == 429 {
            break r;
        }
        r.expect(200);
        ok += 1;
        assert!(ok < 5000, "no limit after {ok} reads");
    };
    assert!(
        (60..70).contains(&ok),
        "limited after {ok} reads (seed 004 §7: 60 a minute)"
    );
    assert_eq!(
        limited.body["constraint"], "rate_limited",
        "{}",
        limited.text
    );
    let wait: u64 = limited
        .retry_after
        .as_deref()
        .and_then(|r| r.parse().ok())
        .expect("Retry-After seconds");
    assert!(wait >= 1);
    // Management is not a field read: the user can still lock.
    s.raw("POST", "/context/lock", Some(&user), None, None)
        .expect(200);
}

#[test]
fn state_changes_from_another_origin_are_refused() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let body = json!({"password": PASSWORD, "secret_key": v.secret_key()}).to_string();
    let unlock = |origin: Option<&str>| {
        let mut r = s
            .agent
            .post(format!("{}/context/unlock", s.url))
            .header("Content-Type", "application/json");
        if let Some(o) = origin {
            r = r.header("Origin", o);
        }
        let mut resp = r.send(body.as_bytes()).expect("unlock");
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        (status, text)
    };
    for evil in ["https://evil.example", "null", "http://127.0.0.1:1"] {
        let (status, text) = unlock(Some(evil));
        assert_eq!(status, 403, "{evil}: {text}");
        assert!(text.contains("cross_origin"), "{text}");
        assert!(!text.contains("ctx_"), "a session token leaked: {text}");
    }
    assert!(s.get("/context/status", None).body["locked"] == true);
    // The server's own origin, and clients that send none, are served.
    let (status, text) = unlock(Some(&s.url));
    assert_eq!(status, 200, "{text}");
    let token: Value = serde_json::from_str(&text).unwrap();
    s.raw("POST", "/context/lock", token["token"].as_str(), None, None)
        .expect(200);
    assert_eq!(unlock(None).0, 200);
}

#[test]
fn when_every_connection_is_busy_a_new_one_is_told_so() {
    let v = Vault::create();
    let s = v.serve(&["--max-connections", "2", "--body-timeout", "30s"]);
    let host = s.addr();
    let user = s.unlock(&v);
    // Two uploads in progress hold both connections (busy: not evicted). The
    // server's `100 Continue` says the handler is reading the body.
    let busy: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut t = connect(&s);
            t.write_all(
                format!(
                    "PUT /context/fields/preferences.slow HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {user}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"
                )
                .as_bytes(),
            )
            .unwrap();
            let mut b = [0u8; 25];
            t.read_exact(&mut b).expect("100 Continue");
            assert!(b.starts_with(b"HTTP/1.1 100 Continue"), "{:?}", String::from_utf8_lossy(&b));
            t.write_all(b"{").unwrap();
            t
        })
        .collect();
    let mut t = connect(&s);
    t.write_all(format!("GET /context/status HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
        .unwrap();
    let (full, _) = until_closed(&mut t);
    assert_eq!(status_of(&full), 503, "{full}");
    assert_eq!(body_of(&full)["constraint"], "unavailable", "{full}");
    assert!(full.to_lowercase().contains("retry-after: 1"), "{full}");
    drop(busy);
    // Once they end, the door opens again (raw sockets: the client's pooled
    // connection was one of those closed to make room).
    let deadline = Instant::now() + GUARD;
    loop {
        let mut t = connect(&s);
        t.write_all(
            format!("GET /context/status HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        let (r, _) = until_closed(&mut t);
        if r.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(Instant::now() < deadline, "the door stayed shut: {r}");
    }
}

#[test]
fn a_connection_cap_beyond_the_descriptor_limit_is_refused() {
    let v = Vault::create();
    let r = crate::support::ctx_in(&v.repo)
        .args([
            "-C",
            "v",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-prompt",
            "--max-connections",
            "4000",
        ])
        .via(&["sh", "-c", "ulimit -n 256 && exec \"$0\" \"$@\""])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--max-connections 4000") && r.stderr.contains("at most 192"),
        "{}",
        r.stderr
    );
}
