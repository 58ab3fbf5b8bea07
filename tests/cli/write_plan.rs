//! `add`/`supersede` as a library plan: structured fields (`--tags`, `--set`) land
//! in the written object, and a dry run prints the plan without touching disk.

use crate::support::ctx_in;
use crate::support::fixtures::healthy;

#[test]
fn add_takes_tags_and_structured_fields() {
    let repo = healthy();
    let r = ctx_in(&repo)
        .args([
            "add",
            "notes.faq",
            "--type",
            "note",
            "--owner",
            "support",
            "--canonical-source",
            "--content",
            "Questions.",
            "--tags",
            "faq,support",
            "--tag",
            "onboarding",
            "--set",
            r#"review={"interval":"90d"}"#,
            "--set",
            "status=draft",
            "--dry-run",
        ])
        .run();
    r.assert_ok();
    assert!(
        r.stdout.contains("tags: [faq, support, onboarding]\n"),
        "{}",
        r.stdout
    );
    assert!(
        !repo.path().join("context/notes/faq.md").exists(),
        "dry run writes nothing"
    );
    let r = ctx_in(&repo)
        .args([
            "add",
            "notes.faq",
            "--type",
            "note",
            "--owner",
            "support",
            "--canonical-source",
            "--content",
            "Questions.",
            "--tags",
            "faq,support",
            "--set",
            r#"review={"interval":"90d"}"#,
            "--set",
            "status=draft",
        ])
        .run();
    r.assert_ok();
    let got = ctx_in(&repo)
        .args(["get", "notes.faq", "--format", "json"])
        .run()
        .json();
    assert_eq!(got["tags"], serde_json::json!(["faq", "support"]));
    assert_eq!(got["review"]["interval"], "90d");
    assert_eq!(got["status"], "draft");
    // Identity fields are ctx's to set.
    let r = ctx_in(&repo)
        .args(["add", "notes.x", "--type", "note", "--set", "version=3"])
        .run();
    r.assert_code(2);
    r.assert_stderr_contains("set by ctx itself");
}
