//! `ctx mcp` keeps the repository in memory and refreshes it with a stat sweep
//! before every call: an edited object, a removed one, and above all a policy
//! edit (the manifest) apply on the very next call of the same session.

use serde_json::json;

use super::mcp::{call, connect, is_error, shop, text, Answer, Era};

#[tokio::test(flavor = "current_thread")]
async fn edits_and_policy_changes_apply_on_the_next_call() {
    let repo = shop();
    let s = connect(
        repo.path(),
        &["--agent", "trainee"],
        Era::Modern,
        false,
        Answer::Decline,
    )
    .await;
    let r = call(&s, "context_get", json!({"id": "policies.refunds"})).await;
    assert!(
        !is_error(&r) && text(&r).contains("30 days"),
        "{}",
        text(&r)
    );

    // Content: an edited file is read again.
    std::fs::write(
        repo.path().join("policies/refunds.md"),
        "---\ntitle: Refund policy\ntags: [refund]\n---\nRefunds are accepted within 14 days of purchase.\n",
    )
    .expect("edit");
    let r = call(&s, "context_get", json!({"id": "policies.refunds"})).await;
    assert!(text(&r).contains("14 days"), "{}", text(&r));
    assert!(!text(&r).contains("30 days"));

    // An added file is found by the sweep.
    std::fs::write(
        repo.path().join("policies/returns.md"),
        "---\ntitle: Returns\n---\nReturns go to the warehouse.\n",
    )
    .expect("add");
    let l = call(&s, "context_list", json!({})).await;
    assert!(text(&l).contains("policies.returns"), "{}", text(&l));

    // Policy: the trainee's role loses `policies.*`; the next call sees nothing of it.
    let path = repo.path().join("opencontext.yaml");
    let manifest = std::fs::read_to_string(&path).expect("manifest");
    let narrowed = manifest.replace(
        "  intern:\n    include: [\"policies.*\"]",
        "  intern:\n    include: [\"notes.*\"]",
    );
    assert_ne!(manifest, narrowed, "the fixture's intern role changed");
    std::fs::write(&path, narrowed).expect("narrow");
    let r = call(&s, "context_get", json!({"id": "policies.refunds"})).await;
    assert!(is_error(&r), "{}", text(&r));
    assert!(!text(&r).contains("14 days"), "{}", text(&r));
    let l = call(&s, "context_list", json!({})).await;
    assert!(!text(&l).contains("policies."), "{}", text(&l));

    // A broken manifest refuses (fail closed), and fixing it serves again.
    std::fs::write(&path, "opencontext: [not valid").expect("break");
    let r = call(&s, "context_list", json!({})).await;
    assert!(is_error(&r), "{}", text(&r));
    std::fs::write(&path, manifest).expect("restore");
    let r = call(&s, "context_get", json!({"id": "policies.refunds"})).await;
    assert!(
        !is_error(&r) && text(&r).contains("14 days"),
        "{}",
        text(&r)
    );
    s.cancel().await.expect("close");
}
