//! `ctx list` and `ctx get`: the human table and record, whole, as one role
//! may see them.

use crate::support::ctx_in;
use crate::support::fixtures::healthy;

const AT: &str = "2026-09-01T00:00:00Z";

const MARGINS: &str = "---\nid: policies.internal.margins\ntype: policy\nowner: leads\nclassification: confidential\nupdated: 2026-08-01T00:00:00Z\n---\n\nMARGINS-STAY-INTERNAL\n";

#[test]
fn list_is_a_table_of_what_the_consumer_may_see() {
    let repo = healthy();
    repo.write("context/policies/internal/margins.md", MARGINS);
    let all = ctx_in(&repo).args(["list", "--at", AT]).run();
    all.assert_ok();
    insta::assert_snapshot!("list_all", all.transcript());
    // The support role's scope excludes policies.internal.*; the row is simply absent.
    let support = ctx_in(&repo)
        .args(["list", "--role", "support", "--at", AT])
        .run();
    support.assert_ok();
    assert!(
        !support.stdout.contains("margins"),
        "{}",
        support.describe()
    );
    insta::assert_snapshot!("list_role_support", support.transcript());
    let history = ctx_in(&repo)
        .args([
            "list",
            "--include-historical",
            "--type",
            "pricing",
            "--at",
            AT,
        ])
        .run();
    history.assert_ok();
    insta::assert_snapshot!("list_historical_pricing", history.transcript());
}

#[test]
fn get_prints_one_record_with_its_lifecycle_and_file() {
    let repo = healthy();
    let current = ctx_in(&repo)
        .args(["get", "pricing.enterprise", "--at", AT])
        .run();
    current.assert_ok();
    insta::assert_snapshot!("get_current", current.transcript());
    let old = ctx_in(&repo)
        .args(["get", "pricing.enterprise@1", "--at", AT])
        .run();
    old.assert_ok();
    insta::assert_snapshot!("get_superseded_version", old.transcript());
    // Denied and missing read the same.
    repo.write("context/policies/internal/margins.md", MARGINS);
    let denied = ctx_in(&repo)
        .args(["get", "policies.internal.margins", "--role", "support"])
        .run();
    denied.assert_code(3);
    assert!(!denied.stderr.contains("MARGINS-STAY-INTERNAL"));
    insta::assert_snapshot!("get_not_visible", denied.transcript());
}

/// Titles (and values) are repository text: in human output their control and
/// bidirectional characters are escaped, so a title cannot recolour or rewrite
/// the reader's terminal (issue 9 §7).
#[test]
fn human_output_escapes_control_characters_in_titles() {
    let repo = crate::support::Repo::new(&[
        (
            "opencontext.yaml",
            "opencontext: \"1.0\"\nid: t\ncollections:\n  c: ./context/**\nroles:\n  r:\n    include: [c.*]\n",
        ),
        (
            "context/x.md",
            "---\nid: c.x\ntype: note\nowner: s\nversion: 1\ntitle: plain\n---\n\nBody\n",
        ),
        (
            "context/x.v2.md",
            "---\nid: c.x\ntype: note\nowner: s\nversion: 2\nsupersedes: [c.x@1]\ntitle: \"bell \\u0007 \\u001b[31mred \\u200b\"\n---\n\nBody\n",
        ),
    ]);
    for args in [
        &["search", "bell", "--role", "r"][..],
        &["search", "bell"],
        &["diff", "c.x@1", "c.x@2", "--role", "r"],
        &["resolve", "--role", "r", "--explain"],
    ] {
        let r = ctx_in(&repo).args(args).run();
        r.assert_ok();
        assert!(r.stdout.contains("bell"), "{args:?}: {}", r.describe());
        assert!(
            !r.stdout.contains(['\u{7}', '\u{1b}', '\u{200b}']),
            "{args:?} prints raw control characters: {:?}",
            r.stdout
        );
        assert!(
            // A zero-width space (a warning, so the object is served) by its code point.
            r.stdout.contains("\\u{1b}[31mred <U+200B>"),
            "{args:?}: {}",
            r.stdout
        );
    }
}
