//! The operations as an in-process front end (`ctx mcp`'s tools) calls them: no
//! HTTP, the same view, scope, approvals and audit.

use serde_json::{json, Value};

use super::*;
use crate::personal::integrity::Seen;
use crate::personal::template;

const PASSWORD: &str = "correct horse battery staple";
const SECRET: &str = "a long consumer secret";

/// The service's options for a vault under `tmp` (this device's record there too).
fn options(tmp: &tempfile::TempDir) -> Options {
    Options {
        seen: Seen::At(tmp.path().join("vault.seen")),
        ..Options::default()
    }
}

fn body(z: &Zeroizing<String>) -> Value {
    serde_json::from_str(z).expect("JSON body")
}

fn ready(g: Answer<Gate<Zeroizing<String>>>) -> Value {
    match g.expect("answer") {
        Gate::Ready(b) => body(&b),
        Gate::Pending(t) => panic!("waits for approval {}", t.approval),
    }
}

#[test]
fn request_context_serves_named_fields_through_the_same_view_and_approvals() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("v");
    std::fs::create_dir_all(&dir).unwrap();
    let created = template::create(&template::Options {
        dir: &dir,
        id: "me",
        name_yaml: "Me",
        password: PASSWORD.as_bytes(),
        recovery: Vec::new(),
        now: "2026-01-01T00:00:00Z",
        secret_key_file: Some(tmp.path().join("vault.key")),
        seen: Seen::At(tmp.path().join("vault.seen")),
    })
    .unwrap();
    let (manifest, _) = Manifest::load(&dir.join("opencontext.yaml")).unwrap();
    let (svc, _control) = Service::open(manifest, options(&tmp)).unwrap();
    assert!(svc.status().locked);
    let user = svc.unlock(PASSWORD, &created.secret_key).unwrap();
    let u = Some(user.as_str());
    for (id, v) in [
        ("identity.full_name", "Cool Cucumber"),
        ("identity.dob", "1990-06-15"),
        ("addresses.current.city", "Seattle"),
        ("addresses.current.street", "1 Main St"),
        ("financial.income", "CANARY-OUT-OF-SCOPE"),
    ] {
        assert!(matches!(
            svc.put_field(u, id, &json!(v), None),
            Ok(Gate::Ready(_))
        ));
    }
    svc.register(u, "mcp-agent", SECRET).unwrap();
    let token = svc
        .create_token(
            None,
            &TokenRequest {
                consumer: "mcp-agent".into(),
                secret: Some(SECRET.into()),
                scope: vec!["identity.*".into(), "addresses.*".into()],
                ttl: Some("30m".into()),
                mode: None,
                usage: None,
                purpose: Some("Fill a visa application".into()),
                rates: None,
                peer: None,
            },
        )
        .unwrap();
    let token = body(&token)["token"].as_str().unwrap().to_string();
    let a = Some(token.as_str());

    // `addresses.current` covers the fields nested under it; nothing else comes along.
    let got = ready(svc.request_context(
        a,
        &[
            "identity.full_name".into(),
            "addresses.current".into(),
            "financial.income".into(),
        ],
        Some("visa"),
    ));
    let text = got.to_string();
    assert_eq!(got["categories"]["identity"][0]["value"], "Cool Cucumber");
    assert_eq!(got["categories"]["addresses"].as_array().unwrap().len(), 2);
    assert!(!text.contains("1990") && !text.contains("CANARY"), "{text}");

    // A sensitive field waits; the user's answer (MCP elicitation) lets it through once.
    let ticket = match svc
        .request_context(a, &["identity.dob".into()], Some("visa"))
        .unwrap()
    {
        Gate::Pending(t) => t,
        Gate::Ready(b) => panic!("served without approval: {}", &*b),
    };
    assert_eq!(ticket.fields, ["identity.dob"]);
    svc.decide_local(
        &ticket.approval,
        &Decide {
            approve: true,
            confirmation: None,
            via: "mcp".into(),
        },
    )
    .unwrap();
    let got = ready(svc.request_context(a, &["identity.dob".into()], Some("visa")));
    assert_eq!(got["categories"]["identity"][0]["value"], "1990-06-15");
    assert!(matches!(
        svc.request_context(a, &["identity.dob".into()], None),
        Ok(Gate::Pending(_))
    ));

    // Refusals keep their constraints; an empty request is invalid.
    assert_eq!(
        svc.request_context(a, &[], None).unwrap_err().constraint(),
        "invalid_request"
    );
    assert_eq!(
        svc.request_context(Some("ctxs_bogus"), &["identity.dob".into()], None)
            .unwrap_err()
            .status(),
        401
    );
    svc.lock(u).unwrap();
    assert_eq!(
        svc.request_context(a, &["identity.full_name".into()], None)
            .unwrap_err(),
        Refusal::VaultLocked
    );
}

/// A fresh, unlocked vault served in-process: (service, session token, tempdir).
fn unlocked() -> (Service, Zeroizing<String>, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("v");
    std::fs::create_dir_all(&dir).unwrap();
    let created = template::create(&template::Options {
        dir: &dir,
        id: "me",
        name_yaml: "Me",
        password: PASSWORD.as_bytes(),
        recovery: Vec::new(),
        now: "2026-01-01T00:00:00Z",
        secret_key_file: Some(tmp.path().join("vault.key")),
        seen: Seen::At(tmp.path().join("vault.seen")),
    })
    .unwrap();
    let (manifest, _) = Manifest::load(&dir.join("opencontext.yaml")).unwrap();
    let (svc, _control) = Service::open(manifest, options(&tmp)).unwrap();
    let user = svc.unlock(PASSWORD, &created.secret_key).unwrap();
    (svc, user, tmp)
}

/// `POST /context/tokens/service` with a consumer's credentials: the verifications it ran.
fn verifications(svc: &Service, consumer: &str, secret: Option<&str>) -> (usize, u16) {
    use crate::personal::tokens::VERIFICATIONS;
    let before = VERIFICATIONS.with(|n| n.get());
    let status = match svc.create_token(
        None,
        &TokenRequest {
            consumer: consumer.into(),
            secret: secret.map(str::to_string),
            scope: vec!["identity.*".into()],
            ..TokenRequest::default()
        },
    ) {
        Ok(_) => 201,
        Err(r) => r.status(),
    };
    (VERIFICATIONS.with(|n| n.get()) - before, status)
}

/// The timing oracle on consumer names: an unknown name and a wrong secret answer
/// alike (401) and cost the same work, one Argon2id verification each.
#[test]
fn unknown_consumer_names_cost_the_same_verification_as_registered_ones() {
    let (svc, user, _tmp) = unlocked();
    svc.register(Some(user.as_str()), "tax-agent", SECRET)
        .unwrap();
    assert_eq!(verifications(&svc, "tax-agent", Some(SECRET)), (1, 201));
    assert_eq!(
        verifications(&svc, "tax-agent", Some("a wrong secret!!")),
        (1, 401)
    );
    assert_eq!(verifications(&svc, "nobody-here", Some(SECRET)), (1, 401));
    assert_eq!(verifications(&svc, "nobody-here", None), (1, 401));
    assert_eq!(verifications(&svc, "tax-agent", None), (1, 401));
}

/// A crash between a field's file and the index: the file is ahead of the index,
/// authentic, and kept (and indexed) at the next unlock, not refused as tampering.
#[test]
fn a_write_cut_off_before_its_index_is_kept_at_the_next_unlock() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("v");
    std::fs::create_dir_all(&dir).unwrap();
    let created = template::create(&template::Options {
        dir: &dir,
        id: "me",
        name_yaml: "Me",
        password: PASSWORD.as_bytes(),
        recovery: Vec::new(),
        now: "2026-01-01T00:00:00Z",
        secret_key_file: Some(tmp.path().join("vault.key")),
        seen: Seen::At(tmp.path().join("vault.seen")),
    })
    .unwrap();
    let (manifest, _) = Manifest::load(&dir.join("opencontext.yaml")).unwrap();
    let (svc, _control) = Service::open(manifest, options(&tmp)).unwrap();
    let put = |u: &str, v: &str| {
        assert!(matches!(
            svc.put_field(Some(u), "identity.full_name", &json!(v), None),
            Ok(Gate::Ready(_))
        ));
    };
    let user = svc.unlock(PASSWORD, &created.secret_key).unwrap();
    put(&user, "Cool Cucumber");
    let index = dir.join(".ctx/personal/index.json");
    let seen = tmp.path().join("vault.seen");
    let before = (
        std::fs::read(&index).unwrap(),
        std::fs::read(&seen).unwrap(),
    );
    put(&user, "Cool Q. Cucumber");
    svc.lock(Some(&user)).unwrap();
    // As if the process died after the field's file, before its index was saved.
    std::fs::write(&index, &before.0).unwrap();
    std::fs::write(&seen, &before.1).unwrap();
    for _ in 0..2 {
        let user = svc.unlock(PASSWORD, &created.secret_key).unwrap();
        assert!(svc.problems(Some(&user)).unwrap().is_empty());
        let got = ready(svc.get_field(Some(&user), "identity.full_name"));
        assert_eq!(got["value"], "Cool Q. Cucumber");
        svc.lock(Some(&user)).unwrap();
    }
}

/// A front end's grant (`ctx mcp`): only for a registered consumer; its discovery
/// (a category's metadata) carries no value; a declined request keeps what needs
/// no approval and names the rest.
#[test]
fn local_grants_need_registration_and_declines_withhold_only_the_gated_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("v");
    std::fs::create_dir_all(&dir).unwrap();
    let created = template::create(&template::Options {
        dir: &dir,
        id: "me",
        name_yaml: "Me",
        password: PASSWORD.as_bytes(),
        recovery: Vec::new(),
        now: "2026-01-01T00:00:00Z",
        secret_key_file: Some(tmp.path().join("vault.key")),
        seen: Seen::At(tmp.path().join("vault.seen")),
    })
    .unwrap();
    let (manifest, _) = Manifest::load(&dir.join("opencontext.yaml")).unwrap();
    let (svc, _control) = Service::open(manifest, options(&tmp)).unwrap();
    let user = svc.unlock(PASSWORD, &created.secret_key).unwrap();
    let u = Some(user.as_str());
    for (id, v) in [
        ("identity.full_name", "Cool Cucumber"),
        ("identity.dob", "1990-06-15"),
    ] {
        svc.put_field(u, id, &json!(v), None).unwrap();
    }
    let all = ["*".to_string()];
    let refused = svc
        .local_token(u, "stranger", &all, Mode::Read, None)
        .unwrap_err();
    assert_eq!(refused.constraint(), "not_found", "{refused:?}");
    assert!(refused.message().contains("stranger"));
    svc.register(u, "visa-agent", SECRET).unwrap();
    let token = svc
        .local_token(u, "visa-agent", &all, Mode::Read, None)
        .unwrap();
    let a = Some(token.as_str());

    let listed = body(&svc.list_category(a, "identity").unwrap());
    assert_eq!(listed["category"], "identity");
    assert_eq!(listed["fields"].as_array().unwrap().len(), 2);
    assert!(!listed.to_string().contains("Cucumber") && !listed.to_string().contains("1990"));
    assert_eq!(
        svc.list_category(a, "nothing").unwrap_err().constraint(),
        "not_found"
    );

    let ids = ["identity.full_name".to_string(), "identity.dob".to_string()];
    let got = body(&svc.request_context_declined(a, &ids, Some("visa")).unwrap());
    assert_eq!(got["categories"]["identity"][0]["id"], "identity.full_name");
    assert_eq!(got["categories"]["identity"].as_array().unwrap().len(), 1);
    assert_eq!(
        got["withheld"],
        json!([{"id": "identity.dob", "sensitivity": "sensitive", "reason": "approval_denied"}])
    );
    assert!(!got.to_string().contains("1990"));
}
