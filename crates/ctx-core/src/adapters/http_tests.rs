//! Against a tiny server on 127.0.0.1 started by each test; never the internet.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::*;
use crate::adapters::tests::manifest_in;
use crate::adapters::{load, load_checked, AdapterError};

/// Serve `responses` in order, one per connection; give up after 10 s. Returns the
/// base URL and a handle yielding the request lines received.
fn serve(responses: Vec<Vec<u8>>) -> (String, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let h = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        for resp in responses {
            let mut stream = loop {
                match listener.accept() {
                    Ok((s, _)) => break s,
                    Err(_) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => return seen,
                }
            };
            stream.set_nonblocking(false).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 64 * 1024 {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&req);
            seen.push(text.lines().next().unwrap_or_default().to_string());
            let _ = stream.write_all(&resp);
        }
        seen
    });
    (base, h)
}

fn ok(body: &str, content_type: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn redirect(to: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()
}

const INSECURE: &str =
    "adapters:\n  http:\n    enabled: true\n    allow_insecure: true\n    timeout_ms: 3000\n";

#[test]
fn fetches_untrusted_content_with_its_digest() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), INSECURE);
    let (base, h) = serve(vec![ok("# Handbook\n", "text/markdown; charset=utf-8")]);
    let l = load(
        &format!("{base}/handbook.md"),
        &m,
        &AdapterOptions::default(),
    )
    .unwrap();
    assert_eq!(l.content, Value::String("# Handbook\n".into()));
    assert_eq!(l.trust, Trust::Untrusted);
    assert_eq!(l.content_type.as_deref(), Some("text/markdown"));
    assert_eq!(l.digest, digest(b"# Handbook\n"));
    assert_eq!(
        h.join().unwrap(),
        vec!["GET /handbook.md HTTP/1.1".to_string()]
    );
}

#[test]
fn declared_digest_must_match() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), INSECURE);
    let (base, h) = serve(vec![ok("v1", "text/plain"), ok("v2", "text/plain")]);
    let uri = format!("{base}/doc");
    let v1 = digest(b"v1");
    assert!(load_checked(&uri, Some(&v1), &m, &AdapterOptions::default()).is_ok());
    let e = load_checked(&uri, Some(&v1), &m, &AdapterOptions::default()).unwrap_err();
    assert!(matches!(e, AdapterError::DigestMismatch { .. }), "{e}");
    h.join().unwrap();
}

#[test]
fn plaintext_http_needs_allow_insecure() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), "adapters:\n  http:\n    enabled: true\n");
    // Nothing listens: the refusal happens before any connection.
    let e = load("http://127.0.0.1:9/x", &m, &AdapterOptions::default()).unwrap_err();
    assert!(e.to_string().contains("allow_insecure"), "{e}");
}

#[test]
fn responses_over_the_cap_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), INSECURE);
    let big = "x".repeat(2000);
    // One with an honest Content-Length, one that streams without any.
    let chunked = format!("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{big}").into_bytes();
    let (base, h) = serve(vec![ok(&big, "text/plain"), chunked]);
    let opts = AdapterOptions {
        max_bytes: 1000,
        ..AdapterOptions::default()
    };
    for _ in 0..2 {
        let e = load(&format!("{base}/big"), &m, &opts).unwrap_err();
        assert!(e.to_string().contains("larger than 1000 bytes"), "{e}");
    }
    h.join().unwrap();
}

#[test]
fn a_silent_server_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(
        dir.path(),
        "adapters:\n  http:\n    enabled: true\n    allow_insecure: true\n    timeout_ms: 300\n",
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}/slow", listener.local_addr().unwrap());
    let start = Instant::now();
    let e = load(&uri, &m, &AdapterOptions::default()).unwrap_err();
    assert!(e.to_string().contains("within 300 ms"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(5));
    drop(listener);
}

#[test]
fn redirects_keep_their_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), INSECURE);
    let (base, h) = serve(vec![redirect("/moved.md"), ok("moved", "text/markdown")]);
    let l = load(&format!("{base}/old.md"), &m, &AdapterOptions::default()).unwrap();
    assert_eq!(l.content, Value::String("moved".into()));
    assert_eq!(h.join().unwrap()[1], "GET /moved.md HTTP/1.1");

    let (base, h) = serve(vec![redirect("file:///etc/hostname")]);
    let e = load(&format!("{base}/x"), &m, &AdapterOptions::default()).unwrap_err();
    assert!(e.to_string().contains("another scheme"), "{e}");
    h.join().unwrap();
}

#[test]
fn error_statuses_are_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest_in(dir.path(), INSECURE);
    let (base, h) = serve(vec![
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    ]);
    let e = load(&format!("{base}/gone"), &m, &AdapterOptions::default()).unwrap_err();
    assert!(e.to_string().contains("HTTP 404"), "{e}");
    h.join().unwrap();
}

#[test]
fn location_joining() {
    let base: Uri = "https://h.example/a/b.md".parse().unwrap();
    assert_eq!(join(&base, "c.md").unwrap(), "https://h.example/a/c.md");
    assert_eq!(join(&base, "/c.md").unwrap(), "https://h.example/c.md");
    assert_eq!(join(&base, "//o.example/c").unwrap(), "https://o.example/c");
    assert_eq!(join(&base, "http://o/c").unwrap(), "http://o/c");
}
