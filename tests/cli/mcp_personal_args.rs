//! The personal vault's tools hold their arguments to the bounds their schemas
//! state, as the repository's server does: a request the schema rules out is an
//! invalid-params error before the vault (or the user) is asked anything.

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use super::mcp::{call, is_error, text, Answer, Era};
use super::mcp_personal::{connect, vault};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_context_holds_purpose_and_ids_to_their_schema_bounds() {
    let v = vault(&[("identity.full_name", json!("Cool Cucumber"))]);
    let s = connect(&v, &[], Era::Handshake, true, Answer::Approve).await;
    for args in [
        json!({"scope": ["identity.full_name"], "purpose": "p".repeat(501)}),
        json!({"scope": ["identity.full_name"], "purpose": ""}),
        json!({"scope": ["x".repeat(201)], "purpose": "p"}),
    ] {
        let mut p = CallToolRequestParams::new("request_context");
        p.arguments = args.as_object().cloned();
        let e = s
            .call_tool(p)
            .await
            .expect_err("refused before the vault is asked");
        assert!(e.to_string().contains("characters long"), "{e}");
    }
    let r = call(
        &s,
        "request_context",
        json!({"scope": ["identity.full_name"], "purpose": "p".repeat(500)}),
    )
    .await;
    assert!(!is_error(&r), "{}", text(&r));
    assert!(text(&r).contains("Cool Cucumber"), "{}", text(&r));
    s.cancel().await.expect("close");
}
