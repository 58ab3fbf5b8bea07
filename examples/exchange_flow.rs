//! `scripts/bench`'s Context Layer row: request → decision → issue → open in one
//! process over a generated corpus. The repository is loaded once and the
//! requester's resolved view and policy are computed once, then shared by the
//! decision and the issuance (nothing is reloaded). The corpus is not modified:
//! the exchange policy is added to the loaded manifest in memory, keys are
//! synthetic and held in memory, and state goes to a temporary folder.
//!
//!     exchange_flow <corpus> [AGENT] [AT]

use std::time::Instant as Clock;

use serde_json::{json, Value};

use ctx_core::exchange::canon;
use ctx_core::exchange::ops::bundles::{self, ConsumerOptions, IssueOptions};
use ctx_core::exchange::ops::decide::{self, EvaluateOptions};
use ctx_core::exchange::ops::request::{self, NewRequest};
use ctx_core::exchange::ops::Exchange;
use ctx_core::exchange::state::StateDir;
use ctx_core::exchange::view::ViewOptions;
use ctx_core::exchange::SpecVersion;
use ctx_core::load::{self, LoadOptions};
use ctx_core::manifest::Manifest;
use ctx_core::signing::SigningKeyPair;

fn main() {
    let mut args = std::env::args().skip(1);
    let root = std::path::PathBuf::from(
        args.next()
            .expect("usage: exchange_flow <corpus> [AGENT] [AT]"),
    );
    let agent = args.next().unwrap_or_else(|| "support-agent".into());
    let at = canon::parse_time(&args.next().unwrap_or_else(|| "2026-11-01T00:00:00Z".into()))
        .expect("AT is RFC 3339");
    let t0 = Clock::now();
    let cwd = std::env::current_dir().expect("a working folder");
    let (mut manifest, diags) = Manifest::discover(Some(&root), &cwd).expect("a repository");
    let bundle_key = SigningKeyPair::from_seed(&[0x3c; 32]);
    let anchor_key = SigningKeyPair::from_seed(&[0x4d; 32]);
    manifest.extensions.insert(
        "ctx.exchange".into(),
        json!({
            "issuer_key": "bench-bundle",
            "keys": {
                "bench-bundle": {"ed25519": bundle_key.public_key().to_base64(), "purpose": "bundle"},
                "bench-anchor": {"ed25519": anchor_key.public_key().to_base64(), "purpose": "anchor"},
            },
            "receipts": {"anchor_key": "bench-anchor"},
            "requesters": {agent.clone(): {
                "purpose_codes": ["retrieve.context"],
                "tasks": ["lookup"],
                "selectors": ["*"],
                "approval_above": "restricted",
                "actions": ["model.generate_text"],
            }},
        }),
    );
    let repo = load::load(manifest, diags, &LoadOptions::default());
    let loaded = t0.elapsed();
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut ex = Exchange::new(&repo, ViewOptions { offline: true }).expect("exchange policy");
    ex.state = StateDir::new(tmp.path());
    ex.keys.insert("bench-bundle".into(), bundle_key);
    ex.keys.insert("bench-anchor".into(), anchor_key);

    let t1 = Clock::now();
    let principal = format!("urn:ctx:agent:{agent}");
    let prepared = ex.prepare(&principal, at).expect("view and policy");
    let prepared_in = t1.elapsed();
    let view = prepared.view.as_ref().expect("a configured requester");
    let ids: Vec<String> = view.objects.iter().take(10).map(|o| o.id.clone()).collect();

    let t2 = Clock::now();
    let (req, _) = request::create(
        &ex,
        &NewRequest {
            requester: agent.clone(),
            recipient: None,
            onward_disclosure: "forbidden".into(),
            purpose_code: "retrieve.context".into(),
            purpose: None,
            task_kind: "lookup".into(),
            user_visible: true,
            selectors: ids.clone(),
            actions: vec!["model.generate_text".into()],
            retention_mode: "ephemeral".into(),
            retention_seconds: 600,
            receipts: "operation".into(),
            expires_in: chrono::Duration::minutes(10),
            client: None,
            authenticated_by: None,
            at,
            version: SpecVersion::V02,
        },
    )
    .expect("request");
    let requested = t2.elapsed();

    let t3 = Clock::now();
    let log = ex.log().expect("receipt log");
    let o = EvaluateOptions {
        request: req.clone(),
        approval: None,
        at,
        version: None,
    };
    let evaluation = decide::evaluate_prepared(&ex, &prepared, &o, Some(&log)).expect("decision");
    let state = evaluation.state;
    let decided =
        decide::store_decision(&ex, &req, evaluation, Some(&log), at).expect("stored decision");
    let decided_in = t3.elapsed();
    assert!(
        state.grants(),
        "{}",
        decided.evaluation.decision["reason_codes"]
    );

    let t4 = Clock::now();
    let issued = bundles::issue_prepared(
        &ex,
        &prepared,
        &req,
        &IssueOptions {
            decision: decided.evaluation.decision.clone(),
            key: None,
            at,
        },
    )
    .expect("bundle");
    let issued_in = t4.elapsed();

    let t5 = Clock::now();
    let session = bundles::open(
        &ex,
        &ConsumerOptions {
            envelope: serde_json::to_vec(&issued.envelope).expect("JSON"),
            recipient: agent.clone(),
            at,
            trust: None,
        },
    )
    .expect("open");
    let opened_in = t5.elapsed();
    let ms = |d: std::time::Duration| (d.as_secs_f64() * 1000.0 * 10.0).round() / 10.0;
    let out: Value = json!({
        "objects": repo.objects.len(),
        "visible": view.objects.len(),
        "granted_objects": session.bundle["context"].as_array().map(Vec::len),
        "ms": {
            "load": ms(loaded),
            "view_and_policy": ms(prepared_in),
            "request": ms(requested),
            "decision": ms(decided_in),
            "issue": ms(issued_in),
            "open": ms(opened_in),
            "request_to_open": ms(requested + decided_in + issued_in + opened_in),
            "total": ms(t0.elapsed()),
        }
    });
    println!("{}", serde_json::to_string(&out).expect("JSON"));
}
