//! `ctx mcp` driven by rmcp's own client over stdio, in both protocol eras:
//! the harness, listing, and every tool on public and internal context.
//! Approval flows are in `mcp_approval.rs`; raw JSON-RPC in `mcp_wire.rs`.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{json, Value};

use crate::support::Repo;

/// The two protocol eras a client may land in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` at 2025-11-25: the server sends `elicitation/create`.
    Handshake,
    /// `server/discover` at 2026-07-28: input-required results and sealed request state.
    Modern,
}

pub const ERAS: [Era; 2] = [Era::Handshake, Era::Modern];

/// How the test user answers an approval request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Accept with `approve: true` (and the confirmation the prompt asks for, if any).
    Approve,
    /// Accept, but type this confirmation.
    ApproveTyping(String),
    /// Accept with `approve: false`.
    Refuse,
    Decline,
    Cancel,
}

/// A scripted MCP client: declares elicitation or not, answers as told,
/// and remembers every approval prompt it was shown.
#[derive(Clone)]
pub struct TestClient {
    pub elicit: bool,
    pub answer: Answer,
    pub version: ProtocolVersion,
    pub prompts: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for TestClient {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Err(ErrorData::invalid_params("form mode only", None));
        };
        self.prompts.lock().unwrap().push(message.clone());
        let confirm = message
            .split("type exactly: ")
            .nth(1)
            .map(|s| s.lines().next().unwrap_or("").to_string());
        Ok(match &self.answer {
            Answer::Approve => {
                let mut c = json!({"approve": true});
                if let Some(t) = confirm {
                    c["confirm"] = json!(t);
                }
                ElicitResult::new(ElicitationAction::Accept).with_content(c)
            }
            Answer::ApproveTyping(t) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"approve": true, "confirm": t})),
            Answer::Refuse => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": false}))
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    fn get_info(&self) -> ClientConfig {
        let caps = if self.elicit {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new("ctx-test-client", "1.0"))
            .with_protocol_version(self.version.clone())
    }
}

pub type Session = RunningService<RoleClient, TestClient>;

/// Start `ctx mcp <args>` in `dir` and connect in `era`.
pub async fn connect(dir: &Path, args: &[&str], era: Era, elicit: bool, answer: Answer) -> Session {
    connect_with(dir, args, &[], era, elicit, answer).await
}

/// [`connect`] with extra environment variables for the server.
pub async fn connect_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    era: Era,
    elicit: bool,
    answer: Answer,
) -> Session {
    let client = TestClient {
        elicit,
        answer,
        version: match era {
            Era::Handshake => ProtocolVersion::V_2025_11_25,
            Era::Modern => ProtocolVersion::V_2026_07_28,
        },
        prompts: Arc::default(),
    };
    let mut cmd = std::process::Command::new(crate::support::CTX);
    crate::support::hermetic::apply(&mut cmd, &crate::support::hermetic::server_home());
    cmd.arg("mcp")
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ctx mcp starts");
    match era {
        Era::Handshake => client.serve(transport).await.expect("initialize"),
        Era::Modern => client
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("server/discover"),
    }
}

/// Call a tool; the client drives any input-required rounds itself.
pub async fn call(s: &Session, name: &str, args: Value) -> CallToolResult {
    let mut p = CallToolRequestParams::new(name.to_string());
    p.arguments = args.as_object().cloned();
    s.call_tool(p)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Everything a tool result says, as one string (text blocks and structured content).
pub fn text(r: &CallToolResult) -> String {
    let mut out: Vec<String> = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if let Some(s) = &r.structured_content {
        out.push(s.to_string());
    }
    out.join("\n")
}

pub fn is_error(r: &CallToolResult) -> bool {
    r.is_error == Some(true)
}

pub const CONFIDENTIAL: &str = "ACME-CONFIDENTIAL-CANARY-4411";
pub const RESTRICTED: &str = "VAULT-RESTRICTED-CANARY-7731";
pub const DENIED: &str = "HR-DENIED-CANARY-0042";

/// A shop repository with every tier, an agent-written note and an object
/// the agent may not read.
pub fn shop() -> Repo {
    Repo::new(&[
        (
            "opencontext.yaml",
            r#"opencontext: "1.0"
id: shop
collections:
  policies: {source: ./policies/**, type: policy}
  customers: {source: ./customers/**, type: customer}
  notes: ./notes/**
  hr: {source: ./hr/**, type: record}
roles:
  support:
    include: ["policies.*", "customers.*", "notes.*"]
    max_classification: restricted
  intern:
    include: ["policies.*"]
agents:
  helper:
    roles: [support]
  trainee:
    roles: [intern]
audit:
  context_reads: true
  context_writes: true
  decisions: true
extensions:
  ctx.write:
    helper: ["notes.*"]
  ctx.prompts:
    - name: refund-answer
      description: Answer a refund question
      scope: ["policies.*"]
      task: "refund {question}"
      template: "Answer this refund question: {question}"
      arguments:
        - name: question
          required: true
"#,
        ),
        (
            "policies/refunds.md",
            "---\ntitle: Refund policy\ntags: [refund]\n---\nRefunds are accepted within 30 days of purchase.\n",
        ),
        (
            "policies/hours.md",
            &format!(
                "---\ntitle: Opening hours\nclassification: public\n---\n{}\n",
                "We answer support mail on weekdays, from nine to five, and on public holidays we reply the next working day. ".repeat(4)
            ),
        ),
        (
            "customers/acme.md",
            &format!("---\ntitle: Acme contract\nclassification: confidential\n---\nAcme pays 120k a year. {CONFIDENTIAL}\n"),
        ),
        (
            "customers/vault.md",
            &format!("---\ntitle: Vault codes\nclassification: restricted\n---\nThe door code is {RESTRICTED}.\n"),
        ),
        (
            "notes/timezone.md",
            "---\ntitle: Customer timezone\ntype: note\nextensions:\n  ctx.memory:\n    written_by: other-agent\n---\nAcme works in CET.\n",
        ),
        (
            "hr/salaries.md",
            &format!("---\ntitle: Salaries\n---\n{DENIED}\n"),
        ),
    ])
}

#[tokio::test(flavor = "current_thread")]
async fn lists_tools_resources_and_prompts_in_both_eras() {
    let repo = shop();
    for era in ERAS {
        let s = connect(
            repo.path(),
            &["--agent", "helper"],
            era,
            true,
            Answer::Approve,
        )
        .await;
        let tools = s.list_all_tools().await.expect("tools/list");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for want in [
            "context_status",
            "context_list",
            "context_get",
            "context_context",
            "context_set",
            "request_context",
            "resolve",
            "search",
        ] {
            assert!(
                names.contains(&want),
                "{era:?}: {want} missing from {names:?}"
            );
        }
        let get = tools.iter().find(|t| t.name == "context_get").expect("get");
        let schema = serde_json::to_value(get.input_schema.as_ref()).expect("schema");
        assert_eq!(schema["additionalProperties"], json!(false), "{schema}");
        assert_eq!(schema["required"], json!(["id"]));
        assert!(schema["properties"]["id"]["pattern"].is_string());
        assert!(get
            .description
            .as_deref()
            .unwrap_or("")
            .contains("approval"));

        let resources = s.list_all_resources().await.expect("resources/list");
        let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        assert!(uris.contains(&"context://policies"), "{uris:?}");
        assert!(
            uris.contains(&"context://customers/customers.acme"),
            "{uris:?}"
        );
        assert!(
            !uris.iter().any(|u| u.contains("hr")),
            "denied collection listed: {uris:?}"
        );

        let prompts = s.list_all_prompts().await.expect("prompts/list");
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["refund-answer", "support-reply", "add-command"],
            "{era:?}"
        );
        s.cancel().await.expect("close");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn status_list_search_and_get_answer_within_scope() {
    let repo = shop();
    for era in ERAS {
        let s = connect(
            repo.path(),
            &["--agent", "helper"],
            era,
            true,
            Answer::Decline,
        )
        .await;
        let st = call(&s, "context_status", json!({})).await;
        let v = st.structured_content.clone().expect("structured");
        assert_eq!(v["visible_objects"], 5, "{v}");
        assert_eq!(v["consumer"]["id"], "helper");

        let list = call(&s, "context_list", json!({})).await;
        let t = text(&list);
        assert!(
            t.contains("customers.vault") && t.contains("\"needs_approval\":true"),
            "{t}"
        );
        assert!(
            !t.contains(RESTRICTED) && !t.contains(CONFIDENTIAL),
            "list leaked a value"
        );
        assert!(!t.contains("hr.salaries"), "out-of-scope object listed");
        assert!(t.contains("written by agent `other-agent`"), "{t}");

        let hits = call(&s, "search", json!({"query": "refund"})).await;
        assert!(text(&hits).contains("policies.refunds"));
        let none = call(&s, "search", json!({"query": "salaries"})).await;
        assert!(!text(&none).contains("hr.salaries"));

        let got = call(&s, "context_get", json!({"id": "policies.refunds"})).await;
        assert!(!is_error(&got));
        assert!(text(&got).contains("within 30 days"), "{}", text(&got));

        let missing = call(&s, "context_get", json!({"id": "hr.salaries"})).await;
        assert!(is_error(&missing));
        let m = text(&missing);
        assert!(
            m.contains("no object `hr.salaries` is visible") && !m.contains(DENIED),
            "{m}"
        );

        let note = call(&s, "context_get", json!({"id": "notes.timezone"})).await;
        assert!(
            text(&note).contains("written by agent `other-agent`, not by a person"),
            "{}",
            text(&note)
        );
        s.cancel().await.expect("close");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn resolve_context_and_request_context_respect_budgets_and_scope() {
    let repo = shop();
    let s = connect(
        repo.path(),
        &["--agent", "trainee"],
        Era::Modern,
        true,
        Answer::Decline,
    )
    .await;
    let r = call(&s, "resolve", json!({"task": "refund"})).await;
    let v = r.structured_content.clone().expect("structured");
    assert!(v["digest"].as_str().unwrap_or("").starts_with("sha256:"));
    assert_eq!(
        v["objects"],
        json!(["policies.refunds", "policies.hours"]),
        "{v}"
    );
    // The budget covers the whole answer: every answer fits it, keeps the most
    // relevant objects first, and some budget keeps exactly the first one.
    let mut kept_one = None;
    for max in (500..=3000).step_by(50) {
        let r = call(&s, "resolve", json!({"task": "refund", "max_tokens": max})).await;
        let whole = serde_json::to_string(&r)
            .unwrap()
            .chars()
            .count()
            .div_ceil(4);
        assert!(whole <= max, "{max}: the answer is about {whole} tokens");
        let b = r.structured_content.clone().expect("structured");
        let objects = b["objects"].as_array().cloned().unwrap_or_default();
        let ranked = json!(["policies.refunds", "policies.hours"]);
        assert_eq!(
            &ranked.as_array().unwrap()[..objects.len()],
            &objects[..],
            "{b}"
        );
        if objects.len() == 1 && kept_one.is_none() {
            kept_one = Some(max);
            assert_eq!(b["budget"]["trimmed"][0]["id"], "policies.hours", "{b}");
            assert!(text(&r).contains("ctx-estimate-v1"));
            assert_eq!(b["excluded"]["by_reason"]["not-relevant"], 1, "{b}");
            assert_eq!(b["excluded"]["first"][0]["id"], "policies.hours", "{b}");
        }
    }
    assert!(
        kept_one.is_some(),
        "some budget keeps only the most relevant object"
    );

    let ctx = call(&s, "context_context", json!({})).await;
    let c = ctx.structured_content.clone().expect("structured");
    assert_eq!(
        c["collections"]["policies"].as_array().map(Vec::len),
        Some(2),
        "{c}"
    );

    let req = call(
        &s,
        "request_context",
        json!({"scope": ["policies.refunds", "customers.*"], "purpose": "answer a refund mail"}),
    )
    .await;
    let q = req.structured_content.clone().expect("structured");
    assert_eq!(q["granted"], json!(["policies.refunds"]), "{q}");
    assert_eq!(q["not_granted"], json!(["customers.*"]));
    assert_eq!(q["objects"], json!(["policies.refunds"]));
    s.cancel().await.expect("close");
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_argument_cannot_widen_the_consumer() {
    let repo = shop();
    for era in ERAS {
        let s = connect(
            repo.path(),
            &["--agent", "trainee"],
            era,
            true,
            Answer::Approve,
        )
        .await;
        for (tool, args) in [
            (
                "context_get",
                json!({"id": "customers.acme", "agent": "helper"}),
            ),
            ("resolve", json!({"task": "refund", "role": ["support"]})),
            ("context_list", json!({"consumer": "helper"})),
        ] {
            let r = call(&s, tool, args).await;
            assert!(is_error(&r), "{era:?} {tool}");
            let t = text(&r);
            assert!(
                t.contains("fixed when `ctx mcp` starts") && !t.contains(CONFIDENTIAL),
                "{t}"
            );
        }
        // Narrowing is fine, widening by pattern is not: trainee never sees customers.
        let r = call(
            &s,
            "resolve",
            json!({"task": "acme", "include": ["customers.*"]}),
        )
        .await;
        assert!(!text(&r).contains(CONFIDENTIAL));
        assert_eq!(r.structured_content.expect("s")["objects"], json!([]));
        s.cancel().await.expect("close");
    }
    let audit = std::fs::read_to_string(repo.path().join(".ctx/audit.jsonl")).expect("audit log");
    assert!(audit.contains("tried to change the consumer"), "{audit}");
}

#[tokio::test(flavor = "current_thread")]
async fn context_set_proposes_or_writes_through_the_governed_path() {
    let repo = shop();
    let s = connect(
        repo.path(),
        &["--agent", "helper"],
        Era::Modern,
        true,
        Answer::Approve,
    )
    .await;
    // A grant (`ctx.write: helper: [notes.*]`) and a new id: written, with written_by.
    let w = call(&s, "context_set", json!({"id": "notes.acme-language", "value": "Acme writes in German.", "sensitivity": "standard"})).await;
    let v = w
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{}", text(&w)));
    assert_eq!(v["outcome"], "written", "{v}");
    let got = repo.ctx(&["get", "notes.acme-language", "--format", "json"]);
    assert_eq!(got.code, 0, "{}", got.stderr);
    let obj = got.json();
    assert_eq!(
        obj["extensions"]["ctx.memory"]["written_by"], "helper",
        "{obj}"
    );
    assert_eq!(obj["authority"], "observed");
    assert!(obj["content"]
        .as_str()
        .unwrap_or("")
        .contains("Acme writes in German."));
    // No grant for policies: a proposal, nothing in the repository changes.
    let p = call(
        &s,
        "context_set",
        json!({"id": "policies.refunds", "value": "Refunds within 90 days."}),
    )
    .await;
    let v = p
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{}", text(&p)));
    assert_eq!(v["outcome"], "proposed", "{v}");
    let path = repo.path().join(v["path"].as_str().expect("path"));
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("proposal")).expect("json");
    assert_eq!(rec["written_by"], "helper");
    assert_eq!(rec["status"], "pending_validation");
    let policy = std::fs::read_to_string(repo.path().join("policies/refunds.md")).expect("policy");
    assert!(policy.contains("30 days"), "the policy was changed");
    // The repository stays valid with the agent's note in it.
    let run = repo.ctx(&["validate"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        !run.stdout.contains("× notes.acme-language"),
        "{}",
        run.stdout
    );
    s.cancel().await.expect("close");
}

#[tokio::test(flavor = "current_thread")]
async fn prompts_resolve_their_declared_scope() {
    let repo = shop();
    let s = connect(
        repo.path(),
        &["--agent", "helper"],
        Era::Handshake,
        true,
        Answer::Decline,
    )
    .await;
    let mut p = rmcp::model::GetPromptRequestParams::new("refund-answer");
    p.arguments = json!({"question": "can I return shoes?"})
        .as_object()
        .cloned();
    let r = s.get_prompt(p).await.expect("prompts/get");
    let all = serde_json::to_string(&r.messages).expect("json");
    assert!(
        all.contains("can I return shoes?") && all.contains("within 30 days"),
        "{all}"
    );
    assert!(!all.contains(CONFIDENTIAL), "prompt scope was widened");
    s.cancel().await.expect("close");
}
