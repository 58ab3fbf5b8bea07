//! Error quality: YAML mistakes explained in plain words on the line that holds them,
//! manifest parse errors as records in every format, `validate --fix` for dates where
//! timestamps belong, and duplicate ids that name both files.

use serde_json::Value;

use crate::support::{Repo, Run};

const MANIFEST: &str =
    "opencontext: \"1.0\"\nid: acme\ncollections:\n  policies: ./context/policies/**\n";

#[track_caller]
fn first(r: &Run) -> Value {
    r.json()["findings"][0].clone()
}

#[test]
fn a_value_containing_colon_space_must_be_quoted() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/policies/refunds.md",
            "---\ntype: policy\ntitle: Refunds: the policy\nowner: support\n---\nText.\n",
        ),
    ]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    r.assert_code(1);
    let f = first(&r);
    assert_eq!(f["line"], 3, "{f:#}");
    assert_eq!(f["field"], "title");
    assert!(
        f["message"].as_str().unwrap().contains("contains `: `"),
        "{f:#}"
    );
    assert_eq!(
        f["remediation"],
        "quote the value: title: \"Refunds: the policy\""
    );
}

#[test]
fn a_tab_is_not_indentation_and_is_reported_on_its_line() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/policies/limits.yaml",
            "type: policy\nowner: support\ncontent:\n  max: 10\n\tmin: 1\n",
        ),
    ]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    r.assert_code(1);
    let f = first(&r);
    assert_eq!(f["file"], "context/policies/limits.yaml");
    assert_eq!(f["line"], 5, "{f:#}");
    assert!(f["message"].as_str().unwrap().contains("tab"), "{f:#}");
}

#[test]
fn front_matter_without_its_opening_fence_is_named() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/policies/refunds.md",
            "type: policy\nowner: support\n---\nRefunds within 30 days.\n",
        ),
    ]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    let all = r.json()["findings"].as_array().unwrap().clone();
    let f = all
        .iter()
        .find(|f| f["message"].as_str().unwrap().contains("no opening `---`"))
        .unwrap_or_else(|| panic!("{}", r.describe()));
    assert_eq!(f["line"], 1);
    assert_eq!(f["file"], "context/policies/refunds.md");
    repo.ctx(&["validate", "--strict"]).assert_code(1);
}

const BAD_MANIFEST: &str = "opencontext: \"1.0\"\nid: acme\nname: Acme: support team\n";

#[test]
fn a_manifest_parse_error_is_a_record_in_every_format() {
    let repo = Repo::new(&[("opencontext.yaml", BAD_MANIFEST)]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    r.assert_code(1);
    let f = first(&r);
    assert_eq!(f["code"], "manifest-invalid");
    assert_eq!(
        (f["file"].as_str(), f["line"].as_u64()),
        (Some("opencontext.yaml"), Some(3))
    );
    assert_eq!(
        f["remediation"],
        "quote the value: name: \"Acme: support team\""
    );

    let r = repo.ctx(&["validate", "--format", "github"]);
    r.assert_code(1)
        .assert_stdout_contains("::error title=manifest-invalid,file=opencontext.yaml,line=3");
    let r = repo.ctx(&["validate", "--format", "sarif"]);
    r.assert_code(1);
    assert_eq!(
        r.json()["runs"][0]["results"][0]["ruleId"],
        "manifest-invalid"
    );
    // People get a code frame showing the line.
    let r = repo.ctx(&["validate"]);
    r.assert_code(1)
        .assert_stderr_contains("name: Acme: support team")
        .assert_stderr_contains("quote the value");
    // So does every other command that loads the manifest.
    repo.ctx(&["list"])
        .assert_code(1)
        .assert_stderr_contains("name: Acme: support team");
}

#[test]
fn validate_fix_turns_a_date_into_the_start_of_that_day() {
    let dated =
        "---\ntype: policy\nowner: support\n# reviewed by legal\nupdated: 2026-08-01\n---\nText.\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", dated),
    ]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    r.assert_code(1);
    let f = first(&r);
    assert_eq!(f["field"], "updated");
    assert_eq!(f["line"], 5);
    assert!(
        f["remediation"].as_str().unwrap().contains(
            "`2026-08-01T00:00:00Z` (the start of that day, UTC), or run `ctx validate --fix`"
        ),
        "{f:#}"
    );

    let r = repo.ctx(&["validate", "--fix"]);
    r.assert_ok()
        .assert_stderr_contains("fixed context/policies/refunds.md")
        .assert_stderr_contains("2026-08-01T00:00:00Z");
    let text = std::fs::read_to_string(repo.path().join("context/policies/refunds.md")).unwrap();
    assert!(text.contains("updated: 2026-08-01T00:00:00Z"), "{text}");
    assert!(
        text.contains("# reviewed by legal") && text.ends_with("Text.\n"),
        "{text}"
    );
    // Nothing left to fix: a second run writes nothing.
    let r = repo.ctx(&["validate", "--fix"]);
    r.assert_ok();
    assert!(!r.stderr.contains("fixed"), "{}", r.describe());
}

#[test]
fn validate_fix_leaves_files_that_need_no_repair_alone() {
    // Keys out of canonical order are `ctx fmt`'s business, not a fix.
    let unordered = "---\nowner: support\ntype: policy\n---\nText.\n";
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/policies/refunds.md", unordered),
    ]);
    repo.ctx(&["validate", "--fix"]).assert_ok();
    let text = std::fs::read_to_string(repo.path().join("context/policies/refunds.md")).unwrap();
    assert_eq!(text, unordered);
}

#[test]
fn a_duplicate_id_names_both_files() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        (
            "context/policies/refunds.md",
            "---\ntype: policy\nowner: support\n---\nA.\n",
        ),
        (
            "context/policies/other.md",
            "---\nid: policies.refunds\ntype: policy\nowner: support\n---\nB.\n",
        ),
    ]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    r.assert_code(1);
    let all = r.json()["findings"].as_array().unwrap().clone();
    let f = all
        .iter()
        .find(|f| f["code"] == "duplicate-id")
        .unwrap_or_else(|| panic!("{}", r.describe()));
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("context/policies/other.md") && m.contains("context/policies/refunds.md"),
        "{m}"
    );
}
