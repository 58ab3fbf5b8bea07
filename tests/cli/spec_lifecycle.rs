//! OpenContext v1 lifecycle and precedence at the resolution instant (issue 16):
//! a successor supersedes only from its own `valid_from` (§9.1, §10.3–10.4),
//! `get` names the version the resolver chooses, approvals count, configured tie
//! breakers refine (never replace) version and recency, and a duplicate canonical
//! object is a conflict in the bundle (§6).

use serde_json::Value;

use crate::support::Repo;

const MANIFEST: &str = "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\nroles:\n  support:\n    include: [\"policies.*\"]\n";

const PRICE_V1: &str = "---\nid: policies.price\ntype: policy\nversion: 1\nauthority: canonical\nowner: sales\nupdated: 2026-01-01T00:00:00Z\n---\n\nOld price.\n";

/// v2 declares it replaces v1, but only becomes valid in 2099.
const PRICE_V2_LATER: &str = "---\nid: policies.price\ntype: policy\nversion: 2\nsupersedes: [policies.price@1]\nvalid_from: 2099-01-01T00:00:00Z\nauthority: canonical\nowner: sales\nupdated: 2026-01-01T00:00:00Z\n---\n\nNew price.\n";

fn scheduled() -> Repo {
    Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/price.md", PRICE_V1),
        ("context/policies/price.v2.md", PRICE_V2_LATER),
    ])
}

fn ids(bundle: &Value) -> Vec<(String, Option<u64>)> {
    bundle["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["id"].as_str().unwrap().to_string(), o["version"].as_u64()))
        .collect()
}

fn reasons(bundle: &Value) -> Vec<(String, String)> {
    bundle["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["id"].as_str().unwrap().to_string(),
                x["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn warning_codes(bundle: &Value) -> Vec<String> {
    bundle["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_successor_supersedes_only_from_its_own_valid_from() {
    let repo = scheduled();
    // Before v2 is valid, v1 is current and resolves.
    let r = repo.ctx(&["resolve", "--role", "support", "--at", "2098-06-01"]);
    r.assert_ok();
    let b = r.json();
    assert_eq!(ids(&b), vec![("policies.price".into(), Some(1))], "{b:#}");
    assert_eq!(b["objects"][0]["lifecycle"], "current");
    assert_eq!(
        reasons(&b),
        vec![("policies.price".into(), "not-yet-valid".into())]
    );
    // From v2's valid_from, v2 supersedes v1.
    let b = repo
        .ctx(&["resolve", "--role", "support", "--at", "2099-01-02"])
        .json();
    assert_eq!(ids(&b), vec![("policies.price".into(), Some(2))], "{b:#}");
    let sup = &b["excluded"][0];
    assert_eq!(sup["reason"], "superseded");
    assert_eq!(sup["outranked_by"], "policies.price@2");

    // list, get and history agree with the resolver at the same instant.
    let rows = repo
        .ctx(&["list", "--at", "2098-06-01", "--format", "json"])
        .json();
    let states: Vec<(u64, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["version"].as_u64().unwrap(),
                r["lifecycle"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        states,
        vec![(1, "current".to_string()), (2, "future".to_string())]
    );
    let got = repo
        .ctx(&[
            "get",
            "policies.price",
            "--at",
            "2098-06-01",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(got["version"], 1);
    assert_eq!(got["lifecycle"], "current");
    let got = repo
        .ctx(&[
            "get",
            "policies.price",
            "--at",
            "2099-06-01",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(got["version"], 2);
}

#[test]
fn validate_notices_a_scheduled_successor_and_a_gap() {
    let repo = scheduled();
    let r = repo.ctx(&["validate", "--at", "2098-06-01", "--format", "json"]);
    r.assert_ok();
    let doc = r.json();
    let f: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "not-yet-valid")
        .collect();
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["severity"], "info");
    let msg = f[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("policies.price@2")
            && msg.contains("until then `policies.price@1` is current"),
        "{msg}"
    );
    // After v2 is valid there is nothing to notice.
    let doc = repo
        .ctx(&["validate", "--at", "2099-06-01", "--format", "json"])
        .json();
    assert!(
        !doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "not-yet-valid"),
        "{doc:#}"
    );
    // v1 expires before v2 starts: the id resolves to nothing in between, a warning.
    repo.write(
        "context/policies/price.md",
        &PRICE_V1.replace(
            "owner: sales\n",
            "owner: sales\nexpires: 2098-01-01T00:00:00Z\n",
        ),
    );
    let r = repo.ctx(&["validate", "--at", "2098-06-01", "--format", "json"]);
    let doc = r.json();
    let gap = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "not-yet-valid")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(gap["severity"], "warning");
    assert!(gap["message"]
        .as_str()
        .unwrap()
        .contains("resolves to no version until then"));
    let strict = repo.ctx(&["validate", "--strict", "--at", "2098-06-01"]);
    assert_eq!(strict.code, 1, "{}", strict.stdout);
    // doctor reports the scheduled successor once, not twice.
    let doc = repo
        .ctx(&["doctor", "--at", "2098-06-01", "--format", "json"])
        .json();
    let n = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "not-yet-valid")
        .count();
    assert_eq!(n, 1, "{doc:#}");
}

#[test]
fn get_returns_the_version_the_resolver_chooses() {
    // v2 is higher but a draft: the resolver uses v1, and so does `get`.
    let v2_draft = "---\nid: policies.price\ntype: policy\nversion: 2\nstatus: draft\nauthority: canonical\nowner: sales\nupdated: 2026-01-01T00:00:00Z\n---\n\nDraft price.\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/price.md", PRICE_V1),
        ("context/policies/price.v2.md", v2_draft),
    ]);
    let b = repo
        .ctx(&["resolve", "--role", "support", "--at", "2026-06-01"])
        .json();
    assert_eq!(ids(&b), vec![("policies.price".into(), Some(1))]);
    let got = repo
        .ctx(&[
            "get",
            "policies.price",
            "--at",
            "2026-06-01",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(got["version"], 1, "{got:#}");
    // The draft stays reachable by its version.
    let got = repo
        .ctx(&["get", "policies.price@2", "--format", "json"])
        .json();
    assert_eq!(got["version"], 2);
    // Higher authority wins over a higher version, for both.
    let v2_ref = v2_draft
        .replace("status: draft\n", "")
        .replace("authority: canonical", "authority: reference");
    repo.write("context/policies/price.v2.md", &v2_ref);
    let b = repo
        .ctx(&["resolve", "--role", "support", "--at", "2026-06-01"])
        .json();
    assert_eq!(ids(&b), vec![("policies.price".into(), Some(1))]);
    let got = repo
        .ctx(&[
            "get",
            "policies.price",
            "--at",
            "2026-06-01",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(got["version"], 1);
}

#[test]
fn two_required_approvals_with_one_recorded_is_not_approved() {
    let obj = |approvals: &str| {
        format!("---\nid: policies.legal\ntype: policy\nstatus: approved\nauthority: approved\nowner: legal\nupdated: 2026-01-01T00:00:00Z\napproval:\n  required: true\n  roles: [legal, executive]\n  minimum: 2\n  approved_by:\n{approvals}---\n\nTerms.\n")
    };
    let one = "    - role: legal\n      at: 2026-01-02T00:00:00Z\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/legal.md", &obj(one)),
    ]);
    let b = repo
        .ctx(&["resolve", "--role", "support", "--at", "2026-06-01"])
        .json();
    assert!(ids(&b).is_empty(), "{b:#}");
    let x = &b["excluded"][0];
    assert_eq!(x["reason"], "unapproved");
    assert!(x["detail"].as_str().unwrap().contains("1 of the 2"), "{x}");
    let doc = repo.ctx(&["validate", "--format", "json"]).json();
    assert!(
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "unapproved" && f["severity"] == "warning"),
        "{doc:#}"
    );
    // An approver outside the listed roles does not count; a second listed one does.
    let outsider = format!("{one}    - role: intern\n");
    repo.write("context/policies/legal.md", &obj(&outsider));
    let b = repo.ctx(&["resolve", "--role", "support"]).json();
    assert!(ids(&b).is_empty(), "{b:#}");
    let two = format!("{one}    - role: executive\n      at: 2026-01-03T00:00:00Z\n");
    repo.write("context/policies/legal.md", &obj(&two));
    let b = repo.ctx(&["resolve", "--role", "support"]).json();
    assert_eq!(ids(&b), vec![("policies.legal".into(), None)], "{b:#}");
}

#[test]
fn configured_tie_breakers_refine_version_and_recency_never_replace_them() {
    // Two active versions at equal authority, the older one more confident. With
    // `tie_breakers: [confidence]` the version step still decides first.
    let manifest = format!("{MANIFEST}authority:\n  tie_breakers: [confidence]\n");
    let v = |n: u64, confidence: &str, updated: &str| {
        format!("---\nid: policies.price\ntype: policy\nversion: {n}\nconfidence: {confidence}\nauthority: reference\nowner: sales\nupdated: {updated}\n---\n\nPrice {n}.\n")
    };
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest),
        (
            "context/policies/price.md",
            &v(1, "0.9", "2026-03-01T00:00:00Z"),
        ),
        (
            "context/policies/price.v2.md",
            &v(2, "0.1", "2026-01-01T00:00:00Z"),
        ),
    ]);
    let b = repo
        .ctx(&["resolve", "--role", "support", "--at", "2026-06-01"])
        .json();
    assert_eq!(ids(&b), vec![("policies.price".into(), Some(2))], "{b:#}");
    let x = &b["excluded"][0];
    assert_eq!(x["reason"], "outranked");
    assert_eq!(x["outranked_by"], "policies.price@2");
    let got = repo
        .ctx(&[
            "get",
            "policies.price",
            "--at",
            "2026-06-01",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(got["version"], 2);
}

#[test]
fn a_duplicate_canonical_is_a_conflict_in_the_bundle_and_names_the_files() {
    // Same id, no versions, both canonical: two files, one key.
    let a = "---\nid: policies.refunds\ntype: policy\nauthority: canonical\nowner: support\nupdated: 2026-01-01T00:00:00Z\n---\n\n30 days.\n";
    let b_text = a.replace("30 days", "60 days");
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", a),
        ("context/policies/refunds-copy.md", &b_text),
    ]);
    let r = repo.ctx(&["resolve", "--role", "support", "--at", "2026-06-01"]);
    let b = r.json();
    assert_eq!(ids(&b).len(), 1, "{b:#}");
    let codes = warning_codes(&b);
    assert!(
        codes.contains(&"conflict-ambiguous".to_string()),
        "{codes:?}"
    );
    let conflict = b["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "conflict-ambiguous")
        .unwrap();
    assert_eq!(conflict["severity"], "error");
    let msg = conflict["message"].as_str().unwrap();
    assert!(msg.starts_with("duplicate canonical"), "{msg}");
    assert!(
        msg.contains("context/policies/refunds.md")
            && msg.contains("context/policies/refunds-copy.md"),
        "{msg}"
    );
    for w in b["warnings"].as_array().unwrap() {
        let m = w["message"].as_str().unwrap();
        assert!(
            !m.contains("policies.refunds outranks policies.refunds"),
            "{m}"
        );
    }
    assert_eq!(
        reasons(&b),
        vec![("policies.refunds".into(), "outranked".into())]
    );
    let detail = b["excluded"][0]["detail"].as_str().unwrap();
    assert!(detail.starts_with("duplicate canonical"), "{detail}");
}
