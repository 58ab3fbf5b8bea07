//! OpenContext v1 outputs that must not lose or launder anything (issue 16):
//! provenance.required in bundles (§13.1), authority never raised by a default
//! (§16.3, §19), nothing lost in Markdown bundles or exports (§11.2, §12.4), and
//! the reference CLI's `--at`, `--output` and `lifecycle` key.

use serde_json::Value;

use crate::support::Repo;

const MANIFEST: &str = "opencontext: \"1.0\"\nid: acme\ncollections:\n  notes: ./context/notes/**\nroles:\n  support:\n    include: [\"notes.*\"]\n";

fn note(id: &str, extra: &str, body: &str) -> String {
    format!("---\nid: {id}\ntype: note\nowner: support\nupdated: 2026-08-01T00:00:00Z\n{extra}---\n\n{body}\n")
}

fn warnings<'a>(b: &'a Value, code: &str) -> Vec<&'a Value> {
    b["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["code"] == code)
        .collect()
}

#[test]
fn provenance_required_is_a_bundle_warning_for_an_unattributed_object() {
    let manifest = format!("{MANIFEST}provenance:\n  required: true\n");
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest),
        ("context/notes/bare.md", &note("notes.bare", "", "No source.")),
        (
            "context/notes/sourced.md",
            &note(
                "notes.sourced",
                "sources:\n  - uri: https://crm.example/acct/1\n    digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\n",
                "From the CRM.",
            ),
        ),
        (
            "context/notes/origin.md",
            &note("notes.origin", "canonical_source: true\n", "Written here."),
        ),
    ]);
    let r = repo.ctx(&["resolve", "--role", "support", "--at", "2026-09-01"]);
    let b = r.json();
    let w = warnings(&b, "missing-provenance");
    assert_eq!(w.len(), 1, "{b:#}");
    assert_eq!(w[0]["id"], "notes.bare");
    assert_eq!(w[0]["severity"], "error");
    // The object still resolves (the choice documented in docs/objects.md).
    assert_eq!(b["objects"].as_array().unwrap().len(), 3);
    // A default source is the loader's, not the author's: still unattributed.
    let with_default = format!("{manifest}defaults:\n  owner: support\n");
    repo.write("opencontext.yaml", &with_default);
    let b = repo
        .ctx(&["resolve", "--role", "support", "--at", "2026-09-01"])
        .json();
    assert_eq!(warnings(&b, "missing-provenance").len(), 1, "{b:#}");
    // Markdown shows the canonical source, and the warning.
    let md = repo
        .ctx(&[
            "resolve",
            "--role",
            "support",
            "--at",
            "2026-09-01",
            "--format",
            "markdown",
        ])
        .stdout;
    assert!(
        md.contains("Canonical source: this object is the origin"),
        "{md}"
    );
    assert!(md.contains("missing-provenance: notes.bare"), "{md}");
}

#[test]
fn a_default_never_makes_untrusted_or_observed_material_canonical() {
    let manifest = format!("{MANIFEST}defaults:\n  authority: canonical\n");
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest),
        (
            "context/notes/ticket.md",
            &note(
                "notes.ticket",
                "trust: untrusted\n",
                "Customer says: refunds are 90 days.",
            ),
        ),
        (
            "context/notes/heard.md",
            &note(
                "notes.heard",
                "sources:\n  - uri: slack://support/123\n    type: observation\n",
                "Overheard in standup.",
            ),
        ),
        (
            "context/notes/policy.md",
            &note("notes.policy", "", "Refunds are 30 days."),
        ),
    ]);
    let b = repo
        .ctx(&["resolve", "--role", "support", "--at", "2026-09-01"])
        .json();
    let authority = |id: &str| {
        b["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {b:#}"))["authority"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(authority("notes.ticket"), "observed");
    assert_eq!(authority("notes.heard"), "observed");
    assert_eq!(authority("notes.policy"), "canonical");
    let ids: Vec<&str> = warnings(&b, "untrusted-canonical")
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["notes.heard", "notes.ticket"], "{b:#}");
    // validate reports it; --strict fails.
    let doc = repo.ctx(&["validate", "--format", "json"]).json();
    let found: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "untrusted-canonical")
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(found, vec!["notes.heard", "notes.ticket"], "{doc:#}");
    assert_eq!(repo.ctx(&["validate", "--strict"]).code, 1);
    // list and get show the effective authority too.
    let got = repo
        .ctx(&["get", "notes.ticket", "--format", "json"])
        .json();
    assert_eq!(got["authority"], "observed");
}

#[test]
fn declared_canonical_on_untrusted_material_is_flagged_in_the_bundle() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/notes/ticket.md",
            &note("notes.ticket", "authority: canonical\ntrust: untrusted\n", "Pasted text."),
        ),
        (
            "context/notes/heard.md",
            &note(
                "notes.heard",
                "authority: approved\nsources:\n  - uri: slack://support/1\n    type: conversation\n",
                "From chat.",
            ),
        ),
    ]);
    let b = repo
        .ctx(&["resolve", "--role", "support", "--at", "2026-09-01"])
        .json();
    let w = warnings(&b, "untrusted-canonical");
    let ids: Vec<&str> = w.iter().map(|w| w["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["notes.heard", "notes.ticket"], "{b:#}");
    assert!(w.iter().all(|w| w["severity"] == "error"));
    assert_eq!(repo.ctx(&["validate", "--strict"]).code, 1);
}

#[test]
fn markdown_bundles_list_what_was_left_out() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/notes/a.md", &note("notes.a", "", "Refund rules.")),
        (
            "context/notes/b.md",
            &note("notes.b", "", "Shipping rules."),
        ),
    ]);
    let md = repo
        .ctx(&[
            "resolve", "--role", "support", "--task", "refund", "--limit", "1", "--format",
            "markdown",
        ])
        .stdout;
    assert!(md.contains("## Not included"), "{md}");
    assert!(
        md.contains("- `notes.b`: not-relevant (trimmed by --limit 1"),
        "{md}"
    );
}

#[test]
fn adapter_content_types_reach_the_bundle() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/notes/data.md",
            &note("notes.data", "content_uri: file://data/prices.json\n", "")
                .replace("\n\n\n", "\n"),
        ),
        ("data/prices.json", "{\"enterprise\": 2500}\n"),
    ]);
    let r = repo.ctx(&["resolve", "--role", "support", "--at", "2026-09-01"]);
    let b = r.json();
    let o = &b["objects"][0];
    assert_eq!(o["content_type"], "application/json", "{b:#}");
    let md = repo
        .ctx(&[
            "resolve",
            "--role",
            "support",
            "--at",
            "2026-09-01",
            "--format",
            "markdown",
        ])
        .stdout;
    assert!(md.contains("```json\n{\"enterprise\": 2500}"), "{md}");
}

#[test]
fn export_keeps_sources_and_canonical_source() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/notes/crm.md",
            &note(
                "notes.crm",
                "sources:\n  - uri: crm://accounts/acme\n",
                "Account facts.",
            ),
        ),
        (
            "context/notes/origin.md",
            &note("notes.origin", "canonical_source: true\n", "Written here."),
        ),
        (
            "context/notes/data.md",
            &note("notes.data", "content_uri: file://data/prices.json\n", "")
                .replace("\n\n\n", "\n"),
        ),
        ("data/prices.json", "{\"enterprise\": 2500}\n"),
    ]);
    let out = repo.path().join("out").join("AGENTS.md");
    let r = repo.ctx(&[
        "export",
        "--target",
        "agents-md",
        "--role",
        "support",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("Sources: crm://accounts/acme"), "{text}");
    assert!(
        text.contains("Canonical source: this object is the origin"),
        "{text}"
    );
}

#[test]
fn list_and_search_json_use_the_lifecycle_key() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/notes/a.md",
            &note("notes.a", "ttl: 1d\n", "Refund rules."),
        ),
    ]);
    // The reference's documented jq example: select(.lifecycle=="stale").
    let nd = repo
        .ctx(&["list", "--format", "ndjson", "--at", "2026-09-01"])
        .stdout;
    let row: Value = serde_json::from_str(nd.lines().next().unwrap()).unwrap();
    assert_eq!(row["lifecycle"], "stale", "{row}");
    assert!(row.get("state").is_none());
    let hits = repo
        .ctx(&[
            "search",
            "refund",
            "--format",
            "json",
            "--at",
            "2026-08-01T12:00:00Z",
        ])
        .json();
    assert_eq!(hits[0]["lifecycle"], "current", "{hits}");
    let hits = repo
        .ctx(&["search", "refund", "--format", "json", "--at", "2026-09-01"])
        .json();
    assert_eq!(hits[0]["lifecycle"], "stale", "{hits}");
}

#[test]
fn time_judging_commands_take_at_and_document_commands_take_output() {
    let v1 = "---\nid: notes.a\ntype: note\nversion: 1\nowner: support\nupdated: 2026-08-01T00:00:00Z\n---\n\nOne.\n";
    let v2 = "---\nid: notes.a\ntype: note\nversion: 2\nsupersedes: [notes.a@1]\nvalid_from: 2027-01-01T00:00:00Z\nowner: support\nupdated: 2026-08-01T00:00:00Z\n---\n\nTwo.\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/notes/a.md", v1),
        ("context/notes/a.v2.md", v2),
    ]);
    // graph: an unpinned reference points at the version current at --at.
    repo.write(
        "context/notes/b.md",
        "---\nid: notes.b\ntype: note\nowner: support\nreferences: [notes.a]\n---\n\nSee A.\n",
    );
    let target = |at: &str| {
        let g = repo.ctx(&["graph", "--format", "json", "--at", at]).json();
        g["edges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == "references")
            .unwrap_or_else(|| panic!("{g:#}"))["to"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(target("2026-09-01"), "notes.a@1");
    assert_eq!(target("2027-09-01"), "notes.a@2");
    let d = repo
        .ctx(&[
            "diff",
            "notes.a",
            "notes.a@2",
            "--format",
            "json",
            "--at",
            "2026-09-01",
        ])
        .json();
    assert_eq!(d["before"]["key"], "notes.a@1", "{d:#}");
    for cmd in [
        vec!["validate"],
        vec!["search", "one"],
        vec!["conflicts"],
        vec!["graph"],
        vec!["diff", "notes.a@1", "notes.a@2"],
        vec!["list"],
        vec!["get", "notes.a"],
        vec!["history", "notes.a"],
    ] {
        let mut args = cmd.clone();
        args.extend(["--at", "not a time"]);
        let bad = repo.ctx(&args);
        assert_eq!(bad.code, 2, "{cmd:?}: {}", bad.stderr);
        assert!(bad.stderr.contains("--at"), "{cmd:?}: {}", bad.stderr);
    }
    for (n, cmd) in [
        vec!["get", "notes.a"],
        vec!["list"],
        vec!["search", "see"],
        vec!["graph"],
        vec!["diff", "notes.a@1", "notes.a@2"],
        vec!["history", "notes.a"],
        vec!["schema", "object"],
        vec!["audit", "show"],
        vec!["audit", "verify"],
        vec!["keys", "list"],
    ]
    .into_iter()
    .enumerate()
    {
        let out = repo.path().join(format!("out-{n}.txt"));
        let mut args = cmd.clone();
        args.extend(["--output", out.to_str().unwrap()]);
        let r = repo.ctx(&args);
        assert_eq!(r.code, 0, "{cmd:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{cmd:?}: {}", r.stdout);
        let written = std::fs::read_to_string(&out).unwrap();
        let direct = repo.ctx(&cmd).stdout;
        assert_eq!(written, direct, "{cmd:?}");
    }
}
