use super::*;
use crate::load::{self, LoadOptions};
use crate::manifest::Manifest;
use crate::model::Classification;

const MANIFEST: &str = "opencontext: \"1.0\"\nid: acme\nname: ACME\ncollections:\n  policies: ./context/policies/**\n  customers: ./context/customers/**\nroles:\n  support:\n    include: [policies.*, customers.*]\n    exclude: [policies.internal.*]\n  leads:\n    include: [\"*\"]\n    max_classification: confidential\n  interns:\n    inherits: [support]\nagents:\n  bot:\n    roles: [support]\n";

const REFUNDS: &str = "---\nid: policies.refunds\ntype: policy\nowner: support\n---\nRefunds.\n";
const DISCOUNTS: &str =
    "---\nid: policies.internal.discounts\ntype: policy\nowner: sales\n---\nDiscounts.\n";
const ACME: &str = "id: customers.acme\ntype: customer\nowner: support\ncontent:\n  name: Acme\n  contact:\n    email: ops@acme.test\n";

fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, Repo) {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let (m, diags) = Manifest::discover(Some(dir.path()), dir.path()).unwrap();
    let r = load::load(m, diags, &LoadOptions::default());
    (dir, r)
}

fn base(manifest: &str) -> (tempfile::TempDir, Repo) {
    repo(&[
        ("opencontext.yaml", manifest),
        ("context/policies/refunds.md", REFUNDS),
        ("context/policies/internal/discounts.md", DISCOUNTS),
        ("context/customers/acme.yaml", ACME),
    ])
}

fn at() -> Instant {
    crate::time::parse_at("2026-09-01T00:00:00Z").unwrap()
}

fn consumer<'d>(d: &'d AccessDiff, name: &str) -> &'d ConsumerDiff {
    d.consumers.iter().find(|c| c.name == name).unwrap()
}

#[test]
fn identical_states_differ_in_nothing() {
    let (_a, a) = base(MANIFEST);
    let (_b, b) = base(MANIFEST);
    let d = diff(&a, &b, at());
    assert!(d.is_empty(), "{d:#?}");
    let names: Vec<&str> = d.consumers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["interns", "leads", "support", "bot"],
        "roles, then agents"
    );
}

#[test]
fn a_dropped_exclude_pattern_reveals_the_object_with_its_cause() {
    let (_a, a) = base(MANIFEST);
    let (_b, b) = base(&MANIFEST.replace("    exclude: [policies.internal.*]\n", ""));
    let d = diff(&a, &b, at());
    for name in ["support", "interns", "bot"] {
        let c = consumer(&d, name);
        assert_eq!(c.visible.len(), 1, "{name}: {c:#?}");
        let v = &c.visible[0];
        assert_eq!(v.key, "policies.internal.discounts");
        assert_eq!(
            v.before,
            Status::Judged(Why::ScopeExclusion {
                pattern: "policies.internal.*".into(),
                roles: vec!["support".into()],
            })
        );
        assert_eq!(
            v.after,
            Status::Judged(Why::Visible {
                via: "policies.*".into()
            })
        );
        assert_eq!(c.policy.exclude.removed, ["policies.internal.*"]);
    }
    assert!(consumer(&d, "leads").is_empty());
}

#[test]
fn redaction_rules_name_fields_never_values() {
    let (_a, a) = base(MANIFEST);
    let with_rule = MANIFEST.replace(
        "    exclude: [policies.internal.*]\n",
        "    exclude: [policies.internal.*]\n    redact:\n      - path: contact.email\n        mode: mask\n      - path: contact.phone\n",
    );
    let (_b, b) = base(&with_rule);
    let d = diff(&a, &b, at());
    let c = consumer(&d, "support");
    // Only the path that matches a field of the content is reported as redacted.
    assert_eq!(
        c.redaction,
        vec![FieldRedaction {
            key: "customers.acme".into(),
            file: "context/customers/acme.yaml".into(),
            path: "contact.email".into(),
            before: None,
            after: Some(RedactionMode::Mask),
            basis: Basis::Content,
        }]
    );
    assert_eq!(c.policy.rules.added.len(), 2);
    let text = render::text(&d, "a..b");
    assert!(text.contains("contact.email"), "{text}");
    assert!(!text.contains("ops@acme.test"), "{text}");
    // And back: unredacted.
    let back = diff(&b, &a, at());
    let c = consumer(&back, "support");
    assert_eq!(c.redaction[0].before, Some(RedactionMode::Mask));
    assert_eq!(c.redaction[0].after, None);
}

#[test]
fn ceilings_report_their_source_and_hide_what_they_no_longer_cover() {
    let secret = ACME.replace(
        "owner: support\n",
        "owner: support\nclassification: confidential\n",
    );
    let files = |m: &str| {
        repo(&[
            ("opencontext.yaml", m),
            ("context/policies/refunds.md", REFUNDS),
            ("context/customers/acme.yaml", &secret),
        ])
    };
    let raised = MANIFEST.replace(
        "    exclude: [policies.internal.*]\n",
        "    exclude: [policies.internal.*]\n    max_classification: confidential\n",
    );
    let (_a, a) = files(MANIFEST);
    let (_b, b) = files(&raised);
    let d = diff(&a, &b, at());
    let c = consumer(&d, "interns");
    let (was, now) = c.ceiling_change().expect("ceiling changed");
    assert_eq!(was.level, Classification::Internal);
    assert!(was.source().contains("default"), "{}", was.source());
    assert_eq!(now.level, Classification::Confidential);
    assert_eq!(
        now.source(),
        "roles.support.max_classification (inherited: interns → support)"
    );
    assert_eq!(c.visible[0].key, "customers.acme");
    match &c.visible[0].before {
        Status::Judged(Why::Classification {
            classification,
            ceiling,
        }) => {
            assert_eq!(*classification, Classification::Confidential);
            assert_eq!(ceiling.level, Classification::Internal);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_broken_policy_refuses_everyone_and_says_so() {
    let (_a, a) = base(MANIFEST);
    let (_b, b) = base(&MANIFEST.replace(
        "    include: [\"*\"]\n",
        "    include: [\"*\"]\n    exclud: [x]\n",
    ));
    let d = diff(&a, &b, at());
    let c = consumer(&d, "support");
    assert!(matches!(c.after, Standing::Refused(_)), "{c:#?}");
    assert_eq!(c.invisible.len(), 2, "what support saw: refunds and acme");
    assert!(c.invisible.iter().all(|v| v.after == Status::Unserved));
}

#[test]
fn a_version_bump_in_place_is_the_same_object() {
    let (_a, a) = base(MANIFEST);
    let (_b, b) = repo(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/policies/refunds.md",
            &REFUNDS.replace(
                "type: policy\n",
                "type: policy\nversion: 2\nclassification: restricted\n",
            ),
        ),
        ("context/policies/internal/discounts.md", DISCOUNTS),
        ("context/customers/acme.yaml", ACME),
    ]);
    let d = diff(&a, &b, at());
    let c = consumer(&d, "support");
    assert!(c.visible.is_empty(), "{c:#?}");
    assert_eq!(c.invisible.len(), 1);
    assert_eq!(c.invisible[0].key, "policies.refunds@2");
    assert_eq!(c.invisible[0].before.reason(), "visible");
    assert_eq!(c.invisible[0].after.reason(), "classification-denied");
}
