//! The canary matrix's row for `ctx mcp` on a personal vault: values the consumer
//! may not receive — excluded by the vault's consumer role, above its ceiling
//! (critical), outside the token's `--scope`, redacted inside a structured value —
//! are planted as unique strings; every tool and resource is then called, in both
//! protocol eras, by a client that approves everything (typing whatever confirmation
//! it is asked for) and by one that cannot ask. No canary may appear in any answer,
//! error or approval prompt, nor in the vault's audit log or in clear on disk.

use serde_json::{json, Value};

use super::mcp::{Answer, Session, ERAS};
use super::mcp_canary::{approval_prompts, call_each, read_each};
use super::mcp_personal::{audit_lines, connect, vault};
use crate::serve_support::{files, Vault};

const EXCLUDED: &str = "CANARY-MCP-ROLE-EXCLUDED-71c0";
const ABOVE_CEILING: &str = "CANARY-MCP-ABOVE-CEILING-2a9e";
const OUT_OF_SCOPE: &str = "CANARY-MCP-TOKEN-SCOPE-d04b";
const REDACTED: &str = "CANARY-MCP-REDACTED-PATH-5f13";
const CRITICAL: &str = "CANARY-MCP-CRITICAL-88e2";
const CANARIES: [&str; 5] = [EXCLUDED, ABOVE_CEILING, OUT_OF_SCOPE, REDACTED, CRITICAL];
const SHOWN: &str = "visible-through-mcp";
const SENSITIVE: &str = "sensitive-after-approval";

/// The vault's consumer role: no `preferences.hidden.*`, nothing above sensitive,
/// `account` redacted from structured values.
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

const IDS: [&str; 9] = [
    "identity.full_name",
    "identity.dob",
    "identity.ssn",
    "preferences.hidden.note",
    "preferences.card",
    "financial.bank_account_number",
    "employment.employer",
    "identity.nothing",
    "medical.allergies",
];

fn tool_calls() -> Vec<(&'static str, Value)> {
    let mut calls = vec![
        ("context_status", json!({})),
        ("context_list", json!({})),
        ("context_context", json!({})),
        ("context_context", json!({"max_sensitivity": "standard"})),
        ("context_context", json!({"max_sensitivity": "critical"})),
        (
            "request_context",
            json!({"scope": IDS, "purpose": "the canary check"}),
        ),
        (
            "request_context",
            json!({"scope": ["employment", "preferences"], "purpose": "p"}),
        ),
        (
            "context_set",
            json!({"id": "preferences.hidden.note", "value": "x"}),
        ),
        (
            "context_set",
            json!({"id": "employment.employer", "value": "x"}),
        ),
        (
            "context_set",
            json!({"id": "financial.bank_account_number", "value": "x"}),
        ),
        ("context_set", json!({"id": "identity.ssn", "value": "x"})),
        (
            "context_get",
            json!({"id": "identity.full_name", "agent": "owner"}),
        ),
    ];
    for id in IDS {
        calls.push(("context_get", json!({ "id": id })));
    }
    calls
}

async fn exercise(s: &Session) -> Vec<(String, String)> {
    let mut out = call_each(s, tool_calls()).await;
    let extra = ["context://nothing", "context://identity/identity.ssn"];
    out.extend(read_each(s, extra.map(str::to_string).to_vec()).await);
    out.extend(approval_prompts(s));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_canary_reaches_any_personal_mcp_answer() {
    let v = vault(&[]);
    narrow_consumer_role(&v);
    let v = {
        // Plant the fields as the user, through `ctx serve`.
        let mut s = v.serve(&[]);
        let user = s.unlock(&v);
        for (id, value) in [
            ("identity.full_name", json!(SHOWN)),
            ("identity.dob", json!(SENSITIVE)),
            ("preferences.hidden.note", json!(EXCLUDED)),
            ("financial.bank_account_number", json!(ABOVE_CEILING)),
            ("employment.employer", json!(OUT_OF_SCOPE)),
            (
                "preferences.card",
                json!({"account": REDACTED, "brand": "plain"}),
            ),
            ("identity.ssn", json!(CRITICAL)),
        ] {
            s.put(&user, id, value).expect(201);
        }
        s.stop();
        v
    };
    let mut failures = Vec::new();
    let mut seen = String::new();
    for era in ERAS {
        for (elicit, answer) in [(true, Answer::Approve), (false, Answer::Approve)] {
            let s = connect(
                &v,
                &[
                    "--scope",
                    "identity.*,preferences.*,financial.*",
                    "--mode",
                    "read-write",
                ],
                era,
                elicit,
                answer,
            )
            .await;
            for (what, text) in exercise(&s).await {
                seen.push_str(&text);
                let found: Vec<&str> = CANARIES
                    .iter()
                    .copied()
                    .filter(|c| text.contains(c))
                    .collect();
                if !found.is_empty() {
                    failures.push(format!(
                        "{era:?} elicit={elicit} {what} leaks {found:?}:\n{text}"
                    ));
                }
            }
            s.cancel().await.expect("close");
        }
    }
    assert!(
        seen.contains(SHOWN),
        "the in-scope value is served (the probe works)"
    );
    assert!(
        seen.contains(SENSITIVE),
        "an approved sensitive value is served"
    );
    assert!(seen.contains("\\\"brand\\\":\\\"plain\\\"") || seen.contains("\"brand\":\"plain\""));
    let log = audit_lines(&v);
    for c in CANARIES.iter().chain(&[SHOWN, SENSITIVE]) {
        if log.contains(c) {
            failures.push(format!("{c} is in the audit log"));
        }
        for (path, bytes) in files(&v.dir()) {
            if String::from_utf8_lossy(&bytes).contains(c) {
                failures.push(format!("{c} is in clear in {path}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
