//! Adapter plugins (§7.2, §18.3): `ctx-adapter-<scheme>` executables on PATH,
//! enabled per scheme in the manifest, speaking the JSON exchange of
//! docs/adapters.md. The plugins here are small shell scripts written by the test.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{ctx_env, Repo, MISSION};

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A repository whose `accounts` object lives in a CRM, read by a plugin.
/// `adapters` is the manifest's `adapters:` block.
fn crm_repo(adapters: &str) -> Repo {
    let manifest = format!(
        "opencontext: \"1.0\"\nid: acme\ndefaults:\n  owner: sales\ncontext:\n  mission: ./context/mission.md\n  accounts: crm://acme/accounts\ncollections:\n  notes: ./context/notes/**\nroles:\n  sales:\n    include: [mission, accounts, notes.*]\n  support:\n    include: [mission]\n{adapters}"
    );
    Repo::new(&[
        ("opencontext.yaml", &manifest),
        ("context/mission.md", MISSION),
        (
            "context/notes/ticket.md",
            "---\nid: notes.ticket\ntype: note\ncontent_uri: crm://acme/tickets/42\n---\n",
        ),
    ])
}

const ENABLED: &str = "adapters:\n  crm:\n    enabled: true\n    region: eu\n";

/// Install `ctx-adapter-crm` in a fresh bin folder: a shell script that logs each
/// request to `<bin>/requests.log` and then runs `body`.
fn plugin(body: &str) -> (tempfile::TempDir, PathBuf) {
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("requests.log");
    let script = format!(
        "#!/bin/sh\nread -r request\nprintf '%s\\n' \"$request\" >> '{}'\n{body}\n",
        log.display()
    );
    let path = bin.path().join("ctx-adapter-crm");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, log)
}

/// A plugin that answers with `content` and its digest.
fn answering(content: &str) -> (tempfile::TempDir, PathBuf) {
    let response = json!({
        "protocol": "ctx-adapter/1",
        "content": content,
        "content_type": "application/json",
        "digest": sha256(content.as_bytes()),
    });
    plugin(&format!("printf '%s' '{response}'"))
}

fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn run(repo: &Repo, bin: &Path, args: &[&str]) -> crate::support::Run {
    ctx_env(repo.path(), args, &[("PATH", &path_with(bin))])
}

fn requests(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn object<'a>(bundle: &'a Value, id: &str) -> Option<&'a Value> {
    bundle["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == id)
}

fn exclusion(bundle: &Value, id: &str) -> String {
    bundle["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not excluded: {bundle:#}"))["detail"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn an_enabled_plugin_serves_its_scheme_through_the_json_exchange() {
    let repo = crm_repo(ENABLED);
    let (bin, log) = answering("{\"accounts\":3}");
    let r = run(&repo, bin.path(), &["resolve", "--role", "sales"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = r.json();
    let accounts = object(&b, "accounts").unwrap_or_else(|| panic!("{b:#}"));
    assert_eq!(accounts["content"], "{\"accounts\":3}");
    assert_eq!(accounts["trust"], "untrusted", "a plugin's default trust");
    let sent = requests(&log);
    assert_eq!(sent.len(), 2, "one request per selected object: {sent:?}");
    let first = sent
        .iter()
        .find(|r| r["uri"] == "crm://acme/accounts")
        .unwrap();
    assert_eq!(first["protocol"], "ctx-adapter/1");
    assert_eq!(first["operation"], "load");
    assert_eq!(first["scheme"], "crm");
    assert_eq!(
        first["config"],
        json!({"region": "eu"}),
        "own keys are not passed on"
    );
    assert_eq!(
        first["root"].as_str().map(Path::new),
        Some(repo.path().canonicalize().unwrap().as_path())
    );
    assert!(first["timeout_ms"].as_u64().unwrap() > 0);
    assert!(first["max_bytes"].as_u64().unwrap() > 0);
    // validate accepts the claimed scheme and runs nothing.
    std::fs::remove_file(&log).unwrap();
    let v = run(&repo, bin.path(), &["validate", "--format", "json"]);
    assert!(!v.stdout.contains("unknown-scheme"), "{}", v.stdout);
    let d = run(&repo, bin.path(), &["doctor", "--format", "json"]);
    assert_eq!(d.json()["findings"], json!([]), "{}", d.stdout);
    assert!(
        requests(&log).is_empty(),
        "validate and doctor never run plugins"
    );
}

#[test]
fn plugins_run_only_for_authorized_selected_objects() {
    let repo = crm_repo(ENABLED);
    let (bin, log) = answering("x");
    // support may not read accounts or the ticket: nothing runs.
    let r = run(&repo, bin.path(), &["resolve", "--role", "support"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(requests(&log).is_empty());
    // Trimmed by --limit: not selected, not run.
    let r = run(
        &repo,
        bin.path(),
        &[
            "resolve",
            "--role",
            "sales",
            "--task",
            "mission refunds boring",
            "--limit",
            "1",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(object(&r.json(), "mission").is_some());
    assert!(requests(&log).is_empty(), "{:?}", requests(&log));
    // --offline: a plugin is assumed to reach the network unless the manifest says otherwise.
    let r = run(
        &repo,
        bin.path(),
        &["resolve", "--role", "sales", "--offline"],
    );
    assert!(exclusion(&r.json(), "accounts").contains("--offline"));
    assert!(requests(&log).is_empty());
    let offline_ok = crm_repo("adapters:\n  crm:\n    enabled: true\n    offline: true\n");
    let r = run(
        &offline_ok,
        bin.path(),
        &["resolve", "--role", "sales", "--offline"],
    );
    assert!(object(&r.json(), "accounts").is_some(), "{}", r.stdout);
    assert_eq!(requests(&log).len(), 2);
}

#[test]
fn a_plugin_must_be_enabled_and_on_an_absolute_path() {
    let (bin, log) = answering("x");
    // Installed but not enabled: the scheme stays unknown, and nothing runs.
    let off = crm_repo("");
    let v = run(&off, bin.path(), &["validate", "--format", "json"]);
    assert!(v.stdout.contains("unknown-scheme"), "{}", v.stdout);
    let b = run(&off, bin.path(), &["resolve", "--role", "sales"]).json();
    assert!(exclusion(&b, "accounts").contains("ctx-adapter-crm"));
    // Enabled, but the plugin sits in a relative PATH entry (the repository could plant it).
    let on = crm_repo(ENABLED);
    std::fs::create_dir_all(on.path().join("bin")).unwrap();
    std::fs::copy(
        bin.path().join("ctx-adapter-crm"),
        on.path().join("bin/ctx-adapter-crm"),
    )
    .unwrap();
    let relative = format!("bin:{}", std::env::var("PATH").unwrap_or_default());
    let r = ctx_env(
        on.path(),
        &["resolve", "--role", "sales"],
        &[("PATH", &relative)],
    );
    let detail = exclusion(&r.json(), "accounts");
    assert!(
        detail.contains("no executable `ctx-adapter-crm` is on PATH"),
        "{detail}"
    );
    // doctor names the missing plugin without running anything.
    let d = ctx_env(
        on.path(),
        &["doctor", "--format", "json"],
        &[("PATH", &relative)],
    );
    let findings = d.json()["findings"].to_string();
    assert!(
        findings.contains("no executable `ctx-adapter-crm` is on PATH"),
        "{findings}"
    );
    assert!(requests(&log).is_empty());
}

#[test]
fn a_misbehaving_plugin_is_source_unavailable_with_the_reason() {
    let good = "{\"accounts\":3}";
    let cases: Vec<(String, &str, &str)> = vec![
        ("printf 'not json'".into(), "", "invalid JSON"),
        ("echo 'crm is down' >&2; exit 3".into(), "", "failed with exit status: 3 (crm is down)"),
        (
            "printf '%s' '{\"protocol\":\"ctx-adapter/1\",\"error\":{\"message\":\"no such account\"}}'; exit 1".into(),
            "",
            "failed: no such account",
        ),
        ("exec sleep 5".into(), "    timeout_ms: 300\n", "no complete answer within 300 ms"),
        ("head -c 300000 /dev/zero | tr '\\0' x".into(), "    max_bytes: 1000\n", "more than"),
        (
            format!(
                "printf '%s' '{}'",
                json!({"protocol": "ctx-adapter/1", "content": good, "content_type": "application/json",
                       "digest": sha256(b"something else")})
            ),
            "",
            "digest",
        ),
        (
            format!(
                "printf '%s' '{}'",
                json!({"protocol": "ctx-adapter/1", "content": "x".repeat(2000), "content_type": "text/plain",
                       "digest": sha256("x".repeat(2000).as_bytes())})
            ),
            "    max_bytes: 1000\n",
            "over the 1000-byte limit",
        ),
        (
            format!(
                "printf '%s' '{}'",
                json!({"protocol": "ctx-adapter/1", "content": good, "digest": sha256(good.as_bytes())})
            ),
            "",
            "content_type",
        ),
    ];
    for (body, extra, why) in cases {
        let repo = crm_repo(&format!("{ENABLED}{extra}"));
        let (bin, _log) = plugin(&body);
        let started = std::time::Instant::now();
        let r = run(
            &repo,
            bin.path(),
            &["resolve", "--role", "sales", "--include", "accounts"],
        );
        assert_eq!(r.code, 0, "{body}: {}", r.stderr);
        let b = r.json();
        assert!(
            object(&b, "accounts").is_none(),
            "{body}: never empty content"
        );
        let detail = exclusion(&b, "accounts");
        assert!(detail.contains(why), "{body}: expected {why:?} in {detail}");
        assert!(detail.contains("ctx-adapter-crm"), "{detail}");
        let warned = b["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["id"] == "accounts" && w["code"] == "source-unavailable");
        assert!(warned, "{b:#}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(4),
            "{body}: bounded in time"
        );
    }
}
