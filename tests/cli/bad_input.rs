//! Bad input gets a clear error, names the file and line, and never stops the
//! other files from being checked.

use crate::support::{Repo, MANIFEST, MISSION};

fn finding<'a>(report: &'a serde_json::Value, code: &str, file: &str) -> &'a serde_json::Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == code && f["file"] == file)
        .unwrap_or_else(|| panic!("no {code} finding for {file} in {report:#}"))
}

fn repo_with(files: &[(&str, &str)]) -> Repo {
    let mut all = vec![
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
    ];
    all.extend_from_slice(files);
    Repo::new(&all)
}

#[test]
fn invalid_utf8_is_reported_with_its_line() {
    let repo = repo_with(&[]);
    crate::support::write(
        repo.path(),
        "context/policies/bad.md",
        b"---\nid: policies.bad\ntype: policy\n---\nline four \xff\xfe here\n",
    );
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert_eq!(r.code, 1);
    let f = finding(&r.json(), "schema-invalid", "context/policies/bad.md").clone();
    assert_eq!(f["line"], 5);
    assert!(f["message"].as_str().unwrap().contains("UTF-8"));
}

#[test]
fn duplicate_yaml_keys_are_errors_not_last_wins() {
    let repo = repo_with(&[(
        "context/policies/dup.md",
        "---\nid: policies.dup\ntype: policy\nowner: a\nowner: b\n---\nBody\n",
    )]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let f = finding(&r.json(), "schema-invalid", "context/policies/dup.md").clone();
    assert!(
        f["message"].as_str().unwrap().contains("duplicate key"),
        "{f}"
    );
    assert_eq!(f["line"], 5, "{f}");
}

#[test]
fn norway_values_stay_strings() {
    // `owner: no` must be the string "no" (YAML 1.2), so the object stays valid.
    let repo = repo_with(&[(
        "context/policies/n.md",
        "---\nid: policies.n\ntype: policy\nowner: no\ntitle: on\nsummary: yes\n---\nBody\n",
    )]);
    let r = repo.ctx(&["get", "policies.n", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = r.json();
    assert_eq!(v["owner"], "no");
    assert_eq!(v["title"], "on");
    assert_eq!(v["summary"], "yes");
}

#[test]
fn alias_bombs_fail_fast() {
    let mut bomb = String::from(
        "---\nid: policies.bomb\ntype: policy\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
    );
    for i in 1..12 {
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n",
            p = i - 1
        ));
    }
    bomb.push_str("---\nBody\n");
    let repo = repo_with(&[("context/policies/bomb.md", &bomb)]);
    let start = std::time::Instant::now();
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert!(
        start.elapsed().as_secs() < 20,
        "alias expansion must be bounded"
    );
    assert_eq!(r.code, 1);
    let f = finding(&r.json(), "schema-invalid", "context/policies/bomb.md").clone();
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("alias"),
        "{f}"
    );
}

#[test]
fn oversized_files_are_refused_clearly() {
    let big = format!(
        "---\nid: policies.big\ntype: policy\n---\n{}\n",
        "x".repeat(4096)
    );
    let repo = repo_with(&[("context/policies/big.md", &big)]);
    let r = repo.ctx(&["validate", "--format", "json", "--max-file-size", "1024"]);
    assert_eq!(r.code, 1);
    let f = finding(&r.json(), "source-unavailable", "context/policies/big.md").clone();
    assert!(f["message"].as_str().unwrap().contains("limit"), "{f}");
}

#[test]
fn unterminated_front_matter_names_the_fence() {
    let repo = repo_with(&[(
        "context/policies/open.md",
        "---\nid: policies.open\ntype: policy\nBody without a closing fence\n",
    )]);
    let r = repo.ctx(&["validate"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("context/policies/open.md"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("unterminated front matter"),
        "{}",
        r.stdout
    );
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_repository_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("secret.md"),
        "---\nid: policies.secret\ntype: policy\n---\nTOP SECRET PAYLOAD\n",
    )
    .unwrap();
    let repo = repo_with(&[]);
    std::fs::create_dir_all(repo.path().join("context/policies")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        repo.path().join("context/policies/secret.md"),
    )
    .unwrap();
    let r = repo.ctx(&["validate", "--format", "json"]);
    assert_eq!(r.code, 1);
    finding(&r.json(), "path-traversal", "context/policies/secret.md");
    let out = repo.ctx(&["resolve", "--role", "support"]);
    assert!(!out.stdout.contains("TOP SECRET PAYLOAD"));
    assert!(!out.stdout.contains("policies.secret"));
}

#[cfg(unix)]
#[test]
fn unreadable_and_broken_files_are_reported_and_others_still_checked() {
    let repo = repo_with(&[
        ("context/policies/good.md", "---\nid: policies.good\ntype: policy\nowner: a\nreferences: [policies.missing]\n---\nBody\n"),
        ("context/policies/locked.md", "---\nid: policies.locked\ntype: policy\nowner: a\n---\nBody\n"),
    ]);
    std::os::unix::fs::symlink(
        repo.path().join("context/policies/gone.md"),
        repo.path().join("context/policies/dangling.md"),
    )
    .unwrap();
    let locked = repo.path().join("context/policies/locked.md");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let unreadable = std::fs::read(&locked).is_err(); // root can read anything
    let r = repo.ctx(&["validate", "--format", "json"]);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(r.code, 1);
    let report = r.json();
    finding(
        &report,
        "source-unavailable",
        "context/policies/dangling.md",
    );
    if unreadable {
        finding(&report, "source-unavailable", "context/policies/locked.md");
    }
    // The good file is still checked: its broken reference is reported.
    finding(&report, "broken-reference", "context/policies/good.md");
}

#[test]
fn a_glob_matching_nothing_is_a_warning() {
    let manifest = MANIFEST.replace(
        "collections:\n",
        "collections:\n  extra: ./context/nothing-here/**\n",
    );
    let repo = Repo::new(&[
        ("opencontext.yaml", &manifest),
        ("context/mission.md", MISSION),
    ]);
    let r = repo.ctx(&["validate", "--format", "json"]);
    let report = r.json();
    let w = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == "collections.extra")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(w["severity"], "warning");
    assert_eq!(r.code, 0, "a warning alone does not fail a non-strict run");
    assert_eq!(repo.ctx(&["validate", "--strict"]).code, 1);
}

#[test]
fn unsupported_major_version_is_refused() {
    let repo = Repo::new(&[("opencontext.yaml", "opencontext: \"2.0\"\nid: acme\n")]);
    let r = repo.ctx(&["validate"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("version 2.0 is not supported"),
        "{}",
        r.stderr
    );
}
