//! `ctx validate`: discovery of the manifest, findings in every format, exit codes.

use crate::support::{ctx, Repo, MANIFEST, MISSION};

#[test]
fn validate_clean_repository_exits_zero() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
        (
            "context/policies/refunds.md",
            "---\nid: policies.refunds\ntype: policy\nowner: support\n---\nRefunds within 30 days.\n",
        ),
    ]);
    let r = repo.ctx(&["validate"]);
    r.assert_ok();
    insta::assert_snapshot!("validate_clean", r.transcript());
}

#[test]
fn missing_manifest_exits_three_with_help() {
    let dir = tempfile::tempdir().unwrap();
    let r = ctx(dir.path(), &["validate"]);
    assert_eq!(r.code, 3);
    assert!(r.stderr.contains("no opencontext.yaml"), "{}", r.stderr);
    assert!(r.stderr.contains("ctx init"), "{}", r.stderr);
}

#[test]
fn code_frames_never_quote_a_secret_nor_a_huge_line_nor_control_characters() {
    let long = "y".repeat(400_000);
    let big = format!(
        "---\nid: policies.big\ntype: policy\nowner: x\ntitle: \"bell \u{7}\u{1b}[31mred\"\napi_key: sk_live_{} {long}\nextra: {long}\n---\nB\n",
        "a".repeat(40)
    );
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
        ("context/policies/big.md", big.as_str()),
    ]);
    let r = repo.ctx(&["validate"]);
    r.assert_code(1);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(!all.contains("sk_live_aaaa"), "a frame quoted the secret");
    assert!(
        !all.contains('\u{1b}') && !all.contains('\u{7}'),
        "raw control characters"
    );
    assert!(all.len() < 20_000, "{} bytes of diagnostics", all.len());
}

#[test]
fn conformance_on_a_missing_suite_exits_three() {
    let dir = tempfile::tempdir().unwrap();
    for suite in ["no-such-folder", "."] {
        let r = ctx(dir.path(), &["conformance", suite]);
        assert_eq!(r.code, 3, "{suite}: {}", r.stderr);
        assert!(r.stderr.contains("conformance.json"), "{}", r.stderr);
    }
}

#[test]
fn findings_in_every_format_name_file_line_and_fix() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
        (
            "context/policies/a.md",
            "---\nid: policies.a\ntype: policy\nowner: x\nreferences: [policies.zzz]\n---\nA\n",
        ),
    ]);
    let human = repo.ctx(&["validate"]);
    human.assert_code(1);
    // Code, file and line, the offending value and the fix.
    insta::assert_snapshot!("validate_broken_reference", human.transcript());
    let json = repo.ctx(&["validate", "--format", "json"]).json();
    assert_eq!(json["ok"], false);
    let f = &json["findings"][0];
    assert_eq!(f["code"], "broken-reference");
    assert_eq!(f["file"], "context/policies/a.md");
    assert!(f["line"].as_u64().is_some() && f["remediation"].is_string());
    let sarif = repo.ctx(&["validate", "--format", "sarif"]).json();
    assert_eq!(sarif["runs"][0]["results"][0]["ruleId"], "broken-reference");
    let gh = repo.ctx(&["validate", "--format", "github"]);
    assert!(
        gh.stdout
            .starts_with("::error title=broken-reference,file=context/policies/a.md,line="),
        "{}",
        gh.stdout
    );
}

/// One finding of each kind a newcomer meets first, each with its source
/// excerpt, expected and actual value and the fix, then the verdict.
#[test]
fn validate_reports_every_finding_with_its_source() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
        (
            "context/policies/a.md",
            "---\nid: policies.a\ntype: policy\nowner: x\nreferences: [policies.zzz]\n---\nA\n",
        ),
        (
            "context/policies/b.md",
            "---\nid: policies.b\ntype: policy\n---\nkey AKIAABCDEFGHIJKLMNOP\n",
        ),
        (
            "context/policies/c.md",
            "---\nid: policies.c\ntype: policy\nowner: a\nowner: b\n---\nx\n",
        ),
    ]);
    let r = repo.ctx(&["validate"]);
    r.assert_code(1);
    assert!(
        !r.stdout.contains("AKIAABCDEFGHIJKLMNOP"),
        "{}",
        r.describe()
    );
    insta::assert_snapshot!("validate_findings", r.transcript());
}

#[test]
fn discovery_walks_up_and_dash_c_accepts_a_manifest_path() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
    ]);
    std::fs::create_dir_all(repo.path().join("deep/er")).unwrap();
    assert_eq!(ctx(&repo.path().join("deep/er"), &["validate"]).code, 0);
    let elsewhere = tempfile::tempdir().unwrap();
    let manifest = repo.path().join("opencontext.yaml");
    assert_eq!(
        ctx(
            elsewhere.path(),
            &["-C", manifest.to_str().unwrap(), "validate"]
        )
        .code,
        0
    );
    // Two manifest files side by side: a warning names the ignored one.
    repo.write(
        "opencontext.json",
        "{\"opencontext\": \"1.0\", \"id\": \"other\"}",
    );
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert!(
        r.stdout.contains("opencontext.json is ignored"),
        "{}",
        r.stdout
    );
}

#[test]
fn role_graph_errors_are_reported() {
    let manifest = "opencontext: \"1.0\"\nid: acme\nroles:\n  a:\n    include: [x]\n    inherits: [b]\n  b:\n    include: [y]\n    inherits: [a]\n  c:\n    include: [\"pol*\"]\n    inherits: [ghost]\nagents:\n  bot:\n    roles: [nobody]\nauthority:\n  precedence: [canonical, approved]\n";
    let repo = Repo::new(&[("opencontext.yaml", manifest)]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert_eq!(r.code, 1);
    let codes: Vec<String> = r.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect();
    for c in [
        "role-cycle",
        "unknown-role",
        "invalid-permission",
        "manifest-invalid",
    ] {
        assert!(codes.contains(&c.to_string()), "{c} missing from {codes:?}");
    }
}
