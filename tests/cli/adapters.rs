//! content_uri adapters end to end: file confinement, unknown schemes, --offline,
//! and HTTP from a server on 127.0.0.1 started by the test (never the internet).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::git::init_git;
use crate::support::{ctx, write, Repo};

fn manifest(adapters: &str) -> String {
    format!(
        "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\n\
         roles:\n  support:\n    include: [policies.*]\n{adapters}"
    )
}

fn object(id: &str, uri: &str, extra: &str) -> String {
    format!("id: {id}\ntype: policy\nowner: support\ncontent_uri: \"{uri}\"\n{extra}")
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn warning<'a>(bundle: &'a Value, id: &str) -> Vec<&'a Value> {
    bundle["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["id"] == id)
        .collect()
}

fn exclusion<'a>(bundle: &'a Value, id: &str) -> Option<&'a Value> {
    bundle["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
}

fn included<'a>(bundle: &'a Value, id: &str) -> Option<&'a Value> {
    bundle["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == id)
}

#[test]
fn file_content_uri_is_resolved_into_the_bundle() {
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest("")),
        ("docs/refunds.md", "Refunds within 30 days.\n"),
        (
            "context/policies/refunds.yaml",
            &object("policies.refunds", "./docs/refunds.md", ""),
        ),
    ]);
    let v = repo.ctx(&["validate"]);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    let r = repo.ctx(&["resolve", "--role", "support"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = r.json();
    let o = included(&b, "policies.refunds").expect("included");
    assert_eq!(o["content"], "Refunds within 30 days.\n");
    assert!(o.get("trust").is_none() || o["trust"] == "trusted", "{o}");
}

#[test]
fn paths_leaving_the_repository_are_refused() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("repo");
    write(
        parent.path(),
        "outside.md",
        b"TOP SECRET outside the repository",
    );
    write(&root, "opencontext.yaml", manifest("").as_bytes());
    write(
        &root,
        "context/policies/up.yaml",
        object("policies.up", "../outside.md", "").as_bytes(),
    );
    let mut files = vec!["policies.up"];
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/hostname", root.join("host.md")).unwrap();
        write(
            &root,
            "context/policies/link.yaml",
            object("policies.link", "host.md", "").as_bytes(),
        );
        files.push("policies.link");
    }
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap_or_default();

    let v = ctx(&root, &["validate"]);
    assert_eq!(v.code, 1, "{}{}", v.stdout, v.stderr);
    assert_eq!(
        v.stdout.matches("path-traversal").count(),
        files.len(),
        "{}",
        v.stdout
    );
    assert!(v.stdout.contains("../outside.md"), "{}", v.stdout);

    let r = ctx(&root, &["resolve", "--role", "support"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = r.json();
    for id in files {
        assert!(included(&b, id).is_none(), "{id} must not be included");
        let e = exclusion(&b, id).expect("excluded");
        assert_eq!(e["reason"], "source-unavailable");
        assert!(
            e["detail"]
                .as_str()
                .unwrap()
                .contains("outside the repository"),
            "{e}"
        );
        assert_eq!(warning(&b, id)[0]["code"], "path-traversal");
    }
    assert!(!r.stdout.contains("TOP SECRET"));
    if !hostname.trim().is_empty() {
        assert!(
            !r.stdout.contains(hostname.trim()),
            "hostname leaked:\n{}",
            r.stdout
        );
    }
}

#[test]
fn unknown_scheme_is_named_never_empty() {
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest("")),
        (
            "context/policies/pricing.yaml",
            &object("policies.pricing", "crm://pricing/enterprise", ""),
        ),
    ]);
    let v = repo.ctx(&["validate"]);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("unknown-scheme"), "{}", v.stdout);
    assert!(v.stdout.contains("crm://"), "{}", v.stdout);

    let r = repo.ctx(&["resolve", "--role", "support"]);
    let b = r.json();
    assert!(included(&b, "policies.pricing").is_none());
    let e = exclusion(&b, "policies.pricing").expect("excluded");
    assert!(e["detail"].as_str().unwrap().contains("`crm`"), "{e}");
    let w = warning(&b, "policies.pricing");
    assert_eq!(w[0]["code"], "unknown-scheme");
    assert!(w[0]["message"].as_str().unwrap().contains("`crm`"), "{w:?}");
}

/// Serve `routes` (path → response body) on 127.0.0.1 for up to `max` connections,
/// stopping after 10 s. Yields the request paths seen.
fn serve(routes: &[(&str, &str)], max: usize) -> (String, TcpListenerGuard) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let routes: HashMap<String, String> = routes
        .iter()
        .map(|(p, b)| (p.to_string(), b.to_string()))
        .collect();
    let h = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while seen.len() < max && Instant::now() < deadline {
            let Ok((mut s, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 65536 {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let line = String::from_utf8_lossy(&req)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            let path = line.split(' ').nth(1).unwrap_or_default().to_string();
            let resp = match routes.get(&path) {
                Some(body) => format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/markdown\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
            };
            let _ = s.write_all(resp.as_bytes());
            seen.push(path);
        }
        seen
    });
    (base, TcpListenerGuard(Some(h)))
}

struct TcpListenerGuard(Option<JoinHandle<Vec<String>>>);

impl TcpListenerGuard {
    fn seen(mut self) -> Vec<String> {
        let mut v = self.0.take().unwrap().join().unwrap();
        v.sort();
        v
    }
}

const HTTP_ON: &str =
    "adapters:\n  http:\n    enabled: true\n    allow_insecure: true\n    timeout_ms: 5000\n";

#[test]
fn http_is_fetched_untrusted_and_digest_checked() {
    let good = "Handbook v2: refunds within 30 days.\n";
    let (base, server) = serve(
        &[("/good.md", good), ("/changed.md", "changed under us\n")],
        2,
    );
    let good_uri = format!("{base}/good.md");
    let bad_uri = format!("{base}/changed.md");
    let good_obj = object(
        "policies.handbook",
        &good_uri,
        &format!(
            "trust: trusted\nsources:\n  - uri: \"{good_uri}\"\n    digest: {}\n",
            sha256(good.as_bytes())
        ),
    );
    let bad_obj = object(
        "policies.changed",
        &bad_uri,
        &format!(
            "sources:\n  - uri: \"{bad_uri}\"\n    digest: {}\n",
            sha256(b"what we reviewed\n")
        ),
    );
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest(HTTP_ON)),
        ("context/policies/handbook.yaml", &good_obj),
        ("context/policies/changed.yaml", &bad_obj),
    ]);
    let r = repo.ctx(&["resolve", "--role", "support"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = r.json();
    assert_eq!(
        server.seen(),
        vec!["/changed.md".to_string(), "/good.md".to_string()]
    );

    let o = included(&b, "policies.handbook").expect("digest matches: included");
    assert_eq!(o["content"], good);
    assert_eq!(
        o["trust"], "untrusted",
        "declared trust cannot promote fetched bytes"
    );
    assert!(warning(&b, "policies.handbook")
        .iter()
        .any(|w| w["code"] == "untrusted-content"));

    assert!(included(&b, "policies.changed").is_none());
    let e = exclusion(&b, "policies.changed").expect("digest differs: excluded");
    assert!(
        e["detail"].as_str().unwrap().contains("digest mismatch"),
        "{e}"
    );
    assert!(!r.stdout.contains("changed under us"));
}

#[test]
fn offline_refuses_http_without_any_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let uri = format!("http://{}/p.md", listener.local_addr().unwrap());
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest(HTTP_ON)),
        ("context/policies/p.yaml", &object("policies.p", &uri, "")),
    ]);
    let r = repo.ctx(&["--offline", "resolve", "--role", "support"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = r.json();
    let w = warning(&b, "policies.p");
    assert_eq!(w[0]["code"], "source-unavailable");
    assert!(
        w[0]["message"].as_str().unwrap().contains("--offline"),
        "{w:?}"
    );
    assert!(exclusion(&b, "policies.p").is_some());
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("--offline made a connection: {other:?}"),
    }
}

#[test]
fn remote_fetching_is_off_unless_the_manifest_enables_it() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let uri = format!("https://{}/p.md", listener.local_addr().unwrap());
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest("")),
        ("context/policies/p.yaml", &object("policies.p", &uri, "")),
    ]);
    let b = repo.ctx(&["resolve", "--role", "support"]).json();
    let w = warning(&b, "policies.p");
    assert!(
        w[0]["message"]
            .as_str()
            .unwrap()
            .contains("adapters.https.enabled: true"),
        "{w:?}"
    );
    assert!(listener.accept().is_err(), "no connection may be made");
}

/// `data/context.db` in `repo`, made by `sql`.
fn sqlite_db(repo: &Repo, sql: &str) {
    std::fs::create_dir_all(repo.path().join("data")).unwrap();
    rusqlite::Connection::open(repo.path().join("data/context.db"))
        .unwrap()
        .execute_batch(sql)
        .unwrap();
}

#[test]
fn git_and_sqlite_content_resolve() {
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest("")),
        ("docs/a.md", "as committed\n"),
        (
            "context/policies/a.yaml",
            &object("policies.a", "git://HEAD/docs/a.md", ""),
        ),
        (
            "context/policies/db.yaml",
            &object(
                "policies.db",
                "sqlite://./data/context.db?table=policies&id=refunds&column=body",
                "",
            ),
        ),
    ]);
    init_git(repo.path(), "one");
    repo.write("docs/a.md", "edited after the commit\n");
    sqlite_db(
        &repo,
        "CREATE TABLE policies (id TEXT PRIMARY KEY, body TEXT);
         INSERT INTO policies VALUES ('refunds', 'Refunds within 30 days.');",
    );
    let b = repo.ctx(&["resolve", "--role", "support"]).json();
    assert_eq!(
        included(&b, "policies.a").expect("git")["content"],
        "as committed\n"
    );
    let o = included(&b, "policies.db").expect("sqlite");
    assert_eq!(o["content"], "Refunds within 30 days.");
    assert_eq!(o["trust"], "verified");
}

/// Redaction reaches content from every adapter, parsed by its media type like
/// inline content (issue 9 §2): git (a JSON file at a revision), sqlite (a JSON
/// cell, declared `content_type`), http (Markdown front matter).
#[test]
fn content_from_every_adapter_is_redacted() {
    let md = "---\nname: H\nssn: HTTP-SSN-333\n---\n\nBody.\n";
    let (base, server) = serve(&[("/h.md", md)], 1);
    let redact = format!("    redact:\n      - path: ssn\n{HTTP_ON}");
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest(&redact)),
        (
            "docs/g.json",
            "{\"name\": \"G\", \"ssn\": \"GIT-SSN-111\"}\n",
        ),
        (
            "context/policies/g.yaml",
            &object("policies.g", "git://HEAD/docs/g.json", ""),
        ),
        (
            "context/policies/db.yaml",
            &object(
                "policies.db",
                "sqlite://./data/context.db?table=people&id=p&column=doc",
                "content_type: application/json\n",
            ),
        ),
        (
            "context/policies/h.yaml",
            &object("policies.h", &format!("{base}/h.md"), ""),
        ),
    ]);
    init_git(repo.path(), "one");
    sqlite_db(
        &repo,
        "CREATE TABLE people (id TEXT PRIMARY KEY, doc TEXT);
         INSERT INTO people VALUES ('p', '{\"name\": \"D\", \"ssn\": \"SQLITE-SSN-222\"}');",
    );
    let r = repo.ctx(&["resolve", "--role", "support"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(server.seen(), vec!["/h.md".to_string()]);
    for s in ["GIT-SSN-111", "SQLITE-SSN-222", "HTTP-SSN-333"] {
        assert!(!r.stdout.contains(s), "{s} leaked:\n{}", r.stdout);
    }
    let b = r.json();
    for id in ["policies.g", "policies.db", "policies.h"] {
        let o = included(&b, id).unwrap_or_else(|| panic!("{id} is served:\n{b:#}"));
        assert_eq!(o["redacted"], serde_json::json!(["ssn"]), "{o}");
    }
}
