//! `ctx provider sign|verify|trust`, and every committed delegated-provider
//! vector replayed through the CLI.

use std::path::Path;

use serde_json::{json, Value};

use super::Signer;
use crate::support::{ctx, project_root, write};

const BINDING: &str = r#"{"run_id":"run-1","turn_id":"turn-1","session_id":"session-1","agent_id":"support-agent","user_id":"user-opaque-1","workspace_id":"acme"}"#;

pub(crate) fn files(s: &Signer) {
    write(s.path(), "host/binding.json", BINDING.as_bytes());
    write(
        s.path(),
        "host/other-turn.json",
        BINDING.replace("turn-1", "turn-2").as_bytes(),
    );
    let t = s.run(&[
        "provider",
        "trust",
        "--key",
        "release-bot",
        "--workspace",
        "acme",
    ]);
    assert_eq!(t.code, 0, "{}", t.stderr);
    write(s.path(), "host/trust.json", t.stdout.as_bytes());
}

#[test]
fn a_signed_bundle_becomes_an_envelope_the_host_accepts_once_per_turn() {
    let s = Signer::new("");
    s.key("release-bot");
    s.signed_bundle("support");
    files(&s);
    let r = s.run(&[
        "provider",
        "sign",
        "--bundle",
        ".ctx/bundles/support.json",
        "--binding",
        "host/binding.json",
        "--key",
        "release-bot",
        "-o",
        "host/envelope.json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let env: Value = serde_json::from_str(
        &std::fs::read_to_string(s.path().join("host/envelope.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(env["decision"], "inject");
    assert_eq!(env["receipt"]["contract_id"], "ctx.receipt.v1");
    assert_eq!(
        env["receipt"]["id"].as_str().unwrap().get(..16),
        Some("urn:ctx:receipt:")
    );

    let verify = |binding: &str, extra: &[&str]| {
        let mut args = vec![
            "provider",
            "verify",
            "host/envelope.json",
            "--trust",
            "host/trust.json",
            "--binding",
            binding,
            "--state",
            "host/state",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        s.run(&args)
    };
    let ok = verify("host/binding.json", &["--context-out", "host/context.md"]);
    assert_eq!(ok.code, 0, "{}{}", ok.stdout, ok.stderr);
    let ev = ok.json()["evidence"].clone();
    assert_eq!(
        (
            ev["provider.authorization"].as_str(),
            ev["acceptance"].as_str()
        ),
        (Some("verified"), Some("accepted"))
    );
    let context = std::fs::read_to_string(s.path().join("host/context.md")).unwrap();
    assert!(
        context.starts_with("# Context for agent `support-agent`"),
        "{context}"
    );
    assert!(context.contains("Make refunds boring."));
    assert_eq!(ev["context_byte_length"], json!(context.len()));
    assert_eq!(
        verify("host/binding.json", &[]).json()["evidence"]["acceptance"],
        "idempotent_retry"
    );

    let bad = verify("host/other-turn.json", &[]);
    assert_eq!(bad.code, 1);
    assert_eq!(bad.json()["failure"]["code"], "turn_scope_binding");
    let human = s.run(&[
        "provider",
        "verify",
        "host/envelope.json",
        "--trust",
        "host/trust.json",
        "--binding",
        "host/other-turn.json",
    ]);
    assert_eq!(human.code, 1);
    assert!(
        human
            .stdout
            .starts_with("rejected: turn_scope_binding: /binding/turn_id"),
        "{}",
        human.stdout
    );

    // A withholding decision for the same turn is a second result: refused.
    let w = s.run(&[
        "provider",
        "sign",
        "--withhold",
        "POLICY_DENIED",
        "--bundle",
        ".ctx/bundles/support.json",
        "--binding",
        "host/binding.json",
        "--key",
        "release-bot",
        "-o",
        "host/withhold.json",
    ]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    let second = s.run(&[
        "provider",
        "verify",
        "host/withhold.json",
        "--trust",
        "host/trust.json",
        "--binding",
        "host/binding.json",
        "--state",
        "host/state",
        "--format",
        "json",
    ]);
    assert_eq!(
        second.json()["failure"]["code"],
        "turn",
        "{}",
        second.stdout
    );
    let alone = s.run(&[
        "provider",
        "verify",
        "host/withhold.json",
        "--trust",
        "host/trust.json",
        "--binding",
        "host/binding.json",
        "--no-state",
        "--format",
        "json",
    ]);
    assert_eq!(alone.code, 0, "{}", alone.stdout);
    assert_eq!(
        alone.json()["evidence"]["provider.authorization"],
        "withheld"
    );
}

#[test]
fn provider_sign_refuses_tampered_bundles_and_missing_receipts() {
    let s = Signer::new("");
    s.key("release-bot");
    files(&s);
    let r = s.run(&["bundle", "--agent", "support-agent", "-o", "unsigned.json"]);
    assert_eq!(r.code, 0);
    let r = s.run(&[
        "provider",
        "sign",
        "--bundle",
        "unsigned.json",
        "--binding",
        "host/binding.json",
        "--key",
        "release-bot",
    ]);
    assert_eq!(r.code, 3, "a missing receipt is not found");
    assert!(
        r.stderr.contains("no receipt for bundle") && r.stdout.is_empty(),
        "{}",
        r.stderr
    );
    s.signed_bundle("support");
    let text = std::fs::read_to_string(s.path().join(".ctx/bundles/support.json")).unwrap();
    write(
        s.path(),
        "tampered.json",
        text.replace("boring", "exciting").as_bytes(),
    );
    let r = s.run(&[
        "provider",
        "sign",
        "--bundle",
        "tampered.json",
        "--binding",
        "host/binding.json",
        "--key",
        "release-bot",
    ]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("not an intact bundle"), "{}", r.stderr);
}

/// Run one step of a vector through `ctx provider verify`.
fn step(dir: &Path, vectors: &Path, stores: &Value, s: &Value, state: &str) -> (i32, Value) {
    write(dir, "binding.json", s["binding"].to_string().as_bytes());
    write(
        dir,
        "trust.json",
        stores[s["trust"].as_str().unwrap()].to_string().as_bytes(),
    );
    let envelope = vectors.join(s["envelope"].as_str().unwrap());
    let r = ctx(
        dir,
        &[
            "provider",
            "verify",
            envelope.to_str().unwrap(),
            "--trust",
            "trust.json",
            "--binding",
            "binding.json",
            "--at",
            s["at"].as_str().unwrap(),
            "--state",
            state,
            "--allow-fixture-keys",
            "--format",
            "json",
        ],
    );
    (r.code, r.json())
}

/// The vector test: all 45 committed vectors (the 23 reference cases
/// replayed on ctx's fixtures plus ctx's own), each step a real process
/// sharing the vector's acceptance state.
#[test]
fn every_committed_provider_vector_gives_its_expected_result_through_the_cli() {
    let vectors = project_root().join("fixtures/provider-vectors");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(vectors.join("vectors.json")).unwrap())
            .unwrap();
    let list = doc["vectors"].as_array().unwrap();
    assert_eq!(
        list.len() as u64,
        doc["positive"].as_u64().unwrap() + doc["negative"].as_u64().unwrap()
    );
    let dir = tempfile::tempdir().unwrap();
    let mut steps = 0;
    for (n, v) in list.iter().enumerate() {
        let state = format!("state-{n}");
        for s in v["steps"].as_array().unwrap() {
            steps += 1;
            let (code, out) = step(dir.path(), &vectors, &doc["trust_stores"], s, &state);
            let e = &s["expect"];
            let id = v["id"].as_str().unwrap();
            if e["outcome"] == "accepted" {
                assert_eq!(code, 0, "{id}: {out}");
                let ev = &out["evidence"];
                assert_eq!(ev["decision"], e["decision"], "{id}");
                assert_eq!(ev["acceptance"], e["acceptance"], "{id}");
                assert_eq!(ev["context_sha256"], e["context_sha256"], "{id}");
                assert_eq!(
                    ev["withhold_reason"]
                        .get("code")
                        .cloned()
                        .unwrap_or(Value::Null),
                    e["withhold_code"],
                    "{id}"
                );
            } else {
                assert_eq!(code, 1, "{id}: {out}");
                assert_eq!(out["failure"]["code"], e["code"], "{id}: {out}");
            }
        }
    }
    assert_eq!(steps, 53);
}

/// The AtMem reference fixtures themselves, byte for byte.
#[test]
fn atmem_reference_fixtures_verify_through_the_cli() {
    let refdir = project_root().join("../shared/reference/atmem-delegated-provider-v1");
    if !refdir.join("trust.json").is_file() {
        eprintln!("note: {} absent; skipped", refdir.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trust = refdir.join("trust.json");
    for (file, decision, sha) in [
        (
            "inject.valid.json",
            "inject",
            json!("b9daebf92b8034e9fd9dc3b704bc339c18b64f332bf2d09674c4d6a6c8950461"),
        ),
        ("withhold.valid.json", "withhold", Value::Null),
    ] {
        let env: Value =
            serde_json::from_str(&std::fs::read_to_string(refdir.join(file)).unwrap()).unwrap();
        write(
            dir.path(),
            "binding.json",
            env["binding"].to_string().as_bytes(),
        );
        let path = refdir.join(file);
        let args = [
            "provider",
            "verify",
            path.to_str().unwrap(),
            "--trust",
            trust.to_str().unwrap(),
            "--binding",
            "binding.json",
            "--at",
            "2026-09-01T12:01:00Z",
            "--no-state",
            "--format",
            "json",
        ];
        let refused = ctx(dir.path(), &args);
        assert_eq!(refused.code, 1, "fixture keys are refused by default");
        assert!(
            refused.stderr.contains("fixture_key_only"),
            "{}",
            refused.stderr
        );
        let mut with = args.to_vec();
        with.push("--allow-fixture-keys");
        let r = ctx(dir.path(), &with);
        assert_eq!(r.code, 0, "{file}: {}{}", r.stdout, r.stderr);
        assert_eq!(r.json()["evidence"]["decision"], decision);
        assert_eq!(r.json()["evidence"]["context_sha256"], sha);
        let late: Vec<&str> = with
            .iter()
            .map(|a| {
                if *a == "2026-09-01T12:01:00Z" {
                    "2026-09-01T12:02:00Z"
                } else {
                    a
                }
            })
            .collect();
        assert_eq!(
            ctx(dir.path(), &late).json()["failure"]["code"],
            "not_expired"
        );
    }
}
