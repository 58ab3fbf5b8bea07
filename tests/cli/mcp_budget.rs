//! Answers sized for a prompt: on a 400-object repository every MCP answer fits
//! its budget (default 8000 estimated tokens for the WHOLE answer), what was left
//! out is summarised in bounded form, and `context_list` pages with a cursor.

use serde_json::{json, Value};

use super::mcp::{call, connect, text, Answer, Era};
use crate::support::Repo;

fn big() -> Repo {
    let r = Repo::new(&[(
        "opencontext.yaml",
        "opencontext: \"1.0\"\nid: big\ncollections:\n  notes: ./notes/**\nroles:\n  reader:\n    include: [\"notes.*\"]\n",
    )]);
    let body = "refund policy details and more words about refunds. ".repeat(50);
    for n in 0..400 {
        r.write(
            &format!("notes/n{n:03}.md"),
            &format!("---\nid: notes.n{n:03}\ntype: note\ntitle: Note {n}\n---\n\n{body} {n}\n"),
        );
    }
    r
}

fn tokens(v: &impl serde::Serialize) -> usize {
    serde_json::to_string(v)
        .unwrap()
        .chars()
        .count()
        .div_ceil(4)
}

#[tokio::test(flavor = "current_thread")]
async fn every_answer_fits_its_budget_and_lists_page_with_a_cursor() {
    let r = big();
    let s = connect(
        r.path(),
        &["--role", "reader"],
        Era::Modern,
        true,
        Answer::Approve,
    )
    .await;
    for (name, args, budget) in [
        ("resolve", json!({"task": "refund policy"}), 8000),
        (
            "resolve",
            json!({"task": "refund policy", "max_tokens": 2000}),
            2000,
        ),
        ("context_context", json!({}), 8000),
        (
            "request_context",
            json!({"scope": ["notes.*"], "purpose": "refunds"}),
            8000,
        ),
    ] {
        let res = call(&s, name, args.clone()).await;
        let t = tokens(&res);
        assert!(t <= budget, "{name} {args}: {t} tokens > {budget}");
        let st = res.structured_content.clone().expect("structured");
        let kept = st["objects"].as_array().map_or(0, Vec::len);
        assert!(kept > 0, "{name}: something fits");
        // What was left out: a count by reason and the first ids only.
        assert!(st["excluded"]["total"].as_u64().unwrap() >= 300, "{st}");
        assert!(st["excluded"]["first"].as_array().unwrap().len() <= 20);
        assert!(text(&res).contains("more"), "the rest is counted");
    }
    // context_list: 100 rows a page by default, then the cursor.
    let mut seen = 0;
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = call(&s, "context_list", args).await;
        let st = page.structured_content.clone().expect("structured");
        assert_eq!(st["total"], 400);
        let n = st["objects"].as_array().unwrap().len();
        assert!(n <= 100 && tokens(&page) < 8000, "{n} rows");
        seen += n;
        match st.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, 400);
    let bad = call(&s, "context_list", json!({"cursor": "forged"})).await;
    assert!(bad.is_error == Some(true), "{}", text(&bad));
    s.cancel().await.ok();
}

/// A burst of calls is answered "busy" beyond a small number in flight, instead
/// of growing threads and memory; the session keeps working after it.
#[tokio::test(flavor = "current_thread")]
async fn a_burst_of_calls_is_answered_busy_beyond_the_cap() {
    let r = big();
    let s = connect(
        r.path(),
        &["--role", "reader"],
        Era::Handshake,
        true,
        Answer::Approve,
    )
    .await;
    let mut set = tokio::task::JoinSet::new();
    for n in 0..64 {
        let peer = s.peer().clone();
        let mut p = rmcp::model::CallToolRequestParams::new("resolve");
        p.arguments = json!({"task": format!("refund {n}")}).as_object().cloned();
        set.spawn(async move { peer.call_tool(p).await });
    }
    let answers = set.join_all().await;
    let busy = answers
        .iter()
        .filter(|a| matches!(a, Err(e) if e.to_string().contains("busy")))
        .count();
    let fine = answers.iter().filter(|a| a.is_ok()).count();
    assert_eq!(
        busy + fine,
        64,
        "every call is answered, or told the server is busy"
    );
    assert!(busy > 0 && fine >= 8, "{fine} answered, {busy} busy");
    let after = call(&s, "context_status", json!({})).await;
    assert!(after.is_error != Some(true));
    s.cancel().await.ok();
}

/// A repository that does not load still gets a session: `initialize` is
/// answered and every tool returns the finding. With the consumer named by a
/// flag, fixing the repository takes effect on the next call.
#[tokio::test(flavor = "current_thread")]
async fn an_invalid_manifest_answers_initialize_and_every_tool_names_the_finding() {
    let good = "opencontext: \"1.0\"\nid: t\ncollections:\n  notes: ./notes/**\nroles:\n  reader:\n    include: [\"notes.*\"]\n";
    let bad = "opencontext: \"1.0\"\nid: t\ncollections:\n  notes: ./notes/**\nroles:\n  reader:\n    include: [\"notes.[\"]\nextensions:\n  ctx.mcp: {role: reader}\n";
    let r = Repo::new(&[("opencontext.yaml", bad)]);
    r.write("notes/a.md", "---\nid: notes.a\ntype: note\n---\nA note.\n");
    for flags in [&["--role", "reader"][..], &[][..]] {
        r.write("opencontext.yaml", bad);
        let s = connect(r.path(), flags, Era::Handshake, true, Answer::Approve).await;
        for tool in ["context_status", "resolve", "context_list"] {
            let args = if tool == "resolve" {
                json!({"task": "x"})
            } else {
                json!({})
            };
            let res = call(&s, tool, args).await;
            let t = text(&res);
            assert!(res.is_error == Some(true), "{flags:?} {tool}: {t}");
            assert!(
                t.contains("notes.["),
                "{flags:?} {tool}: the finding is named: {t}"
            );
        }
        if !flags.is_empty() {
            r.write("opencontext.yaml", good);
            let res = call(&s, "context_list", json!({})).await;
            assert!(res.is_error != Some(true), "{}", text(&res));
            assert!(text(&res).contains("notes.a"));
        }
        s.cancel().await.ok();
    }
}
