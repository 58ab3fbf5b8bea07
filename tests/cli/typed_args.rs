//! Typed, consistent arguments: one value per `--role`/`--include`, `--at` parsed
//! by clap, one name for the people format everywhere (old names still accepted),
//! and the one-line-per-finding `concise` format.

use crate::support::ctx_in;
use crate::support::fixtures::healthy;

#[test]
fn role_takes_one_value_so_the_query_is_not_swallowed() {
    let repo = healthy();
    let r = ctx_in(&repo)
        .args(["search", "--role", "support", "refunds", "--format", "json"])
        .run();
    r.assert_ok();
    assert_eq!(r.json()[0]["id"], "policies.refunds", "{}", r.describe());
    // Several roles: repeat the flag.
    let r = ctx_in(&repo)
        .args([
            "list", "--role", "support", "--role", "leads", "--format", "json",
        ])
        .run();
    r.assert_ok();
    // --include also takes one value per flag; a second word is a usage error, not a pattern.
    let r = ctx_in(&repo)
        .args([
            "resolve",
            "--role",
            "support",
            "--include",
            "mission",
            "policies.*",
        ])
        .run();
    r.assert_code(2);
    let r = ctx_in(&repo)
        .args([
            "resolve",
            "--role",
            "support",
            "--include",
            "mission",
            "--include",
            "policies.*",
        ])
        .run();
    r.assert_ok();
    let ids: Vec<String> = r.json()["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
}

#[test]
fn at_is_checked_by_the_argument_parser() {
    let repo = healthy();
    for cmd in [
        vec!["resolve", "--role", "support"],
        vec!["list"],
        vec!["validate"],
        vec!["doctor"],
        vec!["get", "mission"],
    ] {
        let r = ctx_in(&repo)
            .args(&cmd)
            .args(["--at", "next tuesday"])
            .run();
        r.assert_code(2);
        r.assert_stderr_contains("--at");
        r.assert_stderr_contains("RFC 3339");
        assert!(r.stdout.is_empty(), "{}", r.describe());
    }
    // A date is the end of that day, for every command alike.
    let a = ctx_in(&repo)
        .args(["resolve", "--role", "support", "--at", "2026-09-01"])
        .run();
    let b = ctx_in(&repo)
        .args([
            "resolve",
            "--role",
            "support",
            "--at",
            "2026-09-01T23:59:59.999999999Z",
        ])
        .run();
    assert_eq!(a.json()["digest"], b.json()["digest"]);
}

#[test]
fn the_people_format_is_human_everywhere_and_old_names_still_work() {
    let repo = healthy();
    for (cmd, old) in [
        (vec!["list"], "table"),
        (vec!["search", "refunds"], "table"),
        (vec!["graph"], "text"),
        (vec!["history", "mission"], "text"),
        (vec!["validate"], "text"),
    ] {
        let human = ctx_in(&repo).args(&cmd).args(["--format", "human"]).run();
        human.assert_ok();
        let legacy = ctx_in(&repo).args(&cmd).args(["--format", old]).run();
        legacy.assert_ok();
        assert_eq!(human.stdout, legacy.stdout, "{cmd:?}");
    }
}

#[test]
fn concise_prints_one_line_per_finding() {
    let repo = healthy();
    repo.write(
        "context/policies/bad.md",
        "---\nid: policies.bad\ntype: policy\nauthority: gospel\nowner: support\nupdated: 2026-08-01T00:00:00Z\n---\n\nBad.\n",
    );
    let r = ctx_in(&repo)
        .args(["validate", "--format", "concise", "--at", "2026-09-01"])
        .run();
    r.assert_code(1);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(!lines.is_empty(), "{}", r.describe());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("context/policies/bad.md:4:")
                && l.contains(": error[schema-invalid] policies.bad: ")),
        "{}",
        r.describe()
    );
    // Nothing but findings: no frames, no verdict line.
    assert!(lines
        .iter()
        .all(|l| l.contains(": error[") || l.contains(": warning[") || l.contains(": info[")));
}
