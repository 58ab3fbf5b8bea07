//! The Context Layer HTTP binding of `ctx serve` (seed 000 §10), driven with a
//! real HTTP client against a running server on an ordinary (non-personal)
//! repository with an exchange policy: discovery → request → decision (allow,
//! needs_approval then approve or deny, policy deny) → bundle retrieval (once)
//! → receipt → memory proposal → receipt read; version negotiation,
//! Idempotency-Key replay and conflict, media type, malformed JSON,
//! authentication and unknown ids.

use std::path::Path;

use serde_json::{json, Value};

use crate::exchange::ClRepo;
use crate::serve_support::Running;
use crate::support::ctx_in;

pub const MEDIA: &str = "application/vnd.context-layer+json";

/// A response of the binding.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub body: Value,
    pub text: String,
    pub headers: Vec<(String, String)>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn expect(&self, status: u16) -> &Resp {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.text
        );
        self
    }

    /// A protocol `error` object with this status and code.
    pub fn error(&self, status: u16, code: &str) -> &Resp {
        self.expect(status);
        assert_eq!(self.body["type"], "error", "{}", self.text);
        assert_eq!(self.body["code"], code, "{}", self.text);
        assert!(self.body["message"].is_string(), "{}", self.text);
        assert!(self.body["id"]
            .as_str()
            .unwrap_or("")
            .starts_with("urn:cl:error:"));
        assert_eq!(self.header("content-type"), Some(MEDIA));
        self
    }
}

/// A running `ctx serve` with the binding, and this launch's tokens.
pub struct ClServer {
    pub running: Running,
    pub operator: String,
    pub tokens: Value,
    /// The per-launch credentials file.
    pub credentials: std::path::PathBuf,
}

impl std::ops::Deref for ClServer {
    type Target = Running;
    fn deref(&self) -> &Running {
        &self.running
    }
}

impl std::ops::DerefMut for ClServer {
    fn deref_mut(&mut self) -> &mut Running {
        &mut self.running
    }
}

impl ClServer {
    /// Start `ctx serve --listen 127.0.0.1:0` in `dir` with this config folder.
    pub fn start(dir: &Path, config: &Path) -> ClServer {
        Self::start_with(dir, config, &[])
    }

    /// The same, with more flags.
    pub fn start_with(dir: &Path, config: &Path, extra: &[&str]) -> ClServer {
        let spawned = ctx_in(&dir.to_path_buf())
            .args(["serve", "--listen", "127.0.0.1:0", "--no-prompt"])
            .args(extra)
            .env("HOME", config)
            .env("XDG_CONFIG_HOME", config)
            .spawn();
        let (running, lines) = Running::start(spawned, 1);
        let path = lines[0]
            .rsplit_once(" in ")
            .map(|(_, p)| p.to_string())
            .unwrap_or_else(|| panic!("second line of stderr: {:?}", lines[0]));
        let creds: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "the credentials file is private");
        }
        ClServer {
            running,
            operator: creds["operator"].as_str().unwrap().to_string(),
            tokens: creds["requesters"].clone(),
            credentials: path.into(),
        }
    }

    /// The token of a requester (`support-agent`, `role:leads`).
    pub fn token(&self, name: &str) -> String {
        let p = match name.strip_prefix("role:") {
            Some(r) => format!("urn:ctx:role:{r}"),
            None => format!("urn:ctx:agent:{name}"),
        };
        self.tokens[&p]
            .as_str()
            .unwrap_or_else(|| panic!("no token for {p}"))
            .to_string()
    }

    /// Send a request with these headers and an optional raw body.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        let url = format!("{}{path}", self.url);
        let result = if method == "GET" {
            let mut r = self.agent.get(&url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.call()
        } else {
            let mut r = self.agent.post(&url);
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            match body {
                Some(b) => r.send(b),
                None => r.send_empty(),
            }
        };
        let mut resp = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        Resp {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
            headers,
        }
    }

    pub fn get(&self, path: &str, token: &str) -> Resp {
        let auth = format!("Bearer {token}");
        self.call("GET", path, &[("Authorization", &auth)], None)
    }

    pub fn post(&self, path: &str, token: &str, body: &Value, extra: &[(&str, &str)]) -> Resp {
        let auth = format!("Bearer {token}");
        let mut h = vec![("Authorization", auth.as_str()), ("Content-Type", MEDIA)];
        h.extend_from_slice(extra);
        self.call("POST", path, &h, Some(body.to_string().as_bytes()))
    }
}

/// A request made by `ctx request new` (the CLI), as an HTTP client would send it.
fn request(repo: &ClRepo, name: &str, args: &[&str]) -> Value {
    let out = repo.file(name);
    let mut a = vec![
        "request",
        "new",
        "--task",
        "draft_only",
        "-o",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(args);
    let r = repo.run(&a);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

pub fn support_request(repo: &ClRepo, name: &str, extra: &[&str]) -> Value {
    let mut a = vec![
        "--as",
        "support-agent",
        "--purpose-code",
        "draft.response",
        "--select",
        "refund-rules",
        "--select",
        "policies.internal.escalation",
        "--action",
        "model.generate_text",
        "--action",
        "memory.propose",
    ];
    a.extend_from_slice(extra);
    request(repo, name, &a)
}

fn leads_request(repo: &ClRepo, name: &str, purpose: &str) -> Value {
    request(
        repo,
        name,
        &[
            "--as",
            "role:leads",
            "--purpose-code",
            "draft.response",
            "--purpose",
            purpose,
            "--select",
            "policies.internal.escalation",
        ],
    )
}

fn escalation_text(repo: &ClRepo) -> String {
    let r = repo.run(&["get", "policies.internal.escalation", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let body = v["content"]
        .as_str()
        .or(v["object"]["content"].as_str())
        .unwrap_or("")
        .to_string();
    // A distinctive line of the confidential policy's body.
    body.lines()
        .find(|l| l.trim().len() > 24)
        .unwrap_or("")
        .trim()
        .to_string()
}

#[test]
fn context_layer_journey_over_http() {
    let repo = ClRepo::init();
    // In a git work tree the write lock lives in .git, which a confined server
    // cannot find by running git: the lock path found at start must be used.
    if crate::support::git::have_git() {
        crate::support::git::init_git(repo.path(), "init");
    }
    let secret_line = escalation_text(&repo);
    assert!(
        !secret_line.is_empty(),
        "the init repository has an escalation policy body"
    );
    let mut s = ClServer::start(repo.path(), repo.xdg.path());
    let support = s.token("support-agent");
    let leads = s.token("role:leads");

    // Discovery: versions, media type, endpoints, the signing keys by kid; no policy internals.
    let d = s.call("GET", "/.well-known/context-layer", &[], None);
    d.expect(200);
    assert_eq!(d.header("content-type"), Some(MEDIA));
    assert_eq!(d.header("context-layer-version"), Some("0.2-draft"));
    assert_eq!(
        d.body["spec_versions"],
        json!(["context-layer/0.2-draft", "context-layer/0.1-draft"])
    );
    assert_eq!(d.body["media_type"], MEDIA);
    assert_eq!(d.body["endpoints"]["requests"], "/context/v1/requests");
    let keys = d.body["signing"]["keys"].as_array().unwrap();
    assert!(
        keys.iter().any(|k| k["kid"] == "urn:cl:key:t-bundle"
            && k["public_key"] == repo.bundle_key.as_str()
            && k["use"] == "bundle"),
        "{}",
        d.text
    );
    assert_eq!(d.body["signing"]["issuer_key"], "urn:cl:key:t-bundle");
    assert!(
        !d.text.contains("refund-rules") && !d.text.contains("support-agent"),
        "{}",
        d.text
    );

    // Allow with reductions: the escalation policy is withheld, the bundle issued.
    let req = support_request(&repo, "a.json", &["--purpose", "Answer a refund question"]);
    let rid = req["id"].as_str().unwrap().to_string();
    let key = [("Idempotency-Key", "7d1c3f0e-first")];
    let r = s.post("/context/v1/requests", &support, &req, &key);
    r.expect(201);
    assert_eq!(r.body["state"], "allow_with_reductions", "{}", r.text);
    assert_eq!(r.body["decision"]["type"], "policy_decision");
    assert_eq!(
        r.header("location"),
        Some(format!("/context/v1/requests/{rid}").as_str())
    );
    let bundle_id = r.body["bundle_ref"]
        .as_str()
        .expect("a bundle was issued")
        .to_string();

    // Idempotency: the same key and body replays the first answer (nothing runs again) …
    let again = s.post("/context/v1/requests", &support, &req, &key);
    again.expect(201);
    assert_eq!(again.body, r.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    // … the same key with another body is a conflict.
    let other = support_request(&repo, "b.json", &["--purpose", "Another question"]);
    s.post("/context/v1/requests", &support, &other, &key)
        .error(409, "IDEMPOTENCY_KEY_REUSED");

    // Status: the requester sees its request; another requester learns nothing.
    let st = s.get(&format!("/context/v1/requests/{rid}"), &support);
    st.expect(200);
    assert_eq!(st.body["state"], "issued");
    assert_eq!(st.body["bundle_ref"], bundle_id.as_str());
    s.get(&format!("/context/v1/requests/{rid}"), &leads)
        .error(404, "REQUEST_NOT_FOUND");
    s.get(&format!("/context/v1/requests/{rid}"), &s.operator)
        .expect(200);

    // The bundle: only its recipient, only once.
    let path = format!("/context/v1/bundles/{bundle_id}");
    s.get(&path, &leads).error(404, "BUNDLE_NOT_FOUND");
    let b = s.get(&path, &support);
    b.expect(200);
    assert_eq!(b.body["bundle"]["id"], bundle_id.as_str());
    assert_eq!(b.body["bundle"]["recipient"], "urn:ctx:agent:support-agent");
    assert!(b.text.contains("policies.refunds"), "{}", b.text);
    assert!(!b.text.contains(&secret_line), "withheld content is absent");
    s.get(&path, &support).error(409, "BUNDLE_REPLAY");

    // A receipt for a granted action; an action the bundle does not grant is refused.
    let digest = format!("sha256:{}", "ab".repeat(32));
    let rec = s.post(
        &format!("{path}/receipts"),
        &support,
        &json!({"operation": "model.generate_text", "outcome": "success", "output_digest": digest}),
        &[],
    );
    rec.expect(201);
    assert_eq!(rec.body["outcome"], "success");
    let receipt_id = rec.body["receipt"]["id"].as_str().unwrap().to_string();
    assert_eq!(rec.body["receipt"]["bundle_ref"], bundle_id.as_str());
    assert_eq!(
        rec.header("location"),
        Some(format!("/context/v1/receipts/{receipt_id}").as_str())
    );
    let refused = s.post(
        &format!("{path}/receipts"),
        &support,
        &json!({"operation": "email.send", "outcome": "success", "output_digest": digest}),
        &[],
    );
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert_eq!(refused.body["type"], "error");

    // Receipts: the recipient and the operator read it; another requester does not.
    let got = s.get(&format!("/context/v1/receipts/{receipt_id}"), &support);
    got.expect(200);
    assert_eq!(got.body["id"], receipt_id.as_str());
    assert_eq!(got.body["payload_included"], false);
    s.get(&format!("/context/v1/receipts/{receipt_id}"), &leads)
        .error(404, "RECEIPT_NOT_FOUND");
    s.get(&format!("/context/v1/receipts/{receipt_id}"), &s.operator)
        .expect(200);

    // A memory proposal through the opened bundle, pointing at a handle it disclosed.
    let handle = b
        .text
        .split('"')
        .find(|x| x.starts_with("prov_"))
        .expect("a provenance handle")
        .to_string();
    let p = s.post(
        "/context/v1/memory-proposals",
        &support,
        &json!({"bundle_ref": bundle_id, "proposal": {
            "operation": "add_or_contradict",
            "proposed_claims": [{"predicate": "policies.refunds",
                "object": {"value": "Refunds within 14 days.", "datatype": "text"}, "confidence": 0.7}],
            "provenance_handles": [handle],
            "rationale": "The latest ticket quotes 14 days."}}),
        &[("Idempotency-Key", "proposal-1")],
    );
    p.expect(201);
    assert_eq!(p.body["type"], "memory_update_proposal", "{}", p.text);
    let listed = repo.run(&["proposals", "list", "--format", "json"]);
    assert!(
        listed.stdout.contains(p.body["id"].as_str().unwrap()),
        "{}",
        listed.stdout
    );

    // Needs approval → a requester cannot decide → the operator approves → bundle.
    let lr = leads_request(&repo, "l1.json", "Escalate a complaint");
    let lid = lr["id"].as_str().unwrap().to_string();
    let pending = s.post("/context/v1/requests", &leads, &lr, &[]);
    pending.expect(202);
    assert_eq!(pending.body["state"], "needs_approval");
    assert!(pending.body["bundle_ref"].is_null());
    let decide = format!("/context/v1/requests/{lid}/decisions");
    s.post(&decide, &leads, &json!({"decision": "approve"}), &[])
        .error(403, "FORBIDDEN");
    let ok = s.post(&decide, &s.operator, &json!({"decision": "approve"}), &[]);
    ok.expect(200);
    assert_eq!(ok.body["state"], "allow", "{}", ok.text);
    let lb = ok.body["bundle_ref"].as_str().unwrap().to_string();
    let opened = s.get(&format!("/context/v1/bundles/{lb}"), &leads);
    opened.expect(200);
    assert!(
        opened.text.contains("policies.internal.escalation"),
        "{}",
        opened.text
    );
    s.post(&decide, &s.operator, &json!({"decision": "approve"}), &[])
        .error(409, "REQUEST_STATE_CONFLICT");

    // Needs approval → the operator denies: no bundle, ever.
    let lr2 = leads_request(&repo, "l2.json", "Another escalation");
    let lid2 = lr2["id"].as_str().unwrap().to_string();
    s.post("/context/v1/requests", &leads, &lr2, &[])
        .expect(202);
    let decide2 = format!("/context/v1/requests/{lid2}/decisions");
    let no = s.post(
        &decide2,
        &s.operator,
        &json!({"decision": "deny", "reason": "not now"}),
        &[],
    );
    no.expect(200);
    assert_eq!(no.body["state"], "denied");
    let st2 = s.get(&format!("/context/v1/requests/{lid2}"), &leads);
    assert_eq!(st2.body["state"], "denied", "{}", st2.text);
    assert!(st2.body["bundle_ref"].is_null());
    s.post(&decide2, &s.operator, &json!({"decision": "approve"}), &[])
        .error(409, "REQUEST_STATE_CONFLICT");

    // A policy deny: a purpose code the requester is not registered for.
    let dr = request(
        &repo,
        "d.json",
        &[
            "--as",
            "support-agent",
            "--purpose-code",
            "summarize.material",
            "--select",
            "refund-rules",
        ],
    );
    let denied = s.post("/context/v1/requests", &support, &dr, &[]);
    denied.expect(201);
    assert_eq!(denied.body["state"], "deny", "{}", denied.text);
    assert!(denied.body["bundle_ref"].is_null());

    // Everything above is in the anchored receipt log, which still verifies.
    let v = repo.run(&["receipts", "verify"]);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    let log = s.stderr();
    assert!(
        !log.contains(&support) && !log.contains(&s.operator),
        "tokens never reach the log"
    );
    assert!(!log.contains(&secret_line));
}

#[test]
fn context_layer_negotiation_and_refusals() {
    let repo = ClRepo::init();
    let s = ClServer::start(repo.path(), repo.xdg.path());
    let support = s.token("support-agent");
    let auth = format!("Bearer {support}");

    // 0.1-draft on request: the decision comes in the seed's form.
    let req = support_request(&repo, "a.json", &[]);
    let r = s.post(
        "/context/v1/requests",
        &support,
        &req,
        &[("Context-Layer-Version", "0.1-draft")],
    );
    r.expect(201);
    assert_eq!(r.header("context-layer-version"), Some("0.1-draft"));
    assert_eq!(
        r.body["decision"]["spec_version"],
        "context-layer/0.1-draft"
    );
    assert!(r.body["decision"]["valid_until"].is_string(), "{}", r.text);
    // An unsupported version is refused before anything else.
    s.post(
        "/context/v1/requests",
        &support,
        &req,
        &[("Context-Layer-Version", "9.0-draft")],
    )
    .error(400, "UNSUPPORTED_SPEC_VERSION");
    s.call(
        "GET",
        "/.well-known/context-layer",
        &[("Context-Layer-Version", "1.0")],
        None,
    )
    .error(400, "UNSUPPORTED_SPEC_VERSION");
    // Errors follow the negotiated version.
    let e = s.call(
        "GET",
        "/context/v1/requests/urn:cl:request:00",
        &[
            ("Authorization", &auth),
            ("Context-Layer-Version", "0.1-draft"),
        ],
        None,
    );
    e.error(404, "REQUEST_NOT_FOUND");
    assert_eq!(e.body["spec_version"], "context-layer/0.1-draft");

    // Media type, malformed JSON, a non-object body, an unknown member.
    let body = req.to_string();
    s.call(
        "POST",
        "/context/v1/requests",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        Some(body.as_bytes()),
    )
    .error(415, "UNSUPPORTED_MEDIA_TYPE");
    s.call(
        "POST",
        "/context/v1/requests",
        &[("Authorization", &auth)],
        Some(body.as_bytes()),
    )
    .error(415, "UNSUPPORTED_MEDIA_TYPE");
    let bad = s.call(
        "POST",
        "/context/v1/requests",
        &[("Authorization", &auth), ("Content-Type", MEDIA)],
        Some(b"{\"type\": \"context_request\", "),
    );
    bad.error(400, "INVALID_JSON");
    assert!(
        !bad.text.contains("context_request"),
        "a parse error never quotes the body"
    );
    s.call(
        "POST",
        "/context/v1/requests",
        &[("Authorization", &auth), ("Content-Type", MEDIA)],
        Some(b"{\"a\": 1, \"a\": 2}"),
    )
    .error(400, "INVALID_JSON");
    s.call(
        "POST",
        "/context/v1/requests",
        &[("Authorization", &auth), ("Content-Type", MEDIA)],
        Some(b"[1]"),
    )
    .error(400, "INVALID_BODY");
    s.post(
        "/context/v1/requests",
        &support,
        &json!({"type": "context_request"}),
        &[],
    )
    .error(400, "UNSUPPORTED_SPEC_VERSION");
    s.post(
        "/context/v1/requests",
        &support,
        &json!({"spec_version": "context-layer/0.2-draft", "type": "context_request"}),
        &[],
    )
    .error(400, "INVALID_REQUEST");
    s.post(
        "/context/v1/memory-proposals",
        &support,
        &json!({"bundle_ref": "x", "proposal": {}, "raw_vault_write": true}),
        &[],
    )
    .error(400, "INVALID_BODY");
    let big = vec![b' '; 1024 * 1024 + 64 * 1024];
    s.call(
        "POST",
        "/context/v1/requests",
        &[("Authorization", &auth), ("Content-Type", MEDIA)],
        Some(&big),
    )
    .error(413, "PAYLOAD_TOO_LARGE");

    // Authentication: absent, unknown, and a requester acting for another.
    let none = s.call("GET", "/context/v1/receipts/urn:cl:receipt:00", &[], None);
    none.error(401, "UNAUTHENTICATED");
    assert!(none.header("www-authenticate").is_some());
    s.get("/context/v1/receipts/urn:cl:receipt:00", "ctxcl_0000")
        .error(401, "UNAUTHENTICATED");
    let leads_req = leads_request(&repo, "l.json", "Escalation check");
    s.post("/context/v1/requests", &support, &leads_req, &[])
        .error(403, "REQUESTER_MISMATCH");
    s.post("/context/v1/requests", &s.operator, &req, &[])
        .error(403, "FORBIDDEN");

    // Unknown ids and endpoints.
    s.get(
        "/context/v1/requests/urn:cl:request:0123456789abcdef",
        &support,
    )
    .error(404, "REQUEST_NOT_FOUND");
    s.get(
        "/context/v1/bundles/urn:cl:bundle:0123456789abcdef",
        &support,
    )
    .error(404, "BUNDLE_NOT_FOUND");
    s.get(
        "/context/v1/receipts/urn:cl:receipt:0123456789abcdef",
        &support,
    )
    .error(404, "RECEIPT_NOT_FOUND");
    s.post(
        "/context/v1/requests/urn:cl:request:0123456789abcdef/decisions",
        &s.operator,
        &json!({"decision": "approve"}),
        &[],
    )
    .error(404, "REQUEST_NOT_FOUND");
    s.get("/context/v1/nothing", &support)
        .error(404, "ENDPOINT_NOT_FOUND");
    s.call("POST", "/.well-known/context-layer", &[], None)
        .error(405, "METHOD_NOT_ALLOWED");
    // A bad Idempotency-Key is refused, not ignored.
    s.post(
        "/context/v1/requests",
        &support,
        &req,
        &[("Idempotency-Key", "has space")],
    )
    .error(400, "INVALID_IDEMPOTENCY_KEY");
    // The idempotency record survives in .ctx/ (atomically written, one file per key).
    s.post(
        "/context/v1/requests",
        &support,
        &req,
        &[("Idempotency-Key", "kept")],
    )
    .expect(201);
    let kept = std::fs::read_dir(repo.path().join(".ctx/exchange/idempotency"))
        .unwrap()
        .count();
    assert_eq!(kept, 1);
}

#[test]
fn serve_refuses_a_repository_with_nothing_to_serve() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(crate::support::ctx(dir.path(), &["init"]).code, 0);
    let r = ctx_in(&dir.path().to_path_buf())
        .args(["serve", "--listen", "127.0.0.1:0", "--no-prompt"])
        .run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nothing to serve"), "{}", r.stderr);
}
