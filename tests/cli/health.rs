//! doctor, conflicts and stale against fixture repositories.

use crate::support::fixtures::{healthy, MISSION, OPS_MANIFEST, REFUNDS};
use crate::support::{ctx, Repo};

const AT: &str = "2026-09-01T00:00:00Z";

fn codes(doc: &serde_json::Value) -> Vec<(String, String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
                f["id"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_new_init_project_scores_100() {
    let dir = tempfile::tempdir().unwrap();
    let r = ctx(dir.path(), &["init", "--yes", "fresh"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = ctx(
        &dir.path().join("fresh"),
        &["doctor", "--strict", "--format", "json"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let doc = r.json();
    assert_eq!(doc["score"], 100.0, "{doc}");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["findings"].as_array().unwrap().len(), 0, "{doc}");
    let r = ctx(&dir.path().join("fresh"), &["doctor"]);
    assert!(r.stdout.contains("Context health: 100%"), "{}", r.stdout);
    assert!(r.stdout.contains("✓ healthy"), "{}", r.stdout);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn healthy_fixture_reports_each_collection() {
    let repo = healthy();
    let r = repo.ctx(&["doctor", "--at", AT]);
    r.assert_ok();
    // A healthy row per collection, every count zero, the score against the manifest's floor.
    insta::assert_snapshot!("doctor_healthy", r.transcript());
    let doc = repo.ctx(&["doctor", "--at", AT, "--format", "json"]).json();
    // Only the diagnostic schema's top-level keys.
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for k in &keys {
        assert!(
            [
                "opencontext",
                "ok",
                "generated_at",
                "namespace",
                "score",
                "counts",
                "findings",
                "extensions"
            ]
            .contains(k),
            "unexpected key {k}"
        );
    }
    assert_eq!(doc["namespace"], "acme");
    assert_eq!(doc["counts"]["objects"], 5);
    let cols = &doc["extensions"]["ctx.health"]["collections"];
    assert!(
        cols.as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "pricing" && c["objects"] == 2),
        "{cols}"
    );
}

/// One object per clock finding, at a fixed instant.
fn clocked() -> Repo {
    let repo = healthy();
    repo.write(
        "context/policies/stale.md",
        "---\nid: policies.stale\ntype: policy\nowner: support\nttl: 30d\nupdated: 2026-07-15T00:00:00Z\n---\n\nOld.\n",
    );
    repo.write(
        "context/policies/expired.md",
        "---\nid: policies.expired\ntype: policy\nowner: support\nupdated: 2026-08-01T00:00:00Z\nexpires: 2026-08-15T00:00:00Z\n---\n\nGone.\n",
    );
    repo.write(
        "context/policies/future.md",
        "---\nid: policies.future\ntype: policy\nowner: support\nupdated: 2026-08-01T00:00:00Z\nvalid_from: 2026-12-01T00:00:00Z\n---\n\nSoon.\n",
    );
    repo.write(
        "context/policies/review.md",
        "---\nid: policies.review\ntype: policy\nowner: support\nupdated: 2026-08-01T00:00:00Z\nreview:\n  interval: 180d\n  next_review: 2026-08-20\n---\n\nCheck me.\n",
    );
    repo
}

#[test]
fn clock_findings_and_the_documented_score() {
    let repo = clocked();
    let r = repo.ctx(&["doctor", "--at", AT, "--format", "json"]);
    // Not strict, and 100 − (0.15+0.4+0.05+0.15)/9×100 = 91.66… → 91.6 is above the floor of 50.
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let doc = r.json();
    let got = codes(&doc);
    assert_eq!(
        got,
        vec![
            ("expired".into(), "error".into(), "policies.expired".into()),
            (
                "review-overdue".into(),
                "warning".into(),
                "policies.review".into()
            ),
            ("stale".into(), "warning".into(), "policies.stale".into()),
            (
                "not-yet-valid".into(),
                "info".into(),
                "policies.future".into()
            ),
        ],
        "most severe first"
    );
    assert_eq!(doc["score"], 91.6);
    assert_eq!(doc["counts"]["stale"], 1);
    assert_eq!(doc["counts"]["expired"], 1);
    // Strict: the expired error is at fail_on (error).
    let r = repo.ctx(&["doctor", "--at", AT, "--strict"]);
    r.assert_code(1);
    // Every clock finding with its instant, the counts, and the verdict naming `error`.
    insta::assert_snapshot!("doctor_clock_findings_strict", r.transcript());
    // The floor applies without --strict.
    let r = repo.ctx(&["doctor", "--at", AT, "--min-score", "95"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("✗ unhealthy: score 91.6% is below the minimum 95"),
        "{}",
        r.stdout
    );
    // Before anything went stale or expired, only the scheduled object is reported.
    let r = repo.ctx(&["doctor", "--at", "2026-08-02", "--format", "json"]);
    let early: Vec<String> = codes(&r.json()).into_iter().map(|c| c.0).collect();
    assert_eq!(early, vec!["not-yet-valid"]);
}

#[test]
fn stale_command_gates_by_severity() {
    let repo = clocked();
    let r = repo.ctx(&["stale", "--at", AT]);
    r.assert_code(1); // expired is an error
    insta::assert_snapshot!("stale_clock_findings", r.transcript());
    std::fs::remove_file(repo.path().join("context/policies/expired.md")).unwrap();
    let r = repo.ctx(&["stale", "--at", AT]);
    assert_eq!(r.code, 0, "warnings alone pass: {}", r.stdout);
    let r = repo.ctx(&["stale", "--at", AT, "--strict"]);
    assert_eq!(r.code, 1, "strict fails on stale: {}", r.stdout);
    let r = repo.ctx(&[
        "stale",
        "--at",
        "2026-08-02",
        "--strict",
        "--format",
        "json",
    ]);
    assert_eq!(
        r.code, 0,
        "a scheduled object alone does not fail: {}",
        r.stdout
    );
    assert_eq!(r.json()["findings"][0]["code"], "not-yet-valid");
    let r = repo.ctx(&["stale", "--at", "next tuesday"]);
    assert_eq!(r.code, 2);
}

#[test]
fn health_block_configures_weights_floor_and_fail_on() {
    let repo = clocked();
    std::fs::remove_file(repo.path().join("context/policies/expired.md")).unwrap();
    let manifest = OPS_MANIFEST.replace(
        "health:\n  minimum_score: 50\n",
        "health:\n  minimum_score: 99\n  fail_on: warning\n  weights:\n    stale: 0\n    review-overdue: 0\n    not-yet-valid: 0\n    stael: 1\n",
    );
    repo.write("opencontext.yaml", &manifest);
    let r = repo.ctx(&["doctor", "--at", AT, "--format", "json"]);
    let doc = r.json();
    // Every clock finding weighs 0; the misspelt weight is itself reported (manifest-invalid, 1.0 / 8).
    let got = codes(&doc);
    assert!(
        got.contains(&("manifest-invalid".into(), "warning".into(), "".into())),
        "{got:?}"
    );
    assert_eq!(doc["score"], 87.5);
    assert_eq!(r.code, 1, "below the manifest floor of 99");
    assert_eq!(doc["ok"], false);
    assert_eq!(
        doc["extensions"]["ctx.health"]["failures"][0]["reason"],
        "below-minimum"
    );
    // --min-score overrides the floor; fail_on warning fails a strict run.
    assert_eq!(
        repo.ctx(&["doctor", "--at", AT, "--min-score", "80"]).code,
        0
    );
    let r = repo.ctx(&["doctor", "--at", AT, "--min-score", "80", "--strict"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("at or above `warning`"), "{}", r.stdout);
    assert_eq!(repo.ctx(&["doctor", "--min-score", "101"]).code, 2);
}

#[test]
fn orphaned_is_narrow_and_informational() {
    let repo = Repo::new(&[
        (
            "opencontext.yaml",
            "opencontext: \"1.0\"\nid: acme\ncontext:\n  mission: ./context/mission.md\ncollections:\n  notes: ./context/notes/**\nroles:\n  everyone:\n    include: [mission]\n",
        ),
        ("context/mission.md", MISSION),
        ("context/notes/lonely.md", "---\nid: notes.lonely\ntype: note\nowner: me\n---\n\nNobody reads me.\n"),
        ("context/notes/cited.md", "---\nid: notes.cited\ntype: note\nowner: me\n---\n\nCited.\n"),
        ("context/notes/citer.md", "---\nid: notes.citer\ntype: note\nowner: me\nreferences: [notes.cited]\n---\n\nSee notes.cited.\n"),
    ]);
    let doc = repo.ctx(&["doctor", "--format", "json"]).json();
    let orphans: Vec<String> = codes(&doc)
        .into_iter()
        .filter(|c| c.0 == "orphaned")
        .map(|c| format!("{}:{}", c.1, c.2))
        .collect();
    assert_eq!(
        orphans,
        vec!["info:notes.citer", "info:notes.lonely"],
        "cited objects are not orphans"
    );
    assert_eq!(doc["counts"]["orphaned"], 2);
}

#[test]
fn broken_sources_are_reported() {
    let repo = healthy();
    repo.write(
        "context/policies/linked.md",
        "---\nid: policies.linked\ntype: policy\nowner: support\ncontent_uri: ./context/missing.md\nsources:\n  - uri: file://context/gone.md\n---\n",
    );
    let doc = repo.ctx(&["doctor", "--at", AT, "--format", "json"]).json();
    let got = codes(&doc);
    assert!(
        got.contains(&(
            "source-unavailable".into(),
            "error".into(),
            "policies.linked".into()
        )),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "source-unavailable".into(),
            "warning".into(),
            "policies.linked".into()
        )),
        "{got:?}"
    );
    assert_eq!(doc["counts"]["broken_sources"], 2);
}

#[test]
fn conflicts_command() {
    let repo = healthy();
    let r = repo.ctx(&["conflicts"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("✓ no conflicts"), "{}", r.stdout);
    repo.write(
        "context/policies/refunds-observed.md",
        "---\nid: policies.refunds-observed\ntype: policy\nauthority: observed\nowner: support\nconflicts_with: [policies.refunds]\n---\n\n45 days.\n",
    );
    let r = repo.ctx(&["conflicts"]);
    r.assert_ok(); // a settled conflict is a warning
    insta::assert_snapshot!("conflicts_declared", r.transcript());
    assert_eq!(repo.ctx(&["conflicts", "--strict"]).code, 1);
    repo.write(
        "context/policies/refunds-copy.md",
        &REFUNDS.replace("30 days", "60 days"),
    );
    let r = repo.ctx(&["conflicts", "--format", "json"]);
    assert_eq!(r.code, 1);
    let found: Vec<String> = codes(&r.json()).into_iter().map(|c| c.0).collect();
    assert!(found.contains(&"duplicate-id".to_string()), "{found:?}");
    // Only conflict codes: the missing owner elsewhere is not reported here.
    repo.write(
        "context/policies/ownerless.md",
        "---\nid: policies.ownerless\ntype: policy\n---\nx\n",
    );
    let r = repo.ctx(&["conflicts", "--format", "json"]);
    assert!(!r.stdout.contains("missing-owner"), "{}", r.stdout);
}

/// The benchmark generator's corpora: doctor finds exactly what was planted.
#[test]
fn generated_corpus_findings_match_what_was_planted() {
    let script = crate::support::project_root().join("../shared/bench/gen_corpus.py");
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output();
    if !script.is_file() || python.is_err() {
        eprintln!("note: {} or python3 is absent; skipping", script.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for (name, defects) in [("with", true), ("without", false)] {
        let out = tmp.path().join(name);
        let mut cmd = std::process::Command::new("python3");
        cmd.arg(&script)
            .args(["--objects", "1000", "--out"])
            .arg(&out);
        if !defects {
            cmd.arg("--no-defects");
        }
        assert!(cmd.output().unwrap().status.success());
        let generated: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("GENERATED.json")).unwrap())
                .unwrap();
        let now = generated["now"].as_str().unwrap();
        let r = ctx(&out, &["doctor", "--at", now, "--format", "json"]);
        let doc = r.json();
        let mut counts = std::collections::BTreeMap::<String, u64>::new();
        for c in codes(&doc) {
            *counts.entry(c.0).or_default() += 1;
        }
        let mut expected = std::collections::BTreeMap::<String, u64>::new();
        if defects {
            for part in ["validate", "doctor_adds"] {
                for (k, v) in generated["expected_findings"][part].as_object().unwrap() {
                    expected.insert(k.clone(), v.as_u64().unwrap());
                }
            }
        }
        assert_eq!(counts, expected, "{name} defects");
        if !defects {
            assert_eq!(doc["score"], 100.0);
            assert_eq!(r.code, 0);
        }
    }
}
