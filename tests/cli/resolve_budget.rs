//! `ctx resolve --max-tokens N`: the resolver keeps the most relevant objects
//! that fit the estimated budget, reports the rest as excluded (trimmed), and
//! names its token estimate; the digest covers what was kept.

use crate::support::fixtures::{MISSION, OPS_MANIFEST, REFUNDS};
use crate::support::{ctx_in, Repo};

fn repo() -> Repo {
    let big = format!(
        "---\nid: policies.handbook\ntype: policy\ntitle: Refund handbook\nauthority: canonical\nowner: support\nupdated: 2026-08-01T00:00:00Z\n---\n\n{}\n",
        "refund steps in detail. ".repeat(200)
    );
    Repo::new(&[
        ("opencontext.yaml", OPS_MANIFEST),
        ("context/mission.md", MISSION),
        ("context/policies/refunds.md", REFUNDS),
        ("context/policies/handbook.md", &big),
    ])
}

#[test]
fn max_tokens_trims_what_does_not_fit_and_says_how_it_counted() {
    let repo = repo();
    let base = [
        "resolve",
        "--role",
        "support",
        "--task",
        "refund",
        "--at",
        "2026-09-01",
    ];
    let full = ctx_in(&repo).args(base).run();
    full.assert_ok();
    let full = full.json();
    let ids = |b: &serde_json::Value| -> Vec<String> {
        b["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(ids(&full).contains(&"policies.handbook".to_string()));

    let r = ctx_in(&repo).args(base).args(["--max-tokens", "200"]).run();
    r.assert_ok();
    assert!(r.stderr.contains("max-tokens 200"), "{}", r.stderr);
    assert!(r.stderr.contains("ctx-estimate-v1"), "{}", r.stderr);
    let b = r.json();
    let kept = ids(&b);
    assert!(!kept.contains(&"policies.handbook".to_string()), "{kept:?}");
    assert!(kept.contains(&"policies.refunds".to_string()), "{kept:?}");
    let trimmed = b["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "policies.handbook")
        .expect("the trimmed object is reported");
    assert_eq!(trimmed["reason"], "not-relevant");
    assert!(
        trimmed.to_string().contains("trimmed by max_tokens 200"),
        "{trimmed}"
    );
    assert_ne!(b["digest"], full["digest"]);

    // Same budget, same answer.
    let again = ctx_in(&repo).args(base).args(["--max-tokens", "200"]).run();
    assert_eq!(again.json()["digest"], b["digest"]);

    // Zero is a usage error, not an empty bundle.
    let zero = ctx_in(&repo).args(base).args(["--max-tokens", "0"]).run();
    assert_eq!(zero.code, 2, "{}", zero.stderr);
}
