//! The README is a contract: its two set-up commands must stay true.

use crate::support::{ctx, project_root};

fn commands() -> Vec<String> {
    let text = std::fs::read_to_string(project_root().join("README.md")).unwrap();
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block && (line.starts_with("cargo ")) {
            out.push(line.to_string());
        }
    }
    out
}

#[test]
fn ci_runs_the_readme_test_command() {
    let cmds = commands();
    let test_cmd = cmds
        .iter()
        .find(|c| c.starts_with("cargo test"))
        .expect("README has a test command");
    let ci = std::fs::read_to_string(project_root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == test_cmd),
        "`.ci/run` must run `{test_cmd}`"
    );
}

#[test]
fn readme_main_command_resolves_the_embedded_repository() {
    let cmds = commands();
    let install = cmds
        .iter()
        .find(|c| c.starts_with("cargo install"))
        .expect("README has an install command");
    let main_job = install
        .split("&& ")
        .nth(1)
        .expect("install command runs the main job");
    let args: Vec<String> = shell_words(main_job);
    assert_eq!(args[0], "ctx");
    let argv: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let r = ctx(&project_root(), &argv);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Included ("), "{}", r.stdout);
    assert!(r.stdout.contains("Digest: sha256:"), "{}", r.stdout);
}

/// Split a command line on spaces, honouring double quotes (enough for the README).
fn shell_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.trim().chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Issue 9: the README states the security model — what is enforced (the keyed
/// hash among it) and what is not (a consumer keeps what it has read).
#[test]
fn readme_states_the_security_model() {
    let text = std::fs::read_to_string(project_root().join("README.md")).unwrap();
    let start = text
        .find("### Security model")
        .expect("a security model section");
    let section = &text[start..];
    let section = &section[..section[3..].find("\n#").map_or(section.len(), |i| i + 3)];
    for needle in [
        "Fail closed",
        "Redaction everywhere",
        "hmac-sha256",
        "Private plaintext stays off disk",
        "What ctx does not do",
        "cannot take back what a consumer has read",
    ] {
        assert!(section.contains(needle), "the section lacks {needle:?}");
    }
}

/// The one-door issue: the front ends' guides state the README's security model by
/// reference, once each, and do not restate it.
#[test]
fn the_guides_refer_to_the_readmes_security_model_once() {
    for doc in ["docs/mcp.md", "docs/exchange.md", "docs/personal.md"] {
        let text = std::fs::read_to_string(project_root().join(doc)).unwrap();
        assert_eq!(
            text.matches("](../README.md#security-model)").count(),
            1,
            "{doc} must link to the README's security model exactly once"
        );
        for restated in [
            "What ctx does not do",
            "### Security model",
            "## Security model",
        ] {
            assert!(
                !text.contains(restated),
                "{doc} restates the security model ({restated:?})"
            );
        }
    }
}
