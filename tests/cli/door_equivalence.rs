//! One repository, one consumer, three doors: `ctx resolve`, the MCP `resolve`
//! tool and the Context Layer's issue step give the same objects with the same
//! redactions and the same content, and `ctx resolve` and MCP the same digest.
//! (A personal vault's HTTP context route is held to its MCP door in
//! `mcp_personal.rs`: a vault is no OpenContext bundle.)

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::exchange::ClRepo;
use super::mcp::{call, connect_with, Answer, Era};

const PHONE: &str = "555-0100-CANARY";

/// The `ctx init` repository with an exchange policy, a structured procedure
/// whose phone number the support role may not read, and an internal policy
/// outside its scope.
fn repo() -> ClRepo {
    let r = ClRepo::init();
    let manifest = std::fs::read_to_string(r.file("opencontext.yaml")).unwrap();
    let manifest = manifest.replacen(
        "    exclude: [policies.internal.*]\n",
        "    exclude: [policies.internal.*]\n    redact:\n      - path: phone\n",
        1,
    );
    std::fs::write(r.file("opencontext.yaml"), manifest).unwrap();
    std::fs::write(
        r.file("context/procedures/escalation.yaml"),
        format!(
            "id: procedures.escalation\ntitle: Escalation\nowner: support\nupdated: 2029-12-01T00:00:00Z\n\
             content:\n  steps: [\"ask a lead\", \"open a ticket\"]\n  phone: \"{PHONE}\"\n"
        ),
    )
    .unwrap();
    r
}

/// (id → (content, redacted paths)) of an OpenContext bundle's objects.
fn by_id(objects: &[Value]) -> BTreeMap<String, (Value, Value)> {
    objects
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap().to_string(),
                (
                    o["content"].clone(),
                    o.get("redacted").cloned().unwrap_or(json!(null)),
                ),
            )
        })
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn resolve_mcp_and_the_context_layer_disclose_the_same() {
    let r = repo();
    let scope = ["procedures.*", "policies.refunds", "mission"];
    // The command line.
    let mut args = vec![
        "resolve",
        "--agent",
        "support-agent",
        "--task",
        "refund escalation",
    ];
    for p in scope {
        args.extend(["--include", p]);
    }
    let cli = r.run(&args);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let bundle = cli.json();
    let cli_objects = by_id(bundle["objects"].as_array().unwrap());
    assert!(
        cli_objects.contains_key("procedures.escalation"),
        "{bundle}"
    );
    assert!(
        !bundle.to_string().contains(PHONE),
        "redacted at the command line"
    );

    // MCP: the same objects, the same digest, the same redactions.
    let xdg = r.xdg.path().to_path_buf();
    let s = connect_with(
        r.path(),
        &["--agent", "support-agent"],
        &[("XDG_CONFIG_HOME", &xdg)],
        Era::Modern,
        true,
        Answer::Approve,
    )
    .await;
    let m = call(
        &s,
        "resolve",
        json!({"task": "refund escalation", "include": scope, "max_tokens": 1000000}),
    )
    .await;
    let st = m.structured_content.clone().expect("structured");
    let mcp_ids: Vec<&str> = st["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let cli_ids: Vec<&str> = bundle["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["id"].as_str())
        .collect();
    assert_eq!(mcp_ids, cli_ids, "the same objects, in the same order");
    assert_eq!(st["digest"], bundle["digest"], "the same bundle");
    let md = super::mcp::text(&m);
    assert!(
        md.contains("Redacted fields: phone") && !md.contains(PHONE),
        "{md}"
    );
    s.cancel().await.ok();

    // The Context Layer: what its bundle carries is what `ctx resolve` gives, object
    // by object, redactions included.
    let env = r.bundle("eq", &[]);
    let opened = r.open(&env, "support-agent", 3);
    assert_eq!(opened.code, 0, "{}", opened.stderr);
    let envelope = r.envelope(&env);
    let claims: Vec<Value> = envelope["bundle"]["context"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["value"].clone())
        .collect();
    assert!(
        claims.iter().any(|c| c["id"] == "procedures.escalation"),
        "the redacted object is among what the exchange discloses: {claims:?}"
    );
    assert!(
        !envelope.to_string().contains(PHONE),
        "redacted in the exchange"
    );
    for (id, (content, redacted)) in by_id(&claims) {
        let (want_content, want_redacted) = cli_objects
            .get(&id)
            .unwrap_or_else(|| panic!("{id}: the exchange disclosed what `ctx resolve` does not"));
        assert_eq!(&content, want_content, "{id}: the same content");
        assert_eq!(&redacted, want_redacted, "{id}: the same redactions");
    }
}
