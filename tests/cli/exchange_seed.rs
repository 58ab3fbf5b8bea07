//! Seed 000 requirements the spec owner's kit does not exercise, end to end:
//! reductions cut what is disclosed (§8.2 step 6, §11.3), bundle plaintext is
//! purged once consumed, expired or its source deleted (§11.7, §12, §13.2),
//! the capability document claims only implemented profiles (§13), discovery
//! over HTTP with approval before a contact route (§8.3, §10.3), and every
//! top-level record and receipt carries what §6.1 and §7.8 require.

use serde_json::{json, Value};

use crate::exchange::{at, ClRepo, POLICY};
use crate::serve_context_layer::{support_request, ClServer};

/// `ctx init` with the standard policy, its support-agent entry extended by `extra`
/// (YAML lines at the requester's indentation).
fn init_with(extra: &str) -> ClRepo {
    let dir = tempfile::tempdir().unwrap();
    let r = crate::support::ctx(dir.path(), &["init"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let anchor = "        max_retention_seconds: 900\n";
    assert!(POLICY.contains(anchor));
    let policy = POLICY.replacen(anchor, &format!("{anchor}{extra}"), 1);
    ClRepo::configure(dir, &policy)
}

/// Every string anywhere in `v`.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

const REFUND_TEXT: &str = "Customers may request a refund within 30 days of purchase.";

#[test]
fn truncate_cuts_the_disclosed_content_not_only_the_title() {
    let r = init_with("        transforms: { refund-rules: [\"truncate:refund-rules:3\"] }\n");
    let env = r.bundle("t", &[]);
    let text = std::fs::read_to_string(r.file(&env)).unwrap();
    let e: Value = serde_json::from_str(&text).unwrap();
    let context = e["bundle"]["context"].as_array().unwrap();
    let refunds = context
        .iter()
        .find(|c| c["value"]["id"] == "policies.refunds")
        .expect("the refund policy is disclosed");
    assert_eq!(refunds["claim"], "Ref");
    assert_eq!(refunds["value"]["content"], "Cus", "{refunds}");
    assert!(!text.contains("refund within 30 days"), "{text}");
    for c in context {
        let mut all = Vec::new();
        strings(&c["value"]["content"], &mut all);
        assert!(all.iter().all(|s| s.encode_utf16().count() <= 3), "{c}");
    }
}

#[test]
fn compress_task_facts_discloses_a_summary_form_only() {
    let r = init_with("        transforms: { refund-rules: [\"compress:task-facts\"] }\n");
    let file = r.file("context/policies/refunds.md");
    let doc = std::fs::read_to_string(&file).unwrap();
    let longer = doc.replace(
        REFUND_TEXT,
        &format!("{REFUND_TEXT} Gift cards   are never refunded; escalate chargebacks to billing."),
    );
    std::fs::write(&file, longer).unwrap();
    let env = r.bundle("c", &[]);
    let text = std::fs::read_to_string(r.file(&env)).unwrap();
    let e: Value = serde_json::from_str(&text).unwrap();
    let refunds = e["bundle"]["context"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["value"]["id"] == "policies.refunds")
        .expect("the refund policy is disclosed")
        .clone();
    assert_eq!(refunds["value"]["summary"], REFUND_TEXT, "{refunds}");
    assert!(refunds["value"].get("content").is_none(), "{refunds}");
    assert!(!text.contains("Gift cards"), "{text}");
}

#[test]
fn the_capability_document_claims_only_implemented_profiles() {
    let repo = ClRepo::init();
    let s = ClServer::start(repo.path(), repo.xdg.path());
    let d = s.call("GET", "/.well-known/context-layer", &[], None);
    d.expect(200);
    // CL-Memory needs source events, ingestion and context claims with their
    // status (§13.4); CL-Discovery semantic probe correlation (§13.3).
    assert_eq!(
        d.body["roles"],
        json!(["CL-Core-Issuer", "CL-Receipt-Store"]),
        "{}",
        d.text
    );
    assert_eq!(d.body["endpoints"]["discovery"], "/context/v1/discovery");
    let docs =
        std::fs::read_to_string(crate::support::project_root().join("docs/exchange.md")).unwrap();
    let claimed = docs
        .lines()
        .find(|l| l.contains("claims the profiles"))
        .expect("docs/exchange.md says which profiles ctx claims");
    // The published report claims the same, with this build's suite results.
    let root = crate::support::project_root();
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("docs/context-layer-conformance.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["claimed_profiles"], d.body["roles"]);
    let run = crate::support::ctx(
        &root,
        &[
            "conformance",
            "conformance/context-layer",
            "--format",
            "json",
        ],
    );
    let live: Vec<Value> = run.json()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!({"case": c["case"], "status": c["status"]}))
        .collect();
    assert_eq!(
        report["suite"]["cases"],
        json!(live),
        "refresh with .ci/run-context-layer-report --write"
    );
    assert!(
        claimed.contains("`CL-Core-Issuer`")
            && claimed.contains("`CL-Receipt-Store`")
            && !claimed.contains("`CL-Memory`"),
        "{claimed}"
    );
}

#[test]
fn discovery_over_http_is_the_cli_operation_and_gates_the_contact_route() {
    let repo = init_with("");
    let policy = std::fs::read_to_string(repo.file("opencontext.yaml")).unwrap();
    std::fs::write(
        repo.file("opencontext.yaml"),
        policy.replace("reveal: [statement]", "reveal: [statement, contact_route]"),
    )
    .unwrap();
    let s = ClServer::start(repo.path(), repo.xdg.path());
    let support = s.token("support-agent");
    let r = s.post(
        "/context/v1/discovery",
        &support,
        &json!({"query": "refund policy for customers"}),
        &[],
    );
    r.expect(200);
    assert_eq!(r.body["type"], "minimum_reveal_response", "{}", r.text);
    assert_eq!(r.body["result"], "possible_match");
    // §8.3 step 6: a contact route is never revealed without approval.
    assert_eq!(r.body["reveal"]["contact_route"], "approval_required");
    assert_eq!(r.body["requires_user_approval"], true, "{}", r.text);
    assert_eq!(r.body["query_budget_state"]["remaining"], 2);
    // The same budget as `ctx discover`: one HTTP query, then the CLI's.
    let cli = repo.run(&["discover", "refund policy", "--as", "support-agent"]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    assert_eq!(cli.json()["query_budget_state"]["remaining"], 1);
    // Bad bodies, the operator and an unconfigured requester are refused.
    s.post("/context/v1/discovery", &support, &json!({"q": "x"}), &[])
        .error(400, "INVALID_BODY");
    s.post(
        "/context/v1/discovery",
        &s.operator,
        &json!({"query": "refund"}),
        &[],
    )
    .error(403, "FORBIDDEN");
    s.post(
        "/context/v1/discovery",
        &s.token("role:leads"),
        &json!({"query": "refund"}),
        &[],
    )
    .error(403, "DISCOVERY_NOT_ALLOWED");
    let receipts = repo
        .run(&[
            "receipts",
            "list",
            "--operation",
            "discovery.evaluate",
            "--format",
            "json",
        ])
        .json();
    let receipts = receipts.as_array().unwrap();
    assert_eq!(receipts.len(), 2);
    for x in receipts {
        let snapshot = x["receipt"]["policy_snapshot"].as_str().unwrap_or("");
        assert!(snapshot.starts_with("sha256:"), "{x}");
    }
}

#[test]
fn submitted_requests_and_approvals_are_complete_top_level_records() {
    let repo = ClRepo::init();
    let s = ClServer::start(repo.path(), repo.xdg.path());
    let req = support_request(&repo, "a.json", &["--purpose", "Answer a refund question"]);
    let r = s.post("/context/v1/requests", &s.token("support-agent"), &req, &[]);
    r.expect(201);
    for k in ["spec_version", "type", "id", "created_at", "issuer"] {
        assert!(
            r.body.get(k).is_some_and(|v| !v.is_null()),
            "{k}: {}",
            r.text
        );
    }
    assert_eq!(r.body["type"], "request_state");
    assert!(r.body["id"]
        .as_str()
        .unwrap()
        .starts_with("urn:cl:request-state:"));
    assert_eq!(r.body["issuer"]["id"], "urn:cl:gateway:ctx");
    assert_eq!(r.body["request_ref"], req["id"]);
    drop(s);

    // The approval `ctx approve` writes names its version and issuer too.
    let lead = repo.file("lead.json");
    let made = repo.run(&[
        "request",
        "new",
        "--as",
        "role:leads",
        "--purpose-code",
        "draft.response",
        "--task",
        "draft_only",
        "--select",
        "policies.internal.escalation",
        "-o",
        lead.to_str().unwrap(),
    ]);
    assert_eq!(made.code, 0, "{}", made.stderr);
    let out = repo.file("approval.json");
    let a = repo.run(&[
        "approve",
        lead.to_str().unwrap(),
        "--yes",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    let approval: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(
        approval["spec_version"], "context-layer/0.2-draft",
        "{approval}"
    );
    assert_eq!(approval["issuer"]["id"], "urn:cl:approval-surface:local");
}

#[test]
fn a_01_draft_request_without_purpose_is_refused() {
    let r = ClRepo::init();
    let made = r.request_run(&["--spec-version", "0.1-draft"]);
    assert_eq!(made.code, 1, "{}", made.stdout);
    assert!(made.stderr.contains("PURPOSE_MISSING"), "{}", made.stderr);
    // One written with a purpose, then stripped of it, is denied at evaluation.
    let mut req = r.request(
        "p.json",
        &[
            "--spec-version",
            "0.1-draft",
            "--purpose",
            "Answer a refund question",
        ],
    );
    req.as_object_mut().unwrap().remove("purpose");
    std::fs::write(r.file("p.json"), req.to_string()).unwrap();
    let v = r.run(&[
        "request",
        "validate",
        r.file("p.json").to_str().unwrap(),
        "--at",
        &at(1),
    ]);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains("PURPOSE_MISSING") || v.stderr.contains("PURPOSE_MISSING"),
        "{}{}",
        v.stdout,
        v.stderr
    );
    let e = r.evaluate("p.json", "p.dec.json", 1);
    assert_eq!(e.code, 4, "{}", e.stderr);
    let d = r.envelope("p.dec.json");
    assert_eq!(d["decision"], "deny");
    assert!(
        d["reason_codes"]
            .as_array()
            .unwrap()
            .contains(&json!("PURPOSE_MISSING")),
        "{d}"
    );
}

/// The issuer's stored copy of the bundle in envelope file `env`.
fn stored_copy(r: &ClRepo, env: &str) -> std::path::PathBuf {
    let id = r.envelope(env)["bundle"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    r.file(&format!(
        ".ctx/exchange/bundles/{}.json",
        &id["urn:cl:bundle:".len()..]
    ))
}

#[test]
fn bundles_nobody_may_use_lose_their_stored_plaintext() {
    let r = ClRepo::init();
    let (expired, revoked, deleted) = (r.bundle("x", &[]), r.bundle("y", &[]), r.bundle("z", &[]));
    for env in [&expired, &revoked, &deleted] {
        let text = std::fs::read_to_string(stored_copy(&r, env)).unwrap();
        assert!(
            text.contains(REFUND_TEXT),
            "issued bundles hold the context"
        );
    }
    // Still usable: nothing is purged.
    let p = r.run(&["exchange", "purge", "--at", &at(3), "--format", "json"]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    assert_eq!(p.json()["purged"], json!([]));
    // Revoked: purged as part of the revocation.
    let rv = r.run(&[
        "exchange",
        "revoke",
        r.file(&revoked).to_str().unwrap(),
        "--at",
        &at(4),
    ]);
    assert_eq!(rv.code, 0, "{}", rv.stderr);
    let text = std::fs::read_to_string(stored_copy(&r, &revoked)).unwrap();
    assert!(!text.contains(REFUND_TEXT), "{text}");
    let record: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(record["purged"]["reason"], "revoked");
    assert!(record["bundle"].get("context").is_none(), "{text}");
    assert!(
        record["bundle"]["integrity"]["digest"].is_string(),
        "{text}"
    );
    // Expired: purged at the next purge (here, explicit) after its expiry.
    let until = r.envelope(&expired)["bundle"]["expires_at"]
        .as_str()
        .unwrap()
        .to_string();
    let p = r.run(&["exchange", "purge", "--at", &until]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    for env in [&expired, &deleted] {
        let text = std::fs::read_to_string(stored_copy(&r, env)).unwrap();
        assert!(!text.contains(REFUND_TEXT), "{text}");
        let record: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(record["purged"]["reason"], "expired");
    }
    // The log keeps its evidence and still verifies; replay is still refused.
    assert_eq!(r.run(&["receipts", "verify"]).code, 0);
    let again = r.open(&expired, "support-agent", 5);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let replay = r.open(&expired, "support-agent", 6);
    assert!(replay.stderr.contains("BUNDLE_REPLAY"), "{}", replay.stderr);
}

#[test]
fn a_deleted_source_takes_its_bundle_context_with_it() {
    let r = ClRepo::init();
    let env = r.bundle("d", &[]);
    assert!(std::fs::read_to_string(stored_copy(&r, &env))
        .unwrap()
        .contains(REFUND_TEXT));
    std::fs::remove_file(r.file("context/policies/refunds.md")).unwrap();
    // The next issuance purges it (so does `ctx exchange purge`).
    r.bundle("e", &[]);
    let text = std::fs::read_to_string(stored_copy(&r, &env)).unwrap();
    assert!(!text.contains(REFUND_TEXT), "{text}");
    let record: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(record["purged"]["reason"], "source_deleted");
    assert_eq!(r.run(&["receipts", "verify"]).code, 0);
}

#[test]
fn proposal_review_receipts_carry_the_policy_snapshot() {
    let r = ClRepo::init();
    let env = r.bundle("m", &["--action", "memory.propose"]);
    assert_eq!(r.open(&env, "support-agent", 3).code, 0);
    let b = r.envelope(&env)["bundle"].clone();
    let refunds = b["context"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["value"]["id"] == "policies.refunds")
        .unwrap()
        .clone();
    let cand = json!({
        "operation": "add_or_contradict",
        "proposed_claims": [{"predicate": "policies.refunds",
            "object": {"value": "Refunds within 14 days.", "datatype": "text"}, "confidence": 0.6}],
        "provenance_handles": [refunds["provenance_handles"][0]],
        "rationale": "ticket 42",
    });
    std::fs::write(r.file("cand.json"), cand.to_string()).unwrap();
    let envp = r.file(&env);
    let p = r.run(&[
        "propose",
        "cand.json",
        "--bundle",
        envp.to_str().unwrap(),
        "--as",
        "support-agent",
        "--at",
        &at(4),
    ]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let id = p.json()["id"].as_str().unwrap().to_string();
    let a = r.run(&["proposals", "approve", &id, "--at", &at(5)]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    let c = r.run(&["proposals", "commit", &id, "--at", &at(6)]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let list = r.run(&["receipts", "list", "--format", "json"]).json();
    let snapshot = b["policy_snapshot"]["digest"].as_str().unwrap();
    let mut seen = Vec::new();
    for x in list.as_array().unwrap() {
        let op = x["receipt"]["operation"].as_str().unwrap();
        if op.starts_with("memory.proposal.") || op.starts_with("discovery.") {
            assert_eq!(x["receipt"]["policy_snapshot"], snapshot, "{x}");
            seen.push(op.to_string());
        }
    }
    assert_eq!(seen, ["memory.proposal.approve", "memory.proposal.commit"]);
}
