//! The attacker's repros of the one-door issue, each through every door that
//! had it: a committed credential and an id that slips past an exclude are
//! never handed out by `ctx get`, `ctx resolve` or any MCP tool; search is no
//! oracle on approval-gated content; `context_set` answers alike for an id the
//! agent may not read and for one that does not exist.

use serde_json::json;

use super::mcp::{call, connect, is_error, text, Answer, Era, ERAS};
use crate::support::Repo;

const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const LEAKED: &str = "LEAKED-ESCALATION-CANARY-5561";
const GATED: &str = "ZEPHYR-QUOKKA-9104";

const MANIFEST: &str = r#"opencontext: "1.0"
id: one-door
collections:
  procedures: ./context/procedures/**
  policies: ./context/policies/**
  notes: ./context/notes/**
  board: ./context/board/**
roles:
  support:
    include: [procedures.*, policies.*, notes.*]
    exclude: [policies.internal.*]
    max_classification: confidential
agents:
  support-agent:
    roles: [support]
"#;

fn repo() -> Repo {
    let md = |id: &str, extra: &str, body: &str| {
        format!("---\nid: {id}\ntype: note\nowner: s\n{extra}---\n\n{body}\n")
    };
    let r = Repo::new(&[("opencontext.yaml", MANIFEST)]);
    r.write(
        "context/procedures/refunds.md",
        &md(
            "procedures.refunds",
            "title: Refunds\n",
            "Refunds within 30 days.",
        ),
    );
    r.write(
        "context/notes/creds.md",
        &md(
            "notes.creds",
            "title: Deploy\n",
            &format!("aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {SECRET}"),
        ),
    );
    // Declares an id the role may read from a folder the role excludes.
    r.write(
        "context/policies/internal/leak.md",
        &md(
            "procedures.leaked-escalation",
            "title: Escalation\n",
            LEAKED,
        ),
    );
    r.write(
        "context/notes/merger.md",
        &md(
            "notes.merger",
            "title: Merger notes\nclassification: confidential\n",
            &format!("deal {GATED} refunds"),
        ),
    );
    r.write(
        "context/board/talks.md",
        &md("board.talks", "title: Board\n", "board only"),
    );
    r
}

#[test]
fn the_command_line_refuses_what_findings_concern_and_names_the_way_out() {
    let r = repo();
    for args in [
        vec!["resolve", "--agent", "support-agent"],
        vec!["get", "notes.creds", "--agent", "support-agent"],
        vec![
            "get",
            "procedures.leaked-escalation",
            "--agent",
            "support-agent",
        ],
    ] {
        let run = r.ctx(&args);
        assert_eq!(run.code, 1, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("--allow-findings"), "{}", run.stderr);
        for canary in [SECRET, LEAKED] {
            assert!(!run.stdout.contains(canary) && !run.stderr.contains(canary));
        }
    }
    let allowed = r.ctx(&[
        "get",
        "notes.creds",
        "--agent",
        "support-agent",
        "--allow-findings",
    ]);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    assert!(allowed.stdout.contains(SECRET), "the operator asked for it");
    assert!(
        allowed.stderr.contains("secret-detected"),
        "{}",
        allowed.stderr
    );
    // A listing leaves them out, and says so on stderr.
    let list = r.ctx(&["list", "--agent", "support-agent", "--format", "json"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(!list.stdout.contains("leaked-escalation") && !list.stdout.contains("notes.creds"));
    assert!(
        list.stderr.contains("2 object(s) left out"),
        "{}",
        list.stderr
    );
}

#[tokio::test(flavor = "current_thread")]
async fn no_mcp_tool_hands_out_what_findings_concern() {
    let r = repo();
    for era in ERAS {
        let s = connect(
            r.path(),
            &["--agent", "support-agent"],
            era,
            true,
            Answer::Approve,
        )
        .await;
        let calls = [
            ("context_get", json!({"id": "notes.creds"})),
            ("context_get", json!({"id": "procedures.leaked-escalation"})),
            ("context_context", json!({})),
            ("resolve", json!({"task": "deploy escalation refunds"})),
            ("search", json!({"query": "escalation deploy"})),
            ("context_list", json!({})),
            (
                "request_context",
                json!({"scope": ["procedures.*", "notes.*"], "purpose": "the check"}),
            ),
        ];
        for (name, args) in calls {
            let out = text(&call(&s, name, args.clone()).await);
            for canary in [SECRET, LEAKED, "leaked-escalation", "policies/internal"] {
                // A refusal may echo the id the call itself named.
                let named = args.to_string().contains(canary);
                assert!(
                    named || !out.contains(canary),
                    "{era:?} {name} {args}: {canary} in {out}"
                );
            }
        }
        // A withheld object reads exactly as a missing one.
        let hidden = call(
            &s,
            "context_get",
            json!({"id": "procedures.leaked-escalation"}),
        )
        .await;
        let missing = call(&s, "context_get", json!({"id": "procedures.nothing-here"})).await;
        assert!(is_error(&hidden) && is_error(&missing));
        assert_eq!(
            text(&hidden).replace("procedures.leaked-escalation", "X"),
            text(&missing).replace("procedures.nothing-here", "X")
        );
        s.cancel().await.ok();
    }
}

#[tokio::test(flavor = "current_thread")]
async fn search_is_no_oracle_on_content_that_needs_approval() {
    let r = repo();
    // A client that cannot ask the user: the gated content is never searched.
    let s = connect(
        r.path(),
        &["--agent", "support-agent"],
        Era::Handshake,
        false,
        Answer::Refuse,
    )
    .await;
    let guess = text(&call(&s, "search", json!({"query": GATED})).await);
    assert!(
        !guess.contains("notes.merger"),
        "a right guess confirms nothing: {guess}"
    );
    let wrong = text(&call(&s, "search", json!({"query": "WRONG-GUESS-0000"})).await);
    assert_eq!(
        guess.replace(GATED, "Q"),
        wrong.replace("WRONG-GUESS-0000", "Q"),
        "a right and a wrong guess answer alike"
    );
    // What a listing shows of it (its title) is searchable.
    let titled = text(&call(&s, "search", json!({"query": "merger notes"})).await);
    assert!(titled.contains("notes.merger"), "{titled}");
    s.cancel().await.ok();
}

#[tokio::test(flavor = "current_thread")]
async fn context_set_answers_alike_for_hidden_and_missing_ids() {
    let r = repo();
    for era in ERAS {
        let s = connect(
            r.path(),
            &["--agent", "support-agent"],
            era,
            true,
            Answer::Approve,
        )
        .await;
        // Outside the read scope: refused the same way whether an object has the id.
        let hidden = call(
            &s,
            "context_set",
            json!({"id": "board.talks", "value": "x"}),
        )
        .await;
        let missing = call(
            &s,
            "context_set",
            json!({"id": "board.nothing", "value": "x"}),
        )
        .await;
        assert!(is_error(&hidden) && is_error(&missing), "{}", text(&hidden));
        assert_eq!(
            text(&hidden).replace("board.talks", "X"),
            text(&missing).replace("board.nothing", "X")
        );
        // Inside the read scope, an object the agent may not read (excluded by
        // folder, but declaring an in-scope id) answers as a missing id does.
        let hidden = call(
            &s,
            "context_set",
            json!({"id": "procedures.leaked-escalation", "value": "x"}),
        )
        .await;
        let missing = call(
            &s,
            "context_set",
            json!({"id": "procedures.other", "value": "x"}),
        )
        .await;
        let shape = |r: &rmcp::model::CallToolResult, id: &str| {
            let mut v = r.structured_content.clone().unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.remove("proposal_id");
                o.remove("path");
            }
            v.to_string().replace(id, "X")
        };
        assert_eq!(is_error(&hidden), is_error(&missing));
        assert_eq!(
            shape(&hidden, "procedures.leaked-escalation"),
            shape(&missing, "procedures.other"),
            "{}",
            text(&hidden)
        );
        assert!(
            !text(&hidden).contains("already exists"),
            "{}",
            text(&hidden)
        );
        s.cancel().await.ok();
    }
}

/// A memory proposal may name only ids its submitter may read: a bundle about
/// the refund rules cannot carry a claim about the board's merger talks.
#[test]
fn a_memory_proposal_cannot_target_what_its_author_may_not_read() {
    use super::exchange::{at, ClRepo};
    let r = ClRepo::init();
    let env = r.bundle("m", &["--action", "memory.propose"]);
    assert_eq!(r.open(&env, "support-agent", 3).code, 0);
    let b = r.envelope(&env)["bundle"].clone();
    let handle = b["context"][0]["provenance_handles"][0]
        .as_str()
        .unwrap()
        .to_string();
    let propose = |name: &str, predicate: &str| {
        let cand = json!({"operation": "add_or_contradict", "proposed_claims": [{"predicate": predicate,
            "object": {"value": "the agent's text", "datatype": "text"}, "confidence": 0.7}],
            "provenance_handles": [handle], "rationale": "r"});
        std::fs::write(r.file(name), cand.to_string()).unwrap();
        let envp = r.file(&env);
        r.run(&[
            "propose",
            name,
            "--bundle",
            envp.to_str().unwrap(),
            "--as",
            "support-agent",
            "--at",
            &at(4),
        ])
    };
    // Outside the support role's scope: refused alike whether or not it exists.
    let manifest = std::fs::read_to_string(r.file("opencontext.yaml")).unwrap();
    std::fs::write(
        r.file("opencontext.yaml"),
        manifest.replacen(
            "collections:\n",
            "collections:\n  board: ./context/board/**\n",
            1,
        ),
    )
    .unwrap();
    std::fs::create_dir_all(r.file("context/board")).unwrap();
    std::fs::write(
        r.file("context/board/merger-talks.md"),
        "---\nid: board.merger-talks\ntype: note\nowner: board\n---\n\nTalks.\n",
    )
    .unwrap();
    let hidden = propose("hidden.json", "board.merger-talks");
    let missing = propose("missing.json", "board.nothing-here");
    assert_eq!(hidden.code, 1, "{}", hidden.stderr);
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    assert!(
        hidden.stderr.contains("PROPOSAL_TARGET_NOT_PERMITTED"),
        "{}",
        hidden.stderr
    );
    assert_eq!(
        hidden.stderr.replace("board.merger-talks", "X"),
        missing.stderr.replace("board.nothing-here", "X")
    );
    assert!(
        !r.file(".ctx/exchange/proposals").exists()
            || std::fs::read_dir(r.file(".ctx/exchange/proposals"))
                .unwrap()
                .count()
                == 0
    );
    // Inside it, a proposal is taken for review.
    let fine = propose("fine.json", "policies.refunds");
    assert_eq!(fine.code, 0, "{}", fine.stderr);
}

/// The audit log records what the README says it records: ids, digests, counts
/// and a bundle's task; never content, never a search query.
#[test]
fn audit_events_carry_the_task_but_no_content_and_no_query() {
    let r = repo();
    let manifest = std::fs::read_to_string(r.path().join("opencontext.yaml")).unwrap();
    r.write(
        "opencontext.yaml",
        &format!("{manifest}audit:\n  context_reads: true\n"),
    );
    r.write(
        "context/notes/creds.md",
        "---\nid: notes.creds\ntype: note\nowner: s\ntitle: Deploy\n---\n\nno secret now\n",
    );
    std::fs::remove_file(r.path().join("context/policies/internal/leak.md")).unwrap();
    let task = "the refund task 7001";
    let run = r.ctx(&["resolve", "--role", "support", "--task", task]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let query = "QUERY-WORD-3303";
    r.ctx(&["search", query, "--role", "support"]);
    let log = std::fs::read_to_string(r.path().join(".ctx/audit.jsonl")).unwrap();
    assert!(log.contains(task), "the task is recorded: {log}");
    for absent in [query, "Refunds within 30 days", "no secret now"] {
        assert!(!log.contains(absent), "{absent} in {log}");
    }
}
