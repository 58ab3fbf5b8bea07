//! One review queue: a proposal from any door (`context_set` over MCP, the
//! Context Layer's `ctx propose`) is listed, shown, approved, rejected and
//! committed with the same `ctx proposals` commands, with or without an
//! exchange; a committed proposal keeps its proposer's provenance and is never
//! canonical unless a person promotes it; `ctx add` writes structured content.

use serde_json::{json, Value};

use crate::exchange::{at, ClRepo};
use crate::mcp::{call, connect, shop, text, Answer, Era};
use crate::support::{ctx_env, Repo};

/// `context_set` of an id the agent may not write: a proposal, and its id.
async fn propose_over_mcp(repo: &Repo, id: &str, value: &str) -> String {
    let s = connect(
        repo.path(),
        &["--agent", "helper"],
        Era::Modern,
        true,
        Answer::Approve,
    )
    .await;
    let r = call(&s, "context_set", json!({"id": id, "value": value})).await;
    let v = r
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{}", text(&r)));
    assert_eq!(v["outcome"], "proposed", "{v}");
    s.cancel().await.expect("close");
    v["proposal_id"].as_str().expect("id").to_string()
}

fn as_person(repo: &Repo, args: &[&str]) -> crate::support::Run {
    ctx_env(repo, args, &[("USER", "kim")])
}

#[tokio::test(flavor = "current_thread")]
async fn an_mcp_proposal_is_reviewed_and_committed_without_an_exchange() {
    let repo = shop();
    let id = propose_over_mcp(&repo, "policies.refunds", "Refunds within 90 days.").await;
    // Listed (no exchange, no anchor: the queue still works).
    let l = repo.ctx(&["proposals", "list", "--format", "json"]);
    assert_eq!(l.code, 0, "{}", l.describe());
    let all = l.json();
    let entry = all
        .as_array()
        .expect("list")
        .iter()
        .find(|p| p["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not listed: {all}"));
    assert_eq!(entry["status"], "pending_validation");
    assert_eq!(entry["door"], "mcp");
    assert_eq!(entry["submitted_by"], "helper");
    assert_eq!(entry["targets"], json!(["policies.refunds"]));
    let human = repo.ctx(&["proposals", "list"]);
    assert!(human.stdout.contains(&id), "{}", human.stdout);
    // Shown, by id or a unique prefix of its hex.
    let show = repo.ctx(&["proposals", "show", &id["prop_".len()..][..10]]);
    assert_eq!(show.code, 0, "{}", show.describe());
    assert_eq!(show.json()["proposal"]["value"], "Refunds within 90 days.");
    // Not committed before it is approved.
    let early = as_person(&repo, &["proposals", "commit", &id]);
    assert_eq!(early.code, 1, "{}", early.describe());
    assert!(
        early.stderr.contains("PROPOSAL_STATE_INVALID"),
        "{}",
        early.stderr
    );
    let a = as_person(&repo, &["proposals", "approve", &id, "--reason", "checked"]);
    assert_eq!(a.code, 0, "{}", a.describe());
    assert!(a.stdout.contains("approved"), "{}", a.stdout);
    let c = as_person(&repo, &["proposals", "commit", &id]);
    assert_eq!(c.code, 0, "{}", c.describe());
    assert!(c.stdout.contains("policies.refunds@2"), "{}", c.stdout);
    let got = repo
        .ctx(&["get", "policies.refunds", "--format", "json"])
        .json();
    assert_eq!(got["version"], 2, "{got}");
    assert_eq!(got["authority"], "observed", "{got}");
    let ext = &got["extensions"]["ctx.proposal"];
    assert_eq!(ext["proposed_by"], "helper", "{got}");
    assert_eq!(ext["door"], "mcp", "{got}");
    assert_eq!(ext["proposal"], id.as_str(), "{got}");
    assert_eq!(ext["committed_by"], "human:kim", "{got}");
    assert!(got["content"].as_str().unwrap_or("").contains("90 days"));
    // Version 1 stays; the repository stays valid; the proposal is done.
    let v1 = std::fs::read_to_string(repo.path().join("policies/refunds.md")).unwrap();
    assert!(v1.contains("30 days"));
    let v = repo.ctx(&["validate"]);
    assert_eq!(v.code, 0, "{}", v.describe());
    let shown = repo.ctx(&["proposals", "show", &id]).json();
    assert_eq!(shown["status"], "committed", "{shown}");
    let steps: Vec<&str> = shown["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|h| h["status"].as_str())
        .collect();
    assert_eq!(steps, ["approved", "committed"], "{shown}");
    let again = as_person(&repo, &["proposals", "commit", &id]);
    assert_eq!(again.code, 1, "{}", again.describe());
    // The audit log names the person who wrote it.
    let audit = std::fs::read_to_string(repo.path().join(".ctx/audit.jsonl")).unwrap();
    assert!(audit.contains("\"kim\""), "{audit}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_rejected_mcp_proposal_stays_and_is_never_committed() {
    let repo = shop();
    let id = propose_over_mcp(&repo, "policies.hours", "Open on Sundays.").await;
    let r = as_person(&repo, &["proposals", "reject", &id, "--reason", "wrong"]);
    assert_eq!(r.code, 0, "{}", r.describe());
    let l = repo.ctx(&["proposals", "list", "--format", "json"]).json();
    assert_eq!(l[0]["status"], "rejected", "{l}");
    assert_eq!(as_person(&repo, &["proposals", "approve", &id]).code, 1);
    assert_eq!(as_person(&repo, &["proposals", "commit", &id]).code, 1);
    let missing = repo.ctx(&["proposals", "show", "prop_000000000000000000000000"]);
    assert_eq!(missing.code, 3, "{}", missing.describe());
}

#[tokio::test(flavor = "current_thread")]
async fn an_edited_mcp_proposal_is_refused_not_reviewed() {
    let repo = shop();
    let id = propose_over_mcp(&repo, "policies.refunds", "Refunds within 90 days.").await;
    let path = repo.path().join(format!(".ctx/proposals/{id}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("90 days", "900 days")).unwrap();
    let l = repo.ctx(&["proposals", "list", "--format", "json"]).json();
    assert_eq!(l[0]["status"], "invalid", "{l}");
    let a = as_person(&repo, &["proposals", "approve", &id]);
    assert_eq!(a.code, 1, "{}", a.describe());
    assert!(
        a.stderr.contains("RECORD_INTEGRITY_MISMATCH"),
        "{}",
        a.stderr
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_proposer_must_still_be_allowed_at_commit() {
    let repo = shop();
    let id = propose_over_mcp(&repo, "policies.refunds", "Refunds within 90 days.").await;
    assert_eq!(as_person(&repo, &["proposals", "approve", &id]).code, 0);
    // The policy changes between review and commit: helper loses policies.
    let m = std::fs::read_to_string(repo.path().join("opencontext.yaml")).unwrap();
    repo.write(
        "opencontext.yaml",
        &m.replace(
            "include: [\"policies.*\", \"customers.*\", \"notes.*\"]",
            "include: [\"customers.*\", \"notes.*\"]",
        ),
    );
    let c = as_person(&repo, &["proposals", "commit", &id]);
    assert_eq!(c.code, 1, "{}", c.describe());
    assert!(
        c.stderr.contains("PROPOSAL_TARGET_NOT_PERMITTED"),
        "{}",
        c.stderr
    );
    assert!(!repo.path().join("policies/refunds.v2.md").exists());
}

/// The Context Layer door: a support agent's contradiction of a canonical policy.
fn exchange_proposal(r: &ClRepo) -> String {
    let env = r.bundle("m", &["--action", "memory.propose"]);
    assert_eq!(r.open(&env, "support-agent", 3).code, 0);
    let b = r.envelope(&env)["bundle"].clone();
    let handle = b["context"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["value"]["id"] == "policies.refunds")
        .unwrap()["provenance_handles"][0]
        .as_str()
        .unwrap()
        .to_string();
    let cand = json!({"operation": "add_or_contradict",
        "proposed_claims": [{"predicate": "policies.refunds", "object": {"value": "Refunds within 14 days.", "datatype": "text"}, "confidence": 0.7}],
        "provenance_handles": [handle], "rationale": "ticket 42"});
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
    p.json()["id"].as_str().unwrap().to_string()
}

#[test]
fn a_committed_claim_keeps_its_provenance_and_is_not_canonical() {
    let r = ClRepo::init();
    let id = exchange_proposal(&r);
    // The same queue lists it, with its door.
    let l = r.run(&["proposals", "list", "--format", "json", "--at", &at(5)]);
    assert_eq!(l.code, 0, "{}", l.stderr);
    let e = l.json()[0].clone();
    assert_eq!(e["door"], "context-layer", "{e}");
    assert_eq!(e["submitted_by"], "urn:ctx:agent:support-agent", "{e}");
    assert_eq!(
        r.run(&["proposals", "approve", &id, "--at", &at(5)]).code,
        0
    );
    let c = r.run(&["proposals", "commit", &id, "--at", &at(6), "--as", "alice"]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let new = std::fs::read_to_string(r.file("context/policies/refunds.v2.md")).unwrap();
    assert!(new.contains("authority: observed"), "{new}");
    assert!(!new.contains("canonical_source: true"), "{new}");
    assert!(new.contains("confidence: 0.7"), "{new}");
    assert!(new.contains("urn:ctx:agent:support-agent"), "{new}");
    assert!(new.contains("\"door\":\"context-layer\""), "{new}");
    assert!(new.contains("\"committed_by\":\"human:alice\""), "{new}");
    // No sign-off for an observed claim: nobody signed it off as canonical.
    let signoffs =
        std::fs::read_to_string(r.file(".ctx/signoffs/policies.refunds.json")).unwrap_or_default();
    assert!(!signoffs.contains("\"version\": 2"), "{signoffs}");
    let v = r.run(&["validate", "--strict"]);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
}

#[test]
fn a_person_promotes_a_claim_and_the_sign_off_names_them() {
    let r = ClRepo::init();
    let id = exchange_proposal(&r);
    assert_eq!(
        r.run(&["proposals", "approve", &id, "--at", &at(5)]).code,
        0
    );
    let c = r.run(&[
        "proposals",
        "commit",
        &id,
        "--at",
        &at(6),
        "--promote",
        "--authority",
        "canonical",
        "--as",
        "alice",
    ]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let new = std::fs::read_to_string(r.file("context/policies/refunds.v2.md")).unwrap();
    assert!(new.contains("authority: canonical"), "{new}");
    let ledger: Value = serde_json::from_str(
        &std::fs::read_to_string(r.file(".ctx/signoffs/policies.refunds.json")).unwrap(),
    )
    .unwrap();
    let v2 = ledger["signoffs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["version"] == 2)
        .unwrap_or_else(|| panic!("{ledger}"));
    assert_eq!(v2["by"], "human:alice", "{ledger}");
    assert_eq!(r.run(&["validate", "--strict"]).code, 0);
}

#[test]
fn add_writes_structured_content_from_a_file_or_stdin() {
    let repo = Repo::new(&[
        (
            "opencontext.yaml",
            "opencontext: \"1.0\"\nid: data\ncollections:\n  configs: ./configs/**\n",
        ),
        ("in/limits.yaml", "max_refund: 500\nregions: [eu, us]\n"),
        ("in/notes.md", "Refunds are **capped**.\n"),
    ]);
    let a = repo.ctx(&[
        "add",
        "configs.limits",
        "--type",
        "config",
        "--data",
        "in/limits.yaml",
    ]);
    assert_eq!(a.code, 0, "{}", a.describe());
    let got = repo
        .ctx(&["get", "configs.limits", "--format", "json"])
        .json();
    assert_eq!(
        got["content"],
        json!({"max_refund": 500, "regions": ["eu", "us"]})
    );
    assert!(repo.path().join("configs/limits.json").exists());
    let b = crate::support::ctx_in(&repo)
        .args(["add", "configs.flags", "--type", "config", "--data", "-"])
        .stdin("{\"beta\": true}")
        .run();
    assert_eq!(b.code, 0, "{}", b.describe());
    let got = repo
        .ctx(&["get", "configs.flags", "--format", "json"])
        .json();
    assert_eq!(got["content"], json!({"beta": true}));
    let c = repo.ctx(&[
        "add",
        "configs.notes",
        "--type",
        "note",
        "--content-file",
        "in/notes.md",
    ]);
    assert_eq!(c.code, 0, "{}", c.describe());
    let got = repo
        .ctx(&["get", "configs.notes", "--format", "json"])
        .json();
    assert_eq!(got["content"], "Refunds are **capped**.");
}

#[test]
fn add_refuses_bad_data_and_files_outside_the_repository() {
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "secret: 1\n").unwrap();
    let repo = Repo::new(&[
        (
            "opencontext.yaml",
            "opencontext: \"1.0\"\nid: data\ncollections:\n  configs: ./configs/**\n",
        ),
        ("in/bad.json", "{\"a\": 1, \"a\": 2}"),
    ]);
    let o = repo.ctx(&[
        "add",
        "configs.x",
        "--type",
        "config",
        "--data",
        outside.path().to_str().unwrap(),
    ]);
    assert_eq!(o.code, 2, "{}", o.describe());
    assert!(o.stderr.contains("outside the repository"), "{}", o.stderr);
    let d = repo.ctx(&[
        "add",
        "configs.x",
        "--type",
        "config",
        "--data",
        "in/bad.json",
    ]);
    assert_eq!(d.code, 1, "{}", d.describe());
    assert!(d.stderr.contains("in/bad.json"), "{}", d.stderr);
    let m = repo.ctx(&[
        "add",
        "configs.x",
        "--type",
        "config",
        "--data",
        "in/none.yaml",
    ]);
    assert_ne!(m.code, 0, "{}", m.describe());
    assert!(m.stderr.contains("in/none.yaml"), "{}", m.stderr);
    let both = repo.ctx(&[
        "add",
        "configs.x",
        "--type",
        "config",
        "--data",
        "in/bad.json",
        "--content",
        "x",
    ]);
    assert_eq!(both.code, 2, "{}", both.describe());
    assert!(!repo.path().join("configs").exists(), "nothing was written");
}

#[tokio::test(flavor = "current_thread")]
async fn a_granted_mcp_write_is_the_library_write_ctx_add_makes() {
    let repo = shop();
    let s = connect(
        repo.path(),
        &["--agent", "helper"],
        Era::Modern,
        true,
        Answer::Approve,
    )
    .await;
    let w = call(
        &s,
        "context_set",
        json!({"id": "notes.acme-language", "value": "Acme writes in German.", "sensitivity": "standard"}),
    )
    .await;
    let v = w
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{}", text(&w)));
    assert_eq!(v["outcome"], "written", "{v}");
    s.cancel().await.expect("close");
    // One write event, from the library's write operation, naming the agent.
    let audit = std::fs::read_to_string(repo.path().join(".ctx/audit.jsonl")).unwrap();
    let writes: Vec<Value> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e.to_string().contains("notes.acme-language"))
        .collect();
    assert_eq!(writes.len(), 1, "{audit}");
    assert!(writes[0].to_string().contains("helper"), "{}", writes[0]);
    // What ctx add --agent helper would refuse, context_set refuses too: the
    // same grant decides (helper has none for policies).
    let add = repo.ctx(&[
        "add",
        "policies.x",
        "--type",
        "policy",
        "--agent",
        "helper",
        "--content",
        "x",
    ]);
    assert_eq!(add.code, 1, "{}", add.describe());
    let v = repo.ctx(&["validate"]);
    assert_eq!(v.code, 0, "{}", v.describe());
}
