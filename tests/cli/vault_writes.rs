//! What a consumer's writes may and may not do through `ctx serve`: a write answers
//! alike for a field the consumer cannot see and one that does not exist (the field
//! name is the secret), and a field's tier is the user's decision, never a
//! consumer's.

use serde_json::{json, Value};

use crate::serve_support::{Resp, Server, Vault};

/// Replace the template's consumer role with `role` (YAML lines under `agent:`).
fn consumer_role(v: &Vault, role: &str) {
    let path = v.dir().join("opencontext.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let old = "  agent:\n    description: What a registered consumer may be granted at most; each token narrows it further.\n    include: [\"*\"]\n    max_classification: restricted\n";
    assert!(text.contains(old), "the template's consumer role changed");
    std::fs::write(&path, text.replace(old, &format!("  agent:\n{role}"))).unwrap();
}

/// Status and body of a refusal, with the field id taken out: what a consumer
/// could compare between two ids.
fn shape(r: &Resp, id: &str) -> (u16, String, Option<String>) {
    (r.status, r.text.replace(id, "ID"), r.location.clone())
}

/// Every write (and read) a consumer can aim at one id.
fn probes(s: &Server, token: &str, id: &str) -> Vec<(u16, String, Option<String>)> {
    let path = format!("/context/fields/{id}");
    let bodies: [Value; 5] = [
        json!({"value": "probe"}),
        json!({"value": "probe", "sensitivity": "public"}),
        json!({"value": "probe", "sensitivity": "critical"}),
        json!({"value": {"nested": "probe"}}),
        json!({"value": "probe", "sensitivity": "bogus"}),
    ];
    let mut out: Vec<_> = bodies
        .into_iter()
        .map(|b| shape(&s.send("PUT", &path, Some(token), b), id))
        .collect();
    out.push(shape(&s.delete(&path, Some(token)), id));
    out.push(shape(&s.get(&path, Some(token)), id));
    out.push(shape(
        &s.send(
            "PUT",
            &format!("/context/sensitivity/{id}"),
            Some(token),
            json!({"tier": "public"}),
        ),
        id,
    ));
    out
}

#[test]
fn writes_answer_alike_for_hidden_and_missing_fields() {
    // Hidden by the role's exclude pattern.
    let v = Vault::create();
    consumer_role(
        &v,
        "    include: [\"*\"]\n    exclude: [\"medical.*\"]\n    max_classification: restricted\n",
    );
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    s.put(&user, "medical.allergies", json!("penicillin"))
        .expect(201);
    let agent = s.consumer_token(
        &user,
        "probe",
        json!({"scope": "*", "mode": "read-write", "rate_limit": {"reads": 10000, "writes": 10000}}),
    );
    let hidden = probes(&s, &agent, "medical.allergies");
    let missing = probes(&s, &agent, "medical.blood_type");
    assert_eq!(hidden, missing);
    assert!(hidden.iter().take(4).all(|p| p.0 == 404), "{hidden:?}");
    // Nothing was written and the hidden value is untouched.
    let f = s.get("/context/fields/medical.allergies", Some(&user));
    assert_eq!(
        (f.body["value"].as_str(), f.body["version"].as_u64()),
        (Some("penicillin"), Some(1))
    );
    s.get("/context/fields/medical.blood_type", Some(&user))
        .refused(404, "not_found");
    drop(s);

    // Hidden by the role's ceiling: the user made one field critical, above it.
    let v = Vault::create();
    consumer_role(
        &v,
        "    include: [\"*\"]\n    max_classification: confidential\n",
    );
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    s.put(&user, "identity.visa_number", json!("V-1234"))
        .expect(201);
    s.send(
        "PUT",
        "/context/sensitivity/identity.visa_number",
        Some(&user),
        json!({"tier": "critical"}),
    )
    .expect(200);
    let agent = s.consumer_token(
        &user,
        "probe",
        json!({"scope": "identity.*", "mode": "read-write", "rate_limit": {"reads": 10000, "writes": 10000}}),
    );
    let hidden = probes(&s, &agent, "identity.visa_number");
    let missing = probes(&s, &agent, "identity.work_permit");
    assert_eq!(hidden, missing);
    let f = s.get("/context/fields/identity.visa_number", Some(&user));
    assert_eq!(f.body["version"].as_u64(), Some(1), "{}", f.text);
    s.get("/context/fields/identity.work_permit", Some(&user))
        .refused(404, "not_found");
}

#[test]
fn a_consumer_never_changes_a_fields_tier() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let user = s.unlock(&v);
    s.put(&user, "identity.full_name", json!("Cool Cucumber"))
        .expect(201);
    s.put(&user, "identity.dob", json!("1990-06-15"))
        .expect(201);
    let agent = s.consumer_token(
        &user,
        "helper",
        json!({"scope": "identity.*", "mode": "read-write"}),
    );
    let tier = |id: &str| {
        s.get(&format!("/context/fields/{id}"), Some(&user)).body["sensitivity"]
            .as_str()
            .map(str::to_string)
    };
    // standard -> public: refused, nothing written.
    s.send(
        "PUT",
        "/context/fields/identity.full_name",
        Some(&agent),
        json!({"value": "Mallory", "sensitivity": "public"}),
    )
    .refused(403, "user_only_write");
    assert_eq!(tier("identity.full_name").as_deref(), Some("standard"));
    let f = s.get("/context/fields/identity.full_name", Some(&user));
    assert_eq!(f.body["value"], "Cool Cucumber");
    // Raising it is the user's decision too.
    s.send(
        "PUT",
        "/context/fields/identity.full_name",
        Some(&agent),
        json!({"value": "Mallory", "sensitivity": "critical"}),
    )
    .refused(403, "user_only_write");
    // Naming the tier the field already has changes nothing: allowed.
    s.send(
        "PUT",
        "/context/fields/identity.full_name",
        Some(&agent),
        json!({"value": "Cool Q. Cucumber", "sensitivity": "standard"}),
    )
    .expect(200);
    // A sensitive field: no approval is even asked for a tier change.
    s.send(
        "PUT",
        "/context/fields/identity.dob",
        Some(&agent),
        json!({"value": "2000-01-01", "sensitivity": "public"}),
    )
    .refused(403, "user_only_write");
    assert_eq!(
        s.get("/context/approvals", Some(&user)).body["approvals"],
        json!([])
    );
    assert_eq!(tier("identity.dob").as_deref(), Some("sensitive"));
    // A new field gets the category's tier, or a stricter one the consumer names.
    s.send(
        "PUT",
        "/context/fields/identity.nickname",
        Some(&agent),
        json!({"value": "Cuke", "sensitivity": "public"}),
    )
    .refused(403, "user_only_write");
    s.get("/context/fields/identity.nickname", Some(&user))
        .refused(404, "not_found");
    s.send(
        "PUT",
        "/context/fields/identity.nickname",
        Some(&agent),
        json!({"value": "Cuke"}),
    )
    .expect(201);
    assert_eq!(tier("identity.nickname").as_deref(), Some("standard"));

    // The value change of a sensitive field waits for approval, and the approval
    // shows what would change: the value, at the tier the field keeps.
    let r = s.send(
        "PUT",
        "/context/fields/identity.dob",
        Some(&agent),
        json!({"value": "2000-01-01"}),
    );
    r.expect(202);
    let apr = r.body["approval"].as_str().unwrap().to_string();
    let a = s.get(&format!("/context/approvals/{apr}"), Some(&user));
    a.expect(200);
    assert_eq!(
        a.body["fields"][0]["sensitivity"], "sensitive",
        "{}",
        a.text
    );
    assert!(
        a.body["fields"][0]["proposed_value"]
            .as_str()
            .is_some_and(|v| v.contains("2000-01-01")),
        "{}",
        a.text
    );
    let prompt = a.body["prompt"].as_str().unwrap_or("");
    assert!(
        prompt.contains("identity.dob [confidential]") && prompt.contains("2000-01-01"),
        "{prompt}"
    );
    // Audited as denials, never as sensitivity changes.
    let audit = s.get("/context/audit?limit=100", Some(&user));
    let lines: Vec<&str> = audit.body["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        !lines.iter().any(|l| l.contains("SENSITIVITY")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("DENY")
            && l.contains("helper")
            && l.contains("identity.full_name")),
        "{lines:?}"
    );
}
