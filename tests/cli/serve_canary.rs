//! The canary matrix's HTTP row: values a consumer may not receive — denied by the
//! manifest's role (excluded field, tier above the role's ceiling), out of the
//! token's scope, redacted inside a structured value, critical and unapproved — are
//! planted as unique strings; every endpoint is then called with the consumer's
//! token (and with no token, and a wrong one), and no canary may appear in any
//! response, header, error, or the server's log. A vault whose role set is broken
//! is refused before it listens.

use serde_json::{json, Value};

use crate::serve_support::{files, Resp, Server, Vault, CONSUMER_SECRET};
use crate::support::ctx_in;

const EXCLUDED: &str = "CANARY-ROLE-EXCLUDED-5e1f";
const ABOVE_CEILING: &str = "CANARY-ABOVE-CEILING-0b7d";
const OUT_OF_SCOPE: &str = "CANARY-TOKEN-SCOPE-93aa";
const REDACTED: &str = "CANARY-REDACTED-PATH-4c2e";
const CRITICAL: &str = "CANARY-CRITICAL-OVER-CEILING-d812";
const SHOWN: &str = "visible-through-the-view";

/// Narrow the vault's consumer role: no `medical.*`, nothing above `confidential`
/// (sensitive), and `account` redacted from structured values.
fn narrow_consumer_role(v: &Vault) {
    let path = v.dir().join("opencontext.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let old = "  agent:\n    description: What a registered consumer may be granted at most; each token narrows it further.\n    include: [\"*\"]\n    max_classification: restricted\n";
    assert!(
        text.contains(old),
        "the template's consumer role changed:\n{text}"
    );
    let new = "  agent:\n    description: Narrowed for the canary test.\n    include: [\"*\"]\n    exclude: [\"preferences.hidden.*\"]\n    max_classification: confidential\n    redact:\n      - path: account\n";
    std::fs::write(&path, text.replace(old, new)).unwrap();
}

fn every_endpoint(s: &Server, token: Option<&str>) -> Vec<Resp> {
    let mut out = Vec::new();
    for path in [
        "/context/status",
        "/context/fields",
        "/context/context",
        "/context/context?max_sensitivity=critical",
        "/context/context?max_sensitivity=standard",
        "/context/fields/preferences.hidden.note",
        "/context/fields/preferences.card",
        "/context/fields/identity.full_name",
        "/context/fields/identity.passport_number",
        "/context/fields/financial.income",
        "/context/fields/employment.employer",
        "/context/fields/category/preferences",
        "/context/fields/category/identity",
        "/context/fields/category/financial",
        "/context/fields/category/employment",
        "/context/tokens/service",
        "/context/consumers",
        "/context/audit?limit=1000",
        "/context/export",
        "/context/approvals",
        "/context/approvals/apr_none",
        "/context/nothing-here",
    ] {
        out.push(s.get(path, token));
    }
    let writes: [(&str, &str, Value); 11] = [
        (
            "PUT",
            "/context/fields/preferences.hidden.note",
            json!({"value": "x"}),
        ),
        (
            "PUT",
            "/context/fields/financial.income",
            json!({"value": "x"}),
        ),
        (
            "PUT",
            "/context/fields/employment.employer",
            json!({"value": "x"}),
        ),
        (
            "PUT",
            "/context/sensitivity/financial.income",
            json!({"tier": "public"}),
        ),
        (
            "POST",
            "/context/tokens/service",
            json!({"consumer": "probe", "secret": CONSUMER_SECRET, "scope": "*"}),
        ),
        (
            "POST",
            "/context/consumers/register",
            json!({"name": "probe2", "secret": CONSUMER_SECRET}),
        ),
        (
            "POST",
            "/context/import",
            json!({"archive": "not an archive"}),
        ),
        (
            "POST",
            "/context/approvals/apr_none",
            json!({"decision": "approve"}),
        ),
        (
            "POST",
            "/context/unlock",
            json!({"password": "wrong", "secret_key": "ctxsk-wrong"}),
        ),
        ("POST", "/context/lock", json!({})),
        (
            "PUT",
            "/context/fields/identity.passport_number",
            json!({"value": "x"}),
        ),
    ];
    for (method, path, body) in writes {
        out.push(s.send(method, path, token, body));
    }
    for path in [
        "/context/fields/preferences.hidden.note",
        "/context/fields/financial.income",
        "/context/tokens/service/ctxs_0000",
        "/context/consumers/nobody",
    ] {
        out.push(s.delete(path, token));
    }
    out
}

#[test]
fn no_denied_value_leaves_through_any_endpoint() {
    let v = Vault::create();
    narrow_consumer_role(&v);
    let mut s = v.serve(&[]);
    let user = s.unlock(&v);
    s.put(&user, "identity.full_name", json!(SHOWN)).expect(201);
    s.put(&user, "preferences.hidden.note", json!(EXCLUDED))
        .expect(201);
    s.put(&user, "financial.income", json!(ABOVE_CEILING))
        .expect(201);
    s.send(
        "PUT",
        "/context/sensitivity/financial.income",
        Some(&user),
        json!({"tier": "critical"}),
    )
    .expect(200);
    s.put(&user, "employment.employer", json!(OUT_OF_SCOPE))
        .expect(201);
    s.put(
        &user,
        "preferences.card",
        json!({"account": REDACTED, "brand": "plain"}),
    )
    .expect(201);
    s.put(&user, "identity.passport_number", json!(CRITICAL))
        .expect(201);
    s.send(
        "PUT",
        "/context/sensitivity/identity.passport_number",
        Some(&user),
        json!({"tier": "critical"}),
    )
    .expect(200);

    // The owner sees every value (the probe works on both sides).
    let all = s.get("/context/context", Some(&user));
    for c in [
        SHOWN,
        EXCLUDED,
        ABOVE_CEILING,
        OUT_OF_SCOPE,
        REDACTED,
        CRITICAL,
    ] {
        assert!(
            all.text.contains(c),
            "the owner's view lacks {c}: {}",
            all.text
        );
    }

    let agent = s.consumer_token(
        &user,
        "probe",
        json!({"scope": ["identity.*", "preferences.*", "financial.*"], "mode": "read-write",
               "rate_limit": {"reads": 100000, "writes": 100000}}),
    );
    let mut texts = Vec::new();
    for token in [Some(agent.as_str()), None, Some("ctxs_0123456789")] {
        for r in every_endpoint(&s, token) {
            texts.push(format!(
                "{} {:?} {:?} {}",
                r.status, r.location, r.retry_after, r.text
            ));
        }
    }
    let seen = texts.join("\n");
    assert!(
        seen.contains(SHOWN),
        "the in-scope value is served (the probe works)"
    );
    assert!(
        seen.contains("\"brand\":\"plain\""),
        "the unredacted part of a structured value is served"
    );
    // The critical field is above the narrowed role's ceiling: denied, not merely pending.
    s.get("/context/fields/identity.passport_number", Some(&agent))
        .refused(404, "not_found");
    for c in [EXCLUDED, ABOVE_CEILING, OUT_OF_SCOPE, REDACTED, CRITICAL] {
        assert!(!seen.contains(c), "{c} reached a consumer's response");
    }
    // The user's audit trail names fields and codes, never values.
    let audit = s.get("/context/audit?limit=1000", Some(&user));
    for c in [
        SHOWN,
        EXCLUDED,
        ABOVE_CEILING,
        OUT_OF_SCOPE,
        REDACTED,
        CRITICAL,
    ] {
        assert!(!audit.text.contains(c), "{c} is in the audit log");
    }
    // Nothing in the server's log, nothing in clear on disk.
    let log = s.stderr();
    for c in [
        SHOWN,
        EXCLUDED,
        ABOVE_CEILING,
        OUT_OF_SCOPE,
        REDACTED,
        CRITICAL,
    ] {
        assert!(!log.contains(c), "{c} reached the server's log");
        for (path, bytes) in files(&v.dir()) {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(c),
                "{c} is in clear in {path}"
            );
        }
    }
}

#[test]
fn a_broken_role_set_is_refused_before_listening() {
    let v = Vault::create();
    let path = v.dir().join("opencontext.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text.replace(
        "roles:\n",
        "roles:\n  ghostly:\n    include: [\"*\"]\n    inherits: [ghost]\n",
    );
    std::fs::write(&path, broken).unwrap();
    let r = ctx_in(&v.repo)
        .args(["-C", "v", "serve", "--listen", "127.0.0.1:0", "--no-prompt"])
        .run();
    r.assert_code(1)
        .assert_stderr_contains("refusing to serve context");
    assert!(!r.stderr.contains("listening on"), "{}", r.stderr);
}

/// The Context Layer binding's row: on the canary repository, with a policy
/// that would grant `bot` everything it can name, the whole HTTP flow —
/// discovery, request (needs approval), decision, bundle, receipts, status,
/// refusals — runs as `bot` and the operator; no canary may appear in any
/// response body or header, or in the server's log. The bundle must carry what
/// `bot` may see, so the row cannot pass by disclosing nothing.
#[test]
fn no_canary_reaches_any_context_layer_response() {
    use crate::canary::{PrivateRepo, CANARIES};
    use crate::serve_context_layer::ClServer;

    let p = PrivateRepo::new().expect("fixture");
    let mut keys = Vec::new();
    for id in ["cl-bundle", "cl-anchor"] {
        let r = p.run(&["keys", "generate", "--id", id]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        keys.push(r.stdout.lines().next().unwrap().trim().to_string());
    }
    let manifest = p.repo.path().join("opencontext.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let block = format!(
        "  ctx.exchange:\n    issuer_key: cl-bundle\n    keys:\n      cl-bundle: {{ ed25519: \"{}\", purpose: bundle }}\n      cl-anchor: {{ ed25519: \"{}\", purpose: anchor }}\n    receipts:\n      anchor_key: cl-anchor\n    predicates:\n      everything: {{ ids: [\"*\"] }}\n      customers: {{ collections: [c] }}\n      outside: {{ collections: [outside] }}\n      vault: {{ collections: [vault] }}\n    requesters:\n      bot:\n        purpose_codes: [draft.response]\n        tasks: [draft_only]\n        selectors: [\"*\", everything, customers, outside, vault]\n        wildcards: {{ selectors: true }}\n        actions: [model.generate_text, email.send]\n        approval_actions: [email.send]\n",
        keys[0], keys[1]
    );
    let i = text.find("\nextensions:\n").expect("extensions") + "\nextensions:\n".len();
    std::fs::write(&manifest, format!("{}{block}{}", &text[..i], &text[i..])).unwrap();

    let req_path = p.repo.path().join("x.req.json");
    let mut args = vec![
        "request",
        "new",
        "--as",
        "bot",
        "--purpose-code",
        "draft.response",
        "--task",
        "draft_only",
        "--purpose",
        "Answer a customer",
        "--action",
        "model.generate_text",
        "--action",
        "email.send",
    ];
    for s in [
        "everything",
        "customers",
        "outside",
        "vault",
        "c.denied",
        "c.noread",
        "c.excluded.x",
        "c.restricted",
        "c.invalid",
        "c.broken",
        "vault.passport",
    ] {
        args.extend(["--select", s]);
    }
    args.extend(["-o", req_path.to_str().unwrap()]);
    let r = p.run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let req: Value = serde_json::from_str(&std::fs::read_to_string(&req_path).unwrap()).unwrap();
    let rid = req["id"].as_str().unwrap().to_string();

    let mut s = ClServer::start(p.repo.path(), p.config.path());
    let bot = s.token("bot");
    let op = s.operator.clone();
    let mut seen = Vec::new();
    let mut keep = |what: &str, r: crate::serve_context_layer::Resp| {
        let headers: Vec<String> = r.headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        seen.push((
            what.to_string(),
            format!("{}\n{}", headers.join("\n"), r.text),
        ));
        r
    };
    keep(
        "discovery",
        s.call("GET", "/.well-known/context-layer", &[], None),
    )
    .expect(200);
    let pending = keep(
        "submit",
        s.post(
            "/context/v1/requests",
            &bot,
            &req,
            &[("Idempotency-Key", "c1")],
        ),
    );
    pending.expect(202);
    keep(
        "replay",
        s.post(
            "/context/v1/requests",
            &bot,
            &req,
            &[("Idempotency-Key", "c1")],
        ),
    );
    keep(
        "status",
        s.get(&format!("/context/v1/requests/{rid}"), &bot),
    );
    let decided = keep(
        "approve",
        s.post(
            &format!("/context/v1/requests/{rid}/decisions"),
            &op,
            &json!({"decision": "approve"}),
            &[],
        ),
    );
    decided.expect(200);
    let bid = decided.body["bundle_ref"]
        .as_str()
        .expect("bundle")
        .to_string();
    let bundle = keep("bundle", s.get(&format!("/context/v1/bundles/{bid}"), &bot));
    bundle.expect(200);
    assert!(bundle.text.contains("ACME visible v2"), "{}", bundle.text);
    keep(
        "replay bundle",
        s.get(&format!("/context/v1/bundles/{bid}"), &bot),
    );
    let digest = format!("sha256:{}", "cd".repeat(32));
    let rec = keep(
        "receipt",
        s.post(
            &format!("/context/v1/bundles/{bid}/receipts"),
            &bot,
            &json!({"operation": "model.generate_text", "outcome": "success", "output_digest": digest}),
            &[],
        ),
    );
    let rec_id = rec.body["receipt"]["id"]
        .as_str()
        .unwrap_or("none")
        .to_string();
    keep(
        "receipt get",
        s.get(&format!("/context/v1/receipts/{rec_id}"), &bot),
    );
    keep(
        "receipt get (operator)",
        s.get(&format!("/context/v1/receipts/{rec_id}"), &op),
    );
    keep(
        "status (operator)",
        s.get(&format!("/context/v1/requests/{rid}"), &op),
    );
    keep(
        "proposal",
        s.post(
            "/context/v1/memory-proposals",
            &bot,
            &json!({"bundle_ref": bid, "proposal": {"operation": "add", "proposed_claims": [], "provenance_handles": [], "rationale": "x"}}),
            &[],
        ),
    );
    for id in [
        "c.denied",
        "vault.passport",
        "urn:cl:bundle:0123456789abcdef",
    ] {
        keep(
            "unknown bundle",
            s.get(&format!("/context/v1/bundles/{id}"), &bot),
        );
        keep(
            "unknown request",
            s.get(&format!("/context/v1/requests/{id}"), &bot),
        );
    }
    let log = s.stderr();
    seen.push(("server log".into(), log));
    let mut failures = Vec::new();
    for (what, text) in &seen {
        let found: Vec<&&str> = CANARIES
            .iter()
            .filter(|c| !c.is_empty() && text.contains(**c))
            .collect();
        if !found.is_empty() {
            failures.push(format!("{what} leaks {found:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
