//! `ctx serve --vault-compat`: personal-vault's `/vault/*` routes, called the way its
//! MCP server's client calls them (bare arrays from the list endpoints, `{status}`
//! acknowledgements, `{error, constraint}` refusals, a service token minted with the
//! session token), and never more than `/context/*` gives the same token.

use serde_json::json;

use crate::serve_support::Vault;

#[test]
fn the_vault_routes_answer_in_personal_vaults_shapes() {
    let v = Vault::create();
    let s = v.serve(&["--vault-compat"]);

    // Public: status (no per-category counts for an anonymous caller) and schema.
    let st = s.get("/vault/status", None);
    st.expect(200);
    assert_eq!(st.body["locked"], true, "{}", st.text);
    assert_eq!(st.body["categories"], json!({}), "{}", st.text);
    assert_eq!(
        st.headers.get("x-content-type-options").map(String::as_str),
        Some("nosniff")
    );
    let schema = s.get("/vault/schema", None);
    schema.expect(200);
    assert!(schema.text.contains("\"identity.ssn\""), "{}", schema.text);

    // A locked vault: 403 `vault_locked`, which personal-vault's client reads as such.
    s.get("/vault/fields", None).refused(403, "vault_locked");

    let r = s.send(
        "POST",
        "/vault/unlock",
        None,
        json!({"password": crate::serve_support::PASSWORD, "secret_key": v.secret_key()}),
    );
    r.expect(200);
    let session = r.body["token"].as_str().unwrap().to_string();

    // vault_set, vault_get, vault_list, vault_context, category.
    let put = s.send(
        "PUT",
        "/vault/fields/identity.full_name",
        Some(&session),
        json!({"value": "Cool Cucumber"}),
    );
    put.expect(200);
    assert_eq!(put.body, json!({"status": "ok"}));
    s.send(
        "PUT",
        "/vault/fields/preferences.shirt_size",
        Some(&session),
        json!({"value": "M", "sensitivity": "public"}),
    )
    .expect(200);
    let got = s.get("/vault/fields/identity.full_name", Some(&session));
    got.expect(200);
    assert_eq!(got.body["value"], "Cool Cucumber");
    assert_eq!(got.body["field_name"], "full_name");
    let list = s.get("/vault/fields", Some(&session));
    list.expect(200);
    let ids: Vec<&str> = list
        .body
        .as_array()
        .expect("a bare array")
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["identity.full_name", "preferences.shirt_size"]);
    assert!(
        list.body[0].get("value").is_none(),
        "a listing carries no values"
    );
    let by_cat = s.get("/vault/fields/category/identity", Some(&session));
    assert_eq!(by_cat.body.as_array().expect("a bare array").len(), 1);
    let ctx = s.get("/vault/context", Some(&session));
    ctx.expect(200);
    assert_eq!(
        ctx.body["categories"]["identity"][0]["value"],
        "Cool Cucumber"
    );
    let st = s.get("/vault/status", Some(&session));
    assert_eq!(
        st.body["categories"],
        json!({"identity": 1, "preferences": 1})
    );
    let audit = s.get("/vault/audit?limit=5", Some(&session));
    audit.expect(200);
    assert!(audit.body.is_array(), "{}", audit.text);

    // A service token minted with the session token, as personal-vault's MCP server
    // does for VAULT_SCOPE: only for a registered consumer, and no wider than its scope.
    s.send(
        "POST",
        "/vault/tokens/service",
        Some(&session),
        json!({"consumer": "never-registered", "scope": "preferences.*", "ttl": "24h"}),
    )
    .refused(404, "not_found");
    s.send(
        "POST",
        "/context/consumers/register",
        Some(&session),
        json!({"name": "shop", "secret": crate::serve_support::CONSUMER_SECRET}),
    )
    .expect(201);
    let minted = s.send(
        "POST",
        "/vault/tokens/service",
        Some(&session),
        json!({"consumer": "shop", "scope": "preferences.*", "ttl": "24h"}),
    );
    minted.expect(200);
    let shop = minted.body["token"].as_str().unwrap().to_string();
    let scoped = s.get("/vault/fields", Some(&shop));
    let ids: Vec<&str> = scoped
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["preferences.shirt_size"]);
    // Out of scope and missing answer alike, on both surfaces.
    let hidden = s.get("/vault/fields/identity.full_name", Some(&shop));
    let missing = s.get("/vault/fields/identity.nickname", Some(&shop));
    assert_eq!(
        (hidden.status, hidden.body["constraint"].clone()),
        (missing.status, missing.body["constraint"].clone())
    );
    assert!(!hidden.text.contains("Cool Cucumber"));
    // Read-only unless asked: a write is refused.
    let write = s.send(
        "PUT",
        "/vault/fields/preferences.shirt_size",
        Some(&shop),
        json!({"value": "L"}),
    );
    assert!(write.status == 403 || write.status == 401, "{}", write.text);
    // The same token sees the same on both surfaces.
    assert_eq!(
        s.get("/vault/context", Some(&shop)).body,
        s.get("/context/context", Some(&shop)).body
    );

    s.send("POST", "/vault/lock", Some(&session), json!({}))
        .expect(200);
    s.get("/vault/fields", Some(&shop))
        .refused(403, "vault_locked");
}

#[test]
fn without_the_flag_there_are_no_vault_routes() {
    let v = Vault::create();
    let s = v.serve(&[]);
    s.get("/vault/status", None).refused(404, "not_found");
    s.get("/context/status", None).expect(200);
}
