//! `ctx graph`: links between objects as text, JSON and dot.

use crate::support::fixtures::healthy;

#[test]
fn graph_text_json_and_dot() {
    let repo = healthy();
    repo.write(
        "context/policies/procedure.md",
        "---\nid: policies.procedure\ntype: procedure\nowner: support\nreferences: [policies.refunds]\ndepends_on: [pricing.enterprise]\nsources:\n  - uri: https://example.com/wiki\n---\nx\n",
    );
    let r = repo.ctx(&["graph"]);
    r.assert_ok();
    // Each object with its outgoing (→) and incoming (←) links, then the totals.
    insta::assert_snapshot!("graph_text", r.transcript());
    let doc = repo
        .ctx(&["graph", "--owners", "--sources", "--format", "json"])
        .json();
    let edges = doc["edges"].as_array().unwrap();
    assert!(edges.iter().any(|e| e["from"] == "policies.procedure"
        && e["to"] == "source:https://example.com/wiki"
        && e["kind"] == "source"));
    assert!(edges
        .iter()
        .any(|e| e["to"] == "owner:founders" && e["kind"] == "owned_by"));
    let dot = repo.ctx(&["graph", "--format", "dot"]).stdout;
    assert!(dot.starts_with("digraph context {\n"), "{dot}");
    assert!(dot.contains("\"pricing.enterprise@2\" -> \"pricing.enterprise@1\" [label=\"supersedes\", style=bold];"), "{dot}");
    assert!(dot.trim_end().ends_with('}'));
    // Around one object, one link deep.
    let r = repo.ctx(&[
        "graph",
        "--root",
        "policies.refunds",
        "--depth",
        "1",
        "--format",
        "json",
    ]);
    let ids: Vec<String> = r.json()["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, vec!["policies.procedure", "policies.refunds"]);
    assert_eq!(repo.ctx(&["graph", "--root", "nope"]).code, 3);
    // A role sees only its objects; missing link targets are marked.
    repo.write("context/policies/dangling.md", "---\nid: policies.dangling\ntype: policy\nowner: support\nreferences: [policies.gone]\n---\nx\n");
    let r = repo.ctx(&["graph", "--role", "support", "--root", "policies.dangling"]);
    assert!(
        r.stdout
            .contains("→ references      policies.gone  (missing)"),
        "{}",
        r.stdout
    );
}
