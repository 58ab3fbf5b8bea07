//! OpenContext v1 requirements that no official fixture pins: diagnostics when the
//! manifest cannot be loaded (§15.1), the doctor's `ok`, severity order, URI
//! entries in the manifest (§7.1, §7.3), secret detection (§8.8) and the
//! reference CLI's `--at` / `--output` on the report commands.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::ops_support::healthy;
use crate::support::{project_root, Repo, MISSION};

const AT: &str = "2026-09-01T00:00:00Z";

/// The healthy fixture plus an object that has expired by [`AT`].
fn with_expired() -> Repo {
    let repo = healthy();
    repo.write(
        "context/policies/expired.md",
        "---\nid: policies.expired\ntype: policy\nowner: support\nupdated: 2026-08-01T00:00:00Z\nexpires: 2026-08-15T00:00:00Z\n---\n\nGone.\n",
    );
    repo
}

/// Validate a report against the project's diagnostic schema.
fn assert_diagnostic_document(doc: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(project_root().join("schemas/diagnostic.schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{doc:#}");
}

fn codes(doc: &Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_manifest_that_cannot_load_still_gets_a_diagnostic_document() {
    for (manifest, line, needle) in [
        (
            "opencontext: \"1.0\"\nid: acme\nroles: [oops\n",
            None,
            "cannot parse the manifest",
        ),
        (
            "opencontext: \"2.0\"\nid: acme\n",
            Some(1),
            "version 2.0 is not supported",
        ),
        ("- just\n- a list\n", Some(1), "must be a mapping"),
    ] {
        let repo = Repo::new(&[("opencontext.yaml", manifest)]);
        for cmd in ["validate", "doctor", "conflicts", "stale"] {
            let r = repo.ctx(&[cmd, "--format", "json"]);
            assert_eq!(r.code, 1, "{cmd}: {}{}", r.stdout, r.stderr);
            let doc = r.json();
            assert_diagnostic_document(&doc);
            assert_eq!(doc["ok"], false, "{cmd}");
            assert_eq!(
                codes(&doc),
                vec![("manifest-invalid".into(), "error".into())]
            );
            let f = &doc["findings"][0];
            assert_eq!(f["file"], "opencontext.yaml");
            assert!(f["message"].as_str().unwrap().contains(needle), "{f}");
            assert!(f["line"].as_u64().is_some(), "positioned: {f}");
            if let Some(l) = line {
                assert_eq!(f["line"], l);
            }
            assert!(f["remediation"].is_string(), "{f}");
        }
        // SARIF and GitHub annotations are documents too.
        let sarif = repo.ctx(&["validate", "--format", "sarif"]);
        assert_eq!(
            sarif.json()["runs"][0]["results"][0]["ruleId"],
            "manifest-invalid"
        );
        let gh = repo.ctx(&["doctor", "--format", "github"]);
        assert!(
            gh.stdout
                .starts_with("::error title=manifest-invalid,file=opencontext.yaml"),
            "{}",
            gh.stdout
        );
    }
}

#[test]
fn manifest_parse_errors_get_a_code_frame_for_people() {
    let repo = Repo::new(&[(
        "opencontext.yaml",
        "opencontext: \"1.0\"\nid: acme\nroles:\n  support: {include: [a, }\n",
    )]);
    for cmd in ["validate", "doctor"] {
        let r = repo.ctx(&[cmd]);
        assert_eq!(r.code, 1);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
        // The offending line is quoted, with its number.
        assert!(
            r.stderr.contains("support: {include: [a, }"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("opencontext.yaml:4"), "{}", r.stderr);
        assert!(
            r.stderr.contains("the manifest cannot be loaded"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn doctor_is_not_ok_while_error_findings_exist() {
    let repo = with_expired();
    let r = repo.ctx(&["doctor", "--at", AT, "--format", "json"]);
    // Without --strict the gates pass (exit 0), but an expired object is an error.
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_diagnostic_document(&doc);
    assert!(codes(&doc).contains(&("expired".into(), "error".into())));
    assert_eq!(doc["ok"], false, "{doc:#}");
    // A clean repository is ok.
    let doc = healthy()
        .ctx(&["doctor", "--at", AT, "--format", "json"])
        .json();
    assert_eq!(doc["ok"], true, "{doc:#}");
}

#[test]
fn findings_are_listed_most_severe_first_in_every_format() {
    let repo = healthy();
    // By file name the warning comes first; by severity the error must.
    repo.write(
        "context/notes/aaa.md",
        "---\nid: notes.aaa\ntype: note\nupdated: 2026-08-01T00:00:00Z\n---\nNo owner.\n",
    );
    repo.write(
        "context/notes/zzz.md",
        "---\nid: notes.zzz\ntype: note\nowner: support\nauthority: gospel\n---\nBad.\n",
    );
    let doc = repo.ctx(&["validate", "--format", "json"]).json();
    let severities: Vec<String> = codes(&doc).into_iter().map(|c| c.1).collect();
    assert_eq!(
        severities.first().map(String::as_str),
        Some("error"),
        "{severities:?}"
    );
    let mut sorted = severities.clone();
    sorted.sort_by_key(|s| match s.as_str() {
        "error" => 0,
        "warning" => 1,
        _ => 2,
    });
    assert_eq!(severities, sorted);
    let human = repo.ctx(&["validate"]).stdout;
    let err = human.find("notes.zzz").expect("error shown");
    let warn = human.find("notes.aaa").expect("warning shown");
    assert!(err < warn, "{human}");
    let gh = repo
        .ctx(&["doctor", "--at", AT, "--format", "github"])
        .stdout;
    assert!(gh.starts_with("::error "), "{gh}");
    let sarif = repo.ctx(&["validate", "--format", "sarif"]).json();
    assert_eq!(sarif["runs"][0]["results"][0]["level"], "error");
}

#[test]
fn report_commands_take_at_and_output() {
    let repo = healthy();
    for cmd in ["validate", "doctor", "conflicts", "stale"] {
        let r = repo.ctx(&[cmd, "--at", "2026-09-01"]);
        assert_eq!(r.code, 0, "{cmd}: {}{}", r.stdout, r.stderr);
        let bad = repo.ctx(&[cmd, "--at", "next tuesday"]);
        assert_eq!(bad.code, 2, "{cmd}");
        assert!(bad.stderr.contains("--at"), "{}", bad.stderr);
        let out = repo.path().join(format!("{cmd}.json"));
        let r = repo.ctx(&[
            cmd,
            "--at",
            AT,
            "--format",
            "json",
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{cmd}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{cmd}: {}", r.stdout);
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_diagnostic_document(&doc);
    }
    let out = repo.path().join("conformance.txt");
    let suite = project_root().join("conformance");
    let r = repo.ctx(&[
        "conformance",
        suite.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("conformance:"));
}

/// Answer one HTTP request on 127.0.0.1 with `body`; yields the base URL.
fn serve_once(body: &'static str) -> (String, std::thread::JoinHandle<bool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let h = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let Ok((mut s, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/markdown\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(resp.as_bytes());
            return true;
        }
        false
    });
    (base, h)
}

#[test]
fn manifest_uris_are_loaded_through_adapters_or_refused() {
    let (base, server) = serve_once("Handbook: refunds within 30 days.\n");
    let manifest = format!(
        "opencontext: \"1.0\"\nid: acme\ndefaults:\n  owner: ops\ncontext:\n  mission: ./context/mission.md\n  handbook: {base}/handbook.md\n  accounts: crm://acme/accounts\ncollections:\n  wiki: https://example.invalid/wiki/**\nroles:\n  support:\n    include: [\"*\"]\nadapters:\n  http:\n    enabled: true\n    allow_insecure: true\n    timeout_ms: 5000\n"
    );
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest),
        ("context/mission.md", MISSION),
    ]);
    // validate: the unknown scheme is an error at the line that names it; known ones are fine.
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let doc = r.json();
    let unknown: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "unknown-scheme")
        .collect();
    assert_eq!(unknown.len(), 1, "{doc:#}");
    assert_eq!(unknown[0]["id"], "accounts");
    assert_eq!(unknown[0]["file"], "opencontext.yaml");
    assert_eq!(unknown[0]["line"], 8);
    assert!(
        !doc["findings"].to_string().contains("matches no files"),
        "a URI collection is not a glob: {doc:#}"
    );
    // doctor reports it too.
    let doctor = repo.ctx(&["doctor", "--format", "json", "--at", AT]).json();
    assert!(codes(&doctor).contains(&("unknown-scheme".into(), "error".into())));
    // resolve: http content is fetched (the adapter's rules apply), the https
    // collection is refused as the http adapter's rules say (here: example.invalid
    // is not reachable offline), and the unknown scheme is reported, never empty.
    let r = repo.ctx(&["resolve", "--role", "support", "--offline"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = r.json();
    let excluded = |id: &str| {
        b["excluded"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .cloned()
    };
    assert!(excluded("handbook").unwrap()["detail"]
        .as_str()
        .unwrap()
        .contains("--offline"));
    assert!(excluded("accounts").unwrap()["detail"]
        .as_str()
        .unwrap()
        .contains("`crm`"));
    assert!(excluded("wiki").is_some());
    let warned: Vec<&str> = b["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["id"] == "accounts")
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert_eq!(warned, vec!["unknown-scheme"]);
    let online = repo.ctx(&["resolve", "--role", "support"]).json();
    let handbook = online["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "handbook")
        .unwrap_or_else(|| panic!("{online:#}"));
    assert_eq!(handbook["content"], "Handbook: refunds within 30 days.\n");
    assert_eq!(handbook["trust"], "untrusted");
    assert!(server.join().unwrap(), "the entry was fetched over http");
}

#[test]
fn committed_credentials_are_found_and_placeholders_are_not() {
    let repo = healthy();
    repo.write(
        "context/notes/db.yaml",
        "id: notes.db\ntype: note\nowner: ops\ndb:\n  host: db.internal\n  password: Tr0ub4dor-3x\n",
    );
    repo.write(
        "context/notes/api.md",
        "---\nid: notes.api\ntype: note\nowner: ops\n---\nCall it with\n\n    Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n",
    );
    repo.write(
        "context/notes/setup.md",
        "---\nid: notes.setup\ntype: note\nowner: ops\n---\nSet the database password:\n\n```\nDB_PASSWORD=${DB_PASSWORD}\npassword: <password>\nsecret: changeme\napi_key: '********'\n```\n",
    );
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert_eq!(r.code, 1);
    let found: Vec<(String, u64)> = r.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "secret-detected")
        .map(|f| {
            (
                f["file"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![
            ("context/notes/api.md".to_string(), 8),
            ("context/notes/db.yaml".to_string(), 6),
        ]
    );
    assert!(
        !r.stdout.contains("Tr0ub4dor"),
        "the secret is never echoed"
    );
}
