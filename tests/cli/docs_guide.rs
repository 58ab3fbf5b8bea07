//! docs/objects.md cannot rot: every example file in it is written into an empty
//! folder and must pass `ctx validate --strict` and `ctx fmt --check`, and the
//! guide's table of what each consumer sees must match what `ctx bundle` says.

use serde_json::Value;

use crate::support::{ctx, project_root};

/// (path, text) of every code block the guide marks with `<!-- file: PATH -->`;
/// fails on a YAML, JSON or Markdown block without a marker (an unchecked example).
fn example_files() -> Vec<(String, String)> {
    let guide = std::fs::read_to_string(project_root().join("docs/objects.md")).unwrap();
    let mut out = Vec::new();
    let mut pending: Option<String> = None;
    let mut lines = guide.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if let Some(rest) = line.strip_prefix("<!-- file: ") {
            pending = Some(rest.trim_end_matches("-->").trim().to_string());
            continue;
        }
        let Some(lang) = line.strip_prefix("```") else {
            continue;
        };
        if lang.is_empty() {
            continue;
        }
        let mut body = String::new();
        for (_, l) in lines.by_ref() {
            if l == "```" {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        match pending.take() {
            Some(path) => out.push((path, body)),
            None => assert!(
                !matches!(lang, "yaml" | "json" | "markdown" | "md"),
                "docs/objects.md line {}: a ```{lang} example without `<!-- file: PATH -->` is never checked",
                n + 1
            ),
        }
    }
    out
}

fn guide_repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for (path, text) in example_files() {
        crate::support::write(tmp.path(), &path, text.as_bytes());
    }
    tmp
}

#[test]
fn every_example_passes_validate_strict_and_is_formatted() {
    let files = example_files();
    let has = |ext: &str| {
        files
            .iter()
            .any(|(p, _)| p.starts_with("context/") && p.ends_with(ext))
    };
    assert!(files.iter().any(|(p, _)| p == "opencontext.yaml"));
    assert!(
        has(".md") && has(".yaml") && has(".json"),
        "one object per format"
    );
    let repo = guide_repo();
    let r = ctx(repo.path(), &["validate", "--strict"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains(&format!("in {} objects", files.len() - 1)),
        "{}",
        r.stdout
    );
    let f = ctx(repo.path(), &["fmt", "--check"]);
    assert_eq!(
        f.code, 0,
        "the guide's examples are not in canonical form:\n{}",
        f.stdout
    );
}

fn bundle(dir: &std::path::Path, who: &[&str]) -> Value {
    if !dir.join(".ctx/redaction.key").exists() {
        // The guide says to create the key its `hash` rule needs before resolving.
        let k = ctx(dir, &["redaction-key"]);
        assert_eq!(k.code, 0, "{}", k.stderr);
    }
    let mut args = vec!["bundle", "--at", "2026-10-01"];
    args.extend_from_slice(who);
    let r = ctx(dir, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.json()
}

fn included(b: &Value) -> Vec<String> {
    let mut v: Vec<String> = b["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| match o["version"].as_u64() {
            Some(n) => format!("{}@{n}", o["id"].as_str().unwrap()),
            None => o["id"].as_str().unwrap().to_string(),
        })
        .collect();
    v.sort();
    v
}

fn reason(b: &Value, id: &str) -> String {
    b["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .map(|e| e["reason"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("{id} not excluded: {}", b["excluded"]))
}

/// The guide's "What each consumer sees" table.
#[test]
fn the_consumer_table_is_true() {
    let repo = guide_repo();
    let dir = repo.path();

    let support = bundle(dir, &["--role", "support"]);
    assert_eq!(
        included(&support),
        [
            "customers.acme",
            "mission",
            "policies.refunds@1",
            "pricing.enterprise@2"
        ]
    );
    assert_eq!(
        reason(&support, "policies.internal.discounts"),
        "scope-exclusion"
    );
    let acme = support["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "customers.acme")
        .unwrap();
    assert_eq!(
        acme["redacted"],
        serde_json::json!(["contacts[*].email", "contacts[*].phone", "internal_notes"])
    );
    let contact = &acme["content"]["contacts"][0];
    assert!(contact["email"]
        .as_str()
        .unwrap()
        .starts_with("hmac-sha256:"));
    assert_eq!(contact["phone"], "[REDACTED]");
    assert!(acme["content"].get("internal_notes").is_none());
    let superseded = support["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "pricing.enterprise")
        .unwrap();
    assert_eq!(superseded["reason"], "superseded");

    let agent = bundle(dir, &["--agent", "support-agent"]);
    assert_eq!(included(&agent), included(&support));
    assert_eq!(
        reason(&agent, "policies.internal.discounts"),
        "permission-denied"
    );

    let leads = bundle(dir, &["--role", "leads"]);
    assert_eq!(
        included(&leads),
        [
            "customers.acme",
            "mission",
            "policies.internal.discounts",
            "policies.refunds@1",
            "pricing.enterprise@2"
        ]
    );
    let acme = leads["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "customers.acme")
        .unwrap();
    assert_eq!(
        acme["redacted"],
        serde_json::json!(["contacts[*].email", "internal_notes"])
    );
    assert_eq!(acme["content"]["contacts"][0]["phone"], "+1 555 0100");

    // `everyone` has no ceiling of its own and inherits none: the default, internal.
    let r = ctx(
        dir,
        &[
            "resolve",
            "--role",
            "everyone",
            "--at",
            "2026-10-01",
            "--explain",
        ],
    );
    assert!(
        r.stdout.contains("classification ceiling internal"),
        "{}",
        r.stdout
    );
    let everyone = bundle(dir, &["--role", "everyone"]);
    assert_eq!(included(&everyone), ["mission"]);
}

/// The lifecycle claims: `valid_from` keeps version 2 out before 2026, `expires`
/// after 2027, and `expires: null` does not stop staleness.
#[test]
fn the_lifecycle_claims_are_true() {
    let repo = guide_repo();
    let dir = repo.path();
    let at = |when: &str| {
        let r = ctx(dir, &["bundle", "--role", "leads", "--at", when]);
        r.json()
    };
    let after = at("2027-02-01");
    assert!(after["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["id"] == "pricing.enterprise" && e["reason"] == "expired"));
    let late = at("2028-01-01");
    let mission = late["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "mission")
        .unwrap();
    assert_eq!(mission["lifecycle"], "stale");
}
