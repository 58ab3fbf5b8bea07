//! The canary matrix's MCP row: the canary repository of `canary.rs` (unique
//! strings planted in denied, unreadable, excluded, over-classified,
//! out-of-scope, invalid-governance, private and redacted places) served by
//! `ctx mcp`, for the same consumers, in both protocol eras, by a client
//! that approves every request and by one that cannot elicit. Every tool,
//! resource and prompt is called; no canary may appear in any answer or
//! error, nor in any file the server wrote (audit log, receipts, proposals).
//! An MCP client never sees more than `ctx resolve` gives the same consumer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::{json, Value};

use super::canary::{PrivateRepo, CANARIES, GATED_CANARY};
use super::mcp::{connect_with, Answer, Session, ERAS};

/// Ids the calls name (never an id that is itself a canary: a refusal may echo it).
const IDS: [&str; 13] = [
    "c.gated",
    "mission",
    "c.visible",
    "c.visible@1",
    "c.denied",
    "c.noread",
    "c.excluded.x",
    "c.restricted",
    "c.invalid",
    "c.uri",
    "c.broken",
    "c.old",
    "vault.passport",
];

/// Every tool call, with arguments that carry no canary.
fn tool_calls() -> Vec<(&'static str, Value)> {
    let mut calls = vec![
        ("context_status", json!({})),
        ("context_list", json!({})),
        ("context_list", json!({"collection": "c"})),
        ("context_list", json!({"collection": "outside"})),
        ("context_list", json!({"collection": "vault"})),
        ("search", json!({"query": "visible customer"})),
        ("search", json!({"query": "CNRY"})),
        ("search", json!({"query": "passport ssn pin email"})),
        ("context_context", json!({})),
        ("context_context", json!({"max_tokens": 100})),
        ("resolve", json!({"task": "customer passport ssn"})),
        (
            "resolve",
            json!({"task": "anything", "include": ["c.*", "outside.*", "vault.*"]}),
        ),
        (
            "resolve",
            json!({"task": "one", "limit": 1, "max_tokens": 200}),
        ),
        (
            "request_context",
            json!({"scope": ["c.*", "outside.*", "vault.*", "mission"], "purpose": "the canary check"}),
        ),
        (
            "context_set",
            json!({"id": "c.fresh", "value": "a new note"}),
        ),
        (
            "context_set",
            json!({"id": "c.denied", "value": "overwrite attempt", "sensitivity": "critical"}),
        ),
        // An argument trying to widen the consumer.
        ("resolve", json!({"task": "x", "role": "owner"})),
    ];
    for id in IDS {
        calls.push(("context_get", json!({ "id": id })));
    }
    calls
}

fn resource_uris() -> Vec<String> {
    let mut uris: Vec<String> = [
        "context://c",
        "context://outside",
        "context://vault",
        "context://context",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for id in IDS {
        let collection = id.split('.').next().unwrap_or(id);
        let collection = if collection == "mission" {
            "context"
        } else {
            collection
        };
        uris.push(format!("context://{collection}/{id}"));
    }
    uris
}

/// `tools/list`, then each call: every answer as text (results and protocol
/// errors alike). Shared with the personal vault's row.
pub async fn call_each(s: &Session, calls: Vec<(&'static str, Value)>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let tools = s.list_all_tools().await.expect("tools/list");
    out.push(("tools/list".into(), serde_json::to_string(&tools).unwrap()));
    for (name, args) in calls {
        let mut p = rmcp::model::CallToolRequestParams::new(name.to_string());
        p.arguments = args.as_object().cloned();
        let shown = match s.call_tool(p).await {
            Ok(r) => serde_json::to_string(&r).unwrap(),
            Err(e) => format!("protocol error: {e}"),
        };
        out.push((format!("{name} {args}"), shown));
    }
    out
}

/// `resources/list`, then a read of every listed resource and of `extra`: every
/// answer as text.
pub async fn read_each(s: &Session, extra: Vec<String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let listed = s.list_all_resources().await.expect("resources/list");
    out.push((
        "resources/list".into(),
        serde_json::to_string(&listed).unwrap(),
    ));
    let mut uris = extra;
    uris.extend(listed.iter().map(|r| r.uri.clone()));
    uris.sort();
    uris.dedup();
    for uri in uris {
        let shown = match s
            .read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
        {
            Ok(r) => serde_json::to_string(&r).unwrap(),
            Err(e) => format!("protocol error: {e}"),
        };
        out.push((format!("resources/read {uri}"), shown));
    }
    out
}

/// Every approval prompt the client was shown in this session.
pub fn approval_prompts(s: &Session) -> Vec<(String, String)> {
    let shown = s.service().prompts.lock().unwrap();
    shown
        .iter()
        .map(|p| ("approval prompt".to_string(), p.clone()))
        .collect()
}

/// Every answer of one session, as text (results and protocol errors alike).
async fn exercise(s: &Session) -> Vec<(String, String)> {
    let mut out = call_each(s, tool_calls()).await;
    out.extend(read_each(s, resource_uris()).await);
    let prompts = s.list_all_prompts().await.expect("prompts/list");
    out.push((
        "prompts/list".into(),
        serde_json::to_string(&prompts).unwrap(),
    ));
    for p in &prompts {
        let mut args = serde_json::Map::new();
        for a in p.arguments.iter().flatten() {
            args.insert(
                a.name.clone(),
                json!("the customer asks about their account"),
            );
        }
        let mut req = GetPromptRequestParams::new(p.name.clone());
        req.arguments = Some(args);
        let shown = match s.get_prompt(req).await {
            Ok(r) => serde_json::to_string(&r).unwrap(),
            Err(e) => format!("protocol error: {e}"),
        };
        out.push((format!("prompts/get {}", p.name), shown));
    }
    out.extend(approval_prompts(s));
    out
}

/// Every file under `dir` (but `.git`), with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                if e.file_name() != ".git" {
                    stack.push(p);
                }
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn leaks(text: &str) -> Vec<&'static str> {
    CANARIES
        .iter()
        .copied()
        .filter(|c| text.contains(c))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn no_canary_reaches_any_mcp_answer_in_either_era() {
    let p = PrivateRepo::new().expect("fixture");
    let dir = p.repo.path();
    let before = snapshot(dir);
    let mut failures = Vec::new();
    let mut answers = 0;
    let mut visible_seen = false;
    let mut gated_seen = false;
    for who in [["--role", "support"], ["--agent", "bot"]] {
        for era in ERAS {
            // A user who approves everything, and a client that cannot ask.
            for (elicit, answer) in [(true, Answer::Approve), (false, Answer::Decline)] {
                let home = p.config.path();
                let env = [("HOME", home), ("XDG_CONFIG_HOME", home)];
                let approves = elicit && matches!(answer, Answer::Approve);
                let s = connect_with(dir, &who, &env, era, elicit, answer).await;
                for (what, text) in exercise(&s).await {
                    answers += 1;
                    visible_seen |= text.contains("ACME visible v2");
                    let mut found = leaks(&text);
                    // Approval-gated content: only for the user who approves.
                    if text.contains(GATED_CANARY) {
                        if approves {
                            gated_seen = true;
                        } else {
                            found.push(GATED_CANARY);
                        }
                    }
                    if !found.is_empty() {
                        failures.push(format!(
                            "{who:?} {era:?} elicit={elicit} {what} leaks {found:?}:\n{text}"
                        ));
                    }
                }
                s.cancel().await.expect("close");
            }
        }
    }
    assert!(
        visible_seen,
        "the visible object was served (the test can fail)"
    );
    assert!(
        gated_seen,
        "the gated object was served once approved (the gated row can fail)"
    );
    assert!(answers > 200, "{answers} answers");
    let written: Vec<(PathBuf, String)> = snapshot(dir)
        .into_iter()
        .filter(|(path, bytes)| before.get(path) != Some(bytes))
        // The parse cache mirrors the repository's own (non-private) files for the
        // next load; it is no output (outside git it lives in .ctx/cache).
        .filter(|(path, _)| !path.components().any(|c| c.as_os_str() == "cache"))
        .map(|(path, bytes)| (path, String::from_utf8_lossy(&bytes).into_owned()))
        .collect();
    assert!(
        written.iter().any(|(p, _)| p.ends_with(".ctx/audit.jsonl")),
        "the audit log was written"
    );
    for (path, text) in &written {
        let mut found = leaks(text);
        if text.contains(GATED_CANARY) {
            found.push(GATED_CANARY);
        }
        if !found.is_empty() {
            failures.push(format!("{} leaks {found:?}", path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
